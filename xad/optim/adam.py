"""Adam and AdamW (decoupled weight decay), with the AMSGrad variant."""

from __future__ import annotations

import math
from typing import Any

from .. import autograd as _ag
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, _check, _is_number, _zeros_like

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

    Example:
        >>> import xad
        >>> w = xad.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = xad.optim.Adam([w], lr=0.1)
        >>> (w * w).sum().backward(); opt.step(); [round(v, 4) for v in w.tolist()]
        [0.9, -1.9]
    """

    _decoupled = False

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False) -> None:
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad))

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
        loss = self._closure(closure)
        with _ag.no_grad():
            for group in self.param_groups:
                params, grads = self._params_with_grad(group)
                if not params:
                    continue
                amsgrad = group["amsgrad"]
                m, v, vmax, steps = [], [], [], []
                for p in params:
                    st = self.state.get(p)
                    if st is None or "exp_avg" not in st:
                        st = self.state[p] = {"step": 0, "exp_avg": _zeros_like(p),
                                              "exp_avg_sq": _zeros_like(p)}
                    if amsgrad and "max_exp_avg_sq" not in st:
                        st["max_exp_avg_sq"] = _zeros_like(p)
                    st["step"] += 1
                    steps.append(st["step"])
                    m.append(st["exp_avg"])
                    v.append(st["exp_avg_sq"])
                    if amsgrad:
                        vmax.append(st["max_exp_avg_sq"])
                beta1, beta2 = group["betas"]
                adam(params, grads, m, v, vmax, steps, amsgrad=amsgrad, beta1=beta1,
                     beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
                     eps=group["eps"], decoupled_weight_decay=self._decoupled)
        return loss


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
                 weight_decay: float = 1e-2, amsgrad: bool = False) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad)


def adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
         exp_avg_sqs: list[Tensor], max_exp_avg_sqs: list[Tensor], steps: list[int], *,
         amsgrad: bool, beta1: float, beta2: float, lr: float, weight_decay: float,
         eps: float, decoupled_weight_decay: bool = False) -> None:
    """The functional Adam/AdamW update (see :class:`Adam`); ``steps`` are the step numbers
    after this step (from 1). State tensors are updated in place (rebound on JAX)."""
    for i, (p, grad) in enumerate(zip(params, grads)):
        b = p._backend
        xp = b.xp
        g = grad.data
        x = p.data
        step = steps[i]
        bc1 = 1 - beta1 ** step
        bc2_sqrt = math.sqrt(1 - beta2 ** step)
        # lr/bc1 * m / (sqrt(v)/bc2_sqrt + eps) == step_size * m / (sqrt(v) + eps')
        step_size = lr * bc2_sqrt / bc1
        eps_hat = eps * bc2_sqrt
        m_t, v_t = exp_avgs[i], exp_avg_sqs[i]
        if b.mutable:
            if weight_decay != 0:
                if decoupled_weight_decay:
                    x *= 1 - lr * weight_decay
                else:
                    g = g + weight_decay * x
            m = m_t.data
            m *= beta1
            m += (1 - beta1) * g
            v = v_t.data
            v *= beta2
            sq = g * g
            sq *= 1 - beta2
            v += sq
            if amsgrad:
                v = max_exp_avg_sqs[i].data = xp.maximum(max_exp_avg_sqs[i].data, v)
            denom = xp.sqrt(v)
            denom += eps_hat
            upd = m / denom
            upd *= step_size
            x -= upd
        else:
            if weight_decay != 0:
                if decoupled_weight_decay:
                    x = x * (1 - lr * weight_decay)
                else:
                    g = g + weight_decay * x
            m = m_t.data = beta1 * m_t.data + (1 - beta1) * g
            v = v_t.data = beta2 * v_t.data + (1 - beta2) * (g * g)
            if amsgrad:
                v = max_exp_avg_sqs[i].data = xp.maximum(max_exp_avg_sqs[i].data, v)
            p.data = x - step_size * m / (xp.sqrt(v) + eps_hat)
        p._version += 1
