"""Functions that scale to a unit, with PyTorch's names, defaults and gradients:
``normalize`` (each vector to unit ``p``-norm), ``cosine_similarity`` (the product of two
unit vectors) and ``softmin`` (weights summing to 1), each composed from xad's primitives.
"""

from __future__ import annotations

from typing import Any

from ... import ops as _ops
from ...ops.amp_cast import autocast_float32
from ...ops.torch_conventions import vector_norm as _norm
from ...tensor import Tensor
from .layers import _softmax_axis

__all__ = ["normalize", "cosine_similarity", "softmin"]


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``x / max(||x||_p, eps)`` along ``dim``; as PyTorch's, the gradient is 0 at a zero
    vector and does not reach the norm where ``eps`` replaces it.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.normalize(xad.tensor([[3.0, 4.0], [0.0, 0.0]], dtype=xad.float64)).tolist()
        [[0.6, 0.8], [0.0, 0.0]]
    """
    if input.ndim == 0:
        raise ValueError("normalize: expected a tensor with at least one axis, got a 0-d "
                         "tensor")
    return input / _ops.clamp(_norm(input, p, dim, keepdim=True), eps)


def _at_least(n: Tensor, eps: float) -> Tensor:
    """``max(n, eps)`` whose gradient is ``n``'s everywhere (PyTorch clamps the norms of
    ``cosine_similarity`` in place, unrecorded): ``eps + (n - n)`` below ``eps``."""
    return _ops.where(n < eps, (n - n.detach()) + eps, n)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``sum((x1 / max(||x1||, eps)) * (x2 / max(||x2||, eps)))`` along ``dim`` after
    broadcasting ``x1`` and ``x2`` (PyTorch's: each vector scaled first, so the result
    stays in ``[-1, 1]``; each norm is floored at ``eps`` separately).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.cosine_similarity(xad.tensor([[1.0, 0.0]]), xad.tensor([[1.0, 1.0]])).tolist()
        [0.7071067690849304]
    """
    if x1.ndim == 0 and x2.ndim == 0:
        raise ValueError("cosine_similarity: expected tensors with at least one axis, got "
                         "two 0-d tensors")
    x1, x2 = autocast_float32(*_ops.broadcast_arrays(x1, x2), op="cosine_similarity")
    n1 = _at_least(_norm(x1, 2, dim, keepdim=True), eps)
    n2 = _at_least(_norm(x2, 2, dim, keepdim=True), eps)
    return _ops.sum((x1 / n1) * (x2 / n2), axis=dim)


def softmin(input: Tensor, axis: int | None = None, *, dim: int | None = None,
            dtype: Any = None) -> Tensor:
    """``softmax(-x)`` along ``axis`` (the default as :func:`softmax`'s); ``dtype``
    casts the input first.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> [round(v, 4) for v in F.softmin(xad.tensor([0.0, 1.0])).tolist()]
        [0.7311, 0.2689]
    """
    if dtype is not None:
        input = input.astype(dtype)
    return _ops.softmax(-input, axis=_softmax_axis("softmin", input, axis, dim))
