"""PyTorch's sampled-calculus functions, for ``python -m xad.as_torch``: ``torch.trapz``
(``torch.trapezoid``'s older name), ``torch.cumulative_trapezoid`` and ``torch.gradient``
(central differences inside, first- or second-order one-sided ones at the edges, over
uniform spacing or coordinates). Composed from xad's operations: differentiable, as
PyTorch's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import ops as _ops
from .dtypes import get_default_dtype
from .tensor import Tensor

__all__ = ["trapz", "cumulative_trapezoid", "gradient"]


def trapz(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """``torch.trapz``: :func:`xad.trapezoid` (``trapz(y, x, dim=-1)`` or
    ``trapz(y, dx=1, dim=-1)``).

    Example:
        >>> import xad
        >>> from xad.torch_calculus import trapz
        >>> trapz(xad.tensor([1.0, 2.0, 4.0])).item()
        4.5
    """
    return _ops.trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Any = None, *, dx: Any = None,
                         dim: int = -1) -> Tensor:
    """``torch.cumulative_trapezoid``: the running trapezoidal integral of ``y`` along ``dim``
    (one element fewer than ``y``), over sample points ``x`` (1-D, or ``y``'s shape) or at
    spacing ``dx`` (default 1).

    Example:
        >>> import xad
        >>> from xad.torch_calculus import cumulative_trapezoid
        >>> cumulative_trapezoid(xad.tensor([1.0, 2.0, 4.0])).tolist()
        [1.5, 4.5]
    """
    if y.ndim == 0:
        raise RuntimeError("cumulative_trapezoid: y must have at least one dimension, got a "
                           "0-d tensor")
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid: give the sample points x or the spacing dx, "
                        "not both")
    axis = dim % y.ndim
    n = y.shape[axis]
    pairs = y.narrow(axis, min(1, n), max(n - 1, 0)) + y.narrow(axis, 0, max(n - 1, 0))
    if not isinstance(x, Tensor):
        step = 1 if x is None and dx is None else (dx if x is None else x)
        return _ops.cumsum((step / 2.0) * pairs, axis=axis)
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"cumulative_trapezoid: x of length {x.shape[0]} for {n} samples "
                               f"of y along dim {dim} (shape {tuple(y.shape)})")
        d = _ops.reshape(_ops.diff(x), (-1,) + (1,) * (y.ndim - 1 - axis))
    else:
        d = _ops.diff(x, axis=dim)
    return _ops.cumsum(pairs * d, axis=axis) / 2.0


def _spacings(input: Tensor, spacing: Any, dims: list[int]) -> list[Any]:  # noqa: A002
    """One spacing per dimension: a number (uniform) or a 1-D tensor of coordinates."""
    if isinstance(spacing, (int, float)) and not isinstance(spacing, bool):
        return [spacing] * len(dims)
    if isinstance(spacing, Tensor) and spacing.ndim == 0:
        return [spacing.item()] * len(dims)
    if not isinstance(spacing, Sequence) or len(spacing) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                           f"a list of length {len(dims)} (one per dimension in dim), got "
                           f"{spacing!r}")
    out = []
    for s, d in zip(spacing, dims, strict=True):
        if isinstance(s, Tensor) and s.ndim == 1 and s.shape[0] != input.shape[d]:
            raise RuntimeError(f"torch.gradient expected each tensor in spacing to have as "
                               f"many elements as dim {d} of the input ({input.shape[d]}), "
                               f"got {s.shape[0]}")
        out.append(s.item() if isinstance(s, Tensor) and s.ndim == 0 else s)
    return out


def _along(t: Tensor, axis: int, ndim: int) -> Tensor:
    """A 1-D tensor shaped to broadcast along ``axis`` of an ``ndim``-d tensor."""
    return _ops.reshape(t, (-1,) + (1,) * (ndim - 1 - axis))


def _gradient_1d(f: Tensor, h: Any, axis: int, edge_order: int) -> Tensor:
    """The derivative of ``f`` along ``axis`` (NumPy's formulas, which PyTorch's follow)."""
    n = f.shape[axis]

    def part(start: int, length: int) -> Tensor:
        return f.narrow(axis, start % n, length)
    if not isinstance(h, Tensor):  # uniform spacing
        inner = (part(2, n - 2) - part(0, n - 2)) / (2.0 * h)
        if edge_order == 1:
            first = (part(1, 1) - part(0, 1)) / h
            last = (part(-1, 1) - part(-2, 1)) / h
        else:
            first = (-1.5 * part(0, 1) + 2.0 * part(1, 1) - 0.5 * part(2, 1)) / h
            last = (0.5 * part(-3, 1) - 2.0 * part(-2, 1) + 1.5 * part(-1, 1)) / h
        return _ops.concat([first, inner, last], axis=axis)
    d = _ops.diff(h)
    h1, h2 = _along(d[:-1], axis, f.ndim), _along(d[1:], axis, f.ndim)
    inner = (-h2 / (h1 * (h1 + h2)) * part(0, n - 2) + (h2 - h1) / (h1 * h2) * part(1, n - 2)
             + h1 / (h2 * (h1 + h2)) * part(2, n - 2))
    if edge_order == 1:
        first = (part(1, 1) - part(0, 1)) / d[0]
        last = (part(-1, 1) - part(-2, 1)) / d[-1]
    else:
        a, b = d[0], d[1]
        first = (-(2.0 * a + b) / (a * (a + b)) * part(0, 1) + (a + b) / (a * b) * part(1, 1)
                 - a / (b * (a + b)) * part(2, 1))
        a, b = d[-2], d[-1]
        last = (b / (a * (a + b)) * part(-3, 1) - (a + b) / (a * b) * part(-2, 1)
                + (a + 2.0 * b) / (b * (a + b)) * part(-1, 1))
    return _ops.concat([first, inner, last], axis=axis)


def gradient(input: Tensor, *, spacing: Any = 1, dim: Any = None,  # noqa: A002
             edge_order: int = 1) -> tuple[Tensor, ...]:
    """``torch.gradient``: the derivative estimated along each of ``dim`` (default: every
    dimension), one tensor per dimension; ``spacing`` a number, one number per dimension,
    or one 1-D tensor of coordinates per dimension; ``edge_order`` 1 or 2 at the edges.

    Example:
        >>> import xad
        >>> from xad.torch_calculus import gradient
        >>> gradient(xad.tensor([1.0, 2.0, 4.0, 7.0]))[0].tolist()
        [1.0, 1.5, 2.5, 3.0]
    """
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2, got "
                           f"{edge_order}")
    dims = list(range(input.ndim)) if dim is None else [dim] if isinstance(dim, int) else \
        list(dim)
    dims = [d % max(input.ndim, 1) for d in dims]
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    f = input if input.dtype.is_floating or input.dtype.is_complex else \
        _ops.astype(input, get_default_dtype())
    return tuple(_gradient_1d(f, h, d, edge_order)
                 for h, d in zip(_spacings(input, spacing, dims), dims, strict=True))
