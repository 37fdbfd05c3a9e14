"""The rest of ``torch.special``'s Bessel functions, composed of xad's operations (every
backend has them): ``modified_bessel_k0``/``k1`` and their scaled ``exp(x) K`` (Cephes'
``k0``/``k1``: a Chebyshev series in ``x^2 - 2`` with the ``log(x/2) I`` term up to 2, one
in ``8/x - 2`` beyond), ``bessel_y0``/``y1`` (Cephes' ``y0``/``y1``: a rational function of
``x^2`` with the ``(2/pi) log(x) J`` term up to 5, Hankel's form beyond, the denominators'
leading 1 kept, as in :mod:`xad.bessel_fallback`) and ``spherical_bessel_j0``. Their
gradients come from the operations (``K0' = -K1``, ``Y0' = -Y1``, ...); PyTorch 2.13 has
none. Every masked branch sees a harmless stand-in argument.
"""

from __future__ import annotations

import math
from typing import Any

from ..bessel_fallback import _J0, _J1
from ..tensor import Tensor
from .elementwise import abs, cos, exp, log, sin, sqrt, where
from .elementwise_math import isinf
from .special_functions import bessel_j0, bessel_j1
from .special_functions import floating_input as _floating
from .torch_special import i0, i1

__all__ = ["modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
           "scaled_modified_bessel_k1", "bessel_y0", "bessel_y1", "spherical_bessel_j0"]

# Cephes' k0.c / k1.c: Chebyshev coefficients, the highest first
_K0_A = (1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
         1.90451637722020886025e-9, 2.53479107902614945675e-7, 2.28621210311945178607e-5,
         1.26461541144692592338e-3, 3.59799365153615016266e-2, 3.44289899924628486886e-1,
         -5.35327393233902768720e-1)
_K0_B = (5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
         -1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
         6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
         -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
         1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
         -1.69753450938905987466e-9, 8.57403401741422608519e-9, -4.66048989768794782956e-8,
         2.76681363944501510342e-7, -1.83175552271911948767e-6, 1.39498137188764993662e-5,
         -1.28495495816278026384e-4, 1.56988388573005337491e-3, -3.14481013119645005427e-2,
         2.44030308206595545468e0)
_K1_A = (-7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
         -1.41148839263352776110e-10, -2.21338763073472585583e-8, -2.43340614156596823496e-6,
         -1.73028895751305206302e-4, -6.97572385963986435018e-3, -1.22611180822657148235e-1,
         -3.53155960776544875667e-1, 1.52530022733894777053e0)
_K1_B = (-5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
         1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
         -7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
         3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
         -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
         2.01504975519703286596e-9, -1.03457624656780970260e-8, 5.74108412545004946722e-8,
         -3.50196060308781257119e-7, 2.40648494783721712015e-6, -1.93619797416608296024e-5,
         1.95215518471351631108e-4, -2.85781685962277938680e-3, 1.03923736576817238437e-1,
         2.72062619048444266945e0)
# Cephes' j0.c / j1.c: y0 - (2/pi) log(x) j0 = YP(x^2) / YQ(x^2) up to 5 (YQ's leading 1 left out)
_Y0_P = (1.55924367855235737965e4, -1.46639295903971606143e7, 5.43526477051876500413e9,
         -9.82136065717911466409e11, 8.75906394395366999549e13, -3.46628303384729719441e15,
         4.42733268572569800351e16, -1.84950800436986690637e16)
_Y0_Q = (1.04128353664259848412e3, 6.26107330137134956842e5, 2.68919633393814121987e8,
         8.64002487103935000337e10, 2.02979612750105546709e13, 3.17157752842975028269e15,
         2.50596256172653059228e17)
_Y1_P = (1.26320474790178026440e9, -6.47355876379160291031e11, 1.14509511541823727583e14,
         -8.12770255501325109621e15, 2.02439475713594898196e17, -7.78877196265950026825e17)
_Y1_Q = (5.94301592346128195359e2, 2.35564092943068577943e5, 7.34811944459721705660e7,
         1.87601316108706159478e10, 3.88231277496238566008e12, 6.20557727146953693363e14,
         6.87141087355300489866e16, 3.97270608116560655612e18)


def _chebyshev(y: Tensor, coeffs: tuple[float, ...]) -> Tensor:
    """Cephes' ``chbevl``: ``sum' c_k T_k(y / 2)`` by Clenshaw's recurrence."""
    b0, b1, b2 = y * 0.0 + coeffs[0], 0.0, 0.0
    for c in coeffs[1:]:
        b2, b1 = b1, b0
        b0 = y * b1 - b2 + c
    return (b0 - b2) * 0.5


def _poly(z: Tensor, coeffs: tuple[float, ...], monic: bool = False) -> Tensor:
    """Horner's rule, highest power first (with a leading 1 first where ``monic``)."""
    acc = z + coeffs[0] if monic else z * 0.0 + coeffs[0]
    for c in coeffs[1:]:
        acc = acc * z + c
    return acc


