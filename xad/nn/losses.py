"""Loss layers: ``MSELoss L1Loss HuberLoss CrossEntropyLoss NLLLoss BCEWithLogitsLoss BCELoss
KLDivLoss SmoothL1Loss PoissonNLLLoss GaussianNLLLoss MarginRankingLoss HingeEmbeddingLoss
CosineEmbeddingLoss TripletMarginLoss TripletMarginWithDistanceLoss MultiLabelSoftMarginLoss
SoftMarginLoss MultiMarginLoss MultiLabelMarginLoss``.

Each takes ``reduction`` (``"mean"``, ``"sum"`` or ``"none"``) and PyTorch's other keywords
(and its legacy ``size_average``/``reduce`` where PyTorch still takes them);
class weights are buffers, so ``.to()`` moves them with the model.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ..tensor import Tensor
from . import functional as F
from .functional.legacy_reduction import accepting_legacy_reduction
from .module import Module

__all__ = ["MSELoss", "L1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss", "NLLLoss2d",
           "BCEWithLogitsLoss", "BCELoss", "KLDivLoss", "SmoothL1Loss", "PoissonNLLLoss",
           "GaussianNLLLoss", "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss",
           "TripletMarginLoss", "TripletMarginWithDistanceLoss", "MultiLabelSoftMarginLoss",
           "SoftMarginLoss", "MultiMarginLoss", "MultiLabelMarginLoss"]


class _Loss(Module):
    _legacy_keywords = True  # PyTorch's size_average= and reduce= (not on its newer losses)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls._legacy_keywords and "__init__" in vars(cls):
            cls.__init__ = accepting_legacy_reduction(cls.__init__)  # type: ignore[method-assign]

    @accepting_legacy_reduction
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

    _legacy_keywords = False

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


class NLLLoss2d(NLLLoss):
    """PyTorch's deprecated name for :class:`NLLLoss` (its ``FutureWarning`` included).

    Example:
        >>> import warnings, xad
        >>> with warnings.catch_warnings(record=True):
        ...     loss = xad.nn.NLLLoss2d()
        >>> loss(xad.zeros(1, 2, 1, 1), xad.tensor([[[1]]])).item()
        0.0
    """

    _legacy_keywords = False  # (they pass on to NLLLoss's __init__, which takes them)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a "
                      "drop-in replacement and see https://pytorch.org/docs/main/nn.html"
                      "#torch.nn.NLLLoss for more details.", FutureWarning, stacklevel=2)
        super().__init__(*args, **kwargs)


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


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities (logs clamped at -100, as PyTorch).

    Example:
        >>> import xad
        >>> round(xad.nn.BCELoss()(xad.tensor([0.5]), xad.tensor([0.0])).item(), 4)
        0.6931
    """

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, self.weight, self.reduction)


class KLDivLoss(_Loss):
    """KL divergence of log-probabilities from a target distribution (``"batchmean"`` for
    the true divergence)."""

    def __init__(self, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__("mean" if reduction == "batchmean" else reduction)
        self.reduction, self.log_target = reduction, log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, self.reduction, self.log_target)


class SmoothL1Loss(_Loss):
    """Quadratic below ``beta``, linear above (``HuberLoss / beta``)."""

    def __init__(self, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, self.reduction, self.beta)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood (``log_input``: the input is the log-rate)."""

    def __init__(self, log_input: bool = True, full: bool = False, eps: float = 1e-8,
                 reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(log_input, target, self.log_input, self.full, self.eps,
                                  self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood of targets under predicted means and variances."""

    _legacy_keywords = False

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"
                 ) -> None:
        super().__init__(reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor) -> Tensor:
        return F.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class MarginRankingLoss(_Loss):
    """``max(0, -y (x1 - x2) + margin)``."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(input1, input2, target, self.margin, self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``x`` for targets 1, ``max(0, margin - x)`` for targets -1."""

    def __init__(self, margin: float = 1.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, self.margin, self.reduction)


class CosineEmbeddingLoss(_Loss):
    """``1 - cos`` for targets 1, ``max(0, cos - margin)`` for targets -1."""

    def __init__(self, margin: float = 0.0, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, target, self.margin, self.reduction)


class TripletMarginLoss(_Loss):
    """``max(0, margin + d(a, p) - d(a, n))`` with the ``p``-norm distance."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(anchor, positive, negative, self.margin, self.p,
                                     self.eps, self.swap, self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """``max(0, margin + d(a, p) - d(a, n))`` with any ``distance_function`` (default
    :func:`~xad.nn.functional.pairwise_distance`).

    Example:
        >>> import xad
        >>> a = xad.tensor([[0.0, 0.0]])
        >>> round(xad.nn.TripletMarginWithDistanceLoss(margin=2.0)(a, a, a + 1.0).item(), 4)
        0.5858
    """

    _legacy_keywords = False

    def __init__(self, *, distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
                 margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.distance_function, self.margin, self.swap = distance_function, margin, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_Loss):
    """Per-class logistic loss of ``(N, C)`` logits, averaged over the classes."""

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean") -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_soft_margin_loss(input, target, self.weight, self.reduction)


class SoftMarginLoss(_Loss):
    """``log(1 + exp(-y x))`` for targets of 1 or -1.

    Example:
        >>> import xad
        >>> round(xad.nn.SoftMarginLoss()(xad.zeros(2), xad.ones(2)).item(), 4)
        0.6931
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(input, target, self.reduction)


class MultiMarginLoss(_Loss):
    """The multi-class hinge loss of ``(N, C)`` logits and class targets.

    Example:
        >>> import xad
        >>> x = xad.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> round(xad.nn.MultiMarginLoss()(x, xad.tensor([3])).item(), 4)
        0.325
    """

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                 reduction: str = "mean") -> None:
        super().__init__(reduction)
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p == 1 and p == 2 are supported, got {p}")
        self.p, self.margin = p, margin
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(input, target, self.p, self.margin, self.weight,
                                   self.reduction)


class MultiLabelMarginLoss(_Loss):
    """The multi-label hinge loss; each target row lists classes up to its first -1.

    Example:
        >>> import xad
        >>> x, y = xad.tensor([[0.1, 0.2, 0.4, 0.8]]), xad.tensor([[3, 0, -1, 1]])
        >>> round(xad.nn.MultiLabelMarginLoss()(x, y).item(), 4)
        0.85
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_margin_loss(input, target, self.reduction)
