"""The LU factorisation with partial pivoting as a differentiable primitive (``LuFactor``,
PyTorch's ``linalg_lu_backward`` and ``linalg_lu_jvp`` beside it), and the integer
companions the ``torch.linalg`` LU family and ``_ex`` forms need, none differentiable:
LAPACK's 1-based row interchanges from a permutation and back, and the ``info`` of a
factorisation (its first zero pivot; for Cholesky the first leading minor that is not
positive definite), each computed on the device without reading a value back.

Square, tall and wide matrices (PyTorch's three forms of each rule). Complex matrices get
PyTorch's gradients (its rule, with conjugate transposes); their tangents are refused, as
the other decompositions' (``_real_only``).
"""

from __future__ import annotations

from typing import Any

from .. import dtypes as _dt
from ..factories import arange, eye
from ..tensor import Tensor
from ._apply import Op, apply, unary
from .batching import elementwise_batch
from .complex_parts import _is_complex
from .elementwise import _nograd, astype
from .inverses import _mH, _real_only, solve
from .linalg import matmul
from .manipulation import tril, triu
from .shape import concat
from .shape import matrix_transpose as _mT

_COMPLEX = (_dt.complex64, _dt.complex128)
__all__ = ["lu_factor", "packed_lu", "lu_factors", "permutation_matrix", "pivots_from_permutation",
           "permutation_from_pivots", "first_zero_pivot", "cholesky_info"]


def lu_factors(lu: Tensor) -> tuple[Tensor, Tensor]:
    """The unit-lower ``L`` (m x k) and upper ``U`` (k x n) held in a packed m x n ``lu``
    (``k = min(m, n)``)."""
    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    low = tril(lu[..., :, :k], k=-1) + eye(m, k, dtype=lu.dtype, backend=lu._backend)
    return low, triu(lu[..., :k, :])


def permutation_matrix(perm: Tensor, dtype: Any) -> Tensor:
    """``P`` of ``dtype`` with ``P[i, j] = 1`` where ``perm[j] == i``: ``x == P @ x[perm]``."""
    rows = arange(perm.shape[-1], dtype=perm.dtype, backend=perm._backend)
    return astype(perm[..., None, :] == rows[:, None], dtype)


def _right_solve(x: Tensor, a: Tensor) -> Tensor:
    """``x a^-1``."""
    return _mT(solve(_mT(a), _mT(x)))


class LuFactor(Op):
    """``(lu, perm)`` with ``x[..., perm, :] == L @ U`` (``L`` unit lower below ``lu``'s
    diagonal, ``U`` on and above it) for m x n matrices, LAPACK's ``getrf`` through the
    backend (no error at a singular matrix). The gradient is PyTorch's
    ``linalg_lu_backward`` (``gL``, ``gU``: the packed factor's ``g``), for square
    matrices ``P L^-H [tril(L^H gL, -1) + triu(gU U^H)] U^-H``; inf/NaN where ``U`` is
    singular, as PyTorch's."""

    name = "lu_factor"
    library = True
    save_output = True
    materialize_grads = False

    @staticmethod
    def forward(b, x):
        lu, perm, _ = b.lu_factor(x)
        return lu, perm

    @staticmethod
    def backward(node, g, _gperm):
        if g is None:
            return None
        lu, perm = node.output(0), node.output(1)
        return matmul(permutation_matrix(perm, g.dtype), _lu_grad(lu, g))

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        """PyTorch's ``linalg_lu_jvp``: with ``X = L1^-1 (P^T dA)1 U1^-1`` (the leading
        k x k blocks), ``dL1 = L1 tril(X, -1)``, ``dU1 = triu(X) U1``; a wide matrix's
        ``dU2 = L^-1 ((P^T dA)2 - dL U2)``, a tall one's ``dL2 = ((P^T dA)2 - L2 dU) U^-1``;
        the packed tangent is their sum."""
        lu, perm = out
        _real_only("lu_factor's tangent", lu)
        low, up = lu_factors(lu)
        m, n = lu.shape[-2], lu.shape[-1]
        k = min(m, n)
        pda = matmul(_mT(permutation_matrix(perm, lu.dtype)), tangents[0])
        low1, up1 = low[..., :k, :], up[..., :, :k]
        x = _right_solve(solve(low1, pda[..., :k, :k]), up1)
        dl, du = matmul(low1, tril(x, k=-1)), matmul(triu(x), up1)
        if m < n:
            du2 = solve(low, pda[..., :, k:] - matmul(dl, up[..., :, k:]))
            return concat([dl + du, du2], axis=-1), None
        if m > n:
            dl2 = _right_solve(pda[..., k:, :] - matmul(low[..., k:, :], du), up)
            return concat([dl + du, dl2], axis=-2), None
        return dl + du, None


