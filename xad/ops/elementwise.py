"""Elementwise operations: arithmetic, unary math, activations, comparisons, casts."""

from __future__ import annotations

import cmath
import math
import operator as _operator
from collections.abc import Callable
from typing import Any

from .. import dtypes as _dt
from ..factories import tensor
from ..graph import complex_twins
from ..tensor import Tensor
from ._apply import Op, _operand, _promote, _weak, apply, binary, unary
from .batching import align, elementwise_batch
from .complex_parts import complex_from_parts, conj, imag, real
from .fused import gelu as _fused_gelu
from .fused import relu_grad, sigmoid_grad, tanh_grad
from .tangent import fit, total

__all__ = [
    "add", "subtract", "multiply", "divide", "pow", "negative", "exp", "log", "log1p",
    "expm1", "sqrt", "abs", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "softplus", "erf",
    "gelu", "maximum", "minimum", "where", "clip", "sign", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal", "logical_not", "logical_and", "logical_or",
    "isfinite", "isnan", "astype", "clone", "square", "clamp",
]


_COMPLEX = (_dt.complex64, _dt.complex128)
_INEXACT = (_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64, *_COMPLEX)


def _arr(b: Any, s: Any, like: Any) -> Any:
    """A Python scalar as a scalar of ``like``'s dtype (for functions, not operators): a
    0-d array, or on CuPy a NumPy scalar (a kernel argument, not a fill kernel)."""
    if isinstance(s, (int, float, bool, complex)):
        return b.scalar(s, like.dtype)
    return s


# ----- arithmetic -----------------------------------------------------------------------
class Add(Op):
    name = "add"
    float_as_0d = True

    operator = _operator.add

    @staticmethod
    def forward(b, x, y):
        return x + y

    @staticmethod
    def backward(node, g):
        return g, g

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return total(out, *tangents)


class Subtract(Op):
    name = "subtract"
    float_as_0d = True

    operator = _operator.sub

    @staticmethod
    def forward(b, x, y):
        return x - y

    @staticmethod
    def backward(node, g):
        return g, -g

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        tx, ty = tangents
        return total(out, tx, None if ty is None else -ty)


def _real_inputs_real(inputs: tuple, grads: Any) -> tuple:
    """``grads`` of a complex result with a real input's gradient made its real part (as
    PyTorch's)."""
    return tuple(d if d is None or not isinstance(x, Tensor) or x.dtype in _COMPLEX
                 else real(d) for x, d in zip(inputs, grads))


def holomorphic(cls: type[Op]) -> type[Op]:
    """Complex gradients for an operation whose rule is written ``g * f'(z)`` and that is
    holomorphic in its inputs: PyTorch's convention (the gradient of a complex ``z`` is
    ``dL/dRe z + i dL/dIm z``) asks for ``g * conj(f'(z))``, which is
    ``conj(rule(conj(g)))``; a real input's gradient is its real part. The complex rule is
    a twin subclass that :func:`xad.graph.record` gives the nodes of complex results; real
    ones run the rule as it is."""
    rule = cls.backward

    def backward(node: Any, g: Any) -> Any:
        grads = rule(node, conj(g))
        if type(grads) is not tuple:
            return conj(grads)
        return _real_inputs_real(node.saved, [None if d is None else conj(d) for d in grads])

    complex_twins[cls] = type(cls.__name__, (cls,), {
        "__module__": cls.__module__, "__qualname__": f"{cls.__qualname__}.complex_twin",
        "__doc__": f"{cls.__name__} with its complex rule.",
        "backward": staticmethod(backward)})
    return cls


@holomorphic
class Multiply(Op):
    name = "multiply"
    float_as_0d = True
    save_inputs = True

    operator = _operator.mul

    @staticmethod
    def forward(b, x, y):
        return x * y

    @staticmethod
    def backward(node, g):  # reads only what each wanted gradient needs (x * 2.0: nothing)
        wants = node.edges  # node.needs_grad(i), inline: the commonest rule
        gx = g * node.input(1) if wants[0] is not None else None
        return gx, (g * node.input(0) if wants[1] is not None else None)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (x, y), (tx, ty) = primals, tangents
        return total(out, None if tx is None else tx * y, None if ty is None else x * ty)


@holomorphic
class Divide(Op):
    name = "divide"
    amp_float32 = "reflected"  # autocast: 2 / x in float32 (PyTorch's __rtruediv__)
    float_as_0d = True
    floating = True
    save_inputs = True

    operator = _operator.truediv

    @staticmethod
    def forward(b, x, y):
        return x / y

    @staticmethod
    def backward(node, g):  # x is read only for y's gradient
        y = node.input(1)
        gx = g / y
        return gx, (-gx * node.input(0) / y) if node.needs_grad(1) else None

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        y, (tx, ty) = primals[1], tangents
        num = tx if ty is None else -(out * ty) if tx is None else tx - out * ty
        return fit(num / y, out)


