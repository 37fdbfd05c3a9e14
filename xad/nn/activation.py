"""Activation layers: ``ReLU Tanh Sigmoid GELU Softplus Softmax LogSoftmax``."""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["ReLU", "Tanh", "Sigmoid", "GELU", "Softplus", "Softmax", "LogSoftmax"]


class ReLU(Module):
    """``max(x, 0)``.

    Example:
        >>> import xad
        >>> xad.nn.ReLU()(xad.tensor([-1.0, 2.0])).tolist()
        [0.0, 2.0]
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)


class Tanh(Module):
    """Hyperbolic tangent."""

    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Sigmoid(Module):
    """Logistic sigmoid."""

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class Softplus(Module):
    """``log(1 + exp(x))``."""

    def forward(self, x: Tensor) -> Tensor:
        return F.softplus(x)


class GELU(Module):
    """GELU, exact or with ``approximate="tanh"``.

    Example:
        >>> import xad
        >>> round(xad.nn.GELU()(xad.tensor([1.0])).item(), 4)
        0.8413
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softmax(Module):
    """Softmax along ``dim`` (PyTorch's keyword; default the last axis).

    Example:
        >>> import xad
        >>> xad.nn.Softmax(dim=-1)(xad.zeros(1, 4)).tolist()
        [[0.25, 0.25, 0.25, 0.25]]
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, axis=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """Log-softmax along ``dim``, computed stably."""

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, axis=self.dim)
