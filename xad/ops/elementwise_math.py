"""The rest of the Array API's elementwise functions: inverse trigonometric and hyperbolic
functions, ``log2``/``log10``, ``atan2``, ``hypot``, ``logaddexp``, ``copysign``,
``remainder``, ``nextafter`` (each a primitive with its gradient written in xad ops), the
ones composed from other operations (``reciprocal``, ``positive``), and those without a derivative
(rounding, ``floor_divide``, ``signbit``, ``isinf``, bitwise and logical ``xor``), whose
results do not require grad."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..factories import zeros_like
from ..tensor import Tensor
from ._apply import Op, binary, unary
from .batching import elementwise_batch
from .complex_parts import complex_from_parts, conj, imag, real, view_as_complex, view_as_real
from .elementwise import _arr, _nograd, clone, divide, holomorphic, sigmoid, sqrt, where
from .tangent import total

__all__ = [
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10",
    "atan2", "hypot", "logaddexp", "copysign", "remainder", "reciprocal", "positive",
    "floor", "ceil", "trunc", "round", "floor_divide", "signbit", "isinf", "nextafter",
    "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_invert",
    "bitwise_left_shift", "bitwise_right_shift", "conj", "real", "imag", "complex_from_parts",
    "view_as_real", "view_as_complex",
]


def _smooth(name_: str, derivative: Any, amp_float32: bool = False) -> type[Op]:
    """A unary primitive: the backend's function ``name_`` forward, ``g * derivative(x)``
    backward (``derivative`` in xad ops, so second order works); ``amp_float32``: on
    autocast's float32 list."""
    return holomorphic(type(name_.title(), (Op,), {
        "name": name_, "save_inputs": True, "floating": True, "amp_float32": amp_float32,
        "forward": staticmethod(lambda b, x: getattr(b.xp, name_)(x)),
        "backward": staticmethod(lambda node, g: g * derivative(node.inputs[0])),
        "jvp": staticmethod(lambda primals, tangents, out: tangents[0] * derivative(primals[0])),
        "batch": classmethod(elementwise_batch)}))


Asin = _smooth("asin", lambda x: 1 / sqrt(1 - x * x), True)
Acos = _smooth("acos", lambda x: -1 / sqrt(1 - x * x), True)
Atan = _smooth("atan", lambda x: 1 / (1 + x * x))
Sinh = _smooth("sinh", lambda x: cosh(x), True)
Cosh = _smooth("cosh", lambda x: sinh(x), True)
Asinh = _smooth("asinh", lambda x: 1 / sqrt(x * x + 1))
Acosh = _smooth("acosh", lambda x: 1 / sqrt(x * x - 1))
Atanh = _smooth("atanh", lambda x: 1 / (1 - x * x))
Log2 = _smooth("log2", lambda x: 1 / (x * math.log(2)), True)
Log10 = _smooth("log10", lambda x: 1 / (x * math.log(10)), True)


def _binary_forward(name_: str) -> Any:
    def forward(b, x, y):
        like = x if not isinstance(x, (int, float)) else y
        return getattr(b.xp, name_)(_arr(b, x, like), _arr(b, y, like))
    return staticmethod(forward)


class Atan2(Op):
    """``atan2(y, x)``; at ``(0, 0)`` its gradient is NaN (JAX's), or 0 in the subclass that
    sets ``zero_origin`` (PyTorch's, in ``xad.ops.torch_conventions``)."""

    name = "atan2"
    floating = True
    save_inputs = True
    zero_origin = False
    forward = _binary_forward("atan2")

    @staticmethod
    def backward(node, g):
        y, x = node.inputs
        r2 = x * x + y * y
        if node.op.zero_origin:  # an infinite r2 there makes both 0 (x / r2 and y / r2)
            r2 = where(r2 == 0, math.inf, r2)
        return g * x / r2, -g * y / r2

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (y, x), (ty, tx) = primals, tangents
        r2 = x * x + y * y
        return total(out, None if ty is None else ty * x / r2,
                     None if tx is None else -(tx * y) / r2)


class Hypot(Op):
    name = "hypot"
    floating = True
    save_inputs = True
    save_output = True
    forward = _binary_forward("hypot")

    @staticmethod
    def backward(node, g):
        x, y = node.inputs
        r = node.output()
        return g * x / r, g * y / r

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (x, y), (tx, ty) = primals, tangents
        return total(out, None if tx is None else tx * x / out,
                     None if ty is None else ty * y / out)


class Logaddexp(Op):
    name = "logaddexp"
    floating = True
    save_inputs = True
    forward = _binary_forward("logaddexp")

    @staticmethod
    def backward(node, g):
        x, y = node.inputs
        return g * sigmoid(x - y), g * sigmoid(y - x)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (x, y), (tx, ty) = primals, tangents
        return total(out, None if tx is None else tx * sigmoid(x - y),
                     None if ty is None else ty * sigmoid(y - x))


