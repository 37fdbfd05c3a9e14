"""The Array API's sorting, searching and set functions. ``sort`` is differentiable (its
values are ``take_along_axis`` of the permutation, so the gradient goes back through it);
``argsort``, ``nonzero``, ``searchsorted``, ``count_nonzero`` and ``unique_*`` give integer
or data-dependent results that do not require grad."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from .. import dtypes as _dt
from ..tensor import Tensor
from .manipulation import take_along_axis
from .reduce import sum

__all__ = ["sort", "argsort", "nonzero", "searchsorted", "count_nonzero", "unique_values",
           "unique_counts", "unique_inverse", "unique_all"]

UniqueAll = namedtuple("UniqueAll", ["values", "indices", "inverse_indices", "counts"])
UniqueCounts = namedtuple("UniqueCounts", ["values", "counts"])
UniqueInverse = namedtuple("UniqueInverse", ["values", "inverse_indices"])


def _wrap(a: Any, like: Tensor) -> Tensor:
    return Tensor._make(a, like._backend)


def argsort(x: Tensor, /, *, axis: int = -1, descending: bool = False,
            stable: bool = True) -> Tensor:
    """The indices that sort ``x`` along ``axis`` (ties keep their order when ``stable``).

    Example:
        >>> import xad
        >>> xad.argsort(xad.tensor([3.0, 1.0, 2.0])).tolist()
        [1, 2, 0]
    """
    xp = x._backend.xp
    return _wrap(xp.argsort(x._array, axis=axis, descending=descending, stable=stable), x)


def sort(x: Tensor, /, *, axis: int = -1, descending: bool = False,
         stable: bool = True) -> Tensor:
    """``x`` sorted along ``axis``; the gradient goes to each value's original place.

    Example:
        >>> import xad
        >>> xad.sort(xad.tensor([3.0, 1.0, 2.0]), descending=True).tolist()
        [3.0, 2.0, 1.0]
    """
    if x.ndim == 0:
        return x * 1
    return take_along_axis(x, argsort(x, axis=axis, descending=descending, stable=stable),
                           axis=axis)


def nonzero(x: Tensor, /) -> tuple[Tensor, ...]:
    """The indices of the non-zero elements, one tensor per axis (a data-dependent shape).

    Example:
        >>> import xad
        >>> xad.nonzero(xad.tensor([0, 2, 3]))[0].tolist()
        [1, 2]
    """
    if x.ndim == 0:
        raise ValueError("nonzero: needs a tensor with at least one dimension, got a 0-d one")
    return tuple(_wrap(a, x) for a in x._backend.xp.nonzero(x._array))


def searchsorted(x1: Tensor, x2: Tensor, /, *, side: str = "left",
                 sorter: Tensor | None = None) -> Tensor:
    """Where the values ``x2`` go in the sorted 1-d ``x1`` to keep it sorted.

    Example:
        >>> import xad
        >>> xad.searchsorted(xad.tensor([1.0, 2.0, 3.0]), xad.tensor([2.5])).tolist()
        [2]
    """
    xp = x1._backend.xp
    s = None if sorter is None else sorter._array
    v = x2._array if isinstance(x2, Tensor) else xp.asarray(x2, dtype=x1._array.dtype)
    return _wrap(xp.searchsorted(x1._array, v, side=side, sorter=s), x1)


def count_nonzero(x: Tensor, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
    """How many elements along ``axis`` are not zero.

    Example:
        >>> import xad
        >>> xad.count_nonzero(xad.tensor([[0, 1], [2, 3]]), axis=1).tolist()
        [1, 2]
    """
    nz = x.detach() if x.dtype is _dt.bool_ else x.detach() != 0  # strict: no bool != 0
    return sum(nz.astype(_dt.int64), axis=axis, keepdims=keepdims)


def unique_values(x: Tensor, /) -> Tensor:
    """The distinct values of ``x``, sorted.

    Example:
        >>> import xad
        >>> xad.unique_values(xad.tensor([2, 1, 2])).tolist()
        [1, 2]
    """
    return _wrap(x._backend.xp.unique_values(x._array), x)


def unique_counts(x: Tensor, /) -> UniqueCounts:
    """The distinct values of ``x`` and how often each occurs."""
    r = x._backend.xp.unique_counts(x._array)
    return UniqueCounts(_wrap(r.values, x), _wrap(r.counts, x))


def unique_inverse(x: Tensor, /) -> UniqueInverse:
    """The distinct values and, for each element of ``x``, the index of its value."""
    r = x._backend.xp.unique_inverse(x._array)
    return UniqueInverse(_wrap(r.values, x), _wrap(r.inverse_indices, x))


def unique_all(x: Tensor, /) -> UniqueAll:
    """Values, first indices (into the flattened ``x``), inverse indices and counts of the
    distinct values of ``x`` (composed from ``unique_inverse``: PyTorch has no
    ``unique_all``)."""
    xp = x._backend.xp
    r = xp.unique_inverse(x._array)
    counts = xp.unique_counts(x._array).counts
    order = xp.argsort(xp.reshape(r.inverse_indices, (-1,)), stable=True)
    starts = xp.subtract(xp.cumulative_sum(counts), counts)
    first = xp.take(order, xp.astype(starts, order.dtype))
    return UniqueAll(*(_wrap(a, x) for a in (r.values, first, r.inverse_indices, counts)))

