"""Spatial transformers: ``affine_grid`` (sampling grids from affine matrices) and
``grid_sample`` (an image read at the grid's points), PyTorch's layouts and numbers.

``grid_sample`` is composed of xad operations: the grid's coordinates mapped to pixels (and
clipped or reflected by ``padding_mode``, with PyTorch's gradient at the borders: zero on
and past them), the corner pixels gathered with ``take_along_axis`` and blended by weights
that are differentiable in the grid, so the gradients reach both the input and the grid, to
any order. ``mode``: ``"bilinear"`` (trilinear on 5-d input), ``"nearest"`` (no gradient
to the grid, as PyTorch's) or ``"bicubic"`` (4-d input: PyTorch's 4x4 taps with ``A = -0.75``,
``padding_mode`` applied to each tap's pixel, not to the sample point, as PyTorch's).
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Sequence

from ... import dtypes as _dt
from ... import ops as _ops
from ...factories import arange, ones, tensor
from ...tensor import Tensor

__all__ = ["affine_grid", "grid_sample"]

_PADDING = ("zeros", "border", "reflection")


def _base(n: int, align_corners: bool, like: Tensor) -> Tensor:
    """PyTorch's sample positions along an axis of ``n`` pixels, in ``[-1, 1]``."""
    if n <= 1:
        return tensor([0.0] * n, dtype=like.dtype, backend=like._backend)
    i = arange(n, dtype=like.dtype, backend=like._backend)
    if align_corners:
        return i * (2.0 / (n - 1)) - 1.0
    return (i * 2.0 + 1.0) / n - 1.0


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool = False) -> Tensor:
    """The sampling grid ``(N, H, W, 2)`` (or ``(N, D, H, W, 3)``) of the affine maps ``theta``
    ``(N, 2, 3)`` (or ``(N, 3, 4)``) for an output of ``size`` ``(N, C, H, W)`` (or ``(N, C,
    D, H, W)``): each output pixel's normalised ``(x, y[, z])`` times ``theta``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> eye = xad.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
        >>> F.affine_grid(eye, (1, 1, 1, 2), align_corners=True).tolist()
        [[[[-1.0, 0.0], [1.0, 0.0]]]]
    """
    size = tuple(int(s) for s in size)
    nd = len(size) - 2
    if nd not in (2, 3) or theta.shape != (size[0], nd, nd + 1):
        raise ValueError(f"affine_grid: expected theta of shape (N, 2, 3) for a size (N, C, H, "
                         f"W) or (N, 3, 4) for (N, C, D, H, W); got theta {theta.shape} and "
                         f"size {size}")
    if not theta.dtype.is_floating:
        raise TypeError(f"affine_grid: theta must be floating point, got {theta.dtype}")
    axes = [_base(n, align_corners, theta) for n in reversed(size[2:])]  # x (W) first
    spatial = size[2:]
    cols = []
    for k, a in enumerate(axes):  # coordinate k varies along spatial axis nd - 1 - k
        shape = [1] * nd
        shape[nd - 1 - k] = spatial[nd - 1 - k]
        cols.append(_ops.broadcast_to(_ops.reshape(a, tuple(shape)), spatial))
    cols.append(ones(spatial, dtype=theta.dtype, backend=theta._backend))
    base = _ops.reshape(_ops.stack(cols, axis=-1), (1, -1, nd + 1))  # (1, P, nd + 1)
    grid = _ops.matmul(base, _ops.matrix_transpose(theta))  # (N, P, nd)
    return _ops.reshape(grid, (size[0], *spatial, nd))


def _unnormalize(c: Tensor, n: int, align: bool) -> Tensor:
    return (c + 1.0) * ((n - 1) / 2.0) if align else ((c + 1.0) * n - 1.0) / 2.0


def _clip(c: Tensor, n: int) -> Tensor:
    """``c`` clipped to ``[0, n - 1]``, with gradient 0 on and past the borders (PyTorch's)."""
    return _ops.where(c > 0, _ops.where(c < n - 1, c, float(n - 1)), 0.0)


def _reflect(c: Tensor, lo2: int, hi2: int) -> Tensor:
    """``c`` reflected into ``[lo2 / 2, hi2 / 2]`` (PyTorch's ``reflect_coordinates``)."""
    if lo2 == hi2:
        return c * 0.0
    low, span = lo2 / 2.0, (hi2 - lo2) / 2.0
    a = _ops.abs(c - low)
    flips = _ops.floor(a / span).detach()
    extra = a - flips * span
    return _ops.where(flips % 2 == 0, extra + low, span - extra + low)


def _source(c: Tensor, n: int, padding_mode: str, align: bool) -> Tensor:
    """Pixel coordinates along an axis of ``n`` from normalised ones, by ``padding_mode``."""
    return _tap(_unnormalize(c, n, align), n, padding_mode, align)


def _gather(flat: Tensor, at: list[Tensor], sizes: Sequence[int]) -> Tensor:
    """``flat`` ``(N, C, P)`` at integer pixel coordinates ``at`` (one per axis, last axis
    first, each ``(N, L)``); 0 where any is outside the image."""
    oks = [_ops.logical_and(a >= 0, a <= n - 1) for a, n in zip(at, reversed(sizes))]
    strides = [math.prod(reversed(sizes[len(sizes) - k:])) for k in range(len(sizes))]
    index = functools.reduce(operator.add, [_ops.where(ok, a, 0.0) * st
                                            for ok, a, st in zip(oks, at, strides)])
    inside = functools.reduce(_ops.logical_and, oks)
    index = _ops.astype(index, _dt.int64)
    n, c, length = flat.shape[0], flat.shape[1], index.shape[1]
    taken = _ops.take_along_axis(flat, _ops.broadcast_to(index[:, None, :], (n, c, length)),
                                 axis=2)
    return _ops.where(inside[:, None, :], taken, 0.0)


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """PyTorch's cubic convolution weights (``A = -0.75``) of the taps at ``-1, 0, 1, 2``
    from a fraction ``t`` in ``[0, 1)``."""
    a = -0.75

    def near(x: Tensor) -> Tensor:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Tensor) -> Tensor:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]


