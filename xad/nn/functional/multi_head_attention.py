"""``multi_head_attention_forward``: multi-head attention as a function, with PyTorch's
signature (``MultiheadAttention``'s forward is this function with the module's weights):
the query/key/value projections (packed ``in_proj_weight`` or three separate weights),
``bias_k``/``bias_v``, ``add_zero_attn``, ``static_k``/``static_v``, both masks (boolean,
True = ignore, or additive floats), dropout of the weights, the output projection, and
the weights averaged over heads or per head."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

from ... import dtypes as _dt
from ... import ops as _ops
from ...factories import zeros_like
from ...ops.attention import split_heads
from ...tensor import Tensor
from .attention import attention_weights, fused_attention
from .layers import dropout, linear
from .padding import pad

__all__ = ["multi_head_attention_forward"]  # (AttentionWeights, attend: for the module)


class AttentionWeights(NamedTuple):
    """The parameters of multi-head attention: ``in_proj`` is the packed ``(3E, E)`` weight
    or the three ``(E, kdim)``-shaped ones (query, key, value)."""

    embed_dim: int
    num_heads: int
    in_proj: Tensor | tuple[Tensor, Tensor, Tensor]
    in_proj_bias: Tensor | None
    bias_k: Tensor | None
    bias_v: Tensor | None
    add_zero_attn: bool
    out_proj: Callable[[Tensor], Tensor]  # (MultiheadAttention's: its Linear, hooks and all)

    def dims(self) -> tuple[int, int, int]:
        """``(embed_dim, kdim, vdim)``: the last axes that query, key and value must have."""
        e = self.embed_dim
        return (e, e, e) if isinstance(self.in_proj, Tensor) else \
            (e, self.in_proj[1].shape[1], self.in_proj[2].shape[1])


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
        bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float,
        out_proj_weight: Tensor, out_proj_bias: Tensor | None, training: bool = True,
        key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
        v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
        static_v: Tensor | None = None, average_attn_weights: bool = True,
        is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention of ``(L, N, E)`` queries (or unbatched ``(L, E)``) over
    ``(S, N, kdim)`` keys and ``(S, N, vdim)`` values, as PyTorch's function of this name
    (the arguments are ``MultiheadAttention``'s parameters and ``forward``'s; ``static_k``
    and ``static_v`` ``(N * num_heads, S, E // num_heads)`` replace the projected keys and
    values). Returns ``(output, weights)`` (``weights`` None without ``need_weights``).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> x, w = xad.ones(3, 2, 4), xad.ones(12, 4) / 4
        >>> out, attn = F.multi_head_attention_forward(
        ...     x, x, x, 4, 2, w, None, None, None, False, 0.0, xad.eye(4), None)
        >>> out.shape, attn.shape
        ((3, 2, 4), (2, 3, 3))
    """
    where = "multi_head_attention_forward"
    if query.shape[-1] != embed_dim_to_check:
        raise ValueError(f"{where}: query's last axis ({query.shape[-1]}) is not "
                         f"embed_dim_to_check ({embed_dim_to_check})")
    if use_separate_proj_weight:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise ValueError(f"{where}: use_separate_proj_weight=True needs q_proj_weight, "
                             f"k_proj_weight and v_proj_weight")
        in_proj: Tensor | tuple[Tensor, Tensor, Tensor] = (q_proj_weight, k_proj_weight,
                                                           v_proj_weight)
    elif in_proj_weight is None:
        raise ValueError(f"{where}: in_proj_weight is None; pass it, or the three "
                         f"projection weights with use_separate_proj_weight=True")
    else:
        in_proj = in_proj_weight
    w = AttentionWeights(embed_dim_to_check, num_heads, in_proj, in_proj_bias, bias_k, bias_v,
                         add_zero_attn, lambda x: linear(x, out_proj_weight, out_proj_bias))
    return attend(w, query, key, value, key_padding_mask, need_weights, attn_mask,
                  average_attn_weights, is_causal, dropout_p if training else 0.0,
                  static=(static_k, static_v), where=where)


