"""``xad.linalg``: the Array API's linear-algebra extension, differentiable.

The decompositions and inverses are primitives (ops/inverses.py, ops/decompositions.py:
forward through the backend's own ``xp.linalg``); everything else here is composed from xad
operations, so its gradient, of any order, comes from its parts. Degenerate inputs are
described in docs/ARRAY_API.md.

Example:
    >>> import xad
    >>> x = xad.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
    >>> xad.linalg.det(x).backward(); x.grad.tolist()
    [[3.0, -1.0], [-1.0, 2.0]]
"""

from __future__ import annotations

import math
import operator
from typing import Any, NamedTuple

from . import dtypes as _dt
from .factories import eye, zeros
from .ops._apply import unary
from .ops.amp_cast import autocast_float32
from .ops.complex_parts import conj
from .ops.decompositions import (
    EighResult,
    QRResult,
    SVDResult,
    cholesky,
    eigh,
    eigvalsh,
    qr,
    svd,
    svdvals,
)
from .ops.diagonal import Diagonal
from .ops.eig import EigResult, eig, eigvals
from .ops.elementwise import abs, sqrt, where
from .ops.inverses import (
    SlogdetResult,
    _check,
    _mH,
    det,
    inv,
    matrix_rank,
    pinv,
    slogdet,
    solve,
)
from .ops.linalg import matmul, tensordot
from .ops.manipulation import moveaxis, tril, vecdot
from .ops.matrix_exponential import matrix_exp
from .ops.norms import abs2
from .ops.norms import vector_norm as _vector_norm
from .ops.reduce import max as _max
from .ops.reduce import min as _min
from .ops.reduce import sum as _sum
from .ops.shape import broadcast_to, expand_dims, matrix_transpose, reshape, stack
from .tensor import Tensor

__all__ = ["cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv",
           "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose",
           "multi_dot", "outer", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm", "lstsq", "EigResult", "EighResult", "LstsqResult", "QRResult",
           "SVDResult", "SlogdetResult"]


def diagonal(x: Tensor, /, *, offset: int = 0) -> Tensor:
    """Diagonal ``offset`` of each matrix (the last two axes), a view of it (as PyTorch's).

    Example:
        >>> import xad
        >>> xad.linalg.diagonal(xad.tensor([[1.0, 2.0], [3.0, 4.0]]), offset=1).tolist()
        [2.0]
    """
    _check("diagonal", x, square=False)
    return unary(Diagonal, x, offset=operator.index(offset))  # a view, as PyTorch's


def trace(x: Tensor, /, *, offset: int = 0, dtype: Any = None) -> Tensor:
    """The sum of diagonal ``offset`` of each matrix.

    Example:
        >>> import xad
        >>> xad.linalg.trace(xad.tensor([[1.0, 2.0], [3.0, 4.0]])).item()
        5.0
    """
    out = _sum(diagonal(x, offset=offset), axis=-1)
    return out if dtype is None else out.astype(dtype)


def cross(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``axis`` (broadcast over the other axes).

    Example:
        >>> import xad
        >>> xad.linalg.cross(xad.tensor([1.0, 0.0, 0.0]), xad.tensor([0.0, 1.0, 0.0])).tolist()
        [0.0, 0.0, 1.0]
    """
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"linalg.cross: axis {axis} must have size 3 in both inputs, got "
                         f"shapes {x1.shape} and {x2.shape}")
    a, b = moveaxis(x1, axis, -1), moveaxis(x2, axis, -1)
    a0, a1, a2, b0, b1, b2 = a[..., 0], a[..., 1], a[..., 2], b[..., 0], b[..., 1], b[..., 2]
    out = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(out, -1, axis)


def outer(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The outer product of two 1-d tensors.

    Example:
        >>> import xad
        >>> xad.linalg.outer(xad.tensor([1.0, 2.0]), xad.tensor([3.0])).tolist()
        [[3.0], [6.0]]
    """
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"linalg.outer: needs two 1-d tensors, got shapes {x1.shape} and "
                         f"{x2.shape}")
    return expand_dims(x1, axis=1) * expand_dims(x2, axis=0)


