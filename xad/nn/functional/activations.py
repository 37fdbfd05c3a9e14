"""More activations as functions, with PyTorch's names, defaults and gradients at the kinks
(``leaky_relu rrelu elu selu celu silu mish hardtanh relu6 hardsigmoid hardswish prelu
logsigmoid softsign tanhshrink glu softshrink hardshrink threshold``, and ``gumbel_softmax``),
each composed from xad's primitives.

Branches that would overflow where they are not selected (``exp`` of a large input) are
clamped first, so no ``inf * 0`` reaches a gradient. Each keeps its input's dtype, under
autocast too (none is on its lists; PyTorch runs each as one kernel): those made of listed
parts (``expm1``, ``softplus``) run with autocast off.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from ... import dtypes as _dt
from ... import ops as _ops
from ...factories import arange, full_like, rand
from ...ops.amp_cast import autocast_low, unlisted
from ...tensor import Tensor

__all__ = ["leaky_relu", "rrelu", "gumbel_softmax", "elu", "selu", "celu", "silu", "mish",
           "hardtanh", "relu6", "hardsigmoid", "hardswish", "prelu", "logsigmoid", "softsign",
           "tanhshrink", "glu", "softshrink", "hardshrink", "threshold", "threshold_"]

def in_place(fn: Any, input: Tensor, name: str, *args: Any) -> Tensor:
    """``fn(input, *args)`` written into ``input``, which is returned: PyTorch's
    ``inplace=True`` (the input's values change and its version counts; a leaf that requires
    grad refuses; the gradient is the function's, from the value before the change)."""
    return _ops.assign_result(input, fn(input._alias(), *args), name)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` where ``x > 0``, else ``negative_slope * x`` (slope ``negative_slope`` at 0).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.leaky_relu(xad.tensor([-2.0, 3.0]), 0.25).tolist()
        [-0.5, 3.0]
    """
    if inplace:
        return in_place(leaky_relu, input, "leaky_relu_", negative_slope)
    return _ops.where(input > 0, input, input * negative_slope)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: ``x`` where ``x > 0``, else ``a x`` with ``a`` drawn uniformly
    from ``[lower, upper]`` per element when ``training`` (the gradient is ``a`` there), and
    ``a = (lower + upper) / 2`` otherwise (PyTorch's; the draws are xad's generator's).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.rrelu(xad.tensor([-3.0, 2.0]), 0.25, 0.75).tolist()
        [-1.5, 2.0]
    """
    if lower > upper:
        raise ValueError(f"rrelu: lower bound {lower} must be at most the upper bound {upper}")
    if inplace:
        return in_place(rrelu, input, "rrelu_", lower, upper, training)
    if not training:
        return leaky_relu(input, (lower + upper) / 2)
    u = rand(*input.shape, dtype=input.dtype, backend=input._backend)
    return _ops.where(input > 0, input, input * (u * (upper - lower) + lower))


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A sample of the Gumbel-softmax distribution: ``softmax((logits + g) / tau)`` along
    ``dim``, ``g`` standard Gumbel noise from xad's generator; with ``hard=True`` the one-hot
    of its first largest entry, with the soft sample's gradient (PyTorch's straight-through
    ``y_hard - y_soft.detach() + y_soft``). ``eps`` has no effect (deprecated in PyTorch).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> y = F.gumbel_softmax(xad.zeros(2, 3), hard=True)
        >>> y.sum(dim=-1).tolist()
        [1.0, 1.0]
    """
    if eps != 1e-10:
        warnings.warn("gumbel_softmax: `eps` has no effect (deprecated, as in PyTorch)",
                      stacklevel=2)
    u = rand(*logits.shape, dtype=logits.dtype, backend=logits._backend)
    gumbels = -_ops.log(-_ops.log1p(-u))  # -log of an Exponential(1) draw
    y = _ops.softmax((logits + gumbels) / tau, axis=dim)
    if not hard:
        return y
    d = dim % y.ndim
    classes = arange(y.shape[d], backend=y._backend).reshape(
        (-1,) + (1,) * (y.ndim - 1 - d))
    one_hot = (_ops.argmax(y, axis=d, keepdims=True) == classes).astype(y.dtype)
    return one_hot - y.detach() + y


@unlisted
def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> [round(v, 4) for v in F.elu(xad.tensor([-1.0, 2.0])).tolist()]
        [-0.6321, 2.0]
    """
    if inplace:
        return in_place(elu, input, "elu_", alpha)
    pos = input > 0
    return _ops.where(pos, input, _ops.expm1(_ops.where(pos, 0.0, input)) * alpha)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(x, alpha)`` with the self-normalising constants of Klambauer et al.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> round(F.selu(xad.tensor([1.0])).item(), 4)
        1.0507
    """
    if inplace:
        return in_place(selu, input, "selu_")
    return elu(input, _SELU_ALPHA) * _SELU_SCALE


@unlisted
def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` where ``x > 0``, else ``alpha * (exp(x / alpha) - 1)``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> round(F.celu(xad.tensor([-1.0]), 2.0).item(), 4)
        -0.7869
    """
    if inplace:
        return in_place(celu, input, "celu_", alpha)
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0 (it divides the input)")
    pos = input > 0
    return _ops.where(pos, input, _ops.expm1(_ops.where(pos, 0.0, input) / alpha) * alpha)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)`` (swish).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> round(F.silu(xad.tensor([1.0])).item(), 4)
        0.7311
    """
    if inplace:
        return in_place(silu, input, "silu_")
    return input * _ops.sigmoid(input)


@unlisted
def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> round(F.mish(xad.tensor([1.0])).item(), 4)
        0.8651
    """
    if inplace:
        return in_place(mish, input, "mish_")
    return input * _ops.tanh(_ops.softplus(input))


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """``x`` clamped to ``[min_val, max_val]``; gradient 1 strictly inside, 0 at and beyond
    the bounds and at NaN (PyTorch's, as its vectorised CPU loop gives it).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.hardtanh(xad.tensor([-2.0, 0.5, 2.0])).tolist()
        [-1.0, 0.5, 1.0]
    """
    if inplace:
        return in_place(hardtanh, input, "hardtanh_", min_val, max_val)
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val {min_val} is greater than max_val {max_val}")
    if not input.dtype.is_floating and input.dtype is not _dt.bool_:
        # an integer tensor keeps its dtype, the bounds cast to it (PyTorch's: they were
        # float32 results)
        return _ops.clip(input, int(min_val), int(max_val))
    inside = _ops.logical_and(input > min_val, input < max_val)
    outside = _ops.where(input <= min_val, float(min_val),  # (NaN in the input's dtype)
                         _ops.where(input >= max_val, float(max_val), full_like(input, math.nan)))
    return _ops.where(inside, input, outside)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(x, 0), 6)``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.relu6(xad.tensor([-1.0, 7.0])).tolist()
        [0.0, 6.0]
    """
    if inplace:
        return in_place(relu6, input, "relu6_")
    return hardtanh(input, 0.0, 6.0)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``; gradient ``1/6`` strictly between -3 and 3, else 0 (at NaN
    too, as PyTorch's).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.hardsigmoid(xad.tensor([-4.0, 0.0, 4.0])).tolist()
        [0.0, 0.5, 1.0]
    """
    if inplace:
        return in_place(hardsigmoid, input, "hardsigmoid_")
    mid = _ops.logical_and(input > -3.0, input < 3.0)
    inner = _ops.where(mid, input, 0.0)  # no gradient from outside (-3, 3) reaches x
    return _ops.where(mid, inner / 6.0 + 0.5,
                      _ops.where(input <= -3.0, 0.0,
                                 _ops.where(input >= 3.0, 1.0, full_like(input, math.nan))))


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6``; at -3 and 3 the gradient is the outer pieces' (0 and 1),
    as PyTorch's, and so are its values at infinities (``-inf * 0``: NaN at ``-inf``) and
    its gradient there (0 at ``-inf``, 1 at ``+inf``).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> [round(v, 4) for v in F.hardswish(xad.tensor([-1.0, 1.0, 4.0])).tolist()]
        [-0.3333, 0.6667, 4.0]
    """
    if inplace:
        return in_place(hardswish, input, "hardswish_")
    lo, hi = input <= -3.0, input >= 3.0
    inner = _ops.where(_ops.logical_or(lo, hi), 0.0, input)  # (NaN stays: NaN gradient)
    return _ops.where(lo, input * 0.0, _ops.where(hi, input, inner * (inner + 3.0) / 6.0))


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x`` where ``x > 0``, else ``weight * x``; ``weight`` has one entry, or one per
    channel (axis 1 of the input).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.prelu(xad.tensor([[-1.0, -1.0]]), xad.tensor([0.5, 0.25])).tolist()
        [[-0.5, -0.25]]
    """
    input, weight = autocast_low(input, weight, op="prelu")  # (autocast's low list)
    n = weight.size
    if n != 1:
        if input.ndim < 2 and not (input.ndim == 1 and input.shape[0] == n):
            raise ValueError(f"prelu: {n} weights need the input's channel axis (1) to have "
                             f"size {n}, got input shape {tuple(input.shape)}")
        c = input.shape[1] if input.ndim >= 2 else input.shape[0]
        if c != n:
            raise ValueError(f"prelu: {n} weights for an input with {c} channels (axis 1 of "
                             f"shape {tuple(input.shape)})")
        if input.ndim >= 2:
            weight = weight.reshape((n,) + (1,) * (input.ndim - 2))
    else:
        weight = weight.reshape(())
    return _ops.where(input > 0, input, weight * input)


@unlisted
def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x)) = -softplus(-x)``, stably.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> round(F.logsigmoid(xad.tensor([0.0])).item(), 4)
        -0.6931
    """
    return -_ops.softplus(-input)


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.softsign(xad.tensor([1.0, -3.0])).tolist()
        [0.5, -0.75]
    """
    return input / (_ops.abs(input) + 1.0)


def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.tanhshrink(xad.tensor([0.0])).tolist()
        [0.0]
    """
    return input - _ops.tanh(input)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: the first half of axis ``dim`` times the sigmoid of the second.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.glu(xad.tensor([[2.0, 0.0]])).tolist()
        [[1.0]]
    """
    if input.ndim == 0:
        raise ValueError("glu: expected a tensor with at least one axis, got a 0-d tensor")
    axis = dim % input.ndim
    n = input.shape[axis]
    if n % 2:
        raise ValueError(f"glu: axis {dim} of an input of shape {tuple(input.shape)} has odd "
                         f"size {n}; it must split into two halves")
    a, b = _ops.split(input, 2, axis=axis)
    return a * _ops.sigmoid(b)


def _check_lambd(name: str, lambd: float) -> None:
    if lambd < 0:
        raise ValueError(f"{name}: lambd must be at least 0, got {lambd}")


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0 (gradient 0 on
    ``[-lambd, lambd]``, PyTorch's).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.softshrink(xad.tensor([-2.0, 0.25, 1.5])).tolist()
        [-1.5, 0.0, 1.0]
    """
    _check_lambd("softshrink", lambd)
    shrunk = _ops.where(input > lambd, input - lambd, input + lambd)  # (input's dtype)
    return _ops.where(_ops.abs(input) <= lambd, 0.0, shrunk)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0 (0 and gradient 0 at ``|x| == lambd``).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.hardshrink(xad.tensor([-2.0, 0.25, 0.5])).tolist()
        [-2.0, 0.0, 0.0]
    """
    return _ops.where(_ops.logical_and(input >= -lambd, input <= lambd), 0.0, input)


def _threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    v = value if input.dtype.is_floating else int(value)  # torch keeps integer dtypes
    return _ops.where(input <= threshold, v, input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``x`` where ``x > threshold``, else ``value`` (gradient 0 there); NaN stays NaN.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.threshold(xad.tensor([-1.0, 0.5, 2.0]), 0.5, -9.0).tolist()
        [-9.0, -9.0, 2.0]
    """
    if inplace:
        return in_place(_threshold, input, "threshold_", threshold, value)
    return _threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """:func:`threshold` written into ``input``, which is returned.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> x = xad.tensor([0.0, 2.0]); F.threshold_(x, 1.0, 5.0) is x, x.tolist()
        (True, [5.0, 2.0])
    """
    return in_place(_threshold, input, "threshold_", threshold, value)
