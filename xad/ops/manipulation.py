"""The Array API's indexing and manipulation functions that xad composes from its
primitives (so every gradient, to any order, comes from theirs): ``take``,
``take_along_axis``, ``repeat``, ``moveaxis``, ``roll``, ``unstack``, ``broadcast_arrays``,
``tril``/``triu``, ``meshgrid``, ``cumulative_sum``, ``cumulative_prod``, ``diff`` and
``vecdot``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import dtypes as _dt
from ..factories import full
from ..tensor import Tensor
from .amp_cast import autocast_low, autocast_off
from .axes import normalize_axis
from .complex_parts import conj
from .dtype_functions import result_type
from .elementwise import where
from .reduce import cumsum, prod, sum
from .select import gather_along
from .shape import broadcast_to, concat, permute_dims, reshape

__all__ = ["take", "take_along_axis", "repeat", "moveaxis", "roll", "unstack",
           "broadcast_arrays", "tril", "triu", "meshgrid", "cumulative_sum",
           "cumulative_prod", "diff", "vecdot"]


def take(x: Tensor, indices: Tensor, /, *, axis: int | None = None) -> Tensor:
    """The elements (slices along ``axis``) that the 1-d integer ``indices`` name; gradient
    by scatter-add (repeats add up).

    Example:
        >>> import xad
        >>> xad.take(xad.tensor([[1.0, 2.0], [3.0, 4.0]]), xad.tensor([1, 1]), axis=1).tolist()
        [[2.0, 2.0], [4.0, 4.0]]
    """
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis=None needs a 1-d tensor, got shape {x.shape}")
        axis = 0
    a = normalize_axis(axis, x.ndim, "take")
    return x[(slice(None),) * a + (indices,)]


def take_along_axis(x: Tensor, indices: Tensor, /, *, axis: int = -1) -> Tensor:
    """``out[..., i, ...] = x[..., indices[..., i, ...], ...]`` along ``axis`` (NumPy's rule:
    ``indices`` broadcasts with ``x`` on the other axes).

    Example:
        >>> import xad
        >>> x = xad.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> xad.take_along_axis(x, xad.tensor([[1], [0]]), axis=1).tolist()
        [[2.0], [3.0]]
    """
    a = normalize_axis(axis, x.ndim, "take_along_axis")
    if indices.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices (shape {indices.shape}) need as many "
                         f"dimensions as x (shape {x.shape})")
    shape = tuple(max(n, m) if d != a else n for d, (n, m) in
                  enumerate(zip(indices.shape, x.shape)))
    xs = tuple(m if d == a else n for d, (n, m) in enumerate(zip(shape, x.shape)))
    return gather_along(broadcast_to(x, xs), a, broadcast_to(indices, shape),
                        "take_along_axis")


def repeat(x: Tensor, repeats: int | Tensor, /, *, axis: int | None = None) -> Tensor:
    """Each element repeated ``repeats`` times along ``axis`` (the flattened ``x`` when
    ``None``): the standard's ``repeat`` (PyTorch's ``repeat`` is :func:`xad.tile`).

    Example:
        >>> import xad
        >>> xad.repeat(xad.tensor([1.0, 2.0]), 2).tolist()
        [1.0, 1.0, 2.0, 2.0]
    """
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    a = normalize_axis(axis, x.ndim, "repeat")
    b = x._backend
    reps = repeats._array if isinstance(repeats, Tensor) else repeats
    pos = b.xp.arange(x.shape[a], dtype=b.dtype(_dt.int64), device=b.device)
    make = Tensor._make if isinstance(repeats, Tensor) else Tensor._constant
    return take(x, make(b.xp.repeat(pos, reps), b), axis=a)


def moveaxis(x: Tensor, source: int | Sequence[int], destination: int | Sequence[int],
             /) -> Tensor:
    """``x`` with the axes ``source`` moved to ``destination`` (the others keep their order).

    Example:
        >>> import xad
        >>> xad.moveaxis(xad.zeros((2, 3, 4)), 0, -1).shape
        (3, 4, 2)
    """
    src = [normalize_axis(a, x.ndim, "moveaxis") for a in _seq(source)]
    dst = [normalize_axis(a, x.ndim, "moveaxis") for a in _seq(destination)]
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: {len(src)} source axes but {len(dst)} destinations")
    order = [d for d in range(x.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, tuple(order))


def _seq(axes: int | Sequence[int]) -> tuple[int, ...]:
    return (axes,) if isinstance(axes, int) else tuple(axes)


def roll(x: Tensor, /, shift: int | Sequence[int], *,
         axis: int | Sequence[int] | None = None) -> Tensor:
    """Elements shifted by ``shift`` along ``axis`` (the flattened ``x`` when ``None``),
    wrapping around.

    Example:
        >>> import xad
        >>> xad.roll(xad.tensor([1, 2, 3]), 1).tolist()
        [3, 1, 2]
    """
    if axis is None:
        return reshape(roll(reshape(x, (-1,)), shift, axis=0), x.shape)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    shifts = (shift,) * len(axes) if isinstance(shift, int) else tuple(shift)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shifts {shifts} and axes {axes} differ in length")
    # each shift with its own axis, in the order given (an axis may repeat: shifts add)
    for a, s in zip((normalize_axis(a, x.ndim, "roll") for a in axes), shifts):
        n = x.shape[a]
        if n == 0:
            continue
        k = s % n
        head = (slice(None),) * a
        x = concat([x[head + (slice(n - k, None),)], x[head + (slice(0, n - k),)]], axis=a)
    return x


def unstack(x: Tensor, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of ``x`` along ``axis``, as a tuple.

    Example:
        >>> import xad
        >>> [t.tolist() for t in xad.unstack(xad.tensor([[1, 2], [3, 4]]), axis=1)]
        [[1, 3], [2, 4]]
    """
    a = normalize_axis(axis, x.ndim, "unstack")
    return tuple(x[(slice(None),) * a + (i,)] for i in range(x.shape[a]))


