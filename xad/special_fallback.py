"""Special functions written with Array API standard functions only (the standard has none):
``erfc``, ``erfinv``, ``ndtri``, ``lgamma``, ``digamma`` and C's ``fmod``, each within a few float64
ulps (``lgamma``/``digamma``: a few ulps of the terms near their roots), for backends whose
library has no native one (:class:`xad.Backend`'s defaults).

- ``erfc``: ``1 - erf`` below 0.5, Taylor series at 21 centres up to 3; beyond, the
  continued fraction of :mod:`xad.erf_fallback` times ``exp(-x^2)`` taken in two exact
  parts (no ``1 - erf`` cancellation in the tail); ``erfc(-x) = 2 - erfc(x)``.
- ``erfinv``: Giles' single-precision approximation, then Newton steps on ``erf`` (on
  ``erfc`` for ``|y| > 0.5``, where ``1 - |y|`` is exact).
- ``ndtri``: the inverse of the normal CDF by Cephes' rational approximations (PyTorch's,
  4e-16 relative against mpmath): in ``p - 1/2`` for ``p`` within ``1/2 - exp(-2)`` of
  ``1/2``, in ``1 / sqrt(-2 log p)`` (``1 - p``, exact, above) in the tails.
- ``lgamma``: ``log |Gamma(x)|`` (PyTorch's and C's convention); Taylor series at its roots
  1 and 2 (relative accuracy there); Stirling's series after a
  shift of ten, reflection ``log(pi / |sin(pi x)|) - lgamma(1 - x)`` below 0 (``inf`` at the
  non-positive integers); ``digamma`` alike, ``digamma(1 - x) - pi / tan(pi x)`` below 0
  (``-inf`` at ``+0``, ``inf`` at ``-0``, NaN at negative integers, as PyTorch's).
- ``fmod``: ``x - trunc(x / y) * y`` computed exactly (the rounded formula is not C's
  ``fmod``): a long division that takes 24 quotient bits a step, each product split in two
  exact halves (Veltkamp), so every subtraction is exact.
"""

from __future__ import annotations

import math
from typing import Any

from .erf_fallback import erf_generic

__all__ = ["erfc_generic", "erfinv_generic", "ndtri_generic", "lgamma_generic", "digamma_generic",
           "fmod_generic"]

_SHIFT = 10
_LGAMMA = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)
_DIGAMMA = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)
_N_FRACTION = 60  # continued fraction terms: 1e-16 relative from x = 3
_K = 2.0 / math.sqrt(math.pi)  # erf'(x) = K exp(-x^2)


def _floating(xp: Any, x: Any) -> Any:
    """``x`` as the floating array the functions compute on: integers and bools in
    float64, half precision in float32 (their ranges and constants need it); the caller
    casts back with :func:`_narrow`."""
    if xp.isdtype(x.dtype, "complex floating"):
        raise TypeError("special functions: complex input is not supported")
    if not xp.isdtype(x.dtype, "real floating"):
        return xp.astype(x, xp.float64)
    return x if x.dtype in (xp.float32, xp.float64) else xp.astype(x, xp.float32)


def _narrow(xp: Any, out: Any, x: Any) -> Any:
    """``out`` back in ``x``'s dtype where that is a half-precision floating one."""
    keep = not xp.isdtype(x.dtype, "real floating") or x.dtype in (xp.float32, xp.float64)
    return out if keep else xp.astype(out, x.dtype)


def _exp_minus_square(xp: Any, x: Any) -> Any:
    """``exp(-x * x)`` with ``x * x`` split in an exact part and a small one (the rounding
    of ``x * x`` would cost ``x^2`` ulps: 600 at ``x = 25``)."""
    hi = xp.floor(x * 4096.0) / 4096.0  # 12 fraction bits: hi * hi is exact
    return xp.exp(-(hi * hi)) * xp.exp(-((x - hi) * (x + hi)))


