"""``kl_divergence`` pairs PyTorch registers with a ``Gumbel`` or a ``Pareto`` on either side
(besides ``Gumbel``-``Gumbel``, in ``transformed_kl``), in PyTorch's formulas: ``inf`` where
``p``'s support leaves ``q``'s, or where ``q``'s moments ``p`` needs are infinite."""

from __future__ import annotations

import math

from .. import ops as _ops
from ..tensor import Tensor
from .continuous_bernoulli import ContinuousBernoulli
from .exponential import Exponential
from .gamma import Beta, Gamma
from .gumbel_weibull_pareto import EULER_CONSTANT, Gumbel, Pareto
from .kl import register_kl
from .kl_families import _exponential_inf, _gamma_inf, _inf_like, _loc_inf
from .kl_uniform import _x_log_x
from .location_scale import Laplace
from .normal import Normal, Uniform
from .special import digamma, lgamma

__all__: list[str] = []


# no overlap of supports: kl_families' infinite KL for p's family
for _p, _fn in ((Exponential, _exponential_inf), (Gamma, _gamma_inf), (Gumbel, _loc_inf),
                (Laplace, _loc_inf), (Normal, _loc_inf)):
    register_kl(_p, Pareto)(_fn)
for _q in (Beta, ContinuousBernoulli, Exponential, Gamma, Uniform):
    register_kl(Gumbel, _q)(_loc_inf)


@register_kl(Beta, Pareto)
@register_kl(ContinuousBernoulli, Pareto)
def _unit_interval_inf(p: Beta | ContinuousBernoulli, q: Pareto) -> Tensor:
    return _inf_like(p.concentration1 if isinstance(p, Beta) else p.probs)


@register_kl(Pareto, Beta)
@register_kl(Pareto, ContinuousBernoulli)
@register_kl(Pareto, Uniform)
def _pareto_inf(p: Pareto, q: object) -> Tensor:
    return _inf_like(p.scale)


@register_kl(Exponential, Gumbel)
def _exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    prod, ratio = p.rate * q.scale, q.loc / q.scale
    return _ops.log(prod) - 1 - ratio + _ops.exp(ratio) * prod / (prod + 1) + 1 / prod


@register_kl(Gamma, Gumbel)
def _gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    a, prod, ratio = p.concentration, p.rate * q.scale, q.loc / q.scale
    t1 = (a - 1) * digamma(a) - lgamma(a) - a
    t2 = _ops.log(prod) + a / prod
    return t1 + t2 + (_ops.exp(ratio) * (1 + 1 / prod) ** -a - ratio)


@register_kl(Gumbel, Normal)
def _gumbel_normal(p: Gumbel, q: Normal) -> Tensor:
    ratio = p.scale / q.scale
    t1 = _ops.log(ratio / math.sqrt(2 * math.pi))
    t2 = (math.pi * ratio * 0.5) ** 2 / 3
    t3 = ((p.loc + p.scale * EULER_CONSTANT - q.loc) / q.scale) ** 2 * 0.5
    return -t1 + t2 + t3 - (EULER_CONSTANT + 1)


@register_kl(Normal, Gumbel)
def _normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    mean_ratio, var_ratio = p.loc / q.scale, (p.scale / q.scale) ** 2
    loc_ratio = q.loc / q.scale
    t3 = _ops.exp(-mean_ratio + 0.5 * var_ratio + loc_ratio)
    return (-_ops.log(var_ratio) * 0.5 + (mean_ratio - loc_ratio) + t3
            - 0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Uniform, Gumbel)
def _uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    ratio = q.scale / (p.high - p.low)
    high, low = (p.high - q.loc) / q.scale, (p.low - q.loc) / q.scale
    t1 = _ops.log(ratio) + 0.5 * (high + low)
    return t1 - ratio * (_ops.exp(-high) - _ops.exp(-low))


@register_kl(Pareto, Pareto)
def _pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    alpha_ratio = q.alpha / p.alpha
    out = q.alpha * _ops.log(p.scale / q.scale) - _ops.log(alpha_ratio) + alpha_ratio - 1
    return _ops.where(p.scale < q.scale, math.inf, out)


@register_kl(Pareto, Exponential)
def _pareto_exponential(p: Pareto, q: Exponential) -> Tensor:
    prod = p.scale * q.rate
    out = _ops.log(p.alpha / prod) - 1 / p.alpha + p.alpha * prod / (p.alpha - 1) - 1
    return _ops.where(p.alpha <= 1, math.inf, out)


@register_kl(Pareto, Gamma)
def _pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    c = q.concentration
    common = _ops.log(p.scale) + 1 / p.alpha
    t2 = lgamma(c) - c * _ops.log(q.rate)
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    out = _ops.log(p.alpha) - common + t2 + (1 - c) * common + t4 - 1
    return _ops.where(p.alpha <= 1, math.inf, out)


@register_kl(Pareto, Normal)
def _pareto_normal(p: Pareto, q: Normal) -> Tensor:
    var2, common = 2 * q.scale ** 2, p.scale / (p.alpha - 1)
    t1 = _ops.log(math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale)
    t3 = p.alpha * common ** 2 / (p.alpha - 2)
    t4 = (p.alpha * common - q.loc) ** 2
    out = t1 - 1 / p.alpha + (t3 + t4) / var2 - 1
    return _ops.where(p.alpha <= 2, math.inf, out)


@register_kl(Uniform, Pareto)
def _uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    width = p.high - p.low
    t1 = _ops.log(q.alpha * q.scale ** q.alpha * width)
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    return _ops.where(p.low < q.scale, math.inf, t2 * (q.alpha + 1) - t1)
