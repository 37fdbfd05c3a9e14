"""Inverses and determinants (``xad.linalg``'s primitives, with ops/decompositions.py): each
runs the backend's own ``xp.linalg`` function forward and has its gradient beside it, written
in xad operations so that second order works. Complex matrices get PyTorch's gradients
(``dL/dRe x + i dL/dIm x``: each rule with conjugate transposes, ``_mH``) to first order;
their second order and their tangents raise where the rule is written for real matrices
(``_real_only``).

Degenerate inputs (see docs/ARRAY_API.md): where the backend's forward raises (NumPy, torch,
array_api_strict, CuPy on a singular or non-positive-definite matrix) xad raises a
``ValueError`` naming the operation; JAX returns inf/NaN instead. Gradients at repeated
eigenvalues or singular values are inf/NaN, as JAX's: detecting them would read the device.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from ..factories import eye, zeros_like
from ..tensor import Tensor
from ._apply import Op, apply, unary
from .batching import elementwise_batch
from .complex_parts import _is_complex, complex_from_parts, conj, imag, real
from .elementwise import _nograd
from .linalg import matmul
from .manipulation import _broadcast_shapes
from .shape import expand_dims, reshape
from .shape import matrix_transpose as _mT
from .tangent import fit

__all__ = ["inv", "solve", "det", "slogdet", "pinv", "matrix_rank", "SlogdetResult"]


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


def _call(name: str, b: Any, *arrays: Any, **kw: Any) -> Any:
    """``b.xp.linalg.<name>``; the library's own error becomes one that names the call."""
    try:
        return getattr(b.xp.linalg, name)(*arrays, **kw)
    except (ValueError, RuntimeError) as e:  # numpy's LinAlgError, torch's _LinAlgError
        shapes = ", ".join(str(tuple(a.shape)) for a in arrays)
        raise ValueError(f"linalg.{name}: the {b.name} backend failed on shape(s) {shapes} "
                         f"({type(e).__name__}: {e}). The matrix is singular or not "
                         f"positive definite; regularise it (add eps * I) or use "
                         f"linalg.pinv / linalg.lstsq-style formulas.") from e


def _check(name: str, x: Tensor, square: bool = True) -> None:
    if not isinstance(x, Tensor) or x.ndim < 2 or (square and x.shape[-1] != x.shape[-2]):
        what = "a (batch of) square matrices" if square else "at least 2 dimensions"
        raise ValueError(f"linalg.{name}: needs {what} (..., M, {'M' if square else 'N'}), "
                         f"got shape {getattr(x, 'shape', type(x).__name__)}")


def _mH(x: Tensor) -> Tensor:
    """The conjugate transpose of (a batch of) matrices (the transpose of real ones)."""
    return conj(_mT(x))


def _real_only(what: str, x: Tensor) -> None:
    """Refuse a rule written for real matrices (a tangent, a second derivative) on a
    complex ``x``: its numbers would be wrong without an error."""
    if _is_complex(x):
        raise NotImplementedError(f"linalg.{what} of complex matrices (dtype {x.dtype}) is "
                                  f"not implemented (first-order gradients are); use real "
                                  f"and imaginary parts as separate real matrices")


class Inv(Op):
    name = "inv"
    library = True
    save_output = True

    @staticmethod
    def forward(b, x):
        return _call("inv", b, x)

    @staticmethod
    def backward(node, g):
        yh = _mH(node.output())
        return -matmul(matmul(yh, g), yh)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return -matmul(matmul(out, tangents[0]), out)


class Solve(Op):
    name = "solve"
    library = True
    save_inputs = True
    save_output = True

    @staticmethod
    def forward(b, a, x2):
        # CuPy's solve broadcasts no batch dimensions (NumPy's does): broadcast them here
        batch = _broadcast_shapes([tuple(a.shape[:-2]), tuple(x2.shape[:-2])])
        xp = b.xp
        if tuple(a.shape[:-2]) != batch:
            a = xp.broadcast_to(a, batch + tuple(a.shape[-2:]))
        if tuple(x2.shape[:-2]) != batch:
            x2 = xp.broadcast_to(x2, batch + tuple(x2.shape[-2:]))
        return _call("solve", b, a, x2)

    @staticmethod
    def backward(node, g):
        a, _ = node.inputs
        gb = solve(_mH(a), g)
        ga = -matmul(gb, _mH(node.output())) if node.needs_grad(0) else None
        return ga, gb

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (a, _), (ta, tb) = primals, tangents
        rhs = tb if ta is None else (-matmul(ta, out) if tb is None else tb - matmul(ta, out))
        return fit(solve(a, rhs), out)


