"""PyTorch's names for functions with one keyword fixed: the in-place activations
``F.relu_``, ``elu_``, ``leaky_relu_``, ``hardtanh_``, ``selu_``, ``celu_``, ``rrelu_``
(``inplace=True``: the input's values change and it is returned; the gradient is the
function's) and ``F.max_pool{1,2,3}d_with_indices``,
``F.adaptive_max_pool{1,2,3}d_with_indices``, ``F.fractional_max_pool{2,3}d_with_indices``
(``return_indices=True``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ...tensor import Tensor
from .activations import celu, elu, hardtanh, leaky_relu, rrelu, selu
from .fractional_pooling import fractional_max_pool2d, fractional_max_pool3d
from .layers import relu
from .pooling import adaptive_max_pool1d, adaptive_max_pool2d, max_pool1d, max_pool2d
from .pooling3d import adaptive_max_pool3d, max_pool3d

__all__ = ["relu_", "elu_", "leaky_relu_", "hardtanh_", "selu_", "celu_", "rrelu_",
           "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices"]


R = TypeVar("R")


def _fixed(fn: Callable[..., R], name: str, keyword: str, example: str) -> Callable[..., R]:
    """``fn`` with ``keyword=True`` (a caller's own value for it ignored, as PyTorch's)."""
    def form(input: Tensor, *args: Any, **kwargs: Any) -> R:  # noqa: A002
        kwargs[keyword] = True
        return fn(input, *args, **kwargs)

    form.__name__ = form.__qualname__ = name
    form.__doc__ = (f"``F.{fn.__name__}(..., {keyword}=True)`` (PyTorch's ``F.{name}``)."
                    f"\n\n    Example:\n        >>> import xad\n        >>> import "
                    f"xad.nn.functional as F\n        {example}\n    ")
    return form


def _in_place(fn: Callable[..., R]) -> Callable[..., R]:
    name = fn.__name__ + "_"
    return _fixed(fn, name, "inplace", f">>> x = xad.tensor([-1.0, 0.5]); F.{name}(x) is x"
                                       f"\n        True")


def _with_indices(fn: Callable[..., R], args: str = "2") -> Callable[..., R]:
    name, d = fn.__name__ + "_with_indices", fn.__name__[-2]
    return _fixed(fn, name, "return_indices", f">>> len(F.{name}(xad.ones((1, 1) + (2,) * "
                                              f"{d}), {args}))\n        2")


relu_ = _in_place(relu)
elu_ = _in_place(elu)
leaky_relu_ = _in_place(leaky_relu)
hardtanh_ = _in_place(hardtanh)
selu_ = _in_place(selu)
celu_ = _in_place(celu)
rrelu_ = _in_place(rrelu)
max_pool1d_with_indices = _with_indices(max_pool1d)
max_pool2d_with_indices = _with_indices(max_pool2d)
max_pool3d_with_indices = _with_indices(max_pool3d)
adaptive_max_pool1d_with_indices = _with_indices(adaptive_max_pool1d)
adaptive_max_pool2d_with_indices = _with_indices(adaptive_max_pool2d)
adaptive_max_pool3d_with_indices = _with_indices(adaptive_max_pool3d)
fractional_max_pool2d_with_indices = _with_indices(fractional_max_pool2d, "1, 1")
fractional_max_pool3d_with_indices = _with_indices(fractional_max_pool3d, "1, 1")
