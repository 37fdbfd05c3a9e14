"""Vector norms: the ``ord`` dispatch written once, for the standard's
``xad.linalg.vector_norm`` (JAX's gradient at a zero vector: NaN for ``ord`` 2 and ``p``)
and PyTorch's ``torch.linalg.vector_norm``/``Tensor.norm`` (gradient 0 there)."""

from __future__ import annotations

import math
from typing import Any

from ..context import context
from ..tensor import Tensor
from .amp_cast import HALF, autocast_float32, in_float32
from .elementwise import abs, sqrt, where
from .reduce import max, min, sum

__all__ = ["vector_norm", "abs2", "sqrt_zero_grad"]


def abs2(x: Tensor) -> Tensor:
    """``|x|**2`` elementwise (``x * x`` for real ``x``: differentiable everywhere)."""
    return x * x if x.dtype.is_floating else abs(x) * abs(x)


def sqrt_zero_grad(v: Tensor) -> Tensor:
    """``sqrt(v)`` whose gradient is 0 where ``v == 0`` (PyTorch's ``std`` and ``norm``),
    not ``inf * 0``; NaN stays NaN."""
    nz = v != 0
    return where(nz, sqrt(where(nz, v, 1.0)), 0.0)


def _root(s: Tensor, ord: float, zero_grad: bool) -> Tensor:
    """``s ** (1 / ord)``; ``zero_grad``: with gradient 0 where ``s`` is 0."""
    if ord == 2:
        return sqrt_zero_grad(s) if zero_grad else sqrt(s)
    if not zero_grad:
        return s ** (1.0 / ord)
    nz = s != 0
    return where(nz, where(nz, s, 1.0) ** (1.0 / ord), 0.0)


def vector_norm(x: Tensor, ord: float = 2, axis: Any = None, keepdims: bool = False, *,
                zero_grad: bool = False) -> Tensor:
    """The ``ord``-norm over ``axis`` (all axes when ``None``): ``inf``, ``-inf``, ``0``
    (the count of non-zeros, no gradient) or any other ``p``; ``zero_grad``: PyTorch's
    gradient 0 at a zero vector, else the standard's (JAX's) NaN.

    Example:
        >>> import xad
        >>> from xad.ops.norms import vector_norm
        >>> x = xad.zeros(2, requires_grad=True)
        >>> vector_norm(x, zero_grad=True).backward(); x.grad.tolist()
        [0.0, 0.0]
    """
    if context.autocast is not None:  # autocast's float32 list (PyTorch's CUDA one)
        (x,) = autocast_float32(x, op="vector_norm")
    if x.dtype in HALF:  # half precision: summed in float32, as PyTorch's
        return in_float32(vector_norm, x, ord, axis, keepdims, zero_grad=zero_grad)
    if ord == 2:
        return _root(sum(abs2(x), axis=axis, keepdims=keepdims), 2, zero_grad)
    a = abs(x)
    if ord == math.inf:
        return max(a, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return min(a, axis=axis, keepdims=keepdims)
    nz = a != 0
    if ord == 0:  # PyTorch's: a gradient of zeros; the standard's: none
        return sum(where(nz, 1.0, a * 0.0) if zero_grad else nz.astype(a.dtype), axis=axis,
                   keepdims=keepdims)
    if ord == 1:
        return sum(a, axis=axis, keepdims=keepdims)
    if zero_grad and ord < 1:  # PyTorch's 0, not inf * 0, at a zero element (0 ** ord:
        # 0, or inf for ord < 0, where the norm is 0)
        return _root(sum(where(nz, where(nz, a, 1.0) ** ord, 0.0 if ord > 0 else math.inf),
                         axis=axis, keepdims=keepdims), ord, zero_grad)
    return _root(sum(a ** ord, axis=axis, keepdims=keepdims), ord, zero_grad)
