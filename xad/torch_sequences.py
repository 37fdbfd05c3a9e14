"""PyTorch's functions that build index or power sequences from a tensor, for
``python -m xad.as_torch``: ``torch.combinations``, ``torch.vander``, ``torch.unravel_index``,
``torch.nonzero_static`` (no read of the data to the host: its shape is ``size``) and the
deprecated, end-inclusive ``torch.range``. Each is composed from xad's operations, so the
ones PyTorch differentiates (``combinations``, ``vander``) have gradients here too."""

from __future__ import annotations

import builtins
import itertools
import math
import warnings
from typing import Any

from . import dtypes as _dt
from . import ops as _ops
from .factories import arange, full, ones_like, tensor, zeros
from .tensor import Tensor, install_methods

__all__ = ["combinations", "vander", "unravel_index", "nonzero_static", "range"]


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:  # noqa: A002
    """``torch.combinations``: the length-``r`` combinations of a 1-D tensor's elements, one per
    row (``itertools.combinations`` order; ``with_replacement``: with repeats); ``r=0`` gives
    an empty 1-D tensor, as PyTorch's.

    Example:
        >>> import xad
        >>> from xad.torch_sequences import combinations
        >>> combinations(xad.tensor([1, 2, 3])).tolist()
        [[1, 2], [1, 3], [2, 3]]
    """
    if input.ndim != 1:
        raise RuntimeError(f"combinations: expect a 1D vector, but got shape "
                           f"{tuple(input.shape)}")
    if r < 0:
        raise RuntimeError(f"combinations: expect a non-negative number of elements, got r={r}")
    if r == 0:
        return zeros((0,), dtype=input.dtype, backend=input.backend)
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = list(pick(builtins.range(input.shape[0]), r))
    idx = tensor([i for row in rows for i in row], dtype=_dt.int64, backend=input.backend)
    return _ops.reshape(_ops.take(input, idx, axis=0), (len(rows), r))


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """``torch.vander``: the columns ``x**(N-1), ..., x**0`` of a 1-D tensor (``increasing``:
    ``x**0`` first; ``N`` defaults to ``len(x)``); integers and bools give int64, as PyTorch's.

    Example:
        >>> import xad
        >>> from xad.torch_sequences import vander
        >>> vander(xad.tensor([1, 2, 3]), N=2).tolist()
        [[1, 1], [2, 1], [3, 1]]
    """
    if x.ndim != 1:
        raise RuntimeError(f"vander: x must be a one-dimensional tensor, got shape "
                           f"{tuple(x.shape)}")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError(f"vander: N must be non-negative, got {n}")
    if not (x.dtype.is_floating or x.dtype.is_complex):
        x = _ops.astype(x, _dt.int64)
    if n == 0:
        return zeros((x.shape[0], 0), dtype=x.dtype, backend=x.backend)
    powers = [ones_like(x)]
    while len(powers) < n:  # x * x * ...: PyTorch's cumulative product, term by term
        powers.append(x if len(powers) == 1 else powers[-1] * x)
    return _ops.stack(powers if increasing else powers[::-1], axis=-1)


def unravel_index(indices: Tensor, shape: Any) -> tuple[Tensor, ...]:
    """``torch.unravel_index``: the coordinates in ``shape`` of flat ``indices`` (int64, one
    tensor per dimension); as PyTorch's, indices out of range wrap (floor division, then a
    remainder with the sign of the divisor).

    Example:
        >>> import xad
        >>> from xad.torch_sequences import unravel_index
        >>> [t.tolist() for t in unravel_index(xad.tensor([7, 5]), (3, 4))]
        [[1, 1], [3, 1]]
    """
    if indices.dtype.is_floating or indices.dtype.is_complex or indices.dtype is _dt.bool_:
        raise TypeError(f"unravel_index: expected 'indices' to be integer dtype, but got "
                        f"{indices.dtype}")
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise TypeError(f"unravel_index: expected 'shape' to be int or sequence of ints, got "
                        f"{shape!r}")
    if any(d < 0 for d in dims):
        raise ValueError(f"'shape' cannot have negative values, but got {dims}")
    strides = [math.prod(dims[k + 1:]) for k in builtins.range(len(dims))]
    i = _ops.expand_dims(_ops.astype(indices, _dt.int64), axis=-1)
    b = indices.backend
    coords = _ops.floor_divide(i, tensor(strides, dtype=_dt.int64, backend=b))
    coords = _ops.remainder(coords, tensor(list(dims), dtype=_dt.int64, backend=b))
    return tuple(coords[..., k] for k in builtins.range(len(dims)))


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:  # noqa: A002
    """``torch.nonzero_static``: the first ``size`` rows of ``input.nonzero()`` (int64,
    ``(size, ndim)``), padded with ``fill_value``; computed on the device, without reading
    how many elements are nonzero.

    Example:
        >>> import xad
        >>> from xad.torch_sequences import nonzero_static
        >>> nonzero_static(xad.tensor([0, 3, 0, 5]), size=3).tolist()
        [[1], [3], [-1]]
    """
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be a non-negative integer, got {size}")
    b, n = input.backend, input.numel()
    hit = _ops.reshape(input.detach() != 0, (-1,))
    order = _ops.argsort(_ops.astype(_ops.logical_not(hit), _dt.int64), stable=True)
    first = order[:size]
    if first.shape[0] < size:  # fewer elements than rows: the rest is padding
        first = _ops.concat([first, zeros((size - n,), dtype=_dt.int64, backend=b)])
    count = _ops.sum(_ops.astype(hit, _dt.int64))
    rows = arange(size, dtype=_dt.int64, backend=b) < count
    if n == 0 or input.ndim == 0:  # nothing to unravel (no division by a zero extent)
        fill = fill_value if input.ndim else 0
        return full((size, input.ndim), fill, dtype=_dt.int64, backend=b)
    coords = unravel_index(first, tuple(input.shape))
    return _ops.stack([_ops.where(rows, c, fill_value) for c in coords], axis=1)


def range(start: Any, end: Any, step: Any = 1, *, dtype: Any = None,  # noqa: A001
          requires_grad: bool = False) -> Tensor:
    """``torch.range`` (deprecated there, with its warning): ``start, start + step, ...`` up
    to and including ``end``, in the default float dtype unless ``dtype`` is given.

    Example:
        >>> import warnings
        >>> from xad.torch_sequences import range
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     range(1, 4).tolist()
        [1.0, 2.0, 3.0, 4.0]
    """
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if step == 0:
        raise RuntimeError("range: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"range: upper bound and larger bound inconsistent with step sign "
                           f"(start {start}, end {end}, step {step})")
    n = int(math.floor((end - start) / step)) + 1
    d = dtype or _dt.get_default_dtype()
    values = [start + i * step for i in builtins.range(n)]  # in double, then cast: PyTorch's
    out = tensor(values, dtype=_dt.float64 if d.is_floating else _dt.int64)
    return _ops.astype(out, d).requires_grad_(requires_grad)


def _nonzero_static_method(self: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``x.nonzero_static(size=..., fill_value=-1)``: :func:`nonzero_static`."""
    return nonzero_static(self, size=size, fill_value=fill_value)


install_methods({"nonzero_static": _nonzero_static_method})
