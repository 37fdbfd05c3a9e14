"""Padding layers over :func:`xad.nn.functional.pad`: ``ZeroPad``, ``ConstantPad``,
``ReflectionPad``, ``ReplicationPad`` and ``CircularPad``, each for 1, 2 and 3 trailing axes
(PyTorch's names, ``padding`` forms and input ranks)."""

from __future__ import annotations

from collections.abc import Sequence

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


class _PadNd(Module):
    """``F.pad(x, self.padding, mode, value)`` over the last ``_axes`` axes; ``padding`` is
    one int for every side or up to ``2 * _axes`` ints ``(last_lo, last_hi, ...)``. The
    non-constant modes take input of ``_axes + 1`` or ``_axes + 2`` dimensions, PyTorch's."""

    _axes = 1
    _mode = "constant"

    def __init__(self, padding: int | Sequence[int], value: float = 0.0) -> None:
        super().__init__()
        n = 2 * self._axes
        pads = (padding,) * n if isinstance(padding, int) else tuple(padding)
        if len(pads) % 2 or len(pads) > n or not all(isinstance(p, int) for p in pads):
            raise ValueError(f"{type(self).__name__}: padding must be an int or {n} ints, "
                             f"got {padding!r}")
        self.padding, self.value = pads, value

    def forward(self, x: Tensor) -> Tensor:
        if self._mode != "constant" and x.ndim not in (self._axes + 1, self._axes + 2):
            raise ValueError(f"{type(self).__name__}: expected a {self._axes + 1}-d "
                             f"(unbatched) or {self._axes + 2}-d (batched) input, got shape "
                             f"{x.shape}")
        return F.pad(x, self.padding, self._mode, self.value)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ConstantPad1d(_PadNd):
    """Pad the last axis with ``value``.

    Example:
        >>> import xad
        >>> xad.nn.ConstantPad1d((1, 2), 3.5)(xad.zeros(1, 1)).tolist()
        [[3.5, 0.0, 3.5, 3.5]]
    """

    def __init__(self, padding: int | Sequence[int], value: float) -> None:
        super().__init__(padding, value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad2d(ConstantPad1d):
    """Pad the last two axes with ``value`` (``padding``: ``(left, right, top, bottom)``)."""

    _axes = 2


class ConstantPad3d(ConstantPad1d):
    """Pad the last three axes with ``value``."""

    _axes = 3


class ZeroPad1d(_PadNd):
    """Pad the last axis with zeros.

    Example:
        >>> import xad
        >>> xad.nn.ZeroPad1d(1)(xad.ones(1, 2)).tolist()
        [[0.0, 1.0, 1.0, 0.0]]
    """

    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__(padding)


class ZeroPad2d(ZeroPad1d):
    """Pad the last two axes with zeros (``padding``: ``(left, right, top, bottom)``)."""

    _axes = 2


class ZeroPad3d(ZeroPad1d):
    """Pad the last three axes with zeros."""

    _axes = 3


class ReflectionPad1d(ZeroPad1d):
    """Pad the last axis with its mirror image, the edge not repeated.

    Example:
        >>> import xad
        >>> xad.nn.ReflectionPad1d(2)(xad.tensor([[1.0, 2.0, 3.0]])).tolist()
        [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]]
    """

    _mode = "reflect"


class ReflectionPad2d(ReflectionPad1d):
    """Reflect the last two axes (``padding``: ``(left, right, top, bottom)``)."""

    _axes = 2


class ReflectionPad3d(ReflectionPad1d):
    """Reflect the last three axes."""

    _axes = 3


class ReplicationPad1d(ZeroPad1d):
    """Pad the last axis by repeating its edge values.

    Example:
        >>> import xad
        >>> xad.nn.ReplicationPad1d((2, 1))(xad.tensor([[1.0, 2.0]])).tolist()
        [[1.0, 1.0, 1.0, 2.0, 2.0]]
    """

    _mode = "replicate"


class ReplicationPad2d(ReplicationPad1d):
    """Repeat the edges of the last two axes."""

    _axes = 2


class ReplicationPad3d(ReplicationPad1d):
    """Repeat the edges of the last three axes."""

    _axes = 3


class CircularPad1d(ZeroPad1d):
    """Pad the last axis by wrapping around (the other end's values).

    Example:
        >>> import xad
        >>> xad.nn.CircularPad1d(1)(xad.tensor([[1.0, 2.0, 3.0]])).tolist()
        [[3.0, 1.0, 2.0, 3.0, 1.0]]
    """

    _mode = "circular"


class CircularPad2d(CircularPad1d):
    """Wrap the last two axes around."""

    _axes = 2


class CircularPad3d(CircularPad1d):
    """Wrap the last three axes around."""

    _axes = 3
