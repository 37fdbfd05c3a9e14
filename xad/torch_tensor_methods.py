"""PyTorch's tensor methods that xad computes under other names: the in-place view changes
(``x.squeeze_()``, ``x.t_()``, ``x.transpose_(0, 1)``, ...), ``x.resize(...)``,
``x.new(...)``, ``x.unsafe_split(...)``, ``x.narrow_copy(...)`` and the layers' functions
PyTorch also has as methods (``x.prelu(w)``, ``x.hardshrink()``); installed on
:class:`xad.Tensor` when xad is imported.

Example:
    >>> import xad
    >>> x = xad.zeros(3, 1) * 1.0; x.squeeze_().shape
    (3,)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

from . import ops as _ops
from .grad_mode import no_grad
from .nn import functional as _F
from .ops import layout as _layout
from .ops.strided import inplace_view
from .tensor import Tensor, install_methods

__all__ = ["squeeze_", "unsqueeze_", "t_", "transpose_", "swapaxes_", "swapdims_", "resize",
           "resize_as", "new", "new_empty_strided", "unsafe_chunk", "unsafe_split",
           "unsafe_split_with_sizes", "narrow_copy"]


def _reshaped(name: str, instead: str, make: Callable[..., Tensor]) -> Callable[..., Any]:
    def method(self: Tensor, *args: Any) -> Tensor:
        if self._base is None:
            return inplace_view(self, name, f"x.{instead}", lambda base: make(base, *args))
        with no_grad():  # a view: the same view of its storage, by its strides
            probe = make(self, *args)
            size, stride = tuple(probe.shape), _layout.strides(probe)
            offset = _layout.storage_offset(probe)
        del probe  # (no longer one of the tensor's views)
        return inplace_view(self, name, f"x.{instead}",
                            lambda base: _ops.as_strided(base, size, stride, offset))
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"PyTorch's ``x.{name}(...)``: ``x`` itself becomes ``x.{instead}``, "
                      f"a view of its storage (refused for a leaf that requires grad, as "
                      f"PyTorch, and for a tensor with views).")
    return method


squeeze_ = _reshaped("squeeze_", "squeeze(...)", lambda b, *a: b.squeeze(*a))
unsqueeze_ = _reshaped("unsqueeze_", "unsqueeze(dim)", lambda b, *a: b.unsqueeze(*a))
t_ = _reshaped("t_", "t()", lambda b: b.t())
transpose_ = _reshaped("transpose_", "transpose(dim0, dim1)",
                       lambda b, d0, d1: b.transpose(d0, d1))
swapaxes_ = _reshaped("swapaxes_", "swapaxes(axis0, axis1)",
                      lambda b, d0, d1: b.transpose(d0, d1))
swapdims_ = _reshaped("swapdims_", "swapdims(dim0, dim1)",
                      lambda b, d0, d1: b.transpose(d0, d1))


def resize(self: Tensor, *sizes: Any) -> Tensor:
    """PyTorch's (deprecated) ``x.resize(*sizes)``: ``x`` in the new shape, which must hold
    as many elements (autograd's resize, also without grad): ``x.reshape(sizes)``.

    Example:
        >>> import xad
        >>> xad.arange(4.0).resize(2, 2).shape
        (2, 2)
    """
    shape = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else sizes
    if math.prod(shape) != self.numel():
        raise RuntimeError(f"resize: requested {list(shape)} ({math.prod(shape)} elements), "
                           f"but the tensor has shape {list(self.shape)} ({self.numel()} "
                           f"elements); resize keeps the number of elements (as PyTorch's); "
                           f"resize_ of a tensor that does not require grad changes it")
    return self.reshape(shape)


def resize_as(self: Tensor, the_template: Tensor) -> Tensor:
    """PyTorch's ``x.resize_as(other)``: ``x.resize(other.shape)``."""
    return resize(self, tuple(the_template.shape))


def new(self: Tensor, *args: Any) -> Tensor:
    """PyTorch's legacy ``x.new(...)``: ``x.new(2, 3)`` a tensor of that shape (zeros: PyTorch
    leaves it uninitialised; ``x.new()`` is empty), ``x.new([1, 2])`` that data, ``x.new(t)``
    ``t`` detached (sharing its storage), each in ``x``'s dtype and backend. A tuple is
    refused: PyTorch reads it as data, yet xad's shapes are tuples, so ``x.new(y.shape)``
    would be data.

    Example:
        >>> import xad
        >>> x = xad.zeros(2, dtype=xad.float64); x.new(2, 3).shape, x.new([1, 2]).dtype
        ((2, 3), xad.float64)
    """
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return self.new_zeros(args or (0,))
    if len(args) == 1 and isinstance(args[0], Tensor):
        if args[0].dtype != self.dtype:
            raise TypeError(f"new: a tensor of {args[0].dtype} for one of {self.dtype} "
                            f"(PyTorch refuses too); cast it first")
        return args[0].detach()
    if len(args) == 1 and isinstance(args[0], list):
        return self.new_tensor(args[0])
    raise TypeError(f"new({', '.join(type(a).__name__ for a in args)}): give sizes as ints "
                    f"(x.new(*shape)), data as a list, or a tensor")


def new_empty_strided(self: Tensor, size: Any, stride: Any, *, dtype: Any = None,
                      requires_grad: bool = False, **unused: Any) -> Tensor:
    """PyTorch's ``x.new_empty_strided(size, stride)``: a new tensor of that shape (zeros;
    xad's new tensors are row-major whatever ``stride`` says)."""
    if len(tuple(stride)) != len(tuple(size)):
        raise RuntimeError(f"new_empty_strided: size {list(size)} and stride {list(stride)} "
                           f"differ in length")
    out = self.new_zeros(tuple(size), dtype=dtype)
    return out.requires_grad_() if requires_grad else out


def unsafe_chunk(self: Tensor, chunks: int, dim: int = 0) -> Any:
    """PyTorch's ``x.unsafe_chunk``: :meth:`chunk` (the same values; "unsafe" only skips
    PyTorch's view checks)."""
    return cast(Any, self).chunk(chunks, dim)


def unsafe_split(self: Tensor, split_size: int, dim: int = 0) -> Any:
    """PyTorch's ``x.unsafe_split``: :meth:`split` (the same values)."""
    return self.split(split_size, dim)


def unsafe_split_with_sizes(self: Tensor, split_sizes: Any, dim: int = 0) -> Any:
    """PyTorch's ``x.unsafe_split_with_sizes``: :meth:`split_with_sizes`."""
    return cast(Any, self).split_with_sizes(split_sizes, dim)


def narrow_copy(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    """PyTorch's ``x.narrow_copy``: :meth:`narrow` as a new tensor.

    Example:
        >>> import xad
        >>> xad.arange(5).narrow_copy(0, 1, 2).tolist()
        [1, 2]
    """
    return self.narrow(dim, start, length).clone()


install_methods({n: globals()[n] for n in __all__})
install_methods({"prelu": _F.prelu, "hardshrink": _F.hardshrink,
                 "as_strided_scatter": _ops.as_strided_scatter})
