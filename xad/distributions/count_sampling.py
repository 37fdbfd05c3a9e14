"""Poisson and binomial draws without a host-side loop: every proposal is drawn at once
from xad's generator and the first accepted one is kept (as :func:`.gamma.standard_gamma`).

Small means count arrivals (exponential or geometric gaps, ``_ARRIVALS`` of them); larger
ones use Hörmann's transformed rejection (PTRS for Poisson, BTRS for binomial, as NumPy
and PyTorch), ``_ROUNDS`` proposals each (acceptance above 0.85 per proposal).
"""

from __future__ import annotations

import math

from .. import dtypes as _dt
from .. import factories as _f
from .. import ops as _ops
from ..grad_mode import no_grad
from ..tensor import Tensor

__all__ = ["poisson_draws", "binomial_draws"]

_ARRIVALS = 48  # P(more than 48 events | mean < 10) < 1e-15
_ROUNDS = 16
_SMALL = 10.0  # below this mean, count arrivals
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _uniforms(like: Tensor, shape: tuple[int, ...]) -> Tensor:
    return _f.rand(shape, dtype=like.dtype, backend=like.backend)


def _first(accept: Tensor, values: Tensor) -> Tensor:
    """The value of the first accepted proposal along axis 0 (the first proposal where
    none is: the chance of that is below 1e-12)."""
    first = _ops.argmax(_ops.astype(accept, _dt.int32), axis=0, keepdims=True)
    return _ops.take_along_axis(values, first, axis=0)[0]


def _ptrs(lam: Tensor) -> Tensor:
    """Poisson draws for ``lam >= 10`` (Hörmann 1993, as NumPy's ``random_poisson_ptrs``)."""
    shape = (_ROUNDS,) + tuple(lam.shape)
    slam, loglam = _ops.sqrt(lam), _ops.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    log_inv_alpha = _ops.log(1.1239 + 1.1328 / (b - 3.4))
    vr = 0.9277 - 3.6224 / (b - 2)
    u = _uniforms(lam, shape) - 0.5
    v = _uniforms(lam, shape)
    us = _ops.clip(0.5 - _ops.abs(u), 1e-300, None)
    k = _ops.floor((2 * a / us + b) * u + lam + 0.43)
    quick = (us >= 0.07) & (v <= vr)
    valid = (k >= 0) & ~((us < 0.013) & (v > us))
    ks = _ops.where(k >= 0, k, 0.0)
    lhs = _ops.log(v) + log_inv_alpha - _ops.log(a / (us * us) + b)
    rhs = -lam + ks * loglam - _ops.lgamma(ks + 1)
    return _first(quick | (valid & (lhs <= rhs)), k)


def poisson_draws(rate: Tensor) -> Tensor:
    """Poisson(``rate``) draws of ``rate``'s shape and dtype, without gradient.

    Example:
        >>> import xad
        >>> xad.manual_seed(0)
        >>> poisson_draws(xad.tensor([0.0, 3.0, 50.0])).shape
        (3,)
    """
    with no_grad():
        small = rate < _SMALL
        lam = _ops.where(small, rate, 1.0)
        gaps = -_ops.log1p(-_uniforms(rate, (_ARRIVALS,) + tuple(rate.shape)))
        count = _ops.sum(_ops.astype(_ops.cumsum(gaps, axis=0) <= lam, rate.dtype), axis=0)
        large = _ptrs(_ops.where(small, _SMALL, rate))
        return _ops.where(small, count, large)


def _stirling_tail(k: Tensor) -> Tensor:
    """``log k! - log`` of Stirling's approximation to it."""
    return _ops.lgamma(k + 1) - (k + 0.5) * _ops.log(k + 1) + (k + 1) - _HALF_LOG_2PI


def _btrs(n: Tensor, p: Tensor) -> Tensor:
    """Binomial draws for ``n p >= 10``, ``p <= 1/2`` (Hörmann 1993, as PyTorch's)."""
    shape = (_ROUNDS,) + tuple(n.shape)
    sd = _ops.sqrt(n * p * (1 - p))
    b = 1.15 + 2.53 * sd
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c, vr, r = n * p + 0.5, 0.92 - 4.2 / b, p / (1 - p)
    alpha = (2.83 + 5.1 / b) * sd
    m = _ops.floor((n + 1) * p)
    u = _uniforms(n, shape) - 0.5
    v = _uniforms(n, shape)
    us = _ops.clip(0.5 - _ops.abs(u), 1e-300, None)
    k = _ops.floor((2 * a / us + b) * u + c)
    inside = (k >= 0) & (k <= n)
    ks = _ops.clip(k, 0.0, n)
    bound = ((m + 0.5) * _ops.log((m + 1) / (r * (n - m + 1)))
             + (n + 1) * _ops.log((n - m + 1) / (n - ks + 1))
             + (ks + 0.5) * _ops.log(r * (n - ks + 1) / (ks + 1))
             + _stirling_tail(m) + _stirling_tail(n - m)
             - _stirling_tail(ks) - _stirling_tail(n - ks))
    quick = (us >= 0.07) & (v <= vr)
    return _first(inside & (quick | (_ops.log(v * alpha / (a / (us * us) + b)) <= bound)), ks)


def _inversion(n: Tensor, p: Tensor) -> Tensor:
    """Binomial draws for ``n p < 10``: how many geometric gaps fit in ``n`` trials."""
    u = _uniforms(n, (_ARRIVALS,) + tuple(n.shape))
    gaps = _ops.ceil(_ops.log(u) / _ops.log1p(-p))
    return _ops.sum(_ops.astype(_ops.cumsum(gaps, axis=0) <= n, n.dtype), axis=0)


def binomial_draws(count: Tensor, probs: Tensor) -> Tensor:
    """Binomial(``count``, ``probs``) draws of their (common) shape, without gradient.

    Example:
        >>> import xad
        >>> xad.manual_seed(0)
        >>> binomial_draws(xad.tensor([10.0, 100.0]), xad.tensor([1.0, 0.0])).tolist()
        [10.0, 0.0]
    """
    with no_grad():
        flip = probs > 0.5
        q = _ops.where(flip, 1 - probs, probs)
        inside = (count > 0) & (q > 0)
        n, q = _ops.where(inside, count, 1.0), _ops.where(inside, q, 0.25)
        small = n * q < _SMALL
        draws = _ops.where(small, _inversion(n, _ops.where(small, q, 0.25)),
                           _btrs(_ops.where(small, 40.0, n), q))
        draws = _ops.where(inside, draws, 0.0)
        return _ops.where(flip, count - draws, draws)
