"""More of ``torch.special`` composed of xad's operations (every backend has them): the
normal CDF ``ndtr`` and its log ``log_ndtr``, the scaled ``erfcx``, ``xlog1py``, ``entr``
and the modified Bessel functions ``i0``, ``i0e``, ``i1``, ``i1e``. Their gradients come
from the operations' rules, analytically PyTorch's (``ndtr' = exp(-x^2/2)/sqrt(2 pi)``,
``i0' = i1``, ``i1' = i0 - i1/x``, ...); every masked branch sees a harmless stand-in
argument, so no ``0 * inf`` reaches a backward pass.

- ``erfcx``: ``exp(x^2) erfc(x)`` below 3 (``x^2`` split in an exact part and a small one),
  beyond, the continued fraction ``1 / (sqrt(pi) (x + (1/2)/(x + 1/(x + ...))))``.
- ``log_ndtr``: ``log(erfcx(-x/sqrt 2)/2) - x^2/2`` below -1 (finite far past the
  underflow of ``ndtr``), ``log1p(-erfc(x/sqrt 2)/2)`` above (PyTorch's split).
- Bessel: the power series (positive terms) up to 30, the asymptotic series of
  ``exp(-x) I_nu(x) sqrt(2 pi x)`` beyond.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from .. import dtypes as _dt
from ..context import context
from ..tensor import Tensor
from .elementwise import abs, exp, isnan, log, log1p, sign, sqrt, where
from .elementwise_math import floor, isinf
from .special_functions import digamma, erfc, lgamma, trigamma
from .special_functions import floating_input as _floating
from .torch_compositions import floating_pair

__all__ = ["ndtr", "log_ndtr", "erfcx", "xlog1py", "entr", "i0", "i0e", "i1", "i1e", "zeta",
           "polygamma", "multigammaln", "mvlgamma"]

_SQRT_HALF = math.sqrt(0.5)
_ERFCX_SPLIT, _N_FRACTION = 3.0, 60  # continued fraction from 3: 1e-16 relative
_BESSEL_SPLIT, _N_SERIES, _N_ASYMPTOTIC = 30.0, 80, 24


def ndtr(input: Tensor) -> Tensor:  # noqa: A002
    """The standard normal CDF ``(1 + erf(x / sqrt 2)) / 2``, computed as
    ``erfc(-x / sqrt 2) / 2`` (relative accuracy in the lower tail).

    Example:
        >>> import xad
        >>> f"{xad.ndtr(xad.tensor([-10.0], dtype=xad.float64)).item():.10e}"
        '7.6198530242e-24'
    """
    x = _floating(input)
    return erfc(x * -_SQRT_HALF) * 0.5


def erfcx(input: Tensor) -> Tensor:  # noqa: A002
    """The scaled complementary error function ``exp(x^2) erfc(x)`` (finite where ``erfc``
    underflows; ``inf`` below about -26.6, as PyTorch's).

    Example:
        >>> import xad
        >>> round(xad.erfcx(xad.tensor([100.0], dtype=xad.float64)).item(), 16)
        0.0056416137829894
    """
    x = _floating(input)
    far = x >= _ERFCX_SPLIT
    xs = where(far, 0.0, x)
    hi = floor(xs * 4096.0) / 4096.0  # 12 fraction bits: hi * hi is exact
    near = exp(hi * hi) * exp((xs - hi) * (xs + hi)) * erfc(xs)
    xl = where(far, x, _ERFCX_SPLIT)
    f = xl
    for k in range(_N_FRACTION, 0, -1):
        f = xl + (0.5 * k) / f
    near = where(x == -math.inf, math.inf, near)  # exp(inf) erfc(-inf), not inf - inf
    return where(far, 1.0 / (f * math.sqrt(math.pi)), near)


def log_ndtr(input: Tensor) -> Tensor:  # noqa: A002
    """``log(ndtr(x))``, finite far into the lower tail (``-x^2/2`` asymptotically).

    Example:
        >>> import xad
        >>> round(xad.log_ndtr(xad.tensor([-100.0], dtype=xad.float64)).item(), 6)
        -5005.524209
    """
    x = _floating(input)
    low = x < -1.0
    xl = where(low, x, -1.0)
    tail = log(erfcx(xl * -_SQRT_HALF) * 0.5) - xl * xl * 0.5
    xh = where(low, -1.0, x)
    return where(low, tail, log1p(erfc(xh * _SQRT_HALF) * -0.5))


def xlog1py(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input * log1p(other)``, 0 where ``input == 0`` (NaN where ``other`` is NaN); the
    gradients PyTorch's: ``log1p(other)`` (0 where ``input == 0`` and ``other <= -1``) and
    ``input / (1 + other)``.

    Example:
        >>> import xad
        >>> xad.xlog1py(xad.tensor([0.0, 2.0]), xad.tensor([-1.0, 0.0])).tolist()
        [0.0, 0.0]
    """
    x, y = floating_pair(input, other)
    zero = x == 0
    lost = zero & ((y <= -1) | isinf(y))  # 0 * log1p(-1): log1p(0) there, no 0 * inf
    out = x * log1p(where(lost, 0.0, y))  # at x == 0 the gradient is still log1p(y)
    return where(isnan(y), y, out)


def entr(input: Tensor) -> Tensor:  # noqa: A002
    """The elementwise entropy ``-x log x`` (0 at 0, ``-inf`` below; PyTorch's); gradient
    ``-(log x + 1)`` for ``x > 0`` (0 at and below 0, where PyTorch's is ``inf`` / NaN).

    Example:
        >>> import xad
        >>> xad.entr(xad.tensor([0.0, 1.0, -1.0])).tolist()
        [0.0, -0.0, -inf]
    """
    x = _floating(input)
    pos = x > 0
    inner = -(x * log(where(pos, x, 1.0)))
    return where(pos, inner, where(x == 0, 0.0, where(isnan(x), x, -math.inf)))


def _bessel_series(x: Tensor, nu: int) -> Tensor:
    """``I_nu(x) / (x/2)^nu = sum_k (x/2)^(2k) / (k! (k + nu)!)`` (positive terms)."""
    q = x * x * 0.25
    term = x * 0.0 + 1.0 / math.factorial(nu)
    total = term
    for k in range(1, _N_SERIES):
        term = term * q * (1.0 / (k * (k + nu)))
        total = total + term
    return total


def _bessel_asymptotic(x: Tensor, nu: int) -> Tensor:
    """``exp(-x) I_nu(x)`` for large positive ``x``: ``sum_k (-1)^k a_k(nu) / x^k`` over
    ``sqrt(2 pi x)``, ``a_k = prod_{j<=k} (4 nu^2 - (2j - 1)^2) / (k! 8^k)``."""
    coeffs, a = [1.0], 1.0
    for j in range(1, _N_ASYMPTOTIC):
        a *= -(4 * nu * nu - (2 * j - 1) ** 2) / (8.0 * j)
        coeffs.append(a)
    w = 1.0 / x
    acc = w * 0.0 + coeffs[-1]  # x = inf: w = 0, not inf * 0
    for c in reversed(coeffs[:-1]):
        acc = acc * w + c
    return acc / sqrt(x * (2 * math.pi))


def _bessel(input: Tensor, nu: int, scaled: bool) -> Tensor:
    """``I_nu(x)`` (``exp(-|x|) I_nu(x)`` where ``scaled``) for ``nu`` 0 or 1, every real ``x``."""
    x = _floating(input)
    ax = abs(x)
    far = ax > _BESSEL_SPLIT
    xs = where(far, 0.0, x)
    near = _bessel_series(xs, nu) * (xs * 0.5 if nu else 1.0)
    if scaled:
        near = near * exp(-abs(xs))
    xl = where(far, ax, _BESSEL_SPLIT)
    tail = _bessel_asymptotic(xl, nu)
    if not scaled:
        tail = tail * exp(xl)
    if nu:
        tail = tail * sign(x)
    return where(far, tail, where(isnan(x), x, near))


def i0(input: Tensor) -> Tensor:  # noqa: A002
    """The modified Bessel function of the first kind of order 0; gradient ``i1``.

    Example:
        >>> import xad
        >>> round(xad.i0(xad.tensor([1.0], dtype=xad.float64)).item(), 12)
        1.266065877752
    """
    return _bessel(input, 0, False)


def i0e(input: Tensor) -> Tensor:  # noqa: A002
    """``exp(-|x|) i0(x)`` (finite where ``i0`` overflows).

    Example:
        >>> import xad
        >>> round(xad.i0e(xad.tensor([1000.0], dtype=xad.float64)).item(), 12)
        0.012617240456
    """
    return _bessel(input, 0, True)


def i1(input: Tensor) -> Tensor:  # noqa: A002
    """The modified Bessel function of the first kind of order 1; gradient ``i0 - i1/x``.

    Example:
        >>> import xad
        >>> round(xad.i1(xad.tensor([1.0], dtype=xad.float64)).item(), 12)
        0.565159103992
    """
    return _bessel(input, 1, False)


def i1e(input: Tensor) -> Tensor:  # noqa: A002
    """``exp(-|x|) i1(x)`` (finite where ``i1`` overflows).

    Example:
        >>> import xad
        >>> round(xad.i1e(xad.tensor([1000.0], dtype=xad.float64)).item(), 12)
        0.012610930257
    """
    return _bessel(input, 1, True)


# B_2j / (2j)! for Euler-Maclaurin's tail of the Hurwitz zeta function (Cephes' 12 terms)
_BERNOULLI = (Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30),
              Fraction(5, 66), Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510),
              Fraction(43867, 798), Fraction(-174611, 330), Fraction(854513, 138),
              Fraction(-236364091, 2730))
