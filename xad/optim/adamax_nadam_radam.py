"""``Adamax``, ``NAdam`` and ``RAdam``, as ``torch.optim``'s (names, defaults, state keys);
their rules are in :mod:`xad.optim.functional`."""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
from .functional import adamax_rule, nadam_rule, radam_rectification, radam_rule, step_with_rule
from .optimizer import Optimizer, ParamsT, _check, _is_number, _torch_flags, _zeros_like

__all__ = ["Adamax", "NAdam", "RAdam"]


class _AdamFamily(Optimizer):
    """What the three share: ``lr``, ``betas``, ``eps``, ``weight_decay`` checks, state
    ``step``/``exp_avg``/second moment, and a step that hands each parameter to its rule.
    ``maximize`` ascends the objective; ``foreach`` and ``capturable`` are accepted and
    ignored (one update path per backend, a fused kernel where it fuses);
    ``differentiable`` must be ``False``."""

    _second = "exp_avg_sq"

    def _validate(self, group: dict[str, Any]) -> None:
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        _check(_is_number(lr) and lr >= 0, f"Invalid learning rate: {lr}")
        _check(_is_number(eps) and eps >= 0, f"Invalid epsilon value: {eps}")
        _check(0 <= b1 < 1, f"Invalid beta parameter at index 0: {b1}")
        _check(0 <= b2 < 1, f"Invalid beta parameter at index 1: {b2}")
        _check(_is_number(wd) and wd >= 0, f"Invalid weight_decay value: {wd}")

    def _consts(self, group: dict[str, Any], st: dict[str, Any]) -> tuple:
        raise NotImplementedError

    def step(self, closure: Any = None) -> Any:
        """Update the parameters once; returns ``closure()`` if given."""
        loss = self._closure(closure)
        with _ag.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    st = self._state(p)
                    if "exp_avg" not in st:
                        st.update(self._fresh_state(p))
                    st["step"] = st["step"] + 1
                    step_with_rule(self._scratch, p, [st["exp_avg"], st[self._second]],
                                   p.grad, self._rule, self._consts(group, st),
                                   group.get("maximize", False))
        return loss

    def _fresh_state(self, p: Any) -> dict[str, Any]:
        return {"step": 0, "exp_avg": _zeros_like(p), self._second: _zeros_like(p)}


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

    _second = "exp_inf"
    _rule = staticmethod(adamax_rule)

    def __init__(self, params: ParamsT, lr: float = 2e-3, betas: tuple = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, foreach: Any = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay,
                                      **_torch_flags("Adamax", foreach, maximize,
                                                     differentiable, capturable=capturable)))

    def _consts(self, group: dict[str, Any], st: dict[str, Any]) -> tuple:
        b1, b2 = group["betas"]
        return (group["lr"], b1, b2, group["eps"], group["weight_decay"] or None, st["step"])


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

    def _fresh_state(self, p: Any) -> dict[str, Any]:
        return {**super()._fresh_state(p), "mu_product": 1.0}

    def _consts(self, group: dict[str, Any], st: dict[str, Any]) -> tuple:
        b1, b2 = group["betas"]
        t, psi = st["step"], group["momentum_decay"]
        mu = b1 * (1 - 0.5 * 0.96 ** (t * psi))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
        st["mu_product"] = float(st["mu_product"]) * mu
        return (group["lr"], b1, b2, group["eps"], group["weight_decay"] or None, t,
                group["decoupled_weight_decay"], mu, mu_next, st["mu_product"])


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

    def _consts(self, group: dict[str, Any], st: dict[str, Any]) -> tuple:
        b1, b2 = group["betas"]
        return (group["lr"], b1, b2, group["eps"], group["weight_decay"] or None,
                group["decoupled_weight_decay"], *radam_rectification(b1, b2, st["step"]))