def _tap(c: Tensor, n: int, padding_mode: str, align: bool) -> Tensor:
    """A pixel coordinate moved by ``padding_mode`` (PyTorch's ``compute_coordinates``: of
    the source point, and of each bicubic tap)."""
    if padding_mode == "border":
        return _clip(c, n)
    if padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (n - 1)) if align else _reflect(c, -1, 2 * n - 1)
        return _clip(c, n)
    return c


def _bicubic(flat: Tensor, g: Tensor, sizes: Sequence[int], padding_mode: str,
             align: bool) -> Tensor:
    """``flat`` ``(N, C, H*W)`` sampled bicubically at the normalised points ``g`` ``(N, L,
    2)``: 16 taps around each point, weighted by cubic functions of its fractions (the
    gradient reaches the grid through them)."""
    h, w = sizes
    ix, iy = _unnormalize(g[..., 0], w, align), _unnormalize(g[..., 1], h, align)
    x0, y0 = _ops.floor(ix).detach(), _ops.floor(iy).detach()
    wx, wy = _cubic_weights(ix - x0), _cubic_weights(iy - y0)
    xs = [_tap(x0 + (k - 1), w, padding_mode, align) for k in range(4)]
    ys = [_tap(y0 + (k - 1), h, padding_mode, align) for k in range(4)]
    terms = [_gather(flat, [xs[i], ys[j]], sizes) * (wx[i] * wy[j])[:, None, :]
             for j in range(4) for i in range(4)]
    return functools.reduce(operator.add, terms)


def _check(input: Tensor, grid: Tensor, mode: str, padding_mode: str) -> int:
    nd = input.ndim - 2
    if nd not in (2, 3) or grid.ndim != input.ndim or grid.shape[-1] != nd \
            or grid.shape[0] != input.shape[0]:
        raise ValueError(f"grid_sample: expected input (N, C, H, W) with grid (N, Ho, Wo, 2), "
                         f"or input (N, C, D, H, W) with grid (N, Do, Ho, Wo, 3); got input "
                         f"{input.shape} and grid {grid.shape}")
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"grid_sample: mode must be 'bilinear', 'nearest' or 'bicubic', got "
                         f"{mode!r}")
    if mode == "bicubic" and nd != 2:
        raise ValueError(f"grid_sample: bicubic interpolation only supports 4-d input (N, C, "
                         f"H, W), got input {input.shape}")
    if padding_mode not in _PADDING:
        raise ValueError(f"grid_sample: padding_mode must be one of {_PADDING}, got "
                         f"{padding_mode!r}")
    if input.dtype != grid.dtype or not input.dtype.is_floating:
        raise TypeError(f"grid_sample: input and grid must share one floating dtype, got "
                        f"{input.dtype} and {grid.dtype}")
    return nd


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` ``(N, C, H, W)`` at ``grid`` ``(N, Ho, Wo, 2)`` of normalised ``(x,
    y)`` in ``[-1, 1]`` (5-d: ``(N, C, D, H, W)`` at ``(N, Do, Ho, Wo, 3)``), giving ``(N, C,
    Ho, Wo)``; ``align_corners=None`` is ``False``, as PyTorch's.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> img = xad.tensor([[[[0.0, 1.0], [2.0, 3.0]]]])
        >>> F.grid_sample(img, xad.zeros((1, 1, 1, 2)), align_corners=True).tolist()
        [[[[1.5]]]]
    """
    nd = _check(input, grid, mode, padding_mode)
    align = bool(align_corners)
    sizes = input.shape[2:]
    n, c = input.shape[:2]
    out = grid.shape[1:-1]
    g = _ops.reshape(grid, (n, -1, nd))
    src = [_source(g[..., k], sizes[nd - 1 - k], padding_mode, align) for k in range(nd)]
    flat = _ops.reshape(input, (n, c, -1))
    if mode == "bicubic":
        return _ops.reshape(_bicubic(flat, g, sizes, padding_mode, align), (n, c, *out))
    if mode == "nearest":
        y = _gather(flat, [_ops.round(s).detach() for s in src], sizes)
        # the grid's gradient is 0 (PyTorch's), not absent: a finite zero term keeps it used
        y = y + (_ops.where(_ops.abs(g) < 1.0, g, 0.0).sum(axis=-1) * 0.0)[:, None, :]
        return _ops.reshape(y, (n, c, *out))
    low = [_ops.floor(s).detach() for s in src]
    frac = [s - lo for s, lo in zip(src, low)]
    terms = []
    for corner in itertools.product((0, 1), repeat=nd):  # 4 (8) corners, each weighted
        w = functools.reduce(operator.mul, [f if bit else 1.0 - f
                                            for f, bit in zip(frac, corner)])
        at = [lo + bit for lo, bit in zip(low, corner)]
        terms.append(_gather(flat, at, sizes) * w[:, None, :])
    return _ops.reshape(functools.reduce(operator.add, terms), (n, c, *out))
