"""The reverse of broadcasting: the engine reduces every gradient to its input's shape with
:func:`sum_to`, once, for all rules."""

from __future__ import annotations

from ..tensor import Tensor
from .reduce import sum
from .shape import reshape

__all__ = ["sum_to"]


def sum_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``g`` down to ``shape`` (``g``'s shape broadcast from ``shape``).

    Example:
        >>> import xad
        >>> xad.sum_to(xad.ones(2, 3), (1, 3)).tolist()
        [[2.0, 2.0, 2.0]]
    """
    gshape = g.shape
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and gshape[i + lead] != 1)
    if axes == tuple(range(lead)):  # leading axes only (a bias): no reshape, no view
        return sum(g, axis=axes)
    if axes:
        g = sum(g, axis=axes, keepdims=True)
    if lead or g.shape != shape:
        g = reshape(g, shape)
    return g
