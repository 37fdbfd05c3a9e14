"""Adagrad: per-coordinate learning rates from the running sum of squared gradients."""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
from ..tensor import Tensor
from .fused import fused_update
from .optimizer import (
    Optimizer,
    ParamsT,
    _apply,
    _check,
    _consts,
    _decay,
    _full_like,
    _is_number,
    _torch_flags,
)
from .scratch import product_into, quotient_into, sqrt_into

__all__ = ["Adagrad", "adagrad"]


class Adagrad(Optimizer):
    r"""Adagrad, as ``torch.optim.Adagrad``.

    The update at step ``t`` (from 1), for each parameter ``p`` with gradient ``g``; the
    sum ``s`` starts at its group's ``initial_accumulator_value`` (PyTorch 2.13 starts every
    group's at the constructor's, ignoring a group's own: its documented per-group options
    are followed here)::

        g = g + weight_decay * p                  if weight_decay != 0
        clr = lr / (1 + (t - 1) * lr_decay)
        s = s + g * g
        p = p - clr * g / (sqrt(s) + eps)

    ``maximize`` ascends the objective; ``foreach`` and ``fused`` are accepted and
    ignored (xad has one update path per backend: in place on the host, one
    fused kernel per run of parameters where the backend fuses: :mod:`.multi_tensor`);
    ``differentiable`` must be ``False``. Inside ``xad.compile(..., cuda_graphs=True)`` on
    CuPy the step counts, the decayed rate and the learning rate live on the device
    (:mod:`.capturable`).

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0], requires_grad=True)
        >>> opt = xad.optim.Adagrad([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
        [0.9]
    """

    _complex_params = True

    def __init__(self, params: ParamsT, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, **_torch_flags("Adagrad", foreach, maximize,
                                                              differentiable, fused=fused)))
        self._made = True  # a group added later gets its state at its first gradient

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
        # as PyTorch: the state of the constructor's groups exists from the start (so a
        # fresh state_dict lists it); a group added by add_param_group makes it lazily
        if getattr(self, "_made", False):
            return
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
        if self._on_device():
            return self._step_on_device(closure)
        loss = self._closure(closure)
        with _ag.no_grad():
            for group in self.param_groups:
                lr, lr_decay, eps = group["lr"], group["lr_decay"], group["eps"]
                wd = group["weight_decay"]
                nbuf = 2 if wd != 0 else 1
                last = None  # (step, backend, dtype) of the constants in c
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    st = self._new_state(p, group, 0)
                    step = st["step"] = st["step"] + 1
                    b, dtype = p._backend, p._array.dtype
                    if last is None or step != last[0] or b is not last[1] \
                            or dtype is not last[2]:
                        last = (step, b, dtype)
                        c = _adagrad_consts(b, dtype, step, lr, lr_decay, wd, eps)
                    _apply(self._scratch, p, nbuf, _adagrad_kernel, _adagrad_rule, [st["sum"]],
                           grad._array, c, b.xp,
                           maximize=group.get("maximize", False))
        return loss

    def _step_on_device(self, closure: Any) -> Any:
        """The step with its numbers on the device (:mod:`.capturable`): one kernel per
        group advances the counts and computes the decayed rate, one per parameter
        updates."""
        loss, ds = self._closure(closure), self._device
        assert ds is not None  # step() comes here once _on_device() made it
        with _ag.no_grad():
            for gi, group, params in self._device_groups(self._new_state):
                wd = group["weight_decay"]
                ds.advance(gi, group, (group["lr_decay"],), ())
                for p in params:
                    b = p._backend
                    c = (*ds.numbers(gi, p), *_consts(b, p._array.dtype, (wd, group["eps"]),
                                                      wd != 0))
                    g = p.grad
                    assert g is not None  # _device_groups keeps those with a gradient
                    g = -g if group.get("maximize", False) else g
                    fused_update(p, _adagrad_rule, [self.state[p]["sum"]], g, (c, b.xp))
        return loss

    def _new_state(self, p: Tensor, group: dict[str, Any], step: Any) -> dict[str, Any]:
        """``p``'s state, made where it lacks it with the count ``step``."""
        st = self.state.get(p)
        if st is None or "sum" not in st:
            st = self.state[p] = {
                "step": step, "sum": _full_like(p, group["initial_accumulator_value"])}
        return st


def _decayed_rate(step: Any, lr: Any, lr_decay: Any, ns: Any) -> tuple[Any]:
    """Adagrad's device number ``lr / (1 + (step - 1) * lr_decay)``, the host's formula."""
    return (lr / (1 + (step - 1) * lr_decay),)


Adagrad._device_numbers = (_decayed_rate, 1)


def adagrad(params: list[Tensor], grads: list[Tensor], state_sums: list[Tensor],
            steps: list[int], *, lr: float, lr_decay: float, weight_decay: float,
            eps: float) -> None:
    """The functional Adagrad update (see :class:`Adagrad`); ``steps`` count from 1.

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0]); s = xad.zeros(1)
        >>> xad.optim.adagrad([w], [xad.tensor([2.0])], [s], [1], lr=0.1, lr_decay=0.0,
        ...                   weight_decay=0.0, eps=1e-10)
        >>> [round(v, 4) for v in w.tolist()], s.tolist()
        ([0.9], [4.0])
    """
    nbuf = 2 if weight_decay != 0 else 1
    for i, (p, grad) in enumerate(zip(params, grads)):
        c = _adagrad_consts(p._backend, p._array.dtype, steps[i], lr, lr_decay, weight_decay, eps)
        _apply({}, p, nbuf, _adagrad_kernel, _adagrad_rule, [state_sums[i]], grad._array, c,
               p._backend.xp)


def _adagrad_consts(b: Any, dtype: Any, step: int, lr: float, lr_decay: float, wd: float,
                    eps: float) -> tuple[Any, ...]:
    """``(clr, wd, eps, wd != 0)`` with ``clr = lr / (1 + (step - 1) * lr_decay)`` (numbers
    as 0-d arrays where ``b`` is mutable)."""
    return _consts(b, dtype, (lr / (1 + (step - 1) * lr_decay), wd, eps), wd != 0)


def _adagrad_kernel(rw: list[Any], g: Any, t: Any, gw: Any, c: tuple[Any, ...],
                    xp: Any) -> None:
    """The update of ``rw = [param, sum]`` in place (see ``_update``)."""
    clr, wd, eps, has_wd = c
    x, s = rw
    small = t is None
    if has_wd:
        g = _decay(g, x, wd, gw)
    # s += g * g; x -= clr * g / (sqrt(s) + eps)
    if small:
        s += g * g
        t = s ** 0.5
        t += eps
        t = g / t
    else:
        product_into(t, g, g, xp)
        s += t
        sqrt_into(t, s, xp)
        t += eps
        quotient_into(t, g, xp)
    t *= clr
    x -= t


def _adagrad_rule(x: Any, state: list[Any], g: Any, c: tuple[Any, ...],
                  xp: Any) -> tuple[Any, list[Any]]:
    """The Adagrad rule on arrays, as a pure function: the new parameter and state arrays."""
    clr, wd, eps, has_wd = c
    (s,) = state
    if has_wd:
        g = g + wd * x
    s = s + g * g
    return x - clr * g / (s ** 0.5 + eps), [s]
