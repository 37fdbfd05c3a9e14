"""``Normal`` and ``Uniform``: location-scale families with reparameterised samples."""

from __future__ import annotations

import math
from typing import Any

from .. import factories as _f
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .distribution import LOG_2PI, Distribution, Shape, broadcast_all

__all__ = ["Normal", "Uniform"]


class Normal(Distribution):
    """The normal distribution with mean ``loc`` and standard deviation ``scale``.

    Example:
        >>> import xad
        >>> d = xad.distributions.Normal(xad.tensor([0.0, 1.0]), 2.0)
        >>> d.batch_shape, [round(v, 4) for v in d.log_prob(xad.tensor([0.0, 1.0])).tolist()]
        ((2,), [-1.6121, -1.6121])
    """

    has_rsample = True

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    _expand_params = ("loc", "scale")

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape)

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        eps = _f.randn(self._shape(sample_shape), dtype=self.loc.dtype, backend=self.loc.backend)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        return (-((value - self.loc) ** 2) / (2 * self.scale ** 2) - _ops.log(self.scale)
                - 0.5 * LOG_2PI)

    def cdf(self, value: Tensor) -> Tensor:
        return 0.5 * (1 + _ops.erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def icdf(self, value: Tensor) -> Tensor:
        """The quantile at probability ``value``: ``loc + scale * sqrt(2) erfinv(2 value - 1)``.

        Example:
            >>> import xad
            >>> xad.distributions.Normal(1.0, 2.0).icdf(xad.tensor(0.5)).item()
            1.0
        """
        return self.loc + self.scale * _ops.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * LOG_2PI + _ops.log(self.scale)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self.scale ** 2

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def mode(self) -> Tensor:
        return self.loc


class Uniform(Distribution):
    """The uniform distribution on ``[low, high)``.

    Example:
        >>> import xad
        >>> d = xad.distributions.Uniform(0.0, 4.0)
        >>> round(d.log_prob(xad.tensor(1.0)).item(), 4), d.mean.item(), d.variance.item()
        (-1.3863, 2.0, 1.3333333730697632)
    """

    has_rsample = True

    _expand_params = ("low", "high")

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape)

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        u = _f.rand(self._shape(sample_shape), dtype=self.low.dtype, backend=self.low.backend)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        inside = (value >= self.low) & (value < self.high)
        return _ops.where(inside, -_ops.log(self.high - self.low), -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        return _ops.clip((value - self.low) / (self.high - self.low), 0.0, 1.0)

    def icdf(self, value: Tensor) -> Tensor:
        return self.low + value * (self.high - self.low)

    def entropy(self) -> Tensor:
        return _ops.log(self.high - self.low)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low) ** 2 / 12

    @property
    def mode(self) -> Tensor:
        return self.high * math.nan  # every point is one: none (PyTorch's NaN)
