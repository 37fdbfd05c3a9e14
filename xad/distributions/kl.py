"""``kl_divergence(p, q)`` for pairs of distributions, and ``register_kl`` to add pairs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import linalg as _la
from .. import ops as _ops
from ..tensor import Tensor
from .categorical import Bernoulli, Categorical
from .distribution import Distribution
from .gamma import Beta, Dirichlet, Gamma
from .independent import Independent
from .multivariate_normal import MultivariateNormal, tril_solve
from .normal import Normal, Uniform
from .special import digamma, lgamma

__all__ = ["kl_divergence", "register_kl"]

_KL: dict[tuple[type, type], Callable[[Any, Any], Tensor]] = {}


def register_kl(type_p: type, type_q: type) -> Callable[[Callable[..., Tensor]], Any]:
    """Decorator: ``fn(p, q)`` computes ``KL(p || q)`` for ``p: type_p``, ``q: type_q``."""
    def add(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
        _KL[type_p, type_q] = fn
        return fn
    return add


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """``KL(p || q) = E_p[log p(x) - log q(x)]``, in closed form, per batch element.

    Example:
        >>> import xad
        >>> from xad.distributions import Normal, kl_divergence
        >>> round(kl_divergence(Normal(0.0, 1.0), Normal(1.0, 2.0)).item(), 4)
        0.4431
    """
    for tp in type(p).__mro__:
        for tq in type(q).__mro__:
            if (tp, tq) in _KL:
                return _KL[tp, tq](p, q)
    raise NotImplementedError(f"kl_divergence: no closed form for {type(p).__name__} || "
                              f"{type(q).__name__}; xad has "
                              f"{', '.join(f'{a.__name__}-{b.__name__}' for a, b in _KL)}")


@register_kl(Normal, Normal)
def _normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - _ops.log(var_ratio))


@register_kl(Uniform, Uniform)
def _uniform(p: Uniform, q: Uniform) -> Tensor:
    out = _ops.log((q.high - q.low) / (p.high - p.low))
    return _ops.where((q.low > p.low) | (q.high < p.high), float("inf"), out)


@register_kl(Categorical, Categorical)
def _categorical(p: Categorical, q: Categorical) -> Tensor:
    t = _ops.where(q.probs == 0, float("inf"), p.probs * (p.logits - q.logits))
    return _ops.sum(_ops.where(p.probs == 0, 0.0, t), axis=-1)


@register_kl(Bernoulli, Bernoulli)
def _bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    sp = _ops.logaddexp
    inf = float("inf")
    # PyTorch's: infinite where q gives no mass to an outcome p has, 0 where p has none
    t1 = _ops.where(q.probs == 0, inf, p.probs * (sp(0.0, -q.logits) - sp(0.0, -p.logits)))
    t2 = _ops.where(q.probs == 1, inf, (1 - p.probs) * (sp(0.0, q.logits) - sp(0.0, p.logits)))
    return _ops.where(p.probs == 0, 0.0, t1) + _ops.where(p.probs == 1, 0.0, t2)


@register_kl(Beta, Beta)
def _beta(p: Beta, q: Beta) -> Tensor:
    a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    s1, s2 = a1 + b1, a2 + b2
    return (lgamma(a2) + lgamma(b2) + lgamma(s1) - lgamma(a1) - lgamma(b1) - lgamma(s2)
            + (a1 - a2) * digamma(a1) + (b1 - b2) * digamma(b1) + (s2 - s1) * digamma(s1))


@register_kl(Gamma, Gamma)
def _gamma(p: Gamma, q: Gamma) -> Tensor:
    a1, r1, a2, r2 = p.concentration, p.rate, q.concentration, q.rate
    return (a2 * _ops.log(r1 / r2) + lgamma(a2) - lgamma(a1) + (a1 - a2) * digamma(a1)
            + (r2 - r1) * a1 / r1)


@register_kl(Dirichlet, Dirichlet)
def _dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    a, b = p.concentration, q.concentration
    a0 = _ops.sum(a, axis=-1, keepdims=True)
    t = (a - b) * (digamma(a) - digamma(a0))
    return (_ops.sum(t + lgamma(b) - lgamma(a), axis=-1) + lgamma(a0[..., 0])
            - lgamma(_ops.sum(b, axis=-1)))


@register_kl(MultivariateNormal, MultivariateNormal)
def _mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    k = p.event_shape[0]
    lp, lq = _ops.broadcast_arrays(p._tril, _ops.tril(q._tril))
    ratio = _la.solve(lq, lp)  # Lq^-1 Lp: its squared sum is tr(Sq^-1 Sp)
    m = tril_solve(q._tril, q.loc - p.loc)
    trace = _ops.sum(ratio ** 2, axis=(-2, -1))
    log_det = q._half_log_det() - p._half_log_det()
    out = 0.5 * (trace + _ops.sum(m * m, axis=-1) - k) + log_det
    return _ops.broadcast_to(out, tuple(m.shape[:-1]))


@register_kl(Independent, Independent)
def _independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("kl_divergence: Independent distributions that reinterpret "
                                  "different numbers of batch axes")
    return p._sum(kl_divergence(p.base_dist, q.base_dist))
