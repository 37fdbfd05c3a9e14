"""Initialisers that fill a tensor in place (PyTorch's ``torch.nn.init`` names and formulas).

Random values come from the tensor's backend's seeded generator (``xad.manual_seed``), in the
tensor's dtype; the tensor keeps its identity, so an optimiser holding it is unaffected.
"""

from __future__ import annotations

import math
import warnings

from .. import autograd as _ag
from ..factories import full, rand, randn
from ..generator import Generator
from ..tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_"]


def _fill(t: Tensor, values: Tensor) -> Tensor:
    with _ag.no_grad():
        t._set_data(values.astype(t.dtype)._array if values.dtype != t.dtype else values._array)
    return t


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a non-linearity (PyTorch's table).

    Example:
        >>> import xad
        >>> round(xad.nn.init.calculate_gain("relu"), 4)
        1.4142
    """
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
              "conv_transpose2d", "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is not None and (isinstance(param, bool) or
                                  not isinstance(param, (int, float))):
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a valid number "
                             f"(leaky_relu takes an int or float slope, as PyTorch's)")
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _fans(t: Tensor) -> tuple[int, int]:
    if t.ndim < 2:
        raise ValueError(f"fan in and fan out need a tensor with at least 2 dimensions, got "
                         f"shape {t.shape}")
    receptive = math.prod(t.shape[2:])
    return t.shape[1] * receptive, t.shape[0] * receptive


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: Generator | None = None) -> Tensor:
    """Fill with samples from ``U(a, b)``.

    Example:
        >>> import xad
        >>> w = xad.nn.init.uniform_(xad.zeros(100), -1, 1)
        >>> bool((w.abs() <= 1).all())
        True
    """
    u = rand(*tensor.shape, dtype=tensor.dtype, backend=tensor._backend, generator=generator)
    return _fill(tensor, u * (b - a) + a)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Generator | None = None) -> Tensor:
    """Fill with samples from ``N(mean, std**2)``."""
    z = randn(*tensor.shape, dtype=tensor.dtype, backend=tensor._backend, generator=generator)
    return _fill(tensor, z * std + mean)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``.

    Example:
        >>> import xad
        >>> xad.nn.init.constant_(xad.zeros(2), 3.0).tolist()
        [3.0, 3.0]
    """
    return _fill(tensor, full(tensor.shape, val, dtype=tensor.dtype, backend=tensor._backend))


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0,
                    generator: Generator | None = None) -> Tensor:
    """Glorot: ``U(-b, b)`` with ``b = gain * sqrt(6 / (fan_in + fan_out))``."""
    if _zero_element(tensor):
        return tensor
    fan_in, fan_out = _fans(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0,
                   generator: Generator | None = None) -> Tensor:
    """Glorot: ``N(0, std**2)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))``.

    Example:
        >>> import xad
        >>> xad.nn.init.xavier_normal_(xad.zeros(3, 4)).shape
        (3, 4)
    """
    if _zero_element(tensor):
        return tensor
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _zero_element(tensor: Tensor) -> bool:
    """Whether ``tensor`` has no elements (initialising it is a no-op, as in PyTorch)."""
    if 0 not in tensor.shape:
        return False
    warnings.warn(f"Initializing zero-element tensors is a no-op (shape {tensor.shape})",
                  stacklevel=3)
    return True


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"kaiming init: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    if _zero_element(tensor):
        return 0.0  # nothing to draw: the fill below is a no-op
    fan_in, fan_out = _fans(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    """He: ``U(-b, b)`` with ``b = gain * sqrt(3 / fan)`` (``gain`` from ``nonlinearity``;
    ``a`` is the leaky-ReLU slope).

    Example:
        >>> import xad
        >>> w = xad.nn.init.kaiming_uniform_(xad.zeros(10, 6), nonlinearity="relu")
        >>> bool((w.abs() <= 1.0).all())
        True
    """
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu",
                    generator: Generator | None = None) -> Tensor:
    """He: ``N(0, std**2)`` with ``std = gain / sqrt(fan)``.

    Example:
        >>> import xad
        >>> xad.nn.init.kaiming_normal_(xad.zeros(4, 3), nonlinearity="relu").shape
        (4, 3)
    """
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def _default_reset(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's default initialisation of Linear and convolution layers: the weight by
    ``kaiming_uniform_(a=sqrt(5))``, the bias from ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in = _fans(weight)[0]
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        uniform_(bias, -bound, bound)