def _k(input: Any, order: int, scaled: bool) -> Tensor:
    """``K_order(x)`` (``exp(x) K_order(x)`` where ``scaled``): ``inf`` at 0, NaN below,
    0 at ``inf`` (PyTorch's)."""
    x = _floating(input)
    near = x <= 2.0
    xs = where(near & (x > 0), x, 1.0)
    y = xs * xs - 2.0
    if order == 0:
        small = _chebyshev(y, _K0_A) - log(xs * 0.5) * i0(xs)
    else:
        small = log(xs * 0.5) * i1(xs) + _chebyshev(y, _K1_A) / xs
    if scaled:
        small = small * exp(xs)
    xl = where(near | isinf(x), 4.0, x)
    large = _chebyshev(8.0 / xl - 2.0, _K1_B if order else _K0_B) / sqrt(xl)
    if not scaled:
        large = large * exp(-xl)
    out = where(near, small, large)
    out = where(x == math.inf, 0.0, out)
    return where(x < 0, math.nan, where(x == 0, math.inf, out))


def modified_bessel_k0(input: Any) -> Tensor:  # noqa: A002
    """The modified Bessel function of the second kind of order 0 (``inf`` at 0, NaN below
    it); gradient ``-K1`` (PyTorch's has none).

    Example:
        >>> import xad
        >>> round(xad.modified_bessel_k0(xad.tensor([1.0], dtype=xad.float64)).item(), 12)
        0.421024438241
    """
    return _k(input, 0, False)


def modified_bessel_k1(input: Any) -> Tensor:  # noqa: A002
    """The modified Bessel function of the second kind of order 1; gradient ``-K0 - K1/x``.

    Example:
        >>> import xad
        >>> round(xad.modified_bessel_k1(xad.tensor([1.0], dtype=xad.float64)).item(), 12)
        0.601907230197
    """
    return _k(input, 1, False)


def scaled_modified_bessel_k0(input: Any) -> Tensor:  # noqa: A002
    """``exp(x) K0(x)`` (finite where ``K0`` underflows).

    Example:
        >>> import xad
        >>> round(xad.scaled_modified_bessel_k0(xad.tensor([1.0], dtype=xad.float64)).item(), 12)
        1.144463079806
    """
    return _k(input, 0, True)


def scaled_modified_bessel_k1(input: Any) -> Tensor:  # noqa: A002
    """``exp(x) K1(x)`` (finite where ``K1`` underflows).

    Example:
        >>> import xad
        >>> round(xad.scaled_modified_bessel_k1(xad.tensor([1.0], dtype=xad.float64)).item(), 12)
        1.636153486263
    """
    return _k(input, 1, True)


def _y(input: Any, order: int) -> Tensor:
    """``Y_order(x)``: ``-inf`` at 0, NaN below it and at ``inf`` (PyTorch's and SciPy's)."""
    x = _floating(input)
    near = x <= 5.0
    xs = where(near & (x > 0), x, 1.0)
    z = xs * xs
    if order == 0:
        small = _poly(z, _Y0_P) / _poly(z, _Y0_Q, monic=True) + log(xs) * bessel_j0(xs) * (
            2 / math.pi)
    else:
        small = xs * _poly(z, _Y1_P) / _poly(z, _Y1_Q, monic=True) + (
            bessel_j1(xs) * log(xs) - 1.0 / xs) * (2 / math.pi)
    xl = where(near | isinf(x), 10.0, x)
    t = _J1 if order else _J0
    w = 5.0 / xl
    q = w * w
    p = _poly(q, t["PP"]) / _poly(q, t["PQ"])
    wq = w * _poly(q, t["QP"]) / _poly(q, t["QQ"], monic=True)
    cx, sx = cos(xl), sin(xl)  # sin(x - phase) and cos(x - phase) without rounding x - phase
    if order == 0:
        large = (wq - p) * cx + (p + wq) * sx
    else:
        large = (wq - p) * sx - (p + wq) * cx
    out = where(near, small, large * (1 / math.sqrt(math.pi)) / sqrt(xl))
    out = where((x < 0) | isinf(x), math.nan, out)
    return where(x == 0, -math.inf, out)


def bessel_y0(input: Any) -> Tensor:  # noqa: A002
    """The Bessel function of the second kind of order 0; gradient ``-Y1`` (PyTorch's has
    none; its values beyond 5 are up to 1e-6 off: its rational ``Q`` lacks a leading 1).

    Example:
        >>> import xad
        >>> round(xad.bessel_y0(xad.tensor([1.0], dtype=xad.float64)).item(), 12)
        0.088256964215
    """
    return _y(input, 0)


def bessel_y1(input: Any) -> Tensor:  # noqa: A002
    """The Bessel function of the second kind of order 1; gradient ``Y0 - Y1/x``.

    Example:
        >>> import xad
        >>> round(xad.bessel_y1(xad.tensor([1.0], dtype=xad.float64)).item(), 12)
        -0.781212821300
    """
    return _y(input, 1)


def spherical_bessel_j0(input: Any) -> Tensor:  # noqa: A002
    """``sin(x) / x`` (1 at 0, 0 at ``+-inf``); below 1/2 PyTorch's Taylor series, so the
    gradient ``(x cos x - sin x) / x^2`` loses nothing near 0.

    Example:
        >>> import xad
        >>> round(xad.spherical_bessel_j0(xad.tensor([1.0], dtype=xad.float64)).item(), 12)
        0.841470984808
    """
    x = _floating(input)
    small = abs(x) < 0.5
    xs = where(small, x, 0.0)
    z = xs * xs
    series = z * 0.0 + 1.0
    term = series
    for k in range(1, 10):  # (-1)^k x^2k / (2k + 1)!: 1e-22 relative at 1/2
        term = term * z * (-1.0 / ((2 * k) * (2 * k + 1)))
        series = series + term
    xl = where(small | isinf(x), 1.0, x)
    out = where(small, series, sin(xl) / xl)
    return where(isinf(x), 0.0, out)
