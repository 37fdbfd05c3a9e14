"""The Bessel functions of the first kind ``J0`` and ``J1`` written with Array API standard
functions only (Cephes' ``j0``/``j1``, SciPy's): up to 5, ``(x^2 - r1^2)(x^2 - r2^2) R(x^2)``
with the first two zeros' squares ``r^2`` factored out (``x`` times it for ``J1``), a
rational ``R``; beyond, Hankel's form ``sqrt(2 / (pi x)) (P cos(x - phase) - (5/x) Q sin(x -
phase))`` with rational ``P``, ``Q`` in ``25 / x^2`` (``cos(x - phase)`` from ``cos x`` and
``sin x``: Cephes' rounding of ``x - phase`` costs ``ulp(x)``). Coefficients highest power
first; the denominators ``RQ`` and ``QQ`` have a leading 1 left out (Cephes' ``p1evl``:
PyTorch 2.13 reads them without it, and its values are 3e-7 off near 5).
"""

from __future__ import annotations

import math
from typing import Any

from .special_fallback import _floating, _narrow

__all__ = ["bessel_j0_generic", "bessel_j1_generic"]

_J0 = {
    "PP": (7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
           5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
           9.99999999999999997821e-01),
    "PQ": (9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
           5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
           1.00000000000000000218e+00),
    "QP": (-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
           -9.32060152123768231369e+01, -1.77681167980488050595e+02,
           -1.47077505154951170175e+02, -5.14105326766599330220e+01,
           -6.05014350600728481186e+00),
    "QQ": (6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
           7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
           2.42005740240291393179e+02),
    "RP": (-4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
           9.70862251047306323952e+15),
    "RQ": (4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
           1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
           3.18121955943204943306e+16, 1.71086294081043136091e+18),
    "zeros": (5.78318596294678452118e+00, 3.04712623436620863991e+01),
    "phase": (math.sqrt(0.5), math.sqrt(0.5)),  # cos and sin of pi/4
}
_J1 = {
    "PP": (7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
           5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
           1.00000000000000000254e+00),
    "PQ": (5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
           5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
           9.99999999999999997461e-01),
    "QP": (5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
           3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
           2.11688757100572135698e+02, 2.52070205858023719784e+01),
    "QQ": (7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
           9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
           3.36093607810698293419e+02),
    "RP": (-8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
           3.68295732863852883286e+15),
    "RQ": (6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
           2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
           8.95222336184627338078e+16, 5.32278620332680085395e+18),
    "zeros": (1.46819706421238932572e+01, 4.92184563216946036703e+01),
    "phase": (-math.sqrt(0.5), math.sqrt(0.5)),  # of 3 pi/4
}


def _poly(z: Any, coeffs: tuple[float, ...], monic: bool = False) -> Any:
    """Horner's rule, highest power first (with a leading 1 first where ``monic``)."""
    acc = z + coeffs[0] if monic else z * 0.0 + coeffs[0]
    for c in coeffs[1:]:
        acc = acc * z + c
    return acc


def _bessel(xp: Any, x: Any, t: dict) -> Any:
    """``J0`` (``t = _J0``) or ``J1 / x`` for ``J1`` (odd: the caller multiplies by ``x``)
    of ``|x|``."""
    ax = xp.abs(x)
    near = ax <= 5.0
    z = xp.where(near, ax * ax, 1.0)
    r1, r2 = t["zeros"]
    small = (z - r1) * (z - r2) * _poly(z, t["RP"]) / _poly(z, t["RQ"], monic=True)
    xl = xp.where(near | xp.isinf(ax), 10.0, ax)
    w = 5.0 / xl
    q = w * w
    p = _poly(q, t["PP"]) / _poly(q, t["PQ"])
    qq = _poly(q, t["QP"]) / _poly(q, t["QQ"], monic=True)
    c, s = t["phase"]  # cos(x - phase) from cos x and sin x: no rounding of x - phase
    cx, sx = xp.cos(xl), xp.sin(xl)
    far = (p * (cx * c + sx * s) - w * qq * (sx * c - cx * s)) * math.sqrt(2 / math.pi) / xp.sqrt(
        xl)
    return near, small, far


def bessel_j0_generic(xp: Any, x: Any) -> Any:
    """The Bessel function of the first kind of order 0 (1 at 0; NaN at ``+-inf``, as
    PyTorch's and SciPy's).

    Example:
        >>> import array_api_strict as xp
        >>> round(float(bessel_j0_generic(xp, xp.asarray([1.0]))[0]), 12)
        0.765197686558
    """
    x0, x = x, _floating(xp, x)  # half precision in float32
    near, small, far = _bessel(xp, x, _J0)
    small = xp.where(xp.abs(x) < 1e-5, 1.0 - x * x / 4.0, small)  # exact at 0
    return _narrow(xp, xp.where(near, small, xp.where(xp.isinf(x), math.nan, far)), x0)


def bessel_j1_generic(xp: Any, x: Any) -> Any:
    """The Bessel function of the first kind of order 1 (odd; NaN at ``+-inf``, as
    PyTorch's).

    Example:
        >>> import array_api_strict as xp
        >>> round(float(bessel_j1_generic(xp, xp.asarray([1.0]))[0]), 12)
        0.440050585745
    """
    x0, x = x, _floating(xp, x)
    near, small, far = _bessel(xp, x, _J1)
    far = xp.where(x < 0.0, -far, far)
    return _narrow(xp, xp.where(near, small * x, xp.where(xp.isinf(x), math.nan, far)), x0)