def _erfc_taylor_table() -> list[list[float]]:
    """Taylor coefficients of ``erfc`` at ``c = 0.5, 0.625, ..., 3`` (by ``math.erfc``
    and the Hermite recurrence ``erfc^(n+1)(c) = -K exp(-c^2) (-1)^n H_n(c)``), one list
    per power."""
    rows = []
    for j in range(_N_CENTRES):
        c = _LOW + j * _STEP
        e, h_prev, h = -_K * math.exp(-c * c), 0.0, 1.0  # H_{-1}, H_0
        coeffs, fact = [math.erfc(c)], 1.0
        for n in range(_N_TAYLOR - 1):
            fact *= n + 1
            coeffs.append(e * (-1) ** n * h / fact)
            h_prev, h = h, 2 * c * h - 2 * n * h_prev
        rows.append(coeffs)
    return [list(col) for col in zip(*rows)]


_LOW, _HIGH, _STEP = 0.5, 3.0, 0.125  # Taylor series between; beyond, a continued fraction
_N_CENTRES, _N_TAYLOR = 21, 22
_TAYLOR = _erfc_taylor_table()


def _erfc_middle(xp: Any, ax: Any) -> Any:
    """``erfc`` on ``[0.5, 3]`` by the Taylor series at the nearest of 21 centres."""
    flat = xp.reshape(ax, (-1,))  # take's indices are 1-d
    j = xp.clip(xp.round((flat - _LOW) / _STEP), 0.0, _N_CENTRES - 1.0)
    h = flat - (_LOW + j * _STEP)
    idx = xp.astype(j, xp.int64)
    acc = xp.zeros_like(flat)
    for col in reversed(_TAYLOR):
        acc = acc * h + xp.take(xp.asarray(col, dtype=ax.dtype, device=ax.device), idx)
    return xp.reshape(acc, ax.shape)


def erfc_generic(xp: Any, x: Any) -> Any:
    """``1 - erf(x)``, exact in the tail (relative error of a few ulps up to 26.5).

    Example:
        >>> import array_api_strict as xp
        >>> f"{float(erfc_generic(xp, xp.asarray([10.0]))[0]):.12e}"
        '2.088487583763e-45'
    """
    x0, x = x, _floating(xp, x)
    ax = xp.abs(x)
    small, mid = ax < _LOW, ax < _HIGH
    xl = xp.where(mid, _HIGH, xp.minimum(ax, 30.0))  # erfc(27.3) is 0 already
    f = xl
    for k in range(_N_FRACTION, 0, -1):
        f = xl + (0.5 * k) / f
    tail = _exp_minus_square(xp, xl) / (f * math.sqrt(math.pi))
    tail = xp.where(mid, _erfc_middle(xp, xp.where(mid, ax, _LOW)), tail)
    far = xp.where(x < 0, 2.0 - tail, tail)
    return _narrow(xp, xp.where(small, 1.0 - erf_generic(xp, xp.where(small, x, 0.0)), far),
                   x0)


def _giles(xp: Any, y: Any) -> Any:
    """Giles' single-precision ``erfinv`` (2010): a start for Newton's steps."""
    w = -xp.log((1.0 - y) * (1.0 + y))
    a = w - 2.5
    p = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
              -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
        p = c + p * a
    b = xp.sqrt(xp.where(w < 5.0, 5.0, w)) - 3.0
    q = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
              -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
        q = c + q * b
    return xp.where(w < 5.0, p, q) * y


def erfinv_generic(xp: Any, y: Any) -> Any:
    """The inverse of ``erf`` on ``[-1, 1]`` (``+-inf`` at ``+-1``, NaN beyond).

    Example:
        >>> import array_api_strict as xp
        >>> round(float(erfinv_generic(xp, xp.asarray([0.5]))[0]), 12)
        0.476936276204
    """
    y0, y = y, _floating(xp, y)
    ay = xp.abs(y)
    inside = ay < 1.0
    a = xp.where(inside, ay, 0.0)
    x = _giles(xp, a)
    near = a <= 0.5
    t = xp.where(near, 0.5, 1.0 - a)  # exact for a > 0.5
    for _ in range(4):  # Newton on erf; in the tail on log(erfc), nearly linear there
        c = erfc_generic(xp, x)
        d = xp.where(near, erf_generic(xp, x) - a, (xp.log(t) - xp.log(c)) * c)
        x = x - d / (_K * _exp_minus_square(xp, x))
    x = xp.where(y < 0, -x, x)
    return _narrow(xp, xp.where(inside, x, xp.where(ay == 1.0, y * math.inf, math.nan)), y0)