class Cofactor(Op):
    """The cofactor matrix ``adj(x)^T`` (``det(x) x^-T`` where ``x`` is invertible), JAX's
    way: written out for 1x1 to 3x3 (its products of entries, exact on integers and at
    every singular matrix); from 4x4 on through the LU factors (``_cofactor_solve``: ``L``
    solved, every row but the last scaled by the determinant, ``U`` solved with its last
    pivot replaced by the inverse of the others' product), to rounding where ``x`` is
    invertible, and right at rank ``n - 1`` where one pivot is 0 (JAX's gives 0 when it is
    not the last: ``diag(0, 1, 1, 1)``); 0 where two or more are (rank ``n - 2`` or less,
    or, rarely, a rank-``n - 1`` matrix such as ``[[0, 1], [0, 0]]`` beside an identity,
    whose cofactor the SVD gave). Its own rule,
    ``<g, x^-T> C - C g^T x^-T``, needs the inverse."""

    name = "cofactor"
    library = True
    save_inputs = True
    save_output = True

    @staticmethod
    def forward(b, x):
        n = x.shape[-1]
        if n <= 3:
            return _cofactor_small(b.xp, x)
        return b.xp.matrix_transpose(_cofactor_lu(b, x))

    @staticmethod
    def backward(node, g):
        _real_only("det's second derivative", node.inputs[0])
        c, bt = node.output(), _mT(inv(node.inputs[0]))
        return _scalar_mat((g * bt).sum(axis=(-2, -1))) * c - matmul(c, matmul(_mT(g), bt))

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        bt = _mT(inv(primals[0]))
        return (_scalar_mat((bt * tangents[0]).sum(axis=(-2, -1))) * out
                - matmul(out, matmul(_mT(tangents[0]), bt)))


def _cofactor_small(xp: Any, x: Any) -> Any:
    """The cofactor matrix of 1x1, 2x2 or 3x3 matrices from their entries."""
    n = x.shape[-1]
    if n == 1:
        return xp.ones_like(x)
    if n == 2:
        a, c = x[..., 0, :], x[..., 1, :]
        return xp.stack([xp.stack([c[..., 1], -c[..., 0]], axis=-1),
                         xp.stack([-a[..., 1], a[..., 0]], axis=-1)], axis=-2)
    # row i is cross(row i+1, row i+2) (indices mod 3): the rows, and within them the
    # entries, rolled by one and by two, each product as the cross product writes it
    a, b = _roll(xp, x, 1, -2), _roll(xp, x, 2, -2)
    return _roll(xp, a, 1, -1) * _roll(xp, b, 2, -1) - _roll(xp, a, 2, -1) * _roll(xp, b, 1, -1)


def _roll(xp: Any, x: Any, k: int, axis: int) -> Any:
    """``x`` with index ``i`` of ``axis`` (of size 3) holding its ``i + k`` (mod 3)."""
    head, tail = (slice(None),) * (x.ndim + axis), (slice(None),) * (-1 - axis)
    return xp.concat([x[head + (slice(k, None),) + tail], x[head + (slice(None, k),) + tail]],
                     axis=axis)


def _cofactor_lu(b: Any, x: Any) -> Any:
    """``adj(x)`` of (a batch of) n x n matrices from their LU factors ``P^T L U``: JAX's
    ``_cofactor_solve`` (``b = I``) where the pivots but the last are non-zero; where one
    earlier pivot ``u_kk`` is 0 (rank ``n - 1``, a dependent column that comes first),
    ``adj(U) = D_k w z^T`` with ``w``, ``z^T`` column and row ``k`` of the inverse of ``U``
    with ``u_kk = 1`` and ``D_k`` the other pivots' product (``adj`` is continuous in
    ``u_kk``: Sherman-Morrison); 0 where two or more pivots are 0. One LU and two
    triangular solves (the backend's ``solve_triangular``; no zero reaches a diagonal).
    On the host, where every matrix has its pivots but the last non-zero (the common
    case), JAX's alone, in half the array calls (:func:`_cofactor_host`)."""
    xp, n = b.xp, x.shape[-1]
    lu, perm, odd = b.lu_factor(x)
    diag = xp.linalg.diagonal(lu)
    part = xp.prod(diag[..., :-1], axis=-1)
    part = xp.where(odd, -part, part)
    if b.is_host:
        out = _cofactor_host(b, x, lu, perm, diag, part)
        if out is not None:
            return out
    zero = diag == 0
    inv_part = 1.0 / xp.where(part == 0, 1.0, part)
    jax_ok = (part != 0) & (inv_part != 0) & xp.isfinite(inv_part)
    one_zero = ~jax_ok & (xp.sum(xp.astype(zero, xp.int32), axis=-1) == 1)
    ar = xp.arange(n, dtype=perm.dtype, device=b.device)
    col = xp.expand_dims(ar, axis=-1)
    eye = xp.astype(col == ar, x.dtype)
    u = xp.where((col == n - 1) & (ar == n - 1), inv_part[..., None, None], xp.triu(lu))
    u = xp.where(jax_ok[..., None, None], u,
                 xp.where(one_zero[..., None, None], xp.where(zero[..., None, :] & (col == ar),
                                                              1.0, xp.triu(lu)), eye))
    y = b.solve_triangular(xp.tril(lu, k=-1) + eye,
                           xp.astype(xp.expand_dims(perm, axis=-1) == ar, x.dtype), upper=False)
    scaled = xp.where(col < n - 1, y * (part * diag[..., -1])[..., None, None], y)
    sol = b.solve_triangular(u, xp.concat([scaled, y, xp.astype(zero[..., None], x.dtype)],
                                          axis=-1), upper=True)
    d_k = xp.prod(xp.where(zero, 1.0, diag), axis=-1)
    z_k = xp.sum(xp.where(zero[..., None], sol[..., n:2 * n], 0.0), axis=-2, keepdims=True)
    rank1 = xp.where(odd, -d_k, d_k)[..., None, None] * sol[..., 2 * n:] * z_k
    return xp.where(jax_ok[..., None, None], sol[..., :n],
                    xp.where(one_zero[..., None, None], rank1, 0.0))