def _int_pow(b: Any, x: Any, y: Any) -> Any:
    """Signed integers to integer powers, PyTorch's answers at negative exponents on every
    backend: 1 and -1 for bases 1 and -1 (by the exponent's parity), else 0 (NumPy raised,
    JAX returned garbage)."""
    xp = b.xp
    neg = y < 0
    p = xp.pow(x, xp.where(neg, xp.zeros_like(y), y))
    one = xp.ones_like(p)
    small = xp.where(x == one, one, xp.where((x == -one) & ((y & 1) == 0), one,
                                             xp.where(x == -one, -one, xp.zeros_like(p))))
    return xp.where(neg, small, p)


@holomorphic
class Pow(Op):
    """``x ** y`` with a tensor exponent (it saves its result for the exponent's gradient)."""

    name = "pow"
    amp_float32 = True  # autocast's float32 list (PyTorch's CUDA one)
    save_inputs = True
    save_output = True

    @staticmethod
    def forward(b, x, y):
        # a Python-number base in the exponent's dtype (JAX's 1 ** int32[] is int64)
        x = _arr(b, x, y)
        kind = b.xad_dtype(x.dtype).name
        if kind.startswith("int"):
            return _int_pow(b, x, _arr(b, y, x))
        return b.xp.pow(x, y) if kind.startswith("uint") else x ** y  # (JAX's, all bits)

    @staticmethod
    def backward(node, g):
        x, y = node.inputs
        gx = gy = None
        if node.needs_grad(0):
            gx = _pow_base_grad(x, y, g)
        if node.needs_grad(1):
            gy = _pow_exponent_grad(x, y, g, node.output())
        return gx, gy

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (x, y), (tx, ty) = primals, tangents
        a = b = None
        if tx is not None:
            a = _pow_base_grad(x, y, tx)
        if ty is not None:
            b = _pow_exponent_grad(x, y, ty, out)
        return total(out, a, b)


def _pow_exponent_grad(x: Any, y: Tensor, g: Tensor, out: Tensor) -> Tensor:
    """``d(x ** y)/dy = x ** y * log(x)``, 0 where ``x == 0`` and ``y >= 0`` (PyTorch's
    convention: the limit along positive bases); NaN for a negative base."""
    if isinstance(x, (int, float, complex)):  # a Python-number base: its log a Python number
        if x == 0:  # (complex too: a complex scalar made a complex64 log of a complex128 y)
            return where(real(y) >= 0, 0.0, g * out * -math.inf)
        if isinstance(x, complex) or x < 0 and y.dtype in _COMPLEX:
            return g * out * cmath.log(x)
        if x > 0:
            return g * out * math.log(x)
        return g * out * math.nan
    mask = (x == 0) & (real(y) >= 0)  # a complex exponent: by its real part
    return where(mask, 0.0, g * out * log(where(mask, 1.0, x)))  # no 0 * log(0) either way


def _pow_base_grad(x: Tensor, y: Any, g: Tensor) -> Tensor:
    """``g * y * x ** (y - 1)``, 0 where ``y == 0`` (PyTorch's: ``x ** 0`` is constant, and
    the product was ``0 * inf = NaN`` at ``x == 0``, as in ``x ** arange(3)``)."""
    if isinstance(y, (int, float)):
        return _pow_scalar_grad(x, y, g)
    return where(y == 0, 0.0, g * y * x ** (y - 1))


def _pow_scalar_grad(x: Tensor, y: int | float, g: Tensor) -> Tensor:
    if y == 2:
        return g * (x * 2)
    if y == 0:
        return g * 0
    return g * y * pow(x, y - 1)


@holomorphic
class PowScalar(Op):
    """``x ** y`` with a Python-number exponent (in params): saves only ``x``."""

    name = "pow_scalar"
    amp_float32 = True  # autocast's float32 list (PyTorch's CUDA one)
    save_inputs = True

    @staticmethod
    def forward(b, x, exponent):
        if type(exponent) is int and exponent < 0 and b.xad_dtype(x.dtype) not in _INEXACT:
            raise ValueError(f"pow: an integer tensor to the negative integer power "
                             f"{exponent} (PyTorch and NumPy refuse it too); cast to a float "
                             f"dtype first (x.float() ** {exponent})")
        if exponent in (0.5, -0.5) and b.xad_dtype(x.dtype) in (_dt.float32, _dt.float64):
            # PyTorch's square root and its reciprocal, on every backend: C's pow differs
            # at -0.0 and -inf ((-0.0) ** -0.5 is -inf in PyTorch, inf in C); PyTorch's CPU
            # takes C's pow for the half dtypes, and so does xad (the backend's pow)
            r = b.xp.sqrt(x)
            return r if exponent > 0 else 1.0 / r
        return x ** exponent

    @staticmethod
    def backward(node, g):
        return _pow_scalar_grad(node.inputs[0], node.params["exponent"], g)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out, exponent):
        return fit(_pow_scalar_grad(primals[0], exponent, tangents[0]), out)


class Negative(Op):
    name = "negative"

    @staticmethod
    def forward(b, x):
        return -x

    @staticmethod
    def backward(node, g):
        return -g

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return -tangents[0]


