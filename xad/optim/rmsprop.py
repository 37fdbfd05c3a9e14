"""RMSprop, optionally centred and with momentum."""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, _check, _is_number, _zeros_like

__all__ = ["RMSprop", "rmsprop"]


class RMSprop(Optimizer):
    r"""RMSprop, as ``torch.optim.RMSprop``.

    The update, for each parameter ``p`` with gradient ``g`` (state starts at zero)::

        g = g + weight_decay * p                  if weight_decay != 0
        s = alpha * s + (1 - alpha) * g * g
        if centered:
            a = alpha * a + (1 - alpha) * g
            d = sqrt(s - a * a) + eps
        else:
            d = sqrt(s) + eps
        if momentum > 0:
            b = momentum * b + g / d
            p = p - lr * b
        else:
            p = p - lr * g / d

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0], requires_grad=True)
        >>> opt = xad.optim.RMSprop([w], lr=0.01, alpha=0.75)
        >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
        [0.98]
    """

    def __init__(self, params: ParamsT, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                 centered: bool = False) -> None:
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered))

    def _validate(self, group: dict[str, Any]) -> None:
        lr, eps, alpha = group["lr"], group["eps"], group["alpha"]
        momentum, wd = group["momentum"], group["weight_decay"]
        _check(_is_number(lr) and lr >= 0, f"Invalid learning rate: {lr}")
        _check(_is_number(eps) and eps >= 0, f"Invalid epsilon value: {eps}")
        _check(_is_number(momentum) and momentum >= 0, f"Invalid momentum value: {momentum}")
        _check(_is_number(wd) and wd >= 0, f"Invalid weight_decay value: {wd}")
        _check(_is_number(alpha) and alpha >= 0, f"Invalid alpha value: {alpha}")

    def step(self, closure: Any = None) -> Any:
        """Update the parameters once; returns ``closure()`` if given.

        Example:
            >>> import xad
            >>> w = xad.ones(1, requires_grad=True); opt = xad.optim.RMSprop([w], lr=0.1)
            >>> (w * w).sum().backward(); opt.step(); w.tolist()[0] < 1
            True
        """
        loss = self._closure(closure)
        with _ag.no_grad():
            for group in self.param_groups:
                params, grads = self._params_with_grad(group)
                if not params:
                    continue
                centered, momentum = group["centered"], group["momentum"]
                sq, ga, bufs = [], [], []
                for p in params:
                    st = self.state.get(p)
                    if st is None or "square_avg" not in st:
                        st = self.state[p] = {"step": 0, "square_avg": _zeros_like(p)}
                    if momentum > 0 and "momentum_buffer" not in st:
                        st["momentum_buffer"] = _zeros_like(p)
                    if centered and "grad_avg" not in st:
                        st["grad_avg"] = _zeros_like(p)
                    st["step"] += 1
                    sq.append(st["square_avg"])
                    if centered:
                        ga.append(st["grad_avg"])
                    if momentum > 0:
                        bufs.append(st["momentum_buffer"])
                rmsprop(params, grads, sq, ga, bufs, lr=group["lr"], alpha=group["alpha"],
                        eps=group["eps"], weight_decay=group["weight_decay"],
                        momentum=momentum, centered=centered)
        return loss


def rmsprop(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
            grad_avgs: list[Tensor], momentum_buffers: list[Tensor], *, lr: float,
            alpha: float, eps: float, weight_decay: float, momentum: float,
            centered: bool) -> None:
    """The functional RMSprop update (see :class:`RMSprop`); state updated in place."""
    for i, (p, grad) in enumerate(zip(params, grads)):
        b = p._backend
        xp = b.xp
        g = grad.data
        x = p.data
        if weight_decay != 0:
            g = g + weight_decay * x
        s_t = square_avgs[i]
        if b.mutable:
            s = s_t.data
            s *= alpha
            gg = g * g
            gg *= 1 - alpha
            s += gg
            if centered:
                a = grad_avgs[i].data
                a *= alpha
                a += (1 - alpha) * g
                d = xp.sqrt(s - a * a)
            else:
                d = xp.sqrt(s)
            d += eps
            if momentum > 0:
                buf = momentum_buffers[i].data
                buf *= momentum
                buf += g / d
                x -= lr * buf
            else:
                upd = g / d
                upd *= lr
                x -= upd
        else:
            s = s_t.data = alpha * s_t.data + (1 - alpha) * (g * g)
            if centered:
                a = grad_avgs[i].data = alpha * grad_avgs[i].data + (1 - alpha) * g
                d = xp.sqrt(s - a * a) + eps
            else:
                d = xp.sqrt(s) + eps
            if momentum > 0:
                buf = momentum_buffers[i].data = momentum * momentum_buffers[i].data + g / d
                p.data = x - lr * buf
            else:
                p.data = x - lr * (g / d)
        p._version += 1
