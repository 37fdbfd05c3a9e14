"""Margin and embedding losses, with PyTorch's names, arguments and numbers:
``margin_ranking_loss hinge_embedding_loss cosine_embedding_loss triplet_margin_loss
pairwise_distance``."""

from __future__ import annotations

from ... import ops as _ops
from ...ops.amp_cast import autocast_float32 as _f32  # (autocast's float32 list: losses)
from ...ops.norms import vector_norm
from ...ops.torch_compositions import pdist  # (F.pdist, beside pairwise_distance)
from ...tensor import Tensor
from .losses import _reduce

__all__ = ["pdist", "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
           "triplet_margin_loss", "pairwise_distance"]


def _hinge(x: Tensor) -> Tensor:
    """``max(x, 0)`` with gradient 0 at 0 (PyTorch's ``clamp_min``)."""
    return _ops.where(x > 0, x, 0.0)


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
    return _reduce(_hinge(-target * (input1 - input2) + margin), reduction,
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
    loss = (_ops.where(target != 1, _hinge(margin - input), 0.0)
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
            + _ops.where(target == -1, _hinge(cos - margin), 0.0))
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
    if margin <= 0:
        raise ValueError(f"triplet_margin_loss: margin must be positive, got {margin}")
    anchor, positive, negative = _f32(anchor, positive, negative, op="triplet_margin_loss")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _ops.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(_hinge(margin + d_pos - d_neg), reduction, "triplet_margin_loss")
