"""``Chi2``, ``StudentT`` and ``FisherSnedecor``: families built on Gamma draws, so their
``rsample`` is differentiable (through :mod:`.gamma`'s implicit gradient)."""

from __future__ import annotations

import math
from typing import Any

from .. import factories as _f
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution, Shape, broadcast_all
from .gamma import Gamma
from .special import digamma, lgamma

__all__ = ["Chi2", "StudentT", "FisherSnedecor"]


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``.

    Example:
        >>> import xad
        >>> d = xad.distributions.Chi2(xad.tensor(4.0))
        >>> d.mean.item(), d.variance.item(), d.df.item()
        (4.0, 8.0, 4.0)
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Any, validate_args: bool | None = None) -> None:
        super().__init__(0.5 * df, 0.5)

    @property
    def df(self) -> Tensor:
        return self.concentration * 2


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, ``loc`` and ``scale``.

    Example:
        >>> import xad
        >>> d = xad.distributions.StudentT(xad.tensor(3.0))
        >>> round(d.log_prob(xad.tensor(0.0)).item(), 4), d.variance.item()
        (-1.0009, 3.0)
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    _expand_params = ("df", "loc", "scale")
    _expand_dists = ("_chi2",)

    has_rsample = True

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0,
                 validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape)

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        x = _f.randn(self._shape(sample_shape), dtype=self.df.dtype, backend=self.df.backend)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * _ops.rsqrt(z / self.df)

    def log_prob(self, value: Tensor) -> Tensor:
        y = (value - self.loc) / self.scale
        df = self.df
        z = (_ops.log(self.scale) + 0.5 * _ops.log(df) + 0.5 * math.log(math.pi)
             + lgamma(0.5 * df) - lgamma(0.5 * (df + 1.0)))
        return -0.5 * (df + 1.0) * _ops.log1p(y ** 2 / df) - z

    def entropy(self) -> Tensor:
        df = self.df
        lbeta = lgamma(0.5 * df) + math.lgamma(0.5) - lgamma(0.5 * (df + 1))
        return (_ops.log(self.scale) + 0.5 * (df + 1) * (digamma(0.5 * (df + 1))
                                                         - digamma(0.5 * df))
                + 0.5 * _ops.log(df) + lbeta)

    @property
    def mean(self) -> Tensor:
        return _ops.where(self.df <= 1, math.nan, self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        big = df > 2
        safe = _ops.where(big, df, 3.0)
        var = self.scale ** 2 * safe / (safe - 2)
        return _ops.where(big, var, _ops.where(df > 1, math.inf, math.nan))


class FisherSnedecor(Distribution):
    """The F distribution with ``df1`` and ``df2`` degrees of freedom.

    Example:
        >>> import xad
        >>> d = xad.distributions.FisherSnedecor(xad.tensor(4.0), xad.tensor(6.0))
        >>> round(d.log_prob(xad.tensor(1.0)).item(), 4), d.mean.item()
        (-0.8802, 1.5)
    """

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    _expand_params = ("df1", "df2")
    _expand_dists = ("_gamma1", "_gamma2")

    has_rsample = True

    def __init__(self, df1: Any, df2: Any, validate_args: bool | None = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(self.df1.shape)

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        tiny = _ops.finfo(self.df1.dtype).smallest_normal
        x1 = self._gamma1.rsample(sample_shape)
        x2 = _ops.clip(self._gamma2.rsample(sample_shape), tiny, None)
        return _ops.clip(x1 / x2, tiny, None)

    def log_prob(self, value: Tensor) -> Tensor:
        ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
        t1 = lgamma(ct1 + ct2) - lgamma(ct1) - lgamma(ct2)
        t2 = ct1 * _ops.log(ct3) + (ct1 - 1) * _ops.log(value)
        return t1 + t2 - (ct1 + ct2) * _ops.log1p(ct3 * value)

    @property
    def mean(self) -> Tensor:
        df2 = _ops.where(self.df2 <= 2, math.nan, self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self) -> Tensor:
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return _ops.where(self.df1 <= 2, math.nan, mode)

    @property
    def variance(self) -> Tensor:
        df1, df2 = self.df1, _ops.where(self.df2 <= 4, math.nan, self.df2)
        return 2 * df2 ** 2 * (df1 + df2 - 2) / (df1 * (df2 - 2) ** 2 * (df2 - 4))