def _cofactor_host(b: Any, x: Any, lu: Any, perm: Any, diag: Any, part: Any) -> Any:
    """JAX's ``_cofactor_solve`` alone, on host arrays (their values read for free, and
    written in place): ``None`` unless every matrix's pivots but the last are non-zero."""
    xp, n = b.xp, x.shape[-1]
    if not bool(xp.all(part != 0)):
        return None
    inv_part = 1.0 / part
    if not bool(xp.all(xp.isfinite(inv_part) & (inv_part != 0))):
        return None
    below, eye, ar = _host_masks(xp, n, x.dtype, perm.dtype)
    y = b.solve_triangular(xp.where(below, lu, eye),
                           xp.astype(xp.expand_dims(perm, axis=-1) == ar, x.dtype), upper=False)
    y[..., :-1, :] *= (part * diag[..., -1])[..., None, None]
    u = xp.where(below, 0.0, lu)
    u[..., -1, -1] = inv_part
    return b.solve_triangular(u, y, upper=True)


@functools.lru_cache(maxsize=32)
def _host_masks(xp: Any, n: int, dtype: Any, index: Any) -> tuple[Any, Any, Any]:
    """For :func:`_cofactor_host`: where an n x n matrix is strictly lower, its identity,
    and ``arange(n)`` (host arrays, made once: NumPy's ``tril`` makes its mask per call)."""
    ar = xp.arange(n, dtype=index)
    return xp.expand_dims(ar, axis=-1) > ar, xp.eye(n, dtype=dtype), ar


def _scalar_mat(v: Tensor) -> Tensor:
    return expand_dims(expand_dims(v, axis=-1), axis=-1)


class Det(Op):
    """Gradient ``g * adj(x)^T`` (:class:`Cofactor`): right at singular matrices too."""

    name = "det"
    library = True
    save_inputs = True

    @staticmethod
    def forward(b, x):
        return _call("det", b, x)

    @staticmethod
    def backward(node, g):
        return reshape(g, tuple(g.shape) + (1, 1)) * conj(unary(Cofactor, node.inputs[0]))

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return (unary(Cofactor, primals[0]) * tangents[0]).sum(axis=(-2, -1))


class Slogdet(Op):
    name = "slogdet"
    library = True
    save_inputs = True
    save_output = True

    @staticmethod
    def forward(b, x):
        return tuple(_call("slogdet", b, x))

    @staticmethod
    def backward(node, gsign, glog):
        x = node.inputs[0]
        if not _is_complex(x):
            return _scalar_mat(glog) * _inv_t(x)
        # log det x = logabsdet + i angle, sign = exp(i angle): dL/dangle from the sign's
        angle = -imag(conj(gsign) * node.output(0))
        return _scalar_mat(complex_from_parts(glog, angle)) * conj(_inv_t(x))

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        t = (_inv_t(primals[0]) * tangents[0]).sum(axis=(-2, -1))
        if not _is_complex(t):
            return None, t
        return out[0] * complex_from_parts(zeros_like(real(t)), imag(t)), real(t)


def _inv_t(x: Tensor) -> Tensor:
    """``x^-T``; where the backend's ``inv`` refuses a singular ``x`` (NumPy, torch,
    array_api_strict: an error they raise on their own), ``adj(x)^T / det(x)``: inf and
    NaN, as torch 2.13's ``slogdet`` gradient there (JAX's ``inv`` gives inf/NaN itself)."""
    try:
        return _mT(inv(x))
    except ValueError:
        return unary(Cofactor, x) / _scalar_mat(unary(Det, x))