# ----- unary math -----------------------------------------------------------------------
@holomorphic
class Exp(Op):
    name = "exp"
    amp_float32 = True  # autocast's float32 list (PyTorch's CUDA one)
    floating = True
    save_output = True

    @staticmethod
    def forward(b, x):
        return b.xp.exp(x)

    @staticmethod
    def backward(node, g):
        return g * node.output()

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return tangents[0] * out


@holomorphic
class Log(Op):
    name = "log"
    amp_float32 = True  # autocast's float32 list (PyTorch's CUDA one)
    floating = True
    save_inputs = True

    @staticmethod
    def forward(b, x):
        return b.xp.log(x)

    @staticmethod
    def backward(node, g):
        return g / node.inputs[0]

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return tangents[0] / primals[0]


@holomorphic
class Log1p(Op):
    name = "log1p"
    amp_float32 = True  # autocast's float32 list (PyTorch's CUDA one)
    floating = True
    save_inputs = True

    @staticmethod
    def forward(b, x):
        return b.xp.log1p(x)

    @staticmethod
    def backward(node, g):
        return g / (node.inputs[0] + 1)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return tangents[0] / (primals[0] + 1)


@holomorphic
class Expm1(Op):
    name = "expm1"
    amp_float32 = True  # autocast's float32 list (PyTorch's CUDA one)
    floating = True
    save_output = True

    @staticmethod
    def forward(b, x):
        xp = b.xp
        if b.xad_dtype(x.dtype) not in _COMPLEX:
            return xp.expm1(x)
        # Complex expm1 from real parts: NumPy's is NaN wherever a part is infinite or NaN
        # (and -0 + 0j at -0 + 0j), CuPy's is exp(x) - 1 (0 at 1e-10 in complex64).
        # expm1(a + ib) = expm1(a) cos b - 2 sin^2(b/2) + i e^a sin b is accurate for small
        # x; exp(x) - 1 gives the standard's answers off the finite, nonzero values
        # (inf + 0j, -1 + 0j, 0 + 0j, ...).
        a, t = xp.real(x), xp.imag(x)
        s = xp.sin(t / 2)
        y = (xp.expm1(a) * xp.cos(t) - 2 * s * s) + 1j * (xp.exp(a) * xp.sin(t))
        return xp.where(xp.isfinite(x) & (x != 0), y, xp.exp(x) - 1)

    @staticmethod
    def backward(node, g):
        return g * (node.output() + 1)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return tangents[0] * (out + 1)


@holomorphic
class Sqrt(Op):
    name = "sqrt"
    floating = True
    save_output = True

    @staticmethod
    def forward(b, x):
        return b.xp.sqrt(x)

    @staticmethod
    def backward(node, g):
        return g / (node.output() * 2)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return tangents[0] / (out * 2)


class Abs(Op):
    name = "abs"
    save_inputs = True

    @staticmethod
    def forward(b, x):
        return b.xp.abs(x)

    @staticmethod
    def backward(node, g):
        x = node.inputs[0]
        if x.dtype.is_floating:
            return g * sign(x)
        a = abs(x)  # complex x: g x / |x| (0 at 0: PyTorch's sgn), in real arithmetic so
        s = g / where(a == 0, 1.0, a)  # second order is right
        return complex_from_parts(real(x) * s, imag(x) * s)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        x, t = primals[0], tangents[0]
        if x.dtype in _COMPLEX:
            return real(conj(x) * t) / out
        return t * sign(x)


@holomorphic
class Sin(Op):
    name = "sin"
    floating = True
    save_inputs = True

    @staticmethod
    def forward(b, x):
        return b.xp.sin(x)

    @staticmethod
    def backward(node, g):
        return g * cos(node.inputs[0])

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return tangents[0] * cos(primals[0])


@holomorphic
class Cos(Op):
    name = "cos"
    floating = True
    save_inputs = True

    @staticmethod
    def forward(b, x):
        return b.xp.cos(x)

    @staticmethod
    def backward(node, g):
        return -g * sin(node.inputs[0])

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return -(tangents[0] * sin(primals[0]))


@holomorphic
class Tan(Op):
    name = "tan"
    amp_float32 = True  # autocast's float32 list (PyTorch's CUDA one)
    floating = True
    save_output = True

    @staticmethod
    def forward(b, x):
        return b.xp.tan(x)

    @staticmethod
    def backward(node, g):
        y = node.output()
        return g * (y * y + 1)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return tangents[0] * (out * out + 1)


