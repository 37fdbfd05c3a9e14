"""``ContinuousBernoulli``: the density on ``[0, 1]`` proportional to
``p^x (1 - p)^(1 - x)`` (Loaiza-Ganem and Cunningham, 2019), with PyTorch's Taylor
expansions near ``p = 1/2`` (inside ``lims``), sampled by its quantile (reparameterised)."""

from __future__ import annotations

import math
from typing import Any

from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .categorical import _clamp_probs, bce_with_logits, binary_params
from .distribution import Distribution, Shape
from .exponential import uniform_like

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(Distribution):
    """The continuous Bernoulli distribution given ``probs`` or ``logits``.

    Example:
        >>> import xad
        >>> d = xad.distributions.ContinuousBernoulli(probs=xad.tensor(0.8, dtype=xad.float64))
        >>> round(d.log_prob(xad.tensor(1.0)).item(), 4), round(d.mean.item(), 4)
        (0.6143, 0.612)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _expand_params = ("probs", "logits")

    has_rsample = True

    def __init__(self, probs: Any = None, logits: Any = None,
                 lims: tuple[float, float] = (0.499, 0.501),
                 validate_args: bool | None = None) -> None:
        self.probs, self.logits = binary_params("ContinuousBernoulli", probs, logits)
        self.probs = _clamp_probs(self.probs)
        self._lims = lims
        super().__init__(self.probs.shape)

    def _outside(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        return _ops.where(self._outside(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self) -> Tensor:
        """The log normalising constant, as a function of ``probs``."""
        cut = self._cut_probs()
        below = _ops.where(cut <= 0.5, cut, 0.0)
        above = _ops.where(cut >= 0.5, cut, 1.0)
        log_norm = (_ops.log(_ops.abs(_ops.log1p(-cut) - _ops.log(cut)))
                    - _ops.where(cut <= 0.5, _ops.log1p(-2.0 * below),
                                 _ops.log(2.0 * above - 1.0)))
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return _ops.where(self._outside(), log_norm, taylor)

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        return self.icdf(uniform_like(self.probs, self._shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        logits, value = _ops.broadcast_arrays(self.logits, value)
        return -bce_with_logits(logits, value) + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        cut = self._cut_probs()
        cdfs = (cut ** value * (1.0 - cut) ** (1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        inner = _ops.where(self._outside(), cdfs, value)
        return _ops.where(value <= 0.0, 0.0, _ops.where(value >= 1.0, 1.0, inner))

    def icdf(self, value: Tensor) -> Tensor:
        cut = self._cut_probs()
        q = ((_ops.log1p(-cut + value * (2.0 * cut - 1.0)) - _ops.log1p(-cut))
             / (_ops.log(cut) - _ops.log1p(-cut)))
        return _ops.where(self._outside(), q, value)

    def entropy(self) -> Tensor:
        log_p0, log_p1 = _ops.log1p(-self.probs), _ops.log(self.probs)
        return self.mean * (log_p0 - log_p1) - self._cont_bern_log_norm() - log_p0

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (_ops.log1p(-cut) - _ops.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x ** 2) * x
        return _ops.where(self._outside(), mus, taylor)

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        var = (cut * (cut - 1.0) / (1.0 - 2.0 * cut) ** 2
               + 1.0 / (_ops.log1p(-cut) - _ops.log(cut)) ** 2)
        x = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return _ops.where(self._outside(), var, taylor)