def matrix_power(x: Tensor, n: int, /) -> Tensor:
    """``x`` times itself ``n`` times (by squaring; ``n < 0`` powers the inverse).

    Example:
        >>> import xad
        >>> xad.linalg.matrix_power(xad.tensor([[1.0, 1.0], [0.0, 1.0]]), 3).tolist()
        [[1.0, 3.0], [0.0, 1.0]]
    """
    _check("matrix_power", x)
    if n < 0:
        return matrix_power(inv(x), -n)
    if n == 0:
        e = broadcast_to(eye(x.shape[-1], dtype=x.dtype, backend=x._backend), x.shape)
        if not x.requires_grad:
            return e  # below: in the graph, its gradient 0 (PyTorch's; backward raised)
        return where(zeros(x.shape, dtype=_dt.bool_, backend=x._backend), x, e)
    out, sq = None, x
    while True:
        if n & 1:
            out = sq if out is None else matmul(out, sq)
        n >>= 1
        if not n:
            assert out is not None  # n > 0 here: its top bit, the last one read, set out
            return out
        sq = matmul(sq, sq)


def vector_norm(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None,
                keepdims: bool = False, ord: float = 2) -> Tensor:
    """The ``ord``-norm over ``axis`` (all axes when ``None``): ``inf``, ``-inf``, ``0``
    (the count of non-zeros, no gradient) or any other ``p``.

    Example:
        >>> import xad
        >>> xad.linalg.vector_norm(xad.tensor([3.0, -4.0])).item()
        5.0
    """
    return _vector_norm(x, ord, axis, keepdims)


_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def matrix_norm(x: Tensor, /, *, keepdims: bool = False, ord: Any = "fro") -> Tensor:
    """A norm of each matrix: ``"fro"``, ``"nuc"`` (sum of singular values), ``2``/``-2``
    (largest/smallest singular value), ``1``/``-1`` (column sums), ``inf``/``-inf`` (rows).

    Example:
        >>> import xad
        >>> xad.linalg.matrix_norm(xad.tensor([[3.0, 0.0], [0.0, -4.0]]), ord=2).item()
        4.0
    """
    _check("matrix_norm", x, square=False)
    if ord not in _MATRIX_ORDS:
        raise ValueError(f"linalg.matrix_norm: ord must be one of {_MATRIX_ORDS}, got {ord!r}")
    (x,) = autocast_float32(x, op="matrix_norm")  # (autocast's float32 list)
    if ord == "fro":
        out = sqrt(_sum(abs2(x), axis=(-2, -1)))
    elif ord in ("nuc", 2, -2):
        s = svdvals(x)
        out = _sum(s, axis=-1) if ord == "nuc" else (_max if ord == 2 else _min)(s, axis=-1)
    else:
        sums = _sum(abs(x), axis=-2 if ord in (1, -1) else -1)
        out = (_max if ord > 0 else _min)(sums, axis=-1)
    return reshape(out, (*out.shape, 1, 1)) if keepdims else out


class LstsqResult(NamedTuple):
    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(x1: Tensor, x2: Tensor, /, rcond: float | None = None, *,
          driver: str = "gelsd") -> LstsqResult:
    """The least-squares solution ``X`` of ``x1 @ X = x2`` for a full-rank ``x1`` (M, N)
    (and ``x2`` (M, K) or (M,)): the residual's minimiser when ``M >= N`` (through QR), the
    least-norm solution when ``M < N``, differentiable in both. The other fields follow
    LAPACK's ``driver`` as NumPy (``"gelsd"``, the default: ``np.linalg.lstsq``) and
    ``torch.linalg.lstsq`` report them: squared residuals per column where ``M > N``
    (``gels``, ``gelsd``, ``gelss``), the rank (all but ``gels``; singular values under
    ``rcond`` times the largest do not count), the singular values (``gelsd``, ``gelss``);
    empty where the driver gives none. A rank-deficient ``x1`` is not supported: its
    solution raises or is inf/NaN (JAX), where LAPACK's rank-revealing drivers differ.

    Example:
        >>> import xad
        >>> a = xad.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> r = xad.linalg.lstsq(a, xad.tensor([1.0, 1.0, 3.0]))
        >>> [round(v, 4) for v in r.solution.tolist()], round(r.residuals.item(), 4)
        ([1.3333, 1.3333], 0.3333)
    """
    _check("lstsq", x1, square=False)
    if driver not in _DRIVERS:
        raise ValueError(f"linalg.lstsq: driver must be one of {_DRIVERS}, got {driver!r}")
    m, n = x1.shape[-2], x1.shape[-1]
    vec = x2.ndim == 1
    b = expand_dims(x2, axis=-1) if vec else x2
    if b.ndim < 2 or b.shape[-2] != m:
        raise ValueError(f"linalg.lstsq: x1 has shape {x1.shape} and x2 {x2.shape}; x2 must "
                         f"be (..., M, K) or (M,) with M = {m}")
    if m >= n:  # (conjugate transposes: a complex x1's solution was another's)
        q, r = qr(x1)
        sol = solve(r, matmul(conj(matrix_transpose(q)), b))
    else:
        q, r = qr(conj(matrix_transpose(x1)))
        sol = matmul(q, solve(conj(matrix_transpose(r)), b))
    empty = zeros((0,), dtype=x1.dtype, backend=x1._backend)
    res = empty
    if m > n and driver != "gelsy":
        res = _sum(abs2(matmul(x1, sol) - b), axis=-2)
    rank = zeros((0,), dtype=_dt.int64, backend=x1._backend) if driver == "gels" else \
        matrix_rank(x1.detach(), rtol=rcond)
    sv = svdvals(x1.detach()) if driver in ("gelsd", "gelss") else empty
    if vec:  # torch keeps the residual's (1,) of a one-column right side
        sol = sol[..., 0]
    return LstsqResult(sol, res, rank, sv)


