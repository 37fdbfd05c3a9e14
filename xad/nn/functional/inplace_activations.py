"""PyTorch's in-place activation functions ``F.relu_``, ``elu_``, ``leaky_relu_``,
``hardtanh_``, ``selu_``, ``celu_`` and ``rrelu_``: each its function with ``inplace=True``
(the input's values change and it is returned; the gradient is the function's)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...tensor import Tensor
from .activations import celu, elu, hardtanh, leaky_relu, rrelu, selu
from .layers import relu

__all__ = ["relu_", "elu_", "leaky_relu_", "hardtanh_", "selu_", "celu_", "rrelu_"]


def _in_place_form(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    name = fn.__name__ + "_"

    def form(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:  # noqa: A002
        return fn(input, *args, **kwargs, inplace=True)

    form.__name__ = form.__qualname__ = name
    form.__doc__ = (f"``F.{fn.__name__}(x, ..., inplace=True)``: written into ``x``, which "
                    f"is returned (PyTorch's ``F.{name}``).\n\n    Example:\n"
                    f"        >>> import xad\n        >>> import xad.nn.functional as F\n"
                    f"        >>> x = xad.tensor([-1.0, 0.5]); F.{name}(x) is x\n"
                    f"        True\n    ")
    return form


relu_ = _in_place_form(relu)
elu_ = _in_place_form(elu)
leaky_relu_ = _in_place_form(leaky_relu)
hardtanh_ = _in_place_form(hardtanh)
selu_ = _in_place_form(selu)
celu_ = _in_place_form(celu)
rrelu_ = _in_place_form(rrelu)
