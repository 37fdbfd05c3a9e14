"""Resizing images and feature maps: ``interpolate`` (nearest, area, linear, bilinear,
bicubic, trilinear, antialiased), ``pixel_shuffle`` / ``pixel_unshuffle`` and
``channel_shuffle``.

``interpolate`` multiplies each spatial axis by a constant ``(out, in)`` resampling matrix
(one-hot rows for ``nearest``, two weights per row for the linear modes, four for
``bicubic``, a stretched filter under ``antialias``), so values and
gradients (to any order) come from matrix products and match PyTorch's index rules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ... import ops as _ops
from ...factories import tensor
from ...tensor import Tensor

__all__ = ["interpolate", "upsample", "pixel_shuffle", "pixel_unshuffle",
           "channel_shuffle"]

# mode: the spatial axes it needs (None: any of 1, 2, 3)
_DIMS = {"nearest": None, "nearest-exact": None, "area": None, "linear": 1, "bilinear": 2,
         "bicubic": 2, "trilinear": 3}
_LINEAR = ("linear", "bilinear", "trilinear")


def _nearest_row(i: int, n: int, scale: float, exact: bool) -> dict[int, float]:
    src = math.floor((i + 0.5) * scale) if exact else math.floor(i * scale)
    return {min(src, n - 1): 1.0}


def _source(i: int, n: int, o: int, scale: float, align: bool, cubic: bool) -> float:
    """PyTorch's source position of output ``i`` (``area_pixel_compute_source_index``)."""
    if align:
        return i * (n - 1) / (o - 1) if o > 1 else 0.0
    src = (i + 0.5) * scale - 0.5
    return src if cubic else max(src, 0.0)


def _linear_row(i: int, n: int, o: int, scale: float, align: bool) -> dict[int, float]:
    src = _source(i, n, o, scale, align, False)
    lo = min(int(math.floor(src)), n - 1)
    hi = min(lo + 1, n - 1)
    lam = src - lo
    row = {lo: 1.0 - lam}
    row[hi] = row.get(hi, 0.0) + lam
    return row


def _cubic(x: float, a: float) -> float:
    """The cubic convolution kernel (Keys) at ``|x| < 2``."""
    x = abs(x)
    if x <= 1.0:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a if x < 2.0 else 0.0


def _cubic_row(i: int, n: int, o: int, scale: float, align: bool) -> dict[int, float]:
    """PyTorch's bicubic taps (``A = -0.75``) at ``floor(src) - 1 .. + 2``, clamped."""
    src = _source(i, n, o, scale, align, True)
    lo = math.floor(src)
    t = src - lo
    row: dict[int, float] = {}
    for k, w in zip(range(lo - 1, lo + 3), (_cubic(t + 1, -0.75), _cubic(t, -0.75),
                                            _cubic(1 - t, -0.75), _cubic(2 - t, -0.75))):
        j = min(max(k, 0), n - 1)
        row[j] = row.get(j, 0.0) + w
    return row


def _area_row(i: int, n: int, o: int) -> dict[int, float]:
    """PyTorch's ``area``: adaptive average windows ``[floor(i*n/o), ceil((i+1)*n/o))``."""
    lo, hi = (i * n) // o, -((-(i + 1) * n) // o)
    return {j: 1.0 / (hi - lo) for j in range(lo, hi)}


def _antialias_row(i: int, n: int, scale: float, cubic: bool) -> dict[int, float]:
    """PyTorch's antialiased taps: the filter (triangle, or cubic with ``a = -0.5``)
    stretched by the scale when downsampling, normalised to sum 1."""
    half = 2.0 if cubic else 1.0
    support = half * scale if scale >= 1.0 else half
    center = scale * (i + 0.5)
    inv = 1.0 / scale if scale >= 1.0 else 1.0
    lo = max(int(center - support + 0.5), 0)
    hi = min(int(center + support + 0.5), n)
    f = (lambda x: _cubic(x, -0.5)) if cubic else (lambda x: max(0.0, 1.0 - abs(x)))
    w = {j: f((j - center + 0.5) * inv) for j in range(lo, hi)}
    total = sum(w.values())
    return {j: v / total for j, v in w.items()} if total else w


