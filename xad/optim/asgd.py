"""``ASGD`` (averaged SGD), as ``torch.optim.ASGD`` (names, defaults, state keys); its rule
is :func:`xad.optim.functional.asgd_rule`."""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
from .functional import asgd_rule, step_with_rule
from .optimizer import Optimizer, ParamsT, _check, _is_number, _torch_flags, _zeros_like

__all__ = ["ASGD"]


class ASGD(Optimizer):
    r"""Averaged stochastic gradient descent (Polyak and Juditsky), as ``torch.optim.ASGD``::

        g = g + weight_decay * p                      if weight_decay != 0
        p = p (1 - lambd eta) - eta g
        ax = ax + mu (p - ax)                         (ax = p while mu == 1)
        eta = lr / (1 + lambd lr t) ** alpha;   mu = 1 / max(1, t - t0)

    The average is ``state["ax"]``; ``eta`` and ``mu`` are per-parameter state numbers.
    ``maximize`` ascends; ``foreach``, ``capturable`` are accepted and ignored (one update
    path per backend, a fused kernel where the backend fuses); ``differentiable`` must be
    ``False``.

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0], requires_grad=True)
        >>> opt = xad.optim.ASGD([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.step(); round(w.item(), 5)
        0.79999
    """

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

    def step(self, closure: Any = None) -> Any:
        """Update the parameters once; returns ``closure()`` if given."""
        loss = self._closure(closure)
        with _ag.no_grad():
            for group in self.param_groups:
                lr, lambd, wd = group["lr"], group["lambd"], group["weight_decay"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    st = self._state(p)
                    if "ax" not in st:
                        st.update(step=0, eta=float(lr), mu=1.0, ax=_zeros_like(p))
                    st["step"] = t = st["step"] + 1
                    eta, mu = float(st["eta"]), float(st["mu"])
                    step_with_rule(self._scratch, p, [st["ax"]], p.grad, asgd_rule,
                                   (eta, lambd, mu, wd, wd != 0, mu != 1),
                                   group.get("maximize", False))
                    st["eta"] = lr / (1 + lambd * lr * t) ** group["alpha"]
                    st["mu"] = 1 / max(1, t - group["t0"])
        return loss
