"""``xad.fft``: the Array API's Fourier-transform extension, differentiable.

``n``/``s`` pad with zeros or crop before the transform (xad ops, so they differentiate);
the transforms are the primitives of ops/fourier.py, whose gradients are the adjoint
transforms; ``hfft``/``ihfft`` and the shifts are composed. A real input to a complex
transform is made complex first; its gradient is real. Every backend xad ships has
``xp.fft``; one without it gets an error naming the backend.

Example:
    >>> import xad
    >>> x = xad.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    >>> (xad.abs(xad.fft.fft(x)) ** 2).sum().backward(); x.grad.tolist()  # Parseval: 8 x
    [8.0, 16.0, 24.0, 32.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import dtypes as _dt
from .factories import _on, arange, zeros, zeros_like
from .ops.complex_parts import complex_from_parts, conj
from .ops.elementwise import where
from .ops.fourier import DUAL, fftn_, irfftn_, rfftn_
from .ops.manipulation import roll
from .ops.shape import concat
from .tensor import Tensor

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _check(name: str, x: Tensor, norm: str) -> None:
    if getattr(x._backend.xp, "fft", None) is None:
        raise NotImplementedError(f"fft.{name}: the {x._backend.name} backend's namespace has "
                                  f"no fft extension; move the tensor to one that has "
                                  f"(x.to('numpy'))")
    if norm not in DUAL:
        raise ValueError(f"fft.{name}: norm must be 'backward', 'ortho' or 'forward', got "
                         f"{norm!r}")


def _complex(x: Tensor) -> Tensor:
    return x if x.dtype.name.startswith("complex") else complex_from_parts(x, zeros_like(x))


def _resize(x: Tensor, axis: int, n: int) -> Tensor:
    """``x`` cropped or zero-padded to length ``n`` along ``axis``."""
    size = x.shape[axis]
    if n < 1:
        raise ValueError(f"fft: a transform length must be at least 1, got {n} for axis "
                         f"{axis} of shape {x.shape}")
    if n < size:
        return x[(slice(None),) * axis + (slice(0, n),)]
    if n > size:
        shape = tuple(n - size if i == axis else s for i, s in enumerate(x.shape))
        return concat([x, zeros(shape, dtype=x.dtype, backend=x._backend)], axis=axis)
    return x


def _axes_sizes(name: str, x: Tensor, s: Sequence[int] | None,
                axes: Sequence[int] | None) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    if axes is None:
        if s is not None and len(s) > x.ndim:
            raise ValueError(f"fft.{name}: s {tuple(s)} has more sizes than the input of "
                             f"shape {x.shape} has axes")
        axes = range(x.ndim) if s is None else range(x.ndim - len(s), x.ndim)
    axes = tuple(axes)
    if any(not -x.ndim <= a < x.ndim for a in axes):
        raise ValueError(f"fft.{name}: axes {axes} out of range for an input of shape "
                         f"{x.shape}")
    axes = tuple(a % x.ndim for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"fft.{name}: axes {axes} name an axis twice; each must be unique")
    if s is not None and len(s) != len(axes):
        raise ValueError(f"fft.{name}: s {tuple(s)} and axes {axes} differ in length")
    return axes, None if s is None else tuple(s)


def _cfft(name: str, x: Tensor, s: Any, axes: Any, norm: str, inverse: bool) -> Tensor:
    _check(name, x, norm)
    axes, s = _axes_sizes(name, x, s, axes)
    x = _complex(x)
    for a, n in zip(axes, s or ()):
        x = _resize(x, a, n)
    return fftn_(x, axes, norm, inverse)


def fft(x: Tensor, /, *, n: int | None = None, axis: int = -1,
        norm: str = "backward") -> Tensor:
    """The one-dimensional discrete Fourier transform along ``axis`` (length ``n``).

    Example:
        >>> import xad
        >>> xad.real(xad.fft.fft(xad.tensor([1.0, 1.0]))).tolist()
        [2.0, 0.0]
    """
    return _cfft("fft", x, None if n is None else (n,), (axis,), norm, False)


def ifft(x: Tensor, /, *, n: int | None = None, axis: int = -1,
         norm: str = "backward") -> Tensor:
    """The inverse of :func:`fft`.

    Example:
        >>> import xad
        >>> xad.real(xad.fft.ifft(xad.tensor([2.0, 0.0]))).tolist()
        [1.0, 1.0]
    """
    return _cfft("ifft", x, None if n is None else (n,), (axis,), norm, True)


def fftn(x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str = "backward") -> Tensor:
    """The n-dimensional transform over ``axes`` (all, or the last ``len(s)``), sizes ``s``.

    Example:
        >>> import xad
        >>> xad.real(xad.fft.fftn(xad.ones((2, 2)))).tolist()
        [[4.0, 0.0], [0.0, 0.0]]
    """
    return _cfft("fftn", x, s, axes, norm, False)


def ifftn(x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str = "backward") -> Tensor:
    """The inverse of :func:`fftn`.

    Example:
        >>> import xad
        >>> xad.real(xad.fft.ifftn(xad.tensor([[4.0, 0.0], [0.0, 0.0]]))).tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    return _cfft("ifftn", x, s, axes, norm, True)


