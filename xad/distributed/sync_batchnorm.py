"""``SyncBatchNorm``: batch normalisation whose statistics span every rank's batch.

As PyTorch's ``torch.nn.SyncBatchNorm``: in training, each channel's mean and variance are
those of the global batch (the concatenation of every rank's), through a differentiable
sum over the ranks (:class:`_SumOverRanks`: its backward sums the ranks' gradients too),
so a model trained with :class:`~xad.distributed.DataParallel` normalises and learns as one
process on the global batch. Evaluation uses the running statistics, as ``BatchNorm``;
under ``xad.amp.autocast`` it computes in float32, as ``batch_norm``.
"""

from __future__ import annotations

import math
from typing import Any

from ..function import Function
from ..grad_mode import no_grad
from ..nn.module import Module
from ..nn.normalization import BatchNorm1d
from ..ops.amp_cast import autocast_float32
from ..tensor import Tensor
from .collectives import all_reduce
from .world import comm, is_initialized

__all__ = ["SyncBatchNorm"]


class _SumOverRanks(Function):
    """The sum of ``t`` over the ranks; its gradient, the sum of the ranks' gradients."""

    @staticmethod
    def forward(ctx: Any, t: Tensor) -> Tensor:
        return all_reduce(t.clone())

    @staticmethod  # one output, so one gradient: narrower than Function's *grads
    def backward(ctx: Any, g: Tensor) -> Tensor:  # type: ignore[override]
        return all_reduce(g.clone())


class SyncBatchNorm(BatchNorm1d):
    """Batch normalisation of ``(N, C, ...)`` input over every rank's batch in training
    (one process: ``BatchNorm``); the arguments are ``BatchNorm1d``'s.

    Example:
        >>> import xad, xad.distributed as dist
        >>> dist.init(); bn = dist.SyncBatchNorm(2)
        >>> [round(v, 3) for v in bn(xad.tensor([[1.0, 2.0], [3.0, 6.0]]))[:, 0].tolist()]
        [-1.0, 1.0]
    """

    def _check_input(self, x: Tensor) -> None:
        if x.ndim < 2 or x.shape[1] != self.num_features:
            raise ValueError(f"SyncBatchNorm({self.num_features}): expected input of shape "
                             f"(N, {self.num_features}, ...), got {x.shape}")

    def forward(self, x: Tensor) -> Tensor:
        if not (self.training or not self.track_running_stats) or not is_initialized() \
                or comm().size == 1:
            return super().forward(x)
        self._check_input(x)
        x, weight, bias = autocast_float32(x, self.weight, self.bias, op="SyncBatchNorm")
        axes = (0, *range(2, x.ndim))
        shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        n = sum(comm().gather_objects(math.prod(x.shape[a] for a in axes)))
        if n <= 1:
            raise ValueError(f"SyncBatchNorm: expected more than 1 value per channel over "
                             f"the ranks when training, got {n} (this rank's input "
                             f"{x.shape})")
        mu = _SumOverRanks.apply(x.sum(axis=axes, keepdims=True)) / n
        d = x - mu
        var = _SumOverRanks.apply((d * d).sum(axis=axes, keepdims=True)) / n
        if self.track_running_stats:
            self._update(mu, var, n)
        y = d / (var + self.eps).sqrt()
        if weight is not None:
            y = y * weight.reshape(shape) + bias.reshape(shape)
        return y

    def _update(self, mu: Tensor, var: Tensor, n: int) -> None:
        """The running statistics, as ``BatchNorm``'s, from the global batch's."""
        with no_grad():
            count = self.num_batches_tracked
            count._set_data((count + 1)._array)
            m: Any = self.momentum
            if m is None:  # a cumulative average
                m = 1.0 / count.astype(self.running_mean.dtype)
            rm, rv = self.running_mean, self.running_var
            rm._set_data((rm * (1 - m) + mu.reshape(-1).astype(rm.dtype) * m)._array)
            unbiased = (var.reshape(-1) * (n / (n - 1))).astype(rv.dtype)
            rv._set_data((rv * (1 - m) + unbiased * m)._array)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module) -> Module:
        """``module`` with every ``BatchNorm1d``/``BatchNorm2d`` in it replaced by a
        ``SyncBatchNorm`` holding the same parameters and buffers (as PyTorch's).

        Example:
            >>> import xad, xad.distributed as dist
            >>> m = xad.nn.Sequential(xad.nn.Linear(2, 3), xad.nn.BatchNorm1d(3))
            >>> type(dist.SyncBatchNorm.convert_sync_batchnorm(m)[1]).__name__
            'SyncBatchNorm'
        """
        if isinstance(module, BatchNorm1d) and not isinstance(module, cls):
            sync = cls.__new__(cls)
            Module.__init__(sync)
            for key in ("_parameters", "_buffers"):
                getattr(sync, key).update(getattr(module, key))
            for name in ("num_features", "eps", "momentum", "affine", "track_running_stats"):
                setattr(sync, name, getattr(module, name))
            sync.train(module.training)
            return sync
        for name, child in list(module._modules.items()):
            if child is not None:
                module._modules[name] = cls.convert_sync_batchnorm(child)
        return module
