"""``Rprop``, as ``torch.optim.Rprop`` (names, defaults, state keys); its rule is
:func:`xad.optim.functional.rprop_rule`."""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
from .functional import rprop_rule, step_with_rule
from .optimizer import Optimizer, ParamsT, _check, _full_like, _is_number, _torch_flags, _zeros_like

__all__ = ["Rprop"]


class Rprop(Optimizer):
    r"""Resilient back-propagation: a step size per coordinate, grown by ``etas[1]`` while
    the gradient keeps its sign and shrunk by ``etas[0]`` when it flips, within
    ``step_sizes``; the parameter moves by ``-sign(g) * step``.

    ``maximize`` ascends the objective; ``foreach`` and ``capturable`` are accepted and
    ignored (xad has one update path per backend: in place on the host, one
    fused kernel per run of parameters where the backend fuses: :mod:`.multi_tensor`);
    ``differentiable`` must be ``False``.

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0], requires_grad=True)
        >>> opt = xad.optim.Rprop([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
        [0.9]
    """

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

    def step(self, closure: Any = None) -> Any:
        """Update the parameters once; returns ``closure()`` if given."""
        loss = self._closure(closure)
        with _ag.no_grad():
            for group in self.param_groups:
                (em, ep), (lo, hi) = group["etas"], group["step_sizes"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    st = self._state(p)
                    if "prev" not in st:
                        st.update(step=0, prev=_zeros_like(p),
                                  step_size=_full_like(p, group["lr"]))
                    st["step"] = st["step"] + 1
                    step_with_rule(self._scratch, p, [st["prev"], st["step_size"]], p.grad,
                                   rprop_rule, (em, ep, lo, hi),
                                   group.get("maximize", False))
        return loss
