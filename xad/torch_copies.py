"""PyTorch's ``*_copy`` functions (``torch.view_copy``, ``torch.permute_copy``, ...): the
view that the name without ``_copy`` gives, as a new tensor that later in-place changes of
the input do not reach (nor its own reach the input). Differentiable, as the view is.

Example:
    >>> import xad
    >>> from xad.torch_copies import transpose_copy
    >>> x = xad.zeros(2, 3); y = transpose_copy(x, 0, 1); x.add_(1.0)
    tensor(...)
    >>> y.shape, y.sum().item()
    ((3, 2), 0.0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import ops as _ops
from .tensor import Tensor

__all__ = ["view_copy", "permute_copy", "transpose_copy", "expand_copy", "diagonal_copy",
           "select_copy", "squeeze_copy", "unsqueeze_copy", "t_copy", "unbind_copy",
           "unfold_copy", "narrow_copy", "split_with_sizes_copy", "detach_copy",
           "as_strided_copy", "slice_copy", "alias_copy", "view_as_real_copy",
           "view_as_complex_copy"]


def _fresh(out: Any) -> Any:
    """``out`` (a tensor or a sequence of them) copied into new storage."""
    if isinstance(out, Tensor):
        return out.clone()
    return type(out)(t.clone() for t in out) if isinstance(out, tuple) else \
        [t.clone() for t in out]


def _copy_of(view: str) -> Callable[..., Any]:
    """``torch.<view>_copy(input, ...)``: ``input.<view>(...)`` in new storage."""
    def copy(input: Tensor, *args: Any, **kwargs: Any) -> Any:  # noqa: A002 (PyTorch's)
        if not isinstance(input, Tensor):
            raise TypeError(f"torch.{view}_copy: its first argument must be a tensor, got "
                            f"{type(input).__name__}")
        if view == "expand":  # expand_copy(x, size, *, implicit=False)
            kwargs.pop("implicit", None)
        return _fresh(getattr(input, view)(*args, **kwargs))
    copy.__name__ = copy.__qualname__ = f"{view}_copy"
    copy.__doc__ = (f"``torch.{view}_copy(input, ...)``: ``input.{view}(...)`` as a new "
                    f"tensor (in-place changes of either do not reach the other).")
    return copy


view_copy = _copy_of("view")
permute_copy = _copy_of("permute")
transpose_copy = _copy_of("transpose")
expand_copy = _copy_of("expand")
diagonal_copy = _copy_of("diagonal")
select_copy = _copy_of("select")
squeeze_copy = _copy_of("squeeze")
unsqueeze_copy = _copy_of("unsqueeze")
t_copy = _copy_of("t")
unbind_copy = _copy_of("unbind")
unfold_copy = _copy_of("unfold")
narrow_copy = _copy_of("narrow")
split_with_sizes_copy = _copy_of("split_with_sizes")
detach_copy = _copy_of("detach")
as_strided_copy = _copy_of("as_strided")


def alias_copy(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.alias_copy``: a copy of ``input`` (``input.clone()``)."""
    return input.clone()


def slice_copy(input: Tensor, dim: int = 0, start: int | None = None,  # noqa: A002
               end: int | None = None, step: int = 1) -> Tensor:
    """``torch.slice_copy(input, dim=0, start=None, end=None, step=1)``: the basic slice
    ``start:end:step`` along ``dim``, as a new tensor.

    Example:
        >>> import xad
        >>> from xad.torch_copies import slice_copy
        >>> slice_copy(xad.arange(6).reshape(2, 3), 1, 1).tolist()
        [[1, 2], [4, 5]]
    """
    if not -input.ndim <= dim < max(input.ndim, 1):
        raise IndexError(f"slice_copy: dim {dim} is out of range for a tensor of shape "
                         f"{tuple(input.shape)}")
    if step <= 0:
        raise ValueError(f"slice_copy: step must be positive, got {step}")
    return input[(slice(None),) * (dim % max(input.ndim, 1)) + (slice(start, end, step),)].clone()


def view_as_real_copy(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.view_as_real_copy``: :func:`xad.view_as_real`, as a new tensor."""
    return _ops.view_as_real(input).clone()


def view_as_complex_copy(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.view_as_complex_copy``: :func:`xad.view_as_complex`, as a new tensor."""
    return _ops.view_as_complex(input).clone()

