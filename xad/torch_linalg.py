"""``torch.linalg``'s own names and keywords, for ``python -m xad.as_torch``
(:mod:`xad.linalg` holds the Array API standard's): ``norm``, ``cond``,
``solve_triangular``, ``tensorinv``, ``tensorsolve``, ``vander``, and PyTorch's
``matrix_norm``, ``lstsq``, ``cross``, ``solve`` (``left=``), ``cholesky`` (``upper=``),
``eigh`` and ``eigvalsh`` (``UPLO=``), ``householder_product`` (also ``torch.orgqr``); the LU
family (``lu``, ``lu_factor``,
``lu_solve``, and ``lu_unpack``, served as ``torch.lu_unpack``) over the LU primitive of
:mod:`xad.ops.lu`; the ``_ex`` forms (``lu_factor_ex``, ``inv_ex``, ``solve_ex``,
``cholesky_ex``) with LAPACK's ``info`` computed on the device. Each is built from xad's
differentiable operations, so gradients, ``vmap`` and ``jvp`` come with them.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from . import dtypes as _dt
from . import linalg as _la
from . import ops as _ops
from .factories import eye, ones_like, zeros
from .ops import lu as _lu
from .ops import torch_conventions as _conventions
from .ops.inverses import _check, _mH
from .tensor import Tensor

__all__ = ["norm", "cond", "solve_triangular", "tensorinv", "tensorsolve", "vander",
           "matrix_norm", "lstsq", "cross", "solve", "cholesky", "eigh", "eigvalsh",
           "householder_product", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "inv_ex",
           "solve_ex", "cholesky_ex"]


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    """``torch.linalg.norm``: a vector norm over one axis (``dim`` an int), a matrix norm
    over two, the 2-norm of all elements when neither ``ord`` nor ``dim`` is given; gradient
    0 at a zero input, as PyTorch's.

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> torch_linalg.norm(xad.tensor([[3.0, 0.0], [0.0, -4.0]]), ord=2).item()
        4.0
    """
    if dtype is not None:
        A = _ops.astype(A, dtype)
    if isinstance(dim, int):
        dim = (dim,)
    if dim is None:
        if ord is None:
            return _conventions.vector_norm(A, 2, None, keepdim)
        if A.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: if dim is not given but ord is, the input must "
                               f"be 1-d or 2-d, got shape {tuple(A.shape)}; pass dim")
        dim = tuple(range(A.ndim))
    dim = tuple(dim)
    if len(dim) == 1:
        return _conventions.vector_norm(A, 2 if ord is None else ord, dim, keepdim)
    if len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim)
    raise RuntimeError(f"linalg.norm: dim must be an int or a pair, got {dim}")


def matrix_norm(x: Tensor, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False,
                ) -> Tensor:
    """``torch.linalg.matrix_norm``: PyTorch's keywords; ``"fro"`` with gradient 0, not NaN,
    at a zero matrix (as its ``vector_norm``), the other ``ord`` as ``xad.linalg``'s.

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> torch_linalg.matrix_norm(xad.ones(2, 2)).item()
        2.0
    """
    if ord == "fro":
        return _conventions.vector_norm(x, 2, tuple(dim), keepdim)
    out = _la.matrix_norm(_ops.moveaxis(x, tuple(dim), (-2, -1)), ord=ord)
    if keepdim:
        d = sorted(a % x.ndim for a in dim)
        out = _ops.expand_dims(_ops.expand_dims(out, axis=d[0]), axis=d[1])
    return out


def cond(A: Tensor, p: Any = None) -> Tensor:
    """``torch.linalg.cond``: the condition number in the norm ``p`` (``None``/``2``: the
    ratio of the extreme singular values, ``-2`` its inverse; otherwise
    ``norm(A, p) * norm(inv(A), p)``, square ``A`` only).

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> torch_linalg.cond(xad.tensor([[2.0, 0.0], [0.0, 0.5]])).item()
        4.0
    """
    if p in (None, 2, -2):
        s = _la.svdvals(A)
        hi, lo = s[..., 0], s[..., -1]
        return hi / lo if p != -2 else lo / hi
    return matrix_norm(A, p) * matrix_norm(_la.inv(A), p)


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """``torch.linalg.solve_triangular``: ``X`` with ``A X = B`` (``left``) or ``X A = B``,
    reading only ``A``'s upper or lower triangle (its diagonal taken as ones with
    ``unitriangular``); the gradient reaches that triangle only, as PyTorch's.

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> a = xad.tensor([[2.0, 9.0], [1.0, 4.0]])
        >>> torch_linalg.solve_triangular(a, xad.tensor([[2.0], [4.0]]), upper=False).tolist()
        [[1.0], [0.75]]
    """
    if B.ndim < 2:
        raise RuntimeError(f"linalg.solve_triangular: B must be a (batch of) matrices, got "
                           f"shape {tuple(B.shape)} (PyTorch refuses it too); for a vector b, "
                           f"pass b[..., None] and take [..., 0]")
    t = _ops.triu(A) if upper else _ops.tril(A)
    if unitriangular:
        n = A.shape[-1]
        t = _ops.where(eye(n, dtype=_dt.bool_, backend=A.backend), ones_like(t), t)
    return _solve_matrices(t, B, left)


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """``torch.linalg.tensorinv``: the inverse of ``A`` read as a square matrix of its first
    ``ind`` axes by the rest; shape ``A.shape[ind:] + A.shape[:ind]``.

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> torch_linalg.tensorinv(xad.eye(4).reshape(4, 2, 2), ind=1).shape
        (2, 2, 4)
    """
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if ind <= 0 or math.prod(rows) != math.prod(cols):
        raise RuntimeError(f"linalg.tensorinv: A of shape {tuple(A.shape)} with ind={ind} is "
                           f"not square: {rows} against {cols}")
    inv = _la.inv(_ops.reshape(A, (math.prod(rows), math.prod(cols))))
    return _ops.reshape(inv, cols + rows)


def tensorsolve(A: Tensor, B: Tensor, dims: Any = None) -> Tensor:
    """``torch.linalg.tensorsolve``: ``X`` with ``tensordot(A, X, X.ndim) == B``; ``dims``
    moves those axes of ``A`` to the end first.

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> torch_linalg.tensorsolve(2 * xad.eye(4).reshape(2, 2, 4), xad.ones(2, 2)).tolist()
        [0.5, 0.5, 0.5, 0.5]
    """
    if dims is not None:
        dims = tuple(d % A.ndim for d in dims)
        A = _ops.moveaxis(A, dims, tuple(range(A.ndim - len(dims), A.ndim)))
    rest = tuple(A.shape[B.ndim:])
    if tuple(A.shape[:B.ndim]) != tuple(B.shape) or math.prod(rest) != B.numel():
        raise RuntimeError(f"linalg.tensorsolve: A of shape {tuple(A.shape)} does not start "
                           f"with B's shape {tuple(B.shape)} followed by as many elements")
    x = _la.solve(_ops.reshape(A, (B.numel(), B.numel())), _ops.reshape(B, (-1, 1)))
    return _ops.reshape(x, rest)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """``torch.linalg.vander``: the powers ``x**0, x**1, ..., x**(N-1)`` along a new last
    axis (``N`` defaults to ``x.shape[-1]``; at least 2).

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> torch_linalg.vander(xad.tensor([1.0, 2.0, 3.0])).tolist()
        [[1.0, 1.0, 1.0], [1.0, 2.0, 4.0], [1.0, 3.0, 9.0]]
    """
    n = x.shape[-1] if N is None else N
    if n <= 1:  # (PyTorch's refusal)
        raise RuntimeError(f"linalg.vander: N must be greater than 1, got {n}")
    powers = [ones_like(x), x]
    while len(powers) < n:
        powers.append(powers[-1] * x)
    return _ops.stack(powers, axis=-1)


def lstsq(a: Tensor, b: Tensor, rcond: float | None = None, *,
          driver: str | None = None) -> _la.LstsqResult:
    """``torch.linalg.lstsq``: its CPU default driver, ``"gelsy"`` (no residuals).

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> torch_linalg.lstsq(xad.eye(2), xad.ones(2, 1)).solution.tolist()
        [[1.0], [1.0]]
    """
    return _la.lstsq(a, b, rcond, driver=driver or "gelsy")


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:  # noqa: A002
    """``torch.linalg.cross``: PyTorch's keyword ``dim`` (default -1), inputs broadcast.

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> torch_linalg.cross(xad.tensor([1.0, 0, 0]), xad.tensor([0.0, 1, 0])).tolist()
        [0.0, 0.0, 1.0]
    """
    return _ops.cross(input, other, dim)


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:  # noqa: N803
    """``torch.linalg.solve``: ``X`` with ``A X = B``, or with ``left=False`` ``X A = B``
    (``A^T X^T = B^T``). ``B`` is a (batch of) vectors where PyTorch reads one: 1-d, or of
    shape ``A.shape[:-1]`` (``A`` (2, 3, 3) and ``B`` (2, 3): a vector per matrix, where
    :func:`xad.linalg.solve`, the standard's, reads ``B`` as one matrix); else matrices.
    ``left=False`` needs matrices, as PyTorch's.

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> a = xad.tensor([[[2.0, 0.0], [0.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]]])
        >>> torch_linalg.solve(a, xad.tensor([[2.0, 4.0], [5.0, 6.0]])).tolist()
        [[1.0, 1.0], [5.0, 6.0]]
    """
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector and not left:
        raise RuntimeError(f"linalg.solve(left=False): B of shape {tuple(B.shape)} is a "
                           f"(batch of) vectors for A of shape {tuple(A.shape)}, and X A = B "
                           f"needs matrices (..., K, N) (PyTorch refuses it too); for vectors "
                           f"b, solve(A.mT, b)")
    if vector:
        return _la.solve(A, _ops.expand_dims(B, axis=-1))[..., 0]
    return _solve_matrices(A, B, left)


def _solve_matrices(A: Tensor, B: Tensor, left: bool) -> Tensor:  # noqa: N803
    """``X`` with ``A X = B`` (``left``) or ``X A = B``, ``B`` a (batch of) matrices."""
    if left:
        return _la.solve(A, B)
    return _la.matrix_transpose(_la.solve(_la.matrix_transpose(A), _la.matrix_transpose(B)))


def _lower(A: Tensor, UPLO: str, name: str) -> Tensor:  # noqa: N803
    """``A`` with the triangle ``UPLO`` names in its lower one (``"U"``: ``A``'s conjugate
    transpose, the same Hermitian matrix read from the other side)."""
    if UPLO not in ("L", "U"):
        raise ValueError(f"torch.linalg.{name}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return A if UPLO == "L" else _mH(A)


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:  # noqa: N803
    """``torch.linalg.cholesky``: ``upper=True`` reads the upper triangle (PyTorch's
    ``U^H U``); :func:`xad.linalg.cholesky` reads the lower one either way. The gradient is
    PyTorch's also for complex matrices (:func:`xad.ops.torch_conventions.cholesky`).

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> torch_linalg.cholesky(xad.tensor([[4.0, 2.0], [99.0, 2.0]]), upper=True).tolist()
        [[2.0, 1.0], [0.0, 1.0]]
    """
    return _conventions.cholesky(A, upper=upper)


def eigh(A: Tensor, UPLO: str = "L") -> _la.EighResult:  # noqa: N803
    """``torch.linalg.eigh``: ``UPLO="U"`` reads the upper triangle.

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> torch_linalg.eigh(xad.tensor([[2.0, 0.0], [9.0, 3.0]]), UPLO="U").eigenvalues.tolist()
        [2.0, 3.0]
    """
    return _la.eigh(_lower(A, UPLO, "eigh"))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803
    """``torch.linalg.eigvalsh``: ``UPLO="U"`` reads the upper triangle.

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> torch_linalg.eigvalsh(xad.tensor([[2.0, 9.0], [0.0, 3.0]])).tolist()
        [2.0, 3.0]
    """
    return _la.eigvalsh(_lower(A, UPLO, "eigvalsh"))


def householder_product(A: Tensor, tau: Tensor) -> Tensor:  # noqa: N803
    """``torch.linalg.householder_product`` (``torch.orgqr``): the first ``n`` columns of
    ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H``, where ``v_i`` is column ``i`` of ``A``
    (m x n, ``m >= n >= k``) below the diagonal with a 1 on it (LAPACK's ``orgqr``/``ungqr``
    layout); real or complex, batched. Composed from xad operations: its gradient (to ``A``
    and ``tau``) comes from theirs (0 to ``A`` for an empty ``tau``, where PyTorch's is
    ``None``).

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> a = xad.tensor([[1.0, 0.0], [1.0, 1.0]])
        >>> torch_linalg.householder_product(a, xad.tensor([1.0])).tolist()
        [[0.0, -1.0], [-1.0, 0.0]]
    """
    _householder_check(A, tau)
    return _la._householder_product(A, tau)


def _householder_check(A: Tensor, tau: Tensor) -> None:  # noqa: N803
    """PyTorch's refusals, in its order."""
    name = "linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{name}: A must have at least 2 dimensions, got shape "
                           f"{tuple(A.shape)}")
    if A.shape[-2] < A.shape[-1] or A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{name}: needs A of shape (..., m, n) with m >= n and tau of shape "
                           f"(..., k) with n >= k, got A {tuple(A.shape)}, tau "
                           f"{tuple(tau.shape)}")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{name}: tau's batch shape {tuple(tau.shape[:-1])} must equal A's "
                           f"{tuple(A.shape[:-2])} (A {tuple(A.shape)}, tau {tuple(tau.shape)}; "
                           f"PyTorch does not broadcast them either)")
    if tau.dtype != A.dtype:
        raise RuntimeError(f"{name}: tau's dtype {tau.dtype} does not match A's {A.dtype}; "
                           f"cast one (tau.to(A.dtype))")


