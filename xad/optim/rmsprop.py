"""RMSprop, optionally centred and with momentum."""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
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
from .scratch import product_into, quotient_into, sqrt_into

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

    ``maximize`` ascends the objective; ``foreach`` is accepted and ignored (xad has one
    update path per backend: in place on the host, one fused kernel per run of parameters
    where the backend fuses: :mod:`.multi_tensor`); ``capturable=True``, on CuPy, keeps the
    step counts and learning rate on the device (:mod:`.capturable`: what a CUDA graph of
    the step needs, and what ``xad.compile(..., cuda_graphs=True)`` turns on);
    ``differentiable`` must be ``False``.

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0], requires_grad=True)
        >>> opt = xad.optim.RMSprop([w], lr=0.01, alpha=0.75)
        >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
        [0.98]
    """

    _complex_params = True

    def __init__(self, params: ParamsT, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                 centered: bool = False, capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered,
                                      **_torch_flags("RMSprop", foreach, maximize,
                                                     differentiable, capturable=capturable)))

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
        if self._on_device():
            return self._step_on_device(closure)
        loss = self._closure(closure)
        with _ag.no_grad():
            for group in self.param_groups:
                centered, momentum = group["centered"], group["momentum"]
                lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
                wd = group["weight_decay"]
                nbuf = 2 if wd != 0 else 1
                last = None  # (backend, dtype) of the constants in c
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    st = self._new_state(p, group, 0)
                    st["step"] += 1
                    b, dtype = p._backend, p._array.dtype
                    if last is None or b is not last[0] or dtype is not last[1]:
                        last = (b, dtype)
                        c = _rmsprop_consts(b, dtype, lr, alpha, eps, wd, momentum)
                    _apply(self._scratch, p, nbuf, _rmsprop_kernel, _rmsprop_rule,
                           [st["square_avg"], st.get("grad_avg") if centered else None,
                            st.get("momentum_buffer") if momentum > 0 else None],
                           grad._array, c, b.xp,
                           maximize=group.get("maximize", False))
        return loss

    def _step_on_device(self, closure: Any) -> Any:
        """The step with its counts and learning rate on the device (:mod:`.capturable`):
        one kernel per group advances the counts and casts the rate, one per parameter
        updates."""
        loss, ds = self._closure(closure), self._device
        assert ds is not None  # step() comes here once _on_device() made it
        with _ag.no_grad():
            for gi, group, params in self._device_groups(self._new_state):
                centered, momentum = group["centered"], group["momentum"]
                alpha, wd = group["alpha"], group["weight_decay"]
                ds.advance(gi, group, (), ())
                for p in params:
                    st, b = self.state[p], p._backend
                    lr, mom = ds.numbers(gi, p)  # uploaded: the rate and momentum
                    c = (lr, *_consts(b, p._array.dtype, (alpha, 1 - alpha, group["eps"], wd)),
                         mom, wd != 0)
                    g = p.grad
                    assert g is not None  # _device_groups keeps those with a gradient
                    g = -g if group.get("maximize", False) else g
                    fused_update(p, _rmsprop_rule, [
                        st["square_avg"], st.get("grad_avg") if centered else None,
                        st.get("momentum_buffer") if momentum > 0 else None], g, (c, b.xp))
        return loss

    def _new_state(self, p: Tensor, group: dict[str, Any], step: Any) -> dict[str, Any]:
        """``p``'s state, made where it lacks it with the count ``step``."""
        st = self.state.get(p)
        if st is None or "square_avg" not in st:
            st = self.state[p] = {"step": step, "square_avg": _zeros_like(p)}
        if group["momentum"] > 0 and "momentum_buffer" not in st:
            st["momentum_buffer"] = _zeros_like(p)
        if group["centered"] and "grad_avg" not in st:
            st["grad_avg"] = _zeros_like(p)
        return st