class Copysign(Op):
    name = "copysign"
    floating = True
    save_inputs = True
    forward = _binary_forward("copysign")

    @staticmethod
    def backward(node, g):
        x, y = node.inputs
        same = signbit(x) == signbit(y if isinstance(y, Tensor) else x * 0 + y)
        return where(same, g, -g), zeros_like(g)  # other: zeros, as PyTorch's

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (x, y), tx = primals, tangents[0]
        if tx is None:
            return None
        same = signbit(x) == signbit(y if isinstance(y, Tensor) else x * 0 + y)
        return where(same, tx, -tx)


def _no_zero_divisor(b: Any, x: Any, y: Any, name: str) -> None:
    """Raise for an integer array divided by the Python number 0 (Python's and PyTorch's
    ``ZeroDivisionError``; the libraries gave 0). A zero inside a divisor array is not
    looked for: that would read the device's data on the host."""
    if type(y) in (int, bool) and y == 0 and not isinstance(x, (int, float)):
        d = b.xad_dtype(x.dtype)
        if not d.is_floating and not d.name.startswith("complex"):
            raise ZeroDivisionError(f"{name}: integer division by zero (a tensor of "
                                    f"{d.name} by the number 0)")


def _remainder(b: Any, x: Any, y: Any, zero_sign_of_x: bool = False) -> Any:
    """The backend's ``remainder``; on floats a zero takes the sign of ``y`` (the standard's
    and Python's: ``-4.0 % 2.0`` is ``0.0``), or with ``zero_sign_of_x`` that of ``x``
    (PyTorch's, C's ``fmod``'s: ``-0.0``). The libraries differ: NumPy, CuPy and
    array_api_strict give ``y``'s, PyTorch and JAX ``x``'s."""
    _no_zero_divisor(b, x, y, "remainder")
    like = x if not isinstance(x, (int, float)) else y
    x, y = _arr(b, x, like), _arr(b, y, like)
    xp = b.xp
    r = xp.remainder(x, y)
    if not b.xad_dtype(r.dtype).is_floating:
        return r
    return xp.where(r == 0, xp.copysign(r, x if zero_sign_of_x else y), r)


class Remainder(Op):
    name = "remainder"
    save_inputs = True
    forward = staticmethod(_remainder)

    @staticmethod
    def backward(node, g):
        x, y = node.inputs
        return g, -g * floor_divide(x, y)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (x, y), (tx, ty) = primals, tangents
        return total(out, tx, None if ty is None else -(ty * floor_divide(x, y)))


def _floor_divide(b: Any, x: Any, y: Any) -> Any:
    """The backend's ``floor_divide``; on real floats, ``floor(x / y)`` where an operand is
    infinite: the standard's answers there (NumPy gives NaN for ``inf // 1.0`` and ``-1.0``
    for ``1.0 // -inf``, where the standard says ``inf`` and ``-0``). Integers untouched."""
    _no_zero_divisor(b, x, y, "floor_divide")
    like = x if not isinstance(x, (int, float)) else y
    x, y = _arr(b, x, like), _arr(b, y, like)
    xp = b.xp
    q = xp.floor_divide(x, y)
    if not b.xad_dtype(q.dtype).is_floating:
        return q
    return xp.where(xp.isinf(x) | xp.isinf(y), xp.floor(x / y), q)


def _no_grad_fn(name_: str, arity: int, doc: str,
                forward: Any = None) -> Callable[..., Tensor]:
    op = _nograd(name_, forward or (_binary_forward(name_).__func__ if arity == 2
                                    else (lambda b, x: getattr(b.xp, name_)(x))))

    def f1(x: Tensor, /) -> Tensor:
        return unary(op, x)

    def f2(x1: Any, x2: Any, /) -> Tensor:
        return binary(op, x1, x2)
    f = f2 if arity == 2 else f1
    f.__name__ = f.__qualname__ = name_  # the name users call (docs, reprs)
    f.__doc__ = doc + " (no gradient: the result does not require grad)."
    return f


floor = _no_grad_fn("floor", 1, "Round down")
ceil = _no_grad_fn("ceil", 1, "Round up")
trunc = _no_grad_fn("trunc", 1, "Round toward zero")
round = _no_grad_fn("round", 1, "Round half to even")
signbit = _no_grad_fn("signbit", 1, "Whether the sign bit is set")
isinf = _no_grad_fn("isinf", 1, "Whether each element is infinite")
bitwise_invert = _no_grad_fn("bitwise_invert", 1, "Bitwise not")
floor_divide = _no_grad_fn("floor_divide", 2, "Floor of x / y", _floor_divide)
def _nextafter(b: Any, x: Any, y: Any) -> Any:
    """``nextafter``; two integer (or bool) operands raise, as in PyTorch and the standard
    (NumPy's float64 answer was neither theirs nor xad's float32 for integers)."""
    like = x if not isinstance(x, (int, float)) else y
    x, y = _arr(b, x, like), _arr(b, y, like)
    if not (b.xad_dtype(x.dtype).is_floating or b.xad_dtype(y.dtype).is_floating):
        raise TypeError(f"nextafter: integer operands ({b.xad_dtype(x.dtype)}, "
                        f"{b.xad_dtype(y.dtype)}) have no next representable value; cast "
                        "one to a floating dtype first (x.astype(xad.float32))")
    return b.xp.nextafter(x, y)


