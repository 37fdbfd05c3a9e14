"""The Array API's sorting, searching and set functions. ``sort`` is differentiable (its
values are ``take_along_axis`` of the permutation, so the gradient goes back through it);
``argsort``, ``nonzero``, ``searchsorted``, ``count_nonzero`` and ``unique_*`` give integer
or data-dependent results that do not require grad (each one array call, told to
``xad.compile``'s recorder as an instruction: a replay computes it again)."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from .. import dtypes as _dt
from ..context import context
from ..tensor import Tensor
from .manipulation import take_along_axis
from .reduce import sum

__all__ = ["sort", "argsort", "nonzero", "searchsorted", "count_nonzero", "unique_values",
           "unique_counts", "unique_inverse", "unique_all"]

UniqueAll = namedtuple("UniqueAll", ["values", "indices", "inverse_indices", "counts"])
UniqueCounts = namedtuple("UniqueCounts", ["values", "counts"])
UniqueInverse = namedtuple("UniqueInverse", ["values", "inverse_indices"])


def _call(kernel: Any, label: str, x: Tensor, *more: Any, **params: Any) -> Any:
    """``kernel(b, x's array, *more's arrays, **params)`` (an array or a tuple of arrays) as
    tensors of ``x``'s backend; recorded by ``xad.compile`` as one instruction."""
    b = x._backend
    arrays = [a._array if isinstance(a, Tensor) else a for a in (x, *more)]
    with b.on_device():
        out = kernel(b, *arrays, **params)
    if context.recorder is not None:
        context.recorder.call(kernel, b, (x, *more), out, label, params)
    if type(out) is tuple:
        return tuple(Tensor._make(a, b) for a in out)
    return Tensor._make(out, b)


def _argsort(b: Any, x: Any, axis: int, descending: bool, stable: bool) -> Any:
    return b.xp.argsort(x, axis=axis, descending=descending, stable=stable)


def _nonzero(b: Any, x: Any) -> tuple:
    return tuple(b.xp.nonzero(x))


def _searchsorted(b: Any, x1: Any, x2: Any, sorter: Any, side: str) -> Any:
    return b.xp.searchsorted(x1, x2, side=side, sorter=sorter)


def _unique_values(b: Any, x: Any) -> Any:
    return b.xp.unique_values(x)


def _unique_counts(b: Any, x: Any) -> tuple:
    return tuple(b.xp.unique_counts(x))


def _unique_inverse(b: Any, x: Any) -> tuple:
    return tuple(b.xp.unique_inverse(x))


def _unique_all(b: Any, x: Any) -> tuple:
    xp = b.xp
    r = xp.unique_inverse(x)
    counts = xp.unique_counts(x).counts
    order = xp.argsort(xp.reshape(r.inverse_indices, (-1,)), stable=True)
    starts = xp.subtract(xp.cumulative_sum(counts), counts)
    first = xp.take(order, xp.astype(starts, order.dtype))
    return r.values, first, r.inverse_indices, counts


def argsort(x: Tensor, /, *, axis: int = -1, descending: bool = False,
            stable: bool = True) -> Tensor:
    """The indices that sort ``x`` along ``axis`` (ties keep their order when ``stable``).

    Example:
        >>> import xad
        >>> xad.argsort(xad.tensor([3.0, 1.0, 2.0])).tolist()
        [1, 2, 0]
    """
    return _call(_argsort, "argsort", x, axis=axis, descending=descending, stable=stable)


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
    return _call(_nonzero, "nonzero", x)


def searchsorted(x1: Tensor, x2: Tensor, /, *, side: str = "left",
                 sorter: Tensor | None = None) -> Tensor:
    """Where the values ``x2`` go in the sorted 1-d ``x1`` to keep it sorted.

    Example:
        >>> import xad
        >>> xad.searchsorted(xad.tensor([1.0, 2.0, 3.0]), xad.tensor([2.5])).tolist()
        [2]
    """
    if not isinstance(x2, Tensor):
        x2 = Tensor._constant(x1._backend.xp.asarray(x2, dtype=x1._array.dtype), x1._backend)
    return _call(_searchsorted, "searchsorted", x1, x2, sorter, side=side)


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
    return _call(_unique_values, "unique_values", x)


def unique_counts(x: Tensor, /) -> UniqueCounts:
    """The distinct values of ``x`` and how often each occurs."""
    return UniqueCounts(*_call(_unique_counts, "unique_counts", x))


def unique_inverse(x: Tensor, /) -> UniqueInverse:
    """The distinct values and, for each element of ``x``, the index of its value."""
    return UniqueInverse(*_call(_unique_inverse, "unique_inverse", x))


def unique_all(x: Tensor, /) -> UniqueAll:
    """Values, first indices (into the flattened ``x``), inverse indices and counts of the
    distinct values of ``x`` (composed from ``unique_inverse``: PyTorch has no
    ``unique_all``)."""
    return UniqueAll(*_call(_unique_all, "unique_all", x))

