"""``kl_divergence`` from a ``Uniform`` to ``Beta``, ``ContinuousBernoulli``,
``Exponential``, ``Gamma`` and ``Normal`` (PyTorch's formulas; ``inf`` where the uniform's
interval leaves the other's support)."""

from __future__ import annotations

import math

from .. import ops as _ops
from ..tensor import Tensor
from .continuous_bernoulli import ContinuousBernoulli
from .exponential import Exponential
from .gamma import Beta, Gamma
from .kl import register_kl
from .kl_families import _minus_entropy_to_cb
from .normal import Normal, Uniform
from .special import lgamma

__all__: list[str] = []


def _x_log_x(t: Tensor) -> Tensor:
    return t * _ops.log(t)  # PyTorch's: NaN at 0


@register_kl(Uniform, Beta)
def _uniform_beta(p: Uniform, q: Beta) -> Tensor:
    a, b = q.concentration1, q.concentration0
    width = p.high - p.low
    t2 = (a - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t3 = (b - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) / width
    t4 = lgamma(a) + lgamma(b) - lgamma(a + b)
    out = t3 + t4 - _ops.log(width) - t2
    return _ops.where((p.high > 1) | (p.low < 0), math.inf, out)


@register_kl(Uniform, ContinuousBernoulli)
def _uniform_cb(p: Uniform, q: ContinuousBernoulli) -> Tensor:
    return _ops.where((p.high >= 1) | (p.low <= 0), math.inf, _minus_entropy_to_cb(p, q))


@register_kl(Uniform, Exponential)
def _uniform_exponential(p: Uniform, q: Exponential) -> Tensor:
    out = q.rate * (p.high + p.low) / 2 - _ops.log((p.high - p.low) * q.rate)
    return _ops.where(p.low < 0, math.inf, out)


@register_kl(Uniform, Gamma)
def _uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    c, width = q.concentration, p.high - p.low
    t2 = lgamma(c) - c * _ops.log(q.rate)
    t3 = (1 - c) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    out = -_ops.log(width) + t2 + t3 + q.rate * (p.high + p.low) / 2
    return _ops.where(p.low < 0, math.inf, out)


@register_kl(Uniform, Normal)
def _uniform_normal(p: Uniform, q: Normal) -> Tensor:
    width = p.high - p.low
    t1 = _ops.log(math.sqrt(math.pi * 2) * q.scale / width)
    t3 = ((p.high + p.low - 2 * q.loc) / 2) ** 2
    return t1 + 0.5 * (width ** 2 / 12 + t3) / q.scale ** 2
