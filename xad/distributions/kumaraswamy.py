"""``Kumaraswamy``: a Uniform pushed through powers onto ``(0, 1)``, as PyTorch defines it
through ``TransformedDistribution``."""

from __future__ import annotations

import math
from typing import Any

from .. import factories as _f
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .distribution import broadcast_all
from .gumbel_weibull_pareto import EULER_CONSTANT
from .normal import Uniform
from .special import digamma, lgamma
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform

__all__ = ["Kumaraswamy"]


def _moments(a: Tensor, b: Tensor, n: int) -> Tensor:
    """``E[X^n]`` of a Kumaraswamy(a, b): ``b B(1 + n / a, b)``."""
    arg = 1 + n / a
    return b * _ops.exp(lgamma(arg) + lgamma(b) - lgamma(arg + b))


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on ``(0, 1)``: ``(1 - U^(1/b))^(1/a)``, ``a`` =
    ``concentration1``, ``b`` = ``concentration0``.

    Example:
        >>> import xad
        >>> d = xad.distributions.Kumaraswamy(2.0, 2.0)
        >>> round(d.log_prob(xad.tensor(0.5)).item(), 4), round(d.mean.item(), 4)
        (0.4055, 0.5333)
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True
    _expand_params = ("concentration1", "concentration0")

    def __init__(self, concentration1: Any, concentration0: Any,
                 validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1,
                                                                 concentration0)
        base = Uniform(_f.zeros_like(self.concentration0), _f.ones_like(self.concentration0))
        super().__init__(base, [PowerTransform(1 / self.concentration0),
                                AffineTransform(1.0, -1.0),
                                PowerTransform(1 / self.concentration1)])

    @property
    def mean(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        """``((a - 1) / (a b - 1)) ** (1 / a)`` where ``a, b >= 1``, NaN elsewhere (PyTorch's
        formula gives NaN wherever ``b > 1``: docs/PORTING.md)."""
        a, b = self.concentration1, self.concentration0
        inside = (a >= 1) & (b >= 1) & (a * b > 1)
        safe_a = _ops.where(inside, a, 2.0)
        safe_b = _ops.where(inside, b, 2.0)
        mode = ((safe_a - 1) / (safe_a * safe_b - 1)) ** (1 / safe_a)
        return _ops.where(inside, mode, math.nan)

    @property
    def variance(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 2) - self.mean ** 2

    def entropy(self) -> Tensor:
        t1 = 1 - 1 / self.concentration1
        t0 = 1 - 1 / self.concentration0
        h0 = digamma(self.concentration0 + 1) + EULER_CONSTANT
        return t0 + t1 * h0 - _ops.log(self.concentration1) - _ops.log(self.concentration0)
