"""Picking and placing elements along one axis by an index tensor (PyTorch's ``gather``,
``scatter_add``, ``index_select``, ``masked_fill``), composed from indexing and its
scatter-add gradient, so every gradient (to any order) comes from those rules."""

from __future__ import annotations

from typing import Any

from ..dtypes import bool_, int64
from ..factories import arange
from ..tensor import Tensor
from ._apply import apply
from .axes import normalize_axis
from .device_checks import report_bounds
from .elementwise import astype, where
from .indexing import IndexAddInto, getitem_raw
from .reduce import any as _any
from .reduce import max as _max
from .reduce import min as _min
from .shape import broadcast_to, reshape, stack

__all__ = ["gather", "scatter_add", "index_select", "masked_fill"]


def _grid(x: Tensor, axis: int, index: Tensor, where_: str, negative: bool = False) -> tuple:
    """The integer-array key that reads ``x[..., index[i, j, ...], ...]`` at every position
    of ``index`` (``index`` along ``axis``, the position itself along the other axes);
    ``negative``: indices may count from the end (NumPy's), else they are refused
    (PyTorch's). Made of recorded operations and a deferred range check, so a compiled
    replay builds it, and checks it, from that call's index."""
    if not isinstance(index, Tensor) or index.dtype.is_floating or index.dtype.name == "bool":
        raise TypeError(f"{where_}: the index must be an integer tensor, got "
                        f"{getattr(index, 'dtype', type(index).__name__)}")
    if index.ndim != x.ndim or any(i > n for d, (i, n) in enumerate(zip(index.shape, x.shape))
                                   if d != axis):
        raise ValueError(f"{where_}: the index (shape {index.shape}) needs as many dimensions "
                         f"as the tensor (shape {x.shape}) and no larger size on any axis "
                         f"other than dim {axis}")
    _check_range(index, x.shape[axis], (where_, axis, x.shape[axis], negative, x.shape,
                                        index.shape))
    key = []
    for d, n in enumerate(index.shape):
        if d == axis:
            key.append(index._array)
        else:
            shape = [1] * index.ndim
            shape[d] = n
            pos = reshape(arange(n, dtype=index.dtype, backend=x._backend), tuple(shape))
            key.append(broadcast_to(pos, index.shape)._array)
    return tuple(key)


def _check_range(index: Tensor, n: int, site: tuple) -> None:
    """Raise IndexError (:func:`_range_error`) unless every value of ``index`` is in
    ``[-n, n)`` (``site[3]``, negative indices allowed) or ``[0, n)``: two reductions on the
    device; :meth:`Backend.check_bounds` reads them at once on the CPU and at the next host
    read on CuPy (no sync per call), and a compiled replay runs the check again."""
    if index.size == 0:
        return
    k = astype(index, int64)
    report_bounds(stack([-_min(k), _max(k)]), site, _range_error)


def _range_error(site: tuple, worst: Any) -> IndexError | None:
    """The error of :func:`_check_range` for the host values ``[-min, max]``, if any."""
    where_, axis, n, negative, shape, ishape = site
    w = worst.reshape(-1, 2)  # (inside vmap: a row per example)
    lo, hi = -int(w[:, 0].max()), int(w[:, 1].max())
    if (-n if negative else 0) <= lo and hi < n:
        return None
    return IndexError(f"{where_}: index {hi if hi >= n else lo} is out of bounds for dim "
                      f"{axis} with size {n} (tensor shape {shape}, index shape {ishape})"
                      + ("" if negative else "; indices must lie in [0, "
                         f"{n}) (no negative indices, as PyTorch's)"))


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


def gather_along(x: Tensor, axis: int, index: Tensor, where_: str) -> Tensor:
    """:func:`gather` with NumPy's negative indices (the standard's ``take_along_axis``)."""
    return getitem_raw(x, _grid(x, axis, index, where_, negative=True))


def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """``x`` plus ``src`` added at the places ``index`` names along ``dim`` (repeats add up):
    PyTorch's out-of-place ``scatter_add``.

    Example:
        >>> import xad
        >>> xad.scatter_add(xad.zeros(3), 0, xad.tensor([0, 2, 0]), xad.ones(3)).tolist()
        [2.0, 0.0, 1.0]
    """
    axis = normalize_axis(dim, x.ndim, "scatter_add")
    same_dtype(x, src, "scatter_add", "src")
    key = _grid(x, axis, index, "scatter_add")
    if src.shape != index.shape:
        src = getitem_raw(src, tuple(slice(0, n) for n in index.shape))
    return _plus(x, apply(IndexAddInto, src, shape=x.shape, key=key, advanced=True))


