"""The mean cross-entropy of logits at integer targets as one node (``cross_entropy``'s
commonest case: ``(N, C)`` logits, the mean, no class weights, no smoothing).

Composed, it is five nodes: :class:`~xad.ops.reduce.LogSoftmax`, the NLL rows and the
target count (:mod:`xad.ops.nll`), their sum and the division; here one node runs the same
array functions in the same order (the same bits, and on CuPy the same fused kernels: three
for the log-softmax, one reduction each for the rows and the count, the sum and the
division), and its first-order rule is one node too. On the host that is what a small
classifier's step spends most on outside its matrix products.
"""

from __future__ import annotations

from ..factories import arange
from ..tensor import Tensor
from ._apply import Op, apply
from .elementwise import exp, where
from .fused import recorded
from .linalg import by_product, keep_sum
from .nll import CountTargets, NllRows, NllRowsGrad, nll_rows, one_hot_rows
from .reduce import LogSoftmax, LogSoftmaxGrad, log_softmax, sum
from .shape import broadcast_to

__all__ = ["cross_entropy_mean"]


def _row_ignore(ignore: int, c: int) -> int | None:
    """The ignored class as the NLL rows take it: ``None`` where no class is ignored."""
    return ignore if 0 <= ignore < c else None


class CrossEntropyMean(Op):
    """``-mean log_softmax(x)[i, t[i]]`` over the counted targets; hidden outputs, which the
    rule reads: the log-probabilities ``y`` and the count."""

    name = "cross_entropy_mean"
    save_inputs = True  # (the targets and classes: the rule's one-hot)
    save_output = True
    materialize_grads = False

    @staticmethod
    def forward(b, x, t, classes, ignore, dtype, product):
        c = x.shape[-1]
        y = LogSoftmax.forward(b, x, (1,), product)
        rows = NllRows.forward(b, y, t, classes, _row_ignore(ignore, c))
        count = CountTargets.forward(b, t, c, ignore, dtype)
        return b.xp.sum(rows) / count, y, count

    @staticmethod
    def backward(node, g, g_y=None, g_count=None):
        if (g is None and g_y is None) or not node.needs_grad(0):
            return None, None, None
        _, t, classes = node.inputs
        y, count, p = node.output(1), node.output(2), node.params
        ignore = _row_ignore(p["ignore"], classes.shape[0])
        if g_y is None and not recorded(g, y):  # first order: one operation
            return apply(CrossEntropyMeanGrad, g, y, count, t, classes, ignore=ignore,
                         product=p["product"]), None, None
        gy = g_y  # y's own gradient (a second derivative reaches y), plus the loss's
        if g is not None:
            w = one_hot_rows(t, classes, ignore, g.dtype)  # NllRows's rule, recorded
            share = where(count > 0, g / count, 0.0)  # every target ignored: 0, not NaN
            gy = -share * w if gy is None else gy - share * w
        return gy - exp(y) * keep_sum(gy, (1,), p["product"]), None, None  # log_softmax's

    @staticmethod
    def batch(args, batched, ignore, dtype, product):
        """The composed form one level down (its primitives batch), per example."""
        x, t, classes = args
        if not batched[1]:
            t = broadcast_to(t, tuple(x.shape[:-1]))
        elif not batched[0]:
            x = broadcast_to(x, tuple(t.shape) + (x.shape[-1],))
        y = log_softmax(x, axis=-1)
        rows = nll_rows(y, t, _row_ignore(ignore, x.shape[-1]))
        count = apply(CountTargets, t, n=x.shape[-1], ignore=ignore, dtype=dtype, keep=1)
        return (sum(rows, axis=1) / count, y, count), (True, True, True)

    @staticmethod
    def jvp(primals, tangents, out, ignore, dtype, product):
        _, y, count = out
        x_dot, t, classes = tangents[0], primals[1], primals[2]
        ty = x_dot - keep_sum(exp(y) * x_dot, (1,), product)
        rows = apply(NllRows, ty, t, classes, ignore=_row_ignore(ignore, classes.shape[0]))
        return sum(rows) / count, ty, None


class CrossEntropyMeanGrad(Op):
    """:class:`CrossEntropyMean`'s first-order rule on arrays, as the composed form's rules
    compute it: ``g / count`` (the division's), ``-that * one_hot`` (the NLL rows'), then the
    log-softmax's ``gy - exp(y) * sum(gy)``."""

    name = "cross_entropy_mean_grad"
    differentiable = False

    @staticmethod
    def forward(b, g, y, count, t, classes, ignore, product):
        gy = NllRowsGrad.forward(b, g / count, t, classes, ignore)
        return LogSoftmaxGrad.forward(b, gy, y, (1,), product)


def cross_entropy_mean(x: Tensor, t: Tensor, ignore: int = -100) -> Tensor:
    """The mean over counted targets of ``-log_softmax(x)[i, t[i]]`` for floating logits
    ``x`` of shape ``(N, C)`` and integer targets ``t`` of shape ``(N,)`` in ``[0, C)`` (or
    ``ignore``: not counted), as one node; the caller checks the targets' range.

    Example:
        >>> import xad
        >>> from xad.ops.cross_entropy import cross_entropy_mean
        >>> round(cross_entropy_mean(xad.zeros((2, 2)), xad.tensor([0, 1])).item(), 4)
        0.6931
    """
    classes = arange(x.shape[-1], dtype=t.dtype, backend=x._backend)
    return apply(CrossEntropyMean, x, t, classes, ignore=int(ignore), dtype=x.dtype,
                 product=by_product(x, (1,)))[0]
