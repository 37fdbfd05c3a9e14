"""``TransformerDecoderLayer``, ``TransformerDecoder`` and ``Transformer`` (PyTorch's names,
defaults and ``state_dict`` keys)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from .. import dtypes as _dt
from ..backend import Backend
from ..factories import arange, full
from ..tensor import Tensor
from . import init
from .attention import MultiheadAttention
from .dropout import Dropout
from .linear import Linear, _resolve
from .module import Module, ModuleList
from .normalization import LayerNorm, _add_norm
from .transformer import _ACTIVATIONS, TransformerEncoder, TransformerEncoderLayer

__all__ = ["TransformerDecoderLayer", "TransformerDecoder", "Transformer"]


class TransformerDecoderLayer(Module):
    """Self-attention, attention over ``memory``, then a feed-forward block, each with a
    residual connection, dropout and LayerNorm (after each block, or before it with
    ``norm_first``), as PyTorch's. Sub-modules (``state_dict`` keys): ``self_attn``,
    ``multihead_attn``, ``linear1``, ``dropout``, ``linear2``, ``norm1``..``norm3``,
    ``dropout1``..``dropout3``.

    Example:
        >>> import xad
        >>> layer = xad.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, batch_first=True)
        >>> layer(xad.randn(3, 5, 8), xad.randn(3, 7, 8)).shape
        (3, 5, 8)
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, dtype: _dt.DType | None = None,
                 backend: Backend | str | None = None) -> None:
        super().__init__()
        b = _resolve(backend)
        kw: dict[str, Any] = dict(dtype=dtype, backend=b)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise ValueError(f"TransformerDecoderLayer: activation must be 'relu', "
                                 f"'gelu' or a callable, got {activation!r}")
            activation = _ACTIVATIONS[activation]
        self.activation = activation

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        x = tgt
        sa = (tgt_mask, tgt_key_padding_mask, tgt_is_causal)
        mha = (memory, memory_mask, memory_key_padding_mask, memory_is_causal)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), *sa)
            x = x + self._mha_block(self.norm2(x), *mha)
            return x + self._ff_block(self.norm3(x))
        x = _add_norm(self.norm1, x, self._sa_block(x, *sa))
        x = _add_norm(self.norm2, x, self._mha_block(x, *mha))
        return _add_norm(self.norm3, x, self._ff_block(x))

    def _sa_block(self, x: Tensor, mask: Tensor | None, pad: Tensor | None,
                  is_causal: bool) -> Tensor:
        out, _ = self.self_attn(x, x, x, key_padding_mask=pad, need_weights=False,
                                attn_mask=mask, is_causal=is_causal)
        return self.dropout1(out)

    def _mha_block(self, x: Tensor, mem: Tensor, mask: Tensor | None, pad: Tensor | None,
                   is_causal: bool) -> Tensor:
        out, _ = self.multihead_attn(x, mem, mem, key_padding_mask=pad, need_weights=False,
                                     attn_mask=mask, is_causal=is_causal)
        return self.dropout2(out)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer`` (deep copies, as PyTorch's) applied in
    turn, then ``norm`` if given; ``state_dict`` keys ``layers.0....``.

    Example:
        >>> import xad
        >>> layer = xad.nn.TransformerDecoderLayer(8, 2, 16, batch_first=True)
        >>> dec = xad.nn.TransformerDecoder(layer, num_layers=2)
        >>> dec(xad.randn(3, 5, 8), xad.randn(3, 4, 8)).shape
        (3, 5, 8)
    """

    def __init__(self, decoder_layer: Module, num_layers: int, norm: Module | None = None
                 ) -> None:
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"TransformerDecoder: num_layers must be at least 1, got "
                             f"{num_layers}")
        self.layers = ModuleList(copy.deepcopy(decoder_layer) for _ in range(num_layers))
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """PyTorch's encoder-decoder ``Transformer``: ``encoder`` (a
    :class:`TransformerEncoder` ending in a LayerNorm) and ``decoder`` (a
    :class:`TransformerDecoder` ending in a LayerNorm), matrices Xavier-uniform initialised.
    ``forward(src, tgt, src_mask, tgt_mask, memory_mask, src_key_padding_mask,
    tgt_key_padding_mask, memory_key_padding_mask, ...)``.

    Example:
        >>> import xad
        >>> t = xad.nn.Transformer(8, 2, 1, 1, 16, batch_first=True)
        >>> t(xad.randn(2, 6, 8), xad.randn(2, 5, 8)).shape
        (2, 5, 8)
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = "relu",
                 custom_encoder: Module | None = None, custom_decoder: Module | None = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, dtype: _dt.DType | None = None,
                 backend: Backend | str | None = None) -> None:
        super().__init__()
        b = _resolve(backend)
        args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                batch_first, norm_first, bias, dtype, b)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*args), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype, backend=b))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*args), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype, backend=b))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        b_axis = 0 if self.batch_first else 1
        if src.ndim == 3 and src.shape[b_axis] != tgt.shape[b_axis]:
            raise ValueError(f"Transformer: src {src.shape} and tgt {tgt.shape} must have the "
                             f"same batch size (batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ValueError(f"Transformer: the feature size of src {src.shape} and tgt "
                             f"{tgt.shape} must equal d_model={self.d_model}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: object = None,
                                        dtype: _dt.DType | None = None) -> Tensor:
        """The ``(sz, sz)`` float mask with ``-inf`` above the diagonal, ``0`` elsewhere.

        Example:
            >>> import xad
            >>> xad.nn.Transformer.generate_square_subsequent_mask(2).tolist()
            [[0.0, -inf], [0.0, 0.0]]
        """
        i = arange(sz)
        upper = i.reshape(1, sz) > i.reshape(sz, 1)
        return full((sz, sz), 0.0, dtype=dtype).masked_fill(upper, -float("inf"))
