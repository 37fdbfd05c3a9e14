"""The mean squared error as one node (``mse_loss``'s ``"mean"``): ``sum(d * d) * (1 / n)``
for ``d = x - t``, one reduction kernel where the backend fuses (:meth:`xad.Backend.
reduction`; was four: the difference, the square, the sum, the scaling), and its rule one
kernel (was six). The same bits as the composed operations: the same operations in the same
order, and the two equal terms of the square's gradient added as the engine added them.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from ..tensor import Tensor
from ._apply import Op, apply
from .amp_cast import HALF, in_float32
from .batching import align
from .fused import recorded
from .reduce import sum as _sum
from .shape import broadcast_to, reshape

__all__ = ["mse_mean"]

_KERNELS: dict[tuple, Any] = {}  # (backend, kind, ndim, keep, scale): a kernel


def _scale(shape: tuple[int, ...], keep: int) -> float:
    """``1 / n`` for the ``n`` elements a mean over the axes after ``keep`` reads."""
    n = math.prod(shape[keep:])
    return 1.0 / n if n else math.nan


def _mean(axes: tuple[int, ...], c: float) -> Any:
    def make(ns: Any) -> Any:
        def kernel(x: Any, t: Any) -> Any:
            d = x - t
            return ns.sum(d * d, axis=axes) * c
        return kernel
    return make


def _grads(c: float) -> Any:
    def make(ns: Any) -> Any:
        def kernel(x: Any, t: Any, g: Any) -> tuple[Any, Any]:
            u = g * c * (x - t)
            gx = u + u
            return gx, -gx
        return kernel
    return make


def _kernel(b: Any, kind: str, ndim: int, keep: int, c: float) -> Any:
    """The forward (``"mean"``) or gradient (``"grad"``) kernel, made once."""
    key = (b, kind, ndim, keep, c)
    fn = _KERNELS.get(key)
    if fn is None:
        name = f"xad_mse_{kind}_{ndim}_{keep}_{struct.pack('<d', c).hex()}"
        make = _mean(tuple(range(keep, ndim)), c) if kind == "mean" else _grads(c)
        fn = _KERNELS[key] = (b.reduction if kind == "mean" else b.elementwise)(make, name)
    return fn


class MseMean(Op):
    """``sum((x - t) * (x - t)) * (1 / n)`` over the axes after the first ``keep`` (``x``
    and ``t`` of one shape and dtype), as :func:`mse_loss` composes it: one reduction kernel
    on CuPy. Its rule ``g (1 / n) (x - t)`` twice added (the square's two factors), and its
    negation for ``t``, is one kernel, first order; recorded, the same in xad operations."""

    name = "mse_mean"
    save_inputs = True

    @staticmethod
    def forward(b, x, t, keep=0):
        return _kernel(b, "mean", x.ndim, keep, _scale(x.shape, keep))(x, t)

    @staticmethod
    def backward(node, g):
        x, t = node.inputs
        keep = node.params["keep"]
        c = _scale(x.shape, keep)
        g = reshape(g, tuple(g.shape) + (1,) * (x.ndim - keep))  # against x's axes
        if recorded(g, x, t):
            u = g * c * (x - t)
            gx = u + u
            return gx, -gx
        return apply(MseMeanGrad, x, t, g, c=c)

    @staticmethod
    def batch(args, batched, keep=0):
        """A batch axis first on both (an unbatched one broadcast to it), kept."""
        x, t = align(args, batched)
        if x.shape != t.shape:
            x, t = (x, broadcast_to(t, x.shape)) if batched[0] else (broadcast_to(x, t.shape), t)
        return apply(MseMean, x, t, keep=keep + 1), True

    @staticmethod
    def jvp(primals, tangents, out, keep=0):
        (x, t), (tx, tt) = primals, tangents
        dt = tx if tt is None else -tt if tx is None else tx - tt
        d = x - t
        axes = tuple(range(keep, x.ndim))
        return _sum(dt * d + d * dt, axis=axes) * _scale(x.shape, keep)


class MseMeanGrad(Op):
    """:class:`MseMean`'s rule for the output gradient ``g`` (reshaped against ``x``):
    ``u + u`` for ``u = g * c * (x - t)``, and its negation; one kernel on CuPy."""

    name = "mse_mean_grad"
    differentiable = False

    @staticmethod
    def forward(b, x, t, g, c):
        return _kernel(b, "grad", x.ndim, 0, c)(x, t, g)


def mse_mean(x: Tensor, t: Tensor) -> Tensor:
    """The mean of ``(x - t) ** 2`` over every element, as ``((x - t) * (x - t)).mean()``
    computes it (``x`` and ``t`` of one shape and dtype).

    Example:
        >>> import xad
        >>> from xad.ops.mse import mse_mean
        >>> mse_mean(xad.tensor([1.0, 2.0]), xad.tensor([1.0, 4.0])).item()
        2.0
    """
    if x.dtype in HALF:  # half precision: summed in float32, as PyTorch's
        return in_float32(mse_mean, x, t)
    return apply(MseMean, x, t, keep=0)
