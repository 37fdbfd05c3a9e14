"""Recurrent layers ``RNN``, ``LSTM``, ``GRU`` with PyTorch's arguments, weight layout and
state-dict keys (``weight_ih_l0``, ``weight_hh_l0``, ``bias_ih_l0``, ``bias_hh_l0``,
``weight_hr_l0`` for an LSTM's projection, ``..._reverse`` for the backward direction).

Each layer and direction is one input product for all time steps (``F.linear``) and one
:func:`xad.ops.recurrent.recurrent` node for its time loop. A ``PackedSequence`` input is
unpacked to a padded batch with a mask that keeps each sequence's state after its end, so
outputs, final states and gradients are PyTorch's.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from .. import dtypes as _dt
from .. import ops as _ops
from ..backend import Backend
from ..factories import tensor, zeros
from ..ops.recurrent import recurrent
from ..tensor import Tensor
from . import functional as F
from . import init
from .linear import _resolve
from .module import Module, Parameter
from .rnn_utils import PackedSequence, pack_rows, unpack_rows

__all__ = ["RNNBase", "RNN", "LSTM", "GRU"]

_GATES = {"rnn_tanh": 1, "rnn_relu": 1, "lstm": 4, "gru": 3}


class RNNBase(Module):
    """What ``RNN``, ``LSTM`` and ``GRU`` share: the weights of every layer and direction
    and the layer-by-layer driver."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0,
                 dtype: _dt.DType | None = None, backend: Backend | str | None = None
                 ) -> None:
        super().__init__()
        name = type(self).__name__
        _check_sizes(name, mode, input_size, hidden_size, num_layers, dropout, proj_size)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        b = _resolve(backend)
        gates, out = _GATES[mode] * hidden_size, proj_size or hidden_size
        self._flat_weights_names: list[str] = []
        dirs = 2 if bidirectional else 1
        for layer in range(num_layers):
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                shapes: list[tuple[str, tuple[int, ...]]] = [
                    ("weight_ih", (gates, input_size if layer == 0 else out * dirs)),
                    ("weight_hh", (gates, out))]
                if bias:
                    shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
                if proj_size:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for kind, shape in shapes:
                    setattr(self, kind + sfx, Parameter(zeros(*shape, dtype=dtype, backend=b)))
                    self._flat_weights_names.append(kind + sfx)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Redraw every weight from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``, as
        PyTorch."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def flatten_parameters(self) -> None:
        """Nothing to do (PyTorch's cuDNN weight packing); kept so scripts run unchanged."""

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters of each layer and direction, in PyTorch's order."""
        per = len(self._flat_weights_names) // (self.num_layers * (1 + self.bidirectional))
        names = self._flat_weights_names
        return [[getattr(self, n) for n in names[i:i + per]] for i in range(0, len(names), per)]

    def _weights(self, layer: int, d: int) -> dict[str, Any]:
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        return {k: getattr(self, k + sfx, None)
                for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")}

    def _run(self, x: Tensor, h0: Tensor, c0: Tensor | None, mask: Tensor | None
             ) -> tuple[Tensor, Tensor, Tensor | None]:
        """All layers on ``(T, B, F)`` input: the last layer's output and the final
        states ``(L * D, B, *)``."""
        dirs = 2 if self.bidirectional else 1
        hn, cn = [], []
        for layer in range(self.num_layers):
            if layer and self.dropout and self.training:
                x = F.dropout(x, self.dropout, True)
            outs = []
            for d in range(dirs):
                i = layer * dirs + d
                hs, cs = _direction(self.mode, x, self._weights(layer, d), h0[i],
                                    None if c0 is None else c0[i], mask, bool(d))
                outs.append(hs)
                hn.append(hs[0] if d else hs[-1])
                if cs is not None:
                    cn.append(cs[0] if d else cs[-1])
            x = outs[0] if dirs == 1 else _ops.concat(outs, axis=-1)
        return x, _ops.stack(hn), (_ops.stack(cn) if cn else None)

    def forward(self, input: Tensor | PackedSequence, hx: Any = None) -> tuple:
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        x = input
        if x.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: expected input of shape (L, H_in), "
                             f"(L, N, H_in) or (N, L, H_in) with batch_first, got "
                             f"{tuple(x.shape)}")
        unbatched = x.ndim == 2
        if unbatched:
            x = x.expand_dims(1)
        elif self.batch_first:
            x = x.permute_dims((1, 0, 2))
        self._check_input(x)
        h0, c0 = self._initial_states(hx, x, unbatched=unbatched)
        out, hn, cn = self._run(x, h0, c0, None)
        if unbatched:
            out, hn = out[:, 0], hn[:, 0]
            cn = None if cn is None else cn[:, 0]
        elif self.batch_first:
            out = out.permute_dims((1, 0, 2))
        return (out, (hn, cn)) if self.mode == "lstm" else (out, hn)

    def _forward_packed(self, input: PackedSequence, hx: Any) -> tuple:
        """``forward`` of a PackedSequence: run masked in sorted order, packed again."""
        sizes = input.host_batch_sizes()
        x = unpack_rows(input.data, sizes)
        mask = _mask(sizes, input.data)
        hx = _permute_hidden(hx, input.sorted_indices)
        self._check_input(x)
        h0, c0 = self._initial_states(hx, x, unbatched=False)
        out, hn, cn = self._run(x, h0, c0, mask)
        packed = PackedSequence(pack_rows(out, sizes), input.batch_sizes,
                                input.sorted_indices, input.unsorted_indices)
        hn, cn = _permute_hidden((hn, cn), input.unsorted_indices)
        return (packed, (hn, cn)) if self.mode == "lstm" else (packed, hn)

    def _check_input(self, x: Tensor) -> None:
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__}: input has {x.shape[-1]} features per "
                             f"step, expected input_size={self.input_size}")
        if x.shape[0] == 0:
            raise ValueError(f"{type(self).__name__}: the input has no time steps")

    def _initial_states(self, hx: Any, x: Tensor, unbatched: bool
                        ) -> tuple[Tensor, Tensor | None]:
        """``(h0, c0)`` of shape ``(L * D, B, *)``: zeros, or ``hx`` checked."""
        n, batch = self.num_layers * (2 if self.bidirectional else 1), x.shape[1]
        out = self.proj_size or self.hidden_size
        lstm = self.mode == "lstm"
        if hx is None:
            h0 = zeros(n, batch, out, dtype=x.dtype, backend=x._backend)
            return h0, (zeros(n, batch, self.hidden_size, dtype=x.dtype, backend=x._backend)
                        if lstm else None)
        if lstm and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise TypeError("LSTM: hx must be a tuple (h_0, c_0)")
        h0, c0 = hx if lstm else (hx, None)
        states = [(h0, out, "h_0" if lstm else "hx")] + ([(c0, self.hidden_size, "c_0")]
                                                          if lstm else [])
        fixed = []
        for s, width, what in states:
            size = "proj_size" if width != self.hidden_size else "hidden_size"
            if unbatched:
                s = s.expand_dims(1) if s.ndim == 2 else s
            if tuple(s.shape) != (n, batch, width):
                raise ValueError(f"{type(self).__name__}: {what} has shape {tuple(s.shape)}, "
                                 f"expected {(n, batch, width)} (num_layers * num_directions, "
                                 f"batch, {size})")
            fixed.append(s)
        return fixed[0], (fixed[1] if lstm else None)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


