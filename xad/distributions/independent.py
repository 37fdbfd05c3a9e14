"""``Independent``: some of a distribution's batch axes reinterpreted as event axes."""

from __future__ import annotations

import copy
from typing import Any

from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution, Shape

__all__ = ["Independent"]


class Independent(Distribution):
    """``base_distribution`` with its last ``reinterpreted_batch_ndims`` batch axes made
    event axes: ``log_prob`` and ``entropy`` sum over them.

    Example:
        >>> import xad
        >>> from xad.distributions import Independent, Normal
        >>> d = Independent(Normal(xad.zeros(3, 2), 1.0), 1)
        >>> d.batch_shape, d.event_shape, d.log_prob(xad.zeros(3, 2)).shape
        ((3,), (2,), (3,))
    """

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: bool | None = None) -> None:
        n = reinterpreted_batch_ndims
        shape = base_distribution.batch_shape
        if not 0 <= n <= len(shape):
            raise ValueError(f"Independent: reinterpreted_batch_ndims={n} must lie in "
                             f"[0, {len(shape)}] for a base of batch shape {shape}")
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, n
        self.has_rsample = base_distribution.has_rsample
        split = len(shape) - n
        super().__init__(shape[:split], shape[split:] + base_distribution.event_shape)

    arg_constraints: dict[str, Any] = {}

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        s, n = self.base_dist.support, self.reinterpreted_batch_ndims
        return constraints.independent(s, n) if n else s

    def expand(self, batch_shape: Shape, _instance: Distribution | None = None
               ) -> Distribution:
        new: Any = copy.copy(self) if _instance is None else _instance
        event = self.event_shape[:self.reinterpreted_batch_ndims]
        new.base_dist = self.base_dist.expand(tuple(batch_shape) + event)
        new.batch_shape = tuple(batch_shape)
        return new

    def _sum(self, x: Tensor) -> Tensor:
        n = self.reinterpreted_batch_ndims
        return _ops.sum(x, axis=tuple(range(-n, 0))) if n else x

    def sample(self, sample_shape: Shape = ()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        return self._sum(self.base_dist.log_prob(value))

    def entropy(self) -> Tensor:
        return self._sum(self.base_dist.entropy())

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance
