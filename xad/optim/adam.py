"""Adam and AdamW (decoupled weight decay), with the AMSGrad variant."""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
from ..tensor import Tensor
from .capturable import HOST
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

__all__ = ["Adam", "AdamW", "adam"]


class Adam(Optimizer):
    r"""Adam, as ``torch.optim.Adam``.

    The update at step ``t`` (from 1), for each parameter ``p`` with gradient ``g``::

        g = g + weight_decay * p                       (AdamW instead: p = p * (1 - lr * wd))
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        v_max = maximum(v_max, v); v_hat = v_max       if amsgrad
        v_hat = v                                      otherwise
        p = p - lr / (1 - beta1**t) * m / (sqrt(v_hat) / sqrt(1 - beta2**t) + eps)

    ``decoupled_weight_decay=True`` (a group option, as PyTorch's) is AdamW's decay;
    ``maximize`` ascends the objective; ``foreach`` and ``fused`` are accepted and ignored
    (xad has one update path per backend: in place on the host, one fused kernel per
    run of parameters where the backend fuses: :mod:`.multi_tensor`); ``capturable=True``,
    on CuPy, keeps the step count, bias corrections and learning rate on the device
    (:mod:`.capturable`: what ``xad.compile(..., cuda_graphs=True)`` turns on by itself,
    so a CUDA graph holds the step); ``differentiable`` must be ``False``.

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = xad.optim.Adam([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
        [0.9, -1.9]
    """

    _decoupled = False
    _complex_params = True

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      decoupled_weight_decay=bool(decoupled_weight_decay)
                                      or self._decoupled,
                                      **_torch_flags(type(self).__name__, foreach, maximize,
                                                     differentiable, capturable=capturable,
                                                     fused=fused)))

    def _validate(self, group: dict[str, Any]) -> None:
        lr, eps, betas, wd = group["lr"], group["eps"], group["betas"], group["weight_decay"]
        _check(_is_number(lr) and lr >= 0, f"Invalid learning rate: {lr}")
        _check(_is_number(eps) and eps >= 0, f"Invalid epsilon value: {eps}")
        _check(isinstance(betas, (tuple, list)) and len(betas) == 2,
               f"Invalid betas: {betas!r} (expected a pair (beta1, beta2))")
        for i, beta in enumerate(betas):
            _check(_is_number(beta) and 0.0 <= beta < 1.0,
                   f"Invalid beta parameter at index {i}: {beta}")
        _check(_is_number(wd) and wd >= 0, f"Invalid weight_decay value: {wd}")

    def step(self, closure: Any = None) -> Any:
        """Update the parameters once; returns ``closure()`` if given.

        Example:
            >>> import xad
            >>> w = xad.ones(1, requires_grad=True); opt = xad.optim.Adam([w], lr=0.5)
            >>> (w * w).sum().backward(); opt.step(); w.tolist()
            [0.5]
        """
        if self._on_device():
            return self._step_on_device(closure)
        loss = self._closure(closure)
        state = self.state
        with _ag.no_grad():
            for group in self.param_groups:
                amsgrad, decoupled = group["amsgrad"], self._decoupled_in(group)
                beta1, beta2 = group["betas"]
                lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
                nbuf = 2 if wd != 0 and not decoupled else 1
                last = None  # (step, backend, dtype) of the constants in c
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    st = state.get(p)
                    if st is None or "exp_avg" not in st:
                        st = state[p] = {"step": 0, "exp_avg": _zeros_like(p),
                                         "exp_avg_sq": _zeros_like(p)}
                    if amsgrad and "max_exp_avg_sq" not in st:
                        st["max_exp_avg_sq"] = _zeros_like(p)
                    step = st["step"] = st["step"] + 1
                    b, dtype = p._backend, p._array.dtype
                    if last is None or step != last[0] or b is not last[1] \
                            or dtype is not last[2]:
                        last = (step, b, dtype)
                        c = _adam_consts(b, dtype, step, beta1, beta2, lr, wd, eps, decoupled)
                    _apply(self._scratch, p, nbuf, _adam_kernel, _adam_rule,
                           [st["exp_avg"], st["exp_avg_sq"], st["max_exp_avg_sq"] if amsgrad
                            else None], grad._array, decoupled, c, b.xp,
                           maximize=group.get("maximize", False))
        return loss


    def _step_on_device(self, closure: Any) -> Any:
        """The step with its numbers on the device (:mod:`.capturable`): one kernel per
        group for the counts and bias corrections, one per parameter for the update."""
        loss = self._closure(closure)
        ds = self._device
        assert ds is not None  # step() comes here once _on_device() made it
        with _ag.no_grad():
            for gi, group, params in self._device_groups(self._new_state):
                beta1, beta2 = group["betas"]
                decoupled = self._decoupled_in(group)
                wd = group["weight_decay"]
                ds.advance(gi, group, (group["eps"], wd), (decoupled,))  # betas: uploaded
                for p in params:
                    st, b = self.state[p], p._backend
                    c = (*ds.numbers(gi, p), wd != 0)
                    g = p.grad
                    assert g is not None  # _device_groups keeps those with a gradient
                    g = -g if group.get("maximize", False) else g
                    fused_update(p, _adam_rule, [st["exp_avg"], st["exp_avg_sq"],
                                                 st.get("max_exp_avg_sq") if group["amsgrad"]
                                                 else None], g, (decoupled, c, b.xp))
        return loss

    def _decoupled_in(self, group: dict[str, Any]) -> bool:
        """Whether ``group`` decays as AdamW (a state dict saved without the key: the
        class's own way)."""
        return bool(group.get("decoupled_weight_decay", self._decoupled))

    def _new_state(self, p: Tensor, group: dict[str, Any], step: Any) -> None:
        """``p``'s state where it lacks it, its count ``step``."""
        st = self.state.get(p)
        if st is None or "exp_avg" not in st:
            st = self.state[p] = {"step": step, "exp_avg": _zeros_like(p),
                                  "exp_avg_sq": _zeros_like(p)}
        if group["amsgrad"] and "max_exp_avg_sq" not in st:
            st["max_exp_avg_sq"] = _zeros_like(p)


