"""``LayerNorm``, ``RMSNorm``, ``BatchNorm1d/2d/3d``, ``GroupNorm`` and
``LocalResponseNorm``."""

from __future__ import annotations

from collections.abc import Sequence

from .. import dtypes as _dt
from ..backend import Backend
from ..context import context, quiet
from ..factories import ones, zeros
from ..ops.normalization import FULL_PRECISION, add_layer_norm, add_norm_node
from ..tensor import Tensor
from . import functional as F
from .linear import _hooked, _resolve
from .module import Module, Parameter

__all__ = ["LayerNorm", "BatchNorm1d", "BatchNorm2d", "GroupNorm", "RMSNorm",
           "LocalResponseNorm"]

def channel_state(m: Module, num_features: int, eps: float, momentum: float | None,
                  affine: bool, track_running_stats: bool, dtype: _dt.DType | None,
                  backend: Backend | str | None) -> None:
    """Give a per-channel normalisation ``m`` (BatchNorm, InstanceNorm) its settings, its
    ``weight``/``bias`` (ones and zeros, or None) and running statistics (or None), with
    PyTorch's names."""
    m.num_features, m.eps, m.momentum = num_features, eps, momentum
    m.affine, m.track_running_stats = affine, track_running_stats
    b = _resolve(backend)
    if affine:
        m.weight = Parameter(ones(num_features, dtype=dtype, backend=b))
        m.bias = Parameter(zeros(num_features, dtype=dtype, backend=b))
    else:
        m.register_parameter("weight", None)
        m.register_parameter("bias", None)
    tracked = [zeros(num_features, dtype=dtype, backend=b),
               ones(num_features, dtype=dtype, backend=b),
               zeros((), dtype=_dt.int64, backend=b)] if track_running_stats else [None] * 3
    for name, t in zip(("running_mean", "running_var", "num_batches_tracked"), tracked):
        m.register_buffer(name, t)

class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` axes, then scale by ``weight`` (ones)
    and shift by ``bias`` (zeros).

    Example:
        >>> import xad
        >>> ln = xad.nn.LayerNorm(4); y = ln(xad.randn(2, 4))
        >>> [abs(round(v, 4)) for v in y.mean(axis=-1).tolist()]
        [0.0, 0.0]
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True,
                 dtype: _dt.DType | None = None, backend: Backend | str | None = None
                 ) -> None:
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
            tuple(normalized_shape)
        self.normalized_shape = shape
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        b = _resolve(backend)
        if elementwise_affine:
            self.weight = Parameter(ones(shape, dtype=dtype, backend=b))
            if bias:
                self.bias = Parameter(zeros(shape, dtype=dtype, backend=b))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def _after_add(self, x: Tensor, t: Tensor, c: Tensor | None = None) -> Tensor:
        """``self(x + t)`` (``self(x + (t + c))`` with ``c``, the bias of the linear layer
        that made ``t``: a post-norm residual connection), as one node with the sum never
        stored (:func:`~xad.ops.normalization.add_layer_norm`: one kernel fewer on CuPy, two
        with ``c``) where nothing would see the difference: not where a hook, a subclass's
        own ``forward``, autocast or ``xad.compile``'s recorder would."""
        params, shape = self._parameters, self.normalized_shape
        w, bias = params.get("weight"), params.get("bias")  # (not the attribute fallback)
        plain = type(self).forward is LayerNorm.forward and not _hooked(self) \
            and (quiet.on or context.recorder is None and context.autocast is None)
        xs, d = x.shape, x.dtype
        if not plain or w is None or bias is None or xs != t.shape \
                or not (d is t.dtype is w.dtype is bias.dtype) \
                or not (xs[len(xs) - len(shape):] == shape == w.shape == bias.shape) \
                or c is not None and (c.shape != shape or c.dtype is not d):
            return self(x + (t if c is None else t + c))
        axes = tuple(range(len(xs) - len(shape), len(xs)))
        if d not in FULL_PRECISION:  # (half precision: add_layer_norm widens it)
            return add_layer_norm(x, t, axes, w, bias, self.eps, c)
        return add_norm_node(x, t, c, w, bias, axes, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` axes, then a
    scale by ``weight`` (ones); ``eps=None`` is the input dtype's machine epsilon, as
    PyTorch's.

    Example:
        >>> import xad
        >>> xad.nn.RMSNorm(4)(xad.randn(2, 4)).shape
        (2, 4)
    """

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True, dtype: _dt.DType | None = None,
                 backend: Backend | str | None = None) -> None:
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
            tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(shape, dtype=dtype, backend=_resolve(backend)))
        else:
            self.register_parameter("weight", None)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


def _add_norm(norm: Module, x: Tensor, t: Tensor, c: Tensor | None = None) -> Tensor:
    """``norm(x + t)`` (``norm(x + (t + c))`` with ``c``): one node where ``norm`` is a
    plain :class:`LayerNorm` (:meth:`LayerNorm._after_add`; the Transformer layers'
    post-norm residuals)."""
    if isinstance(norm, LayerNorm):
        return norm._after_add(x, t, c)
    return norm(x + (t if c is None else t + c))


class BatchNorm1d(Module):
    """Batch normalisation of ``(N, C)`` or ``(N, C, L)`` input per channel ``C``.

    Training mode normalises with the batch's mean and (biased) variance and updates the
    buffers ``running_mean``/``running_var`` (unbiased variance) with ``momentum``
    (``None``: a cumulative average) and ``num_batches_tracked``; eval mode normalises with
    the running statistics, as in PyTorch.

    Example:
        >>> import xad
        >>> bn = xad.nn.BatchNorm1d(3); _ = bn(xad.randn(8, 3))
        >>> list(bn.state_dict())
        ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 dtype: _dt.DType | None = None, backend: Backend | str | None = None
                 ) -> None:
        super().__init__()
        channel_state(self, num_features, eps, momentum, affine, track_running_stats, dtype,
                      backend)

    def reset_running_stats(self) -> None:
        """Running mean 0, variance 1, no batches seen."""
        if self.track_running_stats:
            for name, fill in (("running_mean", 0), ("running_var", 1),
                               ("num_batches_tracked", 0)):
                t = getattr(self, name)
                t._array = (t * 0 + fill)._array

    def _check_input(self, x: Tensor) -> None:
        if x.ndim not in (2, 3) or x.shape[1] != self.num_features:
            raise ValueError(f"BatchNorm1d({self.num_features}): expected input of shape "
                             f"(N, {self.num_features}) or (N, {self.num_features}, L), got "
                             f"{x.shape}")

    def forward(self, x: Tensor) -> Tensor:
        self._check_input(x)
        momentum: float | Tensor | None = self.momentum
        if self.training and self.track_running_stats:
            n = self.num_batches_tracked
            n._set_data((n + 1)._array)
            if momentum is None:  # a cumulative average: 1/n, kept on the device
                momentum = 1.0 / n.astype(self.running_mean.dtype)
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=self.training or not self.track_running_stats,
                            momentum=momentum, eps=self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class BatchNorm2d(BatchNorm1d):
    """Batch normalisation of ``(N, C, H, W)`` input per channel ``C`` (statistics over
    ``N``, ``H`` and ``W``); otherwise as :class:`BatchNorm1d`.

    Example:
        >>> import xad
        >>> bn = xad.nn.BatchNorm2d(3); bn(xad.randn(4, 3, 5, 5)).shape
        (4, 3, 5, 5)
    """

    def _check_input(self, x: Tensor) -> None:
        if x.ndim != 4 or x.shape[1] != self.num_features:
            raise ValueError(f"BatchNorm2d({self.num_features}): expected input of shape "
                             f"(N, {self.num_features}, H, W), got {x.shape}")


