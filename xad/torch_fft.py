"""``torch.fft`` under ``python -m xad.as_torch``: PyTorch's signatures over :mod:`xad.fft`.

PyTorch's names differ from the Array API's: ``dim`` for ``axis``/``axes``, ``n``/``s`` and
``dim`` positional, ``norm=None`` for ``"backward"``, ``-1`` in ``s`` for "this dimension's
own size", and the two-dimensional forms (``fft2`` ...) and ``hfftn``/``ihfftn`` that the
standard lacks. Integer and bool inputs are made floating first (the default float dtype),
as PyTorch does.

Example:
    >>> import xad
    >>> from xad import torch_fft
    >>> xad.real(torch_fft.fft(xad.tensor([1.0, 1.0, 0.0]), 4, 0)).tolist()
    [2.0, 1.0, 0.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import dtypes as _dt
from . import fft as _fft
from .factories import _on, arange
from .ops.complex_parts import conj
from .ops.elementwise import where
from .ops.fourier import DUAL as _DUAL
from .tensor import Tensor

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

def _in(x: Tensor) -> Tensor:
    """An integer or bool input made floating (the default float dtype), as PyTorch's."""
    if x.dtype.is_floating or x.dtype.name.startswith("complex"):
        return x
    return x.astype(_dt.get_default_dtype())


def _norm(norm: str | None) -> str:
    return "backward" if norm is None else norm


def _dims(x: Tensor, s: Sequence[int] | None, dim: int | Sequence[int] | None
          ) -> tuple[tuple[int, ...], list[int] | None]:
    """PyTorch's ``(s, dim)``: all dims, or the last ``len(s)``; an int dim is one dim."""
    if s is not None and len(s) > x.ndim:
        raise IndexError(f"torch.fft: s {tuple(s)} has more sizes than the input of shape "
                         f"{x.shape} has dims")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is None:
        dim = range(x.ndim) if s is None else range(x.ndim - len(s), x.ndim)
    dims = tuple(dim)
    if any(not -x.ndim <= d < x.ndim for d in dims):
        raise IndexError(f"torch.fft: dim {dims} out of range for an input of shape "
                         f"{x.shape}")
    return dims, None if s is None else list(s)


def _sizes(x: Tensor, s: list[int] | None, dims: tuple[int, ...],
           last: bool = False) -> list[int] | None:
    """``s`` with ``-1`` replaced by the input's size (the inverse real transforms' last dim:
    ``2 * (m - 1)``)."""
    if s is None:
        return None
    out = [x.shape[d] if n == -1 else n for n, d in zip(s, dims)]
    if last and s and s[-1] == -1:
        out[-1] = 2 * (x.shape[dims[-1]] - 1)
    return out


def fftn(input: Tensor, s: Sequence[int] | None = None,  # noqa: A002 (PyTorch's name)
         dim: int | Sequence[int] | None = None, norm: str | None = None) -> Tensor:
    """``torch.fft.fftn``.

    Example:
        >>> import xad
        >>> from xad import torch_fft
        >>> xad.real(torch_fft.fftn(xad.ones(2, 2))).tolist()
        [[4.0, 0.0], [0.0, 0.0]]
    """
    x = _in(input)
    dims, sz = _dims(x, s, dim)
    return _fft.fftn(x, s=_sizes(x, sz, dims), axes=dims, norm=_norm(norm))


