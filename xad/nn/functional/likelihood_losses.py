"""Losses of probabilities and likelihoods, with PyTorch's names, arguments and numbers:
``binary_cross_entropy kl_div poisson_nll_loss gaussian_nll_loss smooth_l1_loss
multilabel_soft_margin_loss``."""

from __future__ import annotations

import math
import warnings

from ... import ops as _ops
from ...factories import full_like
from ...function import Function, FunctionCtx
from ...tensor import Tensor
from .losses import _check_pair, _reduce

__all__ = ["binary_cross_entropy", "kl_div", "poisson_nll_loss", "gaussian_nll_loss",
           "smooth_l1_loss", "multilabel_soft_margin_loss"]


def _clamped_log(p: Tensor) -> Tensor:
    """``max(log(p), -100)`` whose gradient at ``p = 0`` is 0, not ``0 * inf = NaN`` (a
    saturated sigmoid gives exact 0s and 1s); NaN for ``p < 0`` (a probability outside
    [0, 1], which PyTorch refuses after reading the device)."""
    pos = p > 0
    low = _ops.astype(_ops.where(p == 0, -100.0, math.nan), p.dtype)  # (not the default's)
    return _ops.where(pos, _ops.maximum(_ops.log(_ops.where(pos, p, 1.0)), -100.0), low)


_BCE_EPS = 9.999999960041972e-13  # PyTorch's EPSILON: 1e-12 as a float32


class _BinaryCrossEntropy(Function):
    """The elementwise loss; the input's gradient is PyTorch's ``(p - y) / max(p (1 - p),
    1e-12)`` (finite where a saturated sigmoid gives exact 0s and 1s), the target's that of
    the clamped logs."""

    @staticmethod
    def forward(ctx: FunctionCtx, p: Tensor, y: Tensor) -> Tensor:
        ctx.save_for_backward(p, y)
        return -(y * _clamped_log(p) + (1 - y) * _clamped_log(1 - p))

    @staticmethod
    def backward(ctx, g):  # (untyped: Function's own backward is the op's rule)
        p, y = ctx.saved_tensors
        return (g * (p - y) / _ops.maximum(p * (1 - p), _BCE_EPS),
                g * (_clamped_log(1 - p) - _clamped_log(p)))


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         reduction: str = "mean") -> Tensor:
    """``-(y log(p) + (1 - y) log(1 - p))`` of probabilities ``p``, each log clamped at
    -100 (PyTorch's), optionally weighted.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> round(F.binary_cross_entropy(xad.tensor([0.5]), xad.tensor([1.0])).item(), 4)
        0.6931
    """
    input, target = _check_pair(input, target, "binary_cross_entropy")
    loss = _BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy")


def kl_div(input: Tensor, target: Tensor, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """Kullback-Leibler divergence ``target * (log(target) - input)`` of log-probabilities
    ``input`` (0 where ``target`` is 0); ``reduction="batchmean"`` divides the sum by the
    batch size (the true KL divergence; PyTorch's ``"mean"`` averages over elements).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.kl_div(xad.log(xad.tensor([0.5, 0.5])), xad.tensor([0.5, 0.5]), "sum").item()
        0.0
    """
    input, target = _check_pair(input, target, "kl_div")
    if log_target:
        loss = _ops.exp(target) * (target - input)
    else:
        pos = target > 0  # 0 log 0 = 0; a negative target's is NaN (PyTorch's xlogy)
        tlogt = target * _ops.log(_ops.where(pos, target, 1.0))
        at_zero = _ops.astype(_ops.where(target == 0, 0.0, math.nan), tlogt.dtype)
        loss = _ops.where(pos, tlogt, at_zero) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    if reduction == "mean":
        warnings.warn("kl_div: reduction='mean' divides by the number of elements, not the "
                      "batch size; reduction='batchmean' gives the KL divergence (as PyTorch "
                      "warns)", UserWarning, stacklevel=2)
    return _reduce(loss, reduction, "kl_div")


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True,
                     full: bool = False, eps: float = 1e-8, reduction: str = "mean"
                     ) -> Tensor:
    """Poisson negative log-likelihood: ``exp(input) - target * input`` (``log_input``) or
    ``input - target * log(input + eps)``; ``full`` adds Stirling's term where target > 1.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.poisson_nll_loss(xad.tensor([0.0]), xad.tensor([1.0])).item()
        1.0
    """
    input, target = _check_pair(input, target, "poisson_nll_loss")
    if log_input:
        loss = _ops.exp(input) - target * input
    else:
        loss = input - target * _ops.log(input + eps)
    if full:
        big = target > 1
        t = _ops.where(big, target, 2.0)
        stirling = t * _ops.log(t) - t + 0.5 * _ops.log(2 * math.pi * t)
        loss = loss + _ops.where(big, stirling, 0.0)
    return _reduce(loss, reduction, "poisson_nll_loss")


