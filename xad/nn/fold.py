"""``Unfold`` (im2col) and ``Fold`` (col2im) over :func:`xad.nn.functional.unfold` and
:func:`xad.nn.functional.fold`."""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["Unfold", "Fold"]

IntPair = int | tuple[int, int]


class Unfold(Module):
    """The sliding blocks of ``(N, C, H, W)`` input as columns ``(N, C*kh*kw, L)``.

    Example:
        >>> import xad
        >>> xad.nn.Unfold(2)(xad.ones(1, 3, 4, 4)).shape
        (1, 12, 9)
    """

    def __init__(self, kernel_size: IntPair, dilation: IntPair = 1, padding: IntPair = 0,
                 stride: IntPair = 1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, x: Tensor) -> Tensor:
        return F.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Unfold):
    """Columns ``(N, C*kh*kw, L)`` summed back into ``(N, C) + output_size`` (overlaps add).

    Example:
        >>> import xad
        >>> xad.nn.Fold((3, 3), 2)(xad.ones(1, 4, 4))[0, 0].tolist()
        [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """

    def __init__(self, output_size: IntPair, kernel_size: IntPair, dilation: IntPair = 1,
                 padding: IntPair = 0, stride: IntPair = 1) -> None:
        super().__init__(kernel_size, dilation, padding, stride)
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return F.fold(x, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}, " + super().extra_repr()
