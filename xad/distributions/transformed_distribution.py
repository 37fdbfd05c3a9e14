"""``TransformedDistribution``: a base distribution pushed through transforms (PyTorch's
shapes, ``log_prob`` by the change of variables, ``cdf``/``icdf`` for monotone ones)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..grad_mode import no_grad
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution, Shape
from .independent import Independent
from .transform import ComposeTransform, Transform, sum_rightmost

__all__ = ["TransformedDistribution"]


def _as_list(transforms: Transform | Sequence[Transform]) -> list[Transform]:
    if isinstance(transforms, Transform):
        return [transforms]
    if isinstance(transforms, (list, tuple)) and all(isinstance(t, Transform)
                                                     for t in transforms):
        return list(transforms)
    raise ValueError(f"TransformedDistribution: transforms must be a Transform or a list of "
                     f"Transforms, found {transforms!r}")


class TransformedDistribution(Distribution):
    """The distribution of ``y = t_n(... t_1(x))`` for ``x`` drawn from
    ``base_distribution`` (PyTorch's: the base is expanded or made ``Independent`` as the
    transforms' event dimensions need).

    Example:
        >>> import xad
        >>> from xad.distributions import Normal, TransformedDistribution
        >>> from xad.distributions.transforms import TanhTransform
        >>> d = TransformedDistribution(Normal(xad.zeros(2), 1.0), [TanhTransform()])
        >>> d.batch_shape, d.sample((5,)).shape, round(d.log_prob(xad.zeros(2))[0].item(), 4)
        ((2,), (5, 2), -0.9189)
    """

    arg_constraints: dict[str, Any] = {}

    def __init__(self, base_distribution: Distribution,
                 transforms: Transform | Sequence[Transform],
                 validate_args: bool | None = None) -> None:
        self.transforms = _as_list(transforms)
        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(f"TransformedDistribution: base_distribution needs at least "
                             f"{transform.domain.event_dim} dimensions, but got {base_shape}")
        forward_shape = transform.forward_shape(base_shape)
        expanded = transform.inverse_shape(forward_shape)
        if base_shape != expanded:
            base_distribution = base_distribution.expand(
    expanded[:len(expanded) - base_event_dim])
        reinterpreted = transform.domain.event_dim - base_event_dim
        if reinterpreted > 0:
            base_distribution = Independent(base_distribution, reinterpreted)
        self.base_dist = base_distribution
        change = transform.codomain.event_dim - transform.domain.event_dim
        event_dim = max(transform.codomain.event_dim, base_event_dim + change)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:])

    @constraints.dependent_property(is_discrete=False)
    def support(self) -> constraints.Constraint:
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support,
                                              len(self.event_shape) - support.event_dim)
        return support

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    def expand(self, batch_shape: Shape, _instance: Distribution | None = None
               ) -> Distribution:
        new: Any = super().expand(batch_shape, _instance)  # checked; own parameters broadcast
        shape: tuple[int, ...] = tuple(batch_shape) + self.event_shape
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        new.base_dist = self.base_dist.expand(shape[:len(shape) - len(self.base_dist.event_shape)])
        return new

    def sample(self, sample_shape: Shape = ()) -> Tensor:
        with no_grad():
            return self._push(self.base_dist.sample(sample_shape))

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        return self._push(self.base_dist.rsample(sample_shape))

    def _push(self, x: Tensor) -> Tensor:
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value: Tensor) -> Tensor:
        """``log p(value)``: the base's at ``x = t^-1(value)`` less each transform's
        ``log |det J|``, summed over the event dimensions."""
        event_dim = len(self.event_shape)
        log_prob: Any = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - sum_rightmost(t.log_abs_det_jacobian(x, y),
                                                event_dim - t.domain.event_dim)
            y = x
        base = sum_rightmost(self.base_dist.log_prob(y),
                             event_dim - len(self.base_dist.event_shape))
        return log_prob + base

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        sign: Any = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value: Tensor) -> Tensor:
        """The base's CDF at ``t^-1(value)``, reflected where the transforms decrease."""
        for t in reversed(self.transforms):
            value = t.inv(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        """The transforms applied to the base's quantile."""
        return self._push(self.base_dist.icdf(self._monotonize_cdf(value)))
