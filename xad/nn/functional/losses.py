"""Losses as functions, with PyTorch's names, arguments and reductions."""

from __future__ import annotations

import math
from typing import Any

from ... import dtypes as _dt
from ... import ops as _ops
from ...context import context
from ...ops.amp_cast import autocast_float32
from ...ops.cross_entropy import cross_entropy_mean
from ...ops.mse import mse_mean
from ...ops.nll import count_targets, nll_rows
from ...tensor import Tensor
from .layers import _check_in_range, one_hot

__all__ = [
    "mse_loss", "l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "binary_cross_entropy_with_logits",
]

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(loss: Tensor, reduction: str, where: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{where}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def _check_pair(x: Tensor, y: Tensor, where: str) -> tuple[Tensor, Tensor]:
    """Check ``x`` and ``y`` agree; return them (in float32 under autocast)."""
    if not isinstance(y, Tensor):
        raise TypeError(f"{where}: target must be a tensor, got {type(y).__name__}")
    if x.shape != y.shape:
        raise ValueError(f"{where}: input shape {x.shape} and target shape {y.shape} differ; "
                         f"reshape one (broadcasting here is usually a bug)")
    return autocast_float32(x, y, op=where)


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean squared error.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.mse_loss(xad.tensor([1.0, 2.0]), xad.tensor([1.0, 4.0])).item()
        2.0
    """
    input, target = _check_pair(input, target, "mse_loss")
    if reduction == "mean" and input.dtype is target.dtype and input.dtype.is_floating:
        return mse_mean(input, target)  # one node: the composed rule's numbers, two kernels
    d = input - target
    return _reduce(d * d, reduction, "mse_loss")


def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean absolute error."""
    input, target = _check_pair(input, target, "l1_loss")
    return _reduce(_ops.abs(input - target), reduction, "l1_loss")


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0
               ) -> Tensor:
    """Huber loss: ``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - delta/2)``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.huber_loss(xad.tensor([0.0, 0.0]), xad.tensor([0.5, 3.0]), "none").tolist()
        [0.125, 2.5]
    """
    input, target = _check_pair(input, target, "huber_loss")
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    d = input - target
    a = _ops.abs(d)
    near = a < delta
    s = _ops.where(near, d, 0.0)  # (the square's gradient at an infinite d: 0, not inf * 0)
    loss = _ops.where(near, s * s * 0.5, (a - 0.5 * delta) * delta)
    return _reduce(loss, reduction, "huber_loss")