class BatchNorm3d(BatchNorm1d):
    """Batch normalisation of ``(N, C, D, H, W)`` input per channel ``C``; otherwise as
    :class:`BatchNorm1d`.

    Example:
        >>> import xad
        >>> xad.nn.BatchNorm3d(3)(xad.randn(2, 3, 2, 4, 4)).shape
        (2, 3, 2, 4, 4)
    """

    def _check_input(self, x: Tensor) -> None:
        if x.ndim != 5 or x.shape[1] != self.num_features:
            raise ValueError(f"BatchNorm3d({self.num_features}): expected input of shape "
                             f"(N, {self.num_features}, D, H, W), got {x.shape}")


class GroupNorm(Module):
    """Normalise each of ``num_groups`` groups of channels of ``(N, C, ...)`` input, then
    scale by ``weight`` (ones) and shift by ``bias`` (zeros) per channel.

    Example:
        >>> import xad
        >>> gn = xad.nn.GroupNorm(2, 4); gn(xad.randn(3, 4, 5)).shape
        (3, 4, 5)
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, dtype: _dt.DType | None = None,
                 backend: Backend | str | None = None) -> None:
        super().__init__()
        if num_groups < 1 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_groups ({num_groups}) must divide num_channels "
                             f"({num_channels})")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        b = _resolve(backend)
        if affine:
            self.weight = Parameter(ones(num_channels, dtype=dtype, backend=b))
            self.bias = Parameter(zeros(num_channels, dtype=dtype, backend=b))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm({self.num_groups}, {self.num_channels}): expected "
                             f"input of shape (N, {self.num_channels}, ...), got {x.shape}")
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class LocalResponseNorm(Module):
    """Normalise each channel of ``(N, C, *)`` input by the squares of its ``size``
    neighbouring channels: :func:`xad.nn.functional.local_response_norm`.

    Example:
        >>> import xad
        >>> xad.nn.LocalResponseNorm(2)(xad.ones(1, 3, 2)).shape
        (1, 3, 2)
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
                 ) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x: Tensor) -> Tensor:
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