def inv(x: Tensor, /) -> Tensor:
    """The inverse of a (batch of) square matrices; gradient ``-Y^T g Y^T``.

    Example:
        >>> import xad
        >>> xad.linalg.inv(xad.tensor([[2.0, 0.0], [0.0, 4.0]])).tolist()
        [[0.5, 0.0], [0.0, 0.25]]
    """
    _check("inv", x)
    return unary(Inv, x)


def solve(x1: Tensor, x2: Tensor, /) -> Tensor:
    """``X`` with ``x1 @ X == x2``; ``x2`` is ``(..., M, K)``, or ``(M,)`` for one vector.

    Example:
        >>> import xad
        >>> a = xad.tensor([[2.0, 0.0], [0.0, 4.0]])
        >>> xad.linalg.solve(a, xad.tensor([1.0, 1.0])).tolist()
        [0.5, 0.25]
    """
    _check("solve", x1)
    if x2.ndim == 0 or x2.shape[-1 if x2.ndim == 1 else -2] != x1.shape[-1]:
        raise ValueError(f"linalg.solve: x1 has shape {x1.shape} and x2 {x2.shape}; x2 must "
                         f"be (..., M, K) or (M,) with M = {x1.shape[-1]}")
    if x2.ndim == 1:
        return solve(x1, expand_dims(x2, axis=-1))[..., 0]
    return apply(Solve, x1, x2)


def det(x: Tensor, /) -> Tensor:
    """The determinant of a (batch of) square matrices; gradient ``g det(x) x^-T``.

    Example:
        >>> import xad
        >>> xad.linalg.det(xad.tensor([[2.0, 1.0], [1.0, 3.0]])).item()
        5.0
    """
    _check("det", x)
    return unary(Det, x)


def slogdet(x: Tensor, /) -> SlogdetResult:
    """``(sign, logabsdet)`` of the determinant; ``logabsdet``'s gradient is ``x^-T``.

    Example:
        >>> import xad
        >>> round(xad.linalg.slogdet(xad.tensor([[-2.0, 0.0], [0.0, 1.0]])).sign.item())
        -1
    """
    _check("slogdet", x)
    return SlogdetResult(*apply(Slogdet, x))


class Pinv(Op):
    name = "pinv"
    library = True
    save_inputs = True
    save_output = True

    @staticmethod
    def forward(b, x, rtol):
        return _call("pinv", b, x, rtol=rtol)

    @staticmethod
    def backward(node, g):
        a, p = node.inputs[0], node.output()
        pt, gt = _mH(p), _mH(g)
        m, n = a.shape[-2], a.shape[-1]
        left = eye(m, dtype=a.dtype, backend=a._backend) - matmul(a, p)  # I - A P
        right = eye(n, dtype=a.dtype, backend=a._backend) - matmul(p, a)  # I - P A
        return (-matmul(matmul(pt, g), pt) + matmul(matmul(left, gt), matmul(p, pt))
                + matmul(matmul(pt, p), matmul(gt, right)))

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out, rtol):
        """JAX's ``pinv_jvp``: ``-P dA P + (I - P A) dA^T P^T P + P P^T dA^T (I - A P)``."""
        _real_only("pinv's tangent", primals[0])
        a, p, dat = primals[0], out, _mT(tangents[0])
        s = matmul(matmul(p, _mT(p)), dat)
        t = matmul(matmul(dat, _mT(p)), p)
        return (-matmul(matmul(p, tangents[0]), p) + s - matmul(matmul(s, a), p) + t
                - matmul(matmul(p, a), t))


def _rtol(rtol: Any) -> Any:
    """``rtol`` for the backend: a number, or a tensor's array (a constant: no gradient)."""
    return rtol._array if isinstance(rtol, Tensor) else rtol


def pinv(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse (singular values below ``rtol`` times the largest
    are dropped); its gradient holds where the rank does not change.

    Example:
        >>> import xad
        >>> xad.linalg.pinv(xad.tensor([[2.0, 0.0]])).tolist()
        [[0.5], [0.0]]
    """
    _check("pinv", x, square=False)
    return unary(Pinv, x, rtol=_rtol(rtol))


MatrixRank = _nograd("matrix_rank", lambda b, x, rtol: _call("matrix_rank", b, x, rtol=rtol))
MatrixRank.library = True  # an SVD: cuSOLVER on CuPy


def matrix_rank(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The rank (count of singular values above ``rtol`` times the largest), an integer
    tensor without gradient.

    Example:
        >>> import xad
        >>> xad.linalg.matrix_rank(xad.tensor([[1.0, 2.0], [2.0, 4.0]])).item()
        1
    """
    _check("matrix_rank", x, square=False)
    return unary(MatrixRank, x, rtol=_rtol(rtol))
