"""Instance normalisation as a function: each sample's channel normalised over its own
spatial axes (PyTorch's ``instance_norm``); root-mean-square normalisation (``rms_norm``);
local response normalisation across channels (``local_response_norm``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ... import autograd as _ag
from ... import ops as _ops
from ...ops.dtype_functions import finfo
from ...tensor import Tensor
from .padding import pad

__all__ = ["instance_norm", "rms_norm", "local_response_norm"]


def _update(running: Tensor, batch: Tensor, m: float) -> None:
    with _ag.no_grad():
        running._set_data((running * (1 - m) + batch.astype(running.dtype) * m)._array)


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise ``(N, C, ...)`` input per sample and channel over the spatial axes, then
    scale and shift per channel. With ``use_input_stats`` and running statistics given,
    these are updated in place with the batch's mean of the per-instance statistics (the
    variance unbiased), as PyTorch's; without ``use_input_stats`` they normalise instead.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> y = F.instance_norm(xad.tensor([[[1.0, 3.0]]])); [round(v, 3) for v in y.tolist()[0][0]]
        [-1.0, 1.0]
    """
    if input.ndim < 3:
        raise ValueError(f"instance_norm: expected (N, C, ...) input with spatial axes, got "
                         f"{input.shape}")
    axes = tuple(range(2, input.ndim))
    shape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    if use_input_stats:
        if math.prod(input.shape[2:]) == 1:  # every output 0: PyTorch refuses it
            raise ValueError(f"instance_norm: expected more than 1 spatial element when "
                             f"using the input's statistics (training), got input shape "
                             f"{input.shape}")
        y = _ops.standardize(input, axes, eps)
        if running_mean is not None and running_var is not None:
            n = 1
            for a in axes:
                n *= input.shape[a]
            x = input.detach()
            mu = x.mean(axis=axes)
            var = ((x - mu.reshape(mu.shape + (1,) * len(axes))) ** 2).sum(axis=axes)
            _update(running_mean, mu.mean(axis=0), momentum)
            _update(running_var, (var / max(n - 1, 1)).mean(axis=0), momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: use_input_stats=False needs running_mean and "
                             "running_var")
        y = (input - running_mean.reshape(shape)) / _ops.sqrt(running_var.reshape(shape) + eps)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def rms_norm(input: Tensor, normalized_shape: int | Sequence[int],
             weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x**2) + eps) * weight`` over the trailing ``normalized_shape`` axes;
    ``eps=None`` is the machine epsilon of ``input``'s dtype (PyTorch's).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> [round(v, 4) for v in F.rms_norm(xad.tensor([[3.0, 4.0]]), 2, eps=0.0).tolist()[0]]
        [0.8485, 1.1314]
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
        tuple(normalized_shape)
    if not shape or tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise ValueError(f"rms_norm: normalized_shape {shape} must be the trailing axes of "
                         f"the input (shape {input.shape})")
    if weight is not None and tuple(weight.shape) != shape:
        raise ValueError(f"rms_norm: weight of shape {weight.shape} must have "
                         f"normalized_shape {shape}")
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    e = finfo(input.dtype).eps if eps is None else eps
    y = input / _ops.sqrt(_ops.mean(input * input, axis=axes, keepdims=True) + e)
    return (y if weight is None else y * weight).contiguous()  # (PyTorch's: contiguous)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Divide ``(N, C, *)`` input by ``(k + alpha / size * s) ** beta``, ``s`` the sum of
    squares over ``size`` neighbouring channels (zeros past the ends; ``size // 2`` before,
    ``(size - 1) // 2`` after), as PyTorch's.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.local_response_norm(xad.ones(1, 1, 1), 1, alpha=1.0, beta=1.0).tolist()
        [[[0.5]]]
    """
    if input.ndim < 3 or size < 1:
        raise ValueError(f"local_response_norm: expected (N, C, *) input and a positive "
                         f"size, got shape {input.shape} and size {size}")
    c = input.shape[1]
    sq = pad(input * input, (0, 0) * (input.ndim - 2) + (size // 2, (size - 1) // 2))
    window = sq[:, :c]
    for j in range(1, size):
        window = window + sq[:, j:j + c]
    return input / (window * (alpha / size) + k) ** beta
