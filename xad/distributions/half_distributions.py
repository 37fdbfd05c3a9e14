"""``HalfNormal`` and ``HalfCauchy``: ``|X|`` for a centred Normal or Cauchy ``X``."""

from __future__ import annotations

import math
from typing import Any

from .. import factories as _f
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .location_scale import Cauchy
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfNormal", "HalfCauchy"]


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
        super().__init__(Cauchy(0.0, scale), AbsTransform())

    @property
    def mean(self) -> Tensor:
        return _f.full_like(_ops.broadcast_to(self.scale, self.batch_shape), math.inf)

    @property
    def variance(self) -> Tensor:
        return self.mean
