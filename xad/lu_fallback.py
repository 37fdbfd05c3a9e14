"""LU factorisation with partial pivoting in the Array API standard alone (the standard has
none): the backend's default ``lu_factor``, for libraries without a native one, and the
LAPACK pivot vector read as a permutation and its parity."""

from __future__ import annotations

from typing import Any

__all__ = ["lu_factor_generic", "pivots_to_permutation"]


def lu_factor_generic(xp: Any, a: Any, device: Any = None) -> tuple[Any, Any]:
    """``(lu, piv)`` as LAPACK's ``getrf`` gives them for a (batch of) square matrices:
    ``U`` on and above the diagonal of ``lu``, the unit-lower ``L``'s multipliers below it,
    ``piv[..., k]`` the row swapped with row ``k`` at step ``k`` (0-based). A column without
    a non-zero pivot is left as it is (its multipliers are 0), as ``getrf`` does. One step
    of a few array operations per column."""
    n = a.shape[-1]
    rows = xp.arange(n, device=device)
    pivs = []
    for k in range(n):
        mag = xp.where(rows >= k, xp.abs(a[..., :, k]), -1.0)
        p = xp.argmax(mag, axis=-1, keepdims=True)
        pivs.append(p)
        src = xp.where(rows == k, p, xp.where(rows == p, k, rows))
        a = xp.take_along_axis(a, xp.expand_dims(src, axis=-1), axis=-2)
        pivot = a[..., k:k + 1, k:k + 1]
        below = xp.expand_dims(rows > k, axis=-1)
        mult = xp.where(below, a[..., :, k:k + 1] / xp.where(pivot == 0, 1.0, pivot), 0.0)
        a = a - mult * xp.where(rows > k, a[..., k:k + 1, :], 0.0)
        a = xp.where(below & (rows == k), mult, a)
    return a, xp.concat(pivs, axis=-1)


def pivots_to_permutation(xp: Any, piv: Any, device: Any = None) -> tuple[Any, Any]:
    """``(perm, odd)`` for LAPACK's 0-based pivots: ``a[..., perm, :] == L @ U``, and
    whether the permutation is odd (the determinant's sign flips)."""
    n = piv.shape[-1]
    ar = xp.arange(n, dtype=piv.dtype, device=device)
    perm = xp.broadcast_to(ar, piv.shape)
    for i in range(n):
        p = piv[..., i:i + 1]
        at_p = xp.sum(xp.where(ar == p, perm, 0), axis=-1, keepdims=True)
        perm = xp.where(ar == i, at_p, xp.where(ar == p, perm[..., i:i + 1], perm))
    odd = xp.sum(xp.astype(piv != ar, xp.int32), axis=-1) % 2 == 1
    return perm, odd
