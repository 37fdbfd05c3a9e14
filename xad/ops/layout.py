"""Where a view's elements sit in its storage, as PyTorch lays them out: strides (in
elements) relative to the tensor its chain of views starts from. They decide whether a
reshape can be a view (PyTorch's rule) and whether a view's elements share memory (an
expanded tensor), which in-place changes must know. Arrays never carry them: the Array API
hides memory layouts, so they are worked out from the chain of view operations."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..tensor import Tensor

__all__ = ["strides", "view_strides", "overlaps", "region_overlaps", "is_contiguous"]


def contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides of ``shape``."""
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def view_strides(shape: tuple[int, ...], st: tuple[int, ...],
                 new: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides of ``new`` viewing the elements of ``shape``/``st`` in order, or None
    where no such view exists (PyTorch's ``computeStride``: a reshape then copies)."""
    if not shape:
        return (1,) * len(new)
    if 0 in shape:
        return contiguous(new)
    out = [0] * len(new)
    view_d = len(new) - 1
    chunk, tensor_n, view_n = st[-1], 1, 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_n *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and st[d - 1] != tensor_n * chunk):
            while view_d >= 0 and (view_n < tensor_n or new[view_d] == 1):
                out[view_d] = view_n * chunk
                view_n *= new[view_d]
                view_d -= 1
            if view_n != tensor_n:
                return None
            if d > 0:
                chunk, tensor_n, view_n = st[d - 1], 1, 1
    return tuple(out) if view_d == -1 else None


def _getitem(shape: tuple, st: tuple, params: dict, out: tuple) -> tuple:
    key = params["key"]
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    res: list[int] = []
    d = 0
    for k in key:
        if k is None:
            res.append(0)  # a new axis of length one: its stride never matters
        elif k is Ellipsis:
            for _ in range(len(shape) - used):
                res.append(st[d])
                d += 1
        elif isinstance(k, slice):
            res.append(st[d] * k.indices(shape[d])[2])
            d += 1
        else:
            d += 1
    return tuple(res) + st[d:]


def _broadcast(shape: tuple, st: tuple, params: dict, out: tuple) -> tuple:
    lead = len(out) - len(shape)
    return (0,) * lead + tuple(s if n == m else 0 for n, m, s in zip(shape, out[lead:], st))


def _reshape(shape: tuple, st: tuple, params: dict, out: tuple) -> tuple:
    new = view_strides(shape, st, out)
    assert new is not None  # reshape makes a view only where these strides exist (shape.py)
    return new


_RULES: dict[str, Callable[..., Any]] = {
    "getitem": _getitem,
    "permute_dims": lambda shape, st, p, out: tuple(st[a] for a in p["axes"]),
    "reshape": _reshape,
    "broadcast_to": _broadcast,
    "diagonal": lambda shape, st, p, out: st[:-2] + (st[-2] + st[-1],),
    "real": lambda shape, st, p, out: tuple(2 * s for s in st),  # (in the real dtype's
    "imag": lambda shape, st, p, out: tuple(2 * s for s in st)}  # elements: every other)


def strides(t: Tensor) -> tuple[int, ...]:
    """``t``'s strides in elements, relative to the storage its views start from."""
    base = t._base
    if base is None:
        return contiguous(t.shape)
    st = strides(base)
    if t._view_fn is None:  # detach(), .data
        return st
    op, params = t._view_fn
    return _RULES[op.name](base.shape, st, params, t.shape)


def overlaps(t: Any) -> bool:
    """Whether several of ``t``'s elements are one memory location (PyTorch's internal
    overlap: an expanded axis)."""
    return t._expanded and any(s == 0 and n > 1 for s, n in zip(strides(t), t.shape))


def region_overlaps(t: Any, key: tuple, shape: tuple[int, ...]) -> bool:
    """Whether the elements ``t[key]`` (a basic index; ``shape``: their shape) include
    several at one memory location."""
    st = _getitem(t.shape, strides(t), {"key": key}, shape)
    return any(s == 0 and n > 1 for s, n in zip(st, shape))


def is_contiguous(t: Tensor) -> bool:
    """Whether ``t``'s elements lie in row-major order in its storage (PyTorch's
    ``is_contiguous``: axes of length one do not count), by its strides and, where the
    backend keeps layouts, its array's own (``x.T.exp()`` keeps ``x.T``'s, as PyTorch's)."""
    if 0 in t.shape:
        return True
    a = t._array
    if a.shape == t.shape and not t._backend.reshapes_in_place(a, (math.prod(t.shape),)):
        return False
    return t._base is None or all(n == 1 or s == c for n, s, c in
                                  zip(t.shape, strides(t), contiguous(t.shape)))
