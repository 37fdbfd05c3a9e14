"""PyTorch's ``tensor_split`` (views, as ``narrow``) and ``Tensor.unfold`` (the windows of
one dimension as a new last one).

``unfold``'s windows are a view of the tensor wherever they do not overlap and fit a
reshape (``step >= size`` with ``n_windows * step <= length``, which covers
non-overlapping patches, ``step == size``): made of slicing, ``reshape`` and a
permutation, so an in-place change through them reaches the base and a change of the base
shows in them, as PyTorch's. Overlapping windows (``step < size``) and the ragged rest are
a copy (a gather), whose gradient adds up where windows overlap: reading them is
PyTorch's, writing into them does not reach the base (PyTorch's share memory).
"""

from __future__ import annotations

from typing import Any

from .. import dtypes as _dt
from ..factories import arange
from ..tensor import Tensor
from .axes import normalize_axis
from .indexing import getitem_raw
from .manipulation import moveaxis
from .shape import reshape

__all__ = ["tensor_split", "unfold"]


def _slice(x: Tensor, axis: int, start: int, stop: int) -> Tensor:
    return x[(slice(None),) * axis + (slice(start, stop),)]


def _bounds(n: int, spec: Any) -> list[tuple[int, int]]:
    """``(start, stop)`` of each part of a length ``n`` for ``tensor_split``'s ``spec``."""
    if isinstance(spec, int):
        if spec <= 0:
            raise ValueError(f"tensor_split: number of sections must be larger than 0, got "
                             f"{spec}")
        q, r = divmod(n, spec)
        sizes = [q + 1] * r + [q] * (spec - r)
        starts = [sum(sizes[:i]) for i in range(spec)]
        return [(s, s + k) for s, k in zip(starts, sizes)]
    cuts = [min(max(i + n if i < 0 else i, 0), n) for i in spec]
    edges = [0, *cuts, n]
    return [(a, max(a, b)) for a, b in zip(edges[:-1], edges[1:])]


def tensor_split(input: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    """PyTorch's ``tensor_split``: ``input`` cut along ``dim`` into ``n`` nearly equal views
    (the first ``length % n`` one longer), or at the given indices (a list, or a 1-d integer
    tensor read on the host, as PyTorch asks for a CPU one).

    Example:
        >>> import xad
        >>> [t.tolist() for t in xad.tensor_split(xad.arange(7), 3)]
        [[0, 1, 2], [3, 4], [5, 6]]
        >>> [t.tolist() for t in xad.tensor_split(xad.arange(7), [1, 5])]
        [[0], [1, 2, 3, 4], [5, 6]]
    """
    axis = normalize_axis(dim, input.ndim, "tensor_split")
    spec = indices_or_sections
    if isinstance(spec, Tensor):
        if spec.dtype.is_floating or spec.ndim > 1:
            raise TypeError(f"tensor_split: a tensor of indices_or_sections must be a 0-d or "
                            f"1-d integer tensor, got shape {tuple(spec.shape)} of "
                            f"{spec.dtype.name}")
        spec = spec.tolist()  # an explicit host read (PyTorch takes a CPU tensor only)
    if not isinstance(spec, int):
        spec = [int(i) for i in spec]
    return tuple(_slice(input, axis, a, b) for a, b in _bounds(input.shape[axis], spec))


def unfold(x: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """PyTorch's ``Tensor.unfold``: the windows of ``size`` elements, ``step`` apart, along
    ``dimension``, as a new last dimension (a view where they do not overlap).

    Example:
        >>> import xad
        >>> x = xad.arange(6.0)
        >>> w = x.unfold(0, 2, 2); w.tolist()
        [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
        >>> w[1] *= 10; x.tolist()
        [0.0, 1.0, 20.0, 30.0, 4.0, 5.0]
    """
    axis = normalize_axis(dimension, x.ndim, "unfold") if x.ndim else 0
    if x.ndim == 0:
        x = reshape(x, (1,))
        out = unfold(x, 0, size, step)
        return reshape(out, (size,)) if out.shape[0] == 1 else out
    n = x.shape[axis]
    if size > n or size < 0 or step <= 0:
        raise RuntimeError(f"unfold: size {size} and step {step} do not fit dimension "
                           f"{dimension} of length {n} (shape {tuple(x.shape)}): need "
                           f"0 <= size <= {n} and step > 0")
    count = (n - size) // step + 1
    lead, rest = tuple(x.shape[:axis]), tuple(x.shape[axis + 1:])
    if step >= size and count * step <= n:  # a view: slice, reshape, slice, move
        w = reshape(_slice(x, axis, 0, count * step), lead + (count, step) + rest)
        w = w[(slice(None),) * (axis + 1) + (slice(0, size),)]
        return moveaxis(w, axis + 1, -1)
    starts = arange(count, dtype=_dt.int64, backend=x.backend) * step
    idx = reshape(starts, (count, 1)) + arange(size, dtype=_dt.int64, backend=x.backend)
    # in range by construction: the raw gather (no bounds check, no host read)
    return moveaxis(getitem_raw(x, (slice(None),) * axis + (idx._array,)), axis + 1, -1)