class LUResult(NamedTuple):
    P: Tensor
    L: Tensor
    U: Tensor


class LUFactorResult(NamedTuple):
    LU: Tensor
    pivots: Tensor


class LUFactorExResult(NamedTuple):
    LU: Tensor
    pivots: Tensor
    info: Tensor


class InvExResult(NamedTuple):
    inverse: Tensor
    info: Tensor


class CholeskyExResult(NamedTuple):
    L: Tensor
    info: Tensor


class SolveExResult(NamedTuple):
    result: Tensor
    info: Tensor


def _pivoting(pivot: bool, name: str) -> None:
    if not pivot:  # (PyTorch's own refusal on the CPU; no backend of xad's has it)
        raise RuntimeError(f"linalg.{name}: LU without pivoting is not implemented on the CPU "
                           f"(nor on any xad backend); use pivot=True")


def lu_factor(A: Tensor, *, pivot: bool = True) -> LUFactorResult:  # noqa: N803
    """``torch.linalg.lu_factor``: the packed ``LU`` (``L`` unit lower below the diagonal,
    ``U`` on and above it) and LAPACK's 1-based int32 row interchanges ``pivots``, for a
    (batch of) m x n real or complex matrices; differentiable in ``LU``. A singular matrix
    gives its factors (PyTorch raises: see ``lu_factor_ex``'s ``info``).

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> torch_linalg.lu_factor(xad.tensor([[1.0, 2.0], [3.0, 4.0]])).pivots.tolist()
        [2, 2]
    """
    _pivoting(pivot, "lu_factor")
    lu, perm = _lu.lu_factor(A, "lu_factor")
    return LUFactorResult(lu, _lu.pivots_from_permutation(perm, min(A.shape[-2:])))


