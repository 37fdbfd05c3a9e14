"""The Array API's ``asarray`` and ``empty_like`` (the other creation functions are in
:mod:`xad.factories`)."""

from __future__ import annotations

from typing import Any

from .. import dtypes as _dt
from ..backend import get_backend
from ..factories import tensor, zeros
from ..tensor import Tensor
from .elementwise import astype, clone

__all__ = ["asarray", "empty_like"]


def _check_device(device: Any, where_: str) -> None:
    b = get_backend()
    if device is not None and device != b.device:
        raise ValueError(f"{where_}: device {device!r} is not the current backend's "
                         f"({b.label}, device {b.device!r}); choose the backend with "
                         f"xad.set_backend(...) or move a tensor with .to(...)")


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None,
            copy: bool | None = None) -> Tensor:
    """A tensor from ``obj`` (a tensor is returned as it is unless ``dtype`` or ``copy``
    asks otherwise; anything else is copied onto the current backend).

    Example:
        >>> import xad
        >>> xad.asarray([1, 2], dtype=xad.float64).tolist()
        [1.0, 2.0]
    """
    _check_device(device, "asarray")
    if isinstance(obj, Tensor):
        d = _dt.as_dtype(dtype)
        out = obj if d is None or d is obj.dtype else astype(obj, d)
        return clone(out) if copy and out is obj else out
    if copy is False:
        raise ValueError("asarray: copy=False needs a tensor (anything else is copied)")
    return tensor(obj, dtype=dtype)


def empty_like(x: Tensor, /, *, dtype: Any = None, device: Any = None) -> Tensor:
    """A tensor of ``x``'s shape (zeros; xad does not hand out uninitialised memory).

    Example:
        >>> import xad
        >>> xad.empty_like(xad.ones(2)).shape
        (2,)
    """
    _check_device(device, "empty_like")
    return zeros(x.shape, dtype=dtype or x.dtype, backend=x._backend)