def rfftn(x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str = "backward") -> Tensor:
    """The transform of a real tensor over ``axes``, keeping ``n // 2 + 1`` bins of the last.

    Example:
        >>> import xad
        >>> xad.fft.rfftn(xad.ones((2, 4))).shape
        (2, 3)
    """
    _check("rfftn", x, norm)
    if not x.dtype.is_floating:
        raise TypeError(f"fft.rfftn: needs a real floating tensor, got {x.dtype}")
    axes, s = _axes_sizes("rfftn", x, s, axes)
    for a, n in zip(axes, s or ()):
        x = _resize(x, a, n)
    return rfftn_(x, axes, norm)


def irfftn(x: Tensor, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str = "backward") -> Tensor:
    """The real inverse of :func:`rfftn`; the last axis's output length is ``s[-1]``
    (default ``2 * (m - 1)`` for ``m`` input bins).

    Example:
        >>> import xad
        >>> xad.fft.irfftn(xad.tensor([[4.0, 0.0, 0.0]])).tolist()
        [[1.0, 1.0, 1.0, 1.0]]
    """
    _check("irfftn", x, norm)
    axes, s = _axes_sizes("irfftn", x, s, axes)
    if s is None:
        s = tuple(x.shape[a] for a in axes[:-1]) + (2 * (x.shape[axes[-1]] - 1),)
    x = _complex(x)
    for a, n in zip(axes, s[:-1]):
        x = _resize(x, a, n)
    return irfftn_(_resize(x, axes[-1], s[-1] // 2 + 1), axes, norm, s[-1])


def rfft(x: Tensor, /, *, n: int | None = None, axis: int = -1,
         norm: str = "backward") -> Tensor:
    """The one-dimensional :func:`rfftn` along ``axis``.

    Example:
        >>> import xad
        >>> xad.real(xad.fft.rfft(xad.ones(4))).tolist()
        [4.0, 0.0, 0.0]
    """
    return rfftn(x, s=None if n is None else (n,), axes=(axis,), norm=norm)


def irfft(x: Tensor, /, *, n: int | None = None, axis: int = -1,
          norm: str = "backward") -> Tensor:
    """The one-dimensional :func:`irfftn` along ``axis`` (output length ``n``).

    Example:
        >>> import xad
        >>> xad.fft.irfft(xad.tensor([3.0, 0.0]), n=3).tolist()
        [1.0, 1.0, 1.0]
    """
    return irfftn(x, s=None if n is None else (n,), axes=(axis,), norm=norm)


def hfft(x: Tensor, /, *, n: int | None = None, axis: int = -1,
         norm: str = "backward") -> Tensor:
    """The transform of a signal with Hermitian symmetry (given by its first half): real.

    Example:
        >>> import xad
        >>> xad.fft.hfft(xad.tensor([1.0, 0.0])).tolist()
        [1.0, 1.0]
    """
    _check("hfft", x, norm)
    return irfft(conj(x), n=n, axis=axis, norm=DUAL[norm])


def ihfft(x: Tensor, /, *, n: int | None = None, axis: int = -1,
          norm: str = "backward") -> Tensor:
    """The inverse of :func:`hfft`: the Hermitian half-spectrum of a real signal.

    Example:
        >>> import xad
        >>> xad.real(xad.fft.ihfft(xad.ones(2))).tolist()
        [1.0, 0.0]
    """
    _check("ihfft", x, norm)
    return conj(rfft(x, n=n, axis=axis, norm=DUAL[norm]))


def _freq(name: str, n: int, d: float, dtype: Any, device: Any, half: bool) -> Tensor:
    """``k / (n d)`` for bins ``k`` (NumPy's arithmetic: in float64, then cast)."""
    b = _on(None, device, f"fft.{name}")
    k = arange(n // 2 + 1 if half else n, dtype=_dt.int64, backend=b)
    if not half:
        k = where(k < (n + 1) // 2, k, k - n)
    f = k.astype(_dt.float64) * (1.0 / (n * d))
    return f.astype(_dt.as_dtype(dtype) or _dt.get_default_dtype())


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Tensor:
    """The sample frequencies of an ``n``-point :func:`fft` with spacing ``d``.

    Example:
        >>> import xad
        >>> xad.fft.fftfreq(4).tolist()
        [0.0, 0.25, -0.5, -0.25]
    """
    return _freq("fftfreq", n, d, dtype, device, half=False)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Tensor:
    """The sample frequencies of an ``n``-point :func:`rfft` with spacing ``d``.

    Example:
        >>> import xad
        >>> xad.fft.rfftfreq(4).tolist()
        [0.0, 0.25, 0.5]
    """
    return _freq("rfftfreq", n, d, dtype, device, half=True)


def fftshift(x: Tensor, /, *, axes: int | Sequence[int] | None = None) -> Tensor:
    """The zero frequency moved to the middle of ``axes`` (all by default).

    Example:
        >>> import xad
        >>> xad.fft.fftshift(xad.fft.fftfreq(4)).tolist()
        [-0.5, -0.25, 0.0, 0.25]
    """
    axes = tuple(range(x.ndim)) if axes is None else (axes,) if isinstance(axes, int) else axes
    return roll(x, [x.shape[a] // 2 for a in axes], axis=axes)


def ifftshift(x: Tensor, /, *, axes: int | Sequence[int] | None = None) -> Tensor:
    """The inverse of :func:`fftshift`.

    Example:
        >>> import xad
        >>> xad.fft.ifftshift(xad.tensor([-0.5, -0.25, 0.0, 0.25])).tolist()
        [0.0, 0.25, -0.5, -0.25]
    """
    axes = tuple(range(x.ndim)) if axes is None else (axes,) if isinstance(axes, int) else axes
    return roll(x, [-(x.shape[a] // 2) for a in axes], axis=axes)