def broadcast_arrays(*arrays: Tensor) -> list[Tensor]:
    """The tensors broadcast to their common shape.

    Example:
        >>> import xad
        >>> [t.shape for t in xad.broadcast_arrays(xad.zeros((2, 1)), xad.zeros(3))]
        [(2, 3), (2, 3)]
    """
    shape = _broadcast_shapes([a.shape for a in arrays])
    return [broadcast_to(a, shape) for a in arrays]


def _broadcast_shapes(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    n = max((len(s) for s in shapes), default=0)
    out = []
    for d in range(n):
        sizes = {s[d - n + len(s)] for s in shapes if d - n + len(s) >= 0} - {1}
        if len(sizes) > 1:
            raise ValueError(f"broadcast_arrays: shapes {shapes} cannot be broadcast to a "
                             f"single shape (sizes {sorted(sizes)} meet at axis {d - n}); "
                             "make those sizes equal or 1")  # NumPy's words, which SciPy matches
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _band(x: Tensor, k: int, lower: bool) -> Tensor:
    b = x._backend
    xp = b.xp
    r = xp.arange(x.shape[-2], device=b.device)[:, None]
    c = xp.arange(x.shape[-1], device=b.device)[None, :]
    with b.on_device():
        keep = Tensor._constant((c - r <= k) if lower else (c - r >= k), b)
    return where(keep, x, False if x.dtype is _dt.bool_ else 0)  # a bool mask stays bool


def tril(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The lower triangle of the last two axes (on and below diagonal ``k``), zeros above.

    Example:
        >>> import xad
        >>> xad.tril(xad.ones((2, 2))).tolist()
        [[1.0, 0.0], [1.0, 1.0]]
    """
    return _band(x, k, lower=True)


def triu(x: Tensor, /, *, k: int = 0) -> Tensor:
    """The upper triangle of the last two axes (on and above diagonal ``k``), zeros below."""
    return _band(x, k, lower=False)


def meshgrid(*arrays: Tensor, indexing: str = "xy") -> list[Tensor]:
    """Coordinate grids from 1-d tensors (``"xy"``: Cartesian, ``"ij"``: matrix indexing).

    Example:
        >>> import xad
        >>> [t.shape for t in xad.meshgrid(xad.zeros(2), xad.zeros(3))]
        [(3, 2), (3, 2)]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    n = len(arrays)
    sizes = [a.size for a in arrays]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        d = (1 - i if i < 2 else i) if indexing == "xy" and n >= 2 else i
        shape = [1] * n
        shape[d] = a.size
        out.append(broadcast_to(reshape(a, tuple(shape)), tuple(sizes)))
    return out


def cumulative_sum(x: Tensor, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Tensor:
    """Running sums along ``axis`` (needed unless ``x`` is 1-d); ``include_initial`` puts a
    0 first.

    Example:
        >>> import xad
        >>> xad.cumulative_sum(xad.tensor([1.0, 2.0]), include_initial=True).tolist()
        [0.0, 1.0, 3.0]
    """
    a = _scan_axis(x, axis, "cumulative_sum")
    x = x.astype(dtype or _accumulator(x.dtype))
    out = cumsum(x, axis=a) if x.shape[a] else x
    if include_initial:
        out = concat([_initial(x, a, 0), out], axis=a)
    return out


def cumulative_prod(x: Tensor, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Tensor:
    """Running products along ``axis``, each the product of a prefix (so the gradient is
    exact where elements are zero; O(n**2) work along the axis); ``include_initial`` puts
    a 1 first.

    Example:
        >>> import xad
        >>> xad.cumulative_prod(xad.tensor([2.0, 0.0, 3.0])).tolist()
        [2.0, 0.0, 0.0]
    """
    a = _scan_axis(x, axis, "cumulative_prod")
    x = x.astype(dtype or _accumulator(x.dtype))
    head = (slice(None),) * a
    parts = [prod(x[head + (slice(0, i + 1),)], axis=a, keepdims=True)
             for i in range(x.shape[a])]
    if include_initial:
        parts.insert(0, _initial(x, a, 1))
    return concat(parts, axis=a) if parts else x


_SIGNED = (_dt.bool_, _dt.int8, _dt.int16, _dt.int32)
_UNSIGNED = (_dt.uint8, _dt.uint16, _dt.uint32)


def _accumulator(d: _dt.DType) -> _dt.DType:
    """The dtype a running sum or product of ``d`` has by default (the standard's rule):
    the default integer dtype (int64) for narrower signed integers (and bool), uint64 for
    narrower unsigned ones, ``d`` otherwise."""
    return _dt.int64 if d in _SIGNED else _dt.uint64 if d in _UNSIGNED else d


def _initial(x: Tensor, axis: int, value: int) -> Tensor:
    """The constant slice that ``include_initial`` puts first along ``axis``."""
    shape = x.shape[:axis] + (1,) + x.shape[axis + 1:]
    return full(shape, value, dtype=x.dtype, backend=x._backend)


def _scan_axis(x: Tensor, axis: int | None, op: str) -> int:
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{op}: axis is required for a {x.ndim}-d tensor "
                             f"(shape {x.shape})")
        axis = 0
    return normalize_axis(axis, max(x.ndim, 1), op)


def diff(x: Tensor, /, *, axis: int = -1, n: int = 1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference along ``axis``.

    Example:
        >>> import xad
        >>> xad.diff(xad.tensor([1.0, 4.0, 9.0])).tolist()
        [3.0, 5.0]
    """
    a = normalize_axis(axis, x.ndim, "diff")
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = concat(parts, axis=a)
    head = (slice(None),) * a
    for _ in range(n):
        x = x[head + (slice(1, None),)] - x[head + (slice(0, -1),)]
    return x


def vecdot(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """``sum(conj(x1) * x2)`` along ``axis``, counted from the last axis (broadcast over
    the others; the vectors' lengths must be equal).

    Example:
        >>> import xad
        >>> xad.vecdot(xad.tensor([1.0, 2.0]), xad.tensor([3.0, 4.0])).tolist()
        11.0
    """
    n = max(x1.ndim, x2.ndim)
    a = axis - n if axis >= 0 else axis
    if not -min(x1.ndim, x2.ndim) <= a < 0 or x1.shape[a] != x2.shape[a]:
        raise ValueError(f"vecdot: axis {axis} must name an axis of equal length in both "
                         f"inputs (shapes {x1.shape} and {x2.shape}); pass axis= counted "
                         f"from the end")
    x1, x2 = autocast_low(x1, x2, op="vecdot")  # on autocast's low list: its sum too
    if x1.dtype in (_dt.complex64, _dt.complex128):
        x1 = conj(x1)
    out = autocast_off(sum, x1 * x2, axis=a)
    return out if out.dtype.is_floating else out.astype(result_type(x1, x2))

