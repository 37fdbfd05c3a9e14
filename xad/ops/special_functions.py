"""Special functions PyTorch has and the standard lacks, each a primitive whose forward is
the backend's (the library's own where it has one, :mod:`xad.special_fallback` otherwise):
``erfc`` (exact in the tail, not ``1 - erf``), ``erfinv``, ``ndtri`` (the inverse of the
normal CDF), ``lgamma`` (``log |Gamma|`` for
every real argument, PyTorch's convention), ``digamma`` and ``fmod`` (C's, exact). Their
gradients are PyTorch's; ``digamma``'s (the trigamma function) is composed of xad's
operations, so every order differentiates."""

from __future__ import annotations

import math
from typing import Any

from .. import dtypes as _dt
from ..tensor import Tensor
from ._apply import Op, binary, unary
from .batching import elementwise_batch
from .creation import asarray
from .elementwise import _arr, astype, exp, log, sin, where
from .elementwise_math import _no_zero_divisor, trunc
from .tangent import total

__all__ = ["erfc", "erfinv", "ndtri", "lgamma", "digamma", "fmod", "gammainc", "gammaincc",
           "igamma", "igammac", "bessel_j0", "bessel_j1"]

_K = 2.0 / math.sqrt(math.pi)
_SHIFT = 10
# trigamma(z) ~ 1/z + 1/(2 z^2) + sum B_2k / z^(2k+1)
_TRIGAMMA = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)


def trigamma(x: Tensor) -> Tensor:
    """``d digamma(x) / dx`` for every real ``x`` (digamma's gradient), composed: Stirling's
    series after a shift of ten, ``pi^2 / sin^2(pi x) - trigamma(1 - x)`` below 0."""
    neg = x < 0
    z = where(neg, 1.0 - x, x)
    shift = 1.0 / (z * z)
    for k in range(1, _SHIFT):
        shift = shift + 1.0 / ((z + k) * (z + k))
    s = z + _SHIFT
    w = 1.0 / s
    w2 = w * w
    acc = w2 * _TRIGAMMA[-1]
    for c in reversed(_TRIGAMMA[:-1]):
        acc = (acc + c) * w2
    pos = shift + w + 0.5 * w2 + acc * w
    r = sin(where(neg, x, 0.5) * math.pi)  # 0.5 where unused: no 1/0 in its gradient
    return where(neg, math.pi ** 2 / (r * r) - pos, pos)


def floating_input(x: Any) -> Tensor:
    """``x`` as a floating tensor (integers and bools in the default float32, as PyTorch)."""
    x = x if isinstance(x, Tensor) else asarray(x)
    return x if x.dtype.is_floating else astype(x, _dt.float32)


def _unary(name_: str, derivative: Any, amp_float32: bool = False,
           from_output: bool = False) -> type[Op]:
    """A unary primitive: ``b.<name_>`` forward, ``g * derivative(x)`` backward (of the
    output where ``from_output``)."""
    def rule(node: Any) -> Tensor:
        return derivative(node.output() if from_output else node.inputs[0])

    def jvp(primals: Any, tangents: Any, out: Any) -> Tensor:
        return tangents[0] * derivative(out if from_output else primals[0])

    return type(name_.title(), (Op,), {
        "name": name_, "save_inputs": not from_output, "save_output": from_output,
        "floating": True, "amp_float32": amp_float32,
        "forward": staticmethod(lambda b, x: getattr(b, name_)(x)),
        "backward": staticmethod(lambda node, g: g * rule(node)),
        "jvp": staticmethod(jvp), "batch": classmethod(elementwise_batch)})


Erfc = _unary("erfc", lambda x: exp(-(x * x)) * -_K)
# autocast: erfinv is on PyTorch's CUDA float32 list
Erfinv = _unary("erfinv", lambda y: exp(y * y) * (math.sqrt(math.pi) / 2), amp_float32=True,
                from_output=True)
# ndtri'(p) = sqrt(2 pi) exp(ndtri(p)^2 / 2), of the output: every order differentiates
Ndtri = _unary("ndtri", lambda y: exp(y * y * 0.5) * math.sqrt(2 * math.pi), from_output=True)
Digamma = _unary("digamma", trigamma)
# J0' = -J1, J1' = J0 - J1 / x (1/2 at 0): PyTorch's have no gradient
Bessel_J0 = _unary("bessel_j0", lambda x: -bessel_j1(x))
Bessel_J1 = _unary("bessel_j1", lambda x: _bessel_j1_slope(x))
Lgamma = _unary("lgamma", lambda x: digamma(x))


class Fmod(Op):
    name = "fmod"
    save_inputs = True

    @staticmethod
    def forward(b, x, y):
        _no_zero_divisor(b, x, y, "fmod")
        like = x if not isinstance(x, (int, float)) else y
        return b.fmod(_arr(b, x, like), _arr(b, y, like))

    @staticmethod
    def backward(node, g):  # PyTorch's: 1 and -trunc(x / y)
        x, y = node.inputs
        return g, (-g * trunc(x / y) if node.needs_grad(1) else None)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (x, y), (tx, ty) = primals, tangents
        return total(out, tx, None if ty is None else -(ty * trunc(x / y)))


def _no_gradient_to_a(name_: str) -> NotImplementedError:
    return NotImplementedError(f"{name_}: the derivative with respect to input (a, the first "
                               f"argument) is not implemented, as in PyTorch; pass a.detach() "
                               f"for the gradient with respect to other (x)")


class Gammainc(Op):
    """``P(a, x)``; gradient PyTorch's ``x^(a-1) e^-x / Gamma(a)`` to ``x``, none to ``a``."""

    name = "gammainc"
    floating = True
    save_inputs = True
    upper = False

    @classmethod
    def forward(cls, b, a, x):
        if isinstance(a, (int, float)):  # a Python number: an array like the other
            a = b.xp.full_like(x, a)
        elif isinstance(x, (int, float)):
            x = b.xp.full_like(a, x)
        return b.gammainc(a, x, cls.upper)

    @classmethod
    def derivative(cls, a: Any, x: Tensor) -> Tensor:
        d = exp((a - 1) * log(x) - x - lgamma(a))
        return -d if cls.upper else d

    @classmethod
    def backward(cls, node, g):
        if node.needs_grad(0):
            raise _no_gradient_to_a(cls.name)
        return None, g * cls.derivative(*node.inputs)

    batch = classmethod(elementwise_batch)

    @classmethod
    def jvp(cls, primals, tangents, out):
        if tangents[0] is not None:
            raise _no_gradient_to_a(cls.name)
        return tangents[1] * cls.derivative(*primals)


class Gammaincc(Gammainc):
    """``Q(a, x) = 1 - P(a, x)``; gradient ``-x^(a-1) e^-x / Gamma(a)`` to ``x``."""

    name = "gammaincc"
    upper = True


def _bessel_j1_slope(x: Tensor) -> Tensor:
    zero = x == 0
    xs = where(zero, 1.0, x)
    return where(zero, 0.5, bessel_j0(x) - bessel_j1(xs) / xs)


def erfc(x: Tensor) -> Tensor:
    """``1 - erf(x)``, computed directly: exact in the tail, where ``1 - erf`` is 0.

    Example:
        >>> import xad
        >>> f"{xad.erfc(xad.tensor([10.0], dtype=xad.float64)).item():.12e}"
        '2.088487583763e-45'
    """
    return unary(Erfc, x)


def erfinv(x: Tensor) -> Tensor:
    """The inverse error function (``+-inf`` at ``+-1``, NaN beyond).

    Example:
        >>> import xad
        >>> round(xad.erfinv(xad.tensor([0.5], dtype=xad.float64)).item(), 12)
        0.476936276204
    """
    return unary(Erfinv, x)


