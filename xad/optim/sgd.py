"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
from ..context import context
from ..tensor import Tensor
from .capturable import rate_and_momentum
from .fused import fused_update
from .optimizer import (
    Optimizer,
    ParamsT,
    _apply,
    _check,
    _consts,
    _decay,
    _is_number,
    _torch_flags,
    _zeros_like,
)
from .scratch import product_into

__all__ = ["SGD", "sgd"]


class SGD(Optimizer):
    r"""Stochastic gradient descent (optionally with momentum), as ``torch.optim.SGD``.

    The update, for each parameter ``p`` with gradient ``g`` (``b`` is the momentum buffer,
    created at the first step as a copy of ``g``)::

        g = g + weight_decay * p                      if weight_decay != 0
        if momentum != 0:
            b = g                                     at the first step
            b = momentum * b + (1 - dampening) * g    afterwards
            g = g + momentum * b                      if nesterov
            g = b                                     otherwise
        p = p - lr * g

    ``maximize`` ascends the objective; ``foreach`` and ``fused`` are accepted and
    ignored (xad has one update path per backend: in place on the host, one
    fused kernel per run of parameters where the backend fuses: :mod:`.multi_tensor`);
    ``differentiable`` must be ``False``. Recorded by ``xad.compile(..., cuda_graphs=True)``
    on CuPy, the learning rate lives on the device (:mod:`.capturable`), so a CUDA graph
    holds the step.

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = xad.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> (w * w).sum().backward(); opt.step(); w.tolist()
        [0.800000011920929, -1.600000023841858]
    """

    _complex_params = True

    def __init__(self, params: ParamsT, lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False, *, maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      **_torch_flags("SGD", foreach, maximize, differentiable,
                                                     fused=fused)))

    def _validate(self, group: dict[str, Any]) -> None:
        lr, momentum, wd = group["lr"], group["momentum"], group["weight_decay"]
        _check(_is_number(lr) and lr >= 0, f"Invalid learning rate: {lr}")
        _check(_is_number(momentum) and momentum >= 0, f"Invalid momentum value: {momentum}")
        _check(_is_number(wd) and wd >= 0, f"Invalid weight_decay value: {wd}")
        _check(_is_number(group["dampening"]), f"Invalid dampening value: {group['dampening']}")
        if group["nesterov"]:
            _check(momentum > 0 and group["dampening"] == 0,
                   "Nesterov momentum requires a momentum and zero dampening")

    def step(self, closure: Any = None) -> Any:
        """Update the parameters once; returns ``closure()`` if given.

        Example:
            >>> import xad
            >>> w = xad.ones(1, requires_grad=True); opt = xad.optim.SGD([w], lr=0.5)
            >>> (w * w).sum().backward(); opt.step(); w.tolist()
            [0.0]
        """
        if self._on_device():
            return self._step_on_device(closure)
        loss = self._closure(closure)
        state = self.state
        with _ag.no_grad():
            for group in self.param_groups:
                lr, momentum, wd = group["lr"], group["momentum"], group["weight_decay"]
                dampening, nesterov = group["dampening"], group["nesterov"]
                last = None  # (backend, dtype) of the constants in c
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    b, dtype = p._backend, p._array.dtype
                    if last is None or b is not last[0] or dtype is not last[1]:
                        last = (b, dtype)
                        c = _sgd_consts(b, dtype, lr, momentum, dampening, wd)
                    buf, first = None, False
                    if momentum != 0:
                        st = state.get(p)
                        if st is None:
                            st = state[p] = {}
                        buf = st.get("momentum_buffer")
                        if buf is None:
                            buf = st["momentum_buffer"] = _zeros_like(p)
                            first = True
                    _apply(self._scratch, p, 2, _sgd_kernel, _sgd_rule, [buf], grad._array, c,
                           first, nesterov, b.xp, maximize=group.get("maximize", False))
        return loss

    def _skips_on_device(self) -> bool:
        """A momentum buffer's first step is ``b = g``; a skipped first step would leave a
        zero buffer whose next step, with dampening, is ``(1 - dampening) * g``."""
        return all(g["momentum"] == 0 or g["dampening"] == 0 for g in self.param_groups)

    def _step_on_device(self, closure: Any) -> Any:
        """The step with its learning rate on the device (:mod:`.capturable`): one kernel per
        group casts it to the parameters' dtypes, one per parameter updates. A momentum
        buffer's first step (``b = g``) is another kernel: inside ``xad.compile`` the call is
        recorded again at the next one."""
        loss, ds = self._closure(closure), self._device
        fresh: set[int] = set()
        assert ds is not None  # step() comes here once _on_device() made it
        groups = self._device_groups(lambda p, group, _: _new_buffer(self, p, group, fresh))
        rec = context.recorder
        if fresh and rec is not None and not rec.paused:
            rec.again = True
        with _ag.no_grad():
            for gi, group, params in groups:
                momentum, damp, wd = group["momentum"], group["dampening"], group["weight_decay"]
                ds.advance(gi, group, (), ())
                for p in params:
                    b = p._backend
                    c = (*ds.numbers(gi, p), *_consts(b, p._array.dtype, (1 - damp, wd)),
                         wd != 0, damp != 0)  # (the rate and momentum: uploaded)
                    buf = self.state[p]["momentum_buffer"] if momentum != 0 else None
                    g = p.grad
                    assert g is not None  # _device_groups keeps those with a gradient
                    g = -g if group.get("maximize", False) else g
                    fused_update(p, _sgd_rule, [buf], g, (c, id(p) in fresh, group["nesterov"],
                                                          b.xp))
        return loss


