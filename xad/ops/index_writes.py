"""PyTorch's writes of whole slices or flat elements by an index: ``index_copy`` (slices
named along ``dim`` take ``source``'s), ``index_reduce`` (``source``'s slices reduced into
them: ``prod``, ``mean``, ``amax``, ``amin``) and ``put`` (elements named by their flat
position, ``accumulate``: repeats add up). Composed of :func:`index_put` and
:func:`scatter_reduce`, so their gradients are those rules' (to any order); the in-place
``x.index_copy_``, ``x.index_reduce_`` and ``x.put_`` write the result into ``x``.
"""

from __future__ import annotations

from ..tensor import Tensor
from .axes import normalize_axis
from .elementwise import where
from .scatter_reductions import index_put, scatter_reduce
from .select import _along, _check_range, same_dtype
from .shape import broadcast_to, reshape

__all__ = ["index_copy", "index_reduce", "put"]

_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _slices(x: Tensor, dim: int, index: Tensor, source: Tensor, op: str) -> tuple:
    """``(axis, index as a 1-d tensor, source)`` checked as PyTorch's: one dtype, ``source``
    of ``x``'s shape but ``index.numel()`` along ``dim``, indices in ``[0, n)``."""
    axis = normalize_axis(dim, max(x.ndim, 1), op)
    same_dtype(x, source, op)
    k = reshape(_along(index, 0, 1, op), (-1,))
    want = tuple(k.size if d == axis else n for d, n in enumerate(x.shape)) or (k.size,)
    if tuple(source.shape) != want:
        if source.size != k.size or x.ndim > 1 or source.ndim > 1:
            raise ValueError(f"{op}: source of shape {source.shape} must have shape {want} "
                             f"(the tensor's {x.shape} with {k.size} along dim {axis})")
        source = reshape(source, want)  # 0-d index and source of a 1-d tensor
    n = x.shape[axis] if x.ndim else 1
    _check_range(k, n, (op, axis, n, False, x.shape, index.shape))
    return axis, k, source


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """PyTorch's ``index_copy``: ``input`` with its slices ``index`` names along ``dim``
    replaced by ``source``'s, in order (an index named twice keeps the last, as PyTorch's
    CPU loop; only that slice gets a gradient).

    Example:
        >>> import xad
        >>> xad.index_copy(xad.zeros(3, 2), 0, xad.tensor([2, 0]),
        ...                xad.tensor([[1.0, 2.0], [3.0, 4.0]])).tolist()
        [[3.0, 4.0], [0.0, 0.0], [1.0, 2.0]]
    """
    x = input
    axis, k, source = _slices(x, dim, index, source, "index_copy")
    if x.ndim == 0:
        return reshape(index_put(reshape(x, (1,)), (k,), source), ())
    return index_put(x, (slice(None),) * axis + (k,), source)


def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor,  # noqa: A002
                 reduce: str, *, include_self: bool = True) -> Tensor:
    """PyTorch's ``index_reduce``: ``source``'s slices reduced (``"prod"``, ``"mean"``,
    ``"amax"``, ``"amin"``) into the slices of ``input`` that ``index`` names along ``dim``,
    with ``input``'s own values as one of them where ``include_self``; the gradients are
    :func:`scatter_reduce`'s.

    Example:
        >>> import xad
        >>> x = xad.full((3,), 2.0)
        >>> x.index_reduce(0, xad.tensor([1, 1]), xad.tensor([3.0, 4.0]), "prod").tolist()
        [2.0, 24.0, 2.0]
    """
    if reduce not in _INDEX_REDUCTIONS:
        raise ValueError(f"index_reduce: reduce must be one of {_INDEX_REDUCTIONS}, got "
                         f"{reduce!r} (for a sum use index_add)")
    x = input
    axis, k, source = _slices(x, dim, index, source, "index_reduce")
    if x.ndim == 0:
        return reshape(scatter_reduce(reshape(x, (1,)), 0, k, source, reduce,
                                      include_self=include_self), ())
    shape = [1] * x.ndim
    shape[axis] = k.size
    grid = broadcast_to(reshape(k, tuple(shape)), tuple(source.shape))
    return scatter_reduce(x, axis, grid, source, reduce, include_self=include_self)


def put(input: Tensor, index: Tensor, source: Tensor,  # noqa: A002
        accumulate: bool = False) -> Tensor:
    """PyTorch's ``put``: ``input`` seen as 1-d, with ``source``'s elements written at the
    flat positions ``index`` names (negative ones count from the end), or added there with
    repeats adding up (``accumulate=True``); the result has ``input``'s shape.

    Example:
        >>> import xad
        >>> xad.put(xad.zeros(2, 2), xad.tensor([0, -1, 0]), xad.ones(3),
        ...         accumulate=True).tolist()
        [[2.0, 0.0], [0.0, 1.0]]
    """
    x = input
    same_dtype(x, source, "put")
    if not isinstance(index, Tensor) or index.dtype.is_floating or index.dtype.name == "bool":
        raise TypeError(f"put: the index must be an integer tensor, got "
                        f"{getattr(index, 'dtype', type(index).__name__)}")
    if not isinstance(source, Tensor) or index.size != source.size:
        raise ValueError(f"put: source and index need the same number of elements, got "
                         f"source {getattr(source, 'shape', source)} and index {index.shape}")
    n = int(x.size)
    k = reshape(index, (-1,))
    _check_range(k, n, ("put", 0, n, True, x.shape, index.shape))
    flat, src = reshape(x, (-1,)), reshape(source, (-1,))
    if accumulate:  # scatter_reduce's sum: integers by its scan, exact on every backend
        k = where(k < 0, k + n, k)
        return reshape(scatter_reduce(flat, 0, k, src, "sum"), tuple(x.shape))
    return reshape(index_put(flat, (k,), src), tuple(x.shape))