@holomorphic
class Tanh(Op):
    name = "tanh"
    floating = True
    save_output = True

    @staticmethod
    def expression(b, x):  # what xad.compile(fuse=True) fuses (xad/compile/fusion.py)
        return b.xp.tanh(x)

    @staticmethod
    def forward(b, x):
        xp = b.xp
        out = xp.tanh(x)
        # (xad_dtype's cache read inline; xp.isdtype costs 0.6 us on NumPy)
        if (b._from_native.get(x.dtype) or b.xad_dtype(x.dtype)) not in _COMPLEX:
            return out
        # the standard's tanh(+-inf + iy), y finite: +-1 + 0j with the sign of y on the zero
        # (C99, hence NumPy and PyTorch, give it sin(2y)'s): flip that zero's sign
        re, im = xp.real(x), xp.imag(x)
        flip = xp.isinf(re) & xp.isfinite(im) & (xp.signbit(xp.imag(out)) != xp.signbit(im))
        return xp.where(flip, xp.conj(out), out)

    @staticmethod
    def backward(node, g):
        y = node.output()
        if node.op is not Tanh:  # the complex twin (holomorphic): the rule composed
            return g * (1 - y * y)
        return tanh_grad(y, g)  # the same, one kernel on CuPy

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return tanh_grad(out, tangents[0])


@holomorphic
class Sigmoid(Op):
    name = "sigmoid"
    floating = True
    save_output = True

    @staticmethod
    def forward(b: Any, x: Any) -> Any:
        xp = b.xp
        # 1 / (1 + exp(-x)) overflows harmlessly to 0 for very negative x
        return 1 / (1 + xp.exp(-x))

    @staticmethod
    def backward(node, g):
        y = node.output()
        if node.op is not Sigmoid:  # the complex twin (holomorphic): the rule composed
            return g * y * (1 - y)
        return sigmoid_grad(y, g)  # the same, one kernel on CuPy

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return sigmoid_grad(out, tangents[0])


class Relu(Op):
    name = "relu"
    save_output = True

    @staticmethod
    def forward(b, x):
        return b.xp.maximum(x, 0)

    @staticmethod
    def backward(node, g):
        return relu_grad(node.output(), g)  # where(y <= 0, 0, g): one kernel on CuPy

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return relu_grad(out, tangents[0])


class Softplus(Op):
    name = "softplus"
    amp_float32 = True  # autocast's float32 list (PyTorch's CUDA one)
    floating = True
    save_inputs = True

    @staticmethod
    def forward(b, x):
        xp = b.xp
        return xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))

    @staticmethod
    def backward(node, g):
        return g * sigmoid(node.inputs[0])

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return tangents[0] * sigmoid(primals[0])


class Erf(Op):
    name = "erf"
    floating = True
    save_inputs = True

    @staticmethod
    def forward(b, x):
        return b.erf(x)

    @staticmethod
    def backward(node, g):
        x = node.inputs[0]
        return g * (2 / math.sqrt(math.pi)) * exp(-(x * x))

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        x = primals[0]
        return tangents[0] * (2 / math.sqrt(math.pi)) * exp(-(x * x))


# ----- binary functions -----------------------------------------------------------------
class Maximum(Op):
    name = "maximum"
    save_inputs = True

    @staticmethod
    def forward(b, x, y):
        like = x if not isinstance(x, (int, float)) else y
        return b.xp.maximum(_arr(b, x, like), _arr(b, y, like))

    @staticmethod
    def backward(node, g):
        x, y = node.inputs
        return _selection_grads(node, g, x > y, x < y, x == y)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (x, y), (tx, ty) = primals, tangents
        return _selection_jvp(out, x > y, x == y, tx, ty)


class Minimum(Op):
    name = "minimum"
    save_inputs = True

    @staticmethod
    def forward(b, x, y):
        like = x if not isinstance(x, (int, float)) else y
        return b.xp.minimum(_arr(b, x, like), _arr(b, y, like))

    @staticmethod
    def backward(node, g):
        x, y = node.inputs
        return _selection_grads(node, g, x < y, x > y, x == y)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (x, y), (tx, ty) = primals, tangents
        return _selection_jvp(out, x < y, x == y, tx, ty)


def _selection_grads(node: Any, g: Tensor, x_wins: Tensor, y_wins: Tensor,
                     tie: Tensor) -> tuple:
    """All of ``g`` to the selected input, half to each on a tie, all to both where either
    is NaN (none wins nor ties there: PyTorch's; ``y`` alone had it). Chosen by ``where``,
    not multiplied by a 0/1 weight: an infinite ``g`` times 0 would be NaN where the
    function does not depend on the input at all."""
    half = g * 0.5
    gx = where(tie, half, where(y_wins, 0.0, g)) if node.needs_grad(0) else None
    gy = where(tie, half, where(x_wins, 0.0, g)) if node.needs_grad(1) else None
    return gx, gy


def _selection_jvp(out: Tensor, x_wins: Any, tie: Any, tx: Any, ty: Any) -> Tensor:
    """The tangent of the selected input, the mean of both on a tie (the gradient's rule)."""
    a, b = 0.0 if tx is None else tx, 0.0 if ty is None else ty
    return fit(where(x_wins, a, where(tie, (tx if ty is None else ty if tx is None else a + b)
                                      * 0.5, b)), out)


