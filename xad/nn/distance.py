"""Layers that compare two inputs, with PyTorch's names and defaults: ``CosineSimilarity``
and ``PairwiseDistance`` (``torch.nn.modules.distance``)."""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """:func:`xad.nn.functional.cosine_similarity` along ``dim`` (each norm floored at
    ``eps``).

    Example:
        >>> import xad
        >>> cos = xad.nn.CosineSimilarity(dim=1)
        >>> cos(xad.tensor([[1.0, 0.0]]), xad.tensor([[2.0, 0.0]])).tolist()
        [1.0]
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """:func:`xad.nn.functional.pairwise_distance`: ``||x1 - x2 + eps||_p`` along the last
    axis.

    Example:
        >>> import xad
        >>> d = xad.nn.PairwiseDistance(eps=0.0)
        >>> d(xad.tensor([[3.0, 0.0]]), xad.tensor([[0.0, 4.0]])).tolist()
        [5.0]
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
