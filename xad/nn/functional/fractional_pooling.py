"""Fractional max pooling (Graham, 2014) as functions: ``fractional_max_pool2d`` and
``fractional_max_pool3d``, with PyTorch's windows (their ``_with_indices`` forms are in
:mod:`xad.nn.functional.fixed_keyword_forms`).

Each plane ``(n, c)`` has one random sample ``u`` in ``[0, 1)`` per pooled axis
(``_random_samples``, shape ``(N, C, 2)`` or ``(N, C, 3)``; drawn from xad's generator when
not given). Along an axis of size ``L`` pooled to ``O`` windows of ``K``, window ``i < O - 1``
starts at ``floor((i + u) * a) - floor(u * a)`` with ``a = (L - K) / (O - 1)`` computed in the
input's dtype, and the last at ``L - K``, as PyTorch's kernels: so with the same samples the
output and the indices are PyTorch's. The maximum of a window is its first in row-major
order; it alone gets the window's gradient.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ... import dtypes as _dt
from ... import ops as _ops
from ...factories import arange, full_like, rand
from ...tensor import Tensor
from .conv import _pair

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d"]

# which column of a plane's samples each pooled axis uses: PyTorch's (W first in 2-d)
_SAMPLE_COLUMN = {2: (1, 0), 3: (0, 1, 2)}


def _output_size(x: Tensor, k: tuple[int, ...], output_size: Any, output_ratio: Any,
                 where: str) -> tuple[int, ...]:
    d = len(k)
    if (output_size is None) == (output_ratio is None):
        raise ValueError(f"{where}: give output_size or output_ratio (exactly one), got "
                         f"output_size={output_size!r}, output_ratio={output_ratio!r}")
    if output_size is not None:
        out = _pair(output_size, "output_size", where, d)
    else:
        ratio = (output_ratio,) * d if isinstance(output_ratio, (int, float)) \
            else tuple(output_ratio)
        if len(ratio) != d or not all(0 < r < 1 for r in ratio):
            raise ValueError(f"{where}: output_ratio must be {d} numbers in (0, 1), got "
                             f"{output_ratio!r}")
        out = tuple(int(n * r) for n, r in zip(x.shape[-d:], ratio))
    room = 0 if d == 2 else 1  # PyTorch's 3-d kernel also refuses windows that just fit
    for n, o, kk, axis in zip(x.shape[-d:], out, k, "DHW"[3 - d:]):
        if o < 1 or o + kk - 1 + room > n:
            raise ValueError(f"{where}: {o} windows of {kk} along {axis} do not fit the "
                             f"input's {n} (need output + kernel_size - 1 "
                             f"{'<=' if d == 2 else '<'} input, output >= 1, as PyTorch); "
                             f"input {x.shape}")
    return out


def _starts(u: Tensor, n: int, o: int, k: int) -> Tensor:
    """The window starts ``(N, C, o)`` along an axis of size ``n`` from samples ``(N, C)``."""
    last = full_like(u[..., None], n - k, dtype=_dt.int64)
    if o == 1:
        return last
    a = (n - k) / (o - 1)  # (a Python float: the product rounds it to u's dtype)
    i = arange(o - 1, dtype=u.dtype, backend=u._backend)
    first = _ops.floor((i + u[..., None]) * a) - _ops.floor(u * a)[..., None]
    return _ops.concat([first.astype(_dt.int64), last], axis=-1)


def _fractional_max_pool(x: Tensor, kernel_size: Any, output_size: Any, output_ratio: Any,
                         return_indices: bool, samples: Tensor | None, d: int,
                         where: str) -> Tensor | tuple[Tensor, Tensor]:
    if x.ndim not in (d + 1, d + 2) or not x.dtype.is_floating:
        raise ValueError(f"{where}: expected floating (N, C{', D' * (d == 3)}, H, W) or "
                         f"(C{', D' * (d == 3)}, H, W) input, got {x.dtype} {x.shape}")
    batched = x.ndim == d + 2
    xb = x if batched else x.expand_dims(0)
    (n, c), sizes = xb.shape[:2], xb.shape[2:]
    k = _pair(kernel_size, "kernel_size", where, d)
    out = _output_size(xb, k, output_size, output_ratio, where)
    if samples is None:
        samples = rand(n, c, d, dtype=x.dtype, backend=x._backend)
    elif samples.shape != (n, c, d):
        raise ValueError(f"{where}: _random_samples must have shape {(n, c, d)} (N, C, "
                         f"{d}), got {samples.shape}")
    idx = None  # (N, C, *out, *k): the flat index of each window's elements
    stride = math.prod(sizes)
    for a in range(d):
        stride //= sizes[a]
        starts = _starts(samples[..., _SAMPLE_COLUMN[d][a]].astype(x.dtype), sizes[a],
                         out[a], k[a])
        offsets = arange(k[a], dtype=_dt.int64, backend=x._backend)
        term = (starts.reshape((n, c) + (1,) * a + (out[a],) + (1,) * (2 * d - a - 1))
                + offsets.reshape((k[a],) + (1,) * (d - a - 1))) * stride
        idx = term if idx is None else idx + term
    assert idx is not None
    windows = idx.reshape((n, c, math.prod(out), math.prod(k)))
    flat = xb.reshape((n, c, -1))
    values = _ops.take_along_axis(flat.detach(), windows.reshape((n, c, -1)), axis=-1)
    first = _ops.argmax(values.reshape(windows.shape), axis=-1, keepdims=True)
    at = _ops.take_along_axis(windows, first, axis=-1).reshape((n, c, -1))
    y = _ops.take_along_axis(flat, at, axis=-1).reshape((n, c) + out)
    at = at.reshape((n, c) + out)
    if not batched:
        y, at = y.squeeze(0), at.squeeze(0)
    return (y, at) if return_indices else y


def fractional_max_pool2d(input: Tensor, kernel_size: int | Sequence[int],
                          output_size: int | Sequence[int] | None = None,
                          output_ratio: float | Sequence[float] | None = None,
                          return_indices: bool = False, _random_samples: Tensor | None = None
                          ) -> Tensor | tuple[Tensor, Tensor]:
    """Fractional max pooling of ``(N, C, H, W)`` (or ``(C, H, W)``) input to
    ``output_size`` (or ``output_ratio`` of the input's), in ``kernel_size`` windows at
    pseudo-random places (module docstring); with ``return_indices``, also PyTorch's flat
    ``h * W + w`` index of each maximum.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> x = xad.arange(25.0).reshape(1, 1, 5, 5)
        >>> F.fractional_max_pool2d(x, 2, (2, 2), _random_samples=xad.zeros(1, 1, 2)).tolist()
        [[[[6.0, 9.0], [21.0, 24.0]]]]
    """
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices,
                                _random_samples, 2, "fractional_max_pool2d")


def fractional_max_pool3d(input: Tensor, kernel_size: int | Sequence[int],
                          output_size: int | Sequence[int] | None = None,
                          output_ratio: float | Sequence[float] | None = None,
                          return_indices: bool = False, _random_samples: Tensor | None = None
                          ) -> Tensor | tuple[Tensor, Tensor]:
    """:func:`fractional_max_pool2d` over ``(N, C, D, H, W)`` (or ``(C, D, H, W)``) input;
    indices are flat ``d * H * W + h * W + w``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.fractional_max_pool3d(xad.ones(1, 2, 4, 4, 4), 2, output_ratio=0.5).shape
        (1, 2, 2, 2, 2)
    """
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices,
                                _random_samples, 3, "fractional_max_pool3d")

