"""``EmbeddingBag`` (sum, mean or max of each bag of rows) and ``Bilinear``."""

from __future__ import annotations

import math

from .. import dtypes as _dt
from ..autograd import no_grad
from ..backend import Backend
from ..factories import zeros
from ..tensor import Tensor
from . import functional as F
from . import init
from .embedding import pretrained, set_weight
from .linear import _resolve
from .module import Module, Parameter

__all__ = ["EmbeddingBag", "Bilinear"]


class EmbeddingBag(Module):
    """Reduce bags of embedding rows without making the ``(L, D)`` rows a layer output:
    ``forward(input, offsets=None, per_sample_weights=None)`` as
    :func:`xad.nn.functional.embedding_bag`; ``weight`` from ``N(0, 1)``.

    Example:
        >>> import xad
        >>> bag = xad.nn.EmbeddingBag(10, 3, mode="sum")
        >>> bag(xad.tensor([1, 2, 4, 5, 4]), xad.tensor([0, 2])).shape
        (2, 3)
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Tensor | None = None,
                 include_last_offset: bool = False, padding_idx: int | None = None,
                 dtype: _dt.DType | None = None, backend: Backend | str | None = None,
                 _freeze: bool = False) -> None:
        super().__init__()
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError(f"EmbeddingBag: padding_idx {padding_idx} is out of range for "
                             f"{num_embeddings} embeddings")
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset = include_last_offset
        self.padding_idx = None if padding_idx is None else padding_idx % num_embeddings
        set_weight(self, (num_embeddings, embedding_dim), _weight, _freeze, dtype, backend)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> EmbeddingBag:
        """An ``EmbeddingBag`` whose ``weight`` is the 2-d ``embeddings`` (shared, not
        copied), trained only with ``freeze=False``, as PyTorch's.

        Example:
            >>> import xad
            >>> w = xad.tensor([[1.0, 2.0], [3.0, 4.0]])
            >>> bag = xad.nn.EmbeddingBag.from_pretrained(w, mode="sum")
            >>> bag(xad.tensor([[0, 1]])).tolist()
            [[4.0, 6.0]]
        """
        n, d = pretrained("EmbeddingBag", embeddings, freeze).shape
        return cls(n, d, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings,
                   include_last_offset, padding_idx, _freeze=freeze)

    def reset_parameters(self) -> None:
        """Redraw ``weight`` from ``N(0, 1)`` (the padding row zero)."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"


class Bilinear(Module):
    """``y = x1^T A x2 + b`` with ``weight`` ``(out, in1, in2)`` and ``bias`` ``(out,)``,
    both from ``U(-1/sqrt(in1), 1/sqrt(in1))`` as PyTorch's.

    Example:
        >>> import xad
        >>> m = xad.nn.Bilinear(2, 3, 4)
        >>> m(xad.ones(5, 2), xad.ones(5, 3)).shape, m.weight.shape
        ((5, 4), (4, 2, 3))
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, dtype: _dt.DType | None = None,
                 backend: Backend | str | None = None) -> None:
        super().__init__()
        b = _resolve(backend)
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(zeros(out_features, in1_features, in2_features, dtype=dtype,
                                      backend=b))
        if bias:
            self.bias = Parameter(zeros(out_features, dtype=dtype, backend=b))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Redraw from ``U(-1/sqrt(in1), 1/sqrt(in1))``."""
        bound = 1 / math.sqrt(self.in1_features) if self.in1_features else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
