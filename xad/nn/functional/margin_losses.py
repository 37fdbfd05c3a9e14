"""Margin and embedding losses, with PyTorch's names, arguments and numbers:
``margin_ranking_loss hinge_embedding_loss cosine_embedding_loss triplet_margin_loss
triplet_margin_with_distance_loss pairwise_distance soft_margin_loss multi_margin_loss
multilabel_margin_loss``."""

from __future__ import annotations

from collections.abc import Callable

from ... import ops as _ops
from ...factories import arange
from ...ops.amp_cast import autocast_float32 as _f32  # (autocast's float32 list: losses)
from ...ops.norms import vector_norm
from ...ops.torch_compositions import pdist  # (F.pdist, beside pairwise_distance)
from ...tensor import Tensor
from .layers import _check_in_range
from .losses import _reduce

__all__ = ["pdist", "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
           "triplet_margin_loss", "triplet_margin_with_distance_loss", "pairwise_distance",
           "soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss"]


def _hinge(x: Tensor) -> Tensor:
    """``max(x, 0)`` as PyTorch's multi-margin kernels (``if (z > 0)``): gradient 0 at 0, and
    0 for a NaN."""
    return _ops.where(x > 0, x, 0.0)


def _clamp_min(x: Tensor) -> Tensor:
    """``max(x, 0)`` as PyTorch's ``clamp_min(0)``: the gradient passes at 0 (a margin loss
    at a tie, e.g. equal scores from a symmetric start, still learns) and NaN stays NaN."""
    return _ops.clamp(x, 0.0, None)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)`` for targets of 1 or -1.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> x1, x2, y = xad.tensor([1.0]), xad.tensor([2.0]), xad.tensor([1.0])
        >>> F.margin_ranking_loss(x1, x2, y).item()
        1.0
    """
    input1, input2, target = _f32(input1, input2, target, op="margin_ranking_loss")
    return _reduce(_clamp_min(-target * (input1 - input2) + margin), reduction,
                   "margin_ranking_loss")


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         reduction: str = "mean") -> Tensor:
    """``input`` where ``target`` is 1, ``max(0, margin - input)`` where it is -1.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> x, y = xad.tensor([0.25, 0.25]), xad.tensor([1.0, -1.0])
        >>> F.hinge_embedding_loss(x, y, reduction="none").tolist()
        [0.25, 0.75]
    """
    input, target = _f32(input, target, op="hinge_embedding_loss")  # noqa: A001
    loss = (_ops.where(target != 1, _clamp_min(margin - input), 0.0)
            + _ops.where(target != -1, input, 0.0))
    return _reduce(loss, reduction, "hinge_embedding_loss")


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where ``target`` is 1, ``max(0, cos(x1, x2) - margin)`` where it is
    -1 (cosine along the last axis, PyTorch's ``1e-12`` in the norms).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> x = xad.tensor([[1.0, 0.0]])
        >>> round(F.cosine_embedding_loss(x, x, xad.tensor([1.0])).item(), 6)
        0.0
    """
    eps = 1e-12
    input1, input2 = _f32(input1, input2, op="cosine_embedding_loss")
    dot = (input1 * input2).sum(axis=-1)
    norms = ((input1 * input1).sum(axis=-1) + eps) * ((input2 * input2).sum(axis=-1) + eps)
    cos = dot / _ops.sqrt(norms)
    loss = (_ops.where(target == 1, 1 - cos, 0.0)
            + _ops.where(target == -1, _clamp_min(cos - margin), 0.0))
    return _reduce(loss, reduction, "cosine_embedding_loss")


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last axis (PyTorch's; ``p`` may be ``inf``, ``-inf``
    or ``0``).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> x1, x2 = xad.tensor([[3.0, 0.0]]), xad.tensor([[0.0, 4.0]])
        >>> round(F.pairwise_distance(x1, x2).item(), 3)
        5.0
    """
    return vector_norm(x1 - x2 + eps, p, axis=-1, keepdims=keepdim, zero_grad=True)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, reduction: str = "mean") -> Tensor:
    """``max(0, margin + d(a, p) - d(a, n))`` with :func:`pairwise_distance`; ``swap`` uses
    ``min(d(a, n), d(p, n))`` for the negative distance.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> a = xad.tensor([[0.0, 0.0]])
        >>> round(F.triplet_margin_loss(a, a, a + 5.0).item(), 4)
        0.0
    """
    anchor, positive, negative = _f32(anchor, positive, negative, op="triplet_margin_loss")
    return _triplet(anchor, positive, negative, lambda x, y: pairwise_distance(x, y, p, eps),
                    margin, swap, reduction, "triplet_margin_loss")


def triplet_margin_with_distance_loss(
        anchor: Tensor, positive: Tensor, negative: Tensor, *,
        distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
        margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """:func:`triplet_margin_loss` with any ``distance_function(x, y)`` (default
    :func:`pairwise_distance`), as PyTorch's.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> a = xad.tensor([[0.0, 0.0]])
        >>> d = lambda x, y: (x - y).abs().sum(-1)
        >>> F.triplet_margin_with_distance_loss(a, a + 1, a + 3, distance_function=d).item()
        0.0
    """
    w = "triplet_margin_with_distance_loss"
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise ValueError(f"{w}: anchor, positive and negative need the same number of "
                         f"dimensions, got shapes {anchor.shape}, {positive.shape} and "
                         f"{negative.shape}")
    return _triplet(anchor, positive, negative, distance_function or pairwise_distance,
                    margin, swap, reduction, w)


def _triplet(anchor: Tensor, positive: Tensor, negative: Tensor,
             distance: Callable[[Tensor, Tensor], Tensor], margin: float, swap: bool,
             reduction: str, where: str) -> Tensor:
    """``max(0, margin + d(a, p) - d(a, n))``, ``d(a, n)`` replaced by ``min(d(a, n),
    d(p, n))`` with ``swap``."""
    if margin <= 0:
        raise ValueError(f"{where}: margin must be positive, got {margin}")
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = _ops.minimum(d_neg, distance(positive, negative))
    return _reduce(_clamp_min(margin + d_pos - d_neg), reduction, where)


def soft_margin_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))`` for targets of 1 or -1 (as ``logaddexp(0, .)``:
    finite where PyTorch's ``log1p(exp(.))`` overflows to inf, the same numbers elsewhere).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> round(F.soft_margin_loss(xad.tensor([0.0]), xad.tensor([1.0])).item(), 4)
        0.6931
    """
    input, target = _f32(input, target, op="soft_margin_loss")  # noqa: A001
    if input.shape != target.shape:
        raise ValueError(f"soft_margin_loss: input {input.shape} and target {target.shape} "
                         f"must have the same shape")
    return _reduce(_ops.logaddexp(0.0, -target * input), reduction, "soft_margin_loss")


