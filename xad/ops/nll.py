"""The negative log-likelihood at integer targets as one node (``nll_loss``'s and so
``cross_entropy``'s core): ``-x[i, t[i]]`` as ``-where(t == class, x, 0).sum(-1)`` over
``x``'s last axis, and the count of the targets that count, each one reduction kernel where
the backend fuses (:meth:`xad.Backend.reduction`); the one-hot is never stored. A row of
one selected value sums to it exactly in any order; counts are exact integers. (Not
``x * one_hot``: a log-probability of -inf at another class, a masked logit, would give
``-inf * 0 = nan``, where PyTorch gives the target's value.)
"""

from __future__ import annotations

from typing import Any

from ..factories import arange
from ..tensor import Tensor
from ._apply import Op, apply
from .batching import unbatched_error
from .elementwise import astype
from .fused import recorded
from .shape import broadcast_to

__all__ = ["nll_rows", "count_targets", "one_hot_rows"]


def _nll_rows(ns: Any) -> Any:
    return lambda x, t, c, zero: -ns.sum(ns.where(t == c, x, zero), axis=-1)


def _nll_rows_ignoring(ns: Any) -> Any:
    return lambda x, t, c, zero, ig: -ns.sum(ns.where((t == c) & (t != ig), x, zero),
                                             axis=-1)


# the rule selects ``-g`` rather than multiplying by the one-hot: every target ignored
# makes ``g`` the mean's ``1 / 0 = inf``, and ``inf * 0`` was NaN where PyTorch's is 0
def _nll_rows_grad(ns: Any) -> Any:
    return lambda g, t, c, one, zero: ns.where(t == c, -g, zero)


def _nll_rows_grad_ignoring(ns: Any) -> Any:
    return lambda g, t, c, one, zero, ig: ns.where((t == c) & (t != ig), -g, zero)


def _made(makes: tuple, ignore: int | None) -> tuple:
    """``(make, kernel name)``: the first of ``makes`` where no class is ignored, else the
    second (the kernel named after it)."""
    make = makes[ignore is not None]
    return make, "xad" + make.__name__


def _count(axes: tuple[int, ...] | None, n: int, ig: int) -> Any:
    return lambda ns: lambda t, one, zero: ns.sum(
        ns.where((t >= 0) & (t < n) & (t != ig), one, zero), axis=axes)


def _column(b: Any, a: Any) -> Any:
    """``a`` with a last axis of length 1 (a view; NumPy's ``expand_dims`` costs ~5 us)."""
    return b.xp.reshape(a, tuple(a.shape) + (1,))


def _kernel_args(b: Any, t: Any, classes: Any, numbers: tuple, ignore: int | None) -> tuple:
    """The arguments after the first of the kernels: the targets as a column, the classes,
    ``numbers`` (kernel scalars: :meth:`xad.Backend.scalar`) and the ignored class."""
    args = (_column(b, t), classes, *numbers)
    return args if ignore is None else args + (b.scalar(ignore, t.dtype),)


class NllRows(Op):
    """``-x[i, t[i]]``, 0 where ``t[i] == ignore`` (``ignore`` a class), the target's class
    among ``classes`` (``x``'s last axis): one reduction kernel on CuPy (a composed one-hot
    took five: comparison, cast, product, sum, negation). Its rule ``-g * w``, ``w`` the
    one-hot, is one kernel, first order; recorded, the same in xad operations."""

    name = "nll_rows"
    save_inputs = True

    @staticmethod
    def forward(b, x, t, classes, ignore):
        make, name = _made((_nll_rows, _nll_rows_ignoring), ignore)
        return b.reduction(make, name)(
            x, *_kernel_args(b, t, classes, (b.scalar(0, x.dtype),), ignore))

    @staticmethod
    def backward(node, g):
        _, t, classes = node.inputs
        ignore = node.params["ignore"]
        if recorded(g):
            return -g.expand_dims(-1) * one_hot_rows(t, classes, ignore, g.dtype), None, None
        return apply(NllRowsGrad, g, t, classes, ignore=ignore), None, None

    @staticmethod
    def batch(args, batched, ignore):
        """A batch axis first on ``x`` and ``t`` (an unbatched one broadcast to it)."""
        (x, t, classes), (fx, ft, fc) = args, batched
        if fc:
            raise unbatched_error("nll_rows", "batched classes")
        if fx != ft:
            n = (x if fx else t).shape[0]
            x, t = (x, broadcast_to(t, (n,) + tuple(t.shape))) if fx else (
                broadcast_to(x, (n,) + tuple(x.shape)), t)
        return apply(NllRows, x, t, classes, ignore=ignore), True

    @staticmethod
    def jvp(primals, tangents, out, ignore):
        tx = tangents[0]
        return None if tx is None else apply(NllRows, tx, primals[1], primals[2], ignore=ignore)