def lu_factor_ex(A: Tensor, *, pivot: bool = True,  # noqa: N803
                 check_errors: bool = False) -> LUFactorExResult:
    """``torch.linalg.lu_factor_ex``: :func:`lu_factor` and ``info`` (int32), the 1-based
    index of ``U``'s first zero pivot (0: none), computed without reading the device
    (``check_errors=True`` reads it and raises where it is not 0).

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> torch_linalg.lu_factor_ex(xad.tensor([[1.0, 2.0], [2.0, 4.0]])).info.item()
        2
    """
    lu, piv = lu_factor(A, pivot=pivot)
    return LUFactorExResult(lu, piv, _checked(_lu.first_zero_pivot(lu), check_errors,
                                              "lu_factor_ex", "U has a zero pivot"))


def lu(A: Tensor, *, pivot: bool = True) -> LUResult:  # noqa: N803
    """``torch.linalg.lu``: ``P, L, U`` with ``A = P @ L @ U`` for a (batch of) m x n
    matrices; gradients (to ``L`` and ``U``) as PyTorch's.

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> torch_linalg.lu(xad.tensor([[1.0, 2.0], [4.0, 4.0]])).L.tolist()
        [[1.0, 0.0], [0.25, 1.0]]
    """
    _pivoting(pivot, "lu")
    packed, perm = _lu.lu_factor(A, "lu")
    low, up = _lu.lu_factors(packed)
    return LUResult(_lu.permutation_matrix(perm, A.dtype), low, up)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,  # noqa: N803
              unpack_pivots: bool = True) -> LUResult:
    """``torch.lu_unpack``: ``P, L, U`` from :func:`lu_factor`'s ``LU`` and ``pivots``
    (m x n factors); a part not unpacked is an empty tensor, as PyTorch's.

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> LU, piv = torch_linalg.lu_factor(xad.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> torch_linalg.lu_unpack(LU, piv).P.tolist()
        [[0.0, 1.0], [1.0, 0.0]]
    """
    none = zeros((0,), dtype=LU_data.dtype, backend=LU_data.backend)
    low, up = _lu.lu_factors(LU_data) if unpack_data else (none, none)
    p = none
    if unpack_pivots:
        perm = _lu.permutation_from_pivots(LU_pivots, LU_data.shape[-2])
        p = _lu.permutation_matrix(perm, LU_data.dtype)
    return LUResult(p, low, up)


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,  # noqa: N803
             adjoint: bool = False) -> Tensor:
    """``torch.linalg.lu_solve``: ``X`` with ``A X = B`` from :func:`lu_factor`'s factors
    of ``A`` (``adjoint``: ``A^H X = B``; ``left=False``: ``X A = B``); gradients to ``LU``
    and ``B``.

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> LU, piv = torch_linalg.lu_factor(xad.tensor([[2.0, 0.0], [0.0, 4.0]]))
        >>> torch_linalg.lu_solve(LU, piv, xad.tensor([[2.0], [4.0]])).tolist()
        [[1.0], [1.0]]
    """
    if not left:  # X A = B, X A^H = B: the left solve of A^H (A) with B^H
        return _mH(lu_solve(LU, pivots, _mH(B), adjoint=not adjoint))
    P, L, U = lu_unpack(LU, pivots)  # noqa: N806
    if adjoint:  # A^H = U^H L^H P^T
        y = _la.solve(_mH(L), _la.solve(_mH(U), B))
        return _ops.matmul(P, y)
    return _la.solve(U, _la.solve(L, _ops.matmul(_ops.matrix_transpose(P), B)))