def _row(i: int, n: int, o: int, scale: float, mode: str, align: bool,
         antialias: bool) -> dict[int, float]:
    if antialias:
        aa = (n - 1) / (o - 1) if align and o > 1 else (0.0 if align else scale)
        return _antialias_row(i, n, aa, mode == "bicubic")
    if mode in _LINEAR:
        return _linear_row(i, n, o, scale, align)
    if mode == "bicubic":
        return _cubic_row(i, n, o, scale, align)
    if mode == "area":
        return _area_row(i, n, o)
    return _nearest_row(i, n, scale, mode == "nearest-exact")


def _matrix(n: int, o: int, scale: float, mode: str, align: bool,
            antialias: bool) -> list[list[float]]:
    """The ``(o, n)`` resampling matrix of one axis, with PyTorch's source positions."""
    rows = []
    for i in range(o):
        r = _row(i, n, o, scale, mode, align, antialias)
        rows.append([r.get(j, 0.0) for j in range(n)])
    return rows


def _sizes(x: Tensor, size: int | Sequence[int] | None,
           scale_factor: float | Sequence[float] | None, recompute: bool | None
           ) -> tuple[list[int], list[float]]:
    """Output sizes and the per-axis source step (``in/out``, or ``1/scale_factor``)."""
    k = x.ndim - 2
    ins = list(x.shape[2:])
    if (size is None) == (scale_factor is None):
        raise ValueError(f"interpolate: pass exactly one of size and scale_factor (input "
                         f"shape {x.shape})")
    if size is not None:
        outs = [int(size)] * k if isinstance(size, int) else [int(s) for s in size]
        if len(outs) != k:
            raise ValueError(f"interpolate: size {size} needs {k} entries for input of "
                             f"shape {x.shape}")
        return outs, [n / o for n, o in zip(ins, outs)]
    assert scale_factor is not None  # exactly one of size and scale_factor (checked above)
    sf = [float(scale_factor)] * k if isinstance(scale_factor, (int, float)) else \
        [float(s) for s in scale_factor]
    if len(sf) != k:
        raise ValueError(f"interpolate: scale_factor {scale_factor} needs {k} entries for "
                         f"input of shape {x.shape}")
    outs = [int(math.floor(n * s)) for n, s in zip(ins, sf)]
    steps = [n / o for n, o in zip(ins, outs)] if recompute else [1.0 / s for s in sf]
    return outs, steps


