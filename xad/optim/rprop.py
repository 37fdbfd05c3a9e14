"""``Rprop``, as ``torch.optim.Rprop`` (names, defaults, state keys); its rule is
:func:`xad.optim.functional.rprop_rule`, its step :mod:`xad.optim.rule_step`."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .capturable import learning_rate
from .functional import rprop_rule
from .optimizer import ParamsT, _check, _full_like, _is_number, _torch_flags, _zeros_like
from .rule_step import RuleOptimizer

__all__ = ["Rprop"]


class Rprop(RuleOptimizer):
    r"""Resilient back-propagation: a step size per coordinate, grown by ``etas[1]`` while
    the gradient keeps its sign and shrunk by ``etas[0]`` when it flips, within
    ``step_sizes``; the parameter moves by ``-sign(g) * step``.

    ``maximize`` ascends the objective; ``foreach`` is accepted and ignored (xad has one
    update path per backend: in place on the host, one fused kernel per run of parameters
    where the backend fuses: :mod:`.multi_tensor`); ``capturable=True``, on CuPy, keeps
    the step counts on the device (:mod:`.capturable`, as ``xad.compile(...,
    cuda_graphs=True)`` does by itself; the rate is read only when a step size is made);
    ``differentiable`` must be ``False``.

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0], requires_grad=True)
        >>> opt = xad.optim.Rprop([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
        [0.9]
    """

    _complex_params = True

    def __init__(self, params: ParamsT, lr: float = 1e-2, etas: tuple = (0.5, 1.2),
                 step_sizes: tuple = (1e-6, 50), *, capturable: bool = False,
                 foreach: Any = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                                      **_torch_flags("Rprop", foreach, maximize,
                                                     differentiable, capturable=capturable)))

    def _validate(self, group: dict[str, Any]) -> None:
        lr, (em, ep) = group["lr"], group["etas"]
        _check(_is_number(lr) and lr >= 0, f"Invalid learning rate: {lr}")
        _check(0.0 < em < 1.0 < ep, f"Invalid eta values: {em}, {ep}")

    _rule = staticmethod(rprop_rule)
    _keys = ("prev", "step_size")

    def _numbers(self, group: dict[str, Any]) -> tuple[tuple, tuple]:
        return (), ()

    def _args(self, group: dict[str, Any], numbers: tuple) -> tuple:
        (em, ep), (lo, hi) = group["etas"], group["step_sizes"]
        return (em, ep, lo, hi)

    def _new_state(self, p: Tensor, group: dict[str, Any], step: Any) -> dict[str, Any]:
        """``p``'s state, made where it lacks it with the count ``step``."""
        st = self._state(p)
        if "prev" not in st:
            st.update(step=step, prev=_zeros_like(p), step_size=_full_like(p, group["lr"]))
        return st


Rprop._device_numbers = (learning_rate, 0, True, ())
