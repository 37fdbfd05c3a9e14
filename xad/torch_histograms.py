"""PyTorch's ``torch.histogram`` and ``torch.histogramdd`` (and ``x.histogram()``), for
``python -m xad.as_torch``: counts (or summed weights) of points in bins given by a number
(equal bins over ``range`` or the data's extent) or by their edges, with ``density``.

A point falls in bin ``i`` when ``edges[i] <= x < edges[i + 1]``, the last bin closed on the
right, as PyTorch's (which corrects its linear estimate against the edges); NaN and points
outside the edges are not counted. The data's extent, when no ``range`` is given, is read
to the host (PyTorch reads it too). Not differentiable: PyTorch's result asks for a
gradient and raises at backward; xad's does not ask for one (docs/PORTING.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from . import dtypes as _dt
from . import ops as _ops
from .factories import linspace, ones_like, zeros
from .ops.select import index_add
from .tensor import Tensor, install_methods

__all__ = ["histogram", "histogramdd"]


class HistogramResult(NamedTuple):
    """``torch.histogram``'s result."""

    hist: Tensor
    bin_edges: Tensor


class HistogramddResult(NamedTuple):
    """``torch.histogramdd``'s result (one tensor of edges per dimension)."""

    hist: Tensor
    bin_edges: tuple[Tensor, ...]


def _extent(col: Tensor, d: int, rng: Any) -> tuple[float, float]:
    """Dimension ``d``'s outer edges: from ``range``, else the data's extent (read)."""
    if rng is not None:
        lo, hi = float(rng[2 * d]), float(rng[2 * d + 1])
    elif col.shape[0]:
        lo, hi = float(_ops.min(col).item()), float(_ops.max(col).item())
    else:  # no data: [0, 1], as PyTorch's
        lo, hi = 0.0, 1.0
    if lo > hi:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} "
                           f"max {hi:g} for dimension {d}")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{lo}, {hi}] is not "
                           f"finite")
    return (lo - 0.5, hi + 0.5) if lo == hi else (lo, hi)


def _edges(pts: Tensor, bins: Any, rng: Any) -> list[Tensor]:
    """The edges of each of ``pts``' columns' bins."""
    dims = pts.shape[1]
    if isinstance(bins, int) or (isinstance(bins, Tensor) and bins.ndim == 0):
        bins = [int(bins)] * dims
    if not isinstance(bins, Sequence) or len(bins) != dims:
        raise RuntimeError(f"torch.histogramdd: expected {dims} sequences of bin edges or bin "
                           f"counts for {dims}-dimensional points, got {bins!r}")
    if rng is not None and len(rng) != 2 * dims:
        raise RuntimeError(f"torch.histogramdd: for a {dims}-dimensional histogram, range should "
                           f"have {2 * dims} elements, but got {len(rng)}")
    out = []
    for d, b in enumerate(bins):
        if isinstance(b, Tensor):
            if b.ndim != 1 or b.shape[0] < 1 or b.dtype != pts.dtype:
                raise RuntimeError(f"torch.histogramdd: bin edges of dimension {d} must be a "
                                   f"1-D {pts.dtype} tensor with at least one element, got "
                                   f"{b.dtype} of shape {tuple(b.shape)}")
            out.append(b.detach())
            continue
        if int(b) <= 0:
            raise RuntimeError(f"torch.histogramdd: number of bins must be positive, but got "
                               f"{b} for dimension {d}")
        lo, hi = _extent(pts[:, d], d, rng)
        out.append(linspace(lo, hi, int(b) + 1, dtype=pts.dtype, backend=pts.backend))
    return out


def _bin_of(col: Tensor, edges: Tensor) -> tuple[Tensor, Tensor]:
    """Each value's bin (the last one closed) and whether it falls inside the edges."""
    n = edges.shape[0] - 1
    pos = _ops.searchsorted(edges, col, side="right") - 1
    pos = _ops.where(col == edges[-1], max(n - 1, 0), _ops.clip(pos, 0, max(n - 1, 0)))
    return pos, (col >= edges[0]) & (col <= edges[-1])


