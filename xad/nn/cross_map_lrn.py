"""``CrossMapLRN2d``: PyTorch's legacy (Lua Torch) local response normalisation across
channels of ``(N, C, H, W)`` input, with its numbers."""

from __future__ import annotations

from .. import ops as _ops
from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["CrossMapLRN2d"]


class CrossMapLRN2d(Module):
    """``x / (k + alpha / size * s) ** beta``, ``s`` the sum of squares over a window of
    channels, exactly as PyTorch's ``CrossMapLRN2d`` computes it: channels ``c - pre + 1 ..
    c + pre - 1`` (``pre = (size - 1) // 2 + 1``) and, as its running sum never removes it,
    channel 0 always. The gradient is this function's (PyTorch's hand-written backward is
    not: docs/PORTING.md).

    Example:
        >>> import xad
        >>> y = xad.nn.CrossMapLRN2d(3, alpha=3.0, beta=0.5)(xad.ones(1, 2, 1, 1))
        >>> y.reshape(-1).tolist()  # 1 / sqrt(1 + 3 / 3 * (1 + 1)) in both channels
        [0.5773502588272095, 0.5773502588272095]
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1
                 ) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: expected (N, C, H, W) input, got shape "
                             f"{input.shape}")
        sq = input * input
        c, pre = input.shape[1], int((self.size - 1) / 2 + 1)
        rest = F.pad(sq[:, 1:], (0, 0, 0, 0, pre, pre - 1))  # channel 0 zero, then padding
        window = rest[:, :c]
        for j in range(1, 2 * pre - 1):
            window = window + rest[:, j:j + c]
        scale = (window + sq[:, :1]) * (self.alpha / self.size) + self.k
        return input * _ops.pow(scale, -self.beta)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
