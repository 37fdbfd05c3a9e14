"""Pooling as functions: ``max_pool2d``, ``avg_pool2d``, ``adaptive_avg_pool2d``.

Windows come from ``im2col`` (padded with ``-inf`` for the max, zeros for the mean), then a
``max`` or ``sum`` over the kernel axes; adaptive pooling is two averaging matrices. All
differentiable to any order; the max's gradient goes all to the first of tied maxima in
each window, as PyTorch's (ties are common after a ReLU).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ... import dtypes as _dt
from ... import ops as _ops
from ...factories import ones_like, tensor, zeros
from ...ops.convolution import im2col
from ...tensor import Tensor
from .conv import IntPair, _pair
from .layers import _check_in_range as check_in_range

__all__ = ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "max_pool1d", "avg_pool1d",
           "adaptive_avg_pool1d", "adaptive_max_pool2d", "adaptive_max_pool1d", "lp_pool1d",
           "lp_pool2d", "max_unpool1d", "max_unpool2d"]


def _out(n: int, k: int, s: int, p: int, d: int, ceil: bool) -> int:
    num = n + 2 * p - d * (k - 1) - 1
    o = (num + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= n + p:  # the last window must start inside the input
        o -= 1
    return o


def _windows(x: Tensor, kernel_size: IntPair, stride: IntPair | None, padding: IntPair,
             dilation: IntPair, ceil: bool, value: float, where: str) -> Tensor:
    """The ``(C, kh, kw, Ho, Wo, N)`` windows, checked as PyTorch checks them."""
    if x.ndim not in (3, 4):
        raise ValueError(f"{where}: expected (N, C, H, W) or (C, H, W) input, got {x.shape}")
    k = _pair(kernel_size, "kernel_size", where)
    s = k if stride is None or stride == () else _pair(stride, "stride", where)
    p, d = _pair(padding, "padding", where), _pair(dilation, "dilation", where)
    if any(pa > ke // 2 for pa, ke in zip(p, k)):  # PyTorch's check: dilation not counted
        raise ValueError(f"{where}: padding {p} must be at most half the kernel {k}")
    h, w = x.shape[-2:]
    ho, wo = (_out(n, ke, st, pa, di, ceil) for n, ke, st, pa, di in zip((h, w), k, s, p, d))
    if ho < 1 or wo < 1:
        raise ValueError(f"{where}: the kernel {k} (dilation {d}) is larger than the padded "
                         f"input {h + 2 * p[0]}x{w + 2 * p[1]} (input shape {x.shape})")
    extra = [max((o - 1) * st + di * (ke - 1) + 1 - n - 2 * pa, 0)
             for o, st, di, ke, n, pa in zip((ho, wo), s, d, k, (h, w), p)]
    x4 = x if x.ndim == 4 else _ops.expand_dims(x, 0)
    cols = im2col(x4, k, s, d, (p[0], p[0] + extra[0], p[1], p[1] + extra[1]), value)
    if cols.shape[3:5] != (ho, wo):
        cols = cols[:, :, :, :ho, :wo, :]
    return cols


def _taps(cols: Tensor) -> Tensor:
    """Windows as ``(C, kh*kw, Ho*Wo*N)``: a reduction over axis 1 is then elementwise work
    over contiguous rows (NumPy reduces over several small inner axes ~100x slower)."""
    c, kh, kw = cols.shape[:3]
    return _ops.reshape(cols, (c, kh * kw, -1))


def _image(y: Tensor, cols: Tensor, x: Tensor) -> Tensor:
    """A ``(C, Ho*Wo*N)`` result back to ``x``'s layout (a view)."""
    y = _ops.permute_dims(_ops.reshape(y, (cols.shape[0], *cols.shape[3:])), (3, 0, 1, 2))
    return y if x.ndim == 4 else _ops.squeeze(y, axis=0)