def _rows(input: Tensor, target: Tensor, where: str) -> tuple[Tensor, Tensor]:
    """``(N, C)`` input and its targets, a ``(C,)`` input as one row; targets checked."""
    if input.ndim not in (1, 2) or 0 in input.shape[-1:]:
        raise ValueError(f"{where}: expected (N, C) or (C,) input with C > 0, got "
                         f"{input.shape}")
    if input.ndim == 1:
        input, target = _ops.expand_dims(input, 0), _ops.reshape(target, (1, -1))
    return input, target


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, reduction: str = "mean") -> Tensor:
    """The multi-class hinge loss: ``sum_{i != y} w[y] * max(0, margin - x[y] + x[i])**p / C``
    per row of ``(N, C)`` logits with class targets ``y``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> x = xad.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> round(F.multi_margin_loss(x, xad.tensor([3])).item(), 4)
        0.325
    """
    w = "multi_margin_loss"
    if p not in (1, 2):
        raise ValueError(f"{w}: only p == 1 and p == 2 are supported, got p={p}")
    shape = target.shape
    x, y = _rows(input, target, w)
    y = _ops.reshape(y, (-1, 1))
    if target.ndim > 1 or y.shape[0] != x.shape[0]:
        raise ValueError(f"{w}: expected one class target per row of input {input.shape}, "
                         f"got target of shape {shape}")
    (x,) = _f32(x, op=w)
    c = x.shape[1]
    _check_in_range(y, c, w, "target", f"the {c} classes")
    h = _hinge(margin - _ops.take_along_axis(x, y, axis=1) + x)
    h = h if p == 1 else h * h
    if weight is not None:
        h = h * _ops.take(_f32(weight, op=w)[0], y[:, 0])[:, None]
    h = _ops.where(arange(c, backend=x._backend) == y, 0.0, h)
    loss = h.sum(axis=1) / c
    return _reduce(_ops.reshape(loss, shape) if input.ndim == 1 else loss, reduction, w)


def multilabel_margin_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """The multi-label hinge loss: ``sum_j sum_{i not a target} max(0, 1 - (x[y_j] - x[i]))
    / C`` per row, the targets ``y_j`` being a row's class indices up to its first -1.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> x, y = xad.tensor([[0.1, 0.2, 0.4, 0.8]]), xad.tensor([[3, 0, -1, 1]])
        >>> round(F.multilabel_margin_loss(x, y).item(), 4)
        0.85
    """
    w = "multilabel_margin_loss"
    x, y = _rows(input, target, w)
    if y.shape != x.shape:
        raise ValueError(f"{w}: target {target.shape} must have input's shape {input.shape}")
    (x,) = _f32(x, op=w)
    c = x.shape[1]
    _check_in_range(y, c, w, "target", f"the {c} classes (or -1: the end)", ignore=-1)
    valid = _ops.cumsum(_ops.astype(y == -1, x.dtype), axis=1) == 0  # before the first -1
    y = _ops.where(valid, y, 0)
    classes = arange(c, backend=x._backend)
    is_target = _ops.any(_ops.logical_and(y[:, :, None] == classes, valid[:, :, None]),
                         axis=1)
    h = _hinge(1.0 - _ops.take_along_axis(x, y, axis=1)[:, :, None] + x[:, None, :])
    h = _ops.where(_ops.logical_and(valid[:, :, None], ~is_target[:, None, :]), h, 0.0)
    loss = h.sum(axis=(1, 2)) / c
    return _reduce(loss[0] if input.ndim == 1 else loss, reduction, w)
