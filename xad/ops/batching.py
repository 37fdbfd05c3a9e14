"""Helpers for the batching rules the Op classes carry (``xad.vmap``).

A rule is ``batch(args, batched, **params) -> (out, out_batched)``: the inputs as arrays one
level down (a batched one has the batch axis first), a flag per input, the primitive's
parameters as the caller gave them (logical: without the batch axis); it returns the result
one level down and whether it is batched (a tuple of flags for several results).
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from ._apply import apply, binary

__all__ = ["elementwise_batch", "axes_batch", "shift_axes", "align", "unbatched_error"]


def _lnd(a: Any, f: bool) -> int:
    return (a.ndim - 1 if f else a.ndim) if isinstance(a, Tensor) else 0


def align(args: Any, flags: Any, rank: int | None = None) -> list:
    """Batched inputs given unit axes after the batch axis up to ``rank`` logical axes (the
    largest by default), so that they broadcast against unbatched ones as their logical
    shapes do."""
    r = max(_lnd(a, f) for a, f in zip(args, flags)) if rank is None else rank
    out = []
    for a, f in zip(args, flags):
        if f and a.ndim - 1 < r:
            a = a.reshape((a.shape[0],) + (1,) * (r - a.ndim + 1) + tuple(a.shape[1:]))
        out.append(a)
    return out


def elementwise_batch(cls: Any, args: tuple, flags: tuple, **params: Any) -> tuple:
    """The rule of an elementwise (broadcasting) primitive."""
    new = align(args, flags)
    if len(new) == 2 and not params:
        return binary(cls, new[0], new[1]), True
    return apply(cls, *new, **params), True


def shift_axes(axis: Any, ndim: int) -> Any:
    """Logical axes as axes one level down (batch axis first): ``None`` is every logical axis."""
    if axis is None:
        return tuple(range(1, ndim))
    if isinstance(axis, int):
        return axis + 1 if axis >= 0 else axis
    return tuple(a + 1 if a >= 0 else a for a in axis)


def axes_batch(cls: Any, args: tuple, flags: tuple, **params: Any) -> tuple:
    """The rule of a one-input primitive whose ``axis`` (or ``axes``) parameter names axes."""
    x = args[0]
    key = "axis" if "axis" in params else "axes"
    return apply(cls, x, **{**params, key: shift_axes(params[key], x.ndim)}), True


def unbatched_error(name: str, what: str) -> NotImplementedError:
    return NotImplementedError(f"vmap: the batching rule of '{name}' does not support {what}; "
                               f"move that computation outside vmap or use a Python loop")