def _lu_grad(lu: Tensor, g: Tensor) -> Tensor:
    """``P^T`` times the gradient of ``x`` from that of its packed LU factor ``g``
    (PyTorch's ``linalg_lu_backward``, square, wide and tall)."""
    low, up = lu_factors(lu)
    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    gl, gu = g[..., :, :k], g[..., :k, :]
    if m == n:
        inner = tril(matmul(_mH(low), gl), k=-1) + triu(matmul(gu, _mH(up)))
        return solve(_mH(low), _mH(solve(up, _mH(inner))))  # L^-H inner U^-H
    if m < n:
        inner = tril(matmul(_mH(low), gl) - matmul(triu(gu), _mH(up)), k=-1)
        inner = _mH(solve(up[..., :, :k], _mH(inner)))  # inner U1^-H
        return solve(_mH(low), concat([inner + triu(gu[..., :, :k]), gu[..., :, k:]], axis=-1))
    inner = triu(matmul(gu, _mH(up)) - matmul(_mH(low), tril(gl, k=-1)))
    inner = solve(_mH(low[..., :k, :]), inner)  # L1^-H inner
    inner = concat([inner + tril(gl[..., :k, :], k=-1), gl[..., k:, :]], axis=-2)
    return _mH(solve(up, _mH(inner)))  # inner U^-H


def lu_factor(x: Tensor, name: str = "lu_factor") -> tuple[Tensor, Tensor]:
    """``(lu, perm)`` of a (batch of) m x n matrices (:class:`LuFactor`); ``perm``
    is an integer tensor without gradient. ``name`` is the caller's, for errors."""
    if not isinstance(x, Tensor) or x.ndim < 2:
        raise RuntimeError(f"torch.linalg.{name}: expected a (batch of) matrices, got shape "
                           f"{getattr(x, 'shape', type(x).__name__)}")
    if not (x.dtype.is_floating or _is_complex(x)):
        raise RuntimeError(f"torch.linalg.{name}: expected a floating point or complex "
                           f"tensor as input, got {x.dtype}")
    lu, perm = apply(LuFactor, x)
    return lu, perm.detach()


def packed_lu(x: Tensor) -> Tensor:
    """The packed factor of :class:`LuFactor` for any floating or complex square ``x``,
    unchecked (for ``info``)."""
    return apply(LuFactor, x)[0]


def _swap_source(xp: Any, rows: Any, k: int, p: Any) -> Any:
    """For each position, where it takes its entry from when positions ``k`` and ``p``
    swap (``p`` of shape ``(..., 1)``)."""
    return xp.where(rows == k, p, xp.where(rows == p, k, rows))


def _pivots(b: Any, perm: Any, steps: int) -> Any:
    """LAPACK's 1-based int32 row interchanges that take the rows in order to ``perm``:
    at step ``k``, the position where row ``perm[k]`` then stands."""
    xp, n = b.xp, perm.shape[-1]
    rows = xp.arange(n, dtype=perm.dtype, device=b.device)
    cur = xp.broadcast_to(rows, tuple(perm.shape))
    pivs = []
    for k in range(steps):
        here = xp.where(rows >= k, xp.astype(cur == perm[..., k:k + 1], xp.int32), -1)
        p = xp.astype(xp.argmax(here, axis=-1, keepdims=True), perm.dtype)
        pivs.append(p)
        cur = xp.take_along_axis(cur, _swap_source(xp, rows, k, p), axis=-1)
    return xp.astype(xp.concat(pivs, axis=-1) + 1, xp.int32)


