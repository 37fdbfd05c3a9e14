"""``Gamma``, ``Beta`` and ``Dirichlet``, sampled from Gamma draws (Marsaglia and Tsang).

``rsample`` differentiates a Gamma draw ``x`` implicitly, ``dx/da = -(dF/da) / f`` (``F``,
``f``: its CDF and density), with PyTorch's approximation of that ratio (a series for small
``x``, Rice's saddle point for large ``a``, a rational fit elsewhere); Beta and Dirichlet
draws are ratios of Gamma draws, differentiated through them.
"""

from __future__ import annotations

from typing import Any

from .. import dtypes as _dt
from .. import factories as _f
from .. import ops as _ops
from ..function import Function, FunctionCtx
from ..grad_mode import no_grad
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution, Shape, broadcast_all
from .special import digamma, lgamma, xlogy

__all__ = ["Gamma", "Beta", "Dirichlet", "standard_gamma", "standard_gamma_grad"]

_ROUNDS = 12  # proposals per draw; each is accepted with probability > 0.95


def standard_gamma(concentration: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Gamma(concentration, 1) draws of ``shape`` (concentration broadcast to it), without
    gradient: Marsaglia and Tsang's squeeze method, all proposals drawn at once (no
    host-side loop), boosted by ``U ** (1 / a)`` for ``a < 1``.
    """
    with no_grad():
        a = _ops.broadcast_to(concentration, shape)
        kw: dict[str, Any] = {"dtype": a.dtype, "backend": a.backend}
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


def _small_x(a: Tensor, x: Tensor) -> Tensor:
    """dx/da for x < 0.8: the Taylor series of the CDF."""
    numer: Tensor | float = 1.0
    denom = a
    series1, series2 = 1.0 / denom, 1.0 / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-x / i)
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    log_x = _ops.log(x)
    pow_x_a = _ops.exp(a * log_x)
    pdf = _ops.exp((a - 1) * log_x - x)
    cdf_a = (log_x - digamma(a)) * pow_x_a * series1 - pow_x_a * series2
    out = -cdf_a / pdf
    return _ops.where(_ops.isnan(out), 0.0, out)


def _large_a(a: Tensor, x: Tensor) -> Tensor:
    """dx/da for a > 8: Rice's saddle point expansion."""
    near = (1 + 24 * a * (1 + 12 * a)) * (1440 * a * a + 6 * x * (53 - 120 * x)
                                          - 65 * x * x / a + a * (107 + 3600 * x)) / (
    1244160 * a ** 4)
    gap = _ops.where(x == a, 1.0, a - x)  # x == a is in the near branch
    denom = _ops.sqrt(8 * a)
    dev = _ops.clip(x - a - a * _ops.log(x / a), 1e-12, None)  # > 0 off the near branch
    term3 = dev ** -1.5
    term23 = denom / gap + _ops.where(x < a, -term3, term3)
    term1 = _ops.log(x / a) * term23 - _ops.sqrt(2 / a) * (a + x) / (gap * gap)
    stirling = 1 + 1 / (12 * a) * (1 + 1 / (24 * a))
    far = -stirling * x * term1 / denom
    return _ops.where((0.9 * a <= x) & (x <= 1.1 * a), near, far)