def _new_buffer(opt: SGD, p: Tensor, group: dict[str, Any], fresh: set[int]) -> None:
    if group["momentum"] != 0 and opt.state.get(p, {}).get("momentum_buffer") is None:
        opt.state.setdefault(p, {})["momentum_buffer"] = _zeros_like(p)
        fresh.add(id(p))


SGD._device_numbers = (rate_and_momentum, 2, False, (), ("momentum",))


def sgd(params: list[Tensor], grads: list[Tensor], momentum_buffers: list[Tensor | None], *,
        lr: float, momentum: float, dampening: float, weight_decay: float,
        nesterov: bool) -> None:
    """The functional SGD update (see :class:`SGD`); new buffers are written into
    ``momentum_buffers`` (a list with one entry, possibly ``None``, per parameter).

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0, -2.0]); bufs = [None]
        >>> xad.optim.sgd([w], [xad.tensor([0.5, 0.5])], bufs, lr=0.1, momentum=0.9,
        ...               dampening=0.0, weight_decay=0.0, nesterov=False)
        >>> w.tolist(), bufs[0].tolist()
        ([0.949999988079071, -2.049999952316284], [0.5, 0.5])
    """
    for i, (p, grad) in enumerate(zip(params, grads)):
        c = _sgd_consts(p._backend, p._array.dtype, lr, momentum, dampening, weight_decay)
        buf, first = None, False
        if momentum != 0:
            buf = momentum_buffers[i]
            if buf is None:
                buf = momentum_buffers[i] = _zeros_like(p)
                first = True
        _apply({}, p, 2, _sgd_kernel, _sgd_rule, [buf], grad._array, c, first, nesterov,
               p._backend.xp)


def _sgd_consts(b: Any, dtype: Any, lr: float, momentum: float, dampening: float,
                wd: float) -> tuple[Any, ...]:
    """``(lr, momentum, 1 - dampening, wd, wd != 0, dampening != 0)`` (numbers as 0-d arrays
    where ``b`` is mutable)."""
    return _consts(b, dtype, (lr, momentum, 1 - dampening, wd), wd != 0, dampening != 0)


def _sgd_kernel(rw: list[Any], g: Any, t: Any, gw: Any, c: tuple[Any, ...], first: bool,
                nesterov: bool, xp: Any) -> None:
    """The update of ``rw = [param, momentum buffer or None]`` in place (see ``_update``)."""
    lr, momentum, one_minus_damp, wd, has_wd, has_damp = c
    x, buf = rw
    small = t is None
    if has_wd:
        g = _decay(g, x, wd, gw)
    if buf is not None:
        if first:
            buf[...] = g
        else:
            buf *= momentum
            if not has_damp:
                buf += g
            elif small:
                buf += one_minus_damp * g
            else:
                product_into(t, g, one_minus_damp, xp)
                buf += t
        if nesterov:
            if small:
                g = g + momentum * buf
            else:
                product_into(t, buf, momentum, xp)
                t += g
                g = t
        else:
            g = buf
    if small:
        x -= lr * g
        return
    if g is not t and g is not gw:  # never scale the gradient or the momentum buffer
        product_into(t, g, lr, xp)
    else:
        g *= lr
        t = g
    x -= t


def _sgd_rule(x: Any, state: list[Any], g: Any, c: tuple[Any, ...], first: bool,
              nesterov: bool, xp: Any) -> tuple[Any, list[Any]]:
    """The SGD rule on arrays, as a pure function: the new parameter and state arrays."""
    lr, momentum, one_minus_damp, wd, has_wd, _ = c
    (buf,) = state
    if has_wd:
        g = g + wd * x
    if buf is not None:
        buf = g if first else momentum * buf + one_minus_damp * g
        g = g + momentum * buf if nesterov else buf
    return x - lr * g, [buf]
