"""``kl_divergence`` pairs PyTorch registers among the families of ``exponential``,
``location_scale``, ``counts``, ``one_hot``, ``continuous_bernoulli`` and
``lowrank_multivariate_normal``, and its cross-family pairs (those with no density
overlap are ``inf``), in PyTorch's formulas."""

from __future__ import annotations

import math

from .. import factories as _f
from .. import ops as _ops
from ..tensor import Tensor
from .categorical import Bernoulli
from .continuous_bernoulli import ContinuousBernoulli
from .counts import Binomial, Geometric, Poisson
from .exponential import Exponential
from .gamma import Beta, Gamma
from .kl import register_kl
from .location_scale import Cauchy, Laplace
from .normal import Normal, Uniform
from .one_hot import OneHotCategorical
from .special import digamma, lgamma

__all__: list[str] = []

_EULER = 0.57721566490153286060
_INF = math.inf


def _inf_like(t: Tensor) -> Tensor:
    return _f.full(tuple(t.shape), _INF, dtype=t.dtype, backend=t.backend)


@register_kl(Exponential, Exponential)
def _exponential(p: Exponential, q: Exponential) -> Tensor:
    ratio = q.rate / p.rate
    return -_ops.log(ratio) + ratio - 1


@register_kl(Laplace, Laplace)
def _laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio, gap = p.scale / q.scale, _ops.abs(p.loc - q.loc)
    return -_ops.log(scale_ratio) + gap / q.scale + scale_ratio * _ops.exp(-gap / p.scale) - 1


@register_kl(Cauchy, Cauchy)
def _cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    return (_ops.log((p.scale + q.scale) ** 2 + (p.loc - q.loc) ** 2)
            - _ops.log(4 * p.scale * q.scale))


@register_kl(Poisson, Poisson)
def _poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (_ops.log(p.rate) - _ops.log(q.rate)) - (p.rate - q.rate)


@register_kl(Geometric, Geometric)
def _geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - _ops.log1p(-q.probs) / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _binomial(p: Binomial, q: Binomial) -> Tensor:
    """Infinite where ``p.total_count > q.total_count``; NaN where it is smaller (PyTorch
    raises there, which would read device data on the host)."""
    kl = p.total_count * (p.probs * (p.logits - q.logits) + _ops.log1p(-p.probs)
                          - _ops.log1p(-q.probs))
    kl = _ops.where(p.total_count > q.total_count, _INF, kl)
    return _ops.where(p.total_count < q.total_count, math.nan, kl)


@register_kl(OneHotCategorical, OneHotCategorical)
def _one_hot(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    from .kl import kl_divergence
    return kl_divergence(p._categorical, q._categorical)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _continuous_bernoulli(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    return (p.mean * (p.logits - q.logits) + p._cont_bern_log_norm() + _ops.log1p(-p.probs)
            - q._cont_bern_log_norm() - _ops.log1p(-q.probs))


@register_kl(Bernoulli, Poisson)
def _bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    return -p.entropy() - (p.probs * _ops.log(q.rate) - q.rate)


def _minus_entropy_to_cb(p: Beta | Uniform, q: ContinuousBernoulli) -> Tensor:
    return -p.entropy() - p.mean * q.logits - _ops.log1p(-q.probs) - q._cont_bern_log_norm()


@register_kl(Beta, ContinuousBernoulli)
def _beta_cb(p: Beta, q: ContinuousBernoulli) -> Tensor:
    return _minus_entropy_to_cb(p, q)


@register_kl(Beta, Exponential)
def _beta_exponential(p: Beta, q: Exponential) -> Tensor:
    a, b = p.concentration1, p.concentration0
    return -p.entropy() - _ops.log(q.rate) + q.rate * (a / (a + b))


@register_kl(Beta, Gamma)
def _beta_gamma(p: Beta, q: Gamma) -> Tensor:
    a, b, c = p.concentration1, p.concentration0, q.concentration
    t2 = lgamma(c) - c * _ops.log(q.rate)
    t3 = (c - 1) * (digamma(a) - digamma(a + b))
    return -p.entropy() + t2 - t3 + q.rate * a / (a + b)


@register_kl(Beta, Normal)
def _beta_normal(p: Beta, q: Normal) -> Tensor:
    a, b = p.concentration1, p.concentration0
    e = a / (a + b)
    var = q.scale ** 2
    t3 = (e * (1 - e) / (a + b + 1) + e ** 2) * 0.5
    return (-p.entropy() + 0.5 * _ops.log(var * 2 * math.pi)
            + (t3 - q.loc * e + q.loc ** 2 * 0.5) / var)


@register_kl(Beta, Uniform)
def _beta_uniform(p: Beta, q: Uniform) -> Tensor:
    out = -p.entropy() + _ops.log(q.high - q.low)
    return _ops.where((q.low > 0) | (q.high < 1), _INF, out)


@register_kl(ContinuousBernoulli, Exponential)
def _cb_exponential(p: ContinuousBernoulli, q: Exponential) -> Tensor:
    return -p.entropy() - _ops.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _cb_normal(p: ContinuousBernoulli, q: Normal) -> Tensor:
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale) ** 2) + _ops.log(q.scale)
    t3 = (p.variance + p.mean ** 2 - 2.0 * q.loc * p.mean) / (2.0 * q.scale ** 2)
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _cb_uniform(p: ContinuousBernoulli, q: Uniform) -> Tensor:
    out = -p.entropy() + _ops.log(q.high - q.low)
    return _ops.where((q.low >= 0) | (q.high <= 1), _INF, out)


