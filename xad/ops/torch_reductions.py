"""Reductions PyTorch and NumPy have and the standard lacks: the cumulative product (a
primitive: its rule is exact at zeros, as PyTorch's), ``amax``/``amin`` (the gradient split
evenly among ties) and ``nansum``/``nanmean`` (NaNs skipped, and given gradient 0)."""

from __future__ import annotations

import math
from typing import Any

from ..factories import arange
from ..tensor import Tensor
from ._apply import Op
from .amp_cast import autocast_float32
from .batching import axes_batch
from .elementwise import astype, holomorphic, isnan, logical_and, logical_not, where
from .fused import recorded
from .manipulation import moveaxis
from .reduce import cumsum, cumulative, max, min, sum
from .shape import expand_dims, flip, reshape

__all__ = ["cumprod", "amax", "amin", "nansum", "nanmean"]


@holomorphic
class Cumprod(Op):
    """``y_j = x_0 ... x_j`` along ``axis``. Its rule (and tangent), exact with zeros:
    before a slice's first zero ``x_k``, ``d y_j / d x_i = y_j / x_i``; at ``x_k``, the
    cumulative product with ``x_k`` read as 1; after it, 0 (PyTorch's). Recorded
    (``create_graph``), the rule is :func:`_vjp_products`, whose derivatives are exact at
    zeros too."""

    name = "cumprod"
    save_inputs = True
    save_output = True

    @staticmethod
    def forward(b, x, axis):
        out = b.xp.cumulative_prod(x, axis=axis, dtype=x.dtype)  # (NumPy's widens int32)
        return b.row_major(out)  # (PyTorch's scans write contiguous results)

    @staticmethod
    def backward(node, g):
        x, a = node.inputs[0], node.params["axis"]
        if recorded(x, g):  # create_graph: a rule whose own derivatives are exact at zeros
            return _vjp_products(x, g, a)
        y = node.output()
        before, first, safe, y_first = _zero_split(x, a)
        rev = lambda t: flip(cumsum(flip(t, axis=a), axis=a), axis=a)  # noqa: E731
        return where(before, rev(g * y) / safe, where(first, rev(g * y_first), 0.0))

    batch = classmethod(axes_batch)

    @staticmethod
    def jvp(primals, tangents, out, axis):
        x, t = primals[0], tangents[0]
        before, first, safe, y_first = _zero_split(x, axis)
        return (out * cumsum(where(before, t / safe, 0.0), axis=axis)
                + y_first * cumsum(where(first, t, 0.0), axis=axis))


def _vjp_products(x: Tensor, g: Tensor, axis: int) -> Tensor:
    """``sum_{j >= i} g_j prod_{m <= j, m != i} x_m`` by an (n, n) cumulative product per
    slice, without division: exact at zeros to every order (PyTorch's rule under
    ``create_graph`` is quadratic too), in ``n`` times the memory."""
    xm, gm = moveaxis(x, axis, -1), moveaxis(g, axis, -1)
    n = xm.shape[-1]
    i = arange(n, backend=x._backend)
    col = reshape(i, (n, 1))
    c = cumprod(where(col == i, 1.0, expand_dims(xm, axis=-2)), axis=-1)
    gx = sum(where(col <= i, c * expand_dims(gm, axis=-2), 0.0), axis=-1)
    return moveaxis(gx, -1, axis)


def _zero_split(x: Tensor, axis: int) -> tuple:
    """Along ``axis``: where ``x`` comes before its slice's first zero, where that zero is,
    ``x`` with zeros read as 1, and the cumulative product with the first zero read as 1."""
    zero = x == 0
    seen = cumsum(astype(zero, x.dtype), axis=axis)
    first = logical_and(zero, seen == 1)
    return seen == 0, first, where(zero, 1.0, x), cumprod(where(first, 1.0, x), axis=axis)


def cumprod(x: Tensor, axis: int | None = None, *, dtype: Any = None) -> Tensor:
    """Cumulative product along ``axis`` (flattened first when ``None``), computed in
    ``dtype`` when given; its gradient is exact where ``x`` holds zeros.

    Example:
        >>> import xad
        >>> x = xad.tensor([2.0, 0.0, 3.0], requires_grad=True)
        >>> xad.cumprod(x).sum().backward(); x.grad.tolist()
        [1.0, 8.0, 0.0]
    """
    if dtype is not None:
        x = astype(x, dtype, copy=False)
    else:  # (autocast's float32 list, as cumsum)
        (x,) = autocast_float32(x, op="cumprod")
    return cumulative(Cumprod, x, axis)


def amax(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The maximum over ``axis`` (``None`` or ``()``: all), its gradient split evenly among
    tied maxima (PyTorch's ``amax``; ``max(dim)`` gives it all to one index).

    Example:
        >>> import xad
        >>> x = xad.tensor([1.0, 3.0, 3.0], requires_grad=True)
        >>> xad.amax(x).backward(); x.grad.tolist()
        [0.0, 0.5, 0.5]
    """
    return max(x, axis=None if axis == () else axis, keepdims=keepdims)


def amin(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """The minimum over ``axis``, its gradient split evenly among ties (PyTorch's ``amin``).

    Example:
        >>> import xad
        >>> xad.amin(xad.tensor([[1.0, 0.0], [2.0, 5.0]]), axis=1).tolist()
        [0.0, 2.0]
    """
    return min(x, axis=None if axis == () else axis, keepdims=keepdims)


def nansum(x: Tensor, axis: Any = None, keepdims: bool = False, *, dtype: Any = None
           ) -> Tensor:
    """The sum over ``axis`` with NaNs read as 0 (their gradient is 0); integer and bool
    tensors sum as :func:`xad.sum` does.

    Example:
        >>> import xad
        >>> xad.nansum(xad.tensor([1.0, float("nan"), 2.0])).item()
        3.0
    """
    if x.dtype.is_floating:
        x = where(isnan(x), 0.0, x)
    return sum(x, axis=axis, keepdims=keepdims, dtype=dtype)


def nanmean(x: Tensor, axis: Any = None, keepdims: bool = False, *, dtype: Any = None
            ) -> Tensor:
    """The mean of the non-NaN elements over ``axis`` (NaN where there are none), for
    floating tensors, as PyTorch's and NumPy's.

    Example:
        >>> import xad
        >>> xad.nanmean(xad.tensor([1.0, float("nan"), 2.0])).item()
        1.5
    """
    if dtype is not None:
        x = astype(x, dtype, copy=False)
    if not x.dtype.is_floating:
        raise TypeError(f"nanmean: needs a floating tensor, got dtype {x.dtype}; cast it "
                        f"first (x.astype(xad.float32)) or pass dtype=")
    count = sum(astype(logical_not(isnan(x)), x.dtype), axis=axis, keepdims=keepdims)
    mean = nansum(x, axis=axis, keepdims=keepdims) / count
    # a slice of NaNs: NaN, and a NaN gradient, as PyTorch's (nansum / count there: 0 / 0)
    none = count == 0
    nan = astype(where(none, math.nan, 0.0), x.dtype)  # (float32 made a float16 mean float32)
    return where(none, sum(x, axis=axis, keepdims=keepdims) * nan, mean)