def _check_sizes(name: str, mode: str, input_size: int, hidden_size: int, num_layers: int,
                 dropout: float, proj_size: int) -> None:
    if not isinstance(hidden_size, int) or hidden_size <= 0:
        raise ValueError(f"{name}: hidden_size must be a positive int, got {hidden_size!r}")
    if not isinstance(num_layers, int) or num_layers <= 0:
        raise ValueError(f"{name}: num_layers must be a positive int, got {num_layers!r}")
    if input_size < 0:
        raise ValueError(f"{name}: input_size must be non-negative, got {input_size}")
    if not 0 <= dropout <= 1 or isinstance(dropout, bool):
        raise ValueError(f"{name}: dropout must be a number in [0, 1], got {dropout!r}")
    if proj_size < 0 or proj_size >= hidden_size and proj_size:
        raise ValueError(f"{name}: proj_size must be in [0, hidden_size), got {proj_size} "
                         f"with hidden_size={hidden_size}")
    if proj_size and mode != "lstm":
        raise ValueError(f"{name}: proj_size is only for LSTM")
    if dropout > 0 and num_layers == 1:
        warnings.warn(f"{name}: dropout={dropout} with num_layers=1 does nothing (dropout is "
                      f"applied between layers)", stacklevel=4)


def _direction(mode: str, x: Tensor, w: dict, h0: Tensor, c0: Tensor | None,
               mask: Tensor | None, reverse: bool) -> tuple:
    """One layer in one direction: ``(hs, cs)`` for every step."""
    b_ih, b_hh = w["bias_ih"], w["bias_hh"]
    if mode != "gru" and b_ih is not None:  # both biases act before the activations
        b_ih, b_hh = b_ih + b_hh, None
    gx = F.linear(x, w["weight_ih"], b_ih)
    return recurrent(gx, h0, c0, w["weight_hh"], b_hh, w["weight_hr"], mask, mode=mode,
                     reverse=reverse)


