"""``LayerNorm`` and ``BatchNorm1d``."""

from __future__ import annotations

from collections.abc import Sequence

from .. import dtypes as _dt
from ..backend import Backend
from ..factories import ones, zeros
from ..tensor import Tensor
from . import functional as F
from .linear import _resolve
from .module import Module, Parameter

__all__ = ["LayerNorm", "BatchNorm1d"]


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

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


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
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        b = _resolve(backend)
        if affine:
            self.weight = Parameter(ones(num_features, dtype=dtype, backend=b))
            self.bias = Parameter(zeros(num_features, dtype=dtype, backend=b))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype, backend=b))
            self.register_buffer("running_var", ones(num_features, dtype=dtype, backend=b))
            self.register_buffer("num_batches_tracked",
                                 zeros((), dtype=_dt.int64, backend=b))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        """Running mean 0, variance 1, no batches seen."""
        if self.track_running_stats:
            for name, fill in (("running_mean", 0), ("running_var", 1),
                               ("num_batches_tracked", 0)):
                t = getattr(self, name)
                t._array = (t * 0 + fill)._array

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in (2, 3) or x.shape[1] != self.num_features:
            raise ValueError(f"BatchNorm1d({self.num_features}): expected input of shape "
                             f"(N, {self.num_features}) or (N, {self.num_features}, L), got "
                             f"{x.shape}")
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
