"""``LRScheduler``, the base of every learning-rate scheduler (PyTorch's semantics), and the
helpers the schedulers share.

A scheduler sets ``group["lr"]`` of its optimiser's groups when it is made (step 0) and at
every ``step()``; call ``step()`` after ``optimizer.step()``. As in PyTorch, most rules are
*chainable*: they scale the group's current ``lr``, so two schedulers can act together.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..tracing import host_call
from .optimizer import Optimizer

__all__ = ["LRScheduler"]


class LRScheduler:
    """Base class: ``base_lrs`` (each group's ``initial_lr``), ``last_epoch`` (steps taken),
    ``step()``, ``get_last_lr()``, ``state_dict()`` / ``load_state_dict()``.

    Subclasses write ``get_lr()``: the groups' learning rates at ``last_epoch``.

    Example:
        >>> import xad
        >>> opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=1.0)
        >>> sched = xad.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        >>> lrs = []
        >>> for _ in range(4):
        ...     opt.step(); sched.step(); lrs.append(sched.get_last_lr()[0])
        >>> lrs
        [1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   f"when resuming a scheduler with last_epoch >= 0; load the "
                                   f"optimizer's state dict first")
        self.base_lrs: list[float] = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """Set the rates of step 0 (``SequentialLR`` calls it again at a milestone)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The learning rates for ``last_epoch`` (use :meth:`get_last_lr` to read them)."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The learning rates the last ``step()`` set, one per parameter group.

        Example:
            >>> import xad
            >>> opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=2.0)
            >>> xad.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5).get_last_lr()
            [2.0]
        """
        return list(self._last_lr)

    @host_call
    def step(self, epoch: int | None = None) -> None:
        """Advance one step (an epoch, or a batch for ``OneCycleLR``) and set the rates
        (``epoch``: deprecated in PyTorch, jump to that epoch).

        Example:
            >>> import xad
            >>> opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=2.0)
            >>> s = xad.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
            >>> opt.step(); s.step(); opt.param_groups[0]["lr"]
            1.0
        """
        self._step_count += 1
        if epoch is not None:
            warnings.warn("The epoch parameter in `scheduler.step()` is deprecated (as in "
                          "PyTorch); the closed form is used where there is one",
                          UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        self._set_lrs(values)

    def _set_lrs(self, values: list[float]) -> None:
        """Each group's rate, one value per group (as PyTorch's strict zip: a group added
        after the scheduler was made got no rate or a shifted one, silently)."""
        groups = self.optimizer.param_groups
        if len(values) != len(groups):
            raise ValueError(f"{type(self).__name__}: {len(values)} learning rates for "
                             f"{len(groups)} parameter groups: a group was added "
                             f"(add_param_group) after this scheduler was made; make the "
                             f"scheduler once every group is in the optimizer")
        for group, lr in zip(groups, values):
            group["lr"] = lr
        self._last_lr = [g["lr"] for g in groups]

    def state_dict(self) -> dict[str, Any]:
        """Everything but the optimiser: plain Python values (``xad.save`` can write it).

        Example:
            >>> import xad
            >>> opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=1.0)
            >>> xad.optim.lr_scheduler.StepLR(opt, 3).state_dict()["last_epoch"]
            0
        """
        return {k: _copy(v) for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a state from :meth:`state_dict`.

        Example:
            >>> import xad
            >>> opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=1.0)
            >>> s = xad.optim.lr_scheduler.StepLR(opt, 3)
            >>> s.load_state_dict({**s.state_dict(), "last_epoch": 7}); s.last_epoch
            7
        """
        self.__dict__.update({k: _copy(v) for k, v in state_dict.items()})

    def __repr__(self) -> str:
        epoch = getattr(self, "last_epoch", None)  # ChainedScheduler has none (as torch's)
        return f"{type(self).__name__}(last_epoch={epoch}, lr={self._last_lr})"

    def _group_lrs(self) -> list[float]:
        return [g["lr"] for g in self.optimizer.param_groups]


def _copy(v: Any) -> Any:
    """A copy of nested dicts (``Counter`` kept) and lists; other values shared."""
    if isinstance(v, dict):
        return type(v)({k: _copy(x) for k, x in v.items()})
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"Expected positive integer {name}, but got {value!r}")
    return value


def _per_group(name: str, groups: list[dict[str, Any]], value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        if len(value) != len(groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(value)} values, param_groups has "
                             f"{len(groups)}.")
        return list(value)
    return [value] * len(groups)
