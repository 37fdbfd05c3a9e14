"""Schedulers that scale the learning rate by a factor: ``LambdaLR``, ``MultiplicativeLR``,
``MultiStepLR``, ``ConstantLR`` and ``PolynomialLR``, with PyTorch's semantics (re-exported
by :mod:`xad.optim.lr_scheduler`)."""

from __future__ import annotations

import types
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from .lr_base import LRScheduler
from .optimizer import Optimizer

__all__ = ["LambdaLR", "MultiplicativeLR", "MultiStepLR", "ConstantLR", "PolynomialLR"]

LambdaT = Callable[[int], float] | list[Callable[[int], float]]


class _LambdaScheduler(LRScheduler):
    """What ``LambdaLR`` and ``MultiplicativeLR`` share: one function per group, and a state
    dict that keeps a callable object's ``__dict__`` (a plain function is not saved)."""

    def __init__(self, optimizer: Optimizer, lr_lambda: LambdaT, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != n:
                raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * n
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        sd = {k: v for k, v in super().state_dict().items() if k != "lr_lambdas"}
        sd["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                            for fn in self.lr_lambdas]
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        rest = {k: v for k, v in state_dict.items() if k != "lr_lambdas"}
        super().load_state_dict(rest)
        for fn, saved in zip(self.lr_lambdas, state_dict["lr_lambdas"]):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_LambdaScheduler):
    """``lr = initial_lr * lr_lambda(epoch)`` (one function, or one per group).

    Example:
        >>> import xad
        >>> opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=1.0)
        >>> s = xad.optim.lr_scheduler.LambdaLR(opt, lambda e: 1 / (e + 1))
        >>> opt.step(); s.step(); s.get_last_lr()
        [0.5]
    """

    def get_lr(self) -> list[float]:
        return [b * fn(self.last_epoch) for fn, b in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaScheduler):
    """Multiply the current ``lr`` by ``lr_lambda(epoch)`` at every step.

    Example:
        >>> import xad
        >>> opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=1.0)
        >>> s = xad.optim.lr_scheduler.MultiplicativeLR(opt, lambda e: 0.5)
        >>> opt.step(); s.step(); opt.step(); s.step(); s.get_last_lr()
        [0.25]
    """

    def get_lr(self) -> list[float]:
        groups = self._group_lrs()
        if self._is_initial:
            return groups
        return [lr * fn(self.last_epoch) for fn, lr in zip(self.lr_lambdas, groups)]


class MultiStepLR(LRScheduler):
    """Multiply the ``lr`` by ``gamma`` at each epoch in ``milestones`` (a milestone given
    twice multiplies twice).

    Example:
        >>> import xad
        >>> opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=1.0)
        >>> s = xad.optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 3], gamma=0.5)
        >>> lrs = []
        >>> for _ in range(4):
        ...     opt.step(); s.step(); lrs.append(s.get_last_lr()[0])
        >>> lrs
        [0.5, 0.5, 0.25, 0.25]
    """

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self._group_lrs()
        if self.last_epoch not in self.milestones:
            return groups
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in groups]

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        # a state dict written by xad.save holds the milestones' Counter as a plain dict
        self.milestones = Counter(self.milestones)

    def _get_closed_form_lr(self) -> list[float]:
        ms = sorted(self.milestones.elements())
        return [b * self.gamma ** bisect_right(ms, self.last_epoch) for b in self.base_lrs]


class ConstantLR(LRScheduler):
    """Scale the ``lr`` by ``factor`` for the first ``total_iters`` epochs, then restore it.

    Example:
        >>> import xad
        >>> opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=1.0)
        >>> s = xad.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=1)
        >>> lrs = [s.get_last_lr()[0]]
        >>> opt.step(); s.step(); lrs + s.get_last_lr()
        [0.5, 1.0]
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError(f"Constant multiplicative factor expected to be between 0 and 1, "
                             f"got {factor}")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self._group_lrs()
        if self.last_epoch == 0:
            return [lr * self.factor for lr in groups]
        if self.last_epoch != self.total_iters:
            return groups
        return [lr * (1.0 / self.factor) for lr in groups]

    def _get_closed_form_lr(self) -> list[float]:
        f = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [b * f for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the ``lr`` to 0 over ``total_iters`` epochs:
    ``lr = initial_lr * (1 - min(t, total_iters) / total_iters) ** power``.

    Example:
        >>> import xad
        >>> opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=1.0)
        >>> s = xad.optim.lr_scheduler.PolynomialLR(opt, total_iters=4, power=2.0)
        >>> opt.step(); s.step(); s.get_last_lr()
        [0.5625]
    """

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, n = self.last_epoch, self.total_iters
        groups = self._group_lrs()
        if self._is_initial or t > n:
            return groups
        decay = ((1.0 - t / n) / (1.0 - (t - 1) / n)) ** self.power
        return [lr * decay for lr in groups]

    def _get_closed_form_lr(self) -> list[float]:
        n = self.total_iters
        return [b * (1.0 - min(n, self.last_epoch) / n) ** self.power for b in self.base_lrs]
