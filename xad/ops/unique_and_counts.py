"""PyTorch's ``unique``, ``unique_consecutive``, ``bincount`` and ``isin``.

The first three give results whose size depends on the data, so each makes exactly one
device-to-host read, explicit (the backend's ``to_numpy``: the number of groups, or the
largest value for ``bincount``), as PyTorch's CUDA versions synchronise; everything else
stays on the device (sorting, group ids by prefix sums, scatter-adds). ``isin`` reads
nothing. None of them is differentiable (PyTorch's are not either); ``bincount`` without
``weights`` counts in int64, with them in their floating dtype.
"""

from __future__ import annotations

from typing import Any

from .. import dtypes as _dt
from ..factories import tensor
from ..tensor import Tensor
from .axes import normalize_axis
from .dtype_functions import result_type
from .sorting import _call

__all__ = ["unique", "unique_consecutive", "bincount", "isin"]


def _rows(xp: Any, x: Any, axis: int | None) -> Any:
    """``x`` as ``(n, m)`` rows: its elements (``axis=None``: ``m = 1``) or its slices
    along ``axis``."""
    if axis is None:
        return xp.reshape(x, (-1, 1))
    moved = xp.moveaxis(x, axis, 0)
    return xp.reshape(moved, (moved.shape[0], -1))


def _lexsort(xp: Any, rows: Any) -> Any:
    """The stable order that sorts ``rows`` lexicographically (first column first)."""
    if rows.dtype == xp.bool:  # the standard sorts numbers only
        rows = xp.astype(rows, xp.int8)
    order = xp.argsort(rows[:, -1], stable=True)
    for c in range(rows.shape[1] - 2, -1, -1):
        order = xp.take(order, xp.argsort(xp.take(rows[:, c], order), stable=True))
    return order


def _groups(b: Any, x: Any, axis: int | None, consecutive: bool) -> tuple:
    """``(values, inverse, counts)`` of the distinct elements (slices along ``axis``) of
    ``x``, sorted, or of its runs where ``consecutive``: one host read, the group count."""
    xp, dev = b.xp, b.device
    rows = _rows(xp, x, axis)
    n, i64 = rows.shape[0], xp.int64
    if n == 0:  # nothing to read: no groups
        none = xp.zeros((0,), dtype=i64, device=dev)
        return (x if axis is not None else xp.reshape(x, (0,))), xp.reshape(
            none, x.shape if axis is None else (0,)), none
    order = None if consecutive else _lexsort(xp, rows)
    s = rows if order is None else xp.take(rows, order, axis=0)
    step = xp.any(s[1:, ...] != s[:-1, ...], axis=1) if s.shape[1] else xp.zeros(
        (n - 1,), dtype=xp.bool, device=dev)
    new = xp.concat([xp.ones((1,), dtype=xp.bool, device=dev), step])
    group = xp.cumulative_sum(xp.astype(new, i64)) - 1
    count = int(b.to_numpy(group[-1:])[0]) + 1  # the one host read: the number of groups
    pos = xp.arange(n, dtype=i64, device=dev)
    first = b.scatter_add_flat(xp.zeros((count + 1,), dtype=i64, device=dev),
                               xp.where(new, group, count), xp.where(new, pos, 0))[:count]
    ends = xp.concat([first[1:], xp.full((1,), n, dtype=i64, device=dev)])
    inverse = group if order is None else b.scatter_add_flat(
        xp.zeros((n,), dtype=i64, device=dev), order, group)
    vals = xp.take(s, first, axis=0)
    if axis is None:
        return xp.reshape(vals, (-1,)), xp.reshape(inverse, x.shape), ends - first
    shape = (count,) + tuple(xp.moveaxis(x, axis, 0).shape[1:])
    return xp.moveaxis(xp.reshape(vals, shape), 0, axis), inverse, ends - first


def _result(t: tuple, return_inverse: bool, return_counts: bool) -> Any:
    values, inverse, counts = t
    if not (return_inverse or return_counts):
        return values
    return (values, *([inverse] if return_inverse else []),
            *([counts] if return_counts else []))


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None) -> Any:
    """PyTorch's ``unique``: the distinct values (``dim``: slices) of ``input``, sorted
    (``sorted=False`` sorts too, as PyTorch's CPU version), and with ``return_inverse`` /
    ``return_counts`` the group of each element and each group's size. One explicit
    device-to-host read (the number of distinct values: the result's size).

    Example:
        >>> import xad
        >>> v, inv, c = xad.unique(xad.tensor([3, 1, 3, 2]), return_inverse=True,
        ...                        return_counts=True)
        >>> v.tolist(), inv.tolist(), c.tolist()
        ([1, 2, 3], [2, 0, 2, 1], [1, 1, 2])
    """
    axis = None if dim is None else normalize_axis(dim, input.ndim, "unique")
    out = _call(_groups, "unique", input.detach(), axis=axis, consecutive=False)
    return _result(out, return_inverse, return_counts)


