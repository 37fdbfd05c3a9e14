"""``torch.linalg.ldl_factor``, ``ldl_factor_ex`` and ``ldl_solve`` for
``python -m xad.as_torch``: the Bunch-Kaufman factorisation ``A = P L D L^T P^T`` of a real
symmetric matrix in LAPACK's compact form (``sytf2`` with the lower triangle, as PyTorch
calls it: ``L`` below the diagonal, the 1x1 and 2x2 blocks of ``D`` on and beside it,
``pivots`` 1-based, negative for the two rows of a 2x2 block), and the solve from it
(``sytrs``).

The pivoting reads the matrix, so both run on the host over the matrices' elements (an
explicit copy each way, as ``tolist``), in float64, and give LAPACK's pivots and factors
for matrices of up to LAPACK's block size (64; larger ones are factored by the same
unblocked algorithm, where LAPACK blocks it). Neither is differentiable, as PyTorch's;
real matrices only (docs/PORTING.md).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from . import dtypes as _dt
from . import ops as _ops
from .factories import tensor
from .ops.manipulation import _broadcast_shapes
from .tensor import Tensor

__all__ = ["ldl_factor", "ldl_factor_ex", "ldl_solve"]

_ALPHA = (1.0 + math.sqrt(17.0)) / 8.0  # Bunch-Kaufman's threshold


class LDLFactorResult(NamedTuple):
    LD: Tensor
    pivots: Tensor


class LDLFactorExResult(NamedTuple):
    LD: Tensor
    pivots: Tensor
    info: Tensor


def _argmax(values: list[float]) -> int:
    """The first index of the largest absolute value (BLAS's ``idamax``)."""
    return max(range(len(values)), key=lambda i: (abs(values[i]), -i))


def _choose_pivot(a: list[list[float]], k: int, n: int) -> tuple[int, int]:
    """``(kp, kstep)``: the row to bring to ``k`` and the block size (``sytf2``)."""
    absakk = abs(a[k][k])
    imax, colmax = k, 0.0
    if k < n - 1:
        imax = k + 1 + _argmax([a[i][k] for i in range(k + 1, n)])
        colmax = abs(a[imax][k])
    if absakk >= _ALPHA * colmax:
        return k, 1
    row = [a[imax][j] for j in range(k, imax)] + [a[i][imax] for i in range(imax + 1, n)]
    rowmax = max(abs(v) for v in row)
    if absakk >= _ALPHA * colmax * (colmax / rowmax):
        return k, 1
    if abs(a[imax][imax]) >= _ALPHA * rowmax:
        return imax, 1
    return imax, 2


def _interchange(a: list[list[float]], k: int, kk: int, kp: int, kstep: int, n: int) -> None:
    """Swap rows and columns ``kk`` and ``kp`` of the trailing lower triangle."""
    for i in range(kp + 1, n):
        a[i][kk], a[i][kp] = a[i][kp], a[i][kk]
    for j in range(kk + 1, kp):
        a[j][kk], a[kp][j] = a[kp][j], a[j][kk]
    a[kk][kk], a[kp][kp] = a[kp][kp], a[kk][kk]
    if kstep == 2:
        a[k + 1][k], a[kp][k] = a[kp][k], a[k + 1][k]


def _eliminate(a: list[list[float]], k: int, kstep: int, n: int) -> None:
    """The rank-1 or rank-2 update of the trailing matrix, ``L``'s columns scaled."""
    if kstep == 1:
        d11 = 1.0 / a[k][k]
        for j in range(k + 1, n):
            for i in range(j, n):
                a[i][j] -= d11 * a[i][k] * a[j][k]
        for i in range(k + 1, n):
            a[i][k] *= d11
        return
    d21 = a[k + 1][k]
    d11, d22 = a[k + 1][k + 1] / d21, a[k][k] / d21
    d21 = 1.0 / (d11 * d22 - 1.0) / d21
    for j in range(k + 2, n):
        wk = d21 * (d11 * a[j][k] - a[j][k + 1])
        wkp1 = d21 * (d22 * a[j][k + 1] - a[j][k])
        for i in range(j, n):
            a[i][j] -= a[i][k] * wk + a[i][k + 1] * wkp1
        a[j][k], a[j][k + 1] = wk, wkp1


def _sytf2(a: list[list[float]]) -> tuple[list[int], int]:
    """LAPACK's ``sytf2`` (lower) on ``a`` in place: the pivots and ``info``."""
    n, k, info = len(a), 0, 0
    piv = [0] * n
    while k < n:
        col = [abs(a[i][k]) for i in range(k, n)]
        if max(col) == 0 or math.isnan(a[k][k]):  # a zero column: nothing to eliminate
            info, kp, kstep = info or k + 1, k, 1
        else:
            kp, kstep = _choose_pivot(a, k, n)
            if kp != k + kstep - 1:
                _interchange(a, k, k + kstep - 1, kp, kstep, n)
            _eliminate(a, k, kstep, n)
        piv[k:k + kstep] = [kp + 1] * kstep if kstep == 1 else [-(kp + 1)] * 2
        k += kstep
    return piv, info


def _matrices(A: Tensor, name: str) -> list:  # noqa: N803
    """``A``'s matrices as nested lists (read to the host), after PyTorch's checks."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.{name}: A must be batches of square matrices, but "
                           f"they are {A.shape[-2] if A.ndim > 1 else A.ndim} by "
                           f"{A.shape[-1] if A.ndim else 0} matrices")
    if not A.dtype.is_floating:
        raise RuntimeError(f"torch.linalg.{name}: A must be a real floating matrix in xad, got "
                           f"{A.dtype} (complex LDL is outside xad's subset)")
    n = A.shape[-1]
    flat = A.detach().reshape((-1, n, n)).astype(_dt.float64).tolist()
    return [[[float(v) for v in row] for row in m] for m in flat]


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False,  # noqa: N803
                  check_errors: bool = False) -> LDLFactorExResult:
    """``torch.linalg.ldl_factor_ex``: ``(LD, pivots, info)`` of the Bunch-Kaufman
    factorisation of the lower triangle of each (real symmetric) matrix; ``info`` is the
    1-based index of the first zero block of ``D`` (0: none).

    Example:
        >>> import xad
        >>> from xad.torch_ldl import ldl_factor_ex
        >>> ldl_factor_ex(xad.tensor([[0.0, 1.0], [1.0, 0.0]])).pivots.tolist()
        [-2, -2]
    """
    mats, lead = _matrices(A, "ldl_factor_ex"), tuple(A.shape[:-2])
    pivs, infos = [], []
    for m in mats:
        p, info = _sytf2(m)
        for i, row in enumerate(m):  # the upper triangle is zeroed, as PyTorch's
            row[i + 1:] = [0.0] * (len(row) - i - 1)
        pivs.append(p)
        infos.append(info)
    if check_errors and any(infos):
        raise RuntimeError(f"torch.linalg.ldl_factor_ex: D has a zero block (info = {infos})")
    b, n = A.backend, A.shape[-1]
    ld = tensor(mats, dtype=_dt.float64, backend=b).astype(A.dtype).reshape(lead + (n, n))
    piv = tensor(pivs, dtype=_dt.int32, backend=b).reshape(lead + (n,))
    return LDLFactorExResult(ld, piv, tensor(infos, dtype=_dt.int32, backend=b).reshape(lead))


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> LDLFactorResult:  # noqa: N803
    """``torch.linalg.ldl_factor``: :func:`ldl_factor_ex` without ``info``; a singular ``D``
    raises.

    Example:
        >>> import xad
        >>> from xad.torch_ldl import ldl_factor
        >>> ldl_factor(xad.tensor([[4.0, 2.0], [2.0, 5.0]])).LD.tolist()
        [[4.0, 0.0], [0.5, 4.0]]
    """
    ld, piv, info = ldl_factor_ex(A, hermitian=hermitian, check_errors=True)
    return LDLFactorResult(ld, piv)


def _sytrs(a: list[list[float]], piv: list[int], b: list[list[float]]) -> None:
    """LAPACK's ``sytrs`` (lower) on the rows of ``b`` in place: ``A X = B``."""
    n, k = len(a), 0

    def axpy(dst: int, src: int, s: float) -> None:
        b[dst] = [x - s * y for x, y in zip(b[dst], b[src], strict=True)]
    while k < n:  # L D Y = P^T B
        kp, two = abs(piv[k]) - 1, piv[k] < 0
        r = k + 1 if two else k
        b[r], b[kp] = b[kp], b[r]
        for i in range(k + 1 + two, n):
            for j in range(k, k + 1 + two):
                axpy(i, j, a[i][j])
        if not two:
            b[k] = [x / a[k][k] for x in b[k]]
        else:
            d21 = a[k + 1][k]
            d11, d22 = a[k][k] / d21, a[k + 1][k + 1] / d21
            den = d11 * d22 - 1.0
            b[k], b[k + 1] = ([(d22 * x / d21 - y / d21) / den for x, y in zip(b[k], b[k + 1])],
                              [(d11 * y / d21 - x / d21) / den for x, y in zip(b[k], b[k + 1])])
        k += 1 + two
    k = n - 1
    while k >= 0:  # L^T P^T X = Y
        two = piv[k] < 0
        for j in (k - 1, k) if two else (k,):
            for i in range(k + 1, n):
                axpy(j, i, a[i][j])
        kp = abs(piv[k]) - 1
        b[k], b[kp] = b[kp], b[k]
        k -= 1 + two


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *,  # noqa: N803
              hermitian: bool = False) -> Tensor:
    """``torch.linalg.ldl_solve``: ``X`` with ``A X = B`` from :func:`ldl_factor`'s ``LD``
    and ``pivots`` (batches broadcast), in ``B``'s dtype.

    Example:
        >>> import xad
        >>> from xad.torch_ldl import ldl_factor, ldl_solve
        >>> f = ldl_factor(xad.tensor([[0.0, 2.0], [2.0, 0.0]], dtype=xad.float64))
        >>> ldl_solve(*f, xad.tensor([[4.0], [2.0]], dtype=xad.float64)).tolist()
        [[1.0], [2.0]]
    """
    n = LD.shape[-1]
    if B.ndim < 2 or B.shape[-2] != n or tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"torch.linalg.ldl_solve: LD {tuple(LD.shape)}, pivots "
                           f"{tuple(pivots.shape)} and B {tuple(B.shape)} must be (*, n, n), "
                           f"(*, n) and (*, n, k)")
    lead = _broadcast_shapes([tuple(LD.shape[:-2]), tuple(B.shape[:-2])])
    ld = _matrices(_ops.broadcast_to(LD, lead + (n, n)), "ldl_solve")
    piv = _ops.broadcast_to(pivots, lead + (n,)).reshape((-1, n)).tolist()
    rhs = _ops.broadcast_to(B.detach(), lead + tuple(B.shape[-2:]))
    bs = rhs.reshape((-1, n, B.shape[-1])).astype(_dt.float64).tolist()
    for a, p, b in zip(ld, piv, bs, strict=True):
        _sytrs(a, p, b)
    return tensor(bs, dtype=_dt.float64, backend=B.backend).astype(B.dtype).reshape(rhs.shape)
