"""``Exponential`` and ``GeneralizedPareto``: families on a half-line, sampled by their
quantile function (reparameterised)."""

from __future__ import annotations

import math
from typing import Any

from .. import factories as _f
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution, Shape, broadcast_all

__all__ = ["Exponential", "GeneralizedPareto", "uniform_like"]


def uniform_like(like: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Uniform draws in ``[0, 1)`` of ``shape`` from xad's generator, on ``like``'s backend
    and in its dtype."""
    return _f.rand(shape, dtype=like.dtype, backend=like.backend)


class Exponential(Distribution):
    """The exponential distribution with ``rate`` (inverse scale) on ``[0, inf)``.

    Example:
        >>> import xad
        >>> d = xad.distributions.Exponential(xad.tensor([2.0]))
        >>> round(d.log_prob(xad.tensor([1.0])).item(), 4), d.mean.item()
        (-1.3069, 0.5)
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _expand_params = ("rate",)

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape)

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        return self.icdf(uniform_like(self.rate, self._shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        return _ops.log(self.rate) - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        return 1 - _ops.exp(-self.rate * value)

    def icdf(self, value: Tensor) -> Tensor:
        return -_ops.log1p(-value) / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - _ops.log(self.rate)

    @property
    def mean(self) -> Tensor:
        return 1 / self.rate

    @property
    def mode(self) -> Tensor:
        return _f.zeros_like(self.rate)

    @property
    def variance(self) -> Tensor:
        return self.rate ** -2

    @property
    def stddev(self) -> Tensor:
        return 1 / self.rate


class GeneralizedPareto(Distribution):
    """The generalised Pareto distribution with ``loc``, ``scale`` and ``concentration``
    (shape ``xi``; ``|xi| <= 1e-8`` is the exponential limit, as PyTorch's ``isclose``).

    Example:
        >>> import xad
        >>> d = xad.distributions.GeneralizedPareto(0.0, 1.0, 0.5)
        >>> round(d.log_prob(xad.tensor(1.0)).item(), 4), d.mean.item()
        (-1.2164, 2.0)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True
    _expand_params = ("loc", "scale", "concentration")

    def __init__(self, loc: Any, scale: Any, concentration: Any,
                 validate_args: bool | None = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.shape)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        upper = _ops.where(self.concentration < 0, self.loc - self.scale / self.concentration,
                           math.inf)
        return constraints.interval(self.loc, upper)

    def _safe(self) -> tuple[Tensor, Tensor]:
        """Whether the concentration is 0, and the concentration with 1 there."""
        zero = _ops.abs(self.concentration) <= 1e-8
        return zero, _ops.where(zero, 1.0, self.concentration)

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        return self.icdf(uniform_like(self.loc, self._shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        z = (value - self.loc) / self.scale
        zero, c = self._safe()
        y = 1 / c + 1
        nonzero = _ops.where(y == 0, y, y * _ops.log1p(c * z))
        return -_ops.log(self.scale) - _ops.where(zero, z, nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        """``log(1 - cdf(value))``."""
        z = (value - self.loc) / self.scale
        zero, c = self._safe()
        return _ops.where(zero, -z, -_ops.log1p(c * z) / c)

    def log_cdf(self, value: Tensor) -> Tensor:
        """``log cdf(value)``."""
        return _ops.log1p(-_ops.exp(self.log_survival_function(value)))

    def cdf(self, value: Tensor) -> Tensor:
        return _ops.exp(self.log_cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        zero, c = self._safe()
        log_u = _ops.log1p(-value)
        nonzero = self.loc + self.scale / c * _ops.expm1(-c * log_u)
        return _ops.where(zero, self.loc - self.scale * log_u, nonzero)

    def entropy(self) -> Tensor:
        return _ops.broadcast_to(_ops.log(self.scale) + self.concentration + 1,
                                 self.batch_shape)

    @property
    def mean(self) -> Tensor:
        valid = self.concentration < 1
        c = _ops.where(valid, self.concentration, 0.5)
        return _ops.where(valid, self.loc + self.scale / (1 - c), math.nan)

    @property
    def variance(self) -> Tensor:
        valid = self.concentration < 0.5
        c = _ops.where(valid, self.concentration, 0.25)
        return _ops.where(valid, self.scale ** 2 / ((1 - c) ** 2 * (1 - 2 * c)), math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc
