"""Reinterpreting a tensor's bits as another dtype: PyTorch's ``Tensor.view(dtype)``.

The result is a view of a ``detach()`` of the tensor, as PyTorch's is a non-differentiable
view: it shares the storage (an in-place change of either is seen by the other, and counts
against both versions) but never the graph. The bits come from the backend's ``bitcast``
(the standard has none); a write through the view reaches the base as the same bits read
back in the base's dtype (``inplace._onto_base``).
"""

from __future__ import annotations

from .. import dtypes as _dt
from ..tensor import Tensor
from ._apply import Op, apply, unary
from .layout import storage_offset, strides

__all__ = ["ViewDtype", "view_dtype"]


class ViewDtype(Op):
    """``x``'s bits as ``dtype`` (a native dtype); not differentiable, as PyTorch's."""

    name = "view_dtype"
    view = True
    differentiable = False

    @staticmethod
    def forward(b, x, dtype):
        return b.bitcast(x, dtype)

    @staticmethod
    def batch(args, batched, dtype):
        return apply(ViewDtype, args[0], dtype=dtype), True  # the batch axis leads


def _check(x: Tensor, dtype: _dt.DType) -> None:
    """PyTorch's conditions for a view of another element size, in its order."""
    old, new = x.dtype.itemsize, dtype.itemsize
    what = f"view({dtype.name}) of a tensor of dtype {x.dtype.name} and shape {x.shape}"
    if x.ndim == 0:
        raise RuntimeError(f"{what}: a 0-d tensor can only be viewed as a dtype of its "
                           f"element size ({old} bytes; {dtype.name} has {new}); view it "
                           f"as shape (1,) first: x.reshape(1).view(dtype)")
    st, ratio = strides(x), max(old, new) // min(old, new)
    if st[-1] != 1 and not (x.shape[-1] == 1 and st[-1] == 0):
        raise RuntimeError(f"{what}: the last axis has stride {st[-1]}, not 1 (other element "
                           f"sizes regroup its elements); make it contiguous first: "
                           f"x.contiguous().view(dtype)")
    if old > new:
        return
    problems = [f"the last axis's length {x.shape[-1]}"] if x.shape[-1] % ratio else []
    if storage_offset(x) % ratio:
        problems.append(f"the storage offset {storage_offset(x)}")
    problems += [f"the stride {s} of axis {i}" for i, s in enumerate(st[:-1]) if s % ratio]
    if problems:
        raise RuntimeError(f"{what}: {'; '.join(problems)} must be divisible by {ratio} "
                           f"(each {dtype.name} takes {ratio} {x.dtype.name} elements); "
                           f"view a copy (x.clone().view(dtype)) or pad the last axis")


def view_dtype(x: Tensor, dtype: _dt.DType) -> Tensor:
    """``x``'s bits read as ``dtype``, as PyTorch's ``x.view(dtype)``: of the same element
    size, the same shape; of another, the last axis (contiguous) scales by the ratio of the
    sizes. A view of ``x.detach()``: no gradient flows through it (PyTorch's).

    Example:
        >>> import xad
        >>> xad.tensor([1.0]).view(xad.int32).tolist()
        [1065353216]
    """
    if not isinstance(dtype, _dt.DType):
        raise TypeError(f"view(dtype): expected an xad dtype (xad.int32, ...), got "
                        f"{type(dtype).__name__}")
    native = x._backend.dtype(dtype)  # (an error names the dtypes the backend has)
    if dtype.itemsize != x.dtype.itemsize:
        _check(x, dtype)
    try:
        return unary(ViewDtype, x.detach(), dtype=native)
    except (ValueError, RuntimeError) as e:  # a layout of the array's own (x.T.exp())
        raise RuntimeError(f"view({dtype.name}) of a tensor of dtype {x.dtype.name} and shape "
                           f"{x.shape} on {x._backend.label}: its array's layout allows no "
                           f"such view ({e}); make it contiguous first: "
                           f"x.contiguous().view(dtype)") from e
