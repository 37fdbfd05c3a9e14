"""Order statistics with PyTorch's meanings (the tensor methods and ``torch.*`` under
``as_torch``): ``median``/``nanmedian`` (the lower median; with ``dim``, values and
indices), ``quantile``/``nanquantile`` (PyTorch's five interpolations) and ``mode``. All are
composed from a stable sort and gathers, so a gradient goes to the element a value was
read from (a full ``median`` splits it among the elements equal to it, as PyTorch's).

Where PyTorch's answer is its kernels' order of operations rather than a rule, xad's is the
stable sort's: which of several equal elements a ``quantile`` reads (and sends the gradient
to; PyTorch's sort is not stable past small sizes), and the index ``nanmedian`` reports for
a slice of NaNs (0), and ``mode``'s answer for a slice holding NaNs (each NaN counts alone
here). tests/test_torch_reductions_fuzz.py compares the rest with torch 2.13."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .. import dtypes as _dt
from ..factories import ones, tensor
from ..tensor import MaxMin, Tensor
from .axes import normalize_axis
from .elementwise import astype, isfinite, isnan, logical_and, logical_not, logical_or, where
from .elementwise_math import ceil, floor, round
from .manipulation import moveaxis, take_along_axis
from .reduce import any, argmax, cumsum, max, sum
from .select import scatter_add
from .shape import concat, expand_dims, reshape, squeeze
from .sorting import argsort

__all__ = ["median", "nanmedian", "quantile", "nanquantile", "mode"]

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _last(x: Tensor, dim: int | None, op: str) -> tuple[Tensor, int | None]:
    """``x`` with ``dim`` moved last (flattened when ``None``), and ``dim`` normalised."""
    if dim is None:
        return reshape(x, (-1,)), None
    d = normalize_axis(dim, x.ndim or 1, op)
    return moveaxis(x if x.ndim else reshape(x, (1,)), d, -1), d


def _sorted(x: Tensor) -> tuple[Tensor, Tensor]:
    i = argsort(x.detach(), axis=-1, stable=True)  # NaNs last
    return take_along_axis(x, i, axis=-1), i


def _put_back(v: Tensor, x: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    """A result ``(..., 1)`` of :func:`_last`'s layout in ``x``'s (kept or reduced) shape."""
    if dim is None:
        return reshape(v, (1,) * x.ndim if keepdim else ())
    if not x.ndim:
        return reshape(v, ())
    return moveaxis(v, -1, dim) if keepdim else squeeze(v, axis=-1)


def _sorted_along(x: Tensor, dim: int | None, op: str, what: str) -> tuple:
    """``x`` with ``dim`` moved last (:func:`_last`), that dim, and its sorted values and
    indices; an empty dim raises, naming ``what`` ``op`` takes."""
    y, d = _last(x, dim, op)
    if y.shape[-1] == 0:
        raise IndexError(f"{op}: cannot take {what} of an empty dimension (shape "
                         f"{x.shape}, dim {dim})")
    return (y, d, *_sorted(y))


def _median(x: Tensor, dim: int | None, keepdim: bool, skip_nan: bool, op: str) -> Any:
    y, d, s, i = _sorted_along(x, dim, op, "the median")
    n = y.shape[-1]
    nan = astype(isnan(y.detach()), _dt.int64)
    nans = sum(nan, axis=-1, keepdims=True)
    if skip_nan:
        k = (n - nans - 1) // 2
        k = where(k < 0, 0, k)
    else:
        k = where(nans > 0, n - nans, (n - 1) // 2)
    v, idx = take_along_axis(s, k, axis=-1), take_along_axis(i, k, axis=-1)
    if dim is None:
        return _split_evenly(y, v, x.ndim, keepdim)
    return MaxMin((_put_back(v, x, d, keepdim), _put_back(idx, x, d, keepdim)))


def _split_evenly(y: Tensor, v: Tensor, ndim: int, keepdim: bool) -> Tensor:
    """``v`` (of the flat ``y``) with its gradient split evenly among the elements equal to
    it (NaNs where it is NaN: PyTorch's ``evenly_distribute_backward``): for a finite
    ``v``, the max of those elements (the same number); else their mean (inf or NaN)."""
    if not y.dtype.is_floating:  # no gradient to split; the mean below is a float
        return reshape(v, (1,) * ndim if keepdim else ())
    a, w = y.detach(), v.detach()
    hit = logical_or(a == w, logical_and(isnan(a), isnan(w)))
    top = max(where(logical_and(hit, isfinite(a)), y, -math.inf), axis=-1, keepdims=True)
    count = sum(astype(hit, y.dtype), axis=-1, keepdims=True)
    mean = sum(where(hit, y, 0.0), axis=-1, keepdims=True) / where(count == 0, 1.0, count)
    return reshape(where(isfinite(w), top, mean), (1,) * ndim if keepdim else ())


def median(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """PyTorch's ``median``: the lower of the two middle values (NaN if the slice holds a
    NaN); with ``dim``, ``(values, indices)``.

    Example:
        >>> import xad
        >>> xad.ops.median(xad.tensor([4.0, 1.0, 3.0, 2.0])).item()
        2.0
        >>> v, i = xad.ops.median(xad.tensor([[4.0, 1.0, 3.0]]), dim=1); i.tolist()
        [2]
    """
    return _median(x, dim, keepdim, False, "median")


def nanmedian(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """PyTorch's ``nanmedian``: :func:`median` of the non-NaN elements (NaN if none).

    Example:
        >>> import xad
        >>> xad.ops.nanmedian(xad.tensor([4.0, float("nan"), 1.0])).item()
        1.0
    """
    return _median(x, dim, keepdim, True, "nanmedian")


def _q_tensor(q: Any, x: Tensor, op: str) -> tuple[Tensor, bool]:
    """``q`` as a 1-d tensor of ``x``'s dtype, and whether it was a scalar (0-d)."""
    if isinstance(q, Tensor):
        scalar = q.ndim == 0
        return reshape(astype(q, x.dtype), (-1,)), scalar
    scalar = not isinstance(q, Sequence)
    qs = [q] if scalar else list(q)
    if not all(0 <= float(v) <= 1 for v in qs):
        raise ValueError(f"{op}: q values must be in [0, 1], got {q!r}")
    return tensor(qs, dtype=x.dtype, backend=x._backend), scalar