def ifftn(input: Tensor, s: Sequence[int] | None = None,  # noqa: A002
          dim: int | Sequence[int] | None = None, norm: str | None = None) -> Tensor:
    """``torch.fft.ifftn``.

    Example:
        >>> import xad
        >>> from xad import torch_fft
        >>> xad.real(torch_fft.ifftn(xad.tensor([[4.0, 0.0], [0.0, 0.0]]))).tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    x = _in(input)
    dims, sz = _dims(x, s, dim)
    return _fft.ifftn(x, s=_sizes(x, sz, dims), axes=dims, norm=_norm(norm))


def rfftn(input: Tensor, s: Sequence[int] | None = None,  # noqa: A002
          dim: int | Sequence[int] | None = None, norm: str | None = None) -> Tensor:
    """``torch.fft.rfftn``.

    Example:
        >>> import xad
        >>> from xad import torch_fft
        >>> torch_fft.rfftn(xad.ones(2, 4)).shape
        (2, 3)
    """
    x = _in(input)
    dims, sz = _dims(x, s, dim)
    return _fft.rfftn(x, s=_sizes(x, sz, dims), axes=dims, norm=_norm(norm))


def irfftn(input: Tensor, s: Sequence[int] | None = None,  # noqa: A002
           dim: int | Sequence[int] | None = None, norm: str | None = None) -> Tensor:
    """``torch.fft.irfftn``.

    Example:
        >>> import xad
        >>> from xad import torch_fft
        >>> torch_fft.irfftn(xad.tensor([[4.0, 0.0, 0.0]])).tolist()
        [[1.0, 1.0, 1.0, 1.0]]
    """
    x = _in(input)
    dims, sz = _dims(x, s, dim)
    return _fft.irfftn(x, s=_sizes(x, sz, dims, last=True), axes=dims, norm=_norm(norm))


def hfftn(input: Tensor, s: Sequence[int] | None = None,  # noqa: A002
          dim: int | Sequence[int] | None = None, norm: str | None = None) -> Tensor:
    """``torch.fft.hfftn``: the real transform of a Hermitian signal given by its last
    dimension's first half.

    Example:
        >>> import xad
        >>> from xad import torch_fft
        >>> torch_fft.hfftn(xad.tensor([[1.0, 0.0]])).tolist()
        [[1.0, 1.0]]
    """
    x = _in(input)
    dims, sz = _dims(x, s, dim)
    return _fft.irfftn(conj(x), s=_sizes(x, sz, dims, last=True), axes=dims,
                       norm=_DUAL[_norm(norm)])


def ihfftn(input: Tensor, s: Sequence[int] | None = None,  # noqa: A002
           dim: int | Sequence[int] | None = None, norm: str | None = None) -> Tensor:
    """``torch.fft.ihfftn``: the inverse of :func:`hfftn`.

    Example:
        >>> import xad
        >>> from xad import torch_fft
        >>> xad.real(torch_fft.ihfftn(xad.ones(1, 2))).tolist()
        [[1.0, 0.0]]
    """
    x = _in(input)
    dims, sz = _dims(x, s, dim)
    return conj(_fft.rfftn(x, s=_sizes(x, sz, dims), axes=dims, norm=_DUAL[_norm(norm)]))


def fft(input: Tensor, n: int | None = None, dim: int = -1,  # noqa: A002
        norm: str | None = None) -> Tensor:
    """``torch.fft.fft``: :func:`fftn` along ``dim`` (length ``n``)."""
    return fftn(input, None if n is None else (n,), dim, norm)


def ifft(input: Tensor, n: int | None = None, dim: int = -1,  # noqa: A002
        norm: str | None = None) -> Tensor:
    """``torch.fft.ifft``: :func:`ifftn` along ``dim`` (length ``n``)."""
    return ifftn(input, None if n is None else (n,), dim, norm)


def rfft(input: Tensor, n: int | None = None, dim: int = -1,  # noqa: A002
        norm: str | None = None) -> Tensor:
    """``torch.fft.rfft``: :func:`rfftn` along ``dim`` (length ``n``)."""
    return rfftn(input, None if n is None else (n,), dim, norm)


def irfft(input: Tensor, n: int | None = None, dim: int = -1,  # noqa: A002
        norm: str | None = None) -> Tensor:
    """``torch.fft.irfft``: :func:`irfftn` along ``dim`` (length ``n``)."""
    return irfftn(input, None if n is None else (n,), dim, norm)


def hfft(input: Tensor, n: int | None = None, dim: int = -1,  # noqa: A002
        norm: str | None = None) -> Tensor:
    """``torch.fft.hfft``: :func:`hfftn` along ``dim`` (length ``n``)."""
    return hfftn(input, None if n is None else (n,), dim, norm)


def ihfft(input: Tensor, n: int | None = None, dim: int = -1,  # noqa: A002
        norm: str | None = None) -> Tensor:
    """``torch.fft.ihfft``: :func:`ihfftn` along ``dim`` (length ``n``)."""
    return ihfftn(input, None if n is None else (n,), dim, norm)


def fft2(input: Tensor, s: Sequence[int] | None = None,  # noqa: A002
        dim: Sequence[int] = (-2, -1), norm: str | None = None) -> Tensor:
    """``torch.fft.fft2``: :func:`fftn` over two dims."""
    return fftn(input, s, dim, norm)


def ifft2(input: Tensor, s: Sequence[int] | None = None,  # noqa: A002
        dim: Sequence[int] = (-2, -1), norm: str | None = None) -> Tensor:
    """``torch.fft.ifft2``: :func:`ifftn` over two dims."""
    return ifftn(input, s, dim, norm)


def rfft2(input: Tensor, s: Sequence[int] | None = None,  # noqa: A002
        dim: Sequence[int] = (-2, -1), norm: str | None = None) -> Tensor:
    """``torch.fft.rfft2``: :func:`rfftn` over two dims."""
    return rfftn(input, s, dim, norm)


def irfft2(input: Tensor, s: Sequence[int] | None = None,  # noqa: A002
        dim: Sequence[int] = (-2, -1), norm: str | None = None) -> Tensor:
    """``torch.fft.irfft2``: :func:`irfftn` over two dims."""
    return irfftn(input, s, dim, norm)


def hfft2(input: Tensor, s: Sequence[int] | None = None,  # noqa: A002
        dim: Sequence[int] = (-2, -1), norm: str | None = None) -> Tensor:
    """``torch.fft.hfft2``: :func:`hfftn` over two dims."""
    return hfftn(input, s, dim, norm)


def ihfft2(input: Tensor, s: Sequence[int] | None = None,  # noqa: A002
        dim: Sequence[int] = (-2, -1), norm: str | None = None) -> Tensor:
    """``torch.fft.ihfft2``: :func:`ihfftn` over two dims."""
    return ihfftn(input, s, dim, norm)


def _freq(n: int, d: float, dtype: Any, device: Any, half: bool) -> Tensor:
    """``k * (1 / (n d))`` in the result dtype, PyTorch's arithmetic (float32 results can
    differ from NumPy's, which divides in float64, in the last bit)."""
    dt = _dt.as_dtype(dtype) or _dt.get_default_dtype()
    k = arange(n // 2 + 1 if half else n, dtype=_dt.int64, backend=_on(None, device, "fft"))
    if not half:
        k = where(k < (n + 1) // 2, k, k - n)
    return k.astype(dt) * (1.0 / (n * d))


def fftfreq(n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None,
            **_: Any) -> Tensor:
    """``torch.fft.fftfreq``.

    Example:
        >>> from xad import torch_fft
        >>> torch_fft.fftfreq(4).tolist()
        [0.0, 0.25, -0.5, -0.25]
    """
    return _freq(n, d, dtype, device, half=False)


def rfftfreq(n: int, d: float = 1.0, *, dtype: Any = None, device: Any = None,
             **_: Any) -> Tensor:
    """``torch.fft.rfftfreq``.

    Example:
        >>> from xad import torch_fft
        >>> torch_fft.rfftfreq(4).tolist()
        [0.0, 0.25, 0.5]
    """
    return _freq(n, d, dtype, device, half=True)


def fftshift(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:  # noqa: A002
    """``torch.fft.fftshift``.

    Example:
        >>> import xad
        >>> from xad import torch_fft
        >>> torch_fft.fftshift(xad.tensor([0.0, 1.0, 2.0, -2.0, -1.0])).tolist()
        [-2.0, -1.0, 0.0, 1.0, 2.0]
    """
    return _fft.fftshift(input, axes=dim)


def ifftshift(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:  # noqa: A002
    """``torch.fft.ifftshift``.

    Example:
        >>> import xad
        >>> from xad import torch_fft
        >>> torch_fft.ifftshift(xad.tensor([-2.0, -1.0, 0.0, 1.0, 2.0])).tolist()
        [0.0, 1.0, 2.0, -2.0, -1.0]
    """
    return _fft.ifftshift(input, axes=dim)