class Where(Op):
    """``where(cond, x, y)``; the condition's array is a parameter (no gradient, and only
    it is kept for backward, so ``x`` and ``y`` may change in place afterwards)."""

    name = "where"

    @staticmethod
    def forward(b, x, y, cond):
        like = x if not isinstance(x, (int, float, complex)) else y  # (a complex fill, 1j)
        if isinstance(like, (int, float)):
            like = b.xp.asarray(float(like), device=b.device)
        return b.xp.where(cond, _arr(b, x, like), _arr(b, y, like))

    @staticmethod
    def array_forward(b, x, y, cond):
        return b.xp.where(cond, x, y)

    @staticmethod
    def backward(node, g):
        c = Tensor._make(node.params["cond"], node.backend)
        return (where(c, g, 0.0) if node.needs_grad(0) else None), \
            (where(c, 0.0, g) if node.needs_grad(1) else None)

    @staticmethod
    def batch(args, batched, cond, batched_params=()):
        like = args[0] if isinstance(args[0], Tensor) else args[1]
        c = Tensor._make(cond, like._backend)
        x, y, c = align((*args, c), (*batched, "cond" in batched_params))
        return apply(Where, x, y, cond=c._array), True

    @staticmethod
    def jvp(primals, tangents, out, cond):
        c = Tensor._make(cond, out._backend)
        tx, ty = tangents
        return fit(where(c, 0.0 if tx is None else tx, 0.0 if ty is None else ty), out)


class Clip(Op):
    """``clip`` with number bounds (or ``None``). ``tie`` is the share of the gradient that
    ``x`` gets where it equals a bound: JAX's 0.5 for :func:`clip`, PyTorch's 1 for
    ``Tensor.clamp``."""

    name = "clip"
    save_inputs = True

    @staticmethod
    def forward(b, x, lo, hi, tie):
        return b.xp.clip(x, lo, hi)

    @staticmethod
    def backward(node, g):
        x, lo, hi = node.inputs
        keep = _within(x, lo, hi, strict=False)
        if keep is None:
            return g, None, None
        if node.params["tie"] == 1:
            return where(keep, g, 0.0), None, None
        inside = _within(x, lo, hi, strict=True)
        return where(inside, g, where(keep, g * node.params["tie"], 0.0)), None, None

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out, tie):
        (x, lo, hi), t = primals, tangents[0]
        if t is None:
            return None  # the bounds' tangents: none, as their gradients
        keep = _within(x, lo, hi, strict=False)
        if keep is None:
            return t
        if tie == 1:
            return where(keep, t, 0.0)
        return where(_within(x, lo, hi, strict=True), t, where(keep, t * tie, 0.0))


def _within(x: Tensor, lo: Any, hi: Any, strict: bool) -> Tensor | None:
    """Where ``lo <= x <= hi`` (``<`` if ``strict``); ``None`` without bounds."""
    m = None
    if lo is not None:
        m = x > lo if strict else x >= lo
    if hi is not None:
        u = x < hi if strict else x <= hi
        m = u if m is None else logical_and(m, u)
    return m


# ----- no-gradient elementwise ------------------------------------------------------------
def _nograd(name_: str, fn: Any) -> type[Op]:
    return type(name_.title().replace("_", ""), (Op,), {
        "name": name_, "differentiable": False,
        "forward": staticmethod(fn), "batch": classmethod(elementwise_batch)})


def _sign(b: Any, x: Any) -> Any:
    """``sign``; a complex zero gives ``0 + 0j`` as the standard says (array_api_strict's
    ``sign(-0 - 0j)`` is ``-0 + 0j``)."""
    s = b.xp.sign(x)
    if b.xad_dtype(x.dtype) in _COMPLEX:
        s = b.xp.where(x == 0, b.xp.zeros_like(s), s)
    return s


Sign = _nograd("sign", _sign)
Equal = _nograd("equal", lambda b, x, y: x == y)
NotEqual = _nograd("not_equal", lambda b, x, y: x != y)
def _ordered(op: str, *values: Any) -> None:
    """Refuse complex operands of an ordering (comparisons, ``maximum``, ``minimum``,
    ``clip``): NumPy, CuPy and JAX order them by real part then imaginary part, where
    PyTorch and the standard's strict library raise (a number without an error on some
    backends only). Checked on xad's dtypes where the functions take their arguments, so
    the kernels (and a compiled replay) pay nothing."""
    for v in values:
        if isinstance(v, Tensor):  # (the dtype cache read inline, as Tensor.dtype does)
            if (v._backend._from_native.get(v._array.dtype) or v.dtype) in _COMPLEX:
                raise _no_order(op)
        elif isinstance(v, complex) or hasattr(v, "dtype") and "complex" in str(v.dtype):
            raise _no_order(op)  # a Python or NumPy complex number, a NumPy array


def _no_order(op: str) -> TypeError:
    return TypeError(f"{op}: complex numbers have no order (PyTorch refuses too); compare "
                     f"their .real, .imag or .abs()")


