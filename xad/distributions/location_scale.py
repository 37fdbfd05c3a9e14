"""``Laplace`` and ``Cauchy``: location-scale families with closed-form quantiles,
sampled through them (reparameterised)."""

from __future__ import annotations

import math
from typing import Any

from .. import factories as _f
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution, Shape, broadcast_all
from .exponential import uniform_like

__all__ = ["Laplace", "Cauchy"]


class _LocationScale(Distribution):
    """A real family of ``loc`` and positive ``scale`` (broadcast together), its mode at
    ``loc``: what Laplace and Cauchy share."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    _expand_params = ("loc", "scale")

    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape)

    @property
    def mode(self) -> Tensor:
        return self.loc


class Laplace(_LocationScale):
    """The Laplace (double exponential) distribution with ``loc`` and ``scale``.

    Example:
        >>> import xad
        >>> d = xad.distributions.Laplace(0.0, 1.0)
        >>> round(d.log_prob(xad.tensor(1.0)).item(), 4), d.variance.item()
        (-1.6931, 2.0)
    """

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        eps = _ops.finfo(self.loc.dtype).eps
        u = (eps - 1) + uniform_like(self.loc, self._shape(sample_shape)) * (2 - eps)
        return self.loc - self.scale * _ops.sign(u) * _ops.log1p(-_ops.abs(u))

    def log_prob(self, value: Tensor) -> Tensor:
        return -_ops.log(2 * self.scale) - _ops.abs(value - self.loc) / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        d = value - self.loc
        return 0.5 - 0.5 * _ops.sign(d) * _ops.expm1(-_ops.abs(d) / self.scale)

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * _ops.sign(term) * _ops.log1p(-2 * _ops.abs(term))

    def entropy(self) -> Tensor:
        return 1 + _ops.log(2 * self.scale)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale ** 2

    @property
    def stddev(self) -> Tensor:
        return math.sqrt(2) * self.scale


class Cauchy(_LocationScale):
    """The Cauchy (Lorentz) distribution with median ``loc`` and half width ``scale``.

    Example:
        >>> import xad
        >>> d = xad.distributions.Cauchy(0.0, 1.0)
        >>> round(d.log_prob(xad.tensor(1.0)).item(), 4), d.cdf(xad.tensor(1.0)).item()
        (-1.8379, 0.75)
    """

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        return self.icdf(uniform_like(self.loc, self._shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        return (-math.log(math.pi) - _ops.log(self.scale)
                - _ops.log1p(((value - self.loc) / self.scale) ** 2))

    def cdf(self, value: Tensor) -> Tensor:
        return _ops.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return _ops.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + _ops.log(self.scale)

    @property
    def mean(self) -> Tensor:
        return _f.full(self.batch_shape, math.nan, dtype=self.loc.dtype, backend=self.loc.backend)

    @property
    def variance(self) -> Tensor:
        return _f.full(self.batch_shape, math.inf, dtype=self.loc.dtype, backend=self.loc.backend)