_EM = tuple(float(b / math.factorial(2 * j + 2)) for j, b in enumerate(_BERNOULLI))
_ZETA_SHIFT = 9


def _zeta_sum(x: Tensor, q: Tensor) -> Tensor:
    """``sum_k (q + k)^-x`` by Euler-Maclaurin: nine terms, then the integral, half the
    next term and twelve Bernoulli corrections (Cephes' ``zeta``)."""
    total = (q * 0.0) + 0.0
    for k in range(_ZETA_SHIFT):
        total = total + (q + k) ** -x
    a = q + _ZETA_SHIFT
    total = total + a ** (1.0 - x) / (x - 1.0) + 0.5 * a ** -x
    rising, power = x, a ** (-x - 1.0)  # x (x+1) ... (x+2j-2) and a^(-x-2j+1)
    w = 1.0 / (a * a)
    for j, c in enumerate(_EM):
        total = total + c * rising * power
        rising = rising * (x + 2 * j + 1) * (x + 2 * j + 2)
        power = power * w
    return total


def zeta(input: Any, other: Any) -> Tensor:  # noqa: A002
    """The Hurwitz zeta function ``sum_k (other + k)^-input`` (PyTorch's ``special.zeta``:
    ``inf`` at ``input == 1`` and at non-positive integer ``other``, NaN for ``input < 1``);
    gradient ``-input * zeta(input + 1, other)`` to ``other``. Like PyTorch, none to
    ``input``: a tensor ``input`` that requires grad is refused.

    Example:
        >>> import xad
        >>> round(xad.zeta(xad.tensor([2.0], dtype=xad.float64), 1.0).item(), 12)
        1.644934066848
    """
    if isinstance(input, Tensor) and input.requires_grad and context.grad_enabled:
        raise NotImplementedError("zeta: the derivative with respect to input (the exponent) "
                                  "is not implemented, as in PyTorch; pass input.detach()")
    x, q = floating_pair(input, other)
    pole = (q <= 0) & (q == floor(q))
    out = _zeta_sum(x, where(pole, 1.0, q))
    out = where((q < 0) & (x != floor(x)), math.nan, out)  # (q + k)^-x is not real
    out = where(pole | (x == 1), math.inf, out)
    return where(x < 1, math.nan, out)


