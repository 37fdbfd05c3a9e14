"""Normalisation as one node: ``standardize`` (layer norm's and group norm's core)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..tensor import Tensor
from ._apply import Op, apply
from .axes import normalize_axes
from .reduce import mean

__all__ = ["standardize"]


class Standardize(Op):
    """``(x - mean) * rstd`` over ``axes``, with ``rstd = 1 / sqrt(var + eps)`` (biased
    variance, kept dims) as a second output. Its rule reads the two outputs only:
    ``rstd * (g - mean(g) - y * mean(g * y))``, five passes where the composed
    mean/subtract/square/divide graph took about fifteen; ``rstd``'s own gradient (nonzero
    in second derivatives only) adds ``-rstd**2 * y / n`` times it."""

    name = "standardize"
    save_output = True
    materialize_grads = False  # the rule takes None for an output nobody used

    @staticmethod
    def forward(b, x, axes, eps):
        xp = b.xp
        d = x - xp.mean(x, axis=axes, keepdims=True)
        rstd = 1.0 / xp.sqrt(xp.mean(d * d, axis=axes, keepdims=True) + eps)
        return d * rstd, rstd

    @staticmethod
    def backward(node, g, g_rstd):
        y, rstd = node.output(0), node.output(1)
        axes = node.params["axes"]
        gx = None
        if g is not None:
            gx = (g - mean(g, axes, keepdims=True) - y * mean(g * y, axes, keepdims=True)) * rstd
        if g_rstd is not None:
            n = math.prod(node.in_shapes[0][a] for a in axes)
            t = y * (g_rstd * rstd * rstd * (-1.0 / n))
            gx = t if gx is None else gx + t
        return gx


def standardize(x: Tensor, axes: int | Sequence[int], eps: float = 1e-5) -> Tensor:
    """``(x - mean(x)) / sqrt(var(x) + eps)`` over ``axes`` (the biased variance), as one
    operation: layer normalisation without its affine part.

    Example:
        >>> import xad
        >>> xad.standardize(xad.tensor([[1.0, 3.0]]), -1).tolist()
        [[-0.9999950000374997, 0.9999950000374997]]
    """
    if not x.dtype.is_floating:
        raise TypeError(f"standardize: expected a floating-point tensor, got {x.dtype}")
    y, _ = apply(Standardize, x, axes=normalize_axes(axes, x.ndim, "standardize"),
                 eps=float(eps))
    return y
