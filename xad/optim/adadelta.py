"""``Adadelta``, as ``torch.optim.Adadelta`` (names, defaults, state keys); its rule is
:func:`xad.optim.functional.adadelta_rule`, its step :mod:`xad.optim.rule_step`."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .capturable import learning_rate
from .functional import adadelta_rule
from .optimizer import ParamsT, _check, _is_number, _torch_flags, _zeros_like
from .rule_step import RuleOptimizer

__all__ = ["Adadelta"]


class Adadelta(RuleOptimizer):
    r"""Adadelta (Zeiler, 2012), as ``torch.optim.Adadelta``::

        g = g + weight_decay * p                      if weight_decay != 0
        v = rho v + (1 - rho) g^2                     (square_avg)
        d = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho u + (1 - rho) d^2                     (acc_delta)
        p = p - lr d

    ``maximize`` ascends; ``foreach`` is accepted and ignored (one update path per backend,
    a fused kernel where the backend fuses); ``capturable=True``, on CuPy, keeps the step
    counts and the learning rate on the device (:mod:`.capturable`, as ``xad.compile(...,
    cuda_graphs=True)`` does by itself); ``differentiable`` must be ``False``.

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0], requires_grad=True)
        >>> opt = xad.optim.Adadelta([w])
        >>> (w * w).sum().backward(); opt.step(); round(w.item(), 6)
        0.996838
    """

    _complex_params = True

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

    _rule = staticmethod(adadelta_rule)
    _keys = ("square_avg", "acc_delta")

    def _numbers(self, group: dict[str, Any]) -> tuple[tuple, tuple]:
        return (), ()

    def _args(self, group: dict[str, Any], numbers: tuple) -> tuple:
        rho, wd = group["rho"], group["weight_decay"]
        return (rho, 1 - rho, group["eps"], wd, wd != 0, *numbers)

    def _new_state(self, p: Tensor, group: dict[str, Any], step: Any) -> dict[str, Any]:
        """``p``'s state, made where it lacks it with the count ``step``."""
        st = self._state(p)
        if "square_avg" not in st:
            st.update(step=step, square_avg=_zeros_like(p), acc_delta=_zeros_like(p))
        return st


Adadelta._device_numbers = (learning_rate, 1, True, ())
