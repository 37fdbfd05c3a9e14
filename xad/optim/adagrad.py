"""Adagrad: per-coordinate learning rates from the running sum of squared gradients."""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, _check, _full_like, _is_number

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    r"""Adagrad, as ``torch.optim.Adagrad``.

    The update at step ``t`` (from 1), for each parameter ``p`` with gradient ``g``; the
    sum ``s`` starts at ``initial_accumulator_value``::

        g = g + weight_decay * p                  if weight_decay != 0
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        p = p - clr * g / (sqrt(s) + eps)

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0], requires_grad=True)
        >>> opt = xad.optim.Adagrad([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
        [0.9]
    """

    def __init__(self, params: ParamsT, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10) -> None:
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps))

    def _validate(self, group: dict[str, Any]) -> None:
        lr, lr_decay, wd = group["lr"], group["lr_decay"], group["weight_decay"]
        iav, eps = group["initial_accumulator_value"], group["eps"]
        _check(_is_number(lr) and lr >= 0, f"Invalid learning rate: {lr}")
        _check(_is_number(lr_decay) and lr_decay >= 0, f"Invalid lr_decay value: {lr_decay}")
        _check(_is_number(wd) and wd >= 0, f"Invalid weight_decay value: {wd}")
        _check(_is_number(iav) and iav >= 0,
               f"Invalid initial_accumulator_value value: {iav}")
        _check(_is_number(eps) and eps >= 0, f"Invalid epsilon value: {eps}")

    def _init_group_state(self, group: dict[str, Any]) -> None:
        # as PyTorch: the state exists from the start (so a fresh state_dict lists it)
        for p in group["params"]:
            self.state[p] = {"step": 0,
                             "sum": _full_like(p, group["initial_accumulator_value"])}

    def step(self, closure: Any = None) -> Any:
        """Update the parameters once; returns ``closure()`` if given.

        Example:
            >>> import xad
            >>> w = xad.ones(1, requires_grad=True); opt = xad.optim.Adagrad([w], lr=0.5)
            >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
            [0.5]
        """
        loss = self._closure(closure)
        with _ag.no_grad():
            for group in self.param_groups:
                params, grads = self._params_with_grad(group)
                if not params:
                    continue
                sums, steps = [], []
                for p in params:
                    st = self.state.get(p)
                    if st is None or "sum" not in st:
                        st = self.state[p] = {
                            "step": 0, "sum": _full_like(p, group["initial_accumulator_value"])}
                    st["step"] += 1
                    steps.append(st["step"])
                    sums.append(st["sum"])
                adagrad(params, grads, sums, steps, lr=group["lr"], lr_decay=group["lr_decay"],
                        weight_decay=group["weight_decay"], eps=group["eps"])
        return loss


def adagrad(params: list[Tensor], grads: list[Tensor], state_sums: list[Tensor],
            steps: list[int], *, lr: float, lr_decay: float, weight_decay: float,
            eps: float) -> None:
    """The functional Adagrad update (see :class:`Adagrad`); ``steps`` count from 1."""
    for i, (p, grad) in enumerate(zip(params, grads)):
        b = p._backend
        xp = b.xp
        g = grad.data
        x = p.data
        if weight_decay != 0:
            g = g + weight_decay * x
        clr = lr / (1 + (steps[i] - 1) * lr_decay)
        s_t = state_sums[i]
        if b.mutable:
            s = s_t.data
            s += g * g
            d = xp.sqrt(s)
            d += eps
            upd = g / d
            upd *= clr
            x -= upd
        else:
            s = s_t.data = s_t.data + g * g
            p.data = x - clr * g / (xp.sqrt(s) + eps)
        p._version += 1
