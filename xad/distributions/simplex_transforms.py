"""Transforms onto the simplex (PyTorch's): ``SoftmaxTransform`` (not bijective) and
``StickBreakingTransform`` (a bijection from ``K - 1`` reals)."""

from __future__ import annotations

from collections.abc import Sequence

from .. import factories as _f
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .elementwise_transforms import _clipped_sigmoid, _Stateless

__all__ = ["SoftmaxTransform", "StickBreakingTransform"]


class SoftmaxTransform(_Stateless):
    """``y = softmax(x)`` on the last dimension; the inverse is ``log y`` (one of many).

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import SoftmaxTransform
        >>> SoftmaxTransform()(xad.zeros(2)).tolist()
        [0.5, 0.5]
    """

    domain, codomain = constraints.real_vector, constraints.simplex

    def _call(self, x: Tensor) -> Tensor:
        probs = _ops.exp(x - _ops.max(x, axis=-1, keepdims=True))
        return probs / _ops.sum(probs, axis=-1, keepdims=True)

    def _inverse(self, y: Tensor) -> Tensor:
        return _ops.log(y)


def _log_offset(x: Tensor, k: int) -> Tensor:
    """``log([k, k - 1, ..., 1])``: the shift that maps ``x = 0`` to the simplex's centre."""
    return _ops.log(_f.arange(k, 0, -1, dtype=x.dtype, backend=x.backend))


def _pad_one(x: Tensor, before: bool) -> Tensor:
    one = _f.ones_like(x[..., :1])
    return _ops.concat([one, x] if before else [x, one], axis=-1)


class StickBreakingTransform(_Stateless):
    """The stick-breaking bijection from ``K - 1`` reals onto the ``K``-simplex.

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import StickBreakingTransform
        >>> t = StickBreakingTransform()
        >>> [round(v, 6) for v in t(xad.zeros(2)).tolist()]
        [0.333333, 0.333333, 0.333333]
    """

    domain, codomain, bijective = constraints.real_vector, constraints.simplex, True

    def _call(self, x: Tensor) -> Tensor:
        z = _clipped_sigmoid(x - _log_offset(x, x.shape[-1]))
        return _pad_one(z, before=False) * _pad_one(_ops.cumprod(1 - z, axis=-1), before=True)

    def _inverse(self, y: Tensor) -> Tensor:
        y_crop = y[..., :-1]
        sf = 1 - _ops.cumsum(y_crop, axis=-1)
        # clipped positive: it is not where y[-1] ~ 0 or y[:-1].sum() ~ 1
        sf = _ops.clip(sf, _ops.finfo(y.dtype).smallest_normal, None)
        return _ops.log(y_crop) - _ops.log(sf) + _log_offset(y, y.shape[-1] - 1)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        x = x - _log_offset(x, x.shape[-1])
        # 1 - sigmoid(x) = exp(-x) sigmoid(x)
        return _ops.sum(-x - _ops.softplus(-x) + _ops.log(y[..., :-1]), axis=-1)

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError("StickBreakingTransform: too few dimensions on input: ()")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError("StickBreakingTransform: too few dimensions on input: ()")
        return tuple(shape[:-1]) + (shape[-1] - 1,)
