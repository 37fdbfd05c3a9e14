"""``HalfNormal`` and ``HalfCauchy``: ``|X|`` for a centred Normal or Cauchy ``X`` (the
Cauchy base is private here; ``xad.distributions.Cauchy`` is defined elsewhere)."""

from __future__ import annotations

import math
from typing import Any

from .. import factories as _f
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution, Shape, broadcast_all
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfNormal", "HalfCauchy"]


class _CentredCauchy(Distribution):
    """Cauchy(0, scale): just what ``HalfCauchy`` reads of it."""

    has_rsample = True
    _expand_params = ("scale",)

    def __init__(self, scale: Any) -> None:
        (self.scale,) = broadcast_all(scale)
        super().__init__(self.scale.shape)

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        u = _f.rand(self._shape(sample_shape), dtype=self.scale.dtype, backend=self.scale.backend)
        return _ops.tan(math.pi * (u - 0.5)) * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        return (-math.log(math.pi) - _ops.log(self.scale)
                - _ops.log1p((value / self.scale) ** 2))

    def cdf(self, value: Tensor) -> Tensor:
        return _ops.atan(value / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return _ops.tan(math.pi * (value - 0.5)) * self.scale

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + _ops.log(self.scale)


class _Half(TransformedDistribution):
    """``|X|`` for a base symmetric about 0: density doubled on ``[0, inf)``."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale  # type: ignore[attr-defined]

    @property
    def mode(self) -> Tensor:
        return _f.zeros_like(self.scale)

    def log_prob(self, value: Tensor) -> Tensor:
        return _ops.where(value >= 0, self.base_dist.log_prob(value) + math.log(2), -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, value: Tensor) -> Tensor:
        return self.base_dist.icdf((value + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Half):
    """``|X|`` for ``X ~ Normal(0, scale)``.

    Example:
        >>> import xad
        >>> d = xad.distributions.HalfNormal(1.0)
        >>> round(d.log_prob(xad.tensor(0.0)).item(), 4), round(d.mean.item(), 4)
        (-0.2258, 0.7979)
    """

    def __init__(self, scale: Any, validate_args: bool | None = None) -> None:
        super().__init__(Normal(0.0, scale), AbsTransform())

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> Tensor:
        return self.scale ** 2 * (1 - 2 / math.pi)


class HalfCauchy(_Half):
    """``|X|`` for ``X ~ Cauchy(0, scale)``.

    Example:
        >>> import xad
        >>> d = xad.distributions.HalfCauchy(1.0)
        >>> round(d.log_prob(xad.tensor(1.0)).item(), 4), d.mean.item()
        (-1.1447, inf)
    """

    def __init__(self, scale: Any, validate_args: bool | None = None) -> None:
        super().__init__(_CentredCauchy(scale), AbsTransform())

    @property
    def mean(self) -> Tensor:
        return _f.full_like(_ops.broadcast_to(self.scale, self.batch_shape), math.inf)

    @property
    def variance(self) -> Tensor:
        return self.mean
