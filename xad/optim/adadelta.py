"""``Adadelta``, as ``torch.optim.Adadelta`` (names, defaults, state keys); its rule is
:func:`xad.optim.functional.adadelta_rule`."""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
from .functional import adadelta_rule, step_with_rule
from .optimizer import Optimizer, ParamsT, _check, _is_number, _torch_flags, _zeros_like

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    r"""Adadelta (Zeiler, 2012), as ``torch.optim.Adadelta``::

        g = g + weight_decay * p                      if weight_decay != 0
        v = rho v + (1 - rho) g^2                     (square_avg)
        d = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho u + (1 - rho) d^2                     (acc_delta)
        p = p - lr d

    ``maximize`` ascends; ``foreach``, ``capturable`` are accepted and ignored (one update
    path per backend, a fused kernel where the backend fuses); ``differentiable`` must be
    ``False``.

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0], requires_grad=True)
        >>> opt = xad.optim.Adadelta([w])
        >>> (w * w).sum().backward(); opt.step(); round(w.item(), 6)
        0.996838
    """

    def __init__(self, params: ParamsT, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0.0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      **_torch_flags("Adadelta", foreach, maximize,
                                                     differentiable,
                                                     capturable=capturable)))

    def _validate(self, group: dict[str, Any]) -> None:
        lr, rho, eps, wd = group["lr"], group["rho"], group["eps"], group["weight_decay"]
        _check(_is_number(lr) and lr >= 0, f"Invalid learning rate: {lr}")
        _check(_is_number(rho) and 0 <= rho <= 1, f"Invalid rho value: {rho}")
        _check(_is_number(eps) and eps >= 0, f"Invalid epsilon value: {eps}")
        _check(_is_number(wd) and wd >= 0, f"Invalid weight_decay value: {wd}")

    def step(self, closure: Any = None) -> Any:
        """Update the parameters once; returns ``closure()`` if given."""
        loss = self._closure(closure)
        with _ag.no_grad():
            for group in self.param_groups:
                wd = group["weight_decay"]
                c = (group["lr"], group["rho"], group["eps"], wd, wd != 0)
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    st = self._state(p)
                    if "square_avg" not in st:
                        st.update(step=0, square_avg=_zeros_like(p), acc_delta=_zeros_like(p))
                    st["step"] = st["step"] + 1
                    step_with_rule(self._scratch, p, [st["square_avg"], st["acc_delta"]],
                                   p.grad, adadelta_rule, c, group.get("maximize", False))
        return loss
