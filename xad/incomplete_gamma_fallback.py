"""The regularized incomplete gamma functions ``P(a, x)`` (``gammainc``) and ``Q(a, x) = 1 -
P`` (``gammaincc``) written with Array API standard functions only: vectorised, each method a
fixed number of steps on every element (masked stand-in arguments where another method is
chosen), no read of the data. The methods and where each is used are Cephes' ``igam``/``igamc``
(PyTorch's and SciPy's):

- ``a > 20`` and ``|x - a| < 0.3 a``: Temme's uniform asymptotic expansion (DLMF 8.12.3/4)
  with Cephes' coefficients (those above ``1e-19`` for ``a > 20``);
- else ``P`` by its power series (DLMF 8.11.4) where ``x <= max(a, 1)``-ish, ``Q`` by the
  continued fraction (DLMF 8.9.2) for ``x > max(a, 1.1)``, and ``Q`` by DLMF 8.7.3 for small
  ``x`` where ``1 - P`` would cancel; the other from ``1 -`` the one computed.

The prefactor ``x^a e^-x / Gamma(a)`` and Temme's ``eta`` take ``log(1 + t) - t`` from its
series in ``t / (2 + t)`` (no cancellation near ``x = a``) and, for ``a >= 10``, Stirling's
series for ``lgamma(a)``, so the exponent's rounding does not grow like ``a log a``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .special_fallback import _LGAMMA, _floating, _lgamma_near_one, _narrow, _series

__all__ = ["incomplete_gamma_generic"]

_N_SERIES, _N_FRACTION, _N_SMALL_X = 100, 64, 30  # 4e-13 from a = 1e-3 to 1e4
_BIG, _BIG_INV = 4.503599627370496e15, 2.22044604925031308085e-16  # the fraction's rescaling

# Temme's C_k(eta) = sum_n d[k][n] eta^n (Cephes' igam.h: rows and columns above 1e-19 for a > 20)
_TEMME = (
    (-3.3333333333333333e-1, 8.3333333333333333e-2, -1.4814814814814815e-2, 1.1574074074074074e-3,
     3.527336860670194e-4, -1.7875514403292181e-4, 3.9192631785224378e-5, -2.1854485106799922e-6,
     -1.85406221071516e-6, 8.296711340953086e-7, -1.7665952736826079e-7, 6.7078535434014986e-9,
     1.0261809784240308e-8, -4.3820360184533532e-9, 9.1476995822367902e-10, -2.551419399494625e-11,
     -5.8307721325504251e-11, 2.4361948020667416e-11),
    (-1.8518518518518519e-3, -3.4722222222222222e-3, 2.6455026455026455e-3, -9.9022633744855967e-4,
     2.0576131687242798e-4, -4.0187757201646091e-7, -1.8098550334489978e-5, 7.6491609160811101e-6,
     -1.6120900894563446e-6, 4.6471278028074343e-9, 1.378633446915721e-7, -5.752545603517705e-8,
     1.1951628599778147e-8, -1.7543241719747648e-11, -1.0091543710600413e-9,
     4.1627929918425826e-10, -8.5639070264929806e-11),
    (4.1335978835978836e-3, -2.6813271604938272e-3, 7.7160493827160494e-4, 2.0093878600823045e-6,
     -1.0736653226365161e-4, 5.2923448829120125e-5, -1.2760635188618728e-5, 3.4235787340961381e-8,
     1.3721957309062933e-6, -6.298992138380055e-7, 1.4280614206064242e-7, -2.0477098421990866e-10,
     -1.4092529910867521e-8, 6.228974084922022e-9, -1.3670488396617113e-9),
    (6.4943415637860082e-4, 2.2947209362139918e-4, -4.6918949439525571e-4, 2.6772063206283885e-4,
     -7.5618016718839764e-5, -2.3965051138672967e-7, 1.1082654115347302e-5, -5.6749528269915966e-6,
     1.4230900732435884e-6, -2.7861080291528142e-11, -1.6958404091930277e-7, 8.0994649053880824e-8,
     -1.9111168485973654e-8),
    (-8.618882909167117e-4, 7.8403922172006663e-4, -2.9907248030319018e-4, -1.4638452578843418e-6,
     6.6414982154651222e-5, -3.9683650471794347e-5, 1.1375726970678419e-5, 2.5074972262375328e-10,
     -1.6954149536558306e-6, 8.9075075322053097e-7, -2.2929348340008049e-7, 2.956794137544049e-11,
     2.8865829742708784e-8),
    (-3.3679855336635815e-4, -6.9728137583658578e-5, 2.7727532449593921e-4, -1.9932570516188848e-4,
     6.7977804779372078e-5, 1.419062920643967e-7, -1.3594048189768693e-5, 8.0184702563342015e-6,
     -2.2914811765080952e-6, -3.252473551298454e-10, 3.4652846491085265e-7,
     -1.8447187191171343e-7),
    (5.3130793646399222e-4, -5.9216643735369388e-4, 2.7087820967180448e-4, 7.9023532326603279e-7,
     -8.1539693675619688e-5, 5.6116827531062497e-5, -1.8329116582843376e-5, -3.0796134506033048e-9,
     3.4651553688036091e-6, -2.0291327396058604e-6, 5.7887928631490037e-7),
    (3.4436760689237767e-4, 5.1717909082605922e-5, -3.3493161081142236e-4, 2.812695154763237e-4,
     -1.0976582244684731e-4, -1.2741009095484485e-7, 2.7744451511563644e-5, -1.8263488805711333e-5,
     5.7876949497350524e-6),
    (-6.5262391859530942e-4, 8.3949872067208728e-4, -4.3829709854172101e-4, -6.969091458420552e-7,
     1.6644846642067548e-4, -1.2783517679769219e-4, 4.6299532636913043e-5),
    (-5.9676129019274625e-4, -7.2048954160200106e-5, 6.7823088376673284e-4, -6.4014752602627585e-4,
     2.7750107634328704e-4, 1.8197008380465151e-7, -8.4795071170685032e-5),
    (1.3324454494800656e-3, -1.9144384985654775e-3, 1.1089369134596637e-3, 9.932404122642299e-7,
     -5.0874501293093199e-4, 4.2735056665392884e-4),
    (1.579727660730835e-3, 1.6251626278391582e-4, -2.0633421035543276e-3, 2.1389686185689098e-3),
    (-4.0725121195140166e-3, 6.4033628338080698e-3, -4.0410161081676618e-3),
)


def _log1pmx(xp: Any, t: Any) -> Any:
    """``log(1 + t) - t`` for ``|t| <= 0.4`` to a few ulps: ``-t^2 / (2 + t) + 2 sum u^(2k+1) /
    (2k + 1)`` with ``u = t / (2 + t)`` (``|u| <= 1/4``)."""
    u = t / (2.0 + t)
    u2 = u * u
    acc = u2 * 0.0
    for k in range(14, 0, -1):
        acc = (acc + 1.0 / (2 * k + 1)) * u2
    return 2.0 * u * acc - t * t / (2.0 + t)


def _log_prefactor(xp: Any, a: Any, x: Any, lgamma: Callable) -> Any:
    """``log(x^a e^-x / Gamma(a))``: for ``a >= 10``, ``a (log(1 + t) - t) + log(a / 2 pi) / 2
    - stirling(a)`` with ``t = (x - a) / a`` (the first term by :func:`_log1pmx` where
    ``|t| <= 0.4``, else ``a log(x / a) - (x - a)``): its rounding is that of the result, not
    of ``a log x`` and ``lgamma(a)``; directly below 10."""
    big = a >= 10.0
    ab = xp.where(big, a, 10.0)
    d = xp.where(big, x, 10.0) - ab
    near = xp.abs(d) <= 0.4 * ab
    w = 1.0 / ab
    main = xp.where(near, ab * _log1pmx(xp, xp.where(near, d / ab, 0.0)),
                    ab * xp.log(xp.where(big, x, 10.0) / ab) - d)
    stirling = main + 0.5 * xp.log(ab / (2 * math.pi)) - w * _series(w * w, _LGAMMA)
    return xp.where(big, stirling, a * xp.log(x) - x - lgamma(a))


def _lower_series(xp: Any, a: Any, x: Any, lgamma: Callable) -> Any:
    """``P(a, x) = x^a e^-x / Gamma(a + 1) sum_n x^n / ((a + 1) ... (a + n))``."""
    r, c, total = a, a * 0.0 + 1.0, a * 0.0 + 1.0
    for _ in range(_N_SERIES):
        r = r + 1.0
        c = c * (x / r)
        total = total + c
    return total * xp.exp(_log_prefactor(xp, a, x, lgamma)) / a


def _upper_small_x(xp: Any, a: Any, x: Any, lgamma: Callable) -> Any:
    """``Q(a, x)`` for ``x <= 1.1`` without ``1 - P``'s cancellation (DLMF 8.7.3):
    ``-expm1(a log x - lgamma(1 + a)) - x^a / Gamma(a) sum_n (-x)^n / (n! (a + n))``."""
    fac, total = x * 0.0 + 1.0, x * 0.0
    for n in range(1, _N_SMALL_X):
        fac = fac * (-x / n)
        total = total + fac / (a + n)
    la = a * xp.log(x)
    tiny = a <= 0.25  # lgamma(1 + a) from its Taylor series: relative, and no 1 + a rounding
    lg1 = xp.where(tiny, _lgamma_near_one(xp, xp.where(tiny, a, 0.0)), lgamma(a + 1.0))
    return -xp.expm1(la - lg1) - xp.exp(la - lgamma(a)) * total


def _upper_fraction(xp: Any, a: Any, x: Any, lgamma: Callable) -> Any:
    """``Q(a, x)`` by Cephes' continued fraction (``x > max(a, 1.1)``), its convergents'
    numerators and denominators rescaled together when they grow past ``2^52``; 0 where the
    prefactor underflows (there a huge ``x`` would overflow the convergents)."""
    lp = _log_prefactor(xp, a, x, lgamma)
    gone = lp < -760.0
    a, x = xp.where(gone, 1.0, a), xp.where(gone, 2.0, x)
    y = 1.0 - a
    z = x + y + 1.0
    pkm2, qkm2, pkm1, qkm1 = x * 0.0 + 1.0, x, x + 1.0, z * x
    ans = pkm1 / qkm1
    for c in range(1, _N_FRACTION + 1):
        y, z = y + 1.0, z + 2.0
        yc = y * c
        pk, qk = pkm1 * z - pkm2 * yc, qkm1 * z - qkm2 * yc
        ans = xp.where(qk != 0.0, pk / xp.where(qk != 0.0, qk, 1.0), ans)
        big = xp.abs(pk) > _BIG
        pkm2, pkm1 = xp.where(big, pkm1 * _BIG_INV, pkm1), xp.where(big, pk * _BIG_INV, pk)
        qkm2, qkm1 = xp.where(big, qkm1 * _BIG_INV, qkm1), xp.where(big, qk * _BIG_INV, qk)
    return xp.where(gone, 0.0, ans * xp.exp(lp))


def _temme(xp: Any, a: Any, x: Any, upper: bool, erfc: Callable) -> Any:
    """``Q(a, x)`` (``P`` unless ``upper``) for large ``a`` with ``x`` near it: ``erfc(+-eta
    sqrt(a/2)) / 2 +- exp(-a eta^2 / 2) / sqrt(2 pi a) sum_k C_k(eta) a^-k``, the sum stopped
    where its terms grow."""
    sigma = (x - a) / a
    half_eta2 = -_log1pmx(xp, sigma)
    root = xp.sqrt(2.0 * half_eta2)
    eta = xp.where(sigma < 0.0, -root, root)
    total, afac, old, live = a * 0.0, a * 0.0 + 1.0, a * 0.0 + math.inf, a > 0.0
    for row in _TEMME:
        ck = eta * 0.0
        for d in reversed(row):
            ck = ck * eta + d
        term = ck * afac
        live = live & (xp.abs(term) <= old)
        total = total + xp.where(live, term, 0.0)
        old, afac = xp.abs(term), afac / a
    sign = 1.0 if upper else -1.0
    return 0.5 * erfc(sign * eta * xp.sqrt(a / 2.0)) + sign * xp.exp(-a * half_eta2) * (
        total / xp.sqrt(2 * math.pi * a))


def incomplete_gamma_generic(xp: Any, a: Any, x: Any, upper: bool, lgamma: Callable,
                             erfc: Callable) -> Any:
    """``Q(a, x)`` where ``upper`` (``gammaincc``), else ``P(a, x)`` (``gammainc``), for
    floating ``a`` and ``x`` of one dtype and shape; PyTorch's values at the edges (NaN for
    negative arguments, ``P(0, x > 0) = 1``, ``P(a, 0) = 0``, ``P(inf, x) = 0``, ...).
    ``lgamma`` and ``erfc`` are the backend's.

    Example:
        >>> import array_api_strict as xp
        >>> from xad.special_fallback import erfc_generic, lgamma_generic
        >>> p = incomplete_gamma_generic(xp, xp.asarray([2.0]), xp.asarray([3.0]), False,
        ...                              lambda v: lgamma_generic(xp, v),
        ...                              lambda v: erfc_generic(xp, v))
        >>> round(float(p[0]), 12)
        0.800851726529
    """
    a0, a, x = a, _floating(xp, a), _floating(xp, x)  # half precision in float32
    ok = (a > 0.0) & (x > 0.0) & xp.isfinite(a) & xp.isfinite(x)
    a1, x1 = xp.where(ok, a, 1.0), xp.where(ok, x, 1.0)
    temme = (a1 > 20.0) & (xp.abs(x1 - a1) < 0.3 * a1)
    fraction = (x1 > 1.1) & (x1 >= a1) & ~temme
    a_max = xp.where(x1 <= 0.5, -0.4 / xp.log(xp.minimum(x1, 0.5)), 1.1 * x1)
    small = (x1 <= 1.1) & (a1 <= a_max) & ~temme  # where 1 - P would cancel
    series = ~(temme | fraction | small)
    q = _upper_fraction(xp, xp.where(fraction, a1, 1.0), xp.where(fraction, x1, 2.0), lgamma)
    q = xp.where(small, _upper_small_x(xp, xp.where(small, a1, 1.0),
                                       xp.where(small, x1, 0.5), lgamma), q)
    p = _lower_series(xp, xp.where(series, a1, 1.0), xp.where(series, x1, 0.5), lgamma)
    out = xp.where(series, 1.0 - p, q) if upper else xp.where(series, p, 1.0 - q)
    t = _temme(xp, xp.where(temme, a1, 100.0), xp.where(temme, x1, 100.0), upper, erfc)
    return _narrow(xp, xp.where(ok, xp.where(temme, t, out), _edges(xp, a, x, upper)), a0)


def _edges(xp: Any, a: Any, x: Any, upper: bool) -> Any:
    """PyTorch's values where ``a`` or ``x`` is 0, infinite, negative or NaN (``P``; ``Q`` is
    ``1 - P``): NaN for a negative or NaN argument, ``P(0, 0)`` and ``P(inf, inf)``; else 1
    where ``a == 0`` or ``x == inf``, 0 where ``x == 0`` or ``a == inf``."""
    bad = (a < 0.0) | (x < 0.0) | xp.isnan(a) | xp.isnan(x)
    bad = bad | ((a == 0.0) & (x == 0.0)) | (xp.isinf(a) & xp.isinf(x))
    one = (a == 0.0) | xp.isinf(x)
    p = xp.astype(one, a.dtype)
    return xp.where(bad, math.nan, 1.0 - p if upper else p)
