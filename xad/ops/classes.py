"""Class-index primitives for the classification losses: ``class_mask`` (the one-hot rows of
integer targets, no gradient) and ``class_pick`` (each row's entry at its target class).

``nll_loss`` composed them from a one-hot by comparison (an ``arange``, a reshape, ``==``,
a cast) and ``(x * one_hot).sum(-1)``: six operations forward, two nodes. Here the pick is
one operation and one node, computed the same way (the multiply and the sum, so the values
are the composed form's bits), which keeps its one-hot rows for its rule and for counting.
A target outside ``[0, C)``, or equal to ``ignore``, gives a zero row (the losses check the
range first).
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from ._apply import Op, apply
from .elementwise import exp
from .fused import exp_guarded, log_softmax_grad, log_softmax_out, recorded
from .linalg import by_product, keep_sum, keep_sum_array
from .reduce import log_softmax, sum
from .shape import broadcast_to, expand_dims

__all__ = ["class_mask", "class_pick", "cross_entropy_mean"]


def _mask(b: Any, t: Any, n: int, ignore: int | None, dtype: Any) -> Any:
    """``t``'s one-hot rows over ``n`` classes in ``dtype`` (zero rows for ``ignore``)."""
    xp = b.xp
    eq = t[..., None] == xp.arange(n, dtype=t.dtype, device=b.device)
    if ignore is not None and 0 <= ignore < n:
        eq = eq & (t != ignore)[..., None]
    return xp.astype(eq, dtype)


class ClassMask(Op):
    """``one_hot(t, n)`` in the native ``dtype``, zero rows where ``t`` is ``ignore``."""

    name = "class_mask"
    differentiable = False

    @staticmethod
    def forward(b, t, n, dtype, ignore):
        return _mask(b, t, n, ignore, dtype)

    @staticmethod
    def batch(args, batched, n, dtype, ignore):
        return apply(ClassMask, args[0], n=n, dtype=dtype, ignore=ignore), True


class ClassPick(Op):
    """``x[..., t]`` for each row of ``x`` (classes last; ``t`` of shape ``x.shape[:-1]``),
    0 where ``t`` is ``ignore`` or out of range; and, as a second output, the one-hot rows
    it used (the rule reads them: ``g`` placed at each row's class; a loss counts them)."""

    name = "class_pick"
    save_output = True
    materialize_grads = False  # the rows are piecewise constant: their gradient is unused

    @staticmethod
    def forward(b, x, t, ignore):
        w = _mask(b, t, x.shape[-1], ignore, x.dtype)
        return b.xp.sum(x * w, axis=-1), w

    @staticmethod
    def backward(node, g, g_rows):
        if g is None or not node.needs_grad(0):
            return None, None
        return node.output(1) * expand_dims(g, axis=-1), None

    @staticmethod
    def batch(args, batched, ignore):
        x, t = args
        if not batched[1]:
            t = broadcast_to(t, tuple(x.shape[:-1]))
        elif not batched[0]:
            x = broadcast_to(x, tuple(t.shape) + (x.shape[-1],))
        return apply(ClassPick, x, t, ignore=ignore), (True, True)

    @staticmethod
    def jvp(primals, tangents, out, ignore):
        return sum(tangents[0] * out[1], axis=-1), None