def interpolate(input: Tensor, size: int | Sequence[int] | None = None,
                scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial axes of ``(N, C, L)``, ``(N, C, H, W)`` or ``(N, C, D, H, W)`` input
    to ``size`` (or by ``scale_factor``) with ``mode`` ``"nearest"``, ``"nearest-exact"``,
    ``"area"``, ``"linear"`` (3-d), ``"bilinear"`` or ``"bicubic"`` (4-d), ``"trilinear"``
    (5-d); ``align_corners`` and ``antialias`` as PyTorch's. Each axis is one constant
    resampling matrix with PyTorch's source positions and weights.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.interpolate(xad.tensor([[[1.0, 2.0]]]), scale_factor=2).tolist()
        [[[1.0, 1.0, 2.0, 2.0]]]
        >>> F.interpolate(xad.tensor([[[1.0, 2.0]]]), size=3, mode="linear",
        ...               align_corners=True).tolist()
        [[[1.0, 1.5, 2.0]]]
    """
    if mode not in _DIMS:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported (use one of "
                                  f"{sorted(_DIMS)})")
    if antialias and mode not in ("bilinear", "bicubic"):
        raise ValueError(f"interpolate: antialias=True needs mode 'bilinear' or 'bicubic', "
                         f"not {mode!r}")
    dims = _DIMS[mode]  # the spatial axes a mode needs; None: 1, 2 or 3
    if input.ndim not in (3, 4, 5) or (dims and input.ndim != dims + 2):
        raise ValueError(f"interpolate: mode {mode!r} got input of shape {input.shape}; "
                         f"expected (N, C, L) for linear, (N, C, H, W) for bilinear and "
                         f"bicubic, (N, C, D, H, W) for trilinear, any of them otherwise")
    if align_corners is not None and mode not in (*_LINEAR, "bicubic"):
        raise ValueError(f"interpolate: align_corners applies to the linear and cubic modes "
                         f"only, not {mode!r}")
    outs, steps = _sizes(input, size, scale_factor, recompute_scale_factor)
    if min(outs) < 1:
        raise ValueError(f"interpolate: output size {outs} must be positive (input shape "
                         f"{input.shape})")
    # PyTorch's CPU kernels copy an axis that keeps its size, whatever the scale, in these
    # modes (not in 1-d and 3-d nearest, nearest-exact or plain bicubic: docs/PORTING.md)
    copies = mode in _LINEAR or antialias or (mode == "nearest" and len(outs) == 2)
    y = input
    for axis, (n, o, s) in enumerate(zip(input.shape[2:], outs, steps)):
        if n == o and copies:
            continue
        m = tensor(_matrix(n, o, s, mode, bool(align_corners), antialias), dtype=input.dtype,
                   backend=input._backend)
        y = _along(y, m, axis - len(outs))
    return y


def _along(y: Tensor, m: Tensor, axis: int) -> Tensor:
    """``m`` (``(o, n)``) applied along ``axis`` (negative) of ``y``."""
    if axis == -1:
        return _ops.matmul(y, _ops.matrix_transpose(m))
    if axis == -2:
        return _ops.matmul(m, y)
    perm = list(range(y.ndim))
    perm[axis], perm[-2] = perm[-2], perm[axis]
    return _ops.permute_dims(_ops.matmul(m, _ops.permute_dims(y, perm)), perm)


def upsample(input: Tensor, size: int | Sequence[int] | None = None,
             scale_factor: float | Sequence[float] | None = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """PyTorch's older name of :func:`interpolate`."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def _check_factor(x: Tensor, r: int, where: str) -> None:
    if x.ndim < 3 or r < 1:
        raise ValueError(f"{where}: expected (*, C, H, W) input and a positive factor, got "
                         f"shape {x.shape} and factor {r}")


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C*r*r, H, W)`` to ``(*, C, H*r, W*r)``: PyTorch's sub-pixel rearrangement.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.pixel_shuffle(xad.arange(4.0).reshape(1, 4, 1, 1), 2).tolist()
        [[[[0.0, 1.0], [2.0, 3.0]]]]
    """
    r = upscale_factor
    _check_factor(input, r, "pixel_shuffle")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise ValueError(f"pixel_shuffle: the channels {c} of input shape {input.shape} must "
                         f"divide by upscale_factor**2 = {r * r}")
    k = len(lead)
    y = _ops.reshape(input, (*lead, c // (r * r), r, r, h, w))
    y = _ops.permute_dims(y, (*range(k + 1), k + 3, k + 1, k + 4, k + 2))
    return _ops.reshape(y, (*lead, c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``(*, C, H*r, W*r)`` to ``(*, C*r*r, H, W)``: the inverse of :func:`pixel_shuffle`.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.pixel_unshuffle(xad.arange(4.0).reshape(1, 1, 2, 2), 2).reshape(-1).tolist()
        [0.0, 1.0, 2.0, 3.0]
    """
    r = downscale_factor
    _check_factor(input, r, "pixel_unshuffle")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise ValueError(f"pixel_unshuffle: the height and width of input shape "
                         f"{input.shape} must divide by downscale_factor {r}")
    k = len(lead)
    y = _ops.reshape(input, (*lead, c, h // r, r, w // r, r))
    y = _ops.permute_dims(y, (*range(k + 1), k + 2, k + 4, k + 1, k + 3))
    return _ops.reshape(y, (*lead, c * r * r, h // r, w // r))


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels of ``(N, C, *)`` input from ``groups`` groups: channel
    ``g * (C // groups) + i`` moves to ``i * groups + g`` (ShuffleNet's, PyTorch's).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.channel_shuffle(xad.arange(4.0).reshape(1, 4, 1), 2).flatten().tolist()
        [0.0, 2.0, 1.0, 3.0]
    """
    if input.ndim < 3 or groups < 1 or input.shape[1] % groups:
        raise ValueError(f"channel_shuffle: expected (N, C, *) input whose C divides into "
                         f"{groups} groups (a positive number), got shape {input.shape}")
    n, c, *rest = input.shape
    y = _ops.reshape(input, (n, groups, c // groups, *rest))
    return _ops.reshape(_ops.moveaxis(y, 1, 2), input.shape)