@register_kl(Exponential, Beta)
@register_kl(Exponential, ContinuousBernoulli)
@register_kl(Exponential, Uniform)
def _exponential_inf(p: Exponential, q: object) -> Tensor:
    return _inf_like(p.rate)


@register_kl(Exponential, Gamma)
def _exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    ratio, c = q.rate / p.rate, q.concentration
    return -c * _ops.log(ratio) + ratio + lgamma(c) + c * _EULER - (1 + _EULER)


@register_kl(Exponential, Normal)
def _exponential_normal(p: Exponential, q: Normal) -> Tensor:
    var, rate2 = q.scale ** 2, p.rate ** 2
    t1 = 0.5 * _ops.log(rate2 * var * 2 * math.pi)
    return t1 - 1 + (1 / rate2 - q.loc / p.rate + q.loc ** 2 * 0.5) / var


@register_kl(Gamma, Beta)
@register_kl(Gamma, ContinuousBernoulli)
@register_kl(Gamma, Uniform)
def _gamma_inf(p: Gamma, q: object) -> Tensor:
    return _inf_like(p.concentration)


@register_kl(Gamma, Exponential)
def _gamma_exponential(p: Gamma, q: Exponential) -> Tensor:
    return -p.entropy() - _ops.log(q.rate) + q.rate * p.concentration / p.rate


@register_kl(Gamma, Normal)
def _gamma_normal(p: Gamma, q: Normal) -> Tensor:
    a, var, rate2 = p.concentration, q.scale ** 2, p.rate ** 2
    t1 = 0.5 * _ops.log(rate2 * var * 2 * math.pi) - a - lgamma(a)
    t2 = 0.5 * (a ** 2 + a) / rate2
    return t1 + (a - 1) * digamma(a) + (t2 - q.loc * a / p.rate + 0.5 * q.loc ** 2) / var


@register_kl(Laplace, Beta)
@register_kl(Laplace, ContinuousBernoulli)
@register_kl(Laplace, Exponential)
@register_kl(Laplace, Gamma)
@register_kl(Laplace, Uniform)
@register_kl(Normal, Beta)
@register_kl(Normal, ContinuousBernoulli)
@register_kl(Normal, Exponential)
@register_kl(Normal, Gamma)
@register_kl(Normal, Uniform)
def _loc_inf(p: Laplace | Normal, q: object) -> Tensor:
    return _inf_like(p.loc)


@register_kl(Laplace, Normal)
def _laplace_normal(p: Laplace, q: Normal) -> Tensor:
    var = q.scale ** 2
    ratio = p.scale ** 2 / var
    t1 = 0.5 * _ops.log(2 * ratio / math.pi)
    return -t1 + ratio + (0.5 * p.loc ** 2 - p.loc * q.loc + 0.5 * q.loc ** 2) / var - 1


@register_kl(Normal, Laplace)
def _normal_laplace(p: Normal, q: Laplace) -> Tensor:
    gap = p.loc - q.loc
    z = gap / p.scale
    t2 = math.sqrt(2 / math.pi) * p.scale * _ops.exp(-0.5 * z ** 2)
    t3 = gap * _ops.erf(math.sqrt(0.5) * z)
    return -_ops.log(p.scale / q.scale) + (t2 + t3) / q.scale - 0.5 * (
        1 + math.log(0.5 * math.pi))


@register_kl(Poisson, Bernoulli)
@register_kl(Poisson, Binomial)
def _poisson_inf(p: Poisson, q: object) -> Tensor:
    return _inf_like(p.rate)