def _permutation(b: Any, piv: Any, m: int) -> Any:
    """The permutation (int64) of ``m`` rows LAPACK's 1-based row interchanges ``piv``
    make."""
    xp = b.xp
    rows = xp.arange(m, dtype=xp.int64, device=b.device)
    perm = xp.broadcast_to(rows, tuple(piv.shape[:-1]) + (m,))
    for k in range(piv.shape[-1]):
        p = xp.astype(piv[..., k:k + 1], xp.int64) - 1
        perm = xp.take_along_axis(perm, _swap_source(xp, rows, k, p), axis=-1)
    return perm


def _first_zero(b: Any, bad: Any) -> Any:
    """The 1-based index (int32) of the first true entry of ``bad`` along its last axis,
    0 where there is none."""
    xp = b.xp
    first = xp.argmax(xp.astype(bad, xp.int32), axis=-1)
    return xp.astype(xp.where(xp.any(bad, axis=-1), first + 1, 0), xp.int32)


def _zero_pivot(b: Any, lu: Any) -> Any:
    return _first_zero(b, b.xp.linalg.diagonal(lu) == 0)


def _cholesky_info(b: Any, a: Any) -> Any:
    """LAPACK ``potrf``'s ``info`` for the lower triangle of (a batch of) Hermitian ``a``:
    the order of the first leading minor that is not positive definite (its pivot ``<= 0``
    or NaN), 0 for none; the factorisation column by column, each step a few array calls
    (a failed pivot is taken as 1 so that later steps stay finite)."""
    xp, n = b.xp, a.shape[-1]
    low = xp.zeros_like(a)
    cols = xp.arange(n, device=b.device)
    rows = cols[:, None]
    bad = []
    for k in range(n):
        row = low[..., k:k + 1, :]
        col = a[..., :, k:k + 1] - xp.matmul(low, xp.conj(xp.matrix_transpose(row)))
        d = col[..., k:k + 1, :]
        d = xp.real(d) if b.xad_dtype(a.dtype) in _COMPLEX else d
        ok = d > 0
        bad.append(~ok[..., 0])
        piv = xp.astype(xp.sqrt(xp.where(ok, d, 1.0)), a.dtype)
        new = xp.where(rows > k, col / piv, xp.where(rows == k, piv, 0.0))
        low = xp.where(cols == k, new, low)
    return _first_zero(b, xp.concat(bad, axis=-1))


PivotsFromPermutation = _nograd("lu_pivots", _pivots)
PermutationFromPivots = _nograd("lu_permutation", _permutation)
FirstZeroPivot = _nograd("lu_info", _zero_pivot)
CholeskyInfo = _nograd("cholesky_info", _cholesky_info)
CholeskyInfo.library = True  # (matrix products)


def pivots_from_permutation(perm: Tensor, steps: int) -> Tensor:
    """LAPACK's 1-based int32 pivots (``torch.linalg.lu_factor``'s) for ``perm``: its
    first ``steps`` (``min(m, n)``) row interchanges."""
    return unary(PivotsFromPermutation, perm, steps=steps)


def permutation_from_pivots(piv: Tensor, m: int) -> Tensor:
    """The int64 permutation of ``m`` rows that LAPACK's 1-based pivots ``piv`` make."""
    return unary(PermutationFromPivots, piv, m=m)


def first_zero_pivot(lu: Tensor) -> Tensor:
    """``getrf``'s ``info``: the 1-based index of ``lu``'s first zero pivot, 0 if none."""
    return unary(FirstZeroPivot, lu)


def cholesky_info(a: Tensor) -> Tensor:
    """``potrf``'s ``info`` (int32) for the lower triangle of (a batch of) Hermitian
    ``a``: the order of the first leading minor not positive definite, 0 if none."""
    return unary(CholeskyInfo, a)
