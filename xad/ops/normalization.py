"""Normalisation as one node: ``standardize`` (layer norm's and group norm's core)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..tensor import Tensor
from ._apply import Op, apply
from .axes import normalize_axes
from .batching import axes_batch
from .fused import centre, inverse_sqrt, recorded, standardize_grad
from .linalg import by_product, keep_sum, keep_sum_array

__all__ = ["standardize"]


class Standardize(Op):
    """``(x - mean) * rstd`` over ``axes``, with ``rstd = 1 / sqrt(var + eps)`` (biased
    variance, kept dims) as a second output. Its rule reads the two outputs only:
    ``rstd * (g - mean(g) - y * mean(g * y))``, five passes where the composed
    mean/subtract/square/divide graph took about fifteen; ``rstd``'s own gradient (nonzero
    in second derivatives only) adds ``-rstd**2 * y / n`` times it. Means over the last
    axis are products with ones (:func:`~xad.ops.linalg.by_product`)."""

    name = "standardize"
    save_output = True
    materialize_grads = False  # the rule takes None for an output nobody used

    @staticmethod
    def forward(b, x, axes, eps, product):
        r = _inverse_count(x.shape, axes)
        d, dd = centre(b, x, keep_sum_array(b, x, axes, product), r)  # one kernel on CuPy
        rstd = inverse_sqrt(b, keep_sum_array(b, dd, axes, product), r, eps)
        return d * rstd, rstd

    @staticmethod
    def backward(node, g, g_rstd):
        y, rstd = node.output(0), node.output(1)
        axes, product = node.params["axes"], node.params["product"]
        r = _inverse_count(node.in_shapes[0], axes)
        if g is not None and g_rstd is None and not recorded(g, y):
            return apply(StandardizeGrad, g, y, rstd, axes=axes, product=product, r=r)
        gx = None
        if g is not None:
            m1, m2 = keep_sum(g, axes, product) * r, keep_sum(g * y, axes, product) * r
            gx = (g - m1 - y * m2) * rstd
        if g_rstd is not None:
            t = y * (g_rstd * rstd * rstd * -r)
            gx = t if gx is None else gx + t
        return gx

    batch = classmethod(axes_batch)

    @staticmethod
    def jvp(primals, tangents, out, axes, eps, product):
        (x,), (t,), (y, rstd) = primals, tangents, out
        r = _inverse_count(x.shape, axes)
        m_t, m_yt = keep_sum(t, axes, product) * r, keep_sum(t * y, axes, product) * r
        return (t - m_t - y * m_yt) * rstd, -(rstd * rstd * m_yt)


class StandardizeGrad(Op):
    """:class:`Standardize`'s input gradient for ``g`` alone, ``(g - mean(g) - y *
    mean(g * y)) * rstd``, as its rule computes it: two sums and one fused kernel on CuPy
    (was nine kernels); only for a backward pass that is not itself recorded."""

    name = "standardize_grad"
    differentiable = False

    @staticmethod
    def forward(b, g, y, rstd, axes, product, r):
        s1 = keep_sum_array(b, g, axes, product)
        s2 = keep_sum_array(b, g * y, axes, product)
        return standardize_grad(b, g, y, s1, s2, rstd, r)


def _inverse_count(shape: Sequence[int], axes: tuple[int, ...]) -> float:
    """``1 / n`` for the ``n`` elements a mean over ``axes`` reads (NaN for none, as a mean)."""
    n = math.prod(shape[a] for a in axes)
    return 1.0 / n if n else math.nan


def standardize(x: Tensor, axes: int | Sequence[int], eps: float = 1e-5) -> Tensor:
    """``(x - mean(x)) / sqrt(var(x) + eps)`` over ``axes`` (the biased variance), as one
    operation: layer normalisation without its affine part.

    Example:
        >>> import xad
        >>> [round(v, 4) for v in xad.standardize(xad.tensor([1.0, 3.0]), -1).tolist()]
        [-1.0, 1.0]
    """
    if not x.dtype.is_floating:
        raise TypeError(f"standardize: expected a floating-point tensor, got {x.dtype}")
    axes = normalize_axes(axes, x.ndim, "standardize")
    y, _ = apply(Standardize, x, axes=axes, eps=float(eps), product=by_product(x, axes))
    return y