_RATIONAL = ((0.16009398, -0.094634809, 0.025146376, -0.0030648343,
              1, 0.32668115, 0.10406089, 0.0014179084),
             (0.53487893, 0.1298071, 0.065735949, -0.0015649758,
              0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
             (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
              0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07))


def _rational(a: Tensor, x: Tensor) -> Tensor:
    """dx/da elsewhere: a bivariate rational fit in log(x/a) and log(a)."""
    u, v = _ops.log(x / a), _ops.log(a)
    c = [_RATIONAL[0][i] + u * (_RATIONAL[1][i] + u * _RATIONAL[2][i]) for i in range(8)]
    p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
    q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
    return _ops.exp(p / q)


def standard_gamma_grad(a: Tensor, x: Tensor) -> Tensor:
    """``dx/da`` of a Gamma(a, 1) draw ``x`` (PyTorch's ``_standard_gamma_grad``).

    Example:
        >>> import xad
        >>> a = xad.tensor([0.5, 2.0, 20.0], dtype=xad.float64)
        >>> [round(v, 4) for v in standard_gamma_grad(a, a).tolist()]
        [1.3374, 1.0862, 1.0084]
    """
    with no_grad():
        small = _small_x(a, _ops.where(x < 0.8, x, 0.5))
        large = _large_a(_ops.where(a > 8, a, 9.0), x)
        return _ops.where(x < 0.8, small, _ops.where(a > 8, large, _rational(a, x)))


class _StandardGamma(Function):
    """Gamma(a, 1) draws of a's shape, differentiable in ``a`` (implicitly)."""

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> Tensor:
        x = standard_gamma(a, tuple(a.shape))
        ctx.save_for_backward(a, x)
        return x

    @staticmethod  # one output, so one gradient: narrower than Function's *grads, as documented
    def backward(ctx: FunctionCtx, g: Tensor) -> Tensor:  # type: ignore[override]
        a, x = ctx.saved_tensors
        return g * standard_gamma_grad(a, x)


def _rsample_gamma(concentration: Tensor, shape: tuple[int, ...]) -> Tensor:
    return _StandardGamma.apply(_ops.broadcast_to(concentration, shape))


def _dirichlet_mode(a: Tensor) -> Tensor:
    """PyTorch's: ``(a - 1)+`` normalised; the first vertex where every ``a < 1``."""
    am1 = _ops.where(a >= 1, a - 1, 0.0)  # PyTorch's clamp: the gradient passes at 1
    mode = am1 / _ops.sum(am1, axis=-1, keepdims=True)
    first = _ops.astype(_f.arange(a.shape[-1], backend=a.backend) == 0, a.dtype)
    return _ops.where(_ops.all(a < 1, axis=-1, keepdims=True), first, mode)


class Gamma(Distribution):
    """The Gamma distribution with shape ``concentration`` and inverse scale ``rate``.

    Example:
        >>> import xad
        >>> d = xad.distributions.Gamma(xad.tensor(2.0), xad.tensor(3.0))
        >>> round(d.log_prob(xad.tensor(0.5)).item(), 4), round(d.mean.item(), 4)
        (0.0041, 0.6667)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    _expand_params = ("concentration", "rate")

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None
                 ) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape)

    has_rsample = True

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        return _rsample_gamma(self.concentration, self._shape(sample_shape)) / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        a, r = self.concentration, self.rate
        return xlogy(a, r) + xlogy(a - 1, value) - r * value - lgamma(a)

    def cdf(self, value: Tensor) -> Tensor:
        """The regularised lower incomplete gamma function at ``rate * value``."""
        return _ops.gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a - _ops.log(self.rate) + lgamma(a) + (1 - a) * digamma(a)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        m = (self.concentration - 1) / self.rate
        return _ops.where(m >= 0, m, 0.0)  # PyTorch's clamp: the gradient passes at 0

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

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    _expand_params = ("concentration",)

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.ndim < 1:
            raise ValueError("Dirichlet: concentration needs at least one dimension, found a "
                             "0-d tensor")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:])

    has_rsample = True

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        g = _rsample_gamma(self.concentration, self._shape(sample_shape))
        return g / _ops.sum(g, axis=-1, keepdims=True)

    def log_prob(self, value: Tensor) -> Tensor:
        a = self.concentration
        return (_ops.sum(xlogy(a - 1, value), axis=-1)
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
    def mode(self) -> Tensor:
        return _dirichlet_mode(self.concentration)

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

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    _expand_params = ("concentration1", "concentration0")

    def __init__(self, concentration1: Any, concentration0: Any,
                 validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1,
                                                                 concentration0)
        super().__init__(self.concentration1.shape)

    has_rsample = True

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        shape = self._shape(sample_shape)
        x = _rsample_gamma(self.concentration1, shape)
        y = _rsample_gamma(self.concentration0, shape)
        return x / (x + y)

    def log_prob(self, value: Tensor) -> Tensor:
        a, b = self.concentration1, self.concentration0
        return (xlogy(a - 1, value) + xlogy(b - 1, 1 - value)
                + lgamma(a + b) - lgamma(a) - lgamma(b))

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        return (lgamma(a) + lgamma(b) - lgamma(a + b) - (a - 1) * digamma(a)
                - (b - 1) * digamma(b) + (a + b - 2) * digamma(a + b))

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        both = _ops.stack([self.concentration1, self.concentration0], axis=-1)
        return _dirichlet_mode(both)[..., 0]

    @property
    def variance(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        return a * b / ((a + b) ** 2 * (a + b + 1))