def _quantile(x: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str,
              skip_nan: bool, op: str) -> Tensor:
    if not x.dtype.is_floating:
        raise TypeError(f"{op}: needs a floating tensor, got dtype {x.dtype}")
    if interpolation not in _MODES:
        raise ValueError(f"{op}: interpolation must be one of {_MODES}, got {interpolation!r}")
    qt, scalar = _q_tensor(q, x, op)
    y, d, s, _ = _sorted_along(x, dim, op, "a quantile")
    n = y.shape[-1]
    nan = isnan(y.detach())
    if skip_nan:
        ranks = qt * (sum(astype(logical_not(nan), x.dtype), axis=-1, keepdims=True) - 1)
        ranks = where(ranks < 0, 0.0, ranks)
    else:
        ranks = where(any(nan, axis=-1, keepdims=True), float(n - 1), qt * (n - 1))
    v = _interpolate(s, ranks, interpolation)
    if scalar:
        return _put_back(v, x, d, keepdim)
    return moveaxis(_put_back_q(v, x, d, keepdim), -1, 0)


def _put_back_q(v: Tensor, x: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    """A result ``(..., m)`` (``m`` quantiles) in ``x``'s layout with the ``m`` axis last."""
    if dim is None:
        return reshape(v, ((1,) * x.ndim if keepdim else ()) + (v.shape[-1],))
    if not keepdim or not x.ndim:
        return v
    return moveaxis(expand_dims(v, axis=-2), -2, dim)


def _interpolate(s: Tensor, ranks: Tensor, how: str) -> Tensor:
    """The sorted ``s`` read at fractional ``ranks`` (PyTorch's rounding and ``lerp``)."""
    if how in ("lower", "higher", "nearest"):
        ranks = {"lower": floor, "higher": ceil, "nearest": round}[how](ranks)
    below = astype(floor(ranks), _dt.int64)
    lo = take_along_axis(s, _fit(below, s), axis=-1)
    if how not in ("linear", "midpoint"):
        return lo
    hi = take_along_axis(s, _fit(astype(ceil(ranks), _dt.int64), s), axis=-1)
    w = ranks - floor(ranks) if how == "linear" else ranks * 0 + 0.5
    return where(w < 0.5, lo + w * (hi - lo), hi - (hi - lo) * (1 - w))


def _fit(idx: Tensor, s: Tensor) -> Tensor:
    """Indices ``(..., m)`` broadcast against ``s``'s leading axes."""
    shape = tuple(s.shape[:-1]) + (idx.shape[-1],)
    return idx if tuple(idx.shape) == shape else idx.broadcast_to(shape)


def quantile(x: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """PyTorch's ``quantile``: the ``q``-th quantiles (a float, a sequence or a tensor in
    [0, 1]; for several, their axis comes first) along ``dim`` (all elements when ``None``),
    interpolating by ``"linear"``, ``"lower"``, ``"higher"``, ``"midpoint"`` or
    ``"nearest"`` (ties to even); NaN where the slice holds a NaN.

    Example:
        >>> import xad
        >>> xad.ops.quantile(xad.tensor([1.0, 2.0, 3.0, 4.0]), [0.25, 0.5]).tolist()
        [1.75, 2.5]
    """
    return _quantile(x, q, dim, keepdim, interpolation, False, "quantile")


def nanquantile(x: Tensor, q: Any, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """PyTorch's ``nanquantile``: :func:`quantile` of the non-NaN elements (NaN if none).

    Example:
        >>> import xad
        >>> xad.ops.nanquantile(xad.tensor([1.0, float("nan"), 3.0]), 0.5).item()
        2.0
    """
    return _quantile(x, q, dim, keepdim, interpolation, True, "nanquantile")


def mode(x: Tensor, dim: int = -1, keepdim: bool = False) -> MaxMin:
    """PyTorch's ``mode``: the most frequent value along ``dim`` (the smallest of equally
    frequent ones) and the index of its last occurrence, as ``(values, indices)``. Counted
    as runs of the stably sorted slice (each NaN a run of its own, as PyTorch's sort-based
    kernel has it).

    Example:
        >>> import xad
        >>> v, i = xad.ops.mode(xad.tensor([3.0, 1.0, 3.0, 1.0, 2.0])); v.item(), i.item()
        (1.0, 3)
    """
    y, d = _last(x, dim, "mode")
    n = y.shape[-1]
    if n == 0:
        raise IndexError(f"mode: cannot take the mode of an empty dimension (shape {x.shape})")
    s, order = _sorted(y.detach())
    head = ones(tuple(s.shape[:-1]) + (1,), dtype=_dt.bool_, backend=x._backend)
    start = concat([head, s[..., 1:] != s[..., :-1]], axis=-1)
    run = cumsum(astype(start, _dt.int64), axis=-1) - 1  # run number of each sorted place
    one = ones(tuple(s.shape), dtype=_dt.int32, backend=x._backend)  # CuPy adds no int64
    count = take_along_axis(scatter_add(one * 0, -1, run, one), run, axis=-1)
    first = argmax(count, axis=-1, keepdims=True)  # the longest run, the smallest value
    last = first + take_along_axis(count, first, axis=-1) - 1
    idx = take_along_axis(order, last, axis=-1)  # stable: the run's last is the last index
    v = take_along_axis(y, idx, axis=-1)
    return MaxMin((_put_back(v, x, d, keepdim), _put_back(idx, x, d, keepdim)))
