"""Update rules of the optimisers added after the first five (``Adamax NAdam RAdam Rprop
Adadelta ASGD``), each written once as a pure function of arrays: ``rule(x, state, g, c,
xp) -> (new_x, new_state)`` with ``c`` the step's numbers (and flags, fixed per kernel),
and the formula of those numbers (``*_numbers(t, lr, ..., ns)``), written once too: Python
numbers on the host, device values in one kernel per group on CuPy (:mod:`.capturable`;
the step of both: :mod:`.rule_step`). :func:`step_with_rule` runs a rule on a parameter
through the shared update path (in place where the backend's arrays are mutable, by
rebinding on JAX), so the rule is the only statement of the update.
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from .optimizer import _apply

__all__ = ["adamax_numbers", "adamax_rule", "nadam_numbers", "nadam_rule", "radam_numbers",
           "radam_rule", "rprop_rule", "adadelta_rule", "asgd_numbers", "asgd_rule",
           "step_with_rule"]


def _decayed(x: Any, g: Any, wdf: Any, decay: bool, decoupled: bool) -> tuple[Any, Any]:
    """L2 decay added to the gradient (``wdf`` the weight decay), or decoupled decay applied
    to the parameter (``wdf`` is ``1 - lr * wd``); none where ``decay`` (a flag fixed per
    kernel) is false."""
    if not decay:
        return x, g
    return (x * wdf, g) if decoupled else (x, g + wdf * x)


def _decay_factor(lr: Any, wd: Any, decoupled: bool) -> Any:
    """``1 - lr * wd`` (decoupled weight decay) or ``wd`` (see :func:`_decayed`)."""
    return 1 - lr * wd if decoupled else wd


def adamax_numbers(t: Any, lr: Any, b1: Any, ns: Any) -> tuple[Any]:
    """Adamax's step size at step ``t``: ``lr / (1 - b1**t)``."""
    return (lr / (1 - b1 ** t),)


def adamax_rule(x: Any, state: list, g: Any, c: tuple, xp: Any) -> tuple[Any, list]:
    """Adamax: ``m = b1 m + (1-b1) g``; ``u = max(b2 u, |g| + eps)``;
    ``x -= lr / (1 - b1**t) * m / u`` (``c``: ``1 - b1``, ``b2``, ``eps``, ``wd``, the
    decay flag, the step size of :func:`adamax_numbers`)."""
    one_minus_b1, b2, eps, wd, decay, step_size = c
    m, u = state
    x, g = _decayed(x, g, wd, decay, False)
    m = m + (g - m) * one_minus_b1
    u = xp.maximum(u * b2, xp.abs(g) + eps)
    return x - step_size * (m / u), [m, u]


def nadam_numbers(t: Any, lr: Any, mu_product: Any, b1: Any, b2: Any, psi: Any, wd: Any,
                  decoupled: bool, ns: Any) -> tuple[Any, ...]:
    """NAdam's numbers at step ``t``, with PyTorch's momentum schedule ``mu_t = b1 (1 -
    0.96**(t psi) / 2)``: ``1 - b2**t``, the gradient's and the momentum's step sizes
    ``lr (1 - mu_t) / (1 - prod mu)`` and ``lr mu_{t+1} / (1 - prod mu mu_{t+1})``, the
    decay factor; then the product of the ``mu`` so far (``mu_product`` times ``mu_t``)."""
    mu = b1 * (1 - 0.5 * ns.power(0.96, t * psi))  # (CuPy's fusion has no 0.96 ** t)
    mu_next = b1 * (1 - 0.5 * ns.power(0.96, (t + 1) * psi))
    mu_product = mu_product * mu
    return (1 - b2 ** t, lr * (1 - mu) / (1 - mu_product),
            lr * mu_next / (1 - mu_product * mu_next), _decay_factor(lr, wd, decoupled),
            mu_product)


def nadam_rule(x: Any, state: list, g: Any, c: tuple, xp: Any) -> tuple[Any, list]:
    """NAdam (Dozat): ``x -= s1 g / d + s2 m / d`` with ``d = sqrt(v / (1 - b2**t)) + eps``
    and the step sizes ``s1``, ``s2`` of :func:`nadam_numbers`."""
    one_minus_b1, b2, one_minus_b2, eps, decay, decoupled, bc2, step1, step2, wdf = c
    m, v = state
    x, g = _decayed(x, g, wdf, decay, decoupled)
    m = m + (g - m) * one_minus_b1
    v = v * b2 + g * g * one_minus_b2
    d = (v / bc2) ** 0.5 + eps
    x = x - step1 * (g / d)
    return x - step2 * (m / d), [m, v]


