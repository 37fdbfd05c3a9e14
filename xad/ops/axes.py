"""Checking ``axis`` arguments: one helper for every operation that takes axes.

An axis out of range or named twice raises :class:`AxisError` (an ``IndexError`` and a
``ValueError``, as NumPy's) naming the operation, the axis and the number of dimensions;
nothing wraps around silently. As in PyTorch, a 0-d tensor accepts axis ``0`` or ``-1``
where an operation reduces or scans, meaning its only element.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AxisError", "normalize_axis", "normalize_axes"]


class AxisError(IndexError, ValueError):
    """An ``axis`` argument out of range, or repeated."""


def normalize_axis(axis: Any, ndim: int, op: str) -> int:
    """``axis`` as a non-negative int below ``ndim``, or an :class:`AxisError`.

    Example:
        >>> normalize_axis(-1, 3, "sum")
        2
    """
    if isinstance(axis, bool) or not hasattr(axis, "__index__"):
        raise TypeError(f"{op}: axis must be an int, got {type(axis).__name__}")
    a = axis.__index__()
    if not -ndim <= a < ndim:
        raise AxisError(f"{op}: axis {a} is out of range for a tensor with {ndim} "
                        f"dimension{'s' if ndim != 1 else ''} (valid: {-ndim} to {ndim - 1})"
                        if ndim else f"{op}: a 0-d tensor has no axis {a}")
    return a % ndim


def normalize_axes(axis: Any, ndim: int, op: str, scalar_ok: bool = False) -> tuple[int, ...]:
    """``axis`` (``None``, an int or a sequence of ints) as sorted distinct axes; with
    ``scalar_ok``, axis ``0``/``-1`` of a 0-d tensor means no axis (PyTorch's rule).

    Example:
        >>> normalize_axes((-1, 0), 3, "sum")
        (0, 2)
    """
    if axis is None:
        return tuple(range(ndim))
    if type(axis) is int and -ndim <= axis < ndim:  # one axis in range: the common case
        return (axis % ndim,)
    axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    if ndim == 0 and scalar_ok and all(not isinstance(a, bool) and a in (0, -1) for a in axes):
        return ()
    out = [normalize_axis(a, ndim, op) for a in axes]
    if len(set(out)) != len(out):
        raise AxisError(f"{op}: axis {tuple(axes)} names an axis twice")
    return tuple(sorted(out))