# Cephes' ndtri: P/Q in (p - 1/2)^2 near the centre, in 1/z (z = sqrt(-2 log p)) for z below
# 8 and from 8 (p < exp(-32)); highest power first, Q's leading 1 left out
_NDTRI_P0 = (-5.99633501014107895267e1, 9.80010754185999661536e1, -5.66762857469070293439e1,
             1.39312609387279679503e1, -1.23916583867381258016e0)
_NDTRI_Q0 = (1.95448858338141759834e0, 4.67627912898881538453e0, 8.63602421390890590575e1,
             -2.25462687854119370527e2, 2.00260212380060660359e2, -8.20372256168333339912e1,
             1.59056225126211695515e1, -1.18331621121330003142e0)
_NDTRI_P1 = (4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1,
             4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0,
             -1.40256079171354495875e-1, -3.50424626827848203418e-2,
             -8.57456785154685413611e-4)
_NDTRI_Q1 = (1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1,
             1.50425385692907503408e1, 2.50464946208309415979e0, -1.42182922854787788574e-1,
             -3.80806407691578277194e-2, -9.33259480895457427372e-4)
_NDTRI_P2 = (3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0,
             1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2,
             3.01581553508235416007e-4, 2.65806974686737550832e-6, 6.23974539184983293730e-9)
_NDTRI_Q2 = (6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0,
             2.16236993594496635890e-1, 1.34204006088543189037e-2, 3.28014464682127739104e-4,
             2.89247864745380683936e-6, 6.79019408009981274425e-9)
_EXP_M2 = 0.13533528323661269189  # exp(-2): the centre's edge


def _ratio(x: Any, p: tuple[float, ...], q: tuple[float, ...]) -> Any:
    """``P(x) / Q(x)`` by Horner's rule (highest power first; ``Q`` monic)."""
    num, den = x * 0.0 + p[0], x + q[0]
    for c in p[1:]:
        num = num * x + c
    for c in q[1:]:
        den = den * x + c
    return num / den


def ndtri_generic(xp: Any, p: Any) -> Any:
    """The ``x`` with ``ndtr(x) = p`` (``-inf`` at 0, ``inf`` at 1, NaN outside ``[0, 1]``).

    Example:
        >>> import array_api_strict as xp
        >>> round(float(ndtri_generic(xp, xp.asarray([0.975]))[0]), 12)
        1.95996398454
    """
    p0, p = p, _floating(xp, p)
    upper = p > 1.0 - _EXP_M2
    y = xp.where(upper, 1.0 - p, p)  # exact: p > 1/2
    centre = y > _EXP_M2  # not where NaN
    c = xp.where(centre, y, 0.5) - 0.5
    c2 = c * c
    mid = (c + c * (c2 * _ratio(c2, _NDTRI_P0, _NDTRI_Q0))) * 2.50662827463100050242
    t = xp.where(centre | ~(y > 0.0), _EXP_M2 / 2, y)
    z = xp.sqrt(-2.0 * xp.log(t))
    w = 1.0 / z
    far = z >= 8.0
    tail = (z - xp.log(z) / z) - w * xp.where(far, _ratio(w, _NDTRI_P2, _NDTRI_Q2),
                                               _ratio(w, _NDTRI_P1, _NDTRI_Q1))
    out = xp.where(centre, mid, xp.where(upper, tail, -tail))
    out = xp.where(p == 0.0, -math.inf, xp.where(p == 1.0, math.inf, out))
    return _narrow(xp, xp.where((p < 0.0) | (p > 1.0) | xp.isnan(p), math.nan, out), p0)