def max_pool2d(input: Tensor, kernel_size: IntPair, stride: IntPair | None = None,
               padding: IntPair = 0, dilation: IntPair = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """The maximum of each window (padding never wins); with ``return_indices``, also
    PyTorch's flat index of each maximum.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.max_pool2d(xad.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
        [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    cols = _windows(input, kernel_size, stride, padding, dilation, ceil_mode, -float("inf"),
                    "max_pool2d")
    y = _image(_ops.reduce.max_indexed(_taps(cols), 1), cols, input)
    if not return_indices:
        return y
    w = "max_pool2d"
    s = None if stride is None or stride == () else _pair(stride, "stride", w)
    inside = _windows(ones_like(input[(0,) * (input.ndim - 2)])[None, None], kernel_size,
                      stride, padding, dilation, ceil_mode, 0.0, w)  # 1 where not padding
    return y, _image(_max_index(cols, inside, input.shape[-1], s,
                                _pair(padding, "padding", w), _pair(dilation, "dilation", w)),
                     cols, input)


def _max_index(cols: Tensor, inside: Tensor, width: int, stride: tuple[int, int] | None,
               padding: tuple[int, int], dilation: tuple[int, int]) -> Tensor:
    """PyTorch's ``return_indices``: where in its ``(H, W)`` plane each window's maximum
    sits (``h * W + w``), as ``(C, Ho*Wo*N)`` beside the windows' maxima: the first one
    not in the padding (a window of ``-inf`` ties with its ``-inf`` padding), or the last
    NaN (PyTorch's loop takes each NaN it meets)."""
    c, kh, kw, ho, wo, n = cols.shape
    sh, sw = (kh, kw) if stride is None else stride
    taps = _ops.reshape(cols.detach(), (c, kh * kw, ho, wo, n))
    hit = ((taps == _ops.max(taps, axis=1, keepdims=True)) | (taps != taps)) & (
        _ops.reshape(inside, (1, kh * kw, ho, wo, 1)) > 0)
    t = _or_last_nan(taps, _ops.reduce.argmax(_ops.astype(hit, _dt.uint8), axis=1), 1)
    b = cols._backend
    hb = _ops.reshape(tensor(list(range(0, ho * sh, sh)), backend=b), (1, ho, 1, 1))
    wb = _ops.reshape(tensor(list(range(0, wo * sw, sw)), backend=b), (1, 1, wo, 1))
    h = hb - padding[0] + (t // kw) * dilation[0]
    return _ops.reshape(h * width + wb - padding[1] + (t % kw) * dilation[1], (c, -1))


def _or_last_nan(taps: Tensor, first: Tensor, axis: int) -> Tensor:
    """``first`` (each window's index of its maximum along ``axis`` of ``taps``), or where
    the window holds NaNs, its last NaN (PyTorch's loop takes each NaN it meets)."""
    nan = taps != taps
    last = taps.shape[axis] - 1 - _ops.reduce.argmax(
        _ops.astype(_ops.flip(nan, axis=axis), _dt.uint8), axis=axis)
    return _ops.where(_ops.any(nan, axis=axis), last, first)


def _divisor(n: int, k: int, s: int, p: int, o: int, include_pad: bool) -> list[int]:
    out = []
    for i in range(o):
        lo = i * s - p
        hi = min(lo + k, n + p)
        size = hi - lo
        out.append(size if include_pad else min(hi, n) - max(lo, 0))
    return out


def avg_pool2d(input: Tensor, kernel_size: IntPair, stride: IntPair | None = None,
               padding: IntPair = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """The mean of each window; ``count_include_pad`` counts the zero padding in the
    divisor (windows that run past the padding under ``ceil_mode`` never count it).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.avg_pool2d(xad.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
        [[[[2.5, 4.5], [10.5, 12.5]]]]
    """
    cols = _windows(input, kernel_size, stride, padding, 1, ceil_mode, 0.0, "avg_pool2d")
    total = _ops.reshape(_ops.sum(_taps(cols), axis=1), (cols.shape[0], *cols.shape[3:]))
    # autocast's float32 sum back to the input's dtype, as PyTorch's pools (no copy without)
    total = _ops.astype(total, input.dtype, copy=False)
    if divisor_override is not None:
        if divisor_override == 0:
            raise ValueError("avg_pool2d: divisor_override must not be zero (None: the "
                             "window's size)")
        return _image(total / divisor_override, cols, input)
    k = cols.shape[1:3]
    s = k if stride is None or stride == () else _pair(stride, "stride", "avg_pool2d")
    p = _pair(padding, "padding", "avg_pool2d")
    dh, dw = (_divisor(n, ke, st, pa, o, count_include_pad)
              for n, ke, st, pa, o in zip(input.shape[-2:], k, s, p, cols.shape[3:5]))
    if all(v == k[0] for v in dh) and all(v == k[1] for v in dw):
        return _image(total / (k[0] * k[1]), cols, input)
    div = tensor([[[float(a * b)] for b in dw] for a in dh], dtype=input.dtype,
                 backend=input._backend)
    return _image(total / div, cols, input)


def _averaging(n: int, o: int) -> list[list[float]]:
    """Rows of PyTorch's adaptive windows ``[floor(i*n/o), ceil((i+1)*n/o))``."""
    rows = []
    for i in range(o):
        lo, hi = (i * n) // o, -((-(i + 1) * n) // o)
        rows.append([1.0 / (hi - lo) if lo <= j < hi else 0.0 for j in range(n)])
    return rows


def adaptive_avg_pool2d(input: Tensor, output_size: int | tuple[int | None, int | None]
                        ) -> Tensor:
    """Average pooling to a fixed ``output_size`` (``None`` keeps that axis), with PyTorch's
    windows.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.adaptive_avg_pool2d(xad.ones((2, 3, 7, 5)), 1).shape
        (2, 3, 1, 1)
    """
    if input.ndim not in (3, 4):
        raise ValueError(f"adaptive_avg_pool2d: expected (N, C, H, W) or (C, H, W) input, "
                         f"got {input.shape}")
    size = (output_size,) * 2 if isinstance(output_size, int) else tuple(output_size)
    h, w = input.shape[-2:]
    ho, wo = (n if o is None else o for n, o in zip((h, w), size))
    if ho < 1 or wo < 1:
        raise ValueError(f"adaptive_avg_pool2d: output_size must be positive, got {size}")
    if h % ho == 0 and w % wo == 0:
        return avg_pool2d(input, (h // ho, w // wo))
    ah = tensor(_averaging(h, ho), dtype=input.dtype, backend=input._backend)
    aw = tensor(_averaging(w, wo), dtype=input.dtype, backend=input._backend)
    return _ops.matmul(ah, _ops.matmul(input, _ops.matrix_transpose(aw)))


def _one(v: IntPair, fill: int, what: str, where: str) -> tuple[int, int]:
    """A 1-d pooling argument (an int or one int) as the 2-d one over a height-1 image."""
    (n,) = _pair(v, what, where, 1)
    return (fill, n)


def _one_stride(v: IntPair | None, where: str) -> tuple[int, int] | None:
    """A 1-d pooling's stride as the 2-d one; ``None`` or ``()``: the kernel's."""
    return None if v is None or v == () else _one(v, 1, "stride", where)


def _as_image(input: Tensor, where: str) -> Tensor:
    if input.ndim not in (2, 3):
        raise ValueError(f"{where}: expected (N, C, L) or (C, L) input, got {input.shape}")
    return _ops.expand_dims(input, -2)


def max_pool1d(input: Tensor, kernel_size: IntPair, stride: IntPair | None = None,
               padding: IntPair = 0, dilation: IntPair = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor:
    """The maximum of each window of ``(N, C, L)`` input (as :func:`max_pool2d`).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.max_pool1d(xad.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2).tolist()
        [[[3.0, 2.0]]]
    """
    w = "max_pool1d"
    y = max_pool2d(_as_image(input, w), _one(kernel_size, 1, "kernel_size", w),
                   _one_stride(stride, w), _one(padding, 0, "padding", w),
                   _one(dilation, 1, "dilation", w), ceil_mode, return_indices)
    return _squeezed(y)


def _squeezed(y: Tensor | tuple[Tensor, Tensor]) -> Any:
    """A 2-d pool's result (and indices) over a height-1 image, back to 1-d."""
    if isinstance(y, tuple):
        return tuple(_ops.squeeze(t, axis=-2) for t in y)
    return _ops.squeeze(y, axis=-2)


def avg_pool1d(input: Tensor, kernel_size: IntPair, stride: IntPair | None = None,
               padding: IntPair = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """The mean of each window of ``(N, C, L)`` input (as :func:`avg_pool2d`).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.avg_pool1d(xad.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2).tolist()
        [[[2.0, 1.0]]]
    """
    w = "avg_pool1d"
    y = avg_pool2d(_as_image(input, w), _one(kernel_size, 1, "kernel_size", w),
                   _one_stride(stride, w), _one(padding, 0, "padding", w), ceil_mode,
                   count_include_pad)
    return _ops.squeeze(y, axis=-2)


def adaptive_avg_pool1d(input: Tensor, output_size: int | tuple[int]) -> Tensor:
    """Average pooling of ``(N, C, L)`` input to length ``output_size``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.adaptive_avg_pool1d(xad.tensor([[[1.0, 3.0, 2.0]]]), 2).tolist()
        [[[2.0, 2.5]]]
    """
    o = output_size[0] if isinstance(output_size, (tuple, list)) else output_size
    y = adaptive_avg_pool2d(_as_image(input, "adaptive_avg_pool1d"), (1, o))
    return _ops.squeeze(y, axis=-2)


def _window_index(n: int, o: int) -> list[list[int]]:
    """PyTorch's adaptive windows ``[floor(i*n/o), ceil((i+1)*n/o))``, each padded to the
    longest by repeating its last index (a repeat never changes a maximum)."""
    spans = [((i * n) // o, -((-(i + 1) * n) // o)) for i in range(o)]
    k = max(hi - lo for lo, hi in spans)
    return [[min(lo + j, hi - 1) for j in range(k)] for lo, hi in spans]


def adaptive_max_pool2d(input: Tensor, output_size: int | tuple[int | None, int | None],
                        return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Max pooling to a fixed ``output_size`` (``None`` keeps that axis), with PyTorch's
    windows; the gradient goes to the first maximum of each window, as PyTorch's.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.adaptive_max_pool2d(xad.arange(9.0).reshape(1, 3, 3), 2).tolist()
        [[[4.0, 5.0], [7.0, 8.0]]]
    """
    if input.ndim not in (3, 4):
        raise ValueError(f"adaptive_max_pool2d: expected (N, C, H, W) or (C, H, W) input, "
                         f"got {input.shape}")
    size = (output_size,) * 2 if isinstance(output_size, int) else tuple(output_size)
    h, w = input.shape[-2:]
    ho, wo = (n if o is None else o for n, o in zip((h, w), size))
    if ho < 1 or wo < 1 or h < 1 or w < 1:
        raise ValueError(f"adaptive_max_pool2d: output_size {size} and the input's spatial "
                         f"size (shape {input.shape}) must be positive")
    b = input._backend
    ih = tensor(_window_index(h, ho), backend=b)  # (Ho, Kh)
    iw = tensor(_window_index(w, wo), backend=b)  # (Wo, Kw)
    kh, kw = ih.shape[1], iw.shape[1]
    cols = input[..., ih.reshape(ho, kh, 1, 1), iw.reshape(1, 1, wo, kw)]
    lead = input.shape[:-2]
    cols = _ops.permute_dims(cols, (*range(len(lead)), len(lead), len(lead) + 2,
                                    len(lead) + 1, len(lead) + 3))
    cols = _ops.reshape(cols, (*lead, ho, wo, kh * kw))
    y = _ops.reduce.max_indexed(cols, -1)
    if not return_indices:
        return y
    # PyTorch's index: h * W + w of the first maximum, or of the last NaN
    t = _or_last_nan(cols.detach(), _ops.reduce.argmax(cols, axis=-1), -1)
    rows = _ops.reshape(tensor(list(range(ho)), backend=b), (ho, 1))
    return y, ih[rows, t // kw] * w + iw[tensor(list(range(wo)), backend=b), t % kw]


def adaptive_max_pool1d(input: Tensor, output_size: int | tuple[int],
                        return_indices: bool = False) -> Tensor:
    """Max pooling of ``(N, C, L)`` input to length ``output_size``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.adaptive_max_pool1d(xad.tensor([[[1.0, 3.0, 2.0]]]), 2).tolist()
        [[[3.0, 3.0]]]
    """
    o = output_size[0] if isinstance(output_size, (tuple, list)) else output_size
    y = adaptive_max_pool2d(_as_image(input, "adaptive_max_pool1d"), (1, o), return_indices)
    return _squeezed(y)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: IntPair,
              stride: IntPair | None = None, ceil_mode: bool = False) -> Tensor:
    """The ``norm_type``-norm of each window, PyTorch's formula: the average of ``x**p``
    times the kernel's size, then ``sign(s) * |s| ** (1/p)``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.lp_pool2d(xad.full((1, 1, 2, 2), 2.0), 2, 2).tolist()
        [[[[4.0]]]]
    """
    kh, kw = _pair(kernel_size, "kernel_size", "lp_pool2d")
    out = avg_pool2d(input ** norm_type, (kh, kw), stride, 0, ceil_mode)
    return (_ops.sign(out) * _ops.relu(_ops.abs(out)) * (kh * kw)) ** (1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: IntPair,
              stride: IntPair | None = None, ceil_mode: bool = False) -> Tensor:
    """:func:`lp_pool2d` over ``(N, C, L)`` input.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.lp_pool1d(xad.tensor([[[3.0, 4.0]]]), 2, 2).tolist()
        [[[5.0]]]
    """
    (k,) = _pair(kernel_size, "kernel_size", "lp_pool1d", 1)
    out = avg_pool1d(input ** norm_type, k, stride, 0, ceil_mode)
    return (_ops.sign(out) * _ops.relu(_ops.abs(out)) * k) ** (1.0 / norm_type)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: IntPair,
                 stride: IntPair | None = None, padding: IntPair = 0,
                 output_size: Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`max_pool2d` with ``return_indices``: each value put at its
    index in a zero ``(N, C, H, W)`` (by default ``(Hin - 1) * stride - 2 * padding +
    kernel``); a place named twice keeps the value (equal, from overlapping windows), and
    each gets the gradient there, as PyTorch's.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> y, i = F.max_pool2d(xad.tensor([[[[1.0, 3.0], [2.0, 0.0]]]]), 2,
        ...                     return_indices=True)
        >>> F.max_unpool2d(y, i, 2).tolist()
        [[[[0.0, 3.0], [0.0, 0.0]]]]
    """
    return _unpool(input, indices, kernel_size, stride, padding, output_size, 2, "max_unpool2d")


def _unpool(input: Tensor, indices: Tensor, kernel_size: IntPair, stride: IntPair | None,
            padding: IntPair, output_size: Sequence[int] | None, nd: int, w: str) -> Tensor:
    """:func:`max_unpool2d` over the last ``nd`` axes (indices flat over them)."""
    k = _pair(kernel_size, "kernel_size", w, nd)
    s = k if stride is None or stride == () else _pair(stride, "stride", w, nd)
    p = _pair(padding, "padding", w, nd)
    if output_size is None:
        size = tuple((n - 1) * st - 2 * pa + ke for n, st, pa, ke in
                     zip(input.shape[-nd:], s, p, k))
    else:
        size = tuple(int(v) for v in tuple(output_size)[-nd:])
    if indices.shape != input.shape or input.ndim not in (nd + 1, nd + 2):
        axes = {2: "H, W", 3: "D, H, W"}[nd]
        raise ValueError(f"{w}: expected (N, C, {axes}) or (C, {axes}) input and indices of "
                         f"its shape, got {input.shape} and {indices.shape}")
    lead = input.shape[:-nd]
    x, idx = _ops.reshape(input, (*lead, -1)), _ops.reshape(indices, (*lead, -1))
    if 0 in size:  # nothing to place: PyTorch returns the empty output, unchecked
        return _ops.reshape(x[..., :0], (*lead, *size))
    total_size = math.prod(size)
    check_in_range(idx, total_size, w, "index", f"the output's {'x'.join(map(str, size))}")
    empty = zeros((*lead, total_size), dtype=input.dtype, backend=input._backend)
    count = _ops.scatter_add(empty, -1, idx, ones_like(x))
    total = _ops.scatter_add(empty, -1, idx, x.detach())
    value = total / _ops.maximum(count, 1.0)  # equal values named twice: that value
    y = value + _ops.scatter_add(empty, -1, idx, x - x.detach())  # + 0: each its gradient
    return _ops.reshape(y, (*lead, *size))


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: IntPair,
                 stride: IntPair | None = None, padding: IntPair = 0,
                 output_size: Sequence[int] | None = None) -> Tensor:
    """:func:`max_unpool2d` over ``(N, C, L)`` input.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> y, i = F.max_pool1d(xad.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2, return_indices=True)
        >>> F.max_unpool1d(y, i, 2).tolist()
        [[[0.0, 3.0, 2.0, 0.0]]]
    """
    w = "max_unpool1d"
    size = None if output_size is None else (1, int(tuple(output_size)[-1]))
    y = max_unpool2d(_as_image(input, w), _ops.expand_dims(indices, -2),
                     _one(kernel_size, 1, "kernel_size", w), _one_stride(stride, w),
                     _one(padding, 0, "padding", w), size)
    return _ops.squeeze(y, axis=-2)
