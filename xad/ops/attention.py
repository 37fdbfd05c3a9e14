"""Scaled dot-product attention as one node: ``softmax(q @ k^T * scale) @ v`` over the last
two axes, without a mask or dropout (``scaled_dot_product_attention`` and
``MultiheadAttention`` use it there).

The node keeps the ``(..., L, S)`` weights (a second output) for its rule. A backend may
compute both over pieces of the (batch, head) pairs (``Backend.attention``/
``attention_grad``: NumPy's keep each piece's scores and gradients in the CPU's cache, so
the weights pass through memory twice, written and read back, instead of a dozen times);
the reference path below uses the standard's functions on whole arrays. The rule is one
operation for the three gradients (``AttentionGrad``), or, when the backward pass is itself
recorded (``create_graph``), the same formulas in xad operations, so that higher derivatives
work.
"""

from __future__ import annotations

from typing import Any

from ..context import context
from ..tensor import Tensor
from ._apply import Op, apply
from .fused import (
    copy,
    fuses,
    product_grad,
    recorded,
    softmax_out,
    sum_exp_shifted,
    sum_product,
)
from .linalg import matmul
from .reduce import Softmax, softmax, sum
from .shape import broadcast_to, permute_dims, reshape, stack
from .shape import matrix_transpose as _mT
from .tangent import linear_jvp, total

__all__ = ["attention"]


def _weights(b: Any, q: Any, k: Any, scale: float) -> Any:
    """``softmax(q @ k^T * scale)`` over the last axis, on arrays. For ``scale > 0`` the
    scale goes inside the exponential, ``exp((s - max(s)) * scale)`` (no pass to scale
    ``q``): on CuPy the maximum, the sum of the exponentials in one reduction kernel and
    the weights in one kernel (was four); otherwise :class:`Softmax`'s forward of the
    scaled scores."""
    xp = b.xp
    if not scale > 0:
        s = xp.matmul(q * scale, xp.matrix_transpose(k))
        return Softmax.forward(b, s, (s.ndim - 1,), False, False)
    s = xp.matmul(q, xp.matrix_transpose(k))
    m, last = xp.max(s, axis=-1, keepdims=True), (s.ndim - 1,)
    return softmax_out(b, s, m, sum_exp_shifted(b, s, m, last, scale), scale)


class Attention(Op):
    """Outputs ``softmax(q @ k^T * scale) @ v`` and the weights, which the rule reads
    (:func:`attention` returns the first only)."""

    name = "attention"
    save_inputs = True
    save_output = True
    materialize_grads = False  # the weights are never used: their gradient stays None
    library = "matmul"

    @staticmethod
    def forward(b, q, k, v, scale):
        fast = b.attention(q, k, v, scale)
        if fast is not None:
            return fast
        p = _weights(b, q, k, scale)
        return b.xp.matmul(p, v), p

    @staticmethod
    def backward(node, g, g_weights):
        q, k, v = node.inputs
        scale = node.params["scale"]
        if g is None:
            return None, None, None
        if context.grad_enabled and any(t.requires_grad for t in (q, k, v, g)):
            return _grads(q, k, v, g, scale)  # create_graph: differentiable again
        return apply(AttentionGrad, q, k, v, g, node.output(1), scale=scale)

    @staticmethod
    def batch(args, batched, scale):
        """The batch axis is one more leading axis (an unbatched input broadcast to it)."""
        n = next(a.shape[0] for a, f in zip(args, batched) if f)
        q, k, v = (a if f else broadcast_to(a, (n,) + tuple(a.shape))
                   for a, f in zip(args, batched))
        return apply(Attention, q, k, v, scale=scale), (True, True)

    @staticmethod
    def jvp(primals, tangents, out, scale):
        """``dS = scale (dq k^T + q dk^T)``, ``dP = P * (dS - rowsum(P * dS))``,
        ``d(out) = dP v + P dv``; the weights' tangent is ``dP``."""
        (q, k, v), (dq, dk, dv), p = primals, tangents, out[1]
        ds = None if dq is None else matmul(dq, _mT(k))
        if dk is not None:
            qdk = matmul(q, _mT(dk))
            ds = qdk if ds is None else ds + qdk
        dp = None
        if ds is not None:
            pds = p * ds
            dp = (pds - p * sum(pds, axis=-1, keepdims=True)) * scale
        return total(out[0], None if dp is None else matmul(dp, v),
                     None if dv is None else matmul(p, dv)), dp


class AttentionGrad(Op):
    """``(dq, dk, dv)`` of :class:`Attention` for the output gradient ``g`` and the saved
    weights ``p`` (only for a backward pass that is not itself recorded)."""

    name = "attention_grad"
    differentiable = False
    library = "matmul"

    @staticmethod
    def forward(b, q, k, v, g, p, scale):
        fast = b.attention_grad(q, k, v, g, p, scale)
        if fast is not None:
            return fast
        xp = b.xp
        dp = xp.matmul(g, xp.matrix_transpose(v))
        ds = product_grad(b, dp, p, sum_product(b, dp, p, (p.ndim - 1,)), scale)  # two kernels
        return (xp.matmul(ds, k), xp.matmul(xp.matrix_transpose(ds), q),
                xp.matmul(xp.matrix_transpose(p), g))


def _grads(q: Tensor, k: Tensor, v: Tensor, g: Tensor, scale: float) -> tuple:
    """AttentionGrad's formulas in xad operations (recorded, differentiable)."""
    p = softmax(matmul(q, _mT(k)) * scale, axis=-1)
    gy = matmul(g, _mT(v)) * p
    ds = (gy - p * sum(gy, axis=-1, keepdims=True)) * scale
    return matmul(ds, k), matmul(_mT(ds), q), matmul(_mT(p), g)


