"""``Poisson``, ``Binomial``, ``Geometric`` and ``NegativeBinomial``: distributions over
counts ``0, 1, 2, ...``, sampled through :mod:`.count_sampling` (no gradient)."""

from __future__ import annotations

from typing import Any

from .. import factories as _f
from .. import ops as _ops
from ..grad_mode import no_grad
from ..tensor import Tensor
from . import constraints
from .categorical import bce_with_logits, binary_params, support_values
from .count_sampling import binomial_draws, poisson_draws
from .distribution import Distribution, Shape, broadcast_all
from .gamma import Gamma
from .special import lgamma, xlogy

__all__ = ["Poisson", "Binomial", "Geometric", "NegativeBinomial"]

class Poisson(Distribution):
    """The Poisson distribution with mean ``rate``.

    Example:
        >>> import xad
        >>> d = xad.distributions.Poisson(xad.tensor([2.0]))
        >>> round(d.log_prob(xad.tensor([1.0])).item(), 4), d.variance.item()
        (-1.3069, 2.0)
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _expand_params = ("rate",)

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape)

    def sample(self, sample_shape: Shape = ()) -> Tensor:
        with no_grad():
            return poisson_draws(_ops.broadcast_to(self.rate, self._shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - lgamma(value + 1)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return _ops.floor(self.rate)

    @property
    def variance(self) -> Tensor:
        return self.rate

def _clamp_by_zero(x: Tensor) -> Tensor:
    """``max(x, 0)`` with gradient 1/2 at 0 (PyTorch's)."""
    return (_ops.clip(x, 0.0, None) + x - _ops.clip(x, None, 0.0)) / 2

class Binomial(Distribution):
    """The number of successes in ``total_count`` trials of probability ``probs`` (or
    ``logits``). ``enumerate_support`` and ``entropy`` need ``total_count`` as a Python
    number (reading a tensor's would copy device data to the host).

    Example:
        >>> import xad
        >>> d = xad.distributions.Binomial(4, probs=xad.tensor([0.5]))
        >>> round(d.log_prob(xad.tensor([2.0])).item(), 4), d.mean.item()
        (-0.9808, 2.0)
    """

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    _expand_params = ("total_count", "probs", "logits")

    has_enumerate_support = True

    def __init__(self, total_count: Any = 1, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self.probs, self.logits, count = binary_params("Binomial", probs, logits, total_count)
        self.total_count = _ops.astype(count, self.probs.dtype)
        self._count = int(total_count) if isinstance(total_count, (int, float)) else None
        super().__init__(self.probs.shape)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    def _host_count(self, what: str) -> int:
        if self._count is None:
            raise NotImplementedError(
                f"Binomial.{what}: total_count is a tensor, and reading it would copy device "
                f"data to the host; pass total_count as a Python int")
        return self._count

    def sample(self, sample_shape: Shape = ()) -> Tensor:
        shape = self._shape(sample_shape)
        return binomial_draws(_ops.broadcast_to(self.total_count, shape),
                              _ops.broadcast_to(self.probs, shape))

    def log_prob(self, value: Tensor) -> Tensor:
        n, logits = self.total_count, self.logits
        normalize = (n * _clamp_by_zero(logits) + n * _ops.log1p(_ops.exp(-_ops.abs(logits)))
                     - lgamma(n + 1))
        return value * logits - lgamma(value + 1) - lgamma(n - value + 1) - normalize

    def entropy(self) -> Tensor:
        self._host_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -_ops.sum(_ops.exp(log_prob) * log_prob, axis=0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """``0 .. total_count`` along a new first axis (then the batch's).

        Example:
            >>> import xad
            >>> xad.distributions.Binomial(2, probs=xad.tensor(0.5)).enumerate_support(
            ...     ).tolist()
            [0.0, 1.0, 2.0]
        """
        n = self._host_count("enumerate_support")
        values = _f.arange(n + 1, dtype=self.probs.dtype, backend=self.probs.backend)
        return support_values(values, self.batch_shape, expand)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        mode = _ops.floor((self.total_count + 1) * self.probs)
        return _ops.where(mode > self.total_count, self.total_count, mode)  # PyTorch's clamp

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

class Geometric(Distribution):
    """The number of failures before the first success of probability ``probs`` (or
    ``logits``), on ``0, 1, 2, ...``.

    Example:
        >>> import xad
        >>> d = xad.distributions.Geometric(probs=xad.tensor([0.5]))
        >>> round(d.log_prob(xad.tensor([2.0])).item(), 4), d.mean.item()
        (-2.0794, 1.0)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer
    _expand_params = ("probs", "logits")

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self.probs, self.logits = binary_params("Geometric", probs, logits)
        super().__init__(self.probs.shape)

    def sample(self, sample_shape: Shape = ()) -> Tensor:
        tiny = _ops.finfo(self.probs.dtype).smallest_normal
        with no_grad():
            u = _f.rand(self._shape(sample_shape), dtype=self.probs.dtype,
                        backend=self.probs.backend)
            return _ops.floor(_ops.log(_ops.clip(u, tiny, None)) / _ops.log1p(-self.probs))

    def log_prob(self, value: Tensor) -> Tensor:
        value, probs = broadcast_all(value, self.probs)
        safe = _ops.where((probs == 1) & (value == 0), 0.0, probs)
        return value * _ops.log1p(-safe) + _ops.log(self.probs)

    def entropy(self) -> Tensor:
        return bce_with_logits(self.logits, self.probs) / self.probs

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return _f.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

def _log_sigmoid(x: Tensor) -> Tensor:
    return -_ops.logaddexp(0.0, -x)

class NegativeBinomial(Distribution):
    """The number of successes before ``total_count`` failures, each trial a success with
    probability ``probs`` (or ``logits``).

    Example:
        >>> import xad
        >>> d = xad.distributions.NegativeBinomial(3.0, probs=xad.tensor([0.5]))
        >>> round(d.log_prob(xad.tensor([2.0])).item(), 4), d.mean.item()
        (-1.674, 3.0)
    """

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer
    _expand_params = ("total_count", "probs", "logits")

    def __init__(self, total_count: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self.probs, self.logits, count = binary_params("NegativeBinomial", probs, logits,
                                                       total_count)
        self.total_count = _ops.astype(count, self.probs.dtype)
        super().__init__(self.probs.shape)

    def sample(self, sample_shape: Shape = ()) -> Tensor:
        with no_grad():
            gamma = Gamma(self.total_count, _ops.exp(-self.logits))
            return poisson_draws(gamma.sample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        n = self.total_count
        unnormalised = n * _log_sigmoid(-self.logits) + value * _log_sigmoid(self.logits)
        norm = -lgamma(n + value) + lgamma(1.0 + value) + lgamma(n)
        return unnormalised - _ops.where(n + value == 0.0, 0.0, norm)

    @property
    def mean(self) -> Tensor:
        return self.total_count * _ops.exp(self.logits)

    @property
    def mode(self) -> Tensor:
        return _ops.clip(_ops.floor((self.total_count - 1) * _ops.exp(self.logits)), 0.0, None)

    @property
    def variance(self) -> Tensor:
        return self.mean / _ops.sigmoid(-self.logits)