def unique_consecutive(input: Tensor, return_inverse: bool = False,  # noqa: A002
                       return_counts: bool = False, dim: int | None = None) -> Any:
    """PyTorch's ``unique_consecutive``: one element (``dim``: slice) of each run of equal
    neighbours, in order; one explicit device-to-host read (the number of runs).

    Example:
        >>> import xad
        >>> xad.unique_consecutive(xad.tensor([1, 1, 2, 2, 1]), return_counts=True)[1].tolist()
        [2, 2, 1]
    """
    axis = None if dim is None else normalize_axis(dim, input.ndim, "unique_consecutive")
    out = _call(_groups, "unique_consecutive", input.detach(), axis=axis, consecutive=True)
    return _result(out, return_inverse, return_counts)


def _bincount(b: Any, x: Any, weights: Any, minlength: int) -> Any:
    xp = b.xp
    n = x.shape[0]
    length = minlength
    if n:  # the read: largest and (negated) smallest value in one transfer
        hi, neg = (int(v) for v in b.to_numpy(xp.stack([xp.max(x), -xp.min(x)])))
        if neg > 0:
            raise ValueError(f"bincount: input holds a negative value ({-neg}); it counts "
                             f"non-negative integers only")
        length = max(hi + 1, minlength)
    idx = xp.astype(x, xp.int64)
    if weights is None:  # integer sums: the standard-only scatter-add is exact for them
        return b.scatter_add_flat(xp.zeros((length,), dtype=xp.int64, device=b.device), idx,
                                  xp.ones((n,), dtype=xp.int64, device=b.device))
    return b.index_add(xp.zeros((length,), dtype=weights.dtype, device=b.device), (idx,),
                       weights)


def bincount(input: Tensor, weights: Tensor | None = None,  # noqa: A002
             minlength: int = 0) -> Tensor:
    """PyTorch's ``bincount``: how often each of ``0 .. max(input)`` occurs in the 1-d
    non-negative integer ``input`` (at least ``minlength`` bins), or the sum of ``weights``
    at each. One explicit device-to-host read (the largest value: the result's size), as
    PyTorch's synchronises.

    Example:
        >>> import xad
        >>> xad.bincount(xad.tensor([1, 1, 3]), minlength=5).tolist()
        [0, 2, 0, 1, 0]
    """
    d = input.dtype
    if input.ndim != 1 or d.is_floating or d.name.startswith(("complex", "bool")):
        raise ValueError(f"bincount: input must be a 1-d tensor of integers, got shape "
                         f"{tuple(input.shape)} of {d.name}")
    if weights is not None:
        if tuple(weights.shape) != tuple(input.shape):
            raise ValueError(f"bincount: weights (shape {tuple(weights.shape)}) must have "
                             f"input's shape {tuple(input.shape)}")
        if not weights.dtype.is_floating:
            weights = weights.astype(_dt.float64)
        weights = weights.detach()
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be >= 0, got {minlength}")
    return _call(_bincount, "bincount", input.detach(), weights, minlength=minlength)


def _isin(b: Any, e: Any, t: Any, invert: bool) -> Any:
    xp = b.xp
    flat_t = xp.sort(xp.reshape(t, (-1,)))
    flat_e = xp.reshape(e, (-1,))
    if flat_t.shape[0] == 0:
        hit = xp.zeros(flat_e.shape, dtype=xp.bool, device=b.device)
    else:
        pos = xp.clip(xp.searchsorted(flat_t, flat_e), 0, flat_t.shape[0] - 1)
        hit = xp.take(flat_t, pos) == flat_e
    hit = xp.reshape(hit, e.shape)
    return xp.logical_not(hit) if invert else hit


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """PyTorch's ``isin``: whether each of ``elements`` is one of ``test_elements`` (either
    may be a number); by sorting and a binary search, on the device.

    Example:
        >>> import xad
        >>> xad.isin(xad.tensor([1, 2, 3]), xad.tensor([3, 1])).tolist()
        [True, False, True]
    """
    like = elements if isinstance(elements, Tensor) else test_elements
    if not isinstance(like, Tensor):
        raise TypeError("isin: elements or test_elements must be a tensor")
    e, t = (v.detach() if isinstance(v, Tensor) else tensor(v, backend=like._backend)
            for v in (elements, test_elements))
    if e.dtype is not t.dtype:
        d = result_type(e, t)
        e, t = e.astype(d), t.astype(d)
    return _call(_isin, "isin", e, t, invert=invert)
