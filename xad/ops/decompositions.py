"""Matrix decompositions (``xad.linalg``'s primitives, with ops/inverses.py): Cholesky, the
symmetric eigendecomposition, the SVD and QR, each forward through the backend's own
``xp.linalg`` and with its gradient written in xad operations (second order works).

Gradients are for real and complex matrices (PyTorch's convention for complex ones, to
first order; their tangents are for real matrices and refuse complex ones). Those of
``eigh``/``cholesky`` are symmetric (Hermitian: the input is read so, as JAX's and
PyTorch's are); at repeated eigenvalues or singular values
the eigenvector/singular-vector gradients are inf/NaN, as JAX's (the values alone, by
``eigvalsh``, ``svdvals`` or unused vectors, stay finite there).
"""

from __future__ import annotations

from typing import NamedTuple

from ..factories import eye, zeros_like
from ..tensor import Tensor
from ._apply import Op, apply, unary
from .batching import elementwise_batch
from .complex_parts import _is_complex, complex_from_parts, imag, real
from .elementwise_math import reciprocal
from .inverses import _call, _check, _mH, _real_only, solve
from .linalg import matmul
from .manipulation import tril
from .shape import expand_dims
from .shape import matrix_transpose as _mT

__all__ = ["cholesky", "eigh", "eigvalsh", "svd", "svdvals", "qr", "EighResult",
           "SVDResult", "QRResult"]


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


def _diag(v: Tensor) -> Tensor:
    """A batch of diagonal matrices from a batch of vectors."""
    return expand_dims(v, axis=-2) * eye(v.shape[-1], dtype=v.dtype, backend=v._backend)


def _sym(a: Tensor) -> Tensor:
    """The Hermitian (symmetric) part."""
    return (a + _mH(a)) * 0.5


def _diagonal(a: Tensor) -> Tensor:
    """The diagonals of a batch of square matrices."""
    return (a * eye(a.shape[-1], dtype=a.dtype, backend=a._backend)).sum(axis=-1)


def _gap_inverse(w: Tensor) -> Tensor:
    """``F[i, j] = 1 / (w[j] - w[i])`` off the diagonal, 0 on it (inf where values repeat)."""
    i = eye(w.shape[-1], dtype=w.dtype, backend=w._backend)
    return reciprocal(expand_dims(w, axis=-2) - expand_dims(w, axis=-1) + i) - i


def _cholesky_grad(node, g: Tensor) -> Tensor:
    """PyTorch's ``cholesky_backward``: ``L^-H P L^-1``, ``P`` the lower triangle of
    ``L^H gL`` halved and mirrored into the upper one (its diagonal halved, imaginary part
    kept), for the factor ``L`` (``U^H`` with ``upper``) a Cholesky node made."""
    low, gl = node.output(), g
    if node.params["upper"]:
        low, gl = _mH(low), _mH(g)
    lh = _mH(low)
    p = tril(matmul(lh, gl))
    p = 0.5 * (p + _mH(tril(p, k=-1)))
    return _mH(solve(lh, _mH(solve(lh, p))))  # L^-H P L^-1


class Cholesky(Op):
    name = "cholesky"
    library = True
    save_output = True

    @staticmethod
    def forward(b, x, upper):
        low = _call("cholesky", b, x)  # (torch's upper=True reads the upper triangle)
        return b.xp.conj(b.xp.matrix_transpose(low)) if upper else low

    @staticmethod
    def backward(node, g):
        return _sym(_cholesky_grad(node, g))  # (P's Hermitian part: its diagonal real)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out, upper):
        """``dL = L phi(L^-1 dA L^-T)``, ``phi``: the lower triangle, its diagonal halved."""
        _real_only("cholesky's tangent", out)
        low = _mT(out) if upper else out
        x = solve(low, _mT(solve(low, _sym(tangents[0]))))
        dl = matmul(low, tril(x) - 0.5 * x * eye(x.shape[-1], dtype=x.dtype,
                                                  backend=x._backend))
        return _mT(dl) if upper else dl


def cholesky(x: Tensor, /, *, upper: bool = False) -> Tensor:
    """The Cholesky factor ``L`` (``x = L L^T``; ``U = L^T`` with ``upper=True``) of a
    (batch of) symmetric positive-definite matrices. Only the lower triangle is read; the
    gradient is symmetric.

    Example:
        >>> import xad
        >>> xad.linalg.cholesky(xad.tensor([[4.0, 2.0], [2.0, 2.0]])).tolist()
        [[2.0, 0.0], [1.0, 1.0]]
    """
    _check("cholesky", x)
    return unary(Cholesky, x, upper=upper)


def _spectral(v: Tensor, g: Tensor, vh: Tensor) -> Tensor:
    """``V diag(g) Vh``: the gradient through the values alone, finite where they repeat."""
    return matmul(v * expand_dims(g, axis=-2), vh)


