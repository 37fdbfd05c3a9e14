"""3-d pooling as functions: ``max_pool3d``, ``avg_pool3d``, ``adaptive_avg_pool3d``,
``adaptive_max_pool3d``, ``max_unpool3d`` and ``lp_pool3d``.

A box window is the product of one window per axis, so each pool is the 2-d pool over
``(H, W)`` (depth slices as channels) followed by the 1-d pool over depth: the same
maxima, sums and averages as PyTorch's, and the same tie rule (the first maximum in
``(d, h, w)`` order: the first depth whose slice holds the maximum, then the first place in
that slice). Indices are PyTorch's flat ``d * H * W + h * W + w``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ... import ops as _ops
from ...factories import tensor
from ...tensor import Tensor
from .conv import IntPair, _pair
from .pooling import (
    _divisor,
    _unpool,
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)

__all__ = ["max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d",
           "max_unpool3d", "lp_pool3d"]

Triple = int | Sequence[int]


def _check(x: Tensor, where: str) -> None:
    if x.ndim not in (4, 5) or 0 in x.shape[-3:]:
        raise ValueError(f"{where}: expected (N, C, D, H, W) or (C, D, H, W) input with a "
                         f"non-empty volume, got {x.shape}")


def _separable(x: Tensor, plane: Callable[[Tensor], Any], depth: Callable[[Tensor], Any],
               indices: bool) -> Any:
    """``depth`` (a 1-d pool of ``(B, Ho*Wo, D)``) after ``plane`` (a 2-d pool of ``(B, D, H,
    W)``), with the flat 3-d index of each maximum when ``indices``."""
    lead, (d, h, w) = x.shape[:-3], x.shape[-3:]
    r = plane(_ops.reshape(x, (-1, d, h, w)))
    y2, i2 = r if indices else (r, None)
    b, ho, wo = y2.shape[0], y2.shape[2], y2.shape[3]

    def rows(t: Tensor) -> Tensor:  # (B, D, Ho, Wo) -> (B, Ho*Wo, D)
        return _ops.reshape(_ops.permute_dims(t, (0, 2, 3, 1)), (b, ho * wo, d))

    def volume(t: Tensor) -> Tensor:  # (B, Ho*Wo, Do) -> lead + (Do, Ho, Wo)
        do = t.shape[-1]
        t = _ops.permute_dims(_ops.reshape(t, (b, ho, wo, do)), (0, 3, 1, 2))
        return _ops.reshape(t, (*lead, do, ho, wo))

    r = depth(rows(y2))
    if not indices:
        return volume(r)
    y, at = r
    assert i2 is not None  # (the plane pool gave indices: ``indices``)
    plane_index = _ops.take_along_axis(rows(i2), at, axis=-1)
    return volume(y), volume(at * (h * w) + plane_index)


def _args(kernel_size: Triple, stride: Triple | None, padding: Triple, where: str
          ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    k = _pair(kernel_size, "kernel_size", where, 3)
    s = k if stride is None or stride == () else _pair(stride, "stride", where, 3)
    return k, s, _pair(padding, "padding", where, 3)


def max_pool3d(input: Tensor, kernel_size: Triple, stride: Triple | None = None,
               padding: Triple = 0, dilation: Triple = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """The maximum of each window of ``(N, C, D, H, W)`` input (padding never wins); with
    ``return_indices``, also PyTorch's flat index of each maximum.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> y, i = F.max_pool3d(xad.arange(8.0).reshape(1, 1, 2, 2, 2), 2, return_indices=True)
        >>> y.tolist(), i.tolist()
        ([[[[[7.0]]]]], [[[[[7]]]]])
    """
    w = "max_pool3d"
    _check(input, w)
    k, s, p = _args(kernel_size, stride, padding, w)
    d = _pair(dilation, "dilation", w, 3)
    return _separable(
        input, lambda x: max_pool2d(x, k[1:], s[1:], p[1:], d[1:], ceil_mode, return_indices),
        lambda x: max_pool1d(x, k[0], s[0], p[0], d[0], ceil_mode, return_indices),
        return_indices)


def avg_pool3d(input: Tensor, kernel_size: Triple, stride: Triple | None = None,
               padding: Triple = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """The mean of each window of ``(N, C, D, H, W)`` input, with PyTorch's divisor (the
    zero padding counted with ``count_include_pad``; ``divisor_override`` replaces it).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.avg_pool3d(xad.arange(8.0).reshape(1, 1, 2, 2, 2), 2).tolist()
        [[[[[3.5]]]]]
    """
    w = "avg_pool3d"
    _check(input, w)
    if divisor_override == 0:
        raise ValueError("avg_pool3d: divisor_override must not be zero (None: the window's "
                         "size)")
    k, s, p = _args(kernel_size, stride, padding, w)
    total = _separable(
        input, lambda x: avg_pool2d(x, k[1:], s[1:], p[1:], ceil_mode, True, 1),
        lambda x: _ops.squeeze(avg_pool2d(_ops.expand_dims(x, -2), (1, k[0]), (1, s[0]),
                                          (0, p[0]), ceil_mode, True, 1), axis=-2),
        False)
    if divisor_override is not None:
        return total / divisor_override
    div = [_divisor(n, ke, st, pa, o, count_include_pad)
           for n, ke, st, pa, o in zip(input.shape[-3:], k, s, p, total.shape[-3:])]
    box = [[[float(a * b * c) for c in div[2]] for b in div[1]] for a in div[0]]
    return total / tensor(box, dtype=total.dtype, backend=input._backend)


def _sizes(input: Tensor, output_size: Any, where: str) -> list[int]:
    size = (output_size,) * 3 if isinstance(output_size, int) else tuple(output_size)
    if len(size) != 3:
        raise ValueError(f"{where}: output_size must be an int or 3 values, got {output_size}")
    out = [n if o is None else int(o) for n, o in zip(input.shape[-3:], size)]
    if min(out) < 1:
        raise ValueError(f"{where}: output_size must be positive, got {output_size}")
    return out


def adaptive_avg_pool3d(input: Tensor, output_size: int | Sequence[int | None]) -> Tensor:
    """Average pooling of ``(N, C, D, H, W)`` input to ``output_size`` (``None`` keeps an
    axis), with PyTorch's windows.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.adaptive_avg_pool3d(xad.ones((2, 3, 5, 7, 4)), (2, None, 1)).shape
        (2, 3, 2, 7, 1)
    """
    _check(input, "adaptive_avg_pool3d")
    o = _sizes(input, output_size, "adaptive_avg_pool3d")
    return _separable(input, lambda x: adaptive_avg_pool2d(x, (o[1], o[2])),
                      lambda x: adaptive_avg_pool1d(x, o[0]), False)


def adaptive_max_pool3d(input: Tensor, output_size: int | Sequence[int | None],
                        return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Max pooling of ``(N, C, D, H, W)`` input to ``output_size``, with PyTorch's windows
    and flat indices.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.adaptive_max_pool3d(xad.arange(8.0).reshape(1, 2, 2, 2), 1).tolist()
        [[[[7.0]]]]
    """
    _check(input, "adaptive_max_pool3d")
    o = _sizes(input, output_size, "adaptive_max_pool3d")
    return _separable(input, lambda x: adaptive_max_pool2d(x, (o[1], o[2]), return_indices),
                      lambda x: adaptive_max_pool1d(x, o[0], return_indices), return_indices)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: IntPair,
                 stride: IntPair | None = None, padding: IntPair = 0,
                 output_size: Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`max_pool3d` with ``return_indices`` (as :func:`max_unpool2d`,
    indices flat over ``(D, H, W)``).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> y, i = F.max_pool3d(xad.arange(8.0).reshape(1, 1, 2, 2, 2), 2, return_indices=True)
        >>> F.max_unpool3d(y, i, 2).reshape(-1).tolist()
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 7.0]
    """
    return _unpool(input, indices, kernel_size, stride, padding, output_size, 3,
                   "max_unpool3d")


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Triple,
              stride: Triple | None = None, ceil_mode: bool = False) -> Tensor:
    """:func:`~xad.nn.functional.lp_pool2d` over ``(N, C, D, H, W)`` input (PyTorch's
    formula: the window's sum of ``x**p``, then ``sign(s) * relu(|s|) ** (1/p)``).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.lp_pool3d(xad.full((1, 1, 2, 2, 2), 2.0), 1, 2).reshape(-1).tolist()
        [16.0]
    """
    k, _, _ = _args(kernel_size, stride, 0, "lp_pool3d")
    out = avg_pool3d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return (_ops.sign(out) * _ops.relu(_ops.abs(out)) * (k[0] * k[1] * k[2])) \
        ** (1.0 / norm_type)
