"""``ASGD`` (averaged SGD), as ``torch.optim.ASGD`` (names, defaults, state keys); its rule
is :func:`xad.optim.functional.asgd_rule`, its step :mod:`xad.optim.rule_step`."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .functional import asgd_numbers, asgd_rule
from .optimizer import ParamsT, _check, _is_number, _torch_flags, _zeros_like
from .rule_step import RuleOptimizer

__all__ = ["ASGD"]


class ASGD(RuleOptimizer):
    r"""Averaged stochastic gradient descent (Polyak and Juditsky), as ``torch.optim.ASGD``::

        g = g + weight_decay * p                      if weight_decay != 0
        p = p (1 - lambd eta) - eta g
        ax = ax + mu (p - ax)                         (ax = p while mu == 1)
        eta = lr / (1 + lambd lr t) ** alpha;   mu = 1 / max(1, t - t0)

    The average is ``state["ax"]``; ``eta`` and ``mu`` are per-parameter state numbers.
    ``maximize`` ascends; ``foreach`` is accepted and ignored (one update path per backend,
    a fused kernel where the backend fuses); ``capturable=True``, on CuPy, keeps the step
    counts, ``eta``, ``mu`` and the learning rate on the device (:mod:`.capturable`, as
    ``xad.compile(..., cuda_graphs=True)`` does by itself); ``differentiable`` must be
    ``False``.

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0], requires_grad=True)
        >>> opt = xad.optim.ASGD([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.step(); round(w.item(), 5)
        0.79999
    """

    _complex_params = True

    def __init__(self, params: ParamsT, lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0.0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay,
                                      **_torch_flags("ASGD", foreach, maximize,
                                                     differentiable,
                                                     capturable=capturable)))

    def _validate(self, group: dict[str, Any]) -> None:
        lr, wd = group["lr"], group["weight_decay"]
        _check(_is_number(lr) and lr >= 0, f"Invalid learning rate: {lr}")
        _check(_is_number(wd) and wd >= 0, f"Invalid weight_decay value: {wd}")

    _rule = staticmethod(asgd_rule)
    _keys = ("ax",)

    def _numbers(self, group: dict[str, Any]) -> tuple[tuple, tuple]:
        return (group["lambd"], group["alpha"], group["t0"]), ()

    def _args(self, group: dict[str, Any], numbers: tuple) -> tuple:
        wd = group["weight_decay"]
        return (wd, wd != 0, *numbers)

    def _new_state(self, p: Tensor, group: dict[str, Any], step: Any) -> dict[str, Any]:
        """``p``'s state, made where it lacks it with the count ``step``."""
        st = self._state(p)
        if "ax" not in st:
            st.update(step=step, eta=float(group["lr"]), mu=1.0, ax=_zeros_like(p))
        return st


ASGD._device_numbers = (asgd_numbers, 4, True, (("eta", 0.0), ("mu", 1.0)))