def polygamma(n: int, input: Tensor) -> Tensor:  # noqa: A002
    """The ``n``-th derivative of ``digamma`` (``digamma`` for ``n = 0``; beyond,
    ``(-1)^(n+1) n! zeta(n + 1, x)``); gradient ``polygamma(n + 1, x)``.

    Example:
        >>> import xad
        >>> round(xad.polygamma(1, xad.tensor([1.0], dtype=xad.float64)).item(), 12)
        1.644934066848
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"polygamma: n must be a non-negative integer, got {n!r}")
    x = _floating(input)
    if n == 0:
        return digamma(x)
    if n == 1:
        return trigamma(x)
    return zeta(float(n + 1), x) * ((-1) ** (n + 1) * math.factorial(n))


def multigammaln(input: Tensor, p: int) -> Tensor:  # noqa: A002
    """The multivariate log-gamma function of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_{j < p} lgamma(input - j / 2)``; gradient the sum of the
    ``digamma`` terms. Like PyTorch 2.13, no check that ``input > (p - 1) / 2`` (below, the
    terms are ``lgamma``'s of negative arguments: ``log |Gamma|``, as PyTorch's).

    Example:
        >>> import xad
        >>> round(xad.multigammaln(xad.tensor([2.5], dtype=xad.float64), 3).item(), 12)
        1.880995461612
    """
    if not isinstance(p, int) or isinstance(p, bool) or p < 1:
        raise RuntimeError(f"multigammaln: p has to be greater than or equal to 1, got {p!r}")
    if isinstance(input, Tensor) and input.dtype is _dt.bool_:
        raise RuntimeError("multigammaln: the input tensor may not be a boolean tensor "
                           "(PyTorch's rule); cast it first: x.float()")
    x = _floating(input)
    total = lgamma(x)
    for j in range(1, p):
        total = total + lgamma(x - 0.5 * j)
    return total + p * (p - 1) * 0.25 * math.log(math.pi)


mvlgamma = multigammaln  # PyTorch's torch.mvlgamma
