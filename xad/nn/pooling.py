"""Pooling layers (no parameters): ``MaxPool1d/2d``, ``AvgPool1d/2d`` and the adaptive
``AdaptiveAvgPool1d/2d``, ``AdaptiveMaxPool1d/2d``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "MaxPool1d", "AvgPool1d",
           "AdaptiveAvgPool1d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "LPPool1d", "LPPool2d",
           "MaxUnpool1d", "MaxUnpool2d"]

Size = int | Sequence[int]


class MaxPool2d(Module):
    """The maximum of each ``kernel_size`` window (``stride`` defaults to the kernel).

    Example:
        >>> import xad
        >>> xad.nn.MaxPool2d(2)(xad.ones((1, 3, 8, 8))).shape
        (1, 3, 4, 4)
    """

    def __init__(self, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
                 dilation: Size = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode
        self.return_indices = return_indices

    def forward(self, x: Tensor) -> Any:
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """The mean of each ``kernel_size`` window (``stride`` defaults to the kernel).

    Example:
        >>> import xad
        >>> xad.nn.AvgPool2d(2)(xad.ones((1, 3, 8, 8))).shape
        (1, 3, 4, 4)
    """

    def __init__(self, kernel_size: Size, stride: Size | None = None, padding: Size = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """Average pooling to a fixed ``output_size``.

    Example:
        >>> import xad
        >>> xad.nn.AdaptiveAvgPool2d((1, 1))(xad.ones((2, 3, 7, 7))).shape
        (2, 3, 1, 1)
    """

    def __init__(self, output_size: int | tuple[int | None, int | None]) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class MaxPool1d(Module):
    """The maximum of each ``kernel_size`` window of ``(N, C, L)`` input.

    Example:
        >>> import xad
        >>> xad.nn.MaxPool1d(2)(xad.ones((1, 3, 8))).shape
        (1, 3, 4)
    """

    def __init__(self, kernel_size: int, stride: int | None = None, padding: int = 0,
                 dilation: int = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode
        self.return_indices = return_indices

    def forward(self, x: Tensor) -> Any:
        return F.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool1d(Module):
    """The mean of each ``kernel_size`` window of ``(N, C, L)`` input.

    Example:
        >>> import xad
        >>> xad.nn.AvgPool1d(2)(xad.ones((1, 3, 8))).shape
        (1, 3, 4)
    """

    def __init__(self, kernel_size: int, stride: int | None = None, padding: int = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _Adaptive(Module):
    _fn: Callable[..., Any] = staticmethod(F.adaptive_avg_pool1d)

    def __init__(self, output_size: int | tuple, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x: Tensor) -> Any:
        if self.return_indices:  # the max pools' (output, indices)
            return type(self)._fn(x, self.output_size, True)
        return type(self)._fn(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    """Average pooling of ``(N, C, L)`` input to length ``output_size``.

    Example:
        >>> import xad
        >>> xad.nn.AdaptiveAvgPool1d(2)(xad.ones((2, 3, 7))).shape
        (2, 3, 2)
    """

    def __init__(self, output_size: int | tuple) -> None:
        super().__init__(output_size)


class AdaptiveMaxPool1d(_Adaptive):
    """Max pooling of ``(N, C, L)`` input to length ``output_size``.

    Example:
        >>> import xad
        >>> xad.nn.AdaptiveMaxPool1d(2)(xad.ones((2, 3, 7))).shape
        (2, 3, 2)
    """

    _fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_Adaptive):
    """Max pooling to a fixed ``output_size`` (``None`` keeps that axis).

    Example:
        >>> import xad
        >>> xad.nn.AdaptiveMaxPool2d((2, 3))(xad.ones((2, 3, 7, 7))).shape
        (2, 3, 2, 3)
    """

    _fn = staticmethod(F.adaptive_max_pool2d)


class LPPool2d(Module):
    """The ``norm_type``-norm of each window (:func:`~xad.nn.functional.lp_pool2d`).

    Example:
        >>> import xad
        >>> xad.nn.LPPool2d(2, 2)(xad.ones((1, 3, 4, 4))).shape
        (1, 3, 2, 2)
    """

    _fn: Callable[..., Tensor] = staticmethod(F.lp_pool2d)

    def __init__(self, norm_type: float, kernel_size: Size, stride: Size | None = None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size, self.stride = norm_type, kernel_size, stride
        self.ceil_mode = ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        return type(self)._fn(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(LPPool2d):
    """The ``norm_type``-norm of each window of ``(N, C, L)`` input.

    Example:
        >>> import xad
        >>> xad.nn.LPPool1d(2, 2)(xad.ones((1, 3, 4))).shape
        (1, 3, 2)
    """

    _fn = staticmethod(F.lp_pool1d)


class MaxUnpool2d(Module):
    """The inverse of ``MaxPool2d(return_indices=True)``
    (:func:`~xad.nn.functional.max_unpool2d`).

    Example:
        >>> import xad
        >>> y, i = xad.nn.MaxPool2d(2, return_indices=True)(xad.randn(1, 3, 4, 4))
        >>> xad.nn.MaxUnpool2d(2)(y, i).shape
        (1, 3, 4, 4)
    """

    _fn: Callable[..., Tensor] = staticmethod(F.max_unpool2d)

    def __init__(self, kernel_size: Size, stride: Size | None = None,
                 padding: Size = 0) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x: Tensor, indices: Tensor,
                output_size: Sequence[int] | None = None) -> Tensor:
        return type(self)._fn(x, indices, self.kernel_size, self.stride, self.padding,
                              output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(MaxUnpool2d):
    """The inverse of ``MaxPool1d(return_indices=True)``.

    Example:
        >>> import xad
        >>> y, i = xad.nn.MaxPool1d(2, return_indices=True)(xad.randn(1, 3, 4))
        >>> xad.nn.MaxUnpool1d(2)(y, i).shape
        (1, 3, 4)
    """

    _fn = staticmethod(F.max_unpool1d)
