"""The Array API's ``asarray``, ``from_dlpack`` and ``empty_like`` (the other creation
functions are in :mod:`xad.factories`)."""

from __future__ import annotations

from typing import Any

from .. import dtypes as _dt
from ..backend import get_backend
from ..factories import tensor, zeros
from ..tensor import Tensor
from .elementwise import astype, clone
from .shape import stack

__all__ = ["asarray", "from_dlpack", "empty_like"]


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
    if _holds_tensors(obj):  # stacked on their backend: no host round trip
        return asarray(stack([asarray(o) for o in obj]), dtype=dtype)
    return tensor(obj, dtype=dtype)


def _holds_tensors(obj: Any) -> bool:
    """Whether ``obj`` is a (nested) list or tuple whose first element is a tensor."""
    while isinstance(obj, (list, tuple)) and obj:
        obj = obj[0]
        if isinstance(obj, Tensor):
            return True
    return False


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """A tensor on the current backend from any object with ``__dlpack__`` (another
    library's array, or an xad tensor that does not require grad), through the backend's
    ``from_dlpack``: it shares ``x``'s memory unless ``copy=True`` (or the library must
    copy). A tensor made from an xad tensor counts in-place changes with it.

    Example:
        >>> import xad
        >>> x = xad.arange(3)
        >>> xad.from_dlpack(x, copy=True).tolist()
        [0, 1, 2]
    """
    _check_device(device, "from_dlpack")
    b = get_backend()
    out = Tensor._make(b.from_dlpack(x, copy=copy), b)
    if isinstance(x, Tensor) and copy is not True:
        x._share_version(out)
    return out


def empty_like(x: Tensor, /, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """A tensor of ``x``'s shape (zeros; xad does not hand out uninitialised memory).

    Example:
        >>> import xad
        >>> xad.empty_like(xad.ones(2)).shape
        (2,)
    """
    _check_device(device, "empty_like")
    return zeros(x.shape, dtype=dtype or x.dtype, requires_grad=requires_grad,
                 backend=x._backend)
