"""LU factorisation with partial pivoting in the Array API standard alone (the standard has
none): the backend's default ``lu_factor``, for libraries without a native one."""

from __future__ import annotations

from typing import Any

__all__ = ["lu_factor_generic", "odd_pivots"]


def lu_factor_generic(xp: Any, a: Any, device: Any = None) -> tuple[Any, Any, Any]:
    """``(lu, perm, odd)`` for a (batch of) matrices (m x n), as LAPACK's ``getrf`` computes
    them: ``U`` on and above the diagonal of ``lu``, the unit-lower ``L``'s multipliers below
    it, ``a[..., perm, :] == L @ U``, and whether the row swaps are odd in number (the
    determinant's sign). A column without a non-zero pivot is left as it is (multipliers
    0), as ``getrf`` does; a complex pivot is the first largest ``|Re| + |Im|``, as
    ``izamax``'s. One step of a few array operations per column."""
    m, n = a.shape[-2], a.shape[-1]
    rows, cols = xp.arange(m, device=device), xp.arange(n, device=device)
    perm = xp.broadcast_to(rows, tuple(a.shape[:-2]) + (m,))
    pivs = []
    for k in range(min(m, n)):
        mag = xp.where(rows >= k, _magnitude(xp, a[..., :, k]), -1.0)
        p = xp.argmax(mag, axis=-1, keepdims=True)
        pivs.append(p)
        src = xp.where(rows == k, p, xp.where(rows == p, k, rows))
        perm = xp.take_along_axis(perm, src, axis=-1)
        a = xp.take_along_axis(a, xp.expand_dims(src, axis=-1), axis=-2)
        pivot = a[..., k:k + 1, k:k + 1]
        below = xp.expand_dims(rows > k, axis=-1)
        mult = xp.where(below, a[..., :, k:k + 1] / xp.where(pivot == 0, 1.0, pivot), 0.0)
        a = a - mult * xp.where(cols > k, a[..., k:k + 1, :], 0.0)
        a = xp.where(below & (cols == k), mult, a)
    return a, perm, odd_pivots(xp, xp.concat(pivs, axis=-1), device)


def _magnitude(xp: Any, col: Any) -> Any:
    """What LAPACK's ``i?amax`` compares: ``|x|``, or ``|Re x| + |Im x|`` for complex."""
    if col.dtype in (xp.complex64, xp.complex128):
        return xp.abs(xp.real(col)) + xp.abs(xp.imag(col))
    return xp.abs(col)


def odd_pivots(xp: Any, piv: Any, device: Any = None) -> Any:
    """Whether LAPACK's 0-based pivots ``piv`` swap rows an odd number of times."""
    ar = xp.arange(piv.shape[-1], dtype=piv.dtype, device=device)
    return xp.sum(xp.astype(piv != ar, xp.int32), axis=-1) % 2 == 1
