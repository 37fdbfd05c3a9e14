"""PyTorch's ``F.max_pool{1,2,3}d_with_indices`` and ``F.adaptive_max_pool{1,2,3}d_with_indices``:
the pooling functions with ``return_indices=True`` (values and the flat index of each maximum
in its input plane)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...tensor import Tensor
from .pooling import adaptive_max_pool1d, adaptive_max_pool2d, max_pool1d, max_pool2d
from .pooling3d import adaptive_max_pool3d, max_pool3d

__all__ = ["max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices"]


def _with_indices(fn: Callable[..., Any]) -> Callable[..., tuple[Tensor, Tensor]]:
    name = fn.__name__ + "_with_indices"

    def pool(*args: Any, **kwargs: Any) -> tuple[Tensor, Tensor]:
        kwargs.pop("return_indices", None)  # (PyTorch's take it and ignore it)
        return fn(*args, **kwargs, return_indices=True)

    pool.__name__ = pool.__qualname__ = name
    pool.__doc__ = (f"``F.{fn.__name__}(..., return_indices=True)``: the pooled values and "
                    f"the indices of the maxima (PyTorch's ``F.{name}``).\n\n    Example:\n"
                    f"        >>> import xad\n        >>> import xad.nn.functional as F\n"
                    f"        >>> x = xad.ones((1, 1) + (2,) * {fn.__name__[-2]})\n"
                    f"        >>> len(F.{name}(x, 2))\n        2\n    ")
    return pool


max_pool1d_with_indices = _with_indices(max_pool1d)
max_pool2d_with_indices = _with_indices(max_pool2d)
max_pool3d_with_indices = _with_indices(max_pool3d)
adaptive_max_pool1d_with_indices = _with_indices(adaptive_max_pool1d)
adaptive_max_pool2d_with_indices = _with_indices(adaptive_max_pool2d)
adaptive_max_pool3d_with_indices = _with_indices(adaptive_max_pool3d)
