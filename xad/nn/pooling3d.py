"""3-d pooling layers: ``MaxPool3d``, ``AvgPool3d``, ``AdaptiveAvgPool3d``,
``AdaptiveMaxPool3d``, ``MaxUnpool3d`` and ``LPPool3d`` (the 2-d layers' arguments, over
``(D, H, W)``)."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import functional as F
from .pooling import AdaptiveMaxPool2d, AvgPool2d, LPPool2d, MaxPool2d, MaxUnpool2d, _Adaptive

__all__ = ["MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "MaxUnpool3d",
           "LPPool3d"]


class MaxPool3d(MaxPool2d):
    """The maximum of each ``kernel_size`` window of ``(N, C, D, H, W)`` input.

    Example:
        >>> import xad
        >>> xad.nn.MaxPool3d(2)(xad.ones((1, 3, 4, 8, 8))).shape
        (1, 3, 2, 4, 4)
    """

    def forward(self, x: Tensor) -> Any:
        return F.max_pool3d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPool3d(AvgPool2d):
    """The mean of each ``kernel_size`` window of ``(N, C, D, H, W)`` input.

    Example:
        >>> import xad
        >>> xad.nn.AvgPool3d(2)(xad.ones((1, 3, 4, 8, 8))).shape
        (1, 3, 2, 4, 4)
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool3d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(_Adaptive):
    """Average pooling of ``(N, C, D, H, W)`` input to ``output_size``.

    Example:
        >>> import xad
        >>> xad.nn.AdaptiveAvgPool3d(1)(xad.ones((2, 3, 4, 5, 6))).shape
        (2, 3, 1, 1, 1)
    """

    _fn = staticmethod(F.adaptive_avg_pool3d)

    def __init__(self, output_size: int | tuple) -> None:
        super().__init__(output_size)


class AdaptiveMaxPool3d(AdaptiveMaxPool2d):
    """Max pooling of ``(N, C, D, H, W)`` input to ``output_size``.

    Example:
        >>> import xad
        >>> xad.nn.AdaptiveMaxPool3d((1, 2, 2))(xad.ones((2, 3, 4, 5, 6))).shape
        (2, 3, 1, 2, 2)
    """

    _fn = staticmethod(F.adaptive_max_pool3d)


class MaxUnpool3d(MaxUnpool2d):
    """The inverse of ``MaxPool3d(return_indices=True)``.

    Example:
        >>> import xad
        >>> y, i = xad.nn.MaxPool3d(2, return_indices=True)(xad.randn(1, 3, 4, 4, 4))
        >>> xad.nn.MaxUnpool3d(2)(y, i).shape
        (1, 3, 4, 4, 4)
    """

    _fn = staticmethod(F.max_unpool3d)


class LPPool3d(LPPool2d):
    """The ``norm_type``-norm of each window of ``(N, C, D, H, W)`` input
    (:func:`~xad.nn.functional.lp_pool3d`).

    Example:
        >>> import xad
        >>> xad.nn.LPPool3d(2, 2)(xad.ones((1, 3, 2, 4, 4))).shape
        (1, 3, 1, 2, 2)
    """

    _fn = staticmethod(F.lp_pool3d)
