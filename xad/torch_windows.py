"""PyTorch's window functions (``torch.hann_window``, ``hamming_window``,
``blackman_window``, ``bartlett_window``, ``kaiser_window``) for spectral code: computed in
float64 from their formulas and cast to ``dtype`` (the default dtype unless given).
``periodic=True`` (the default) gives the first ``window_length`` points of the symmetric
window one longer, as PyTorch's (for ``stft``)."""

from __future__ import annotations

import math
from typing import Any

from . import dtypes
from .factories import arange, ones, zeros
from .ops import cos, i0, sqrt
from .tensor import Tensor

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


def _points(name: str, window_length: int, periodic: bool) -> tuple[Tensor, int] | None:
    """``(n, N)``: the sample numbers in float64 and the symmetric window's last index;
    ``None`` where PyTorch's answer is fixed (no point, or one point: ``[1.]``)."""
    if window_length < 0:
        raise ValueError(f"{name}: window_length must be non-negative, got {window_length}")
    if window_length <= 1:
        return None
    return (arange(window_length, dtype=dtypes.float64),
            window_length if periodic else window_length - 1)


def _finish(w: Tensor | None, window_length: int, dtype: Any, requires_grad: bool) -> Tensor:
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.get_default_dtype()
    if not dt.is_floating:
        raise TypeError(f"window functions need a floating dtype, got {dt}")
    out = (ones(window_length, dtype=dt) if window_length == 1 else zeros(0, dtype=dt)) \
        if w is None else w.astype(dt)
    return out.requires_grad_() if requires_grad else out


def _cosine_sum(name: str, coeffs: tuple[float, ...], window_length: int, periodic: bool,
                dtype: Any, requires_grad: bool) -> Tensor:
    """``sum_k (-1)^k a_k cos(2 pi k n / N)``: Hann, Hamming and Blackman."""
    pts = _points(name, window_length, periodic)
    w = None
    if pts is not None:
        n, big_n = pts
        w = sum(((-1) ** k * a) * cos(n * (2 * math.pi * k / big_n)) for k, a in
                enumerate(coeffs))
    return _finish(w, window_length, dtype, requires_grad)


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                requires_grad: bool = False) -> Tensor:
    """``0.5 - 0.5 cos(2 pi n / N)``.

    Example:
        >>> from xad.torch_windows import hann_window
        >>> hann_window(4).tolist()
        [0.0, 0.5, 1.0, 0.5]
    """
    return _cosine_sum("hann_window", (0.5, 0.5), window_length, periodic, dtype,
                       requires_grad)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype: Any = None,
                   requires_grad: bool = False) -> Tensor:
    """``alpha - beta cos(2 pi n / N)``.

    Example:
        >>> from xad.torch_windows import hamming_window
        >>> [round(v, 4) for v in hamming_window(3, periodic=False).tolist()]
        [0.08, 1.0, 0.08]
    """
    return _cosine_sum("hamming_window", (alpha, beta), window_length, periodic, dtype,
                       requires_grad)


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    requires_grad: bool = False) -> Tensor:
    """``0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)``.

    Example:
        >>> from xad.torch_windows import blackman_window
        >>> [round(v, 4) for v in blackman_window(3, periodic=False).tolist()]
        [-0.0, 1.0, -0.0]
    """
    return _cosine_sum("blackman_window", (0.42, 0.5, 0.08), window_length, periodic, dtype,
                       requires_grad)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    requires_grad: bool = False) -> Tensor:
    """The triangle ``1 - |2 n / N - 1|``.

    Example:
        >>> from xad.torch_windows import bartlett_window
        >>> bartlett_window(4).tolist()
        [0.0, 0.5, 1.0, 0.5]
    """
    pts = _points("bartlett_window", window_length, periodic)
    w = None if pts is None else 1.0 - abs(pts[0] * (2.0 / pts[1]) - 1.0)
    return _finish(w, window_length, dtype, requires_grad)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """``I0(beta sqrt(1 - (2 n / N - 1)^2)) / I0(beta)``.

    Example:
        >>> from xad.torch_windows import kaiser_window
        >>> [round(v, 4) for v in kaiser_window(3, periodic=False, beta=1.0).tolist()]
        [0.7898, 1.0, 0.7898]
    """
    pts = _points("kaiser_window", window_length, periodic)
    w = None
    if pts is not None:
        r = pts[0] * (2.0 / pts[1]) - 1.0
        w = i0(sqrt(abs(1.0 - r * r)) * beta) / i0(ones((), dtype=dtypes.float64) * beta)
    return _finish(w, window_length, dtype, requires_grad)