def _checked(info: Tensor, check: bool, name: str, what: str) -> Tensor:
    """``info``; with ``check``, read from the device (an explicit copy, PyTorch's sync) and
    an error where any is not 0."""
    if check and bool(_ops.any(info != 0).item()):
        raise RuntimeError(f"linalg.{name}: {what} (info = {info.tolist()}, the 1-based "
                           f"index of the failure per matrix); check_errors=False returns "
                           f"info without raising")
    return info


def _guarded(info: Tensor, A: Tensor, fn: Any) -> Tensor:  # noqa: N803
    """``fn`` of ``A`` where ``info`` is 0, of the identity (then NaN) where it is not: the
    backend's own function never meets the matrix it would refuse."""
    bad = _ops.expand_dims(info != 0, axis=-1)
    ident = eye(A.shape[-1], dtype=A.dtype, backend=A.backend)
    out = fn(_ops.where(_ops.expand_dims(bad, axis=-1), ident, A))
    return _ops.where(bad if out.ndim < A.ndim else _ops.expand_dims(bad, axis=-1), math.nan,
                      out)


def _lu_info(A: Tensor) -> Tensor:  # noqa: N803
    """``getrf``'s ``info`` for ``A`` (no gradient)."""
    return _lu.first_zero_pivot(_lu.packed_lu(A.detach()))