RMSprop._device_numbers = (rate_and_momentum, 2, True, (), ("momentum",))


def rmsprop(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
            grad_avgs: list[Tensor], momentum_buffers: list[Tensor], *, lr: float,
            alpha: float, eps: float, weight_decay: float, momentum: float,
            centered: bool) -> None:
    """The functional RMSprop update (see :class:`RMSprop`); state updated in place.

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0]); s = xad.zeros(1)
        >>> xad.optim.rmsprop([w], [xad.tensor([2.0])], [s], [], [], lr=0.01, alpha=0.75,
        ...                   eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False)
        >>> [round(v, 4) for v in w.tolist()], s.tolist()
        ([0.98], [1.0])
    """
    nbuf = 2 if weight_decay != 0 else 1
    for i, (p, grad) in enumerate(zip(params, grads)):
        c = _rmsprop_consts(p._backend, p._array.dtype, lr, alpha, eps, weight_decay, momentum)
        _apply({}, p, nbuf, _rmsprop_kernel, _rmsprop_rule,
               [square_avgs[i], grad_avgs[i] if centered else None,
                momentum_buffers[i] if momentum > 0 else None], grad._array, c, p._backend.xp)


def _rmsprop_consts(b: Any, dtype: Any, lr: float, alpha: float, eps: float, wd: float,
                    momentum: float) -> tuple[Any, ...]:
    """``(lr, alpha, 1 - alpha, eps, wd, momentum, wd != 0)`` (numbers as 0-d arrays where
    ``b`` is mutable)."""
    return _consts(b, dtype, (lr, alpha, 1 - alpha, eps, wd, momentum), wd != 0)


def _rmsprop_kernel(rw: list[Any], g: Any, t: Any, gw: Any, c: tuple[Any, ...],
                    xp: Any) -> None:
    """The update of ``rw = [param, square_avg, grad_avg or None, momentum buffer or None]``
    in place (see ``_update``)."""
    lr, alpha, one_minus_alpha, eps, wd, momentum, has_wd = c
    x, s, a, buf = rw
    small = t is None
    if has_wd:
        g = _decay(g, x, wd, gw)
    # s = alpha * s + (1 - alpha) * g * g
    if small:
        t = g * g
    else:
        product_into(t, g, g, xp)
    t *= one_minus_alpha
    s *= alpha
    s += t
    if a is not None:  # centred: a = alpha * a + (1 - alpha) * g, d = sqrt(s - a * a) + eps
        a -= g
        a *= alpha
        a += g
        if small:
            t = s - a * a
        else:
            product_into(t, a, a, xp)
            t -= s
            t *= -1
        t **= 0.5
    elif small:
        t = s ** 0.5
    else:
        sqrt_into(t, s, xp)
    t += eps
    # t is d: x -= lr * b with b = momentum * b + g / d, or x -= lr * g / d
    if small:
        t = g / t
    else:
        quotient_into(t, g, xp)
    if buf is not None:
        buf *= momentum
        buf += t
        if small:
            t = lr * buf
        else:
            product_into(t, buf, lr, xp)
    else:
        t *= lr
    x -= t


def _rmsprop_rule(x: Any, state: list[Any], g: Any, c: tuple[Any, ...],
                  xp: Any) -> tuple[Any, list[Any]]:
    """The RMSprop rule on arrays, as a pure function: the new parameter and state arrays."""
    lr, alpha, one_minus_alpha, eps, wd, momentum, has_wd = c
    s, a, buf = state
    if has_wd:
        g = g + wd * x
    s = alpha * s + one_minus_alpha * (g * g)
    if a is not None:
        a = alpha * a + one_minus_alpha * g
        d = (s - a * a) ** 0.5 + eps
    else:
        d = s ** 0.5 + eps
    if buf is not None:
        buf = momentum * buf + g / d
        return x - lr * buf, [s, a, buf]
    return x - lr * (g / d), [s, a, buf]