def _series(w: Any, coeffs: tuple[float, ...]) -> Any:
    acc = w * coeffs[-1]
    for c in reversed(coeffs[1:-1]):
        acc = (acc + c) * w
    return acc + coeffs[0]


def _sin_pi_reduced(xp: Any, x: Any) -> tuple[Any, Any]:
    """``(t, sin(pi t))`` with ``t = x - round(x)`` exact (``tan(pi x) = tan(pi t)``) and
    ``|sin(pi x)| = |sin(pi t)|``."""
    t = x - xp.round(x)
    return t, xp.sin(math.pi * t)


def _zeta(k: int, n: int = 1000) -> float:
    """Riemann's zeta at an integer ``k >= 2``: ``n`` terms and Euler-Maclaurin's tail."""
    tail = n ** (1 - k) / (k - 1) - 0.5 * n ** -k + k * n ** (-k - 1) / 12
    return math.fsum([m ** -float(k) for m in range(1, n + 1)] + [tail])


# lgamma(1 + h) = -gamma h + sum_k (-1)^k zeta(k) / k h^k: relative accuracy at its roots 1, 2
_EULER = 0.5772156649015329
_NEAR_ONE = (-_EULER, *((-1) ** k * _zeta(k) / k for k in range(2, 30)))


def _lgamma_near_one(xp: Any, h: Any) -> Any:
    """``lgamma(1 + h)`` for ``|h| <= 0.25`` by its Taylor series."""
    acc = xp.zeros_like(h)
    for c in reversed(_NEAR_ONE):
        acc = (acc + c) * h
    return acc


def _shifted(xp: Any, x: Any, term: Any) -> tuple[Any, Any, Any]:
    """For ``lgamma``/``digamma`` of ``x``: where ``x < 0``, the sum of ``term(z + k)`` for
    ``k < _SHIFT`` with ``z = 1 - x`` there (the reflection's argument), else ``z = x``, and
    ``z + _SHIFT`` (where the asymptotic series is accurate)."""
    neg = x < 0.0
    z = xp.where(neg, 1.0 - x, x)
    shift = xp.zeros_like(z)
    for k in range(_SHIFT):
        shift = shift + term(z + float(k))
    return neg, shift, z + float(_SHIFT)


def lgamma_generic(xp: Any, x: Any) -> Any:
    """``log |Gamma(x)|`` for every real ``x`` (``inf`` at the non-positive integers).

    Example:
        >>> import array_api_strict as xp
        >>> round(float(lgamma_generic(xp, xp.asarray([-2.5]))[0]), 12)
        -0.056243716498
    """
    x0, x = x, _floating(xp, x)
    neg, shift, s = _shifted(xp, x, xp.log)
    w = 1.0 / s
    pos = (s - 0.5) * xp.log(s) - s + 0.5 * math.log(2 * math.pi) + w * _series(
        w * w, _LGAMMA) - shift
    _, sin_t = _sin_pi_reduced(xp, xp.where(neg, x, 0.5))
    reflected = math.log(math.pi) - xp.log(xp.abs(sin_t)) - pos
    out = xp.where(neg, reflected, pos)
    d1, d2 = x - 1.0, x - 2.0  # exact near the roots
    one, two = xp.abs(d1) <= 0.25, xp.abs(d2) <= 0.25
    h = xp.where(one, d1, xp.where(two, d2, 0.0))
    near = _lgamma_near_one(xp, h) + xp.where(two, xp.log1p(h), 0.0)
    out = xp.where(one | two, near, out)
    return _narrow(xp, xp.where(xp.isinf(x), math.inf, out), x0)