def _class_targets(input: Tensor, target: Tensor, where: str) -> Tensor:
    """Check integer class ``target`` against ``input``; return it, as int64 if unsigned (a
    negative ``ignore_index`` compared with a uint8 target wraps to a class on some
    backends)."""
    if not isinstance(target, Tensor):
        raise TypeError(f"{where}: target must be a tensor of class indices, got "
                        f"{type(target).__name__}")
    if target.dtype.is_floating or target.dtype is _dt.bool_:
        raise TypeError(f"{where}: class-index targets must be an integer tensor, got "
                        f"{target.dtype} (for class probabilities pass a floating target of "
                        f"the input's shape to cross_entropy)")
    expect = (input.shape[0],) + input.shape[2:] if input.ndim >= 2 else ()
    if tuple(target.shape) != expect:
        raise ValueError(f"{where}: input of shape {input.shape} (N, C, ...) needs a target "
                         f"of shape {expect}, got {target.shape}")
    return target.astype(_dt.int64) if target.dtype.name.startswith("uint") else target


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities ``input`` (``(N, C, ...)`` or ``(C,)``)
    at integer class ``target``; ``mean`` divides by the summed weights of counted targets.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.nll_loss(xad.tensor([[-1.0, -2.0]]), xad.tensor([1])).item()
        2.0
    """
    target = _class_targets(input, target, "nll_loss")
    (input,) = autocast_float32(input, op="nll_loss")
    axis = 1 if input.ndim >= 2 else 0
    c = input.shape[axis]
    if weight is not None and tuple(weight.shape) != (c,):
        raise ValueError(f"nll_loss: weight must have shape ({c},), got {weight.shape}")
    _check_in_range(target, c, "nll_loss", "target", "the number of classes", ignore_index)
    if input.ndim > 2:  # move classes last to match the one-hot
        perm = (0, *range(2, input.ndim), 1)
        input = input.permute_dims(perm)
    if weight is None and input.dtype.is_floating:  # the one-hot never stored
        return _nll(input, target, c, ignore_index, reduction)
    oh = one_hot(target, c, dtype=input.dtype)  # (N, ..., C)
    if ignore_index is not None and 0 <= ignore_index < c:  # else its one-hot row is zero
        oh = oh * (target != ignore_index).astype(input.dtype).expand_dims(-1)
    w = oh if weight is None else oh * weight.astype(input.dtype)
    # -w[t] * x[t] per counted row, as PyTorch: the other classes' values never enter (a
    # masked log-probability of -inf would make -inf * 0 = nan of a one-hot product)
    picked = input if weight is None else input * weight.astype(input.dtype)
    loss = -_ops.where(oh != 0, picked, 0).sum(axis=-1)
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction, "nll_loss")


def _one_node(input: Tensor, target: Any, weight: Any, reduction: str,
              label_smoothing: float) -> bool:
    """Whether :func:`cross_entropy` is the commonest case, one node
    (:func:`~xad.ops.cross_entropy.cross_entropy_mean`: the composed form's bits): floating
    logits ``(N, C)``, integer targets, the mean, no class weights, no smoothing, no
    autocast."""
    return (reduction == "mean" and weight is None and not label_smoothing
            and context.autocast is None and isinstance(input, Tensor) and input.ndim == 2
            and isinstance(target, Tensor) and input.dtype.is_floating
            and not target.dtype.is_floating and 0 not in input.shape)


def _counted_mean(total: Tensor, count: Tensor) -> Tensor:
    """``total / count``, NaN where nothing counts (every target ignored) but with a zero
    gradient there, as PyTorch's (the division's ``g / 0 = inf`` times the ignored rows'
    zeros made every gradient NaN)."""
    some = count > 0
    return _ops.where(some, total / _ops.where(some, count, 1.0), math.nan)


def _nll(logp: Tensor, target: Tensor, c: int, ignore: int, reduction: str) -> Tensor:
    """nll_loss without class weights, classes last: the composed one-hot rule's numbers in
    two reduction kernels (``xad.ops.nll``) and the sums the reduction asks for."""
    loss = nll_rows(logp, target, ignore if 0 <= ignore < c else None)
    if reduction == "mean":
        return loss.sum() / count_targets(target, c, ignore, logp.dtype)
    return _reduce(loss, reduction, "nll_loss")


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy of logits ``input`` (``(N, C, ...)`` or ``(C,)``) against integer class
    indices (or class probabilities of the input's shape), through a stable log-softmax.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> round(F.cross_entropy(xad.tensor([[0.0, 0.0]]), xad.tensor([1])).item(), 4)
        0.6931
    """
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got "
                         f"{label_smoothing}")
    if _one_node(input, target, weight, reduction, label_smoothing):
        target = _class_targets(input, target, "nll_loss")
        _check_in_range(target, input.shape[1], "nll_loss", "target", "the number of classes",
                        ignore_index)
        return cross_entropy_mean(input, target, ignore_index)
    axis = 1 if input.ndim >= 2 else 0
    logp = _ops.log_softmax(input, axis=axis)
    c = input.shape[axis]
    if isinstance(target, Tensor) and target.dtype.is_floating:  # class probabilities
        if target.shape != input.shape:
            raise TypeError(f"cross_entropy: a target is either integer class indices of "
                            f"shape (N, ...) or class probabilities of the input's shape "
                            f"{input.shape}; got {target.dtype} of shape {target.shape} "
                            f"(cast indices with .astype(xad.int64))")
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / c
        wl = logp if weight is None else logp * weight.reshape(
            (c,) + (1,) * (input.ndim - axis - 1))
        loss = -(wl * target).sum(axis=axis)
        return _reduce(loss, reduction, "cross_entropy")
    nll = nll_loss(logp, target, weight, ignore_index, reduction)
    if not label_smoothing:
        return nll
    target = _class_targets(input, target, "cross_entropy")
    lp = logp if input.ndim < 2 else logp.permute_dims((0, *range(2, input.ndim), 1))
    if weight is not None:
        lp = lp * weight.astype(lp.dtype)
    smooth = -lp.sum(axis=-1) * (1.0 / c)
    kept = target != ignore_index
    valid = kept.astype(input.dtype)
    smooth = smooth * valid
    if reduction == "mean":  # PyTorch's: divided by the summed weights of counted targets
        count = valid if weight is None else valid * (one_hot(
            _ops.where(kept, target, 0), c, dtype=lp.dtype) * weight.astype(lp.dtype)).sum(-1)
        smooth = _counted_mean(smooth.sum(), count.sum())
    else:
        smooth = _reduce(smooth, reduction, "cross_entropy")
    return nll * (1 - label_smoothing) + smooth * label_smoothing


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Binary cross-entropy of logits ``input`` against targets in ``[0, 1]``, stably:
    ``(1 - y) x + (1 + (pos_weight - 1) y) softplus(-x)``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> round(F.binary_cross_entropy_with_logits(xad.zeros(2), xad.ones(2)).item(), 4)
        0.6931
    """
    input, target = _check_pair(input, target, "binary_cross_entropy_with_logits")
    y = target.astype(input.dtype) if target.dtype != input.dtype else target
    sp = _ops.softplus(-input)
    if pos_weight is None:
        loss = (1 - y) * input + sp
    else:
        loss = (1 - y) * input + (1 + (pos_weight - 1) * y) * sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")
