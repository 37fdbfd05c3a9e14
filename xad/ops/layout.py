"""Where a view's elements sit in its storage, as PyTorch lays them out: strides (in
elements) relative to the tensor its chain of views starts from. They decide whether a
reshape can be a view (PyTorch's rule) and whether a view's elements share memory (an
expanded tensor), which in-place changes must know. Arrays never carry them: the Array API
hides memory layouts, so they are worked out from the chain of view operations."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from ..tensor import Tensor

__all__ = ["strides", "storage_offset", "view_strides", "repeats", "overlaps",
           "region_overlaps", "is_contiguous"]


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


def _key_axes(key: tuple, ndim: int) -> list[tuple[Any, int]]:
    """Each entry of a basic index with the input axis it reads (``None``: a new axis);
    an ``Ellipsis`` stands for the axes it spans, as full slices."""
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    out: list[tuple[Any, int]] = []
    d = 0
    for k in key:
        if k is None:
            out.append((None, d))
            continue
        for _ in range(ndim - used if k is Ellipsis else 1):
            out.append((slice(None) if k is Ellipsis else k, d))
            d += 1
    return out + [(slice(None), i) for i in range(d, ndim)]


def _getitem(shape: tuple, st: tuple, params: dict, out: tuple) -> tuple:
    res: list[int] = []
    for k, d in _key_axes(params["key"], len(shape)):
        if k is None:
            res.append(0)  # a new axis of length one: its stride never matters
        elif isinstance(k, slice):
            res.append(st[d] * k.indices(shape[d])[2])
    return tuple(res)


def _broadcast(shape: tuple, st: tuple, params: dict, out: tuple) -> tuple:
    lead = len(out) - len(shape)
    return (0,) * lead + tuple(s if n == m else 0 for n, m, s in zip(shape, out[lead:], st))


def _reshape(shape: tuple, st: tuple, params: dict, out: tuple) -> tuple:
    new = view_strides(shape, st, out)
    assert new is not None  # reshape makes a view only where these strides exist (shape.py)
    return new


def _ratio(shape: tuple, out: tuple) -> Fraction:
    """How many of a ``view_dtype`` result's elements one of its input's holds."""
    if not shape or not shape[-1]:
        return Fraction(1)  # (a 0-d view keeps its element size; an empty one has none)
    return Fraction(out[-1], shape[-1])


def _view_dtype(shape: tuple, st: tuple, params: dict, out: tuple) -> tuple:
    if not shape:
        return ()
    r = _ratio(shape, out)
    return tuple(int(s * r) for s in st[:-1]) + (st[-1] if r == 1 else 1,)


_RULES: dict[str, Callable[..., Any]] = {
    "getitem": _getitem,
    "permute_dims": lambda shape, st, p, out: tuple(st[a] for a in p["axes"]),
    "reshape": _reshape,
    "broadcast_to": _broadcast,
    "diagonal": lambda shape, st, p, out: st[:-2] + (st[-2] + st[-1],),
    "real": lambda shape, st, p, out: tuple(2 * s for s in st),  # (in the real dtype's
    "imag": lambda shape, st, p, out: tuple(2 * s for s in st),  # elements: every other)
    "view_dtype": _view_dtype,
    "view_as_real": lambda shape, st, p, out: tuple(2 * s for s in st) + (1,),
    "view_as_complex": lambda shape, st, p, out: tuple(s // 2 for s in st[:-1]),
    "as_strided": lambda shape, st, p, out: p["stride"]}  # (of a row-major base at 0)


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


def _offset(shape: tuple, st: tuple, off: int, op: str, params: dict, out: tuple) -> int:
    """The storage offset of a view made by ``op`` from a tensor at ``off``."""
    if op == "getitem":
        return off + sum(st[d] * (k.indices(shape[d])[0] if isinstance(k, slice) else
                                  k % shape[d]) for k, d in _key_axes(params["key"], len(shape))
                         if k is not None and shape[d])
    if op == "diagonal":
        k = params["offset"]
        return off + (k * st[-1] if k >= 0 else -k * st[-2])
    if op in ("real", "imag", "view_as_real"):
        return 2 * off + (op == "imag")
    if op == "view_as_complex":
        return off // 2
    if op == "as_strided":
        return off + params["offset"]
    return int(off * _ratio(shape, out)) if op == "view_dtype" else off


def storage_offset(t: Tensor) -> int:
    """Where ``t``'s first element sits in its storage, in ``t``'s elements (PyTorch's
    ``storage_offset()``)."""
    base = t._base
    if base is None:
        return 0
    off = storage_offset(base)
    if t._view_fn is None:  # detach(), .data
        return off
    op, params = t._view_fn
    return _offset(base.shape, strides(base), off, op.name, params, t.shape)


def repeats(shape: tuple[int, ...], st: tuple[int, ...]) -> bool:
    """Whether two elements of a view of ``shape`` and strides ``st`` are one storage
    position: an expanded axis, or windows of ``as_strided`` that overlap (a stride's sign
    does not matter: a flipped axis holds the same positions)."""
    if 0 in shape:
        return False
    axes = sorted((abs(s), n) for s, n in zip(st, shape) if n > 1)
    reach = 0  # axes by stride, each beyond all the smaller ones reach: none repeats
    for s, n in axes:
        if s <= reach:
            break
        reach += s * (n - 1)
    else:
        return False
    seen = {0}
    for s, n in axes:  # (rare layouts: each axis's positions, in turn, until one repeats)
        more = {p + k * s for p in seen for k in range(n)}
        if len(more) < len(seen) * n:
            return True
        seen = more
    return False


def overlaps(t: Any) -> bool:
    """Whether several of ``t``'s elements are one memory location (PyTorch's internal
    overlap: an expanded axis; here also an ``as_strided`` view's windows)."""
    return t._expanded and repeats(t.shape, strides(t))


def region_overlaps(t: Any, key: tuple, shape: tuple[int, ...]) -> bool:
    """Whether the elements ``t[key]`` (a basic index; ``shape``: their shape) include
    several at one memory location."""
    return repeats(shape, _getitem(t.shape, strides(t), {"key": key}, shape))


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