def radam_numbers(t: Any, lr: Any, b1: Any, b2: Any, wd: Any, decoupled: bool,
                  ns: Any) -> tuple[Any, ...]:
    """RAdam's numbers at step ``t``: ``lr``, ``1 - b1**t``, ``sqrt(1 - b2**t)``, the
    rectification ``r_t``, whether it applies (the variance's degrees of freedom ``rho_t``
    exceed 5: a number the device's kernel selects on, a flag on the host), the decay
    factor."""
    bc1, bc2 = 1 - b1 ** t, 1 - b2 ** t
    rho_inf = 2 / (1 - b2) - 1
    rho_t = rho_inf - 2 * t * b2 ** t / bc2
    on = rho_t > 5  # (then rho_inf > 5 too: the denominator is positive)
    ratio = (rho_t - 4) * (rho_t - 2) * rho_inf / ns.where(
        on, (rho_inf - 4) * (rho_inf - 2) * rho_t, 1.0)
    return (lr, bc1, ns.sqrt(bc2), ns.sqrt(ns.where(on, ratio, 1.0)), on,
            _decay_factor(lr, wd, decoupled))


def radam_rule(x: Any, state: list, g: Any, c: tuple, xp: Any) -> tuple[Any, list]:
    """RAdam (Liu et al.): Adam's step rectified by ``r_t`` once ``rho_t`` exceeds 5, plain
    bias-corrected momentum before (``on`` of :func:`radam_numbers`)."""
    one_minus_b1, b2, one_minus_b2, eps, decay, decoupled, lr, bc1, root_bc2, rect, on, \
        wdf = c
    m, v = state
    x, g = _decayed(x, g, wdf, decay, decoupled)
    m = m + (g - m) * one_minus_b1
    v = v * b2 + g * g * one_minus_b2
    step = (m / bc1) * lr
    if on is False:  # decided on the host
        return x - step, [m, v]
    rectified = step * (root_bc2 / (v ** 0.5 + eps)) * rect
    return x - (rectified if on is True else xp.where(on > 0, rectified, step)), [m, v]


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
    rho, one_minus_rho, eps, wd, decay, lr = c
    v, u = state
    g = g + x * wd if decay else g
    v = v * rho + g * g * one_minus_rho
    d = (u + eps) ** 0.5 / (v + eps) ** 0.5 * g
    u = u * rho + d * d * one_minus_rho
    return x - d * lr, [v, u]


def asgd_numbers(t: Any, lr: Any, eta: Any, mu: Any, lambd: Any, alpha: Any, t0: Any,
                 ns: Any) -> tuple[Any, ...]:
    """ASGD's numbers at step ``t``: ``eta`` and ``mu`` (those computed at the step before;
    ``eta = lr`` at the first), ``1 - lambd eta``, whether to average (``mu != 1``); then
    ``eta = lr / (1 + lambd lr t) ** alpha`` and ``mu = 1 / max(1, t - t0)`` for the next
    step."""
    eta = ns.where(t == 1, lr, eta)
    return (eta, 1 - lambd * eta, mu, mu != 1, lr / (1 + lambd * lr * t) ** alpha,
            1 / ns.maximum(1, t - t0))


def asgd_rule(x: Any, state: list, g: Any, c: tuple, xp: Any) -> tuple[Any, list]:
    """Averaged SGD (Polyak-Juditsky, PyTorch's form): ``x = x (1 - lambd eta) - eta g``,
    then the average ``ax += (x - ax) mu`` (``ax = x`` while ``mu == 1``: ``averaging``, a
    flag on the host, a number the device's kernel selects on); ``decay`` as Adadelta's."""
    wd, decay, eta, one_minus_lambd_eta, mu, averaging = c
    (ax,) = state
    g = g + x * wd if decay else g
    x = x * one_minus_lambd_eta - g * eta
    if averaging is False:
        return x, [x]
    averaged = ax + (x - ax) * mu
    return x, [averaged if averaging is True else xp.where(averaging > 0, averaged, x)]


def _assigning(rule: Any) -> Any:
    """The in-place form of ``rule``: its results written into the arrays it read."""
    def kernel(rw: list, g: Any, t: Any, gw: Any, c: tuple, xp: Any) -> None:
        x, new = rule(rw[0], rw[1:], g, c, xp)
        rw[0][...] = x
        for a, n in zip(rw[1:], new):
            a[...] = n
    return kernel


_KERNELS: dict[Any, Any] = {}


def step_with_rule(scratch: dict, p: Tensor, state: list[Tensor | None], g: Tensor, rule: Any,
                   c: tuple, maximize: bool = False) -> None:
    """Update ``p`` and its ``state`` tensors by ``rule`` for gradient ``g`` (``-g`` with
    ``maximize``)."""
    kernel = _KERNELS.get(rule)
    if kernel is None:
        kernel = _KERNELS[rule] = _assigning(rule)
    _apply(scratch, p, 1, kernel, rule, state, g._array, c, p._backend.xp, maximize=maximize)
