"""Normalisation as one node: ``standardize`` (layer norm's and group norm's core)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .. import dtypes as _dt
from ..tensor import Tensor
from ._apply import Op, apply
from .amp_cast import HALF
from .axes import normalize_axes
from .batching import align, axes_batch, shift_axes
from .fused import (
    affine_grads,
    centre,
    centred_affine,
    centred_rstd,
    centred_scaled,
    fuses,
    inverse_sqrt,
    layer_norm_input_grad,
    recorded,
    standardize_grad,
    sum_of_sum,
    sum_product,
)
from .linalg import _bias_grad, by_product, keep_sum, keep_sum_array
from .shape import broadcast_to, reshape
from .tangent import total

__all__ = ["standardize"]  # layer_norm: through xad.nn.functional.layer_norm


class Standardize(Op):
    """``(x - mean) * rstd`` over ``axes``, with ``rstd = 1 / sqrt(var + eps)`` (biased
    variance, kept dims) as a second output. Its rule reads the two outputs only:
    ``rstd * (g - mean(g) - y * mean(g * y))``, five passes where the composed
    mean/subtract/square/divide graph took about fifteen; ``rstd``'s own gradient (nonzero
    in second derivatives only) adds ``-rstd**2 * y / n`` times it. Means over the last
    axis are products with ones (:func:`~xad.ops.linalg.by_product`). Three kernels on
    CuPy (a sum, ``rstd`` in one reduction kernel, the output; was five)."""

    name = "standardize"
    save_output = True
    materialize_grads = False  # the rule takes None for an output nobody used

    @staticmethod
    def forward(b, x, axes, eps, product):
        if not (product or fuses(b)):
            y, rstd = _on_host(b, x, axes, eps)
            return b.row_major(y), rstd
        r, total, rstd = _moments(b, x, axes, eps, product)
        return b.row_major(centred_scaled(b, x, total, r, rstd)), rstd  # (as PyTorch's norms)

    @staticmethod
    def backward(node, g, g_rstd):
        y, rstd = node.output(0), node.output(1)
        axes, product = node.params["axes"], node.params["product"]
        r = _inverse_count(node.in_shapes[0], axes)
        if g is not None and g_rstd is None and not recorded(g, y):
            return apply(StandardizeGrad, g, y, rstd, axes=axes, product=product, r=r)
        return _rule(g, g_rstd, y, rstd, axes, product, r)

    batch = classmethod(axes_batch)

    @staticmethod
    def jvp(primals, tangents, out, axes, eps, product):
        (x,), (t,), (y, rstd) = primals, tangents, out
        r = _inverse_count(x.shape, axes)
        m_t, m_yt = keep_sum(t, axes, product) * r, keep_sum(t * y, axes, product) * r
        return (t - m_t - y * m_yt) * rstd, -(rstd * rstd * m_yt)


class AddLayerNorm(Op):
    """:class:`LayerNorm` of ``x + t`` (a post-norm Transformer layer's residual sum; of
    ``x + (t + c)`` with ``c``, the bias of the linear layer that made ``t``), the sum never
    stored: on CuPy the sum, ``rstd`` and the output are three reduction or elementwise
    kernels that each add it up in their pre-map (was a fourth for the sum, and a fifth for
    the bias). The same bits as ``layer_norm(x + (t + c))``; the rule is
    :class:`LayerNorm`'s, its input gradient given to ``x`` and ``t``, and to ``c`` summed
    as the linear layer sums its bias gradient."""

    name = "add_layer_norm"
    save_inputs = True
    save_output = True
    materialize_grads = False

    @staticmethod
    def forward(b, x, t, c, w, bias, axes, eps, product):
        if product or not fuses(b):  # on the host: the sum once (a pass each, unfused)
            return LayerNorm.forward(b, x + (t if c is None else t + c), w, bias, axes, eps,
                                     product)
        r = _inverse_count(x.shape, axes)
        total = sum_of_sum(b, x, t, axes, c)
        rstd = centred_rstd(b, x, total, axes, r, eps, t, c)
        out, y = centred_affine(b, x, total, r, rstd, w, bias, t, c)
        return out, y, rstd

    @staticmethod
    def backward(node, g, g_y, g_rstd):
        gx, gw, gb = _layer_norm_grads(node, node.inputs[3], g, g_y, g_rstd)
        gc = None
        if node.needs_grad(2) and gx is not None:
            gx2 = reshape(gx, (-1, gx.shape[-1]))
            gc = _bias_grad(gx2, gx2)  # as Linear sums its bias's gradient
        return gx, gx, gc, gw, gb

    @staticmethod
    def batch(args, flags, axes, eps, product):
        (x, t, c, w, bias), (fx, ft, fc, fw, fb) = args, flags
        if c is not None:
            t, c = align((t, c), (ft, fc))
            t, ft = t + c, ft or fc
        x, t = align((x, t), (fx, ft))
        return LayerNorm.batch((x + t, w, bias), (fx or ft, fw, fb), axes=axes, eps=eps,
                               product=product)

    @staticmethod
    def jvp(primals, tangents, out, axes, eps, product):
        (x, _, _, w, bias), (tx, tt, tc, tw, tb) = primals, tangents
        ts = None
        for part in (tx, tt, tc):
            ts = part if ts is None else ts if part is None else ts + part
        if ts is not None and ts.shape != x.shape:  # only the bias moves (``t_bias``)
            ts = broadcast_to(ts, x.shape)
        return LayerNorm.jvp((x, w, bias), (ts, tw, tb), out, axes, eps, product)


def _layer_norm_grads(node: Any, w: Tensor, g: Tensor | None, g_y: Tensor | None,
                      g_rstd: Tensor | None) -> tuple:
    """``(gx, gw, gbias)`` of a layer norm node (:class:`LayerNorm`, :class:`AddLayerNorm`)
    of weight ``w``: :class:`LayerNormGrad` first order, else xad operations."""
    y, rstd = node.output(1), node.output(2)
    axes, product = node.params["axes"], node.params["product"]
    r = _inverse_count(node.in_shapes[0], axes)
    if g is not None and g_y is None and g_rstd is None and not recorded(g, y, w):
        gx, gw = apply(LayerNormGrad, g, y, w, rstd, axes=axes, product=product, r=r)
        return gx, gw, g  # the engine sums gw (where not summed) and g over leading axes
    gy = g_y if g is None else g * w if g_y is None else g * w + g_y
    gx = _rule(gy, g_rstd, y, rstd, axes, product, r)
    return gx, (None if g is None else g * y), g


def _moments(b: Any, x: Any, axes: tuple[int, ...], eps: float,
             product: bool) -> tuple[float, Any, Any]:
    """``(r, total, rstd)``: one over the count, ``x``'s kept-dims sum over ``axes`` and
    ``1 / sqrt(var + eps)`` (biased variance): a sum and one reduction kernel on CuPy (was
    four kernels); the centred values and their squares in one kernel and a product with
    ones where ``product``."""
    r = _inverse_count(x.shape, axes)
    total = keep_sum_array(b, x, axes, product)
    if not product:
        return r, total, centred_rstd(b, x, total, axes, r, eps)
    _, dd = centre(b, x, total, r)
    return r, total, inverse_sqrt(b, keep_sum_array(b, dd, axes, product), r, eps)


def _on_host(b: Any, x: Any, axes: tuple[int, ...], eps: float) -> tuple[Any, Any]:
    """``(y, rstd)`` of :class:`Standardize` where ``b`` does not fuse: each operation of
    the fused kernels (the same bits), but the centred values computed once, where the
    kernels compute them in each (free inside a GPU kernel, a pass and a call each here:
    layer norm's forward on NumPy at (2, 4, 16) 15 -> 9.5 us)."""
    xp = b.xp
    r = _inverse_count(x.shape, axes)
    d = x - xp.sum(x, axis=axes, keepdims=True) * r
    rstd = 1.0 / xp.sqrt(xp.sum(d * d, axis=axes, keepdims=True) * r + eps)
    return d * rstd, rstd


def _grads_on_host(b: Any, g: Any, y: Any, w: Any, rstd: Any, axes: tuple[int, ...],
                   lead: tuple[int, ...], r: float) -> tuple[Any, Any]:
    """:class:`LayerNormGrad` where ``b`` does not fuse: the kernels' operations (the same
    bits), ``g * w`` computed once (at (2, 4, 16) on NumPy 14.7 -> 8.2 us)."""
    xp = b.xp
    gw = g * w
    s1 = xp.sum(gw, axis=axes, keepdims=True)
    s2 = xp.sum(gw * y, axis=axes, keepdims=True)
    return (gw - s1 * r - y * (s2 * r)) * rstd, xp.sum(g * y, axis=lead)


def _rule(g: Tensor | None, g_rstd: Tensor | None, y: Tensor, rstd: Tensor,
          axes: tuple[int, ...], product: bool, r: float) -> Tensor | None:
    """:class:`Standardize`'s rule in xad operations (differentiable)."""
    gx = None
    if g is not None:
        m1, m2 = keep_sum(g, axes, product) * r, keep_sum(g * y, axes, product) * r
        gx = (g - m1 - y * m2) * rstd
    if g_rstd is not None:
        t = y * (g_rstd * rstd * rstd * -r)
        gx = t if gx is None else gx + t
    return gx


class LayerNorm(Op):
    """Layer norm with its affine part, ``standardize(x) * w + bias`` (``w`` and ``bias``
    of the normalised axes' shape), as one node with :class:`Standardize`'s ``y`` and
    ``rstd`` as hidden outputs: three kernels on CuPy (was seven), and a first-order rule
    of five (was eight). The same bits as the composed operations."""

    name = "layer_norm"
    save_inputs = True
    save_output = True
    materialize_grads = False

    @staticmethod
    def forward(b, x, w, bias, axes, eps, product):
        if not (product or fuses(b)):
            y, rstd = _on_host(b, x, axes, eps)
            return b.row_major(y * w + bias), y, rstd
        r, total, rstd = _moments(b, x, axes, eps, product)
        out, y = centred_affine(b, x, total, r, rstd, w, bias)
        return b.row_major(out), y, rstd  # (PyTorch's layer norm: a contiguous result)

    @staticmethod
    def backward(node, g, g_y, g_rstd):
        return _layer_norm_grads(node, node.inputs[1], g, g_y, g_rstd)

    @classmethod
    def batch(cls, args, flags, axes, eps, product):
        (x, w, bias), (fx, fw, fb) = args, flags
        axes = shift_axes(axes, x.ndim) if fx else axes
        if not (fw or fb):
            return apply(cls, x, w, bias, axes=axes, eps=eps, product=product), (True,) * 3
        y, rstd = apply(Standardize, x, axes=axes, eps=eps, product=product)
        y_, w, bias = align((y, w, bias), (fx, fw, fb), rank=x.ndim - fx)
        return (y_ * w + bias, y, rstd), (True, fx, fx)

    @staticmethod
    def jvp(primals, tangents, out, axes, eps, product):
        (x, w, _), (tx, tw, tb), (o, y, rstd) = primals, tangents, out
        ty = trstd = None
        if tx is not None:
            ty, trstd = Standardize.jvp((x,), (tx,), (y, rstd), axes, eps, product)
        return (total(o, None if ty is None else ty * w, None if tw is None else y * tw, tb),
                ty, trstd)


class LayerNormGrad(Op):
    """:class:`LayerNorm`'s gradients for ``g`` alone: ``x``'s, and the weight's (``g * y``
    summed over the leading axes, or before that sum where the engine makes it). On CuPy
    four kernels: a reduction kernel each for ``sum(g * w)``, ``sum(g * w * y)`` and the
    weight's gradient, one for ``x``'s (was five: one for ``g * w``, ``g * w * y`` and
    ``g * y``, two sums, one for ``x``'s, and the engine's sum). With ``product``, the
    products with ones of :func:`keep_sum_array`. Only for a backward pass that is not
    itself recorded."""

    name = "layer_norm_grad"
    differentiable = False

    @staticmethod
    def forward(b, g, y, w, rstd, axes, product, r):
        lead = tuple(range(g.ndim - w.ndim))
        if product or not lead or tuple(w.shape) != tuple(g.shape[len(lead):]):
            gy, gyy, gw = affine_grads(b, g, w, y)
            s1 = keep_sum_array(b, gy, axes, product)
            s2 = keep_sum_array(b, gyy, axes, product)
            return standardize_grad(b, gy, y, s1, s2, rstd, r), gw
        if not fuses(b):
            return _grads_on_host(b, g, y, w, rstd, axes, lead, r)
        s1, s2 = sum_product(b, g, w, axes), sum_product(b, g, w, axes, y)
        gw = b.xp.reshape(sum_product(b, g, y, lead), w.shape)
        return layer_norm_input_grad(b, g, w, y, s1, s2, rstd, r), gw


class StandardizeGrad(Op):
    """:class:`Standardize`'s input gradient for ``g`` alone, ``(g - mean(g) - y *
    mean(g * y)) * rstd``, as its rule computes it: a sum, a reduction kernel for
    ``sum(g * y)`` and one fused kernel on CuPy (was nine kernels, then four); only for a
    backward pass that is not itself recorded."""

    name = "standardize_grad"
    differentiable = False

    @staticmethod
    def forward(b, g, y, rstd, axes, product, r):
        s1 = keep_sum_array(b, g, axes, product)
        s2 = keep_sum_array(b, g * y, axes, product) if product else sum_product(b, g, y, axes)
        return standardize_grad(b, g, y, s1, s2, rstd, r)


FULL_PRECISION = (_dt.float32, _dt.float64)  # the dtypes layer norm computes in as they are


def _half(*ts: Tensor | None) -> bool:
    """Whether the input is half precision: its statistics are then taken in float32, as
    PyTorch's (a float16 sum over 3000 values of 30 overflows, and the result was NaN)."""
    return ts[0] is not None and ts[0].dtype in HALF


def _wide(*ts: Tensor | None) -> list:
    return [t if t is None else t.astype(_dt.float32) for t in ts]


def _inverse_count(shape: Sequence[int], axes: tuple[int, ...]) -> float:
    """``1 / n`` for the ``n`` elements a mean over ``axes`` reads (NaN for none, as a mean)."""
    n = math.prod(shape[a] for a in axes)
    return 1.0 / n if n else math.nan


def layer_norm(x: Tensor, axes: Sequence[int], weight: Tensor, bias: Tensor,
               eps: float = 1e-5) -> Tensor:
    """``standardize(x, axes, eps) * weight + bias`` as one operation (layer norm with its
    affine part); ``axes`` are ``x``'s trailing axes, of ``weight``'s and ``bias``'s shape.

    Example:
        >>> import xad
        >>> from xad.ops.normalization import layer_norm
        >>> y = layer_norm(xad.tensor([[1.0, 3.0]]), (1,), xad.ones(2), xad.zeros(2))
        >>> [round(v, 3) for v in y.tolist()[0]]
        [-1.0, 1.0]
    """
    if _half(x):
        w, b = _wide(weight, bias)
        return layer_norm(x.astype(_dt.float32), axes, w, b, eps).astype(x.dtype)
    return layer_norm_node(x, weight, bias, normalize_axes(axes, x.ndim, "layer_norm"), eps)


def layer_norm_node(x: Tensor, weight: Tensor, bias: Tensor, axes: tuple[int, ...],
                    eps: float) -> Tensor:
    """:func:`layer_norm`'s node for arguments its caller has checked (a dtype of
    :data:`FULL_PRECISION` for all three, ``axes`` normalised): ``F.layer_norm``'s."""
    out, _, _ = apply(LayerNorm, x, weight, bias, axes=axes, eps=float(eps),
                      product=by_product(x, axes))
    return out


def add_layer_norm(x: Tensor, t: Tensor, axes: Sequence[int], weight: Tensor, bias: Tensor,
                   eps: float = 1e-5, t_bias: Tensor | None = None) -> Tensor:
    """:func:`layer_norm` of ``x + t`` (``x + (t + t_bias)`` with ``t_bias``, of the
    normalised axes' shape: the bias of the linear layer that made ``t``; ``x`` and ``t`` of
    one shape and dtype) as one operation, the sum never stored (a post-norm residual
    connection).

    Example:
        >>> import xad
        >>> from xad.ops.normalization import add_layer_norm
        >>> y = add_layer_norm(xad.tensor([[1.0, 2.0]]), xad.tensor([[0.0, 1.0]]), (1,),
        ...                    xad.ones(2), xad.zeros(2))
        >>> [round(v, 3) for v in y.tolist()[0]]
        [-1.0, 1.0]
    """
    if x.shape != t.shape or x.dtype is not t.dtype:
        raise ValueError(f"add_layer_norm: the summands must have one shape and dtype, got "
                         f"{x.shape} {x.dtype} and {t.shape} {t.dtype}")
    if _half(x):
        xw, tw, cw, ww, bw = _wide(x, t, t_bias, weight, bias)
        return add_layer_norm(xw, tw, axes, ww, bw, eps, cw).astype(x.dtype)
    return add_norm_node(x, t, t_bias, weight, bias, normalize_axes(axes, x.ndim,
                                                                    "add_layer_norm"), eps)


def add_norm_node(x: Tensor, t: Tensor, c: Tensor | None, weight: Tensor, bias: Tensor,
                  axes: tuple[int, ...], eps: float) -> Tensor:
    """:func:`add_layer_norm`'s node for arguments its caller has checked (one shape and a
    dtype of :data:`FULL_PRECISION` for ``x`` and ``t``; ``axes`` normalised): ``LayerNorm``'s
    post-norm residual, whose checks are its own."""
    out, _, _ = apply(AddLayerNorm, x, t, c, weight, bias, axes=axes, eps=float(eps),
                      product=by_product(x, axes))
    return out


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
    if _half(x):
        return standardize(x.astype(_dt.float32), axes, eps).astype(x.dtype)
    axes = normalize_axes(axes, x.ndim, "standardize")
    y, _ = apply(Standardize, x, axes=axes, eps=float(eps), product=by_product(x, axes))
    return y
