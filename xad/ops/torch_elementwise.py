"""PyTorch's elementwise functions that the standard lacks: ``gcd`` and ``lcm`` of
integers (Euclid's algorithm run for as many steps as the dtype's worst case, so no value
is read on the host), a float's ``frexp`` and ``ldexp``, ``sinc``, ``fix`` and ``sgn``; composed
from xad's primitives."""

from __future__ import annotations

import math
from typing import Any

from .. import dtypes as _dt
from ..factories import full_like
from ..tensor import Tensor
from .bitcast import view_dtype
from .dtype_functions import result_type
from .elementwise import abs, astype, clip, isfinite, logical_and, sign, sin, where
from .elementwise_math import floor, log2, remainder, trunc
from .torch_compositions import exp2

__all__ = ["gcd", "lcm", "frexp", "ldexp", "sinc", "fix", "sgn"]


def _integers(name: str, a: Any, b: Any) -> tuple[Tensor, Tensor]:
    like = a if isinstance(a, Tensor) else b
    a, b = (t if isinstance(t, Tensor) else full_like(like, t) for t in (a, b))
    d = result_type(a, b)
    if d.is_floating or d.name.startswith("complex") or d is _dt.bool_:
        raise TypeError(f"{name}: integer tensors only, got {a.dtype} and {b.dtype}")
    return tuple(t if t.dtype is d else astype(t, d) for t in (a, b))  # type: ignore[return-value]


def gcd(input: Any, other: Any) -> Tensor:  # noqa: A002
    """The greatest common divisor of integers, elementwise (non-negative; ``gcd(0, 0)`` is
    0).

    Example:
        >>> import xad
        >>> xad.gcd(xad.tensor([12, -9, 0]), xad.tensor([18, 6, 0])).tolist()
        [6, 3, 0]
    """
    a, b = _integers("gcd", input, other)
    a, b = abs(a), abs(b)
    bits = int("".join(c for c in a.dtype.name if c.isdigit()))
    for _ in range(int(1.45 * bits) + 2):  # Euclid's worst case: consecutive Fibonaccis
        nz = b != 0
        a, b = where(nz, b, a), where(nz, remainder(a, where(nz, b, 1)), 0)
    return abs(a)


def lcm(input: Any, other: Any) -> Tensor:  # noqa: A002
    """The least common multiple of integers, elementwise (non-negative; 0 where either is
    0).

    Example:
        >>> import xad
        >>> xad.lcm(xad.tensor([4, -6, 0]), xad.tensor([6, 4, 5])).tolist()
        [12, 12, 0]
    """
    a, b = _integers("lcm", input, other)
    g = gcd(a, b)
    zero = g == 0
    return where(zero, 0, abs((a // where(zero, 1, g)) * b))


def frexp(input: Tensor) -> tuple[Tensor, Tensor]:  # noqa: A002
    """``(mantissa, exponent)`` with ``input = mantissa * 2**exponent``, ``0.5 <=
    |mantissa| < 1`` (``(x, 0)`` for 0, inf and NaN; the exponent int32); the mantissa's
    gradient is ``2**-exponent``, as PyTorch's.

    Example:
        >>> import xad
        >>> m, e = xad.frexp(xad.tensor([8.0, -0.75])); m.tolist(), e.tolist()
        ([0.5, -0.75], [4, 0])
    """
    if not input.dtype.is_floating:
        raise TypeError(f"frexp: floating-point input only, got {input.dtype}")
    x = abs(input.detach())
    usual = logical_and(isfinite(x), x != 0)
    e = where(usual, floor(log2(where(usual, x, 1.0))) + 1, 0.0)
    m = _scaled(x, -e)
    e = where(usual, e + astype(m >= 1, e.dtype) - astype(m < 0.5, e.dtype), 0.0)
    return _scaled(input, -e), astype(e, _dt.int32)


# a float dtype's bits: the integer dtype of its width, its mantissa bits, its exponent bias
_LAYOUT = {"float64": ("int64", 52, 1023), "float32": ("int32", 23, 127),
           "float16": ("int16", 10, 15), "bfloat16": ("int16", 7, 127)}


def _pow2(k: Tensor, dtype: _dt.DType) -> Tensor:
    """``2**k`` exactly, for integral ``k`` within ``dtype``'s normal exponents: the float's
    bits. ``exp2`` may miss by an ulp (CUDA's did on an H200: CuPy's frexp mantissa of
    1.7e308 came out an ulp low)."""
    name, mantissa, bias = _LAYOUT[dtype.name]
    bits = (astype(k, getattr(_dt, name)) + bias) * (1 << mantissa)
    return view_dtype(bits, dtype)


def _scaled(x: Tensor, e: Tensor) -> Tensor:
    """``x * 2**e`` exactly (rounded once, where the result is subnormal) for integral ``e``
    (a float tensor), in three power-of-two factors, each within the dtype's normal range
    (``2**e`` alone over- or underflows where ``x`` is large or subnormal)."""
    d = x.dtype
    bias = _LAYOUT[d.name][2]
    e = clip(e, 3 * (1 - bias), 3 * bias)  # beyond: inf or 0 either way
    k1 = trunc(e / 3)
    k2 = trunc((e - k1) / 2)
    return x * _pow2(k1, d) * _pow2(k2, d) * _pow2(e - k1 - k2, d)


def ldexp(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input * 2**other`` in the two tensors' result dtype (the default float dtype for
    integers), as PyTorch's: ``float16`` with ``uint8`` is float16, and a float16 ``other``
    beside float64 is raised in float64.

    Example:
        >>> import xad
        >>> xad.ldexp(xad.tensor([1.5]), xad.tensor([3])).tolist()
        [12.0]
    """
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)):
        return input * (exp2(other) if isinstance(other, Tensor) else 2.0 ** other)
    d = result_type(input, other)
    d = d if d.is_floating or d.is_complex else _dt.get_default_dtype()
    return astype(input, d) * exp2(astype(other, d))


def sinc(input: Tensor) -> Tensor:  # noqa: A002
    """``sin(pi x) / (pi x)``, 1 at 0 (gradient 0 there, as PyTorch's).

    Example:
        >>> import xad
        >>> xad.sinc(xad.tensor([0.0, 0.5])).tolist()[0]
        1.0
    """
    x = input if input.dtype.is_floating or input.dtype.name.startswith("complex") else \
        astype(input, _dt.float32)
    zero = x == 0
    px = where(zero, 1.0, x) * math.pi
    return where(zero, 1.0, sin(px) / px)


def fix(input: Tensor) -> Tensor:  # noqa: A002
    """Round toward zero: PyTorch's other name of ``trunc``.

    Example:
        >>> import xad
        >>> xad.fix(xad.tensor([-1.5, 2.7])).tolist()
        [-1.0, 2.0]
    """
    return trunc(input)


def sgn(input: Tensor) -> Tensor:  # noqa: A002
    """``z / |z|`` of a complex tensor (0 at 0, and its gradient 0 there, as PyTorch's);
    ``sign`` of a real one.

    Example:
        >>> import xad
        >>> xad.sgn(xad.tensor([-3.0, 0.0])).tolist()
        [-1.0, 0.0]
    """
    if not input.dtype.name.startswith("complex"):
        return sign(input)
    a = abs(input)
    zero = a == 0
    return where(zero, 0.0, input / where(zero, 1.0, a))