def attend(w: AttentionWeights, query: Tensor, key: Tensor, value: Tensor,
           key_padding_mask: Tensor | None, need_weights: bool, attn_mask: Tensor | None,
           average_attn_weights: bool, is_causal: bool, dropout_p: float,
           batch_first: bool = False, static: tuple[Tensor | None, Tensor | None] = (None, None),
           where: str = "MultiheadAttention") -> tuple[Tensor, Tensor | None]:
    """:func:`multi_head_attention_forward` on ``(N, L, E)`` input when ``batch_first``
    (``MultiheadAttention``'s forward; ``where`` names the caller in errors)."""
    batched = query.ndim == 3
    _check_inputs(w.dims(), query, key, value, batched, batch_first, where)
    batch_axis = 0 if batch_first else 1
    if not batched:  # (L, E) is one sequence whatever batch_first says, as in PyTorch
        query, key, value = (t.expand_dims(batch_axis) for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.expand_dims(0)
    n, lq = query.shape[batch_axis], query.shape[1 - batch_axis]
    to_heads, back = ((0, 2, 1, 3), (0, 2, 1, 3)) if batch_first else ((1, 2, 0, 3),
                                                                       (2, 0, 1, 3))
    if is_causal and attn_mask is None:
        raise ValueError(f"{where}: is_causal=True is a hint that attn_mask is the causal "
                         f"mask; pass attn_mask too")
    q, k, v = _project(w, query, key, value, to_heads)
    if static[0] is not None or static[1] is not None:
        k, v = (_static(t, s, n, w.num_heads, name, where) for t, s, name in
                ((k, static[0], "static_k"), (v, static[1], "static_v")))
    mask = _merged_mask(attn_mask, key_padding_mask, n, w.num_heads, lq, k.shape[2],
                        query.dtype, where)
    k, v, mask = _extra_keys(w, k, v, mask, static[0] is not None, where)
    dropping = dropout_p > 0.0
    heads = None if need_weights or mask is not None or dropping else fused_attention(q, k, v)
    if heads is None:  # the weights are needed, masked or dropped: composed
        weights = attention_weights(q, k, mask, empty_zero=not need_weights)
        if dropping:
            weights = dropout(weights, dropout_p)
        heads = _ops.matmul(weights, v)
    out = w.out_proj(_ops.permute_dims(heads, back).reshape(query.shape))  # (one 2-D product)
    attn: Tensor | None = None
    if need_weights:  # then composed above
        attn = weights.mean(axis=1) if average_attn_weights else weights
    if not batched:
        out = out.squeeze(batch_axis)
        attn = None if attn is None else attn.squeeze(0)
    return out, attn


def _project(w: AttentionWeights, query: Tensor, key: Tensor, value: Tensor,
             to_heads: tuple[int, ...]) -> tuple[Tensor, Tensor, Tensor]:
    """Queries, keys and values, each ``(N, H, L, head_dim)``. Each projection is one 2-D
    matrix product over all positions (faster than batched); self-attention (one tensor for
    all three) makes the three in one product with the packed weight, as PyTorch, and cuts
    it into heads with one copy (``split_heads``; its gradient one stack)."""
    e, h = query.shape[-1], w.num_heads
    lead = (query.shape[0], query.shape[1])
    if query is key and key is value and isinstance(w.in_proj, Tensor):
        y = linear(query, w.in_proj, w.in_proj_bias)
        return split_heads(y, lead, h, to_heads)  # one copy
    b = w.in_proj_bias
    biases = [None] * 3 if b is None else [b[i * e:(i + 1) * e] for i in range(3)]
    weights = w.in_proj if isinstance(w.in_proj, tuple) else \
        [w.in_proj[i * e:(i + 1) * e] for i in range(3)]
    ys = [linear(x, wi, bi) for x, wi, bi in zip((query, key, value), weights, biases)]
    q, k, v = (_ops.permute_dims(y.reshape(y.shape[:2] + (h, e // h)), to_heads) for y in ys)
    return q, k, v


def _static(t: Tensor, given: Tensor | None, n: int, h: int, name: str, where: str) -> Tensor:
    """``given`` (``(N * H, S, head_dim)``) as ``(N, H, S, head_dim)`` in place of ``t``."""
    if given is None:
        return t
    d = t.shape[-1]
    if given.ndim != 3 or given.shape[0] != n * h or given.shape[2] != d:
        raise ValueError(f"{where}: {name} must have shape (N * num_heads, S, head_dim) = "
                         f"({n * h}, S, {d}); got {given.shape}")
    return given.reshape((n, h, given.shape[1], d))


def _extra_keys(w: AttentionWeights, k: Tensor, v: Tensor, mask: Tensor | None,
                static_k: bool, where: str) -> tuple[Tensor, Tensor, Tensor | None]:
    """PyTorch's ``bias_k``/``bias_v`` (a learnt key and value) and ``add_zero_attn`` (a zero
    key and value) after the given ones, each never masked."""
    if w.bias_k is None and w.bias_v is None and not w.add_zero_attn:
        return k, v, mask
    added = 0
    if (w.bias_k is None) != (w.bias_v is None):
        raise ValueError(f"{where}: pass both bias_k and bias_v, or neither")
    if w.bias_k is not None and w.bias_v is not None:
        if static_k:
            raise ValueError(f"{where}: bias_k and bias_v cannot be added to static_k/static_v")
        shape = (k.shape[0], k.shape[1], 1, k.shape[3])
        k, v = (_ops.concat([t, _ops.broadcast_to(b.reshape(shape[1:]), shape)], axis=2)
                for t, b in ((k, w.bias_k), (v, w.bias_v)))
        added += 1
    if w.add_zero_attn:
        k, v = (_ops.concat([t, zeros_like(t[:, :, :1])], axis=2) for t in (k, v))
        added += 1
    if mask is not None and added:
        mask = pad(mask, (0, added))
    return k, v, mask


def _check_inputs(dims: tuple[int, int, int], query: Tensor, key: Tensor, value: Tensor,
                  batched: bool, batch_first: bool, where: str) -> None:
    qs, ks, vs = query.shape, key.shape, value.shape
    nd = 3 if batched else 2
    why = None
    if len(qs) not in (2, 3) or len(ks) != nd or len(vs) != nd:
        why = "query, key and value must all be 3-D (batched) or all 2-D (unbatched)"
    elif (qs[-1], ks[-1], vs[-1]) != dims:
        why = f"expected last axes (embed_dim, kdim, vdim) = {dims}"
    elif ks[:-1] != vs[:-1]:
        why = "key and value must have the same batch and sequence axes"
    elif batched and qs[0 if batch_first else 1] != ks[0 if batch_first else 1]:
        why = f"query and key have different batch sizes (batch_first={batch_first})"
    if why is not None:  # (the message is made only here: this runs at every call)
        raise ValueError(f"{where}: {why}; got query {qs}, key {ks}, value {vs}")


def _merged_mask(attn_mask: Tensor | None, key_padding_mask: Tensor | None, n: int, h: int,
                 lq: int, s: int, dtype: _dt.DType, where: str) -> Tensor | None:
    """Both masks as one additive float mask broadcasting to ``(N, H, L, S)``."""
    mask = None
    if attn_mask is not None:
        if attn_mask.shape not in ((lq, s), (n * h, lq, s)):
            raise ValueError(f"{where}: attn_mask must have shape {(lq, s)} or "
                             f"{(n * h, lq, s)} (N * num_heads, L, S); got {attn_mask.shape}")
        mask = _additive(attn_mask, dtype, where).reshape(
            (-1, h, lq, s) if attn_mask.ndim == 3 else (lq, s))
    if key_padding_mask is not None:
        if key_padding_mask.shape != (n, s):
            raise ValueError(f"{where}: key_padding_mask must have shape {(n, s)} (N, S); "
                             f"got {key_padding_mask.shape}")
        padding = _additive(key_padding_mask, dtype, where).reshape((n, 1, 1, s))
        mask = padding if mask is None else mask + padding
    return mask


def _additive(mask: Tensor, dtype: _dt.DType, where: str) -> Tensor:
    """A boolean mask (True = ignore) as ``-inf``/0, or a float mask in ``dtype``."""
    if mask.dtype is _dt.bool_:
        return _ops.where(mask, -math.inf, 0.0).astype(dtype)
    if not mask.dtype.is_floating:
        raise TypeError(f"{where}: masks must be boolean or floating, got {mask.dtype}")
    return mask.astype(dtype) if mask.dtype is not dtype else mask
