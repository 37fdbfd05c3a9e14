"""The rest of ``torch.special``'s Bessel functions, composed of xad's operations (every
backend has them): ``modified_bessel_k0``/``k1`` and their scaled ``exp(x) K`` (Cephes'
``k0``/``k1``: a Chebyshev series in ``x^2 - 2`` with the ``log(x/2) I`` term up to 2, one
in ``8/x - 2`` beyond), ``bessel_y0``/``y1`` (Cephes' ``y0``/``y1``: a rational function of
``x^2`` with the ``(2/pi) log(x) J`` term up to 5, Hankel's form beyond, the denominators'
leading 1 kept, as in :mod:`xad.bessel_fallback`), ``spherical_bessel_j0`` and the Airy
function ``airy_ai`` (Cephes' ``airy``, PyTorch's branches at -2.09 and 2.09). Their
gradients come from the operations (``K0' = -K1``, ``Y0' = -Y1``, ...); PyTorch 2.13 has
none. Every masked branch sees a harmless stand-in argument.
"""

from __future__ import annotations

import math
from typing import Any

from ..bessel_fallback import _J0, _J1, _poly
from ..tensor import Tensor
from .elementwise import abs, cos, exp, log, sin, sqrt, where
from .elementwise_math import isinf
from .special_functions import bessel_j0, bessel_j1
from .special_functions import floating_input as _floating
from .torch_special import i0, i1

__all__ = ["modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
           "scaled_modified_bessel_k1", "bessel_y0", "bessel_y1", "spherical_bessel_j0",
           "airy_ai"]

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
# Cephes' airy.c: Ai = sqrt(1/pi) AN(1/zeta) / AD(1/zeta) / (2 x^(1/4) exp(zeta)) from 2.09;
# below -2.09 its modulus and phase, in 1/zeta^2 (AFD's and AGD's leading 1 left out here)
_AI_N = (3.46538101525629032477e-01, 1.20075952739645805542e+01, 7.62796053615234516538e+01,
         1.68089224934630576269e+02, 1.59756391350164413639e+02, 7.05360906840444183113e+01,
         1.40264691163389668864e+01, 9.99999999999999995305e-01)
_AI_D = (5.67594532638770212846e-01, 1.47562562584847203173e+01, 8.45138970141474626562e+01,
         1.77318088145400459522e+02, 1.64234692871529701831e+02, 7.14778400825575695274e+01,
         1.40959135607834029598e+01, 1.00000000000000000470e+00)
_AI_FN = (-1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
          -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
          -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08)
_AI_FD = (1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
          9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
          4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07)
_AI_GN = (1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
          9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
          5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
          8.11789239554389293311e-08, 3.41551784765923618484e-10)
_AI_GD = (9.30892908077441974853e+00, 1.98352928718312140417e+01, 1.55646628932864612953e+01,
          5.47686069422975497931e+00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
          4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
          4.91834570062930015649e-09)
_SQRT_1_PI = 5.64189583547756286948e-01
_AI_SERIES = 14  # Maclaurin terms: below 1e-19 relative for abs(x) < 2.09


def _chebyshev(y: Tensor, coeffs: tuple[float, ...]) -> Tensor:
    """Cephes' ``chbevl``: ``sum' c_k T_k(y / 2)`` by Clenshaw's recurrence."""
    b0: Any = y * 0.0 + coeffs[0]
    b1: Any = 0.0
    b2: Any = 0.0
    for c in coeffs[1:]:
        b2, b1 = b1, b0
        b0 = y * b1 - b2 + c
    return (b0 - b2) * 0.5


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
        1.144463079807
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
        0.088256964216
    """
    return _y(input, 0)


def bessel_y1(input: Any) -> Tensor:  # noqa: A002
    """The Bessel function of the second kind of order 1; gradient ``Y0 - Y1/x``.

    Example:
        >>> import xad
        >>> round(xad.bessel_y1(xad.tensor([1.0], dtype=xad.float64)).item(), 12)
        -0.7812128213
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


def _airy_series(x: Tensor) -> Tensor:
    """``Ai`` by its Maclaurin series ``c1 f(x) - c2 g(x)`` (Cephes', for ``abs(x) < 2.09``)."""
    z = x * x * x
    f, g, m, n, k = x * 0.0 + 1.0, x, x * 0.0 + 1.0, x, 1.0
    for _ in range(_AI_SERIES):
        m = m * z / ((k + 1.0) * (k + 2.0))
        n = n * z / ((k + 2.0) * (k + 3.0))
        k += 3.0
        f, g = f + m, g + n
    return f * 0.355028053887817239260 - g * 0.258819403792806798405


def airy_ai(input: Any) -> Tensor:  # noqa: A002
    """The Airy function ``Ai`` (NaN at ``+-inf`` and 0 above 103.892, as PyTorch's);
    gradient ``Ai'`` (PyTorch's has none). Below -2.09 Cephes' denominators keep their leading
    1 (PyTorch's drop it: 6e-6 off) and the phase ``zeta + pi/4`` comes from ``sin zeta``
    and ``cos zeta``.

    Example:
        >>> import xad
        >>> round(xad.airy_ai(xad.tensor([1.0], dtype=xad.float64)).item(), 12)
        0.135292416313
    """
    x = _floating(input)
    neg, pos = x < -2.09, x >= 2.09
    xn = where(neg & ~isinf(x), x, -4.0)
    r = sqrt(-xn)
    zeta = xn * r * (-2.0 / 3.0)
    z = 1.0 / zeta
    zz = z * z
    uf = zz * _poly(zz, _AI_FN) / _poly(zz, _AI_FD, monic=True) + 1.0
    ug = z * _poly(zz, _AI_GN) / _poly(zz, _AI_GD, monic=True)
    s, c = sin(zeta), cos(zeta)  # sin(zeta + pi/4) = (s + c) / sqrt 2, cos: (c - s) / sqrt 2
    tail = ((s + c) * uf - (c - s) * ug) * (_SQRT_1_PI * math.sqrt(0.5)) / sqrt(sqrt(-xn))
    xp = where(pos & (x <= 103.892), x, 4.0)
    zp = xp * sqrt(xp) * (2.0 / 3.0)
    w = 1.0 / zp
    decay = _poly(w, _AI_N) / _poly(w, _AI_D) * _SQRT_1_PI / (sqrt(sqrt(xp)) * 2.0 * exp(zp))
    out = where(neg, tail, where(pos, decay, _airy_series(where(neg | pos, 0.0, x))))
    out = where(x > 103.892, 0.0, out)
    return where(isinf(x), math.nan, out)
