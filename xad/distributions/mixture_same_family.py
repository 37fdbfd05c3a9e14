"""``MixtureSameFamily``: a mixture whose components are the last batch axis of one
distribution, weighted by a ``Categorical``."""

from __future__ import annotations

from typing import Any

from .. import ops as _ops
from ..grad_mode import no_grad
from ..tensor import Tensor
from . import constraints
from .categorical import Categorical
from .distribution import Distribution, Shape

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """``mixture_distribution`` (a ``Categorical`` over ``K``) choosing among the ``K``
    components on the last batch axis of ``component_distribution``.

    Example:
        >>> import xad
        >>> from xad.distributions import Categorical, MixtureSameFamily, Normal
        >>> mix = Categorical(probs=xad.tensor([0.5, 0.5]))
        >>> d = MixtureSameFamily(mix, Normal(xad.tensor([-1.0, 1.0]), 1.0))
        >>> d.mean.item(), d.variance.item()
        (0.0, 2.0)
    """

    arg_constraints: dict[str, Any] = {}
    _expand_dists = ("_mixture_distribution", "_component_distribution")

    def __init__(self, mixture_distribution: Categorical,
                 component_distribution: Distribution,
                 validate_args: bool | None = None) -> None:
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(f"MixtureSameFamily: mixture_distribution must be a Categorical, "
                             f"found {type(mixture_distribution).__name__}")
        if not isinstance(component_distribution, Distribution):
            raise ValueError(f"MixtureSameFamily: component_distribution must be a "
                             f"Distribution, found {type(component_distribution).__name__}")
        mdbs, cbs = mixture_distribution.batch_shape, component_distribution.batch_shape
        km, kc = mixture_distribution.logits.shape[-1], (cbs or (None,))[-1]
        if any(a != 1 and b != 1 and a != b for a, b in zip(mdbs[::-1], cbs[-2::-1])):
            raise ValueError(f"MixtureSameFamily: mixture_distribution.batch_shape {mdbs} is "
                             f"not compatible with component_distribution.batch_shape {cbs}")
        if km != kc:
            raise ValueError(f"MixtureSameFamily: the mixture has {km} components but "
                             f"component_distribution.batch_shape[-1] is {kc}")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(cbs[:-1], component_distribution.event_shape)

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self) -> Categorical:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    def _pad(self, x: Tensor) -> Tensor:
        return _ops.expand_dims(x, axis=-1 - self._event_ndims)

    def _pad_mixture(self, x: Tensor) -> Tensor:
        """Mixture weights ``(..., K)`` as ``(..., [1s], K, [1 per event axis])``."""
        pad = len(self.batch_shape) - len(self.mixture_distribution.batch_shape)
        pad = 0 if len(self.mixture_distribution.batch_shape) == 1 else pad
        shape = tuple(x.shape[:-1]) + (1,) * pad + tuple(x.shape[-1:])
        return _ops.reshape(x, shape + (1,) * self._event_ndims)

    @property
    def mean(self) -> Tensor:
        probs = self._pad_mixture(self.mixture_distribution.probs)
        return _ops.sum(probs * self.component_distribution.mean, axis=-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        probs = self._pad_mixture(self.mixture_distribution.probs)
        axis = -1 - self._event_ndims
        comp = self.component_distribution
        mean_cond_var = _ops.sum(probs * comp.variance, axis=axis)
        var_cond_mean = _ops.sum(probs * (comp.mean - self._pad(self.mean)) ** 2, axis=axis)
        return mean_cond_var + var_cond_mean

    def cdf(self, value: Tensor) -> Tensor:
        cdf_x = self.component_distribution.cdf(self._pad(value))
        return _ops.sum(cdf_x * self.mixture_distribution.probs, axis=-1)

    def log_prob(self, value: Tensor) -> Tensor:
        log_prob_x = self.component_distribution.log_prob(self._pad(value))
        log_mix = _ops.log_softmax(self.mixture_distribution.logits, axis=-1)
        return _ops.logsumexp(log_prob_x + log_mix, axis=-1)

    def sample(self, sample_shape: Shape = ()) -> Tensor:
        with no_grad():
            gather = len(sample_shape) + len(self.batch_shape)
            # one choice per batch member, also where the mixture's batch shape is shorter
            mix = self.mixture_distribution.expand(self.batch_shape).sample(sample_shape)
            comp = self.component_distribution.sample(sample_shape)
            index = _ops.reshape(mix, tuple(mix.shape) + (1,) * (self._event_ndims + 1))
            index = _ops.broadcast_to(index, tuple(comp.shape[:gather]) + (1,) + self.event_shape)
            return _ops.squeeze(_ops.take_along_axis(comp, index, axis=gather), axis=gather)

    def __repr__(self) -> str:
        return (f"MixtureSameFamily(\n  {self.mixture_distribution},\n  "
                f"{self.component_distribution})")