Less = _nograd("less", lambda b, x, y: x < y)
LessEqual = _nograd("less_equal", lambda b, x, y: x <= y)
Greater = _nograd("greater", lambda b, x, y: x > y)
GreaterEqual = _nograd("greater_equal", lambda b, x, y: x >= y)
LogicalNot = _nograd("logical_not", lambda b, x: b.xp.logical_not(x))
LogicalAnd = _nograd("logical_and", lambda b, x, y: b.xp.logical_and(x, y))
LogicalOr = _nograd("logical_or", lambda b, x, y: b.xp.logical_or(x, y))
IsFinite = _nograd("isfinite", lambda b, x: b.xp.isfinite(x))
IsNan = _nograd("isnan", lambda b, x: b.xp.isnan(x))


class Astype(Op):
    name = "astype"

    @staticmethod
    def forward(b, x, dtype, src):
        return b.xp.astype(x, dtype)

    @staticmethod
    def backward(node, g):
        src = node.backend.xad_dtype(node.params["src"])
        if g.dtype in _COMPLEX and src not in _COMPLEX:
            g = real(g)  # a real input made complex: the real part of its gradient
        return astype(g, src, copy=False)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out, dtype, src):
        return astype(tangents[0], out.dtype) if out.dtype.is_floating else None


class Clone(Op):
    name = "clone"

    @staticmethod
    def forward(b, x):
        return b.xp.asarray(x, copy=True)

    @staticmethod
    def backward(node, g):
        return g

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        return clone(tangents[0])


# ----- the functions users call --------------------------------------------------------
def add(x: Any, y: Any) -> Tensor:
    """``x + y`` with broadcasting.

    Example:
        >>> import xad
        >>> xad.add(xad.tensor([1.0]), 2.0).tolist()
        [3.0]
    """
    return binary(Add, x, y)


def subtract(x: Any, y: Any) -> Tensor:
    """``x - y``."""
    return binary(Subtract, x, y)


def multiply(x: Any, y: Any) -> Tensor:
    """``x * y``."""
    return binary(Multiply, x, y)


def divide(x: Any, y: Any) -> Tensor:
    """``x / y``."""
    return binary(Divide, x, y)


def pow(x: Any, y: Any) -> Tensor:
    """``x ** y``.

    Example:
        >>> import xad
        >>> xad.pow(xad.tensor([3.0]), 2).tolist()
        [9.0]
    """
    if isinstance(y, (int, float)) and isinstance(x, Tensor):
        if type(y) is bool and x.dtype is _dt.bool_:  # PyTorch's: bool (x, or all True)
            return logical_or(x, not y)
        y = int(y) if isinstance(y, int) else float(y)  # (a NumPy float64 would promote)
        x, y = _weak(x, y)  # an integer tensor with a float exponent: a float result
        return unary(PowScalar, x, exponent=y)
    if isinstance(y, Tensor) and y.dtype is _dt.bool_ and (
            type(x) is bool or isinstance(x, Tensor) and x.dtype is _dt.bool_):
        raise TypeError(f"pow: a bool base with a bool exponent tensor (shape "
                        f"{tuple(y.shape)}) is refused by PyTorch and the standard (NumPy gave "
                        f"int8, JAX int32); cast one with astype(xad.int64) or .long()")
    return binary(Pow, x, y)


def square(x: Tensor) -> Tensor:
    """``x * x``; of a bool tensor int64 (PyTorch's; it was bool, ``x & x``).

    Example:
        >>> import xad
        >>> xad.square(xad.tensor([True, False])).tolist()
        [1, 0]
    """
    if isinstance(x, Tensor) and x.dtype is _dt.bool_:
        x = astype(x, _dt.int64)
    return apply(Multiply, x, x)


def negative(x: Tensor) -> Tensor:
    """``-x``."""
    return unary(Negative, x)


def _unary(op: type[Op], doc: str) -> Callable[[Tensor], Tensor]:
    def f(x: Tensor) -> Tensor:
        return unary(op, x)
    f.__name__ = f.__qualname__ = op.name  # the name users call (docs, reprs)
    f.__doc__ = doc
    return f


exp = _unary(Exp, "Elementwise e**x.\n\nExample:\n    >>> import xad\n"
             "    >>> xad.exp(xad.tensor([0.0])).tolist()\n    [1.0]\n")
log = _unary(Log, "Natural logarithm.")
log1p = _unary(Log1p, "log(1 + x), accurate for small x.")
expm1 = _unary(Expm1, "exp(x) - 1, accurate for small x.")
sqrt = _unary(Sqrt, "Square root.")
abs = _unary(Abs, "Absolute value (gradient 0 at 0).")
sin = _unary(Sin, "Sine.")
cos = _unary(Cos, "Cosine.")
tan = _unary(Tan, "Tangent.")
tanh = _unary(Tanh, "Hyperbolic tangent.\n\nExample:\n    >>> import xad\n"
              "    >>> xad.tanh(xad.tensor([0.0])).tolist()\n    [0.0]\n")
sigmoid = _unary(Sigmoid, "Logistic sigmoid 1 / (1 + exp(-x)).")
relu = _unary(Relu, "max(x, 0) (gradient 0 at 0, as in PyTorch).")
softplus = _unary(Softplus, "log(1 + exp(x)), computed stably.")
erf = _unary(Erf, "The error function (a backend helper: the standard has none).")


