"""``OneHotCategorical`` (and its straight-through ``rsample``) and ``Multinomial``:
counts over ``K`` categories, as vectors on the last axis."""

from __future__ import annotations

import math

from .. import factories as _f
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .categorical import Categorical, support_values
from .counts import Binomial
from .distribution import Distribution, Shape, broadcast_shapes

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough", "Multinomial"]


def _one_hot(index: Tensor, k: int, like: Tensor) -> Tensor:
    """``index`` as one-hot vectors of size ``k`` on a new last axis, in ``like``'s dtype."""
    classes = _f.arange(k, dtype=index.dtype, backend=index.backend)
    return _ops.astype(_ops.expand_dims(index, axis=-1) == classes, like.dtype)


class _OverCategories(Distribution):
    """A distribution whose ``probs``/``logits`` are those of its ``_categorical``."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    _expand_dists: tuple[str, ...] = ("_categorical",)

    _categorical: Categorical

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits


class OneHotCategorical(_OverCategories):
    """A ``Categorical`` whose values are one-hot vectors of size ``K``.

    Example:
        >>> import xad
        >>> d = xad.distributions.OneHotCategorical(probs=xad.tensor([0.25, 0.75]))
        >>> round(d.log_prob(xad.tensor([0.0, 1.0])).item(), 4), d.mode.tolist()
        (-0.2877, [0.0, 1.0])
    """

    support = constraints.one_hot

    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.probs.shape[-1:])

    def sample(self, sample_shape: Shape = ()) -> Tensor:
        index = self._categorical.sample(sample_shape)
        return _one_hot(index, self.event_shape[0], self.probs)

    def log_prob(self, value: Tensor) -> Tensor:
        return self._categorical.log_prob(_ops.argmax(value, axis=-1))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The ``K`` one-hot vectors along a new first axis (then the batch's).

        Example:
            >>> import xad
            >>> xad.distributions.OneHotCategorical(logits=xad.zeros(2)).enumerate_support(
            ...     ).tolist()
            [[1.0, 0.0], [0.0, 1.0]]
        """
        k = self.event_shape[0]
        eye = _f.eye(k, dtype=self.probs.dtype, backend=self.probs.backend)
        return support_values(eye, self.batch_shape, expand)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        return _one_hot(_ops.argmax(self.probs, axis=-1), self.event_shape[0], self.probs)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """``OneHotCategorical`` whose ``rsample`` passes gradients straight through: the draw
    plus ``probs - probs.detach()`` (Bengio et al., 2013).

    Example:
        >>> import xad
        >>> p = xad.tensor([0.25, 0.75], requires_grad=True)
        >>> xad.distributions.OneHotCategoricalStraightThrough(probs=p).rsample().sum().backward()
        >>> p.grad.tolist()
        [0.0, 0.0]
    """

    has_rsample = True

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        probs = self.probs
        return self.sample(sample_shape) + (probs - probs.detach())


class Multinomial(_OverCategories):
    """Counts over ``K`` categories of ``total_count`` (a Python int) independent draws from
    ``Categorical(probs, logits)``.

    Example:
        >>> import xad
        >>> d = xad.distributions.Multinomial(2, probs=xad.tensor([0.5, 0.5]))
        >>> round(d.log_prob(xad.tensor([1.0, 1.0])).item(), 4), d.mean.tolist()
        (-0.6931, [1.0, 1.0])
    """

    _expand_dists = ("_categorical", "_binomial")

    def __init__(self, total_count: int = 1, probs: Tensor | None = None,
                 logits: Tensor | None = None, validate_args: bool | None = None) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError(f"Multinomial: total_count must be a Python int (an "
                                      f"inhomogeneous count is not supported), found "
                                      f"{type(total_count).__name__}")
        self.total_count = total_count
        self._categorical = Categorical(probs, logits)
        self._binomial = Binomial(total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self.probs.shape[-1:])

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:
        return constraints.multinomial(self.total_count)

    def sample(self, sample_shape: Shape = ()) -> Tensor:
        index = self._categorical.sample((self.total_count,) + tuple(sample_shape))
        return _ops.sum(_one_hot(index, self.event_shape[0], self.probs), axis=0)

    def log_prob(self, value: Tensor) -> Tensor:
        shape = broadcast_shapes(self.logits.shape, value.shape)
        logits = _ops.broadcast_to(self.logits, shape)
        logits = _ops.where((value == 0) & (logits == -math.inf), 0.0, logits)
        return (_ops.lgamma(_ops.sum(value, axis=-1) + 1)
                - _ops.sum(_ops.lgamma(value + 1), axis=-1) + _ops.sum(logits * value, axis=-1))

    def entropy(self) -> Tensor:
        n = self.total_count
        term1 = n * self._categorical.entropy() - math.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        weights = _ops.exp(self._binomial.log_prob(support)) * _ops.lgamma(support + 1)
        return term1 + _ops.sum(weights, axis=(0, -1))

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)
