"""Update rules of the optimisers added after the first five (``Adamax NAdam RAdam Rprop
Adadelta ASGD``), each written once as a pure function of arrays: ``rule(x, state, g, c,
xp) -> (new_x, new_state)`` with ``c`` the step's Python numbers (and flags, fixed per
kernel). :func:`step_with_rule` runs one on a parameter through the shared update path (in
place where the backend's arrays are mutable, by rebinding on JAX), so the rule is the only
statement of the update.
"""

from __future__ import annotations

import math
from typing import Any

from ..tensor import Tensor
from .optimizer import _apply

__all__ = ["adamax_rule", "nadam_rule", "radam_rule", "rprop_rule", "adadelta_rule",
           "asgd_rule", "step_with_rule"]


def _decayed(x: Any, g: Any, lr: float, wd: float | None,
             decoupled: bool) -> tuple[Any, Any]:
    """L2 decay added to the gradient, or decoupled decay applied to the parameter; ``wd``
    is ``None`` for none (a fixed part of a fused kernel, where a number is an argument)."""
    if wd is None:
        return x, g
    return (x * (1 - lr * wd), g) if decoupled else (x, g + wd * x)


def adamax_rule(x: Any, state: list, g: Any, c: tuple, xp: Any) -> tuple[Any, list]:
    """Adamax: ``m = b1 m + (1-b1) g``; ``u = max(b2 u, |g| + eps)``;
    ``x -= lr / (1 - b1**t) * m / u``."""
    lr, b1, b2, eps, wd, t = c
    m, u = state
    x, g = _decayed(x, g, lr, wd, False)
    m = m + (g - m) * (1 - b1)
    u = xp.maximum(u * b2, xp.abs(g) + eps)
    return x - (lr / (1 - b1 ** t)) * (m / u), [m, u]


def nadam_rule(x: Any, state: list, g: Any, c: tuple, xp: Any) -> tuple[Any, list]:
    """NAdam (Dozat) with PyTorch's momentum schedule ``mu_t = b1 (1 - 0.96**(t psi) / 2)``:
    ``x -= lr (1 - mu_t) / (1 - prod mu) g / d + lr mu_{t+1} / (1 - prod mu mu_{t+1}) m / d``
    with ``d = sqrt(v / (1 - b2**t)) + eps``; ``c`` carries ``mu_t``, ``mu_{t+1}`` and the
    product."""
    lr, b1, b2, eps, wd, t, decoupled, mu, mu_next, mu_product = c
    m, v = state
    x, g = _decayed(x, g, lr, wd, decoupled)
    m = m + (g - m) * (1 - b1)
    v = v * b2 + g * g * (1 - b2)
    d = (v / (1 - b2 ** t)) ** 0.5 + eps
    x = x - (lr * (1 - mu) / (1 - mu_product)) * (g / d)
    return x - (lr * mu_next / (1 - mu_product * mu_next)) * (m / d), [m, v]


def radam_rule(x: Any, state: list, g: Any, c: tuple, xp: Any) -> tuple[Any, list]:
    """RAdam (Liu et al.): Adam's step rectified by ``r_t`` once the variance's degrees of
    freedom ``rho_t`` exceed 5, plain bias-corrected momentum before."""
    lr, b1, b2, eps, wd, decoupled, bc1, root_bc2, rect = c
    m, v = state
    x, g = _decayed(x, g, lr, wd, decoupled)
    m = m + (g - m) * (1 - b1)
    v = v * b2 + g * g * (1 - b2)
    if rect is None:  # rho_t <= 5: decided on the host (radam_rectification)
        return x - (m / bc1) * lr, [m, v]
    return x - (m / bc1) * lr * (root_bc2 / (v ** 0.5 + eps)) * rect, [m, v]


def radam_rectification(b1: float, b2: float, t: int) -> tuple[float, float, float | None]:
    """RAdam's step scalars on the host: ``1 - b1**t``, ``sqrt(1 - b2**t)`` and the
    rectification ``r_t`` (``None`` while ``rho_t <= 5``)."""
    bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
    rho_inf = 2 / (1 - b2) - 1
    rho_t = rho_inf - 2 * t * b2 ** t / bc2
    if rho_t <= 5:
        return bc1, math.sqrt(bc2), None
    return bc1, math.sqrt(bc2), math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                                          / ((rho_inf - 4) * (rho_inf - 2) * rho_t))


def rprop_rule(x: Any, state: list, g: Any, c: tuple, xp: Any) -> tuple[Any, list]:
    """Rprop: each step size grows by ``eta_plus`` where the gradient kept its sign, shrinks
    by ``eta_minus`` where it flipped (and that gradient counts as 0), clamped to
    ``[step_min, step_max]``; ``x -= sign(g) * step``."""
    eta_minus, eta_plus, step_min, step_max = c
    prev, size = state
    s = g * prev  # where, maximum, minimum: ufuncs, so the rule fuses (clip, sign do not)
    size = xp.where(s > 0, size * eta_plus, xp.where(s < 0, size * eta_minus, size))
    size = xp.minimum(xp.maximum(size, step_min), step_max)
    g = xp.where(s < 0, 0.0, g)
    return x - xp.where(g > 0, size, xp.where(g < 0, -size, 0.0)), [g, size]


def adadelta_rule(x: Any, state: list, g: Any, c: tuple, xp: Any) -> tuple[Any, list]:
    """Adadelta (Zeiler): ``v = rho v + (1-rho) g^2``;
    ``d = sqrt(u + eps) / sqrt(v + eps) * g``; ``u = rho u + (1-rho) d^2``; ``x -= lr d``
    (``decay``, a flag fixed per kernel: ``g += wd x`` first)."""
    lr, rho, eps, wd, decay = c
    v, u = state
    g = g + x * wd if decay else g
    v = v * rho + g * g * (1 - rho)
    d = (u + eps) ** 0.5 / (v + eps) ** 0.5 * g
    u = u * rho + d * d * (1 - rho)
    return x - d * lr, [v, u]


def asgd_rule(x: Any, state: list, g: Any, c: tuple, xp: Any) -> tuple[Any, list]:
    """Averaged SGD (Polyak-Juditsky, PyTorch's form): ``x = x (1 - lambd eta) - eta g``,
    then the average ``ax += (x - ax) mu`` (``ax = x`` while ``mu == 1``: ``averaging`` is
    ``False``); ``decay`` as Adadelta's."""
    eta, lambd, mu, wd, decay, averaging = c
    (ax,) = state
    g = g + x * wd if decay else g
    x = x * (1 - lambd * eta) - g * eta
    return x, [ax + (x - ax) * mu if averaging else x]


def _assigning(rule: Any) -> Any:
    """The in-place form of ``rule``: its results written into the arrays it read."""
    def kernel(rw: list, g: Any, t: Any, gw: Any, c: tuple, xp: Any) -> None:
        x, new = rule(rw[0], rw[1:], g, c, xp)
        rw[0][...] = x
        for a, n in zip(rw[1:], new):
            a[...] = n
    return kernel


_KERNELS: dict[Any, Any] = {}


def step_with_rule(scratch: dict, p: Tensor, state: list[Tensor], g: Tensor, rule: Any,
                   c: tuple, maximize: bool = False) -> None:
    """Update ``p`` and its ``state`` tensors by ``rule`` for gradient ``g`` (``-g`` with
    ``maximize``)."""
    kernel = _KERNELS.get(rule)
    if kernel is None:
        kernel = _KERNELS[rule] = _assigning(rule)
    _apply(scratch, p, 1, kernel, rule, state, g._array, c, p._backend.xp, maximize=maximize)
