"""``MultiheadAttention`` (PyTorch's packed ``in_proj_weight`` layout and masks)."""

from __future__ import annotations

import math

from .. import dtypes as _dt
from .. import ops as _ops
from ..backend import Backend
from ..factories import zeros, zeros_like
from ..ops.attention import split_heads
from ..tensor import Tensor
from . import functional as F
from . import init
from .functional.attention import attention_weights, fused_attention
from .linear import Linear, _resolve
from .module import Module, Parameter

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of size ``embed_dim // num_heads``, as PyTorch's.

    Parameters: ``in_proj_weight`` ``(3 * embed_dim, embed_dim)`` (query, key and value
    projections stacked; ``q_proj_weight``, ``k_proj_weight``, ``v_proj_weight`` instead when
    ``kdim`` or ``vdim`` differ from ``embed_dim``), ``in_proj_bias`` ``(3 * embed_dim,)``
    and ``out_proj`` (a ``Linear``), initialised as in PyTorch (Xavier-uniform projections,
    zero biases), so a PyTorch ``state_dict`` converted to arrays loads unchanged.

    ``add_bias_kv`` adds a learnt key and value (``bias_k``, ``bias_v``, ``(1, 1, E)``) and
    ``add_zero_attn`` a zero one after the given keys, as PyTorch's.

    Inputs are ``(L, N, E)`` (``(N, L, E)`` with ``batch_first``) or unbatched ``(L, E)``.
    ``key_padding_mask`` ``(N, S)`` and ``attn_mask`` ``(L, S)`` or ``(N * num_heads, L, S)``
    are boolean (True = *ignore* this key, PyTorch's MHA convention) or additive floats.
    ``forward`` returns ``(output, weights)``, the weights averaged over heads unless
    ``average_attn_weights=False``, or ``None`` when ``need_weights=False``. A query whose
    keys are all masked gets PyTorch's answer: NaN output and weights with ``need_weights``
    (a softmax of ``-inf`` only), zero output without (its ``scaled_dot_product_attention``
    path; docs/PORTING.md names the one PyTorch path that differs).

    Example:
        >>> import xad
        >>> mha = xad.nn.MultiheadAttention(8, 2, batch_first=True)
        >>> x = xad.randn(3, 5, 8)
        >>> out, w = mha(x, x, x); out.shape, w.shape
        ((3, 5, 8), (3, 5, 5))
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False,
                 dtype: _dt.DType | None = None, backend: Backend | str | None = None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be a positive "
                             f"multiple of num_heads ({num_heads})")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1], got {dropout}")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.head_dim = embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self.batch_first = batch_first
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        b = _resolve(backend)
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(zeros(3 * embed_dim, embed_dim, dtype=dtype,
                                                  backend=b))
        else:
            for name, dim in (("q", embed_dim), ("k", self.kdim), ("v", self.vdim)):
                setattr(self, f"{name}_proj_weight",
                        Parameter(zeros(embed_dim, dim, dtype=dtype, backend=b)))
        if bias:
            self.in_proj_bias = Parameter(zeros(3 * embed_dim, dtype=dtype, backend=b))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=dtype, backend=b)
        if add_bias_kv:  # one more key and value, learnt, after the given ones
            self.bias_k = Parameter(zeros(1, 1, embed_dim, dtype=dtype, backend=b))
            self.bias_v = Parameter(zeros(1, 1, embed_dim, dtype=dtype, backend=b))
        else:
            self.register_parameter("bias_k", None)
            self.register_parameter("bias_v", None)
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for name in ("q", "k", "v"):
                init.xavier_uniform_(getattr(self, f"{name}_proj_weight"))
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _projections(self) -> list[tuple[Tensor, Tensor | None]]:
        """(weight, bias) of the query, key and value projections."""
        e = self.embed_dim
        bias = self.in_proj_bias
        biases = [None] * 3 if bias is None else [bias[i * e:(i + 1) * e] for i in range(3)]
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            return [(w[i * e:(i + 1) * e], biases[i]) for i in range(3)]
        return [(getattr(self, f"{n}_proj_weight"), bb) for n, bb in zip("qkv", biases)]

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        batched = query.ndim == 3
        self._check_inputs(query, key, value, batched)
        batch_axis = 0 if self.batch_first else 1
        if not batched:  # (L, E) is one sequence whatever batch_first says, as in PyTorch
            query, key, value = (t.expand_dims(batch_axis) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.expand_dims(0)
        if self.batch_first:  # heads want (N, H, L, D): from (N, L, E) or (L, N, E)
            n, lq, s, to_heads, back = query.shape[0], query.shape[1], key.shape[1], \
                (0, 2, 1, 3), (0, 2, 1, 3)
        else:
            n, lq, s, to_heads, back = query.shape[1], query.shape[0], key.shape[0], \
                (1, 2, 0, 3), (2, 0, 1, 3)
        if is_causal and attn_mask is None:
            raise ValueError("MultiheadAttention: is_causal=True is a hint that attn_mask is "
                             "the causal mask; pass attn_mask too")
        mask = self._merged_mask(attn_mask, key_padding_mask, n, lq, s, query.dtype)
        q, k, v = self._project(query, key, value, to_heads)
        k, v, mask = self._extra_keys(k, v, mask)
        dropping = self.training and self.dropout > 0.0
        heads = None if need_weights or mask is not None or dropping \
            else fused_attention(q, k, v)
        if heads is None:  # the weights are needed, masked or dropped: composed
            weights = attention_weights(q, k, mask, empty_zero=not need_weights)
            if dropping:
                weights = F.dropout(weights, self.dropout)
            heads = _ops.matmul(weights, v)
        out = _ops.permute_dims(heads, back)
        out = self.out_proj(out.reshape((-1, self.embed_dim))).reshape(query.shape)
        attn: Tensor | None = None
        if need_weights:  # then composed above
            attn = weights.mean(axis=1) if average_attn_weights else weights
        if not batched:
            out = out.squeeze(batch_axis)
            attn = None if attn is None else attn.squeeze(0)
        return out, attn

    def _project(self, query: Tensor, key: Tensor, value: Tensor,
                 to_heads: tuple) -> tuple[Tensor, Tensor, Tensor]:
        """Queries, keys and values, each ``(N, H, L, head_dim)``. Each projection is one
        2-D matrix product over all positions (faster than batched); self-attention (one
        tensor for all three) makes the three in one product with the packed weight, as
        PyTorch, and cuts it into heads with one copy (``split_heads``; its gradient one
        stack)."""
        if query is key and key is value and self._qkv_same_embed_dim:
            y = F.linear(query.reshape((-1, self.embed_dim)), self.in_proj_weight,
                         self.in_proj_bias)
            lead = (query.shape[0], query.shape[1])
            return split_heads(y, lead, self.num_heads, to_heads)  # one copy
        ys = [F.linear(x.reshape((-1, x.shape[-1])), w, bb)
              for x, (w, bb) in zip((query, key, value), self._projections())]
        split = (self.num_heads, self.head_dim)
        q, k, v = (_ops.permute_dims(y.reshape(x.shape[:2] + split), to_heads)
                   for x, y in zip((query, key, value), ys))
        return q, k, v

    def _extra_keys(self, k: Tensor, v: Tensor, mask: Tensor | None
                    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """PyTorch's ``add_bias_kv`` (a learnt key and value) and ``add_zero_attn`` (a zero
        key and value) after the given ones, each never masked."""
        added = 0
        if self.bias_k is not None:
            shape = (k.shape[0], self.num_heads, 1, self.head_dim)
            k, v = (_ops.concat([t, _ops.broadcast_to(b.reshape(shape[1:]), shape)], axis=2)
                    for t, b in ((k, self.bias_k), (v, self.bias_v)))
            added += 1
        if self.add_zero_attn:
            k, v = (_ops.concat([t, zeros_like(t[:, :, :1])], axis=2) for t in (k, v))
            added += 1
        if mask is not None and added:
            mask = F.pad(mask, (0, added))
        return k, v, mask

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor, batched: bool) -> None:
        shapes = f"query {query.shape}, key {key.shape}, value {value.shape}"
        nd = 3 if batched else 2
        if query.ndim not in (2, 3) or key.ndim != nd or value.ndim != nd:
            raise ValueError(f"MultiheadAttention: query, key and value must all be 3-D "
                             f"(batched) or all 2-D (unbatched); got {shapes}")
        if (query.shape[-1], key.shape[-1], value.shape[-1]) != \
                (self.embed_dim, self.kdim, self.vdim):
            raise ValueError(f"MultiheadAttention: expected last axes (embed_dim, kdim, vdim) "
                             f"= {(self.embed_dim, self.kdim, self.vdim)}; got {shapes}")
        if key.shape[:-1] != value.shape[:-1]:
            raise ValueError(f"MultiheadAttention: key and value must have the same batch "
                             f"and sequence axes; got {shapes}")
        batch_axis = 0 if self.batch_first else 1
        if batched and query.shape[batch_axis] != key.shape[batch_axis]:
            raise ValueError(f"MultiheadAttention: query and key have different batch sizes "
                             f"(batch_first={self.batch_first}); got {shapes}")

    def _merged_mask(self, attn_mask: Tensor | None, key_padding_mask: Tensor | None, n: int,
                     lq: int, s: int, dtype: _dt.DType) -> Tensor | None:
        """Both masks as one additive float mask broadcasting to ``(N, H, L, S)``."""
        h = self.num_heads
        mask = None
        if attn_mask is not None:
            if attn_mask.shape not in ((lq, s), (n * h, lq, s)):
                raise ValueError(f"MultiheadAttention: attn_mask must have shape {(lq, s)} "
                                 f"or {(n * h, lq, s)} (N * num_heads, L, S); got "
                                 f"{attn_mask.shape}")
            mask = _additive(attn_mask, dtype).reshape((-1, h, lq, s) if attn_mask.ndim == 3
                                                       else (lq, s))
        if key_padding_mask is not None:
            if key_padding_mask.shape != (n, s):
                raise ValueError(f"MultiheadAttention: key_padding_mask must have shape "
                                 f"{(n, s)} (N, S); got {key_padding_mask.shape}")
            pad = _additive(key_padding_mask, dtype).reshape((n, 1, 1, s))
            mask = pad if mask is None else mask + pad
        return mask

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")


def _additive(mask: Tensor, dtype: _dt.DType) -> Tensor:
    """A boolean mask (True = ignore) as ``-inf``/0, or a float mask in ``dtype``."""
    if mask.dtype is _dt.bool_:
        return _ops.where(mask, -math.inf, 0.0).astype(dtype)
    if not mask.dtype.is_floating:
        raise TypeError(f"MultiheadAttention: masks must be boolean or floating, got "
                        f"{mask.dtype}")
    return mask.astype(dtype) if mask.dtype is not dtype else mask
