"""Periodic schedulers: ``CyclicLR`` and ``CosineAnnealingWarmRestarts``, with PyTorch's
semantics (re-exported by :mod:`xad.optim.lr_scheduler`)."""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from typing import Any

from ..tracing import host_call
from .lr_base import LRScheduler, _per_group
from .optimizer import Optimizer

__all__ = ["CyclicLR", "CosineAnnealingWarmRestarts"]


class CyclicLR(LRScheduler):
    """Cycle the ``lr`` between ``base_lr`` and ``max_lr`` (Smith's cyclical learning
    rates): up over ``step_size_up`` steps, down over ``step_size_down``; ``mode``
    ``"triangular"`` (constant amplitude), ``"triangular2"`` (halved each cycle),
    ``"exp_range"`` (scaled by ``gamma**step``) or a custom ``scale_fn``. Momentum (or
    Adam's ``beta1``) cycles inversely between ``max_momentum`` and ``base_momentum``.
    Step it after every batch.

    Example:
        >>> import xad
        >>> opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
        >>> s = xad.optim.lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=1.0, step_size_up=2)
        >>> lrs = []
        >>> for _ in range(4):
        ...     opt.step(); s.step(); lrs.append(round(s.get_last_lr()[0], 6))
        >>> lrs
        [0.55, 1.0, 0.55, 0.1]
    """

    def __init__(self, optimizer: Optimizer, base_lr: float | list[float],
                 max_lr: float | list[float], step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None,
                 scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum: float = 0.8, max_momentum: float = 0.9,
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        groups = optimizer.param_groups
        base_lrs = _per_group("base_lr", groups, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, groups):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", groups, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(f"CyclicLR: mode {mode!r} is invalid and scale_fn is None; use "
                             f"'triangular', 'triangular2', 'exp_range' or give a scale_fn")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self._init_momentum(base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_momentum(self, base: Any, top: Any, last_epoch: int) -> None:
        opt = self.optimizer
        if "momentum" not in opt.defaults and "betas" not in opt.defaults:
            raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` "
                             "option enabled")
        self.use_beta1 = "betas" in opt.defaults
        self.base_momentums = _per_group("base_momentum", opt.param_groups, base)
        self.max_momentums = _per_group("max_momentum", opt.param_groups, top)
        if last_epoch == -1:
            for mx, bs, group in zip(self.max_momentums, self.base_momentums,
                                     opt.param_groups):
                self._set_momentum(group, mx)
                group["max_momentum"], group["base_momentum"] = mx, bs

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is None and self.mode != "exp_range":
            self.scale_mode = "cycle"
        elif self._scale_fn_custom is None:
            self.scale_mode = "iterations"

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at cycle (or iteration) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self) -> list[float]:
        t = self.last_epoch
        cycle = math.floor(1 + t / self.total_size)
        x = 1.0 + t / self.total_size - cycle
        r = self.step_ratio
        factor = x / r if x <= r else (x - 1) / (r - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else t)
        lrs = [b + (m - b) * factor * scale for b, m in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, bs, mx in zip(self.optimizer.param_groups, self.base_momentums,
                                     self.max_momentums):
                self._set_momentum(group, mx - (mx - bs) * factor * scale)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        sd = super().state_dict()
        fn = sd.pop("_scale_fn_custom")
        sd["_scale_fn_custom"] = (None if fn is None or isinstance(fn, types.FunctionType)
                                  else fn.__dict__.copy())
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        rest = {k: v for k, v in state_dict.items() if k != "_scale_fn_custom"}
        super().load_state_dict(rest)
        fn = state_dict.get("_scale_fn_custom")
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: cosine annealing from ``initial_lr`` to ``eta_min`` over ``T_i`` epochs, then
    a restart, with ``T_0`` the first period and each next one ``T_mult`` times longer;
    ``step(epoch)`` may take a fractional epoch (as PyTorch's).

    Example:
        >>> import xad
        >>> opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=1.0)
        >>> s = xad.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2)
        >>> lrs = []
        >>> for _ in range(3):
        ...     opt.step(); s.step(); lrs.append(round(s.get_last_lr()[0], 6))
        >>> lrs
        [0.5, 1.0, 0.5]
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur: float = last_epoch  # fractional after step(epoch) with a float
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        c = (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
        return [self.eta_min + (b - self.eta_min) * c for b in self.base_lrs]

    @host_call
    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or go to ``epoch`` (may be fractional), and set the rates.

        Example:
            >>> import xad
            >>> opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=1.0)
            >>> s = xad.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=4)
            >>> s.step(2.0); s.get_last_lr()
            [0.5]
        """
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            self._jump(epoch)
        self.last_epoch = math.floor(epoch)
        self._set_lrs(self.get_lr())

    def _jump(self, epoch: float) -> None:
        if epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        T_0, m = self.T_0, self.T_mult
        if epoch < T_0:
            self.T_i, self.T_cur = T_0, epoch
        elif m == 1:
            self.T_cur = epoch % T_0
        else:
            n = int(math.log(epoch / T_0 * (m - 1) + 1, m))
            self.T_cur = epoch - T_0 * (m ** n - 1) / (m - 1)
            self.T_i = T_0 * m ** n
