"""Attention as a function: ``scaled_dot_product_attention`` (PyTorch's signature and masks).

Composed from xad's primitives (matmul, softmax, where), so it runs on every backend and is
differentiable to any order; without a mask or dropout it is one node
(:func:`xad.ops.attention.attention`).
"""

from __future__ import annotations

import math

from ... import dtypes as _dt
from ... import ops as _ops
from ...context import context
from ...factories import arange
from ...ops.attention import attention
from ...tensor import Tensor
from .layers import dropout

__all__ = ["scaled_dot_product_attention"]


def _broadcastable(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return all(x == y or x == 1 or y == 1 for x, y in zip(a[::-1], b[::-1]))


def _broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(max(x, y) for x, y in zip(a, b))


def _check(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None,
           is_causal: bool) -> None:
    where = "scaled_dot_product_attention"
    shapes = f"query {query.shape}, key {key.shape}, value {value.shape}"
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise ValueError(f"{where}: query, key and value need at least 2 dimensions "
                         f"(..., L, E); got {shapes}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(f"{where}: query and key must agree on the last axis (E) and key and "
                         f"value on the second-to-last (S); got {shapes}")
    if not _broadcastable(query.shape[:-2], key.shape[:-2]) or \
            not _broadcastable(key.shape[:-2], value.shape[:-2]):
        raise ValueError(f"{where}: the batch and head axes do not broadcast: {shapes}")
    if attn_mask is None:
        return
    if is_causal:
        raise ValueError(f"{where}: pass attn_mask or is_causal=True, not both (fold the "
                         f"causal mask into attn_mask)")
    batch = _broadcast_shape(query.shape[:-2], key.shape[:-2])
    scores = (*batch, query.shape[-2], key.shape[-2])
    if attn_mask.ndim > len(scores) or \
            any(m not in (1, n) for m, n in zip(attn_mask.shape[::-1], scores[::-1])):
        raise ValueError(f"{where}: attn_mask of shape {attn_mask.shape} does not broadcast "
                         f"to the attention scores' shape {scores} (..., L, S); {shapes}")


def causal_mask(n_query: int, n_key: int, like: Tensor) -> Tensor:
    """The boolean ``(L, S)`` mask of ``is_causal`` (True on and below the diagonal, aligned
    top-left as in PyTorch), on ``like``'s backend.

    Example:
        >>> import xad
        >>> from xad.nn.functional.attention import causal_mask
        >>> causal_mask(2, 3, xad.zeros(1)).tolist()
        [[True, False, False], [True, True, False]]
    """
    rows = arange(n_query, dtype=_dt.int64, backend=like._backend)
    cols = arange(n_key, dtype=_dt.int64, backend=like._backend)
    return rows.expand_dims(-1) >= cols


def masked_softmax(scores: Tensor, mask: Tensor | None, empty_zero: bool = True) -> Tensor:
    """Softmax over the last axis where ``mask`` is a boolean (True = take part) or additive
    float mask. Rows with no finite score give zeros (PyTorch's ``scaled_dot_product_attention``
    on every device), or NaN without ``empty_zero`` (PyTorch's ``softmax``, as
    ``MultiheadAttention`` with ``need_weights``).

    Example:
        >>> import xad
        >>> from xad.nn.functional.attention import masked_softmax
        >>> masked_softmax(xad.zeros(2, 2), xad.tensor([[True, True], [False, False]])).tolist()
        [[0.5, 0.5], [0.0, 0.0]]
    """
    if mask is None:
        return _ops.softmax(scores, axis=-1)
    if mask.dtype is _dt.bool_:
        scores = _ops.where(mask, scores, -math.inf)
    else:
        scores = scores + mask
    return _ops.softmax(scores, axis=-1, empty_zero=empty_zero)


def fused_attention(query: Tensor, key: Tensor, value: Tensor,
                    scale: float | None = None) -> Tensor | None:
    """``softmax(query @ key.T * scale) @ value`` as one node where that is the same
    computation (the leading axes and dtypes agree, no autocast), else None."""
    if context.autocast is not None or not query.dtype == key.dtype == value.dtype \
            or not query.shape[:-2] == key.shape[:-2] == value.shape[:-2] \
            or 0 in query.shape or 0 in key.shape:
        return None
    s = (1.0 / math.sqrt(query.shape[-1])) if scale is None else scale
    return attention(query, key, value, s)


def attention_weights(query: Tensor, key: Tensor, attn_mask: Tensor | None = None,
                      is_causal: bool = False, scale: float | None = None,
                      empty_zero: bool = True) -> Tensor:
    """``softmax(query @ key.T * scale + mask)``: the weights of
    :func:`scaled_dot_product_attention` (before dropout), of shape ``(..., L, S)``; a query
    whose keys are all masked gets zeros, or NaN without ``empty_zero``.

    Example:
        >>> import xad
        >>> from xad.nn.functional.attention import attention_weights
        >>> attention_weights(xad.ones(1, 2, 4), xad.ones(1, 2, 4), is_causal=True).tolist()
        [[[1.0, 0.0], [0.5, 0.5]]]
    """
    s = (1.0 / math.sqrt(query.shape[-1])) if scale is None else scale
    scores = _ops.matmul(query * s, _ops.matrix_transpose(key))
    if is_causal:
        attn_mask = causal_mask(query.shape[-2], key.shape[-2], query)
    return masked_softmax(scores, attn_mask, empty_zero)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None
                                 ) -> Tensor:
    """``softmax(query @ key.T * scale + mask) @ value`` over the last two axes, as PyTorch's.

    ``query`` is ``(..., L, E)``, ``key`` ``(..., S, E)``, ``value`` ``(..., S, Ev)``; the
    leading (batch, head) axes broadcast. ``attn_mask`` broadcasts to ``(..., L, S)``: boolean
    (True = take part) or float (added to the scores). ``is_causal`` masks out keys after each
    query (top-left aligned); it cannot be combined with ``attn_mask``. ``scale`` defaults to
    ``1/sqrt(E)``. ``dropout_p > 0`` drops attention weights (always, as in PyTorch: pass
    ``0.0`` in evaluation) with the backend's seeded generator. A query whose keys are all
    masked out gets zero output and zero gradient, not NaN (PyTorch's since 2.5, bool and
    float masks alike).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> q = xad.ones(2, 4, 3, 8)
        >>> F.scaled_dot_product_attention(q, q, xad.ones(2, 4, 3, 5), is_causal=True).shape
        (2, 4, 3, 5)
    """
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"scaled_dot_product_attention: dropout_p must be in [0, 1], got "
                         f"{dropout_p}")
    _check(query, key, value, attn_mask, is_causal)
    if attn_mask is None and not is_causal and dropout_p == 0.0:
        out = fused_attention(query, key, value, scale)
        if out is not None:
            return out
    weights = attention_weights(query, key, attn_mask, is_causal, scale)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    return _ops.matmul(weights, value)