def _chain_order(dims: list[int]) -> list[list[int]]:
    """``split[i][j]``: where the cheapest product of matrices ``i..j`` (matrix ``k`` of
    shape ``dims[k], dims[k + 1]``) splits (the textbook dynamic programme)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j], split[i][j] = min(
                (cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                for k in range(i, j))
    return split


def multi_dot(tensors: Any, /) -> Tensor:
    """The product of two or more matrices in the cheapest order (NumPy's and PyTorch's
    ``multi_dot``); the first may be 1-d (a row vector) and the last 1-d (a column), whose
    axis the result then drops.

    Example:
        >>> import xad
        >>> a, b = xad.ones((2, 3)), xad.ones((3, 4))
        >>> xad.linalg.multi_dot([a, b, xad.ones(4)]).tolist()
        [12.0, 12.0]
    """
    ts = list(tensors)
    if len(ts) < 2:
        raise ValueError(f"linalg.multi_dot: needs at least 2 tensors, got {len(ts)}")
    for i, t in enumerate(ts):
        end = i in (0, len(ts) - 1)
        if t.ndim != 2 and not (end and t.ndim == 1):
            raise ValueError(f"linalg.multi_dot: tensor {i} must be 2-d"
                             f"{' or 1-d' if end else ''}, got shape {t.shape} (batches: "
                             f"use matmul)")
        if t.dtype is not ts[0].dtype:
            raise TypeError(f"linalg.multi_dot: every tensor must have one dtype, got "
                            f"{ts[0].dtype} (tensor 0) and {t.dtype} (tensor {i})")
    row, col = ts[0].ndim == 1, ts[-1].ndim == 1
    ms = [expand_dims(ts[0], axis=0)] * row + ts[row:len(ts) - col] + \
        [expand_dims(ts[-1], axis=1)] * col
    for i in range(len(ms) - 1):
        if ms[i].shape[1] != ms[i + 1].shape[0]:
            raise ValueError(f"linalg.multi_dot: tensors {i} and {i + 1} of shapes "
                             f"{ts[i].shape} and {ts[i + 1].shape} cannot be multiplied")
    split = _chain_order([m.shape[0] for m in ms] + [ms[-1].shape[1]])

    def product(i: int, j: int) -> Tensor:
        return ms[i] if i == j else matmul(product(i, split[i][j]), product(split[i][j] + 1, j))
    out = product(0, len(ms) - 1)
    return out[0, 0] if row and col else out[0] if row else out[:, 0] if col else out


def _householder_product(A: Tensor, tau: Tensor) -> Tensor:  # noqa: N803
    """The first ``n`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H``, ``v_i``
    column ``i`` of ``A`` (m x n, ``m >= n >= k``) below the diagonal with a 1 on it
    (LAPACK's ``orgqr`` layout; unchecked: ``xad.torch_linalg.householder_product`` checks
    its arguments), composed from xad operations; here, below ``xad.nn``, for its
    orthogonal parametrization."""
    m, n, k = A.shape[-2], A.shape[-1], tau.shape[-1]
    v = tril(A[..., :k], k=-1) + eye(m, k, dtype=A.dtype, backend=A.backend)
    q = broadcast_to(eye(m, n, dtype=A.dtype, backend=A.backend), tuple(A.shape))
    if k == 0 and A.requires_grad:  # in the graph, gradient 0 (PyTorch's: None, no error)
        return where(zeros(tuple(A.shape), dtype=_dt.bool_, backend=A.backend), A, q)
    for i in reversed(range(k)):  # H_i (H_i+1 ... H_k I)
        vi = v[..., i:i + 1]
        q = q - expand_dims(tau[..., i:i + 1], axis=-1) * (vi @ (_mH(vi) @ q))
    return q
