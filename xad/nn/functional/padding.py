"""``pad``: constant, reflect, replicate and circular padding of trailing axes, composed
from slicing, ``flip``, ``broadcast_to`` and ``concat`` (so every backend has it, with
gradients of every order)."""

from __future__ import annotations

from collections.abc import Sequence

from ... import ops as _ops
from ...factories import full
from ...tensor import Tensor

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")


def _along(x: Tensor, axis: int, start: int | None, stop: int | None) -> Tensor:
    return x[(slice(None),) * axis + (slice(start, stop), ...)]


def _pad_axis(x: Tensor, axis: int, lo: int, hi: int, mode: str, value: float) -> Tensor:
    """Negative amounts crop: before padding with constants or wrapping around, after
    reflecting or replicating (PyTorch's order: ``reflect`` of ``(-1, 2)`` mirrors about the
    uncropped end)."""
    crop = (max(-lo, 0), max(-hi, 0))
    if mode in ("reflect", "replicate") and any(crop):
        y = _pad_axis(x, axis, max(lo, 0), max(hi, 0), mode, value)
        return _along(y, axis, crop[0], y.shape[axis] - crop[1])
    n = x.shape[axis]
    if any(crop):
        x = _along(x, axis, crop[0], n - crop[1])
        lo, hi = max(lo, 0), max(hi, 0)
        n = x.shape[axis]
        if mode == "circular" and max(lo, hi) > n:
            raise ValueError(f"pad: circular padding of {max(lo, hi)} would wrap around the "
                             f"cropped axis {axis} ({n} left) more than once")
    parts: list[Tensor | None] = []  # (before, after); None: no padding on that side
    for side, k in ((0, lo), (1, hi)):
        if k == 0:
            parts.append(None)
            continue
        shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
        if mode == "constant":
            part = full(shape, value, dtype=x.dtype, backend=x._backend)
        elif mode == "circular":  # the other end of the axis
            part = _along(x, axis, n - k, n) if side == 0 else _along(x, axis, 0, k)
        elif mode == "reflect":
            part = _ops.flip(_along(x, axis, 1, k + 1) if side == 0
                             else _along(x, axis, n - k - 1, n - 1), axis=axis)
        else:
            edge = _along(x, axis, 0, 1) if side == 0 else _along(x, axis, n - 1, n)
            part = _ops.broadcast_to(edge, shape)
        parts.append(part)
    return _ops.concat([p for p in (parts[0], x, parts[1]) if p is not None], axis=axis)


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float = 0.0
        ) -> Tensor:
    """Pad the trailing axes: ``pad = (last_lo, last_hi, second_last_lo, ...)`` as in
    PyTorch; negative amounts crop. ``mode``: ``"constant"`` (``value``), ``"reflect"``
    (mirror without the edge), ``"replicate"`` (repeat the edge) or ``"circular"`` (wrap
    around).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.pad(xad.tensor([[1.0, 2.0, 3.0]]), (2, 1), mode="reflect").tolist()
        [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]
    """
    pad = tuple(int(p) for p in pad)
    if mode not in _MODES:
        raise ValueError(f"pad: mode must be one of {_MODES}, got {mode!r}")
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ValueError(f"pad: pad {pad} must hold two amounts per padded axis, for at most "
                         f"{input.ndim} axes (input shape {input.shape})")
    out = input
    for i in range(len(pad) // 2):
        axis, lo, hi = input.ndim - 1 - i, pad[2 * i], pad[2 * i + 1]
        n = input.shape[axis]
        if mode != "constant" and n == 0:
            raise ValueError(f"pad: {mode} padding needs a non-empty axis, got {pad} for "
                             f"shape {input.shape}")
        if n + lo + hi < 0 or (mode != "constant" and n + lo + hi < 1):
            raise ValueError(f"pad: the amounts {pad} crop axis {axis} of shape "
                             f"{input.shape} to nothing")
        if mode == "reflect" and max(lo, hi) >= n:
            raise ValueError(f"pad: reflect padding of {max(lo, hi)} must be smaller than the "
                             f"axis it pads (axis {axis} of shape {input.shape} has {n})")
        if mode == "circular" and max(lo, hi) > n:
            raise ValueError(f"pad: circular padding of {max(lo, hi)} would wrap around more "
                             f"than once (axis {axis} of shape {input.shape} has {n})")
        out = _pad_axis(out, axis, lo, hi, mode, value)
    return out
