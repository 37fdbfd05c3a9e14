"""Weight averaging, as ``torch.optim.swa_utils``: ``AveragedModel`` (stochastic weight
averaging, or an exponential moving average with :func:`get_ema_multi_avg_fn`), the average
functions, and ``update_bn`` (BatchNorm statistics recomputed for the averaged weights). The
schedule ``SWALR`` is :mod:`xad.optim.lr_swa`."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterable
from typing import Any

from .. import dtypes as _dt
from ..factories import tensor
from ..grad_mode import no_grad
from ..tensor import Tensor
from .module import Module
from .normalization import BatchNorm1d

__all__ = ["AveragedModel", "update_bn", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]

Tensors = list[Tensor]


def _decay(decay: float) -> None:
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         f"[0,1] range.")


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[[Tensors, Tensors, Any], None]:
    """The exponential moving average ``ema <- decay ema + (1 - decay) w`` of lists of
    tensors, in place (PyTorch's ``lerp``).

    Example:
        >>> import xad
        >>> ema = [xad.zeros(2)]; xad.nn.get_ema_multi_avg_fn(0.5)(ema, [xad.ones(2)], 1)
        >>> ema[0].tolist()
        [0.5, 0.5]
    """
    _decay(decay)

    def ema_update(averaged: Tensors, current: Tensors, _: Any) -> None:
        with no_grad():
            for a, c in zip(averaged, current, strict=True):
                if a.dtype.is_floating or a.dtype.is_complex:
                    a.lerp_(c, 1 - decay)
                else:
                    a.copy_(a * decay + c * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn() -> Callable[[Tensors, Tensors, Any], None]:
    """The running mean ``avg <- avg + (w - avg) / (n + 1)`` of lists of tensors, in place.

    Example:
        >>> import xad
        >>> avg = [xad.ones(2)]; xad.nn.get_swa_multi_avg_fn()(avg, [xad.zeros(2)], 1)
        >>> avg[0].tolist()
        [0.5, 0.5]
    """
    def swa_update(averaged: Tensors, current: Tensors, n: Any) -> None:
        with no_grad():
            for a, c in zip(averaged, current, strict=True):
                if a.dtype.is_floating or a.dtype.is_complex:
                    a.lerp_(c, 1 / (n + 1))
                else:
                    a.copy_(a + (c - a) / (n + 1))
    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[[Tensor, Tensor, Any], Tensor]:
    """The exponential moving average of one tensor: ``decay ema + (1 - decay) w``.

    Example:
        >>> import xad
        >>> xad.nn.get_ema_avg_fn(0.5)(xad.zeros(1), xad.ones(1), 1).tolist()
        [0.5]
    """
    _decay(decay)

    def ema_update(averaged: Tensor, current: Tensor, _: Any) -> Tensor:
        with no_grad():
            return decay * averaged + (1 - decay) * current
    return ema_update


def get_swa_avg_fn() -> Callable[[Tensor, Tensor, Any], Tensor]:
    """The running mean of one tensor: ``avg + (w - avg) / (n + 1)``.

    Example:
        >>> import xad
        >>> xad.nn.get_swa_avg_fn()(xad.ones(1), xad.zeros(1), 1).tolist()
        [0.5]
    """
    def swa_update(averaged: Tensor, current: Tensor, n: Any) -> Tensor:
        with no_grad():
            return averaged + (current - averaged) / (n + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and buffers, with ``use_buffers``) are the
    average of those passed to :meth:`update_parameters`: the running mean (SWA) by default,
    or ``avg_fn(avg, w, n)`` / ``multi_avg_fn(avgs, ws, n)``; ``n_averaged`` counts the
    updates (a buffer, saved in the state dict), as PyTorch's.

    Example:
        >>> import xad
        >>> model = xad.nn.Linear(2, 1); swa = xad.nn.AveragedModel(model)
        >>> swa.update_parameters(model); int(swa.n_averaged.item())
        1
    """

    def __init__(self, model: Module, device: Any = None,
                 avg_fn: Callable[[Tensor, Tensor, Any], Tensor] | None = None,
                 multi_avg_fn: Callable[[Tensors, Tensors, Any], None] | None = None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        first = next(itertools.chain(self.module.parameters(), self.module.buffers()), None)
        n = tensor(0, dtype=_dt.int64, backend=None if first is None else first.backend)
        self.register_buffer("n_averaged", n if first is None else n.to(first.device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def _pairs(self, model: Module) -> tuple[Iterable[Tensor], Iterable[Tensor]]:
        if self.use_buffers:
            return (itertools.chain(self.module.parameters(), self.module.buffers()),
                    itertools.chain(model.parameters(), model.buffers()))
        return self.module.parameters(), model.parameters()

    def update_parameters(self, model: Module) -> None:
        """Average ``model``'s current parameters into this copy's (the first call copies
        them); buffers are copied as they are, unless ``use_buffers``.

        Example:
            >>> import xad
            >>> m = xad.nn.Linear(1, 1, bias=False); swa = xad.nn.AveragedModel(m)
            >>> for w in (1.0, 2.0, 6.0):
            ...     _ = m.weight.data.fill_(w); swa.update_parameters(m)
            >>> swa.module.weight.tolist()
            [[3.0]]
        """
        with no_grad():
            ours, theirs = self._pairs(model)
            pairs = [(a.detach(), w.detach().to(a.device)) for a, w in zip(ours, theirs)]
            n = self.n_averaged
            if int(n.item()) == 0:  # (an explicit read of one number per update, as PyTorch's)
                for a, w in pairs:
                    a.copy_(w)
            else:
                self._average(pairs, n)
            if not self.use_buffers:
                for b, w in zip(self.module.buffers(), model.buffers(), strict=True):
                    b.detach().copy_(w.detach().to(b.device))
            self.n_averaged += 1

    def _average(self, pairs: list[tuple[Tensor, Tensor]], n: Tensor) -> None:
        if self.avg_fn is not None:
            for a, w in pairs:
                a.copy_(self.avg_fn(a, w, n.to(a.device)))
            return
        groups: dict[tuple, tuple[Tensors, Tensors]] = {}
        for a, w in pairs:  # by device and dtype, as PyTorch's
            ours, theirs = groups.setdefault((str(a.device), a.dtype.name), ([], []))
            ours.append(a)
            theirs.append(w)
        multi = self.multi_avg_fn
        for ours, theirs in groups.values():
            if multi is not None:
                multi(ours, theirs, n.to(ours[0].device))
            else:
                swa = get_swa_avg_fn()
                for a, w in zip(ours, theirs):
                    a.copy_(swa(a, w, n.to(a.device)))


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute every BatchNorm's running statistics for ``model``'s current weights: one
    pass over ``loader`` (a batch, or a tuple whose first item is the input) in training
    mode, each average cumulative, then the modes and momenta restored, as PyTorch's.

    Example:
        >>> import xad
        >>> m = xad.nn.BatchNorm1d(1); xad.nn.update_bn([xad.tensor([[1.0], [3.0]])], m)
        >>> m.running_mean.tolist()
        [2.0]
    """
    momenta = {}
    for m in model.modules():
        if isinstance(m, BatchNorm1d):
            m.reset_running_stats()
            momenta[m] = m.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for m in momenta:
        m.momentum = None
    with no_grad():
        for batch in loader:
            x = batch[0] if isinstance(batch, (list, tuple)) else batch
            model(x if device is None else x.to(device))
    for m, momentum in momenta.items():
        m.momentum = momentum
    model.train(was_training)
