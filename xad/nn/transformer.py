"""``TransformerEncoderLayer`` and ``TransformerEncoder`` (PyTorch's names and layout)."""

from __future__ import annotations

import copy
from collections.abc import Callable

from .. import dtypes as _dt
from ..backend import Backend
from ..context import context
from ..tensor import Tensor
from . import functional as F
from .attention import MultiheadAttention
from .dropout import Dropout
from .linear import Linear, _hooked, _resolve
from .module import Module, ModuleList
from .normalization import LayerNorm, _add_norm

__all__ = ["TransformerEncoderLayer", "TransformerEncoder"]

_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual connection, dropout
    and LayerNorm (after each block, or before it with ``norm_first``), as PyTorch's.

    Sub-modules (and ``state_dict`` keys) as in PyTorch: ``self_attn``, ``linear1``,
    ``dropout``, ``linear2``, ``norm1``, ``norm2``, ``dropout1``, ``dropout2``.
    ``activation`` is ``"relu"``, ``"gelu"`` or a callable. ``forward(src, src_mask,
    src_key_padding_mask, is_causal)`` takes the masks of :class:`MultiheadAttention`.

    Example:
        >>> import xad
        >>> layer = xad.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
        >>> layer(xad.randn(3, 5, 8)).shape
        (3, 5, 8)
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, dtype: _dt.DType | None = None,
                 backend: Backend | str | None = None) -> None:
        super().__init__()
        b = _resolve(backend)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype, backend=b)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype, backend=b)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype, backend=b)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype, backend=b)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype, backend=b)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise ValueError(f"TransformerEncoderLayer: activation must be 'relu', 'gelu' "
                                 f"or a callable, got {activation!r}")
            activation = _ACTIVATIONS[activation]
        self.activation = activation

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = _add_norm(self.norm1, x, self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return _add_norm(self.norm2, x, *self._ff_parts(x))

    def _sa_block(self, x: Tensor, mask: Tensor | None, pad: Tensor | None,
                  is_causal: bool) -> Tensor:
        out, _ = self.self_attn(x, x, x, key_padding_mask=pad, need_weights=False,
                                attn_mask=mask, is_causal=is_causal)
        return self.dropout1(out)

    def _activated(self, h: Tensor) -> Tensor:
        """``activation(linear1(h))``; for relu and gelu one node whose bias and activation
        are one kernel on CuPy (``Linear._then``)."""
        fused: dict[Callable[[Tensor], Tensor], str] = {F.relu: "relu", F.gelu: "gelu"}
        act = fused.get(self.activation)
        pair = self.linear1._then_activation(act)
        return self.activation(self.linear1(h)) if pair is None else pair(h)

    def _ff_parts(self, x: Tensor) -> tuple[Tensor, Tensor | None]:
        """``(_ff_block(x), None)``, or ``(t, bias)`` with ``t + bias`` its value, where the
        bias can be added later at no cost (a post-norm residual's layer norm adds it in its
        kernels): ``linear2`` plain with a bias, ``dropout2`` a no-op, nothing that would see
        the difference (hooks, ``xad.compile``'s recorder, autocast)."""
        lin, drop = self.linear2, self.dropout2
        plain = type(lin).forward is Linear.forward and lin.bias is not None \
            and type(drop) is Dropout and (drop.p == 0 or not drop.training) \
            and not (_hooked(lin) or _hooked(drop)) \
            and context.recorder is None and context.autocast is None
        if not plain:
            return self._ff_block(x), None
        return F.linear(self.dropout(self._activated(x)), lin.weight), lin.bias

    def _ff_block(self, x: Tensor) -> Tensor:  # (each product is 2-D inside Linear)
        return self.dropout2(self.linear2(self.dropout(self._activated(x))))


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (same initial weights, as PyTorch's deep
    copy) applied in turn, then ``norm`` if given; ``state_dict`` keys ``layers.0....``.
    ``enable_nested_tensor`` and ``mask_check`` are accepted for PyTorch code and do nothing.

    Example:
        >>> import xad
        >>> layer = xad.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
        >>> enc = xad.nn.TransformerEncoder(layer, num_layers=2)
        >>> enc(xad.randn(3, 5, 8)).shape, len(enc.layers)
        ((3, 5, 8), 2)
    """

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"TransformerEncoder: num_layers must be at least 1, got "
                             f"{num_layers}")
        self.layers = ModuleList(copy.deepcopy(encoder_layer) for _ in range(num_layers))
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool | None = None
                ) -> Tensor:
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        return x if self.norm is None else self.norm(x)

