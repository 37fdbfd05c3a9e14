"""Autocast's casts: what an operation calls first, under :class:`xad.amp.autocast`, to
compute in the low dtype (matrix products, convolutions) or in float32 (softmax, losses,
normalisation, sums).

Outside autocast both return their arguments unchanged after one attribute read; callers on
hot paths test ``context.autocast is not None`` themselves first. The casts go through
:func:`~xad.ops.astype`, so each input's gradient comes back in that input's own dtype.
float64 inputs are never cast (as PyTorch), nor are non-floating tensors, Python numbers or
``None``.

Example:
    >>> import xad
    >>> from xad.ops.amp_cast import autocast_low
    >>> w = xad.ones(2, 2)
    >>> with xad.amp.autocast(xad.float16):
    ...     (w16, none) = autocast_low(w, None)
    >>> w16.dtype, none
    (xad.float16, None)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

from .. import dtypes as _dt
from ..context import context
from ..tensor import Tensor
from .elementwise import astype

__all__ = ["autocast_low", "autocast_float32", "in_float32", "autocast_off", "unlisted",
           "HALF"]

_F = TypeVar("_F", bound=Callable[..., Any])
_TO_LOW = (_dt.float32, _dt.float16, _dt.bfloat16)
HALF = (_dt.float16, _dt.bfloat16)  # the half-precision dtypes
_TO_FLOAT32 = HALF


def autocast_low(*xs: Any, op: str = "an operation") -> tuple[Any, ...]:
    """``xs`` with every float32/float16/bfloat16 tensor cast to the autocast dtype.

    For an operation on PyTorch's lower-precision list: ``x, w, b = autocast_low(x, w, b,
    op="conv2d")`` as its first line (``op`` names it in errors).
    """
    d = context.autocast
    if d is None:
        return xs
    return tuple(_cast(x, d, _TO_LOW, op) for x in xs)


def autocast_float32(*xs: Any, op: str = "an operation") -> tuple[Any, ...]:
    """``xs`` with every float16/bfloat16 tensor cast to float32 (inside autocast only)."""
    if context.autocast is None:
        return xs
    return tuple(_cast(x, _dt.float32, _TO_FLOAT32, op) for x in xs)


def _cast(x: Any, d: _dt.DType, eligible: tuple, op: str) -> Any:
    if not isinstance(x, Tensor) or x.dtype is d or x.dtype not in eligible:
        return x
    if x._backend._dtypes.get(d) is None:
        raise TypeError(f"{op} under xad.amp.autocast(dtype={d!r}): backend "
                        f"{x._backend.name!r} has no {d.name}; use a backend that has it, "
                        f"another dtype, or autocast(enabled=False)")
    return astype(x, d)


def in_float32(fn: Any, *xs: Any, **params: Any) -> Any:
    """``fn(*xs, **params)`` with the tensors among ``xs`` in float32, the result rounded
    back to the first's float16/bfloat16 dtype: PyTorch accumulates half precision in
    float32 (a float16 sum of squares overflows at 65504: the norm of 3000 fives was inf).

    Example:
        >>> import xad
        >>> from xad.ops.amp_cast import in_float32
        >>> h = xad.full((3000,), 5.0, dtype=xad.float16)
        >>> in_float32(lambda x: (x * x).sum() ** 0.5, h).item()
        273.75
    """
    d = xs[0].dtype
    out = fn(*(astype(x, _dt.float32) if isinstance(x, Tensor) else x for x in xs), **params)
    return astype(out, d)


def autocast_off(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with autocast off: the body of an operation on neither list
    (or past its own casts) made of listed parts, which PyTorch runs as one kernel in its
    inputs' dtypes (``elu`` of a float16 tensor is float16, though ``expm1`` is listed).

    Example:
        >>> import xad
        >>> from xad.ops.amp_cast import autocast_off
        >>> h = xad.ones(2, dtype=xad.float16)
        >>> with xad.amp.autocast(xad.float16):
        ...     xad.exp(h).dtype, autocast_off(xad.exp, h).dtype
        (xad.float32, xad.float16)
    """
    d = context.autocast
    if d is None:
        return fn(*args, **kwargs)
    context.autocast = None
    try:
        return fn(*args, **kwargs)
    finally:
        context.autocast = d


def unlisted(fn: _F) -> _F:
    """Decorator: ``fn`` runs through :func:`autocast_off` (an unlisted composition)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return autocast_off(fn, *args, **kwargs)
    return cast(_F, wrapper)
