"""``CTCLoss`` (connectionist temporal classification)."""

from __future__ import annotations

from collections.abc import Sequence

from ..tensor import Tensor
from . import functional as F
from .losses import _Loss

__all__ = ["CTCLoss"]


class CTCLoss(_Loss):
    """CTC loss of ``(T, N, C)`` log-probabilities (``log_softmax`` outputs) against padded
    or concatenated targets, as :func:`xad.nn.functional.ctc_loss`.

    Example:
        >>> import xad
        >>> lp = xad.log_softmax(xad.zeros(3, 1, 2), axis=-1)
        >>> round(xad.nn.CTCLoss()(lp, xad.tensor([[1]]), [3], [1]).item(), 4)
        0.2877
    """

    _legacy_keywords = False

    def __init__(self, blank: int = 0, reduction: str = "mean",
                 zero_infinity: bool = False) -> None:
        super().__init__(reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor,
                input_lengths: Tensor | Sequence[int],
                target_lengths: Tensor | Sequence[int]) -> Tensor:
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)
