"""``torch.special``'s orthogonal polynomials of ``(input, n)``, composed of xad's operations
with PyTorch 2.13's branches (aten/src/ATen/native/Math.h): 0 for ``n < 0`` (``n`` truncated
toward zero, NaN and ``inf`` count as negative), the three-term recurrence, and for the
Chebyshev polynomials at ``abs(x) < 1`` and ``n`` past a small threshold, the trigonometric
forms (``T_n = cos(n acos x)``, ...). The recurrence runs on each element only up to its own
``n`` (the others keep their value), so a large ``n`` elsewhere reaches no overflow there;
its length, the largest ``n`` that takes it, is read on the host once when ``n`` is a
tensor. Gradients are in ``input`` (PyTorch's have none); ``n`` has none.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .. import dtypes as _dt
from ..tensor import Tensor
from .elementwise import abs, cos, isfinite, sin, where
from .elementwise_math import acos, trunc
from .reduce import max as _max
from .torch_compositions import floating_pair

__all__ = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"]

_LONGEST = 1 << 16  # recurrence steps: beyond, a clear error rather than minutes of work
_Step = Callable[[int, Tensor, Tensor], Tensor]


def _operands(input: Any, n: Any) -> tuple[Tensor, Tensor, int | None]:  # noqa: A002
    """``x`` and the truncated ``n`` as floating tensors (PyTorch's promotion of the pair; -1
    for a NaN or infinite ``n``), and ``n`` as a Python int where it was a number."""
    x, nf = floating_pair(input, n.detach() if isinstance(n, Tensor) else n)
    nt = where(isfinite(nf), trunc(nf), -1.0)
    if isinstance(n, Tensor):
        return x, nt, None
    return x, nt, int(n) if math.isfinite(n) else -1


def _steps(nt: Tensor, scalar: int | None, takes: Tensor | None, name: str) -> int:
    """The recurrence's length: the largest ``n`` among the elements that ``takes`` it (all
    where ``None``), read on the host when ``n`` is a tensor."""
    if scalar is not None and takes is None:
        count = scalar
    elif nt.numel() == 0:
        count = 0
    else:
        on = nt if takes is None else where(takes, nt, 0.0)
        count = int(_max(on).item())
    if count > _LONGEST:
        raise NotImplementedError(
            f"{name}: n = {count} needs {count} recurrence steps on these inputs; xad runs "
            f"at most {_LONGEST} (PyTorch loops per element); split the computation or "
            "use a smaller n")
    return count


def _recurrence(nt: Tensor, count: int, first: Tensor, step: _Step) -> Tensor:
    """Degree ``nt`` of ``p_0 = 1``, ``p_1 = first``, ``p_j = step(j, p_{j-2}, p_{j-1})``
    (0 for ``nt < 0``); each element stops at its own degree."""
    p: Any = 1.0  # a number, not first * 0 + 1: NaN where first is infinite
    q = first
    for j in range(2, count + 1):
        live = nt >= j
        p, q = where(live, q, p), where(live, step(j, p, q), q)
    return where(nt < 0, 0.0, where(nt == 0, 1.0, q))


def _trig(kind: str, y: Tensor, nt: Tensor) -> Tensor:
    """The trigonometric form of ``kind`` at ``abs(y) < 1``. ``V`` and ``W`` below 0 by
    ``V_n(y) = (-1)^n W_n(-y)`` (and back), so ``theta/2`` stays away from ``pi/2``, where
    the quotient's divisor would lose its digits; PyTorch's limits ``+-(2n + 1)``, taken
    where its ``sin(theta/2)`` or ``cos(theta/2)`` rounds to 1, are ``n^2 theta^2`` off."""
    if kind in "tu":
        t = acos(y)
        return cos(nt * t) if kind == "t" else sin((nt + 1.0) * t) / sin(t)
    neg = y < 0
    t = acos(abs(y))
    half = t * 0.5
    vform = cos((nt + 0.5) * t) / cos(half)  # V at abs(y), W at abs(y) below
    wform = sin((nt + 0.5) * t) / sin(half)
    sign = where(nt - trunc(nt * 0.5) * 2.0 != 0, -1.0, 1.0)
    if kind == "v":
        return where(neg, sign * wform, vform)
    return where(neg, sign * vform, wform)


_FIRST = {"t": lambda y: y, "u": lambda y: y + y, "v": lambda y: y + y - 1.0,
          "w": lambda y: y + y + 1.0}


def _chebyshev(input: Any, n: Any, kind: str, shifted: bool) -> Tensor:  # noqa: A002
    """``T``/``U``/``V``/``W`` (``kind``) at ``x`` (at ``2x - 1`` where ``shifted``)."""
    x, nt, scalar = _operands(input, n)
    y = x + x - 1.0 if shifted else x
    # PyTorch's thresholds of n above which abs(y) < 1 takes the trigonometric form
    above = {"t": 6, "u": 6 if shifted else 8, "v": 6 if shifted else 8,
             "w": 4 if shifted else 8}[kind]
    trig = (abs(y) < 1.0) & (nt > above)
    name = f"{'shifted_' if shifted else ''}chebyshev_polynomial_{kind}"
    small = scalar is not None and scalar <= above  # no element takes the other form
    count = _steps(nt, scalar if small else None, None if small else ~trig, name)
    yr = where(trig, 0.0, y)  # the recurrence's stand-in where the other form is taken
    out = _recurrence(nt, count, _FIRST[kind](yr), lambda j, p, q: (yr + yr) * q - p)
    return where(trig, _trig(kind, where(trig, y, 0.0), nt), out)


def chebyshev_polynomial_t(input: Any, n: Any) -> Tensor:  # noqa: A002
    """The Chebyshev polynomial of the first kind ``T_n(input)``; gradient ``n U_{n-1}``.

    Example:
        >>> import xad
        >>> xad.chebyshev_polynomial_t(xad.tensor([0.5, 2.0]), 3).tolist()
        [-1.0, 26.0]
    """
    return _chebyshev(input, n, "t", False)


def chebyshev_polynomial_u(input: Any, n: Any) -> Tensor:  # noqa: A002
    """The Chebyshev polynomial of the second kind ``U_n(input)``.

    Example:
        >>> import xad
        >>> xad.chebyshev_polynomial_u(xad.tensor([0.5, 2.0]), 3).tolist()
        [-1.0, 56.0]
    """
    return _chebyshev(input, n, "u", False)


def chebyshev_polynomial_v(input: Any, n: Any) -> Tensor:  # noqa: A002
    """The Chebyshev polynomial of the third kind ``V_n(input)``.

    Example:
        >>> import xad
        >>> xad.chebyshev_polynomial_v(xad.tensor([0.5, 2.0]), 3).tolist()
        [-1.0, 41.0]
    """
    return _chebyshev(input, n, "v", False)


def chebyshev_polynomial_w(input: Any, n: Any) -> Tensor:  # noqa: A002
    """The Chebyshev polynomial of the fourth kind ``W_n(input)``.

    Example:
        >>> import xad
        >>> xad.chebyshev_polynomial_w(xad.tensor([0.5, 2.0]), 3).tolist()
        [-1.0, 71.0]
    """
    return _chebyshev(input, n, "w", False)


def shifted_chebyshev_polynomial_t(input: Any, n: Any) -> Tensor:  # noqa: A002
    """``T_n(2 input - 1)``, the Chebyshev polynomial of the first kind on ``[0, 1]``.

    Example:
        >>> import xad
        >>> xad.shifted_chebyshev_polynomial_t(xad.tensor([0.75, 1.5]), 3).tolist()
        [-1.0, 26.0]
    """
    return _chebyshev(input, n, "t", True)


def shifted_chebyshev_polynomial_u(input: Any, n: Any) -> Tensor:  # noqa: A002
    """``U_n(2 input - 1)``.

    Example:
        >>> import xad
        >>> xad.shifted_chebyshev_polynomial_u(xad.tensor([0.75, 1.5]), 3).tolist()
        [-1.0, 56.0]
    """
    return _chebyshev(input, n, "u", True)


def shifted_chebyshev_polynomial_v(input: Any, n: Any) -> Tensor:  # noqa: A002
    """``V_n(2 input - 1)``.

    Example:
        >>> import xad
        >>> xad.shifted_chebyshev_polynomial_v(xad.tensor([0.75, 1.5]), 3).tolist()
        [-1.0, 41.0]
    """
    return _chebyshev(input, n, "v", True)


def shifted_chebyshev_polynomial_w(input: Any, n: Any) -> Tensor:  # noqa: A002
    """``W_n(2 input - 1)``.

    Example:
        >>> import xad
        >>> xad.shifted_chebyshev_polynomial_w(xad.tensor([0.75, 1.5]), 3).tolist()
        [-1.0, 71.0]
    """
    return _chebyshev(input, n, "w", True)


def _hermite(input: Any, n: Any, physicists: bool) -> Tensor:  # noqa: A002
    """``H_n`` (``He_n`` unless ``physicists``); NaN past PyTorch's largest ``n`` (512 in
    float64, 128 below)."""
    x, nt, scalar = _operands(input, n)
    limit = 512 if x.dtype is _dt.float64 else 128
    name = "hermite_polynomial_h" if physicists else "hermite_polynomial_he"
    if scalar is not None:
        count = scalar if scalar <= limit else 0
    else:
        count = _steps(nt, None, nt <= limit, name)
    if physicists:
        out = _recurrence(nt, count, x + x, lambda j, p, q: (x + x) * q - (2 * j - 2) * p)
    else:
        out = _recurrence(nt, count, x, lambda j, p, q: x * q - (j - 1) * p)
    return where(nt > limit, math.nan, out)


def hermite_polynomial_h(input: Any, n: Any) -> Tensor:  # noqa: A002
    """The physicists' Hermite polynomial ``H_n(input)`` (NaN for ``n`` above 512 in
    float64, 128 in float32, as PyTorch's); gradient ``2 n H_{n-1}``.

    Example:
        >>> import xad
        >>> xad.hermite_polynomial_h(xad.tensor([0.5, 2.0]), 3).tolist()
        [-5.0, 40.0]
    """
    return _hermite(input, n, True)


def hermite_polynomial_he(input: Any, n: Any) -> Tensor:  # noqa: A002
    """The probabilists' Hermite polynomial ``He_n(input)``; gradient ``n He_{n-1}``.

    Example:
        >>> import xad
        >>> xad.hermite_polynomial_he(xad.tensor([0.5, 2.0]), 3).tolist()
        [-1.375, 2.0]
    """
    return _hermite(input, n, False)


def laguerre_polynomial_l(input: Any, n: Any) -> Tensor:  # noqa: A002
    """The Laguerre polynomial ``L_n(input)``.

    Example:
        >>> import xad
        >>> xad.laguerre_polynomial_l(xad.tensor([0.5, 2.0]), 2).tolist()
        [0.125, -1.0]
    """
    x, nt, scalar = _operands(input, n)
    count = _steps(nt, scalar, None, "laguerre_polynomial_l")
    one_minus = 1.0 - x
    return _recurrence(nt, count, one_minus,
                       lambda j, p, q: ((one_minus + (2 * j - 2)) * q - (j - 1) * p) / j)


def legendre_polynomial_p(input: Any, n: Any) -> Tensor:  # noqa: A002
    """The Legendre polynomial ``P_n(input)``.

    Example:
        >>> import xad
        >>> xad.legendre_polynomial_p(xad.tensor([0.5, 2.0]), 2).tolist()
        [-0.125, 5.5]
    """
    x, nt, scalar = _operands(input, n)
    count = _steps(nt, scalar, None, "legendre_polynomial_p")
    return _recurrence(nt, count, x, lambda j, p, q: (x * (2 * j - 1) * q - (j - 1) * p) / j)
