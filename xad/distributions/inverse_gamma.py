"""``InverseGamma``: ``1 / X`` for a Gamma ``X``, as PyTorch defines it through
``TransformedDistribution``."""

from __future__ import annotations

import math
from typing import Any

from .. import factories as _f
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .gamma import Gamma
from .special import digamma, lgamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """``1 / X`` for ``X ~ Gamma(concentration, rate)``.

    Example:
        >>> import xad
        >>> d = xad.distributions.InverseGamma(3.0, 2.0)
        >>> round(d.log_prob(xad.tensor(1.0)).item(), 4), d.mean.item()
        (-0.6137, 1.0)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None
                 ) -> None:
        base = Gamma(concentration, rate)
        neg_one = _f.full((), -1.0, dtype=base.rate.dtype, backend=base.rate.backend)
        super().__init__(base, PowerTransform(neg_one))

    @property
    def concentration(self) -> Tensor:
        return self.base_dist.concentration  # type: ignore[attr-defined]

    @property
    def rate(self) -> Tensor:
        return self.base_dist.rate  # type: ignore[attr-defined]

    @property
    def mean(self) -> Tensor:
        a = self.concentration
        return _ops.where(a > 1, self.rate / (a - 1), math.inf)

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        a = self.concentration
        return _ops.where(a > 2, self.rate ** 2 / ((a - 1) ** 2 * (a - 2)), math.inf)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a + _ops.log(self.rate) + lgamma(a) - (1 + a) * digamma(a)
