"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, _check, _copy_array, _is_number

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

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = xad.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> (w * w).sum().backward(); opt.step(); w.tolist()
        [0.800000011920929, -1.600000023841858]
    """

    def __init__(self, params: ParamsT, lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0,
                 nesterov: bool = False) -> None:
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov))

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
        loss = self._closure(closure)
        with _ag.no_grad():
            for group in self.param_groups:
                params, grads = self._params_with_grad(group)
                if not params:
                    continue
                momentum = group["momentum"]
                bufs = [self.state[p].get("momentum_buffer") if p in self.state else None
                        for p in params] if momentum != 0 else []
                sgd(params, grads, bufs, lr=group["lr"], momentum=momentum,
                    dampening=group["dampening"], weight_decay=group["weight_decay"],
                    nesterov=group["nesterov"])
                if momentum != 0:
                    for p, b in zip(params, bufs):
                        self._state(p)["momentum_buffer"] = b
        return loss


def sgd(params: list[Tensor], grads: list[Tensor], momentum_buffers: list[Tensor | None], *,
        lr: float, momentum: float, dampening: float, weight_decay: float,
        nesterov: bool) -> None:
    """The functional SGD update (see :class:`SGD`); new buffers are written into
    ``momentum_buffers`` (a list with one entry, possibly ``None``, per parameter)."""
    for i, (p, grad) in enumerate(zip(params, grads)):
        b = p._backend
        g = grad.data
        x = p.data
        if weight_decay != 0:
            g = g + weight_decay * x
        if momentum != 0:
            buf = momentum_buffers[i]
            if buf is None:
                buf = momentum_buffers[i] = Tensor._make(_copy_array(b, g), b)
            elif b.mutable:
                m = buf.data
                m *= momentum
                m += g if dampening == 0 else (1 - dampening) * g
            else:
                buf.data = momentum * buf.data + (1 - dampening) * g
            g = g + momentum * buf.data if nesterov else buf.data
        if b.mutable:
            x -= lr * g
        else:
            p.data = x - lr * g
        p._version += 1
