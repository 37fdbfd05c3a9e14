"""The step of an optimiser whose update is one rule of :mod:`.functional` (Adamax, NAdam,
RAdam, Adadelta, ASGD, Rprop), on the host and on a device from the same two functions:
its rule and the formula of its step's numbers (``derive`` of ``_device_numbers``).

On the host the formula gives Python numbers (``ns`` is :data:`~.capturable.HOST`) from
the step count and ``group["lr"]``, and the rule runs through the shared update path; on a
device (:mod:`.capturable`: ``capturable=True``, or inside ``xad.compile(...,
cuda_graphs=True)``, on CuPy) one kernel per group runs the formula on the device counts
and rate, and one fused kernel per parameter runs the rule reading those numbers from
device memory, so a CUDA graph holds the whole step.
"""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
from ..tensor import Tensor
from .capturable import HOST
from .functional import step_with_rule
from .fused import fused_update
from .optimizer import Optimizer

__all__ = ["RuleOptimizer"]


class RuleOptimizer(Optimizer):
    """An optimiser stated by ``_rule`` (see :mod:`.functional`) over its state tensors
    ``_keys``, with ``_device_numbers = (derive, k, True, carry)``; a subclass gives
    ``_numbers(group)`` (the formula's constants and flags), ``_args(group, numbers)`` (the
    rule's ``c``) and ``_new_state(p, group, step)``."""

    _rule: Any
    _keys: tuple[str, ...]
    _device_numbers: tuple[Any, ...]  # every rule optimiser has one

    def _numbers(self, group: dict[str, Any]) -> tuple[tuple, tuple]:
        raise NotImplementedError

    def _args(self, group: dict[str, Any], numbers: tuple) -> tuple:
        raise NotImplementedError

    def _new_state(self, p: Tensor, group: dict[str, Any], step: Any) -> dict[str, Any]:
        raise NotImplementedError

    def step(self, closure: Any = None) -> Any:
        """Update the parameters once; returns ``closure()`` if given."""
        if self._on_device():
            return self._step_on_device(closure)
        loss = self._closure(closure)
        derive, k, _, carry = type(self)._device_numbers
        with _ag.no_grad():
            for group in self.param_groups:
                consts, flags = self._numbers(group)
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    st = self._new_state(p, group, 0)
                    st["step"] = t = st["step"] + 1
                    values = derive(t, group["lr"], *[float(st[key]) for key, _ in carry],
                                    *consts, *flags, HOST)
                    for (key, _), v in zip(carry, values[k:]):
                        st[key] = v
                    step_with_rule(self._scratch, p, [st[key] for key in self._keys], p.grad,
                                   self._rule, self._args(group, values[:k]),
                                   group.get("maximize", False))
        return loss

    def _step_on_device(self, closure: Any) -> Any:
        """The step with its numbers on the device: one kernel per group advances the
        counts and computes the numbers, one per parameter updates."""
        loss, ds = self._closure(closure), self._device
        assert ds is not None  # step() comes here once _on_device() made it
        with _ag.no_grad():
            for gi, group, params in self._device_groups(self._new_state):
                ds.advance(gi, group, *self._numbers(group))
                for p in params:
                    st = self.state[p]
                    g = p.grad
                    assert g is not None  # _device_groups keeps those with a gradient
                    g = -g if group.get("maximize", False) else g
                    fused_update(p, self._rule, [st[key] for key in self._keys], g,
                                 (self._args(group, ds.numbers(gi, p)), p._backend.xp))
        return loss
