"""``Categorical`` and ``Bernoulli``: discrete distributions, by ``probs`` or ``logits``."""

from __future__ import annotations

import math
from typing import Any

from .. import dtypes as _dt
from .. import factories as _f
from .. import ops as _ops
from ..grad_mode import no_grad
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution, Shape, broadcast_all, broadcast_shapes

__all__ = ["Categorical", "Bernoulli", "binary_params", "bce_with_logits", "support_values"]


def _one_of(name: str, probs: Any, logits: Any) -> None:
    if (probs is None) == (logits is None):
        raise ValueError(f"{name}: pass exactly one of probs and logits")


def _clamp_probs(p: Tensor) -> Tensor:
    eps = _ops.finfo(p.dtype).eps
    return _ops.clip(p, eps, 1 - eps)


def binary_params(name: str, probs: Any, logits: Any, *others: Any) -> list[Tensor]:
    """``probs, logits, *others`` broadcast together, for a family given exactly one of
    ``probs`` (``P(1)``) and ``logits`` (``log(p / (1 - p))``); the other is derived from it
    (PyTorch's ``probs_to_logits``/``logits_to_probs``, binary)."""
    _one_of(name, probs, logits)
    if probs is not None:
        probs, *rest = broadcast_all(probs, *others)
        p = _clamp_probs(probs)
        return [probs, _ops.log(p) - _ops.log1p(-p), *rest]
    logits, *rest = broadcast_all(logits, *others)
    return [_ops.sigmoid(logits), logits, *rest]


def support_values(values: Tensor, batch_shape: tuple[int, ...], expand: bool) -> Tensor:
    """``enumerate_support``: ``values`` (the support along axis 0, then the event axes)
    given ``len(batch_shape)`` axes of size 1 after the first, broadcast to the batch
    when ``expand``."""
    n, event = values.shape[0], tuple(values.shape[1:])
    values = _ops.reshape(values, (n,) + (1,) * len(batch_shape) + event)
    return _ops.broadcast_to(values, (n,) + batch_shape + event) if expand else values


class Categorical(Distribution):
    """A distribution over ``0 .. K-1`` given by the last axis of ``probs`` (non-negative,
    normalised here) or ``logits`` (unnormalised log-probabilities).

    Example:
        >>> import xad
        >>> d = xad.distributions.Categorical(probs=xad.tensor([0.25, 0.75]))
        >>> round(d.log_prob(xad.tensor(1)).item(), 4), round(d.entropy().item(), 4)
        (-0.2877, 0.5623)
    """

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    _expand_params = ("probs", "logits")

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        _one_of("Categorical", probs, logits)
        if probs is not None:
            self.probs = probs / _ops.sum(probs, axis=-1, keepdims=True)
            self.logits = _ops.log(_clamp_probs(self.probs))
        else:
            assert logits is not None  # _one_of: exactly one of them was given
            self.logits = logits - _ops.logsumexp(logits, axis=-1, keepdims=True)
            self.probs = _ops.exp(self.logits)
        self._num_events = self.probs.shape[-1]
        super().__init__(self.probs.shape[:-1])

    has_enumerate_support = True

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every category ``0 .. K-1`` along a new first axis (then the batch's).

        Example:
            >>> import xad
            >>> d = xad.distributions.Categorical(logits=xad.zeros(2, 3))
            >>> d.enumerate_support().shape, d.enumerate_support(False).tolist()
            ((3, 2), [[0], [1], [2]])
        """
        values = _f.arange(self._num_events, dtype=_dt.int64, backend=self.probs.backend)
        return support_values(values, self.batch_shape, expand)

    def sample(self, sample_shape: Shape = ()) -> Tensor:
        n = math.prod(sample_shape)
        with no_grad():
            rows = _ops.reshape(self.probs, (-1, self._num_events))
            draws = _f.multinomial(rows, max(n, 1), replacement=True)[:, :n]
            return _ops.reshape(_ops.matrix_transpose(draws), self._shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        value = _ops.astype(value, _dt.int64)
        shape = broadcast_shapes(value.shape, self.batch_shape)
        logits = _ops.broadcast_to(self.logits, shape + (self._num_events,))
        # an out-of-range value has probability 0 (PyTorch raises; checking would read the
        # device): -inf, not another category's log-probability through a wrapped index
        inside = (value >= 0) & (value < self._num_events)
        index = _ops.expand_dims(_ops.broadcast_to(_ops.where(inside, value, 0), shape), axis=-1)
        picked = _ops.take_along_axis(logits, index, axis=-1)[..., 0]
        return _ops.where(inside, picked, -math.inf)

    def entropy(self) -> Tensor:
        logits = _ops.clip(self.logits, _ops.finfo(self.logits.dtype).min, None)
        return -_ops.sum(self.probs * logits, axis=-1)

    @property
    def mean(self) -> Tensor:
        return _f.full(self.batch_shape, math.nan, dtype=self.probs.dtype)

    @property
    def mode(self) -> Tensor:
        return _ops.argmax(self.probs, axis=-1)

    @property
    def variance(self) -> Tensor:
        return _f.full(self.batch_shape, math.nan, dtype=self.probs.dtype)


def bce_with_logits(logits: Tensor, target: Tensor) -> Tensor:
    """Binary cross-entropy of ``target`` given ``logits``, elementwise (stable)."""
    return (_ops.clip(logits, 0.0, None) - logits * target
            + _ops.log1p(_ops.exp(-_ops.abs(logits))))


class Bernoulli(Distribution):
    """A distribution over ``{0, 1}`` with ``P(1) = probs = sigmoid(logits)``.

    Example:
        >>> import xad
        >>> d = xad.distributions.Bernoulli(probs=xad.tensor([0.5, 0.9]))
        >>> [round(v, 4) for v in d.log_prob(xad.tensor([1.0, 0.0])).tolist()]
        [-0.6931, -2.3026]
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    _expand_params = ("probs", "logits")

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self.probs, self.logits = binary_params("Bernoulli", probs, logits)
        super().__init__(self.probs.shape)

    has_enumerate_support = True

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """``0`` and ``1`` along a new first axis (then the batch's).

        Example:
            >>> import xad
            >>> xad.distributions.Bernoulli(probs=xad.tensor([0.2, 0.9])).enumerate_support(
            ...     ).tolist()
            [[0.0, 0.0], [1.0, 1.0]]
        """
        values = _f.arange(2, dtype=self.probs.dtype, backend=self.probs.backend)
        return support_values(values, self.batch_shape, expand)

    def sample(self, sample_shape: Shape = ()) -> Tensor:
        with no_grad():
            u = _f.rand(self._shape(sample_shape), dtype=self.probs.dtype,
                        backend=self.probs.backend)
            return _ops.astype(u < self.probs, self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        logits, value = _ops.broadcast_arrays(self.logits, value)
        return -bce_with_logits(logits, value)

    def entropy(self) -> Tensor:
        return bce_with_logits(self.logits, self.probs)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = _ops.astype(self.probs >= 0.5, self.probs.dtype)
        return _ops.where(self.probs == 0.5, math.nan, mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)
