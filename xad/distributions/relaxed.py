"""Concrete (Gumbel-softmax) relaxations, as PyTorch defines them: ``RelaxedBernoulli``
(a sigmoid of ``LogitRelaxedBernoulli``) and ``RelaxedOneHotCategorical`` (an ``exp`` of
``ExpRelaxedCategorical``)."""

from __future__ import annotations

from typing import Any

from .. import factories as _f
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .categorical import Bernoulli, Categorical, _clamp_probs
from .distribution import Distribution, Shape, broadcast_all
from .special import lgamma
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform, SigmoidTransform

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli", "ExpRelaxedCategorical",
           "RelaxedOneHotCategorical"]


def _uniform(shape: tuple[int, ...], like: Tensor) -> Tensor:
    """Uniform draws in ``(0, 1)`` (clipped off its ends, as PyTorch's)."""
    return _clamp_probs(_f.rand(shape, dtype=like.dtype, backend=like.backend))


class LogitRelaxedBernoulli(Distribution):
    """The logit of a relaxed Bernoulli draw at ``temperature`` (Maddison et al., 2017).

    Example:
        >>> import xad
        >>> from xad.distributions.relaxed import LogitRelaxedBernoulli
        >>> d = LogitRelaxedBernoulli(xad.tensor(0.5), probs=xad.tensor([0.5]))
        >>> round(d.log_prob(xad.tensor([0.0])).item(), 4)
        -2.0794
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True
    _expand_params = ("probs", "logits")

    def __init__(self, temperature: Tensor, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        bern = Bernoulli(probs, logits)
        self.temperature, self.probs, self.logits = temperature, bern.probs, bern.logits
        super().__init__(bern.batch_shape)

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        shape = self._shape(sample_shape)
        p = _clamp_probs(_ops.broadcast_to(self.probs, shape))
        u = _uniform(shape, p)
        return (_ops.log(u) - _ops.log1p(-u) + _ops.log(p) - _ops.log1p(-p)) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return _ops.log(self.temperature) + diff - 2 * _ops.log1p(_ops.exp(diff))


class _RelaxedParameters(TransformedDistribution):
    """``temperature``, ``probs`` and ``logits``: the base distribution's."""

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature  # type: ignore[attr-defined]

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs  # type: ignore[attr-defined]

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits  # type: ignore[attr-defined]


class RelaxedBernoulli(_RelaxedParameters):
    """A relaxed Bernoulli on ``(0, 1)``: ``sigmoid`` of a :class:`LogitRelaxedBernoulli`.

    Example:
        >>> import xad
        >>> d = xad.distributions.RelaxedBernoulli(xad.tensor(0.5), probs=xad.tensor([0.3]))
        >>> d.support, d.rsample((2,)).shape
        (Interval(lower_bound=0.0, upper_bound=1.0), (2, 1))
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature: Tensor, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        super().__init__(LogitRelaxedBernoulli(temperature, probs, logits), SigmoidTransform())


class ExpRelaxedCategorical(Distribution):
    """The log of a relaxed one-hot categorical draw at ``temperature`` (Gumbel-softmax in
    log space).

    Example:
        >>> import xad
        >>> from xad.distributions.relaxed import ExpRelaxedCategorical
        >>> d = ExpRelaxedCategorical(xad.tensor(1.0), logits=xad.zeros(3))
        >>> d.event_shape, d.rsample().shape
        ((3,), (3,))
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector  # (the values lie on a submanifold of it)
    has_rsample = True
    _expand_params = ("probs", "logits")

    def __init__(self, temperature: Tensor, probs: Tensor | None = None,
                 logits: Tensor | None = None, validate_args: bool | None = None) -> None:
        cat = Categorical(probs, logits)
        self.temperature, self.probs, self.logits = temperature, cat.probs, cat.logits
        super().__init__(cat.batch_shape, cat.probs.shape[-1:])

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        u = _uniform(self._shape(sample_shape), self.logits)
        scores = (self.logits - _ops.log(-_ops.log(u))) / self.temperature
        return scores - _ops.logsumexp(scores, axis=-1, keepdims=True)

    def log_prob(self, value: Tensor) -> Tensor:
        k = self.event_shape[0]
        logits, value = broadcast_all(self.logits, value)
        t = self.temperature
        log_scale = lgamma(_f.full_like(t, float(k))) + (k - 1) * _ops.log(t)
        score = logits - value * t
        score = _ops.sum(score - _ops.logsumexp(score, axis=-1, keepdims=True), axis=-1)
        return score + log_scale


class RelaxedOneHotCategorical(_RelaxedParameters):
    """A relaxed one-hot categorical on the simplex: ``exp`` of an
    :class:`ExpRelaxedCategorical` (the Gumbel-softmax / Concrete distribution).

    Example:
        >>> import xad
        >>> d = xad.distributions.RelaxedOneHotCategorical(xad.tensor(0.5), logits=xad.zeros(3))
        >>> round(d.rsample().sum().item(), 5)
        1.0
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature: Tensor, probs: Tensor | None = None,
                 logits: Tensor | None = None, validate_args: bool | None = None) -> None:
        super().__init__(ExpRelaxedCategorical(temperature, probs, logits), ExpTransform())