class AdamW(Adam):
    r"""Adam with decoupled weight decay, as ``torch.optim.AdamW`` (``weight_decay=1e-2``).

    The update is Adam's (see :class:`Adam`) with the gradient left alone and, first::

        p = p * (1 - lr * weight_decay)

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0], requires_grad=True)
        >>> opt = xad.optim.AdamW([w], lr=0.1, weight_decay=0.5)
        >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
        [0.85]
    """

    _decoupled = True

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused)


def adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
         exp_avg_sqs: list[Tensor], max_exp_avg_sqs: list[Tensor], steps: list[int], *,
         amsgrad: bool, beta1: float, beta2: float, lr: float, weight_decay: float,
         eps: float, decoupled_weight_decay: bool = False) -> None:
    """The functional Adam/AdamW update (see :class:`Adam`); ``steps`` are the step numbers
    after this step (from 1). State tensors are updated in place (rebound on JAX).

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0, -2.0]); g = xad.tensor([0.5, -0.5])
        >>> m, v = xad.zeros(2), xad.zeros(2)
        >>> xad.optim.adam([w], [g], [m], [v], [], [1], amsgrad=False, beta1=0.9,
        ...                beta2=0.999, lr=0.1, weight_decay=0.0, eps=1e-8)
        >>> [round(x, 4) for x in w.tolist()]
        [0.9, -1.9]
    """
    nbuf = 2 if weight_decay != 0 and not decoupled_weight_decay else 1
    for i, (p, grad) in enumerate(zip(params, grads)):
        b = p._backend
        c = _adam_consts(b, p._array.dtype, steps[i], beta1, beta2, lr, weight_decay, eps,
                         decoupled_weight_decay)
        _apply({}, p, nbuf, _adam_kernel, _adam_rule,
               [exp_avgs[i], exp_avg_sqs[i], max_exp_avg_sqs[i] if amsgrad else None],
               grad._array, decoupled_weight_decay, c, b.xp)