def _mask(sizes: list[int], like: Tensor) -> Tensor:
    """``(T, B, 1)``: 1 where sequence ``b`` (in sorted order) is still running at step t."""
    rows = [[[1.0 if j < n else 0.0] for j in range(sizes[0])] for n in sizes]
    return tensor(rows, dtype=like.dtype, backend=like._backend)


def _permute_hidden(hx: Any, order: Tensor | None) -> Any:
    """States ``(L * D, B, *)`` (or a tuple of them) with the batch taken in ``order``."""
    if hx is None or order is None:
        return hx
    if isinstance(hx, tuple):
        return tuple(None if h is None else _ops.take(h, order, axis=1) for h in hx)
    return _ops.take(hx, order, axis=1)


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or ``relu``)
    per layer; returns ``(output, h_n)``.

    Example:
        >>> import xad
        >>> rnn = xad.nn.RNN(4, 8, num_layers=2)
        >>> out, h = rnn(xad.randn(5, 3, 4))
        >>> out.shape, h.shape
        ((5, 3, 8), (2, 3, 8))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False,
                 dtype: _dt.DType | None = None, backend: Backend | str | None = None
                 ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNN: nonlinearity must be 'tanh' or 'relu', got "
                             f"{nonlinearity!r}")
        super().__init__(f"rnn_{nonlinearity}", input_size, hidden_size, num_layers, bias,
                         batch_first, dropout, bidirectional, 0, dtype, backend)
        self.nonlinearity = nonlinearity

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s if self.nonlinearity == "tanh" else s + f", nonlinearity={self.nonlinearity!r}"


class LSTM(RNNBase):
    """Long short-term memory, PyTorch's gates ``i f g o``; ``proj_size`` projects each
    hidden state to that size. Returns ``(output, (h_n, c_n))``.

    Example:
        >>> import xad
        >>> lstm = xad.nn.LSTM(4, 8, batch_first=True, bidirectional=True)
        >>> out, (h, c) = lstm(xad.randn(3, 5, 4))
        >>> out.shape, h.shape, c.shape
        ((3, 5, 16), (2, 3, 8), (2, 3, 8))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0,
                 dtype: _dt.DType | None = None, backend: Backend | str | None = None
                 ) -> None:
        super().__init__("lstm", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, dtype, backend)


class GRU(RNNBase):
    """Gated recurrent unit, PyTorch's gates ``r z n`` with ``n = tanh(W_in x + b_in +
    r * (W_hn h + b_hn))``. Returns ``(output, h_n)``.

    Example:
        >>> import xad
        >>> out, h = xad.nn.GRU(4, 8)(xad.randn(5, 4))  # unbatched
        >>> out.shape, h.shape
        ((5, 8), (1, 8))
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, dtype: _dt.DType | None = None,
                 backend: Backend | str | None = None) -> None:
        super().__init__("gru", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, 0, dtype, backend)