class Nextafter(Op):
    """``nextafter(x, y)``: gradient 1 to ``x`` (0 where ``x == y``, whose result is ``y``)
    and 0 to ``y``, as PyTorch's."""

    name = "nextafter"
    save_inputs = True
    forward = staticmethod(_nextafter)

    @staticmethod
    def backward(node, g):
        x, y = node.inputs
        return where(x == y, 0.0, g), zeros_like(g)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (x, y), tx = primals, tangents[0]
        return None if tx is None else where(x == y, 0.0, tx)



logical_xor = _no_grad_fn("logical_xor", 2, "Elementwise exclusive or")
bitwise_and = _no_grad_fn("bitwise_and", 2, "Bitwise and")
bitwise_or = _no_grad_fn("bitwise_or", 2, "Bitwise or")
bitwise_xor = _no_grad_fn("bitwise_xor", 2, "Bitwise exclusive or")
bitwise_left_shift = _no_grad_fn("bitwise_left_shift", 2, "Shift the bits left")
bitwise_right_shift = _no_grad_fn("bitwise_right_shift", 2, "Shift the bits right")


def _unary_fn(op: type[Op], doc: str) -> Callable[[Tensor], Tensor]:
    def f(x: Tensor) -> Tensor:
        return unary(op, x)
    f.__name__ = f.__qualname__ = op.name  # the name users call (docs, reprs)
    f.__doc__ = doc
    return f


asin = _unary_fn(Asin, "Inverse sine.")
acos = _unary_fn(Acos, "Inverse cosine.")
atan = _unary_fn(Atan, "Inverse tangent.")
sinh: Callable[[Tensor], Tensor] = _unary_fn(Sinh, "Hyperbolic sine.")
cosh: Callable[[Tensor], Tensor] = _unary_fn(Cosh, "Hyperbolic cosine.")
asinh = _unary_fn(Asinh, "Inverse hyperbolic sine.")
acosh = _unary_fn(Acosh, "Inverse hyperbolic cosine.")
atanh = _unary_fn(Atanh, "Inverse hyperbolic tangent.")
log2 = _unary_fn(Log2, "Base-2 logarithm.")
log10 = _unary_fn(Log10, "Base-10 logarithm.")


def atan2(x1: Any, x2: Any) -> Tensor:
    """The angle of the point ``(x2, x1)``, in ``(-pi, pi]``.

    Example:
        >>> import xad
        >>> xad.atan2(xad.tensor([0.0, 1.0]), xad.tensor([1.0, 0.0])).tolist()[0]
        0.0
    """
    return binary(Atan2, x1, x2)


def hypot(x1: Any, x2: Any) -> Tensor:
    """``sqrt(x1**2 + x2**2)`` without overflow (gradient ``x / hypot``)."""
    return binary(Hypot, x1, x2)


def logaddexp(x1: Any, x2: Any) -> Tensor:
    """``log(exp(x1) + exp(x2))``, computed stably (gradient: a sigmoid of the difference)."""
    return binary(Logaddexp, x1, x2)


def copysign(x1: Any, x2: Any) -> Tensor:
    """``|x1|`` with the sign of ``x2`` (gradient with respect to ``x1``; none to ``x2``)."""
    return binary(Copysign, x1, x2)


def remainder(x1: Any, x2: Any) -> Tensor:
    """``x1 - x2 * floor(x1 / x2)``, the sign of ``x2`` (gradients 1 and ``-floor(x1/x2)``)."""
    return binary(Remainder, x1, x2)


def nextafter(x1: Any, x2: Any) -> Tensor:
    """The next representable value after ``x1`` toward ``x2``; gradient 1 to ``x1`` (0
    where ``x1 == x2``) and 0 to ``x2``, as PyTorch's.

    Example:
        >>> import xad
        >>> x = xad.tensor([1.0, 2.0], requires_grad=True)
        >>> xad.nextafter(x, xad.tensor([3.0, 2.0])).sum().backward(); x.grad.tolist()
        [1.0, 0.0]
    """
    return binary(Nextafter, x1, x2)


def reciprocal(x: Tensor) -> Tensor:
    """``1 / x``."""
    return divide(1.0, x)


def positive(x: Tensor) -> Tensor:
    """``+x`` (a copy, gradient 1)."""
    return clone(x)