def sign(x: Tensor) -> Tensor:
    """Sign of ``x`` (-1, 0 or 1; ``z / |z|`` of a complex ``z``, 0 at 0); no gradient. A
    bool tensor is its own sign (PyTorch's; NumPy refused it with a ``UFuncTypeError``).

    Example:
        >>> import xad
        >>> xad.sign(xad.tensor([-2.0, 0.0, 3.0])).tolist()
        [-1.0, 0.0, 1.0]
    """
    if isinstance(x, Tensor) and x.dtype is _dt.bool_:
        return clone(x)
    return unary(Sign, x)


isfinite = _unary(IsFinite, "Whether each element is finite.")
isnan = _unary(IsNan, "Whether each element is NaN.")
logical_not = _unary(LogicalNot, "Elementwise not.")


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU: x * Phi(x) with the exact normal CDF, or PyTorch's ``approximate="tanh"``.

    Example:
        >>> import xad
        >>> round(xad.gelu(xad.tensor([1.0])).item(), 4)
        0.8413
    """
    if approximate == "none":
        return _fused_gelu(x)  # x * (erf(x / sqrt(2)) + 1) * 0.5, one kernel on CuPy
    if approximate == "tanh":
        return x * 0.5 * (tanh((x + x * x * x * 0.044715) * math.sqrt(2 / math.pi)) + 1)
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def maximum(x: Any, y: Any) -> Tensor:
    """Elementwise maximum; at ties each input gets half the gradient."""
    _ordered("maximum", x, y)
    return binary(Maximum, x, y)


def minimum(x: Any, y: Any) -> Tensor:
    """Elementwise minimum; at ties each input gets half the gradient."""
    _ordered("minimum", x, y)
    return binary(Minimum, x, y)


def where(condition: Any, x: Any, y: Any) -> Tensor:
    """``x`` where ``condition`` holds, else ``y``.

    Example:
        >>> import xad
        >>> c = xad.tensor([True, False])
        >>> xad.where(c, xad.tensor([1.0, 2.0]), 0.0).tolist()
        [1.0, 0.0]
    """
    like = next((a for a in (x, y, condition) if isinstance(a, Tensor)), None)
    if like is None:  # host data only: the condition goes to the current backend
        like = condition = tensor(condition)
    b = like._backend
    c = condition if isinstance(condition, Tensor) else _from_host(condition, like)
    x, y = (a if isinstance(a, Tensor) or type(a) in (int, float, bool, complex) else
            _from_host(a, like) for a in (x, y))
    for name_, a in (("condition", c), ("x", x), ("y", y)):
        if isinstance(a, Tensor) and a._backend is not b:
            raise RuntimeError(
                f"where: {name_} (shape {tuple(a.shape)}) is on {a._backend.label} but "
                f"{_which(like, condition, x)} is on {b.label}; move it with .to(...)")
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        # two Python numbers: a float makes the result the default floating dtype
        x = tensor(float(x) if isinstance(y, float) else x, backend=b)
    if isinstance(x, Tensor) and isinstance(y, Tensor):
        x, y = _promote(x, y)
    elif isinstance(x, Tensor):  # a Python number meets a tensor as in x + number
        x, y = _weak(x, y)
    else:
        y, x = _weak(y, x)
    return apply(Where, x, y, cond=c._array)


def _from_host(a: Any, like: Tensor) -> Tensor:
    """Host data (a bool, a list, a NumPy array) as a tensor on ``like``'s backend, floats in
    ``like``'s floating dtype."""
    t = tensor(a, backend=like._backend)
    if t.dtype.is_floating and like.dtype.is_floating and t.dtype is not like.dtype:
        t = astype(t, like.dtype)
    return t


def _which(like: Tensor, condition: Any, x: Any) -> str:
    return "the condition" if like is condition else "x" if like is x else "y"


