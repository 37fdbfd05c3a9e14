"""Loss layers: ``MSELoss L1Loss HuberLoss CrossEntropyLoss NLLLoss BCEWithLogitsLoss``.

Each takes ``reduction`` (``"mean"``, ``"sum"`` or ``"none"``) and PyTorch's other keywords;
class weights are buffers, so ``.to()`` moves them with the model.
"""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["MSELoss", "L1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss",
           "BCEWithLogitsLoss"]


class _Loss(Module):
    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{type(self).__name__}: reduction must be 'mean', 'sum' or "
                             f"'none', got {reduction!r}")
        self.reduction = reduction

    def extra_repr(self) -> str:
        return "" if self.reduction == "mean" else f"reduction={self.reduction!r}"


class MSELoss(_Loss):
    """Mean squared error.

    Example:
        >>> import xad
        >>> xad.nn.MSELoss()(xad.tensor([1.0, 2.0]), xad.tensor([1.0, 4.0])).item()
        2.0
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """Mean absolute error.

    Example:
        >>> import xad
        >>> xad.nn.L1Loss()(xad.tensor([1.0, 2.0]), xad.tensor([1.0, 4.0])).item()
        1.0
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, self.reduction)


class HuberLoss(_Loss):
    """Quadratic within ``delta`` of the target, linear beyond.

    Example:
        >>> import xad
        >>> xad.nn.HuberLoss(delta=1.0)(xad.tensor([0.0]), xad.tensor([3.0])).item()
        2.5
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, self.reduction, self.delta)


class NLLLoss(_Loss):
    """Negative log-likelihood of log-probabilities at integer class targets."""

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class CrossEntropyLoss(_Loss):
    """Cross-entropy of logits ``(N, C, ...)`` against integer class indices ``(N, ...)``
    (or class probabilities), through a numerically stable log-softmax.

    Example:
        >>> import xad
        >>> loss = xad.nn.CrossEntropyLoss()
        >>> round(loss(xad.tensor([[2.0, 0.0], [0.0, 2.0]]), xad.tensor([0, 1])).item(), 4)
        0.1269
    """

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction,
                               self.label_smoothing)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy on logits, computed stably (no separate sigmoid).

    Example:
        >>> import xad
        >>> round(xad.nn.BCEWithLogitsLoss()(xad.zeros(3), xad.ones(3)).item(), 4)
        0.6931
    """

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean",
                 pos_weight: Tensor | None = None) -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.reduction,
                                                  self.pos_weight)