def digamma_generic(xp: Any, x: Any) -> Any:
    """``d/dx log Gamma(x)`` for every real ``x`` (PyTorch's values at poles and zeros).

    Example:
        >>> import array_api_strict as xp
        >>> round(float(digamma_generic(xp, xp.asarray([1.0]))[0]), 12)
        -0.577215664902
    """
    x0, x = x, _floating(xp, x)
    neg, shift, s = _shifted(xp, x, lambda v: 1.0 / v)
    w2 = 1.0 / (s * s)
    pos = xp.log(s) - 0.5 / s - w2 * _series(w2, _DIGAMMA) - shift
    t, sin_t = _sin_pi_reduced(xp, xp.where(neg, x, 0.5))
    reflected = pos - math.pi * xp.cos(math.pi * t) / sin_t
    out = xp.where(neg, xp.where(t == 0.0, math.nan, reflected), pos)
    zero = x == 0.0  # -inf at +0, inf at -0 (PyTorch's)
    out = xp.where(zero, -1.0 / x, out)
    return _narrow(xp, xp.where(x == -math.inf, math.nan, out), x0)


def _pow2(xp: Any, k: Any) -> Any:
    """``2 ** k`` for integer-valued float ``k`` in ``[0, 2100)`` as three exact factors."""
    a = xp.floor(k / 3.0)
    return xp.pow(2.0, a), xp.pow(2.0, a), xp.pow(2.0, k - 2.0 * a)


def _scaled(v: Any, factors: tuple) -> Any:
    for f in factors:
        v = v * f
    return v


def _reduce_step(xp: Any, r: Any, a: Any, a_hi: Any, a_lo: Any) -> Any:
    """``r`` less as many multiples of ``a * 2**s`` as fit, with ``s`` such that the
    quotient has at most 24 bits (``r >= 0``, ``a > 0``; every operation exact)."""
    big = r >= a
    rs = xp.where(big, r, a)
    s = xp.maximum(xp.floor(xp.log2(rs) - xp.log2(a)) - 23.0, 0.0)
    f = _pow2(xp, s)
    b, b_hi, b_lo = _scaled(a, f), _scaled(a_hi, f), _scaled(a_lo, f)
    q = xp.trunc(rs / b)  # the quotient, or one more (division rounds up, never down)
    d = (rs - q * b_hi) - q * b_lo
    d = xp.where(d < 0, d + b, d)
    return xp.where(big, d, r)


def fmod_generic(xp: Any, x: Any, y: Any) -> Any:
    """C's ``fmod``: ``x - trunc(x / y) * y`` exactly, with the sign of ``x`` (NaN where
    ``y == 0`` or ``x`` is infinite, ``x`` where ``y`` is infinite); integers truncate.

    Example:
        >>> import array_api_strict as xp
        >>> r = fmod_generic(xp, xp.asarray([5.5, -5.5]), xp.asarray([2.0, 2.0]))
        >>> float(r[0]), float(r[1])
        (1.5, -1.5)
    """
    if not xp.isdtype(x.dtype, "real floating"):
        r = xp.remainder(x, y)  # floor's remainder; C truncates: shift where signs differ
        return xp.where((r != 0) & ((r < 0) != (x < 0)), r - y, r)
    wide = xp.astype(x, xp.float64) if x.dtype != xp.float64 else x
    r, a = xp.abs(wide), xp.abs(xp.astype(y, wide.dtype))
    ok = xp.isfinite(r) & xp.isfinite(a) & (a > 0)
    bad = xp.isinf(wide) | (a == 0) | xp.isnan(a)
    r, a = xp.where(ok, r, 0.0), xp.where(ok, a, 1.0)
    tiny = a < 2.0 ** -900  # no underflow in the halves, no overflow in the split
    a_s = xp.where(tiny, a * 2.0 ** 200, a)
    c = a_s * 134217729.0  # 2**27 + 1: Veltkamp's split, 26 + 27 bits
    a_hi = c - (c - a_s)
    a_lo = a_s - a_hi
    a_hi, a_lo = (xp.where(tiny, v * 2.0 ** -200, v) for v in (a_hi, a_lo))
    for _ in range(95):  # 23 quotient bits a step or more: exponents differ by <= 2098
        r = _reduce_step(xp, r, a, a_hi, a_lo)
    out = xp.where(ok, xp.copysign(r, wide), xp.where(bad, math.nan, wide))
    return xp.astype(out, x.dtype) if out.dtype != x.dtype else out