class Eigh(Op):
    """Its rule gets ``None`` for an unused output: the eigenvalues alone give
    ``V diag(gw) V^T``, finite at repeated eigenvalues (JAX's and PyTorch's), where the
    eigenvector term's ``inf * 0`` made it NaN."""

    name = "eigh"
    library = True
    save_output = True
    materialize_grads = False

    @staticmethod
    def forward(b, x):
        return tuple(_call("eigh", b, x))

    @staticmethod
    def backward(node, gw, gv):
        w, v = node.output(0), node.output(1)
        if gv is None:
            return _sym(_spectral(v, gw, _mH(v)))
        inner = _gap_inverse(w) * matmul(_mH(v), gv)
        inner = inner if gw is None else inner + _diag(gw)
        return _sym(matmul(matmul(v, inner), _mH(v)))

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        """``X = V^T dA V``: ``dw = diag(X)``, ``dV = V (F * X)``."""
        w, v = out
        _real_only("eigh's tangent", v)
        x = matmul(matmul(_mT(v), _sym(tangents[0])), v)
        return _diagonal(x), matmul(v, _gap_inverse(w) * x)


def eigh(x: Tensor, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors (columns) of a (batch of) symmetric
    matrices, reading the lower triangle.

    Example:
        >>> import xad
        >>> xad.linalg.eigh(xad.tensor([[2.0, 0.0], [0.0, 1.0]])).eigenvalues.tolist()
        [1.0, 2.0]
    """
    _check("eigh", x)
    return EighResult(*apply(Eigh, x))


class Eigvalsh(Op):
    name = "eigvalsh"
    library = True
    save_inputs = True

    @staticmethod
    def forward(b, x):
        return _call("eigvalsh", b, x)

    @staticmethod
    def backward(node, g):
        v = eigh(node.inputs[0]).eigenvectors
        return matmul(v * expand_dims(g, axis=-2), _mH(v))

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        _real_only("eigvalsh's tangent", primals[0])
        v = eigh(primals[0]).eigenvectors
        return (v * matmul(tangents[0], v)).sum(axis=-2)  # diag(V^T dA V)


def eigvalsh(x: Tensor, /) -> Tensor:
    """The eigenvalues (ascending) of a (batch of) symmetric matrices; gradient
    ``V diag(g) V^T``, finite at repeated eigenvalues.

    Example:
        >>> import xad
        >>> xad.linalg.eigvalsh(xad.tensor([[2.0, 0.0], [0.0, 1.0]])).tolist()
        [1.0, 2.0]
    """
    _check("eigvalsh", x)
    return unary(Eigvalsh, x)


class Svd(Op):
    """Its rule gets ``None`` for an unused output: ``S`` alone gives ``U diag(gS) Vh``
    (finite at repeated singular values, and for ``full_matrices=True``), as JAX's and
    PyTorch's."""

    name = "svd"
    library = True
    save_output = True
    materialize_grads = False

    @staticmethod
    def forward(b, x, full_matrices):
        return tuple(_call("svd", b, x, full_matrices=full_matrices))

    @staticmethod
    def backward(node, gu, gs, gvh):
        u, s, vh = node.output(0), node.output(1), node.output(2)
        if gu is None and gvh is None:
            k = s.shape[-1]
            return _spectral(u[..., :k], gs, vh[..., :k, :])
        _full_check("backward", u, s, vh)
        gu = zeros_like(u) if gu is None else gu
        gs = zeros_like(s) if gs is None else gs
        gvh = zeros_like(vh) if gvh is None else gvh
        return _svd_grad(u, s, vh, gu, gs, gvh)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out, full_matrices):
        u, s, vh = out
        _real_only("svd's tangent", u)
        _full_check("tangent", u, s, vh)
        return _svd_tangent(u, s, vh, tangents[0])


def _full_check(what: str, u: Tensor, s: Tensor, vh: Tensor) -> None:
    k = s.shape[-1]
    if u.shape[-1] != k or vh.shape[-2] != k:  # full_matrices=True, non-square
        raise NotImplementedError(
            f"linalg.svd {what}: no derivative with full_matrices=True for a non-square "
            f"matrix (U {u.shape}, Vh {vh.shape}), as in JAX: the extra singular vectors "
            f"are not unique. Use full_matrices=False.")


def _svd_tangent(u: Tensor, s: Tensor, vh: Tensor, da: Tensor) -> tuple:
    """The reduced SVD's tangents ``(dU, dS, dVh)`` (JAX's ``svd_jvp_rule``, real case)."""
    m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
    v = _mT(vh)
    ds_full = matmul(matmul(_mT(u), da), v)
    f = _gap_inverse(s * s)
    rows, cols = expand_dims(s, axis=-1), expand_dims(s, axis=-2)
    dss, sds = ds_full * cols, rows * ds_full
    du = matmul(u, f * (dss + _mT(dss)))
    dv = matmul(v, f * (sds + _mT(sds)))
    if m > k:
        dav = matmul(da, v)
        du = du + (dav - matmul(u, matmul(_mT(u), dav))) / cols
    if n > k:
        dau = matmul(_mT(da), u)
        dv = dv + (dau - matmul(v, matmul(vh, dau))) / cols
    return du, _diagonal(ds_full), _mT(dv)


