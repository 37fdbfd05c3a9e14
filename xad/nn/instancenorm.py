"""``InstanceNorm1d/2d/3d``: per-sample, per-channel normalisation over the spatial axes
(PyTorch's defaults: no affine parameters, no running statistics)."""

from __future__ import annotations

from .. import dtypes as _dt
from ..backend import Backend
from ..tensor import Tensor
from . import functional as F
from .module import Module
from .normalization import channel_state

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(Module):
    _spatial = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False,
                 dtype: _dt.DType | None = None, backend: Backend | str | None = None
                 ) -> None:
        super().__init__()
        channel_state(self, num_features, eps, momentum, affine, track_running_stats, dtype,
                      backend)

    def forward(self, x: Tensor) -> Tensor:
        k = self._spatial
        if x.ndim not in (k + 1, k + 2):
            raise ValueError(f"{type(self).__name__}: expected {k + 2}-d (batched) or "
                             f"{k + 1}-d input, got shape {x.shape}")
        unbatched = x.ndim == k + 1
        if unbatched:
            x = x.expand_dims(0)
        if self.affine and x.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}({self.num_features}): expected "
                             f"{self.num_features} channels, got input of shape {x.shape}")
        use_input = self.training or not self.track_running_stats
        momentum = 0.0 if self.momentum is None else self.momentum  # PyTorch's: None freezes
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            use_input, momentum, self.eps)
        return y[0] if unbatched else y

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of ``(N, C, L)`` or ``(C, L)`` input.

    Example:
        >>> import xad
        >>> xad.nn.InstanceNorm1d(3)(xad.randn(2, 3, 5)).shape
        (2, 3, 5)
    """

    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of ``(N, C, H, W)`` or ``(C, H, W)`` input.

    Example:
        >>> import xad
        >>> xad.nn.InstanceNorm2d(3, affine=True)(xad.randn(2, 3, 4, 4)).shape
        (2, 3, 4, 4)
    """

    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input.

    Example:
        >>> import xad
        >>> xad.nn.InstanceNorm3d(3)(xad.randn(2, 3, 2, 4, 4)).shape
        (2, 3, 2, 4, 4)
    """

    _spatial = 3