def class_mask(t: Tensor, n: int, dtype: Any, ignore: int | None = None) -> Tensor:
    """The one-hot rows of integer ``t`` over ``n`` classes in xad dtype ``dtype``, a zero
    row where ``t`` is ``ignore`` or outside ``[0, n)``; no gradient.

    Example:
        >>> import xad
        >>> from xad.ops.classes import class_mask
        >>> class_mask(xad.tensor([1, 0, 2]), 3, xad.float32, ignore=2).tolist()
        [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    return apply(ClassMask, t, n=n, dtype=t._backend.dtype(dtype), ignore=ignore)


def class_pick(x: Tensor, t: Tensor, ignore: int | None = None) -> tuple[Tensor, Tensor]:
    """``x[..., t]`` row by row (classes on the last axis, integer ``t`` of shape
    ``x.shape[:-1]``), 0 where ``t`` is ``ignore`` or outside ``[0, C)``; and the one-hot
    rows it picked with (their gradient is zero; ``rows.sum()`` counts the targets that
    count).

    Example:
        >>> import xad
        >>> from xad.ops.classes import class_pick
        >>> picked, rows = class_pick(xad.tensor([[1.0, 2.0], [3.0, 4.0]]), xad.tensor([1, 0]))
        >>> picked.tolist(), rows.sum().item()
        ([2.0, 3.0], 2.0)
    """
    if tuple(t.shape) != tuple(x.shape[:-1]):
        raise ValueError(f"class_pick: targets of shape {t.shape} must have the shape of x "
                         f"(shape {x.shape}) without its last (class) axis")
    return apply(ClassPick, x, t, ignore=ignore)


class CrossEntropyMean(Op):
    """The mean cross-entropy of logits ``x`` ``(N, C)`` at integer targets ``t`` ``(N,)``
    as one node: :class:`~xad.ops.reduce.LogSoftmax`, :class:`ClassPick` and
    ``picked.sum() / -rows.sum()``, computed as those compute them (the same bits, and the
    same kernels on CuPy), where they made five nodes. Hidden outputs, which the rule reads:
    the log-probabilities ``y``, the one-hot rows ``w`` and ``-count``."""

    name = "cross_entropy_mean"
    save_output = True
    materialize_grads = False

    @staticmethod
    def forward(b, x, t, ignore, product):
        xp = b.xp
        m = xp.max(x, axis=-1, keepdims=True)
        y = log_softmax_out(b, x, m, keep_sum_array(b, exp_guarded(b, x, m), (1,), product))
        w = _mask(b, t, x.shape[-1], ignore, x.dtype)
        neg_count = -xp.sum(w)
        return xp.sum(xp.sum(y * w, axis=-1)) / neg_count, y, w, neg_count

    @staticmethod
    def backward(node, g, g_y=None, g_w=None, g_count=None):
        if g is None and g_y is None:
            return None, None
        y, w, neg_count = node.output(1), node.output(2), node.output(3)
        product = node.params["product"]
        if g_y is None and not recorded(g, y):  # first order: one operation
            return apply(CrossEntropyMeanGrad, g, y, w, neg_count, product=product), None
        gy = None if g is None else w * (g / neg_count)  # divide's, then the pick's rule
        gy = g_y if gy is None else gy if g_y is None else gy + g_y
        return gy - exp(y) * keep_sum(gy, (1,), product), None  # log_softmax's

    @staticmethod
    def batch(args, batched, ignore, product):
        """The composed form one level down (its primitives batch), per example."""
        x, t = args
        if not batched[1]:
            t = broadcast_to(t, tuple(x.shape[:-1]))
        elif not batched[0]:
            x = broadcast_to(x, tuple(t.shape) + (x.shape[-1],))
        y = log_softmax(x, axis=-1)
        picked, w = class_pick(y, t, ignore)
        neg_count = -sum(w, axis=(1, 2))
        return (sum(picked, axis=1) / neg_count, y, w, neg_count), (True,) * 4

    @staticmethod
    def jvp(primals, tangents, out, ignore, product):
        _, y, w, neg_count = out
        ty = tangents[0] - keep_sum(exp(y) * tangents[0], (1,), product)
        return sum(sum(ty * w, axis=-1)) / neg_count, ty, None, None


class CrossEntropyMeanGrad(Op):
    """:class:`CrossEntropyMean`'s first-order rule on arrays: ``gy = w * (g / -count)``,
    then log-softmax's ``gy - exp(y) * sum(gy)``."""

    name = "cross_entropy_mean_grad"
    differentiable = False

    @staticmethod
    def forward(b, g, y, w, neg_count, product):
        gy = w * (g / neg_count)
        return log_softmax_grad(b, gy, y, keep_sum_array(b, gy, (1,), product))


def cross_entropy_mean(x: Tensor, t: Tensor, ignore: int | None = None) -> Tensor:
    """The mean over counted targets of ``-log_softmax(x)[i, t[i]]`` for logits ``x`` of
    shape ``(N, C)`` and integer targets ``t`` of shape ``(N,)`` in ``[0, C)`` (or
    ``ignore``: not counted), as one node; the caller checks the targets' range.

    Example:
        >>> import xad
        >>> from xad.ops.classes import cross_entropy_mean
        >>> round(cross_entropy_mean(xad.zeros((2, 2)), xad.tensor([0, 1])).item(), 4)
        0.6931
    """
    return apply(CrossEntropyMean, x, t, ignore=ignore, product=by_product(x, (1,)))[0]
