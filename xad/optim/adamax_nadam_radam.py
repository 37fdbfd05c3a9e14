"""``Adamax``, ``NAdam`` and ``RAdam``, as ``torch.optim``'s (names, defaults, state keys);
their rules and the formulas of their numbers are in :mod:`xad.optim.functional`, their
step (on the host, or with its numbers on the device) in :mod:`xad.optim.rule_step`."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .functional import (
    adamax_numbers,
    adamax_rule,
    nadam_numbers,
    nadam_rule,
    radam_numbers,
    radam_rule,
)
from .optimizer import ParamsT, _check, _is_number, _torch_flags, _zeros_like
from .rule_step import RuleOptimizer

__all__ = ["Adamax", "NAdam", "RAdam"]


class _AdamFamily(RuleOptimizer):
    """What the three share: ``lr``, ``betas``, ``eps``, ``weight_decay`` checks, state
    ``step``/``exp_avg``/second moment. ``maximize`` ascends the objective; ``foreach`` is
    accepted and ignored (one update path per backend, a fused kernel where it fuses);
    ``capturable=True``, on CuPy, keeps the step counts, the bias corrections and the
    learning rate on the device (:mod:`.capturable`: what ``xad.compile(...,
    cuda_graphs=True)`` turns on by itself, so a CUDA graph holds the step);
    ``differentiable`` must be ``False``."""

    _complex_params = True
    _keys = ("exp_avg", "exp_avg_sq")

    def _validate(self, group: dict[str, Any]) -> None:
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        _check(_is_number(lr) and lr >= 0, f"Invalid learning rate: {lr}")
        _check(_is_number(eps) and eps >= 0, f"Invalid epsilon value: {eps}")
        _check(0 <= b1 < 1, f"Invalid beta parameter at index 0: {b1}")
        _check(0 <= b2 < 1, f"Invalid beta parameter at index 1: {b2}")
        _check(_is_number(wd) and wd >= 0, f"Invalid weight_decay value: {wd}")

    def _new_state(self, p: Tensor, group: dict[str, Any], step: Any) -> dict[str, Any]:
        """``p``'s state, made where it lacks it with the count ``step``."""
        st = self._state(p)
        if self._keys[0] not in st:
            st.update(step=step, **{key: _zeros_like(p) for key in self._keys})
        return st

    def _first(self, group: dict[str, Any]) -> tuple:
        """The rule's constants: ``1 - b1``, ``b2``, ``1 - b2``, ``eps``, whether to decay."""
        b1, b2 = group["betas"]
        return 1 - b1, b2, 1 - b2, group["eps"], group["weight_decay"] != 0


class Adamax(_AdamFamily):
    r"""Adamax (Adam with the infinity norm), as ``torch.optim.Adamax``::

        g = g + weight_decay * p                  if weight_decay != 0
        m = b1 m + (1 - b1) g;   u = max(b2 u, |g| + eps)
        p = p - lr / (1 - b1**t) * m / u

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0], requires_grad=True)
        >>> opt = xad.optim.Adamax([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
        [0.9]
    """

    _keys = ("exp_avg", "exp_inf")
    _rule = staticmethod(adamax_rule)

    def __init__(self, params: ParamsT, lr: float = 2e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, foreach: Any = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay,
                                      **_torch_flags("Adamax", foreach, maximize,
                                                     differentiable, capturable=capturable)))

    def _numbers(self, group: dict[str, Any]) -> tuple[tuple, tuple]:
        return (group["betas"][0],), ()

    def _args(self, group: dict[str, Any], numbers: tuple) -> tuple:
        one_minus_b1, b2, _, eps, decay = self._first(group)
        return (one_minus_b1, b2, eps, group["weight_decay"], decay, *numbers)


class NAdam(_AdamFamily):
    r"""NAdam (Adam with Nesterov momentum), as ``torch.optim.NAdam``, with its momentum
    schedule ``mu_t = b1 (1 - 0.96**(t momentum_decay) / 2)`` (the rule:
    :func:`xad.optim.functional.nadam_rule`); ``decoupled_weight_decay`` as AdamW's.

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0], requires_grad=True)
        >>> opt = xad.optim.NAdam([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.step(); round(w.item(), 4)
        0.8944
    """

    _rule = staticmethod(nadam_rule)

    def __init__(self, params: ParamsT, lr: float = 2e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: Any = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check(momentum_decay >= 0, f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      **_torch_flags(type(self).__name__, foreach, maximize,
                                                     differentiable, capturable=capturable)))

    def _new_state(self, p: Tensor, group: dict[str, Any], step: Any) -> dict[str, Any]:
        st = super()._new_state(p, group, step)
        st.setdefault("mu_product", 1.0)
        return st

    def _numbers(self, group: dict[str, Any]) -> tuple[tuple, tuple]:
        b1, b2 = group["betas"]
        return ((b1, b2, group["momentum_decay"], group["weight_decay"]),
                (group["decoupled_weight_decay"],))

    def _args(self, group: dict[str, Any], numbers: tuple) -> tuple:
        return (*self._first(group), group["decoupled_weight_decay"], *numbers)


class RAdam(_AdamFamily):
    r"""Rectified Adam, as ``torch.optim.RAdam`` (the rule:
    :func:`xad.optim.functional.radam_rule`); ``decoupled_weight_decay`` as AdamW's.

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0], requires_grad=True)
        >>> opt = xad.optim.RAdam([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.step(); round(w.item(), 4)
        0.8
    """

    _rule = staticmethod(radam_rule)

    def __init__(self, params: ParamsT, lr: float = 1e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0,
                 decoupled_weight_decay: bool = False, *, foreach: Any = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      **_torch_flags(type(self).__name__, foreach, maximize,
                                                     differentiable, capturable=capturable)))

    def _numbers(self, group: dict[str, Any]) -> tuple[tuple, tuple]:
        b1, b2 = group["betas"]
        return (b1, b2, group["weight_decay"]), (group["decoupled_weight_decay"],)

    def _args(self, group: dict[str, Any], numbers: tuple) -> tuple:
        return (*self._first(group), group["decoupled_weight_decay"], *numbers)


Adamax._device_numbers = (adamax_numbers, 1, True, ())
NAdam._device_numbers = (nadam_numbers, 4, True, (("mu_product", 1.0),))
RAdam._device_numbers = (radam_numbers, 6, True, ())
