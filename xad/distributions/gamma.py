"""``Gamma``, ``Beta`` and ``Dirichlet``, sampled from Gamma draws (Marsaglia and Tsang).

Their ``rsample`` raises: PyTorch differentiates these samples implicitly (through the
Gamma CDF's derivative in the concentration), which xad does not implement yet.
"""

from __future__ import annotations

from typing import Any

from .. import dtypes as _dt
from .. import factories as _f
from .. import ops as _ops
from ..grad_mode import no_grad
from ..tensor import Tensor
from .distribution import Distribution, Shape, broadcast_all
from .special import digamma, lgamma

__all__ = ["Gamma", "Beta", "Dirichlet", "standard_gamma"]

_ROUNDS = 12  # proposals per draw; each is accepted with probability > 0.95


def standard_gamma(concentration: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Gamma(concentration, 1) draws of ``shape`` (concentration broadcast to it), without
    gradient: Marsaglia and Tsang's squeeze method, all proposals drawn at once (no
    host-side loop), boosted by ``U ** (1 / a)`` for ``a < 1``.
    """
    with no_grad():
        a = _ops.broadcast_to(concentration, shape)
        kw = {"dtype": a.dtype, "backend": a.backend}
        boosted = _ops.where(a < 1, a + 1, a)
        d = boosted - 1 / 3
        c = 1 / _ops.sqrt(9 * d)
        x = _f.randn((_ROUNDS,) + shape, **kw)
        v = (1 + c * x) ** 3
        positive = v > 0
        v = _ops.where(positive, v, 1.0)
        u = _f.rand((_ROUNDS,) + shape, **kw)
        accept = positive & (_ops.log(u) < 0.5 * x * x + d - d * v + d * _ops.log(v))
        first = _ops.argmax(_ops.astype(accept, _dt.int32), axis=0, keepdims=True)
        g = _ops.take_along_axis(d * v, first, axis=0)[0]
        boost = _ops.where(a < 1, _f.rand(shape, **kw) ** (1 / a), 1.0)
        return _ops.clip(g * boost, _ops.finfo(a.dtype).smallest_normal, None)


class Gamma(Distribution):
    """The Gamma distribution with shape ``concentration`` and inverse scale ``rate``.

    Example:
        >>> import xad
        >>> d = xad.distributions.Gamma(xad.tensor(2.0), xad.tensor(3.0))
        >>> round(d.log_prob(xad.tensor(0.5)).item(), 4), round(d.mean.item(), 4)
        (0.0041, 0.6667)
    """

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None
                 ) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape)

    def sample(self, sample_shape: Shape = ()) -> Tensor:
        with no_grad():
            return standard_gamma(self.concentration, self._shape(sample_shape)) / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        a, r = self.concentration, self.rate
        return a * _ops.log(r) + (a - 1) * _ops.log(value) - r * value - lgamma(a)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a - _ops.log(self.rate) + lgamma(a) + (1 - a) * digamma(a)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate ** 2


class Dirichlet(Distribution):
    """The Dirichlet distribution over the simplex, with ``concentration`` on the last axis.

    Example:
        >>> import xad
        >>> d = xad.distributions.Dirichlet(xad.tensor([1.0, 2.0, 3.0]))
        >>> d.event_shape, [round(v, 4) for v in d.mean.tolist()]
        ((3,), [0.1667, 0.3333, 0.5])
    """

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.ndim < 1:
            raise ValueError("Dirichlet: concentration needs at least one dimension, found a "
                             "0-d tensor")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:])

    def sample(self, sample_shape: Shape = ()) -> Tensor:
        with no_grad():
            g = standard_gamma(self.concentration, self._shape(sample_shape))
            return g / _ops.sum(g, axis=-1, keepdims=True)

    def log_prob(self, value: Tensor) -> Tensor:
        a = self.concentration
        return (_ops.sum((a - 1) * _ops.log(value), axis=-1)
                + lgamma(_ops.sum(a, axis=-1)) - _ops.sum(lgamma(a), axis=-1))

    def entropy(self) -> Tensor:
        a = self.concentration
        k, a0 = a.shape[-1], _ops.sum(a, axis=-1)
        return (_ops.sum(lgamma(a), axis=-1) - lgamma(a0) - (k - a0) * digamma(a0)
                - _ops.sum((a - 1) * digamma(a), axis=-1))

    @property
    def mean(self) -> Tensor:
        return self.concentration / _ops.sum(self.concentration, axis=-1, keepdims=True)

    @property
    def variance(self) -> Tensor:
        a0 = _ops.sum(self.concentration, axis=-1, keepdims=True)
        return self.concentration * (a0 - self.concentration) / (a0 ** 2 * (a0 + 1))


class Beta(Distribution):
    """The Beta distribution on ``(0, 1)`` with ``concentration1`` (alpha) and
    ``concentration0`` (beta).

    Example:
        >>> import xad
        >>> d = xad.distributions.Beta(2.0, 2.0)
        >>> round(d.log_prob(xad.tensor(0.5)).item(), 4), d.mean.item()
        (0.4055, 0.5)
    """

    def __init__(self, concentration1: Any, concentration0: Any,
                 validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1,
                                                                 concentration0)
        super().__init__(self.concentration1.shape)

    def sample(self, sample_shape: Shape = ()) -> Tensor:
        with no_grad():
            shape = self._shape(sample_shape)
            x = standard_gamma(self.concentration1, shape)
            y = standard_gamma(self.concentration0, shape)
            return x / (x + y)

    def log_prob(self, value: Tensor) -> Tensor:
        a, b = self.concentration1, self.concentration0
        return ((a - 1) * _ops.log(value) + (b - 1) * _ops.log1p(-value)
                + lgamma(a + b) - lgamma(a) - lgamma(b))

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        return (lgamma(a) + lgamma(b) - lgamma(a + b) - (a - 1) * digamma(a)
                - (b - 1) * digamma(b) + (a + b - 2) * digamma(a + b))

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def variance(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        return a * b / ((a + b) ** 2 * (a + b + 1))