class SplitHeads(Op):
    """Queries, keys and values from a packed projection ``y`` (``(rows, 3 * E)``): ``y``
    read as ``shape`` (two leading axes, then ``(3, heads, head_dim)``), permuted by ``perm``
    (the 3 first), copied once into one new array whose three pieces are the outputs (was a
    copy per piece, and a reshaping copy per piece's gradient); the rule stacks the three
    gradients along ``y``'s axis of 3 (at most two kernels, was four)."""

    name = "split_heads"

    @staticmethod
    def forward(b, y, shape, perm):
        t = b.xp.permute_dims(b.xp.reshape(y, shape), perm)
        if fuses(b):  # one copy kernel (CuPy runs a stack of three as three copies)
            packed = copy(b, t)
        else:  # a new C-ordered array (NumPy's copy would keep t's strides)
            packed = b.xp.stack([t[i, ...] for i in range(3)])
        return packed[0, ...], packed[1, ...], packed[2, ...]

    @staticmethod
    def backward(node, *grads):
        perm = node.params["perm"]
        three = perm[0]
        rest = [a for a in range(len(perm)) if a != three]  # y's axes but the 3
        order = tuple(perm.index(a) - 1 for a in rest)  # where each sits in a piece
        if not recorded(*grads):
            return apply(SplitHeadsGrad, *grads, order=order, three=three,
                         shape=tuple(node.in_shapes[0]))
        pieces = [permute_dims(g, order) for g in grads]
        return reshape(stack(pieces, axis=three), node.in_shapes[0])

    @staticmethod
    def batch(args, batched, shape, perm):
        (y,) = args
        perm = (perm[0] + 1, 0) + tuple(p + 1 for p in perm[1:])
        outs = apply(SplitHeads, y, shape=(y.shape[0],) + tuple(shape), perm=perm)
        return outs, (True,) * 3

    jvp = classmethod(linear_jvp)


class SplitHeadsGrad(Op):
    """:class:`SplitHeads`'s rule: the three gradients, each permuted to ``y``'s axis order
    (``order``), joined along its axis of 3 (``three``) in C order, so that reading it as
    ``y``'s ``shape`` is a view: where the backend fuses, by one select kernel over the
    joined shape (CuPy runs a join of three as three copies), elsewhere by one stack (was
    three permutes, three expand_dims, a concat and a reshape as nodes: a quarter of a
    small encoder's backward on NumPy); only for a backward pass that is not itself
    recorded."""

    name = "split_heads_grad"
    differentiable = False

    @staticmethod
    def forward(b, g0, g1, g2, order, three, shape):
        xp = b.xp
        if not fuses(b):  # a join of three on the host: one copy (the same values)
            return xp.reshape(xp.stack([xp.permute_dims(g, order) for g in (g0, g1, g2)],
                                       axis=three), shape)
        parts = [xp.expand_dims(xp.permute_dims(g, order), axis=three) for g in (g0, g1, g2)]
        at = [1] * parts[0].ndim
        at[three] = 3
        which = xp.reshape(xp.arange(3, dtype=xp.int32), tuple(at))
        return xp.reshape(b.elementwise(_join3, "xad_join3")(which, *parts), shape)


def _join3(ns: Any) -> Any:
    return lambda i, a, c, e: ns.where(i == 0, a, ns.where(i == 1, c, e))


def split_heads(y: Tensor, lead: tuple[int, int], heads: int, to_heads: tuple[int, ...]
                ) -> tuple[Tensor, Tensor, Tensor]:
    """``y`` (``lead + (3 * E,)`` or ``(lead[0] * lead[1], 3 * E)``, a packed
    query/key/value projection) as three ``(N, heads, L, E // heads)`` tensors, ``to_heads``
    the permutation from ``lead + (heads, head_dim)`` (``MultiheadAttention``'s
    self-attention), in one copy.

    Example:
        >>> import xad
        >>> from xad.ops.attention import split_heads
        >>> q, k, v = split_heads(xad.ones(6, 12), (2, 3), 2, (0, 2, 1, 3))
        >>> q.shape
        (2, 2, 3, 2)
    """
    e = y.shape[-1] // 3
    shape = tuple(lead) + (3, heads, e // heads)
    perm = (2,) + tuple(p if p < 2 else p + 1 for p in to_heads)
    return apply(SplitHeads, y, shape=shape, perm=perm)


def attention(q: Tensor, k: Tensor, v: Tensor, scale: float) -> Tensor:
    """``softmax(q @ k^T * scale) @ v`` over the last two axes as one node; ``q`` is
    ``(..., L, E)``, ``k`` ``(..., S, E)``, ``v`` ``(..., S, Ev)`` with the same leading
    axes and dtype (:func:`xad.nn.functional.scaled_dot_product_attention` checks and
    broadcasts; this is its unmasked path).

    Example:
        >>> import xad
        >>> from xad.ops.attention import attention
        >>> attention(xad.ones(1, 2, 3), xad.ones(1, 4, 3), xad.ones(1, 4, 5), 0.5).shape
        (1, 2, 5)
    """
    if k.shape[-2] == 0:
        raise ValueError(f"attention: no keys (key shape {k.shape}); a softmax over none is "
                         f"undefined")
    return apply(Attention, q, k, v, scale=float(scale))[0]