def _plus(x: Tensor, placed: Tensor) -> Tensor:
    """``x + placed``; on bools ``x | placed`` (PyTorch's bool sum: any True; the standard
    adds no bools)."""
    return x | placed if x.dtype is bool_ else x + placed


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
    out = where(mask, fill_value(x, value), x)  # in x's dtype, as PyTorch's
    out = out if out.dtype is x.dtype else out.astype(x.dtype)
    return out.contiguous()  # (PyTorch's result is contiguous, where's keeps x's layout)


_INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def fill_value(x: Tensor, value: Any) -> Any:
    """``value`` in ``x``'s dtype before it meets ``x`` (PyTorch's fills cast the value):
    a float beside an int64 tensor made the whole result float, rounding its large
    integers (``2**63 - 1`` came back as ``-2**63``)."""
    if isinstance(value, Tensor):
        return value if value.dtype is x.dtype else value.astype(x.dtype)
    if type(value) is float and not x.dtype.is_floating and x.dtype.name in _INTEGERS:
        return int(value)  # truncated, as PyTorch's; NaN and infinities raise
    if x.dtype is bool_ and isinstance(value, (int, float)):
        return bool(value)  # a 0 or 1 beside bools made the result int64
    return value


def _along(index: Tensor, axis: int, ndim: int, where_: str) -> Tensor:
    if not isinstance(index, Tensor) or index.ndim > 1 or index.dtype.is_floating:
        raise TypeError(f"{where_}: the index must be a 1-d integer tensor, got "
                        f"{getattr(index, 'shape', type(index).__name__)}")
    shape = [1] * ndim
    shape[axis] = index.size
    return reshape(index, tuple(shape))


def same_dtype(x: Tensor, src: Any, op: str, name: str = "source") -> None:
    """Refuse a ``src`` tensor of another dtype than ``x``'s, as PyTorch's ``index_add``,
    ``scatter``, ``scatter_add`` and ``masked_scatter`` refuse it (a cast would truncate
    floats written into an integer tensor, or wrap negatives into uint8, silently)."""
    if isinstance(src, Tensor) and src.dtype is not x.dtype:
        raise TypeError(f"{op}: the tensor is {x.dtype} and {name} is {src.dtype}; PyTorch "
                        f"requires one dtype: cast {name} first ({name}.to({x.dtype}))")


def index_add(x: Tensor, dim: int, index: Tensor, source: Tensor, alpha: Any = 1) -> Tensor:
    """``x`` plus ``alpha * source`` added at the slices ``index`` names along ``dim``
    (repeats add up): PyTorch's out-of-place ``index_add``.

    Example:
        >>> import xad
        >>> xad.zeros(3).index_add(0, xad.tensor([0, 0, 2]), xad.ones(3)).tolist()
        [2.0, 0.0, 1.0]
    """
    axis = normalize_axis(dim, x.ndim, "index_add")
    same_dtype(x, source, "index_add")
    k = _along(index, axis, x.ndim, "index_add")
    want = tuple(index.size if d == axis else n for d, n in enumerate(x.shape))
    if tuple(source.shape) != want:
        raise ValueError(f"index_add: source of shape {source.shape} must have shape {want} "
                         f"(x {x.shape}, {index.size} indices along dim {axis})")
    key = _grid(x, axis, broadcast_to(k, want), "index_add")
    if isinstance(alpha, float) and not x.dtype.is_floating:
        alpha = int(alpha)  # PyTorch's: alpha in the tensor's dtype (2.0 is 2, -1.5 is -1)
    src = source if alpha == 1 else source * alpha
    return _plus(x, apply(IndexAddInto, src.astype(x.dtype), shape=x.shape, key=key,
                          advanced=True))


def index_fill(x: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """``x`` with ``value`` in the slices ``index`` names along ``dim``: PyTorch's
    out-of-place ``index_fill``.

    Example:
        >>> import xad
        >>> xad.ones(2, 3).index_fill(1, xad.tensor([0, 2]), -1.0).tolist()
        [[-1.0, 1.0, -1.0], [-1.0, 1.0, -1.0]]
    """
    axis = normalize_axis(dim, x.ndim, "index_fill")
    k = _along(index, 0, 1, "index_fill")
    n = x.shape[axis]
    _check_range(k, n, ("index_fill", axis, n, True, x.shape, index.shape))
    k = where(k < 0, k + n, k)  # PyTorch's: negative indices count from the end
    pos = arange(n, dtype=k.dtype, backend=x._backend)
    hit = _any(reshape(pos, (n, 1)) == reshape(k, (1, -1)), axis=1)
    shape = [1] * x.ndim
    shape[axis] = n
    return where(reshape(hit, tuple(shape)), fill_value(x, value), x)
