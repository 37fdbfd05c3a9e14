"""``SWALR``: the learning-rate schedule of stochastic weight averaging, as
``torch.optim.swa_utils.SWALR`` (the averaged model is :mod:`xad.nn.averaged_model`)."""

from __future__ import annotations

import math

from .lr_base import LRScheduler, _per_group
from .optimizer import Optimizer

__all__ = ["SWALR"]


class SWALR(LRScheduler):
    """Anneal each group's learning rate to ``swa_lr`` over ``anneal_epochs`` steps
    (``"cos"`` or ``"linear"``), then hold it, as PyTorch's.

    Example:
        >>> import xad
        >>> opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=1.0)
        >>> s = xad.optim.SWALR(opt, swa_lr=0.1, anneal_epochs=2, anneal_strategy="linear")
        >>> [round(v, 6) for v in s.get_last_lr()]
        [1.0]
        >>> opt.step(); s.step(); opt.step(); s.step(); round(s.get_last_lr()[0], 6)
        0.1
    """

    def __init__(self, optimizer: Optimizer, swa_lr: float | list[float], anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        for lr, group in zip(_per_group("swa_lr", optimizer.param_groups, swa_lr),
                             optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        if isinstance(anneal_epochs, bool) or not isinstance(anneal_epochs, int) or \
                anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self._anneal_strategy, self.anneal_epochs = anneal_strategy, anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _anneal(self, t: float) -> float:
        return t if self._anneal_strategy == "linear" else (1 - math.cos(math.pi * t)) / 2

    def get_lr(self) -> list[float]:
        """PyTorch's rule: the rate the previous step started from, moved towards
        ``swa_lr`` by the anneal fraction of this step."""
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev = self._anneal(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        alpha = self._anneal(max(0, min(1, step / max(1, self.anneal_epochs))))
        out = []
        for g in self.optimizer.param_groups:
            start = g["swa_lr"] if prev == 1 else (g["lr"] - prev * g["swa_lr"]) / (1 - prev)
            out.append(g["swa_lr"] * alpha + start * (1 - alpha))
        return out