def _variance_shape(input: Tensor, var: Tensor) -> Tensor:
    if tuple(var.shape) == tuple(input.shape):
        return var
    if tuple(var.shape) == tuple(input.shape[:-1]):
        return var.expand_dims(-1)
    if tuple(var.shape[:-1]) == tuple(input.shape[:-1]) and var.shape[-1] == 1:
        return var
    raise ValueError(f"gaussian_nll_loss: var of shape {tuple(var.shape)} does not fit an "
                     f"input of shape {tuple(input.shape)} (same shape, the input's without "
                     f"its last axis, or that with a last axis of 1)")


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """Gaussian negative log-likelihood ``(log(var) + (input - target)**2 / var) / 2`` of
    ``target`` under means ``input`` and variances ``var`` (clamped below at ``eps`` for the
    value only, as PyTorch: the gradient passes the clamp); ``full`` adds ``log(2 pi) / 2``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> mean, target, var = xad.tensor([1.0]), xad.tensor([3.0]), xad.tensor([1.0])
        >>> F.gaussian_nll_loss(mean, target, var).item()
        2.0
    """
    if not isinstance(var, Tensor):
        var = full_like(input, float(var))
    var = _variance_shape(input, var)
    negative = var < 0  # PyTorch refuses it after reading the device: NaN here
    var = _ops.where(var < eps, var + (eps - var).detach(), var)  # (inf stays inf, not NaN)
    loss = 0.5 * (_ops.log(var) + (input - target) ** 2 / var)
    loss = _ops.where(negative, math.nan, loss)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")


def smooth_l1_loss(input: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0
                   ) -> Tensor:
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - beta / 2`` (``beta = 0``: L1).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.smooth_l1_loss(xad.tensor([0.0, 0.0]), xad.tensor([0.5, 3.0]), "none").tolist()
        [0.125, 2.5]
    """
    input, target = _check_pair(input, target, "smooth_l1_loss")
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    d = _ops.abs(input - target)
    if beta == 0:
        return _reduce(d, reduction, "smooth_l1_loss")
    near = d < beta
    s = _ops.where(near, d, 0.0)  # (the square's gradient at an infinite d: 0, not inf * 0)
    loss = _ops.where(near, s * s * (0.5 / beta), d - 0.5 * beta)
    return _reduce(loss, reduction, "smooth_l1_loss")


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                reduction: str = "mean") -> Tensor:
    """Per-class logistic loss ``-(y log sigmoid(x) + (1 - y) log sigmoid(-x))`` of
    ``(N, C)`` logits, averaged over the classes.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> round(F.multilabel_soft_margin_loss(xad.zeros(1, 2), xad.ones(1, 2)).item(), 4)
        0.6931
    """
    input, target = _check_pair(input, target, "multilabel_soft_margin_loss")
    loss = target * _ops.softplus(-input) + (1 - target) * _ops.softplus(input)
    if weight is not None:
        loss = loss * weight
    loss = loss.mean(axis=-1)
    return _reduce(loss, reduction, "multilabel_soft_margin_loss")
