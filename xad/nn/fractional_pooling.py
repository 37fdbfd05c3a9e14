"""``FractionalMaxPool2d`` and ``FractionalMaxPool3d`` (PyTorch's arguments; the pooling is
:mod:`xad.nn.functional.fractional_pooling`'s)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["FractionalMaxPool2d", "FractionalMaxPool3d"]


class FractionalMaxPool2d(Module):
    """Fractional max pooling of ``(N, C, H, W)`` input to ``output_size`` or
    ``output_ratio`` of it (:func:`xad.nn.functional.fractional_max_pool2d`); fixed
    ``_random_samples`` (a buffer) give the same windows at every call, else each call
    draws its own.

    Example:
        >>> import xad
        >>> xad.nn.FractionalMaxPool2d(3, output_ratio=0.5)(xad.ones(1, 2, 10, 8)).shape
        (1, 2, 5, 4)
    """

    _fn: Any = staticmethod(F.fractional_max_pool2d)
    _d = 2

    def __init__(self, kernel_size: int | Sequence[int],
                 output_size: int | Sequence[int] | None = None,
                 output_ratio: float | Sequence[float] | None = None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:
        super().__init__()
        name, d = type(self).__name__, self._d
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a "
                             f"pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError(f"{name}: only one of output_size and output_ratio may be "
                             f"specified")
        ratio = None if output_ratio is None else \
            (output_ratio,) * d if isinstance(output_ratio, (int, float)) else tuple(output_ratio)
        if ratio is not None and not all(0 < r < 1 for r in ratio):
            raise ValueError(f"{name}: output_ratio must be between 0 and 1 (got "
                             f"{output_ratio})")
        self.kernel_size = (kernel_size,) * d if isinstance(kernel_size, int) \
            else tuple(kernel_size)
        self.output_size = (output_size,) * d if isinstance(output_size, int) else \
            None if output_size is None else tuple(output_size)
        self.output_ratio, self.return_indices = ratio, return_indices
        self.register_buffer("_random_samples", _random_samples)

    def forward(self, input: Tensor) -> Any:
        return type(self)._fn(input, self.kernel_size, self.output_size, self.output_ratio,
                              self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool3d(FractionalMaxPool2d):
    """Fractional max pooling of ``(N, C, D, H, W)`` input
    (:func:`xad.nn.functional.fractional_max_pool3d`).

    Example:
        >>> import xad
        >>> xad.nn.FractionalMaxPool3d(2, output_size=3)(xad.ones(1, 1, 5, 5, 5)).shape
        (1, 1, 3, 3, 3)
    """

    _fn = staticmethod(F.fractional_max_pool3d)
    _d = 3