def _adam_consts(b: Any, dtype: Any, step: int, beta1: float, beta2: float, lr: float,
                 wd: float, eps: float, decoupled: bool) -> tuple[Any, ...]:
    """``(beta1, 1 - beta1, beta2, 1 - beta2, step_size, eps_hat, wd_factor, wd != 0)``, as
    0-d arrays where ``b`` is mutable (see :func:`_adam_scalars`)."""
    return _consts(b, dtype, _adam_numbers(step, lr, beta1, beta2, eps, wd, decoupled,
                                           HOST), wd != 0)


def _adam_numbers(step: Any, lr: Any, beta1: Any, beta2: Any, eps: float, wd: float,
                  decoupled: bool, ns: Any) -> tuple[Any, ...]:
    """``(beta1, 1 - beta1, beta2, 1 - beta2, step_size, eps_hat, wd_factor)`` at step
    ``step``, with ``lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps) == step_size * m / (sqrt(v)
    + eps_hat)`` (``bc`` the bias corrections) and ``wd_factor`` ``1 - lr * wd``
    (decoupled) or ``wd``: Python numbers on the host path (``ns``
    :data:`~.capturable.HOST`), device values inside the kernel of :mod:`.capturable`
    (where ``betas`` are uploaded: a scheduler that cycles them records nothing again)."""
    bc2_sqrt = ns.sqrt(1 - beta2 ** step)
    return (beta1, 1 - beta1, beta2, 1 - beta2, lr * bc2_sqrt / (1 - beta1 ** step),
            eps * bc2_sqrt, 1 - lr * wd if decoupled else wd)


def _adam_kernel(rw: list[Any], g: Any, t: Any, gw: Any, decoupled: bool, c: tuple[Any, ...],
                 xp: Any) -> None:
    """The update of arrays ``rw = [param, m, v, vmax or None]`` in place, reading ``g``, with
    scratch arrays ``t`` and ``gw`` (the decayed gradient) or, where ``t`` is ``None``, fresh
    temporaries (see ``_update``)."""
    beta1, one_minus_beta1, beta2, one_minus_beta2, step_size, eps_hat, wdf, has_wd = c
    x, m, v, vm = rw
    small = t is None
    if has_wd:
        if decoupled:
            x *= wdf
        else:
            g = _decay(g, x, wdf, gw)
    # m = beta1 * m + (1 - beta1) * g
    m *= beta1
    if small:
        m += one_minus_beta1 * g
    else:
        product_into(t, g, one_minus_beta1, xp)
        m += t
    # v = beta2 * v + (1 - beta2) * g * g
    if small:
        t = g * g
    else:
        product_into(t, g, g, xp)
    t *= one_minus_beta2
    v *= beta2
    v += t
    if vm is not None:
        vm[...] = xp.maximum(vm, v)  # no in-place maximum in the standard
        v = vm
    # x -= step_size * m / (sqrt(v) + eps_hat)
    if small:
        t = v ** 0.5
        t += eps_hat
        t = m / t
    else:
        sqrt_into(t, v, xp)
        t += eps_hat
        quotient_into(t, m, xp)  # the standard has no out=: m / t would be a new array
    t *= step_size
    x -= t


def _adam_rule(x: Any, state: list[Any], g: Any, decoupled: bool, c: tuple[Any, ...],
               xp: Any) -> tuple[Any, list[Any]]:
    """The Adam/AdamW rule on arrays, as a pure function: the new parameter and state."""
    beta1, one_minus_beta1, beta2, one_minus_beta2, step_size, eps_hat, wdf, has_wd = c
    m, v, vmax = state
    if has_wd:
        if decoupled:
            x = x * wdf
        else:
            g = g + wdf * x
    m = beta1 * m + one_minus_beta1 * g
    v = beta2 * v + one_minus_beta2 * (g * g)
    if vmax is not None:
        vmax = xp.maximum(vmax, v)
        return x - step_size * m / (vmax ** 0.5 + eps_hat), [m, v, vmax]
    return x - step_size * m / (v ** 0.5 + eps_hat), [m, v, vmax]


Adam._device_numbers = (_adam_numbers, 7, True, (), ("betas",))
