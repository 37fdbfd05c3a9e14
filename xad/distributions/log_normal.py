"""``LogNormal`` (``exp`` of a Normal) and ``LogisticNormal`` (a Normal stick-broken onto
the simplex), as PyTorch defines them through ``TransformedDistribution``."""

from __future__ import annotations

from typing import Any

from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform, StickBreakingTransform

__all__ = ["LogNormal", "LogisticNormal"]


class LogNormal(TransformedDistribution):
    """``exp(X)`` for ``X ~ Normal(loc, scale)``.

    Example:
        >>> import xad
        >>> d = xad.distributions.LogNormal(0.0, 1.0)
        >>> round(d.log_prob(xad.tensor(1.0)).item(), 4), round(d.mean.item(), 4)
        (-0.9189, 1.6487)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        super().__init__(Normal(loc, scale), ExpTransform())

    @property
    def loc(self) -> Tensor:
        return self.base_dist.loc  # type: ignore[attr-defined]

    @property
    def scale(self) -> Tensor:
        return self.base_dist.scale  # type: ignore[attr-defined]

    @property
    def mean(self) -> Tensor:
        return _ops.exp(self.loc + self.scale ** 2 / 2)

    @property
    def mode(self) -> Tensor:
        return _ops.exp(self.loc - self.scale ** 2)

    @property
    def variance(self) -> Tensor:
        s2 = self.scale ** 2
        return _ops.expm1(s2) * _ops.exp(2 * self.loc + s2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc


class LogisticNormal(TransformedDistribution):
    """A Normal over ``K - 1`` reals pushed onto the ``K``-simplex by stick-breaking.

    Example:
        >>> import xad
        >>> d = xad.distributions.LogisticNormal(xad.zeros(2), xad.ones(2))
        >>> d.event_shape, d.sample((4,)).shape
        ((3,), (4, 3))
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        base: Any = Normal(loc, scale)
        if not base.batch_shape:
            base = base.expand([1])
        super().__init__(base, StickBreakingTransform())

    @property
    def loc(self) -> Tensor:
        return self.base_dist.base_dist.loc  # type: ignore[attr-defined]

    @property
    def scale(self) -> Tensor:
        return self.base_dist.base_dist.scale  # type: ignore[attr-defined]
