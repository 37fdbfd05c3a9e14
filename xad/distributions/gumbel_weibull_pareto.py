"""``Gumbel``, ``Weibull`` and ``Pareto``: Uniform and exponential draws pushed through
transforms, as PyTorch defines them."""

from __future__ import annotations

import math
from typing import Any

from .. import factories as _f
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .distribution import broadcast_all
from .exponential import Exponential
from .normal import Uniform
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform, PowerTransform

__all__ = ["Gumbel", "Weibull", "Pareto", "EULER_CONSTANT"]

EULER_CONSTANT = 0.57721566490153286060


class Gumbel(TransformedDistribution):
    """The Gumbel (type-I extreme value) distribution with ``loc`` and ``scale``.

    Example:
        >>> import xad
        >>> d = xad.distributions.Gumbel(0.0, 1.0)
        >>> round(d.log_prob(xad.tensor(0.0)).item(), 4), round(d.mean.item(), 4)
        (-1.0, 0.5772)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    _expand_params = ("loc", "scale")

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = _ops.finfo(self.loc.dtype)
        base = Uniform(_f.full_like(self.loc, finfo.smallest_normal),
                       _f.full_like(self.loc, 1 - finfo.eps))
        super().__init__(base, [ExpTransform().inv,
                                AffineTransform(0, -_f.ones_like(self.scale)),
                                ExpTransform().inv, AffineTransform(self.loc, -self.scale)])

    def log_prob(self, value: Tensor) -> Tensor:
        y = (self.loc - value) / self.scale
        return (y - _ops.exp(y)) - _ops.log(self.scale)

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * EULER_CONSTANT

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev ** 2

    def entropy(self) -> Tensor:
        return _ops.log(self.scale) + (1 + EULER_CONSTANT)


class Weibull(TransformedDistribution):
    """The Weibull distribution with ``scale`` and shape ``concentration``.

    Example:
        >>> import xad
        >>> d = xad.distributions.Weibull(1.0, 2.0)
        >>> round(d.log_prob(xad.tensor(1.0)).item(), 4), round(d.mean.item(), 4)
        (-0.3069, 0.8862)
    """

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    _expand_params = ("scale", "concentration", "concentration_reciprocal")

    def __init__(self, scale: Any, concentration: Any, validate_args: bool | None = None
                 ) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = 1 / self.concentration
        super().__init__(Exponential(_f.ones_like(self.scale)),
                         [PowerTransform(self.concentration_reciprocal),
                          AffineTransform(0, self.scale)])

    @property
    def mean(self) -> Tensor:
        return self.scale * _ops.exp(_ops.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self) -> Tensor:
        k = self.concentration
        return self.scale * ((k - 1) / k) ** self.concentration_reciprocal

    @property
    def variance(self) -> Tensor:
        r = self.concentration_reciprocal
        return self.scale ** 2 * (_ops.exp(_ops.lgamma(1 + 2 * r))
                                  - _ops.exp(2 * _ops.lgamma(1 + r)))

    def entropy(self) -> Tensor:
        r = self.concentration_reciprocal
        return EULER_CONSTANT * (1 - r) + _ops.log(self.scale * r) + 1


class Pareto(TransformedDistribution):
    """The Pareto (type I) distribution with minimum ``scale`` and tail index ``alpha``.

    Example:
        >>> import xad
        >>> d = xad.distributions.Pareto(1.0, 3.0)
        >>> round(d.log_prob(xad.tensor(2.0)).item(), 4), d.mean.item()
        (-1.674, 1.5)
    """

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    _expand_params = ("scale", "alpha")

    def __init__(self, scale: Any, alpha: Any, validate_args: bool | None = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        super().__init__(Exponential(self.alpha),
                         [ExpTransform(), AffineTransform(0, self.scale)])

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self) -> Tensor:
        a = _ops.clip(self.alpha, 1, None)
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        a = _ops.clip(self.alpha, 2, None)
        return self.scale ** 2 * a / ((a - 1) ** 2 * (a - 2))

    def entropy(self) -> Tensor:
        return _ops.log(self.scale / self.alpha) + (1 + 1 / self.alpha)
