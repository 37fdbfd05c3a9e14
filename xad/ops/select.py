"""Picking and placing elements along one axis by an index tensor (PyTorch's ``gather``,
``scatter_add``, ``index_select``, ``masked_fill``), composed from indexing and its
scatter-add gradient, so every gradient (to any order) comes from those rules."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from ._apply import apply
from .axes import normalize_axis
from .elementwise import where
from .indexing import IndexAddInto, getitem_raw

__all__ = ["gather", "scatter_add", "index_select", "masked_fill"]


def _grid(x: Tensor, axis: int, index: Tensor, where_: str, longer: bool = False) -> tuple:
    """The integer-array key that reads ``x[..., index[i, j, ...], ...]`` at every position
    of ``index`` (``index`` along ``axis``, the position itself along the other axes);
    ``longer``: ``index`` may be longer than ``x`` along ``axis`` (``take_along_axis``)."""
    if not isinstance(index, Tensor) or index.dtype.is_floating or index.dtype.name == "bool":
        raise TypeError(f"{where_}: the index must be an integer tensor, got "
                        f"{getattr(index, 'dtype', type(index).__name__)}")
    if index.ndim != x.ndim or any(i > n and not (longer and d == axis)
                                   for d, (i, n) in enumerate(zip(index.shape, x.shape))):
        raise ValueError(f"{where_}: the index (shape {index.shape}) needs as many dimensions "
                         f"as the tensor (shape {x.shape}) and no larger size on any axis")
    b = x._backend
    xp = b.xp
    key = []
    for d, n in enumerate(index.shape):
        if d == axis:
            key.append(index._array)
        else:
            shape = [1] * index.ndim
            shape[d] = n
            pos = xp.arange(n, dtype=index._array.dtype, device=b.device)
            key.append(xp.reshape(pos, tuple(shape)))
    return tuple(xp.broadcast_to(k, index.shape) for k in key)


def gather(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = x[index[i][j]][j]`` for ``dim=0`` (and so on): PyTorch's gather.

    Example:
        >>> import xad
        >>> x = xad.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> xad.gather(x, 1, xad.tensor([[1], [0]])).tolist()
        [[2.0], [3.0]]
    """
    axis = normalize_axis(dim, x.ndim, "gather")
    return getitem_raw(x, _grid(x, axis, index, "gather"))


def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """``x`` plus ``src`` added at the places ``index`` names along ``dim`` (repeats add up):
    PyTorch's out-of-place ``scatter_add``.

    Example:
        >>> import xad
        >>> xad.scatter_add(xad.zeros(3), 0, xad.tensor([0, 2, 0]), xad.ones(3)).tolist()
        [2.0, 0.0, 1.0]
    """
    axis = normalize_axis(dim, x.ndim, "scatter_add")
    key = _grid(x, axis, index, "scatter_add")
    if src.shape != index.shape:
        src = getitem_raw(src, tuple(slice(0, n) for n in index.shape))
    return x + apply(IndexAddInto, src, shape=x.shape, key=key, advanced=True)


def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices of ``x`` along ``dim`` that the 1-d ``index`` names, in its order.

    Example:
        >>> import xad
        >>> xad.index_select(xad.arange(6).reshape(2, 3), 1, xad.tensor([2, 0])).tolist()
        [[2, 0], [5, 3]]
    """
    axis = normalize_axis(dim, x.ndim, "index_select")
    if not isinstance(index, Tensor) or index.ndim != 1:
        raise ValueError(f"index_select: the index must be a 1-d integer tensor, got "
                         f"{getattr(index, 'shape', type(index).__name__)}")
    return x[(slice(None),) * axis + (index,)]


def masked_fill(x: Tensor, mask: Any, value: Any) -> Tensor:
    """``x`` with ``value`` where ``mask`` (broadcast to ``x``'s shape) is true.

    Example:
        >>> import xad
        >>> xad.masked_fill(xad.ones(3), xad.tensor([True, False, True]), 0.0).tolist()
        [0.0, 1.0, 0.0]
    """
    if isinstance(value, Tensor) and value.dtype != x.dtype:
        value = value.astype(x.dtype)
    return where(mask, value, x)
