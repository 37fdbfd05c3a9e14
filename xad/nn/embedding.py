"""``Embedding``."""

from __future__ import annotations

from .. import dtypes as _dt
from ..autograd import no_grad
from ..backend import Backend
from ..factories import zeros
from ..tensor import Tensor
from . import functional as F
from . import init
from .linear import _resolve
from .module import Module, Parameter

__all__ = ["Embedding"]


def pretrained(layer: str, embeddings: Tensor, freeze: bool) -> Parameter:
    """``embeddings`` as the weight of ``layer.from_pretrained``: shared, not copied, and
    trained only when ``freeze`` is false (PyTorch's)."""
    if not isinstance(embeddings, Tensor) or embeddings.ndim != 2:
        shape = getattr(embeddings, "shape", type(embeddings).__name__)
        raise ValueError(f"{layer}.from_pretrained: embeddings must be a 2-d tensor "
                         f"(num_embeddings, embedding_dim), got {shape}")
    return Parameter(embeddings, requires_grad=not freeze)


def set_weight(layer: Module, shape: tuple[int, int], weight: Tensor | None, freeze: bool,
               dtype: _dt.DType | None, backend: Backend | str | None) -> None:
    """``layer.weight``: ``weight`` as given (no row zeroed, PyTorch's), or a new one that
    ``layer.reset_parameters()`` fills."""
    if weight is not None:
        layer.weight = pretrained(type(layer).__name__, weight, freeze)
    else:
        layer.weight = Parameter(zeros(*shape, dtype=dtype, backend=_resolve(backend)))
        layer.reset_parameters()


class Embedding(Module):
    """A lookup table: integer indices of any shape give rows of ``weight``
    (``(num_embeddings, embedding_dim)``, initialised from ``N(0, 1)``). The gradient
    scatter-adds into the rows used, so repeated indices accumulate. ``max_norm`` rescales
    the rows looked up, in place, as PyTorch's (:func:`~xad.nn.functional.embedding`).

    Example:
        >>> import xad
        >>> emb = xad.nn.Embedding(10, 3)
        >>> emb(xad.tensor([[1, 2, 1]])).shape
        (1, 3, 3)
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Tensor | None = None, _freeze: bool = False,
                 dtype: _dt.DType | None = None, backend: Backend | str | None = None
                 ) -> None:
        super().__init__()
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError(f"Embedding: padding_idx {padding_idx} is out of range for "
                             f"{num_embeddings} embeddings")
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = None if padding_idx is None else padding_idx % num_embeddings
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        set_weight(self, (num_embeddings, embedding_dim), _weight, _freeze, dtype, backend)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An ``Embedding`` whose ``weight`` is the 2-d ``embeddings`` (shared, not copied;
        its padding row left as given), trained only with ``freeze=False``, as PyTorch's.

        Example:
            >>> import xad
            >>> emb = xad.nn.Embedding.from_pretrained(xad.tensor([[1.0, 2.0], [3.0, 4.0]]))
            >>> emb(xad.tensor([1])).tolist(), emb.weight.requires_grad
            ([[3.0, 4.0]], False)
        """
        n, d = pretrained("Embedding", embeddings, freeze).shape
        return cls(n, d, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)

    def reset_parameters(self) -> None:
        """Redraw ``weight`` from ``N(0, 1)`` (the padding row zero)."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, indices: Tensor) -> Tensor:
        return F.embedding(indices, self.weight, self.padding_idx, self.max_norm,
                           self.norm_type, self.scale_grad_by_freq)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s if self.padding_idx is None else s + f", padding_idx={self.padding_idx}"