def inv_ex(A: Tensor, *, check_errors: bool = False) -> InvExResult:  # noqa: N803
    """``torch.linalg.inv_ex``: the inverse and ``info`` (int32: the 1-based index of the
    first zero pivot of ``A``'s LU, 0 when invertible), computed without reading the device.
    Where ``info`` is not 0 the inverse is NaN (PyTorch's holds inf/NaN).

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> torch_linalg.inv_ex(xad.tensor([[1.0, 2.0], [2.0, 4.0]])).info.item()
        2
    """
    _check("inv_ex", A)
    info = _checked(_lu_info(A), check_errors, "inv_ex", "the matrix is singular")
    return InvExResult(_guarded(info, A, _la.inv), info)


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True,  # noqa: N803
             check_errors: bool = False) -> SolveExResult:
    """``torch.linalg.solve_ex``: :func:`solve` and ``info`` as :func:`inv_ex`'s; the result
    is NaN where ``info`` is not 0.

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> a = xad.tensor([[2.0, 0.0], [0.0, 4.0]])
        >>> torch_linalg.solve_ex(a, xad.tensor([[2.0], [4.0]])).result.tolist()
        [[1.0], [1.0]]
    """
    _check("solve_ex", A)
    info = _checked(_lu_info(A), check_errors, "solve_ex", "the matrix is singular")
    return SolveExResult(_guarded(info, A, lambda a: solve(a, B, left=left)), info)


def cholesky_ex(A: Tensor, *, upper: bool = False,  # noqa: N803
                check_errors: bool = False) -> CholeskyExResult:
    """``torch.linalg.cholesky_ex``: :func:`cholesky` and ``info`` (int32: the order of the
    first leading minor of ``A`` that is not positive definite, 0 when all are), computed
    without reading the device. The factor is NaN where ``info`` is not 0.

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> torch_linalg.cholesky_ex(xad.tensor([[4.0, 2.0], [2.0, 1.0]])).info.item()
        2
    """
    _check("cholesky_ex", A)
    low = _lower(A, "U" if upper else "L", "cholesky_ex")
    info = _checked(_lu.cholesky_info(low.detach()), check_errors, "cholesky_ex",
                    "the matrix is not positive definite")
    return CholeskyExResult(_guarded(info, low, lambda a: _la.cholesky(a, upper=upper)), info)