def _svd_grad(u: Tensor, s: Tensor, vh: Tensor, gu: Tensor, gs: Tensor,
              gvh: Tensor) -> Tensor:
    """The reduced SVD's gradient (Townsend, "Differentiating the SVD", 2016); for complex
    matrices with conjugate transposes and PyTorch's term for the phases of ``U`` and ``V``
    (``i Im diag(U^H gU - V^H gV) / 2S``; a loss that depends on them is ill-defined)."""
    m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
    f = _gap_inverse(s * s)
    su, sv = matmul(_mH(u), gu), matmul(vh, _mH(gvh))
    rows, cols = expand_dims(s, axis=-1), expand_dims(s, axis=-2)
    inner = f * (su - _mH(su)) * cols + _diag(gs) + rows * (f * (sv - _mH(sv)))
    if _is_complex(su):
        phase = imag(_diagonal(su) - _diagonal(sv)) / (2 * s)
        inner = inner + _diag(complex_from_parts(zeros_like(phase), phase))
    ga = matmul(matmul(u, inner), vh)
    if m > k:
        ga = ga + matmul((gu - matmul(u, su)) / cols, vh)
    if n > k:
        ga = ga + matmul(u, (gvh - matmul(_mH(sv), vh)) / rows)
    return ga


def svd(x: Tensor, /, *, full_matrices: bool = True) -> SVDResult:
    """``U, S, Vh`` with ``x = U diag(S) Vh`` (S descending) for a (batch of) matrices.
    Gradients need ``full_matrices=False`` unless the matrix is square.

    Example:
        >>> import xad
        >>> xad.linalg.svd(xad.tensor([[3.0, 0.0], [0.0, -4.0]])).S.tolist()
        [4.0, 3.0]
    """
    _check("svd", x, square=False)
    return SVDResult(*apply(Svd, x, full_matrices=full_matrices))


class Svdvals(Op):
    name = "svdvals"
    library = True
    save_inputs = True

    @staticmethod
    def forward(b, x):
        return _call("svdvals", b, x)

    @staticmethod
    def backward(node, g):
        u, _, vh = svd(node.inputs[0], full_matrices=False)
        return matmul(u * expand_dims(g, axis=-2), vh)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        _real_only("svdvals' tangent", primals[0])
        u, _, vh = svd(primals[0], full_matrices=False)
        return (u * matmul(tangents[0], _mT(vh))).sum(axis=-2)  # diag(U^T dA V)


def svdvals(x: Tensor, /) -> Tensor:
    """The singular values (descending); gradient ``U diag(g) Vh``, finite at repeated
    singular values.

    Example:
        >>> import xad
        >>> xad.linalg.svdvals(xad.tensor([[3.0, 0.0], [0.0, -4.0]])).tolist()
        [4.0, 3.0]
    """
    _check("svdvals", x, square=False)
    return unary(Svdvals, x)


class Qr(Op):
    name = "qr"
    library = True
    save_output = True

    @staticmethod
    def forward(b, x, mode):
        return tuple(_call("qr", b, x, mode=mode))

    @staticmethod
    def backward(node, gq, gr):
        q, r = node.output(0), node.output(1)
        n = _qr_check("backward", q, r)
        mm = matmul(r, _mH(gr)) - matmul(_mH(gq), q)
        low = tril(mm, k=-1)  # (R's diagonal is real: only the real part of mm's counts)
        sym = low + _mH(low) + real(mm) * eye(n, dtype=real(mm).dtype, backend=mm._backend)
        return _mH(solve(r, _mH(gq + matmul(q, sym))))  # (gQ + Q sym) R^-H

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out, mode):
        """JAX's ``qr_jvp_rule`` (real case): with ``C = Q^T dA R^-1`` and ``O`` the
        skew-symmetric part of its strict lower triangle, ``dQ = Q (O - C) + dA R^-1``,
        ``dR = (C - O) R``."""
        q, r = out
        _real_only("qr's tangent", q)
        _qr_check("tangent", q, r)
        dx_rinv = _mT(solve(_mT(r), _mT(tangents[0])))
        c = matmul(_mT(q), dx_rinv)
        low = tril(c, k=-1)
        o = low - _mT(low)
        return matmul(q, o - c) + dx_rinv, matmul(c - o, r)


def _qr_check(what: str, q: Tensor, r: Tensor) -> int:
    m, n = q.shape[-2], r.shape[-1]
    if m < n or q.shape[-1] != n:
        raise NotImplementedError(
            f"linalg.qr {what}: derivatives need a matrix with at least as many rows as "
            f"columns and mode='reduced' (Q {q.shape}, R {r.shape}), as in JAX")
    return n


def qr(x: Tensor, /, *, mode: str = "reduced") -> QRResult:
    """``Q, R`` with ``x = Q R`` (``mode`` ``"reduced"`` or ``"complete"``). Gradients need
    at least as many rows as columns and a reduced (or square) ``Q``.

    Example:
        >>> import xad
        >>> [round(v) for v in xad.linalg.qr(xad.tensor([[3.0], [4.0]])).R.abs().tolist()[0]]
        [5]
    """
    _check("qr", x, square=False)
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr: mode must be 'reduced' or 'complete', got {mode!r}")
    return QRResult(*apply(Qr, x, mode=mode))