def clip(x: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Limit values to ``[min, max]`` (either may be ``None``, a number or a tensor). An
    integer ``x`` with a float bound gives a float result. At a bound the gradient is shared
    as JAX's ``clip`` shares it: half to ``x``, half to a tensor bound (``x.clamp``, PyTorch's,
    gives ``x`` all of it).

    Example:
        >>> import xad
        >>> xad.clip(xad.tensor([1, 2, 3]), 1.5, 2.5).tolist()
        [1.5, 2.0, 2.5]
    """
    _ordered("clip", x, min, max)
    x, min, max = _clip_args(x, min, max)
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        if min is not None:
            x = maximum(x, min)
        return minimum(x, max) if max is not None else x
    return apply(Clip, x, min, max, tie=0.5)


def clamp(x: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """PyTorch's ``clamp``: :func:`clip` with PyTorch's gradients: all of it to ``x`` where
    ``min <= x <= max`` (bounds included), to ``min`` where ``x < min``, to ``max`` where
    ``x > max``.

    Example:
        >>> import xad
        >>> x = xad.tensor([0.0, 1.0], requires_grad=True)
        >>> xad.clamp(x, 0.0, 1.0).sum().backward(); x.grad.tolist()
        [1.0, 1.0]
    """
    if min is None and max is None:
        raise ValueError("clamp: give min or max (or both), as PyTorch requires; "
                         "clip(x) with neither returns x unchanged")
    _ordered("clamp", x, min, max)
    min, max = (int(v) if type(v) is bool else v for v in (min, max))
    if isinstance(min, (int, float)) and isinstance(max, (int, float)) and min > max:
        # PyTorch's min(max(x, min), max): max everywhere but at NaN, no gradient to x (the
        # standard's clip refuses min > max); a float bound makes integers float
        v = float(max) if float in (type(min), type(max)) else max
        return where(x == x, v, x)
    x, min, max = _clip_args(x, min, max)
    if not (isinstance(min, Tensor) or isinstance(max, Tensor)):
        return apply(Clip, x, min, max, tie=1)
    # x where it is kept, else the bound (its gradient goes there); NaN (in x or in a
    # bound) stays NaN, as PyTorch's min(max(x, min), max)
    nan = isnan(x) if x.dtype.is_floating else None
    if min is not None:
        x = where(x >= min if nan is None else logical_or(x >= min, nan), x, min)
        nan = isnan(x) if nan is not None else None
    if max is None:
        return x
    return where(x <= max if nan is None else logical_or(x <= max, nan), x, max)


def _clip_args(x: Tensor, lo: Any, hi: Any) -> tuple:
    """``x``, ``lo``, ``hi`` of one dtype where a bound is a tensor or a float and ``x``
    is integral (a float result, never a truncated bound)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"clip: x must be a tensor, got {type(x).__name__}")
    lo, hi = (v if v is None or isinstance(v, Tensor) else _operand(Clip, v, x)
              for v in (lo, hi))
    for bound in (lo, hi):
        if isinstance(bound, Tensor):
            x, _ = _promote(x, bound)
        elif type(bound) is float:
            x, _ = _weak(x, bound)
        elif type(bound) is int and x.dtype is _dt.bool_:  # bools with a number: int64,
            x = astype(x, _dt.int64)  # as PyTorch's (clamp(mask, min=2) was all True)
        elif type(bound) is int:  # outside an integer dtype's range: OverflowError, as
            _weak(x, bound, "clamp")  # elsewhere (strict wrapped it)
    lo, hi = (_promote(b_, x)[0] if isinstance(b_, Tensor) else b_ for b_ in (lo, hi))
    return x, lo, hi


def equal(x: Any, y: Any) -> Tensor:
    """Elementwise ``x == y`` (a bool tensor)."""
    return binary(Equal, x, y)


def not_equal(x: Any, y: Any) -> Tensor:
    """Elementwise ``x != y``."""
    return binary(NotEqual, x, y)


def less(x: Any, y: Any) -> Tensor:
    """Elementwise ``x < y``."""
    _ordered("less", x, y)
    return binary(Less, x, y)


def less_equal(x: Any, y: Any) -> Tensor:
    """Elementwise ``x <= y``."""
    _ordered("less_equal", x, y)
    return binary(LessEqual, x, y)


def greater(x: Any, y: Any) -> Tensor:
    """Elementwise ``x > y``."""
    _ordered("greater", x, y)
    return binary(Greater, x, y)


def greater_equal(x: Any, y: Any) -> Tensor:
    """Elementwise ``x >= y``."""
    _ordered("greater_equal", x, y)
    return binary(GreaterEqual, x, y)


def logical_and(x: Any, y: Any) -> Tensor:
    """Elementwise and."""
    return binary(LogicalAnd, x, y)


def logical_or(x: Any, y: Any) -> Tensor:
    """Elementwise or."""
    return binary(LogicalOr, x, y)


def astype(x: Tensor, dtype: _dt.DType | str, /, *, copy: bool = True,
           device: Any = None) -> Tensor:
    """Cast to an xad dtype; differentiable between floating dtypes. A new tensor unless
    ``copy=False`` and ``x`` already has ``dtype`` (then ``x`` itself); ``device`` must be
    ``x``'s (move a tensor with ``.to``).

    Example:
        >>> import xad
        >>> xad.astype(xad.tensor([1.5]), xad.int64).tolist()
        [1]
    """
    if device is not None and device != x._backend.device:
        raise ValueError(f"astype: device {device!r} is not the tensor's ({x._backend.label}); "
                         f"move it with .to(backend_or_device)")
    d = _dt.as_dtype(dtype)
    native = x._backend.dtype(d)
    if native == x._array.dtype:
        return clone(x) if copy else x
    if not (d.is_floating or d in _COMPLEX and (x.dtype.is_floating or x.dtype in _COMPLEX)):
        return unary(_AstypeNoGrad, x, dtype=native, src=x._array.dtype)
    return unary(Astype, x, dtype=native, src=x._array.dtype)


class _AstypeNoGrad(Astype):
    differentiable = False


def clone(x: Tensor) -> Tensor:
    """A copy with its own array (differentiable)."""
    return unary(Clone, x)
