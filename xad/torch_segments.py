"""PyTorch's ``torch.segment_reduce`` for ``python -m xad.as_torch``: ``data`` reduced
(``"sum"``, ``"mean"``, ``"max"``, ``"min"``, ``"prod"``) over consecutive segments along
``axis`` 0 given by their ``lengths`` or ``offsets`` (1-D; PyTorch's batched ones, for a
later axis, are refused); composed from xad's index
reductions, so differentiable (gradients as :func:`xad.index_reduce`'s)."""

from __future__ import annotations

import math
from typing import Any

from . import dtypes as _dt
from . import ops as _ops
from .factories import arange, full, zeros
from .ops.index_writes import index_reduce
from .ops.select import index_add
from .tensor import Tensor

__all__ = ["segment_reduce"]

# what an empty segment holds without ``initial``, and the index reduction of each
_EMPTY = {"sum": 0.0, "mean": math.nan, "max": -math.inf, "min": math.inf, "prod": 1.0}
_INDEX_REDUCE = {"max": "amax", "min": "amin", "prod": "prod"}


def segment_reduce(data: Tensor, reduce: str, *, lengths: Tensor | None = None,
                   indices: Any = None, offsets: Tensor | None = None, axis: int = 0,
                   unsafe: bool = False, initial: float | None = None) -> Tensor:
    """``torch.segment_reduce``: one reduction per segment; an empty segment gives
    ``initial`` (default: 0 for a sum, NaN for a mean, -inf/inf for max/min, 1 for a
    product), and ``initial`` takes part in every other one (a mean divides by the
    segment's length only, as PyTorch's).

    Example:
        >>> import xad
        >>> from xad.torch_segments import segment_reduce
        >>> d = xad.tensor([1.0, 2.0, 3.0, 4.0])
        >>> segment_reduce(d, "sum", lengths=xad.tensor([1, 0, 3])).tolist()
        [1.0, 0.0, 9.0]
    """
    if reduce not in _EMPTY:
        raise RuntimeError(f"segment_reduce: reduce must be one of {sorted(_EMPTY)}, got "
                           f"{reduce!r}")
    if indices is not None or (lengths is None) == (offsets is None):
        raise RuntimeError("segment_reduce: give exactly one of lengths or offsets (indices "
                           "are not supported, as in PyTorch)")
    if lengths is None and offsets is not None:
        lengths = _ops.diff(offsets)
    assert lengths is not None
    axis %= data.ndim
    if lengths.ndim - 1 != axis:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of "
                           f"lengths but got {axis}.")
    if lengths.ndim != 1:
        raise NotImplementedError(f"segment_reduce: lengths (or offsets) of shape "
                                  f"{tuple(lengths.shape)}, one set of segments per leading "
                                  f"index; xad takes 1-D ones along axis 0")
    ends = _ops.cumsum(_ops.astype(lengths, _dt.int64))
    n = data.shape[axis]
    if not unsafe and (ends.shape[0] == 0 or int(ends[-1].item()) != n):  # (a read, PyTorch's)
        raise RuntimeError(f"segment_reduce: the segments' lengths must add up to data.shape"
                           f"[{axis}] = {n}, got {lengths.tolist()}")
    ids = _ops.searchsorted(ends, arange(n, dtype=_dt.int64, backend=data.backend),
                            side="right")
    shape = tuple(data.shape[:axis]) + (lengths.shape[0],) + tuple(data.shape[axis + 1:])
    start = _EMPTY[reduce] if initial is None else initial
    if reduce in _INDEX_REDUCE:
        return index_reduce(full(shape, start, dtype=data.dtype, backend=data.backend), axis,
                            ids, data, _INDEX_REDUCE[reduce], include_self=initial is not None)
    total = index_add(zeros(shape, dtype=data.dtype, backend=data.backend), axis, ids, data)
    total = total if initial is None else total + initial
    if reduce == "sum":
        return total
    count = _bcast(lengths, axis, data.ndim)
    return _ops.where(count > 0, total / _ops.where(count > 0, count, 1), start)


def _bcast(lengths: Tensor, axis: int, ndim: int) -> Tensor:
    """``lengths`` shaped to broadcast along ``axis``."""
    return _ops.reshape(lengths, (-1,) + (1,) * (ndim - 1 - axis))
