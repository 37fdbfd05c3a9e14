"""``MultiheadAttention`` (PyTorch's packed ``in_proj_weight`` layout and masks); its
forward is :func:`xad.nn.functional.multi_head_attention_forward`'s."""

from __future__ import annotations

from .. import dtypes as _dt
from ..backend import Backend
from ..factories import zeros
from ..tensor import Tensor
from . import init
from .functional.multi_head_attention import AttentionWeights, attend
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

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        in_proj = self.in_proj_weight if self._qkv_same_embed_dim else \
            (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        w = AttentionWeights(self.embed_dim, self.num_heads, in_proj, self.in_proj_bias,
                             self.bias_k, self.bias_v, self.add_zero_attn, self.out_proj)
        return attend(w, query, key, value, key_padding_mask, need_weights, attn_mask,
                      average_attn_weights, is_causal,
                      self.dropout if self.training else 0.0, self.batch_first)

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")

