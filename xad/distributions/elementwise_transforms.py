"""Elementwise transforms (PyTorch's): ``ExpTransform``, ``PowerTransform``,
``SigmoidTransform``, ``TanhTransform``, ``SoftplusTransform``, ``AbsTransform``,
``AffineTransform`` and ``CumulativeDistributionTransform``."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import factories as _f
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .distribution import broadcast_all, broadcast_shapes
from .transform import Transform, sum_rightmost

if TYPE_CHECKING:
    from .distribution import Distribution

__all__ = ["ExpTransform", "PowerTransform", "SigmoidTransform", "TanhTransform",
           "SoftplusTransform", "AbsTransform", "AffineTransform",
           "CumulativeDistributionTransform"]


class _Stateless(Transform):
    """A transform without parameters: all instances are equal."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self))


class ExpTransform(_Stateless):
    """``y = exp(x)``.

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import ExpTransform
        >>> ExpTransform().log_abs_det_jacobian(xad.tensor([2.0]), None).tolist()
        [2.0]
    """

    domain, codomain, bijective, sign = constraints.real, constraints.positive, True, 1

    def _call(self, x: Tensor) -> Tensor:
        return _ops.exp(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return _ops.log(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals.

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import PowerTransform
        >>> PowerTransform(2.0)(xad.tensor([3.0])).tolist()
        [9.0]
    """

    domain, codomain, bijective = constraints.positive, constraints.positive, True

    def __init__(self, exponent: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else PowerTransform(
    self.exponent, cache_size=cache_size)

    @property
    def sign(self) -> Tensor:
        return _ops.sign(self.exponent)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PowerTransform) and self.exponent is other.exponent

    def _call(self, x: Tensor) -> Tensor:
        return x ** self.exponent

    def _inverse(self, y: Tensor) -> Tensor:
        return y ** (1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return _ops.log(_ops.abs(self.exponent * y / x))

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return broadcast_shapes(shape, self.exponent.shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return broadcast_shapes(shape, self.exponent.shape)


def _clipped_sigmoid(x: Tensor) -> Tensor:
    finfo = _ops.finfo(x.dtype)
    return _ops.clip(_ops.sigmoid(x), finfo.smallest_normal, 1.0 - finfo.eps)


class SigmoidTransform(_Stateless):
    """``y = sigmoid(x)``, kept inside ``(0, 1)`` (PyTorch's clipping).

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import SigmoidTransform
        >>> SigmoidTransform()(xad.tensor([0.0])).tolist()
        [0.5]
    """

    domain, codomain, bijective, sign = constraints.real, constraints.unit_interval, True, 1

    def _call(self, x: Tensor) -> Tensor:
        return _clipped_sigmoid(x)

    def _inverse(self, y: Tensor) -> Tensor:
        finfo = _ops.finfo(y.dtype)
        y = _ops.clip(y, finfo.smallest_normal, 1.0 - finfo.eps)
        return _ops.log(y) - _ops.log1p(-y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -_ops.softplus(-x) - _ops.softplus(x)


class TanhTransform(_Stateless):
    """``y = tanh(x)``, with PyTorch's stable ``log |dy/dx| = 2 (log 2 - x - softplus(-2x))``
    (SAC's squashed Normal).

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import TanhTransform
        >>> x = xad.tensor([30.0], dtype=xad.float64)
        >>> round(TanhTransform().log_abs_det_jacobian(x, None).item(), 4)  # finite
        -58.6137
    """

    domain, codomain = constraints.real, constraints.interval(-1.0, 1.0)
    bijective, sign = True, 1

    def _call(self, x: Tensor) -> Tensor:
        return _ops.tanh(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return _ops.atanh(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return 2.0 * (math.log(2.0) - x - _ops.softplus(-2.0 * x))


class SoftplusTransform(_Stateless):
    """``y = log(1 + exp(x))``.

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import SoftplusTransform
        >>> t = SoftplusTransform()
        >>> round(t.inv(t(xad.tensor([1.5], dtype=xad.float64))).item(), 12)
        1.5
    """

    domain, codomain, bijective, sign = constraints.real, constraints.positive, True, 1

    def _call(self, x: Tensor) -> Tensor:
        return _ops.softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return _ops.log(-_ops.expm1(-y)) + y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -_ops.softplus(-x)


class AbsTransform(_Stateless):
    """``y = |x|`` (not bijective: the inverse is the identity on ``y >= 0``).

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import AbsTransform
        >>> AbsTransform()(xad.tensor([-2.0, 3.0])).tolist()
        [2.0, 3.0]
    """

    domain, codomain = constraints.real, constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return _ops.abs(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return y


def _same(a: Any, b: Any) -> bool:
    """Parameters equal: numbers by value, tensors by identity (no host read)."""
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b
    return a is b


class AffineTransform(Transform):
    """``y = loc + scale * x`` over ``event_dim`` rightmost dimensions.

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import AffineTransform
        >>> t = AffineTransform(1.0, 2.0, event_dim=1)
        >>> x = xad.zeros(3, 2)
        >>> t(x)[0].tolist(), t.log_abs_det_jacobian(x, t(x)).shape
        ([1.0, 1.0], (3,))
    """

    bijective = True

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        if self.event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self.event_dim)

    codomain = domain

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else AffineTransform(
    self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, AffineTransform) and _same(self.loc, other.loc)
                and _same(self.scale, other.scale))

    @property
    def sign(self) -> Any:
        if isinstance(self.scale, numbers.Real):
            s = float(self.scale)
            return 1 if s > 0 else -1 if s < 0 else 0
        return _ops.sign(self.scale)

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        shape = x.shape
        if isinstance(self.scale, numbers.Real):
            result = _f.full_like(x, math.log(abs(self.scale)))
        else:
            result = _ops.log(_ops.abs(self.scale))
        if self.event_dim:
            result = sum_rightmost(result, self.event_dim)
            shape = shape[:-self.event_dim]
        return _ops.broadcast_to(result, shape)

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return broadcast_shapes(shape, getattr(self.loc, "shape", ()),
                                getattr(self.scale, "shape", ()))

    inverse_shape = forward_shape


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: from the distribution's support onto ``[0, 1]``.

    Example:
        >>> import xad
        >>> from xad.distributions import Normal
        >>> from xad.distributions.transforms import CumulativeDistributionTransform
        >>> CumulativeDistributionTransform(Normal(0.0, 1.0))(xad.tensor([0.0])).tolist()
        [0.5]
    """

    bijective, codomain, sign = True, constraints.unit_interval, 1

    def __init__(self, distribution: Distribution, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self.distribution.support

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else CumulativeDistributionTransform(
    self.distribution, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self.distribution.log_prob(x)
