"""PyTorch's count samplers, ``torch.binomial`` and ``torch.poisson``, and the tensor method
``x.multinomial``, for ``python -m xad.as_torch``; they draw from xad's generator
(``xad.manual_seed``, or ``generator=``), so the draws are not PyTorch's, their distributions
are.

Both samplers invert the cumulative distribution of each element over a window of counts
around its mean (ten standard deviations and ten counts either side, where the mass left
out is below 1e-20), from one uniform draw per element; the window's width reads the
largest rate (or count) to the host once, as PyTorch's CPU kernels read every element.
"""

from __future__ import annotations

import math
from typing import Any

from . import dtypes as _dt
from . import ops as _ops
from .factories import arange, multinomial, rand
from .generator import Generator
from .tensor import Tensor, install_methods

__all__ = ["binomial", "poisson"]

_CHUNK = 1 << 20  # window entries evaluated at once (a few arrays of 8 MiB)


def _invert(log_pmf: Any, lo: Tensor, width: int, like: Tensor,
            generator: Generator | None) -> Tensor:
    """``lo + k``, the first ``k`` of the window ``lo .. lo + width - 1`` whose cumulative
    probability passes a uniform draw (``log_pmf(counts, at)`` the log-probabilities of the
    flat elements ``at``), over chunks of about ``_CHUNK`` window entries."""
    u = _ops.reshape(rand(tuple(like.shape), dtype=_dt.float64, backend=like.backend,
                          generator=generator), (-1,))
    flat_lo, size = _ops.reshape(lo, (-1,)), max(_CHUNK // width, 1)
    steps = arange(width, dtype=_dt.float64, backend=like.backend)
    parts = []
    for start in range(0, u.shape[0], size):
        at = slice(start, start + size)
        counts = _ops.expand_dims(flat_lo[at], axis=-1) + steps
        cdf = _ops.cumsum(_ops.exp(log_pmf(counts, at)), axis=-1)
        below = _ops.sum(_ops.astype(cdf < _ops.expand_dims(u[at], axis=-1), _dt.float64),
                         axis=-1)
        parts.append(flat_lo[at] + _ops.minimum(below, float(width - 1)))
    return _ops.reshape(_ops.concat(parts), tuple(like.shape))


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:  # noqa: A002
    """``torch.poisson``: a Poisson draw of each rate in ``input`` (floating; rates must not
    be negative), in ``input``'s dtype; its gradient is 0, as PyTorch's.

    Example:
        >>> import xad
        >>> from xad.torch_draws import poisson
        >>> poisson(xad.tensor([0.0, 0.0])).tolist()
        [0.0, 0.0]
    """
    if not input.dtype.is_floating:
        raise RuntimeError(f'"poisson_cpu" not implemented for \'{input.dtype}\'; pass '
                           f"floating-point rates")
    lam = _ops.astype(input.detach(), _dt.float64)
    if input.numel() == 0:
        return input.detach() * 0
    if bool(_ops.any(lam < 0).item()):  # (an explicit read: PyTorch's check)
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    top = float(_ops.max(lam).item())
    width = math.ceil(20 * math.sqrt(top) + 30)
    lo = _ops.clip(_ops.floor(lam - 10 * _ops.sqrt(lam) - 10), 0, None)
    safe = _ops.reshape(_ops.where(lam > 0, lam, 1.0), (-1,))
    def log_pmf(k: Tensor, at: slice) -> Tensor:
        r = _ops.expand_dims(safe[at], axis=-1)
        return k * _ops.log(r) - r - _ops.lgamma(k + 1)
    draw = _ops.where(lam > 0, _invert(log_pmf, lo, width, lam, generator), 0.0)
    return _ops.astype(draw, input.dtype) + 0 * input  # (gradient 0, in the graph)


def binomial(count: Tensor, prob: Tensor, generator: Generator | None = None) -> Tensor:
    """``torch.binomial``: a binomial draw for each ``count`` (floating; below 0 gives 0)
    and success probability ``prob`` (clipped to ``[0, 1]``), broadcast together, in their
    dtype. Not differentiable (PyTorch's raises at backward; docs/PORTING.md).

    Example:
        >>> import xad
        >>> from xad.torch_draws import binomial
        >>> binomial(xad.tensor([5.0, 3.0]), xad.tensor([1.0, 0.0])).tolist()
        [5.0, 0.0]
    """
    for name, t in (("count", count), ("prob", prob)):
        if not t.dtype.is_floating:  # (PyTorch's ValueError)
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{t.dtype}")
    n, p = _ops.broadcast_arrays(_ops.astype(count.detach(), _dt.float64),
                                 _ops.astype(prob.detach(), _dt.float64))
    d = _dt.promote_types(count.dtype, prob.dtype)
    if n.numel() == 0:
        return _ops.astype(n, d)
    n, p = _ops.clip(_ops.floor(n), 0, None), _ops.clip(p, 0.0, 1.0)
    sd = _ops.sqrt(n * p * (1 - p))
    top = float(_ops.max(sd).item())
    width = min(math.ceil(20 * top + 30), int(_ops.max(n).item()) + 1)
    lo = _ops.clip(_ops.floor(n * p - 10 * sd - 10), 0, None)
    inner = (p > 0) & (p < 1)
    nf, qf = _ops.reshape(n, (-1,)), _ops.reshape(_ops.where(inner, p, 0.5), (-1,))
    def log_pmf(k: Tensor, at: slice) -> Tensor:
        m, r = _ops.expand_dims(nf[at], axis=-1), _ops.expand_dims(qf[at], axis=-1)
        ok = k <= m
        kk = _ops.where(ok, k, m)
        lp = (_ops.lgamma(m + 1) - _ops.lgamma(kk + 1) - _ops.lgamma(m - kk + 1)
              + kk * _ops.log(r) + (m - kk) * _ops.log1p(-r))
        return _ops.where(ok, lp, -math.inf)
    draw = _ops.minimum(_invert(log_pmf, lo, width, n, generator), n)
    return _ops.astype(_ops.where(inner, draw, _ops.where(p >= 1, n, 0.0)), d)


def _multinomial_method(self: Tensor, num_samples: int, replacement: bool = False, *,
                        generator: Generator | None = None) -> Tensor:
    """``x.multinomial(num_samples, replacement=False)``: :func:`xad.multinomial`."""
    return multinomial(self, num_samples, replacement, generator=generator)


install_methods({"multinomial": _multinomial_method})