def ndtri(input: Tensor) -> Tensor:  # noqa: A002
    """The inverse of the standard normal CDF: the ``x`` with ``ndtr(x) = p`` (``-inf`` at 0,
    ``inf`` at 1, NaN outside ``[0, 1]``); gradient ``sqrt(2 pi) exp(x^2 / 2)``.

    Example:
        >>> import xad
        >>> round(xad.ndtri(xad.tensor([0.975], dtype=xad.float64)).item(), 12)
        1.95996398454
    """
    return unary(Ndtri, floating_input(input))


def lgamma(x: Tensor) -> Tensor:
    """``log |Gamma(x)|`` for every real ``x`` (PyTorch's and C's convention: ``inf`` at the
    non-positive integers); gradient ``digamma(x)``.

    Example:
        >>> import xad
        >>> round(xad.lgamma(xad.tensor([-2.5], dtype=xad.float64)).item(), 10)
        -0.0562437165
    """
    return unary(Lgamma, x)


def digamma(x: Tensor) -> Tensor:
    """``d/dx log Gamma(x)`` (PyTorch's: ``-inf`` at ``+0``, NaN at negative integers).

    Example:
        >>> import xad
        >>> round(xad.digamma(xad.tensor([1.0], dtype=xad.float64)).item(), 12)
        -0.577215664902
    """
    return unary(Digamma, x)


def fmod(x1: Any, x2: Any) -> Tensor:
    """C's ``fmod``: ``x1 - trunc(x1 / x2) * x2`` exactly, the sign of ``x1`` (PyTorch's;
    :func:`xad.remainder` takes the sign of ``x2``); gradients 1 and ``-trunc(x1 / x2)``.

    Example:
        >>> import xad
        >>> xad.fmod(xad.tensor([5.5, -5.5]), 2.0).tolist()
        [1.5, -1.5]
    """
    return binary(Fmod, x1, x2)


def gammainc(input: Any, other: Any) -> Tensor:  # noqa: A002
    """The regularized lower incomplete gamma function ``P(a, x) = gamma(a, x) / Gamma(a)``
    for ``a = input``, ``x = other`` (PyTorch's ``special.gammainc``; Cephes' ``igam``);
    gradient ``x^(a-1) e^-x / Gamma(a)`` to ``x``. As PyTorch's, none to ``a``: backward
    through an ``a`` that requires grad raises ``NotImplementedError``.

    Example:
        >>> import xad
        >>> round(xad.gammainc(xad.tensor([2.0], dtype=xad.float64), 3.0).item(), 12)
        0.800851726529
    """
    return binary(Gammainc, input, other)


def gammaincc(input: Any, other: Any) -> Tensor:  # noqa: A002
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``, computed
    directly (exact in the tail); gradient ``-x^(a-1) e^-x / Gamma(a)`` to ``x``, none to
    ``a`` (as PyTorch's).

    Example:
        >>> import xad
        >>> f"{xad.gammaincc(xad.tensor([2.0], dtype=xad.float64), 50.0).item():.10e}"
        '9.8366242246e-21'
    """
    return binary(Gammaincc, input, other)


igamma, igammac = gammainc, gammaincc  # PyTorch's torch.igamma and torch.igammac


def bessel_j0(input: Tensor) -> Tensor:  # noqa: A002
    """The Bessel function of the first kind of order 0 (Cephes' ``j0``); gradient ``-J1``
    (PyTorch's ``special.bessel_j0`` has none).

    Example:
        >>> import xad
        >>> round(xad.bessel_j0(xad.tensor([1.0], dtype=xad.float64)).item(), 12)
        0.765197686558
    """
    return unary(Bessel_J0, floating_input(input))


def bessel_j1(input: Tensor) -> Tensor:  # noqa: A002
    """The Bessel function of the first kind of order 1 (Cephes' ``j1``); gradient
    ``J0 - J1 / x`` (``1/2`` at 0).

    Example:
        >>> import xad
        >>> round(xad.bessel_j1(xad.tensor([1.0], dtype=xad.float64)).item(), 12)
        0.440050585745
    """
    return unary(Bessel_J1, floating_input(input))
