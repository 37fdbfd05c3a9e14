"""One-step recurrent cells ``RNNCell``, ``LSTMCell``, ``GRUCell`` with PyTorch's
arguments and parameter names (``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``).

A step is the input product and one :func:`xad.ops.recurrent.recurrent` node of one time
step, so a Python loop over a cell records three operations per step.
"""

from __future__ import annotations

import math
from typing import Any

from .. import dtypes as _dt
from ..backend import Backend
from ..factories import zeros
from ..ops.recurrent import recurrent
from ..tensor import Tensor
from . import functional as F
from . import init
from .linear import _resolve
from .module import Module, Parameter

__all__ = ["RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


class RNNCellBase(Module):
    """The parameters and the one-step driver the three cells share."""

    _mode = "rnn_tanh"
    _gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 dtype: _dt.DType | None = None, backend: Backend | str | None = None
                 ) -> None:
        super().__init__()
        if hidden_size <= 0 or input_size < 0:
            raise ValueError(f"{type(self).__name__}: sizes must be positive, got "
                             f"input_size={input_size}, hidden_size={hidden_size}")
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        b, g = _resolve(backend), self._gates * hidden_size
        self.weight_ih = Parameter(zeros(g, input_size, dtype=dtype, backend=b))
        self.weight_hh = Parameter(zeros(g, hidden_size, dtype=dtype, backend=b))
        if bias:
            self.bias_ih = Parameter(zeros(g, dtype=dtype, backend=b))
            self.bias_hh = Parameter(zeros(g, dtype=dtype, backend=b))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Redraw every weight from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _step(self, x: Tensor, hx: Any) -> tuple[Tensor, Tensor | None]:
        name = type(self).__name__
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ValueError(f"{name}: expected input of shape (N, {self.input_size}) or "
                             f"({self.input_size},), got {tuple(x.shape)}")
        unbatched = x.ndim == 1
        if unbatched:
            x = x.expand_dims(0)
        lstm = self._mode == "lstm"
        if hx is None:
            h = zeros(x.shape[0], self.hidden_size, dtype=x.dtype, backend=x._backend)
            h, c = (h, h) if lstm else (h, None)
        else:
            h, c = hx if lstm else (hx, None)
            if unbatched:
                h, c = h.expand_dims(0), (None if c is None else c.expand_dims(0))
        for s, what in ((h, "h"), (c, "c")):
            if s is not None and tuple(s.shape) != (x.shape[0], self.hidden_size):
                raise ValueError(f"{name}: the state {what} has shape {tuple(s.shape)}, "
                                 f"expected {(x.shape[0], self.hidden_size)}")
        b_ih: Tensor | None = self.bias_ih
        b_hh: Tensor | None = self.bias_hh
        if self._mode != "gru" and b_ih is not None:
            b_ih, b_hh = b_ih + b_hh, None
        gx = F.linear(x, self.weight_ih, b_ih).expand_dims(0)
        hs, cs = recurrent(gx, h, c, self.weight_hh, b_hh, mode=self._mode)
        h, c = hs[0], (None if cs is None else cs[0])
        if unbatched:
            h, c = h[0], (None if c is None else c[0])
        return h, c

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        return s if self.bias else s + ", bias=False"


class RNNCell(RNNCellBase):
    """One Elman step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or ``relu``).

    Example:
        >>> import xad
        >>> cell = xad.nn.RNNCell(3, 5)
        >>> cell(xad.randn(2, 3)).shape
        (2, 5)
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", dtype: _dt.DType | None = None,
                 backend: Backend | str | None = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"RNNCell: nonlinearity must be 'tanh' or 'relu', got "
                             f"{nonlinearity!r}")
        super().__init__(input_size, hidden_size, bias, dtype, backend)
        self.nonlinearity = nonlinearity
        self._mode = f"rnn_{nonlinearity}"

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._step(input, hx)[0]

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s if self.nonlinearity == "tanh" else s + f", nonlinearity={self.nonlinearity!r}"


class LSTMCell(RNNCellBase):
    """One LSTM step (gates ``i f g o``); returns ``(h', c')``.

    Example:
        >>> import xad
        >>> h, c = xad.nn.LSTMCell(3, 5)(xad.randn(2, 3))
        >>> h.shape, c.shape
        ((2, 5), (2, 5))
    """

    _mode, _gates = "lstm", 4

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, Tensor]:
        h, c = self._step(input, hx)
        assert c is not None  # an LSTM step always has a cell state (recurrent's cs)
        return h, c


class GRUCell(RNNCellBase):
    """One GRU step (gates ``r z n``).

    Example:
        >>> import xad
        >>> xad.nn.GRUCell(3, 5)(xad.randn(3)).shape
        (5,)
    """

    _mode, _gates = "gru", 3

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        return self._step(input, hx)[0]