class NllRowsGrad(Op):
    """:class:`NllRows`'s rule ``-g * w`` (``g`` per row, as a column): one kernel on CuPy;
    only for a backward pass that is not itself recorded."""

    name = "nll_rows_grad"
    differentiable = False

    @staticmethod
    def forward(b, g, t, classes, ignore):
        make, name = _made((_nll_rows_grad, _nll_rows_grad_ignoring), ignore)
        one_zero = b.scalar(1, g.dtype), b.scalar(0, g.dtype)
        return b.elementwise(make, name)(_column(b, g),
                                         *_kernel_args(b, t, classes, one_zero, ignore))


_COUNTS: dict[tuple, Any] = {}  # CountTargets's kernels, made once


class CountTargets(Op):
    """How many values of ``t`` are in ``[0, n)`` and not ``ignore``, as a 0-d ``dtype``
    array (one per index of the first ``keep`` axes: vmap's batch), no gradient: one
    reduction kernel on CuPy."""

    name = "count_targets"
    differentiable = False

    @staticmethod
    def forward(b, t, n, ignore, dtype, keep=0):
        d = b.dtype(dtype)
        key = (b, keep, t.ndim, n, ignore)
        fn = _COUNTS.get(key)
        if fn is None:  # n and ignore are literals in the kernel: one per (n, ignore)
            axes = tuple(range(keep, t.ndim)) if keep else None
            name = f"xad_count_targets_{keep}_{t.ndim}_{n}_{ignore}".replace("-", "m")
            fn = _COUNTS[key] = b.reduction(_count(axes, n, ignore), name)
        return fn(t, b.scalar(1, d), b.scalar(0, d))

    @staticmethod
    def batch(args, batched, n, ignore, dtype, keep=0):
        return apply(CountTargets, args[0], n=n, ignore=ignore, dtype=dtype,
                     keep=keep + 1), True


def one_hot_rows(t: Tensor, classes: Tensor, ignore: int | None, dtype: Any) -> Tensor:
    """The one-hot rows of ``t`` over ``classes`` in ``dtype``, zero where ``t`` is
    ``ignore`` (when given), in xad operations: the NLL rows' rule when it is recorded.

    Example:
        >>> import xad
        >>> from xad.ops.nll import one_hot_rows
        >>> one_hot_rows(xad.tensor([1, 0]), xad.arange(2), 0, xad.float32).tolist()
        [[0.0, 1.0], [0.0, 0.0]]
    """
    w = astype(t.expand_dims(-1) == classes, dtype)
    return w if ignore is None else w * astype(t != ignore, dtype).expand_dims(-1)


def nll_rows(x: Tensor, t: Tensor, ignore: int | None = None) -> Tensor:
    """``-x[..., t]`` per target (``x``'s last axis the classes; ``t`` of ``x``'s leading
    shape), 0 where ``t == ignore`` (when given), as ``-(x * one_hot(t)).sum(-1)`` gives it.

    Example:
        >>> import xad
        >>> from xad.ops.nll import nll_rows
        >>> nll_rows(xad.tensor([[-1.0, -2.0], [-3.0, -4.0]]), xad.tensor([1, 0])).tolist()
        [2.0, 3.0]
    """
    classes = arange(x.shape[-1], dtype=t.dtype, backend=x._backend)
    return apply(NllRows, x, t, classes, ignore=ignore)


def count_targets(t: Tensor, n: int, ignore: int, dtype: Any) -> Tensor:
    """The number of values of ``t`` in ``[0, n)`` other than ``ignore``, a 0-d tensor of
    floating ``dtype`` (the one-hot's sum, without the one-hot).

    Example:
        >>> import xad
        >>> from xad.ops.nll import count_targets
        >>> count_targets(xad.tensor([0, 2, -100, 1]), 3, -100, xad.float32).item()
        3.0
    """
    return apply(CountTargets, t, n=int(n), ignore=int(ignore), dtype=dtype)