def histogramdd(input: Tensor, bins: Any, *, range: Any = None,  # noqa: A001, A002
                weight: Tensor | None = None, density: bool = False) -> HistogramddResult:
    """``torch.histogramdd``: the points in ``input``'s last dimension (``(..., D)``) counted
    in a ``D``-dimensional grid of bins (``bins`` an int, one int per dimension, or one tensor
    of edges per dimension; ``range`` the flat outer edges ``[lo0, hi0, lo1, hi1, ...]``);
    ``weight`` sums weights instead; ``density`` divides by the total and the bins' volumes.

    Example:
        >>> import xad
        >>> from xad.torch_histograms import histogramdd
        >>> histogramdd(xad.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0]]), bins=2).hist.tolist()
        [[0.0, 1.0], [1.0, 1.0]]
    """
    if not input.dtype.is_floating:
        raise RuntimeError(f'"histogramdd" not implemented for \'{input.dtype}\'; convert the '
                           f"input to a floating dtype")
    if input.ndim < 1:
        raise RuntimeError("torch.histogramdd: input should have at least 1 dimension")
    pts = _ops.reshape(input.detach(), (-1, input.shape[-1]))
    if weight is not None and (tuple(weight.shape) != tuple(input.shape[:-1])
                               or weight.dtype != input.dtype):
        raise RuntimeError(f"torch.histogramdd: weight must be {input.dtype} of shape "
                           f"{tuple(input.shape[:-1])} (the input's but the last), got "
                           f"{weight.dtype} of shape {tuple(weight.shape)}")
    edges = _edges(pts, bins, range)
    sizes = [max(e.shape[0] - 1, 0) for e in edges]
    flat = zeros((pts.shape[0],), dtype=_dt.int64, backend=input.backend)
    inside = flat == 0
    for d, e in enumerate(edges):
        pos, ok = _bin_of(pts[:, d], e)
        flat, inside = flat * sizes[d] + pos, inside & ok
    w = ones_like(pts[:, 0]) if weight is None else _ops.reshape(weight.detach(), (-1,))
    hist = index_add(zeros((math.prod(sizes),), dtype=input.dtype, backend=input.backend),
                          0, _ops.where(inside, flat, 0), _ops.where(inside, w, 0))
    hist = _ops.reshape(hist, tuple(sizes))
    if density:
        hist = hist / _ops.sum(hist)
        for d, e in enumerate(edges):
            hist = hist / _ops.reshape(_ops.diff(e), (-1,) + (1,) * (len(edges) - 1 - d))
    return HistogramddResult(hist, tuple(edges))


def histogram(input: Tensor, bins: Any = 100, *, range: Any = None,  # noqa: A001, A002
              weight: Tensor | None = None, density: bool = False) -> HistogramResult:
    """``torch.histogram``: the elements of ``input`` counted in ``bins`` equal bins over
    ``range`` (default: the data's extent) or in the bins between the edges ``bins`` (a
    tensor); ``weight`` (``input``'s shape) sums weights; ``density`` gives a density.

    Example:
        >>> import xad
        >>> from xad.torch_histograms import histogram
        >>> histogram(xad.tensor([1.0, 2.0, 1.0]), bins=4, range=(0.0, 3.0)).hist.tolist()
        [0.0, 2.0, 1.0, 0.0]
    """
    if isinstance(bins, Tensor) and bins.ndim == 1 and range is not None:
        raise TypeError("histogram: range= goes with a number of bins, not with bin edges")
    w = None if weight is None else _ops.reshape(weight, (-1,))
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise RuntimeError(f"torch.histogram: weight of shape {tuple(weight.shape)} for an "
                           f"input of shape {tuple(input.shape)}; they must be the same")
    out = histogramdd(_ops.reshape(input, (-1, 1)), [bins], range=range, weight=w,
                      density=density)
    return HistogramResult(out.hist, out.bin_edges[0])


install_methods({"histogram": histogram})
