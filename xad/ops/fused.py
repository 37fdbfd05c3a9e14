"""Primitives whose forward is one elementwise kernel where the backend fuses
(:meth:`xad.Backend.elementwise`: CuPy's ``cupy.fuse``), and plain array operations
elsewhere: the activations' gradients (``relu_grad``, ``tanh_grad``, ``sigmoid_grad``, each
a primitive with its own gradient rule, so ``create_graph`` differentiates them again; real
dtypes: complex ones keep the composed, holomorphic rule), dropout's scaled mask
(``dropout_mask``, no gradient), and array-level kernels inside other primitives' forwards
(``standardize``: ``centre``, ``inverse_sqrt``; ``softmax``: ``exp_shifted``).

Each is written once, as an expression of operators and ufuncs (:class:`_Fused`); its
number literals are weak scalars (the array's dtype) in a kernel as in the operators.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from ..context import context
from ..tensor import Tensor
from ._apply import Op, apply, binary
from .batching import elementwise_batch
from .tangent import total

__all__ = ["relu_grad", "tanh_grad", "sigmoid_grad", "dropout_mask", "centre", "inverse_sqrt",
           "exp_shifted", "exp_scaled", "scores_grad", "standardize_grad", "softmax_grad",
           "exp_guarded", "divide_guarded", "log_softmax_out", "log_softmax_grad", "recorded",
           "gelu", "gelu_grad", "range_ends", "normalize_affine", "affine_grads",
           "bias_relu", "bias_gelu"]


class _Fused(Op):
    """A primitive whose result is its ``expression(b, *arrays)``: one ``return`` of
    operators and ``b.xp`` ufuncs over its arguments and number literals, run as one kernel
    where the backend fuses (:meth:`xad.Backend.elementwise`) and read by
    ``xad.compile(fuse=True)`` as one line of a fused region, as a plain op's forward."""

    @classmethod
    def forward(cls, b, *arrays):
        return b.elementwise(cls._make, cls._kernel_name)(*arrays)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._kernel_name = f"xad_{cls.name}"
        if hasattr(cls, "expression"):  # not on an abstract base such as _ErfFused
            cls._make = staticmethod(functools.partial(_bound, cls.expression))


def _bound(expression: Any, ns: Any) -> Any:
    """The kernel's function over namespace ``ns``: ``expression`` with its ``b`` made once."""
    b = _Kernel(ns)
    return lambda *a: expression(b, *a)


class _Kernel:
    """The ``b`` an expression sees inside a fused kernel: ``b.xp`` is the kernel's
    namespace, ``b.erf`` the backend's error function (a ufunc on CuPy)."""

    def __init__(self, xp: Any, erf: Any = None) -> None:
        self.xp = xp
        self.erf = erf


class _ErfFused(_Fused):
    """A :class:`_Fused` whose expression calls ``b.erf``: one kernel for float32 and
    float64; other dtypes run it unfused (CuPy's ``erf`` of float16 is float64, which
    :meth:`xad.Backend.erf` casts back outside a kernel)."""

    floating = True
    save_inputs = True
    batch = classmethod(elementwise_batch)

    @classmethod
    def forward(cls, b, *arrays):
        xp, expression = b.xp, cls.expression
        if arrays[0].dtype not in (xp.float32, xp.float64):
            return expression(b, *arrays)
        erf = b.erf
        return b.elementwise(lambda ns: lambda *a: expression(_Kernel(ns, erf), *a),
                             f"xad_{cls.name}")(*arrays)


_C = 1 / math.sqrt(2)  # x / sqrt(2) as the composed GELU wrote it
_K = 2 / math.sqrt(math.pi)  # erf'(t) = K exp(-t * t)


class Gelu(_ErfFused):
    """Exact GELU ``x * (erf(x / sqrt(2)) + 1) * 0.5``, one kernel on CuPy (was five)."""

    name = "gelu"

    @staticmethod
    def expression(b, x):
        return x * (b.erf(x * _C) + 1) * 0.5

    @staticmethod
    def backward(node, g):
        return gelu_grad(node.inputs[0], g)

    @staticmethod
    def jvp(primals, tangents, out):
        return gelu_grad(primals[0], tangents[0])


class GeluGrad(_ErfFused):
    """``g * (Phi(x) + x * phi(x))``, exact GELU's gradient, in one kernel on CuPy (was
    about ten), in the composed rule's order of operations (the same bits); its own rule
    uses ``(Phi + x phi)' = phi * (2 - x * x)``."""

    name = "gelu_grad"

    @staticmethod
    def expression(b, x, g):
        return g * 0.5 * (b.erf(x * _C) + 1) + g * 0.5 * x * _K * b.xp.exp(
            -(x * _C * (x * _C))) * _C

    @staticmethod
    def backward(node, gg):
        x, g = node.inputs
        gx = gg * g * _gelu_curvature(x) if node.needs_grad(0) else None
        return gx, (gelu_grad(x, gg) if node.needs_grad(1) else None)

    @staticmethod
    def jvp(primals, tangents, out):
        (x, g), (tx, tg) = primals, tangents
        return total(out, None if tg is None else gelu_grad(x, tg),
                     None if tx is None else g * _gelu_curvature(x) * tx)


def _gelu_curvature(x: Tensor) -> Tensor:
    """GELU's second derivative ``phi(x) * (2 - x * x)``, ``phi`` the normal density."""
    return (x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi)) * (2 - x * x)


class ReluGrad(_Fused):
    """``g`` where ``y > 0``, else 0: relu's gradient for its output ``y``."""

    name = "relu_grad"
    save_inputs = True

    @staticmethod
    def expression(b, y, g):
        # where(), not a multiply by a 0/1 mask: inf * 0 would be NaN (sqrt(relu(x)) at x < 0)
        return b.xp.where(y > 0, g, 0)

    @staticmethod
    def backward(node, gg):
        y, _ = node.inputs
        return None, relu_grad(y, gg)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        y, tg = primals[0], tangents[1]
        return None if tg is None else relu_grad(y, tg)  # flat in y (almost everywhere)


class TanhGrad(_Fused):
    """``g * (1 - y * y)``: tanh's gradient for its output ``y``."""

    name = "tanh_grad"
    save_inputs = True

    @staticmethod
    def expression(b, y, g):
        return g * (1 - y * y)

    @staticmethod
    def backward(node, gg):
        y, g = node.inputs
        gy = gg * g * y * -2.0 if node.needs_grad(0) else None
        return gy, (tanh_grad(y, gg) if node.needs_grad(1) else None)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (y, g), (ty, tg) = primals, tangents
        return total(out, None if tg is None else tanh_grad(y, tg),
                     None if ty is None else g * y * ty * -2)


class SigmoidGrad(_Fused):
    """``g * y * (1 - y)``: the sigmoid's gradient for its output ``y``."""

    name = "sigmoid_grad"
    save_inputs = True

    @staticmethod
    def expression(b, y, g):
        return g * y * (1 - y)

    @staticmethod
    def backward(node, gg):
        y, g = node.inputs
        gy = gg * g * (1.0 - 2.0 * y) if node.needs_grad(0) else None
        return gy, (sigmoid_grad(y, gg) if node.needs_grad(1) else None)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (y, g), (ty, tg) = primals, tangents
        return total(out, None if tg is None else sigmoid_grad(y, tg),
                     None if ty is None else g * (1 - y * 2) * ty)


class DropoutMask(_Fused):
    """``scale`` where ``u >= p``, else 0, in ``u``'s dtype (no gradient): ``p`` and
    ``scale`` are kernel arguments (:meth:`xad.Backend.scalar`), so one kernel serves
    every rate."""

    name = "dropout_mask"
    differentiable = False

    @staticmethod
    def expression(b, u, p, scale):
        return b.xp.where(u >= p, scale, 0)

    @classmethod
    def forward(cls, b, u, p):
        d = u.dtype
        return super().forward(b, u, b.scalar(p, d), b.scalar(1.0 / (1.0 - p), d))

    batch = classmethod(elementwise_batch)


class RangeEnds(Op):
    """``[-min(v), max(v)]`` of an integer tensor, ``v`` the tensor with ``ignore`` read
    as 0 (no gradient): one kernel for ``(-v, v)``, their stack, one reduction (index range
    checks: four kernels with the running maximum, where ``where``/``min``/``-``/``max``/
    ``stack`` took seven)."""

    name = "range_ends"
    differentiable = False

    @staticmethod
    def forward(b, t, ignore, keep=0):
        if ignore is None:
            neg, pos = b.elementwise(_signed, "xad_signed")(t)
        else:
            neg, pos = b.elementwise(_signed_ignoring, "xad_signed_ignoring")(
                t, b.scalar(ignore, t.dtype))
        xp = b.xp
        both = xp.stack([neg, pos], axis=keep)
        if t.ndim != keep + 1:  # (1-d per example: already (..., 2, n))
            both = xp.reshape(both, tuple(t.shape[:keep]) + (2, -1))  # vmap's batch axes
        return xp.max(both, axis=-1)

    @staticmethod
    def batch(args, batched, ignore, keep=0):
        return apply(RangeEnds, args[0], ignore=ignore, keep=keep + 1), True


def _signed(ns: Any) -> Any:
    return lambda t: (-t, t + 0)


def _signed_ignoring(ns: Any) -> Any:
    def signed(t: Any, ig: Any) -> tuple[Any, Any]:
        v = ns.where(t == ig, 0, t)
        return -v, v
    return signed


# ----- array-level kernels inside other primitives' forwards ------------------------------
def _centre(ns: Any) -> Any:
    def centre(x: Any, total: Any, r: Any) -> tuple[Any, Any]:
        d = x - total * r
        return d, d * d
    return centre


def _inverse_sqrt(ns: Any) -> Any:
    return lambda total, r, eps: 1.0 / ns.sqrt(total * r + eps)


def _exp_shifted(ns: Any) -> Any:
    return lambda x, m: ns.exp(x - m)


def _standardize_grad(ns: Any) -> Any:
    return lambda g, y, s1, s2, rstd, r: (g - s1 * r - y * (s2 * r)) * rstd


def _softmax_grad(ns: Any) -> Any:
    return lambda gy, y, s: gy - y * s


def _exp_scaled(ns: Any) -> Any:
    return lambda x, m, scale: ns.exp((x - m) * scale)


def _scores_grad(ns: Any) -> Any:
    return lambda gy, p, s, scale: (gy - p * s) * scale


def _normalize_affine(ns: Any) -> Any:
    def kernel(d: Any, rstd: Any, w: Any, bias: Any) -> tuple[Any, Any]:
        y = d * rstd
        return y * w + bias, y
    return kernel


def _affine_grads(ns: Any) -> Any:
    def kernel(g: Any, w: Any, y: Any) -> tuple[Any, Any, Any]:
        gy = g * w
        return gy, gy * y, g * y
    return kernel


def _bias_relu(ns: Any) -> Any:
    return lambda y, bias: ns.maximum(y + bias, 0)


def _bias_gelu(erf: Any) -> Any:
    def make(ns: Any) -> Any:
        def kernel(y: Any, bias: Any) -> tuple[Any, Any]:
            z = y + bias
            return Gelu.expression(_Kernel(ns, erf), z), z
        return kernel
    return make


def _log_softmax_out(ns: Any) -> Any:
    return lambda x, m, s: x - (ns.log(s) + ns.where(ns.isfinite(m), m, 0))


def _log_softmax_grad(ns: Any) -> Any:
    return lambda g, y, s: g - ns.exp(y) * s


def _exp_guarded(ns: Any) -> Any:
    return lambda x, m: ns.exp(x - ns.where(ns.isfinite(m), m, 0))


def _divide_guarded(ns: Any) -> Any:
    return lambda e, s: e / ns.where(s > 0, s, 1)


def centre(b: Any, x: Any, total: Any, r: float) -> tuple[Any, Any]:
    """``(d, d * d)`` for ``d = x - total * r`` (``total`` a kept-dims sum): one kernel
    where ``b`` fuses (standardize's forward)."""
    return b.elementwise(_centre, "xad_centre")(x, total, b.scalar(r, x.dtype))


def inverse_sqrt(b: Any, total: Any, r: float, eps: float) -> Any:
    """``1 / sqrt(total * r + eps)``: one kernel where ``b`` fuses."""
    d = total.dtype
    return b.elementwise(_inverse_sqrt, "xad_inverse_sqrt")(total, b.scalar(r, d),
                                                           b.scalar(eps, d))


def exp_shifted(b: Any, x: Any, m: Any) -> Any:
    """``exp(x - m)`` (``m`` a kept-dims maximum): one kernel where ``b`` fuses."""
    return b.elementwise(_exp_shifted, "xad_exp_shifted")(x, m)


def standardize_grad(b: Any, g: Any, y: Any, s1: Any, s2: Any, rstd: Any, r: float) -> Any:
    """``(g - s1 * r - y * (s2 * r)) * rstd`` (``s1``, ``s2``: kept-dims sums of ``g`` and
    ``g * y``): standardize's input gradient, one kernel where ``b`` fuses."""
    return b.elementwise(_standardize_grad, "xad_standardize_grad")(
        g, y, s1, s2, rstd, b.scalar(r, g.dtype))


def softmax_grad(b: Any, gy: Any, y: Any, s: Any) -> Any:
    """``gy - y * s`` (``gy = g * y``, ``s`` its kept-dims sum): softmax's input gradient,
    one kernel where ``b`` fuses."""
    return b.elementwise(_softmax_grad, "xad_softmax_grad")(gy, y, s)


def exp_scaled(b: Any, x: Any, m: Any, scale: float) -> Any:
    """``exp((x - m) * scale)`` (``m`` a kept-dims maximum, ``scale > 0``): attention's
    weights before normalisation, one kernel where ``b`` fuses."""
    return b.elementwise(_exp_scaled, "xad_exp_scaled")(x, m, b.scalar(scale, x.dtype))


def scores_grad(b: Any, gy: Any, p: Any, s: Any, scale: float) -> Any:
    """``(gy - p * s) * scale`` (``gy = dp * p``, ``s`` its kept-dims sum): the gradient of
    attention's scaled scores, one kernel where ``b`` fuses."""
    return b.elementwise(_scores_grad, "xad_scores_grad")(gy, p, s, b.scalar(scale, gy.dtype))


def normalize_affine(b: Any, d: Any, rstd: Any, w: Any, bias: Any) -> tuple[Any, Any]:
    """``(y * w + bias, y)`` for ``y = d * rstd``: layer norm's output and its standardised
    input, one kernel where ``b`` fuses."""
    return b.elementwise(_normalize_affine, "xad_normalize_affine")(d, rstd, w, bias)


def affine_grads(b: Any, g: Any, w: Any, y: Any) -> tuple[Any, Any, Any]:
    """``(g * w, g * w * y, g * y)``: what layer norm's rule reads of ``g``, one kernel
    where ``b`` fuses."""
    return b.elementwise(_affine_grads, "xad_affine_grads")(g, w, y)


def bias_relu(b: Any, y: Any, bias: Any) -> Any:
    """``maximum(y + bias, 0)``: a linear layer's bias and relu, one kernel where ``b``
    fuses."""
    return b.elementwise(_bias_relu, "xad_bias_relu")(y, bias)


def bias_gelu(b: Any, y: Any, bias: Any) -> tuple[Any, Any]:
    """``(gelu(z), z)`` for ``z = y + bias`` (exact GELU): a linear layer's bias and GELU,
    one kernel where ``b`` fuses (float32, float64; other dtypes unfused, as
    :class:`Gelu`)."""
    if y.dtype not in (b.xp.float32, b.xp.float64):
        z = y + bias
        return Gelu.expression(b, z), z
    return b.elementwise(_bias_gelu(b.erf), "xad_bias_gelu")(y, bias)


def log_softmax_out(b: Any, x: Any, m: Any, s: Any) -> Any:
    """``x - (log(s) + where(isfinite(m), m, 0))`` (``m`` the kept-dims maximum, ``s`` the
    sum of :func:`exp_guarded`): log-softmax, one kernel where ``b`` fuses."""
    return b.elementwise(_log_softmax_out, "xad_log_softmax_out")(x, m, s)


def log_softmax_grad(b: Any, g: Any, y: Any, s: Any) -> Any:
    """``g - exp(y) * s`` (``s`` the kept-dims sum of ``g``): log-softmax's input gradient,
    one kernel where ``b`` fuses."""
    return b.elementwise(_log_softmax_grad, "xad_log_softmax_grad")(g, y, s)


def exp_guarded(b: Any, x: Any, m: Any) -> Any:
    """``exp(x - where(isfinite(m), m, 0))``: a masked softmax's shifted exponentials (a
    row of ``-inf`` gives zeros, not NaN), one kernel where ``b`` fuses."""
    return b.elementwise(_exp_guarded, "xad_exp_guarded")(x, m)


def divide_guarded(b: Any, e: Any, s: Any) -> Any:
    """``e / where(s > 0, s, 1)``: a masked softmax's normalisation, one kernel where ``b``
    fuses."""
    return b.elementwise(_divide_guarded, "xad_divide_guarded")(e, s)


def recorded(*tensors: Tensor) -> bool:
    """Whether a gradient rule running now is itself recorded (``create_graph``): then it
    uses xad operations, not a first-order kernel, so higher derivatives work."""
    return context.grad_enabled and any(t is not None and t.requires_grad for t in tensors)


def gelu(x: Tensor) -> Tensor:
    """Exact GELU, one kernel where the backend fuses (float32, float64)."""
    return apply(Gelu, x)


def gelu_grad(x: Tensor, g: Tensor) -> Tensor:
    """Exact GELU's gradient ``g * (Phi(x) + x * phi(x))``, one kernel where the backend
    fuses."""
    return binary(GeluGrad, x, g)


def range_ends(t: Tensor, ignore: int | None = None) -> Tensor:
    """``[-min(v), max(v)]`` for the non-empty integer tensor ``t``, ``v`` being ``t`` with
    each ``ignore`` read as 0 (index range checks), in three kernels where the backend
    fuses."""
    return apply(RangeEnds, t, ignore=ignore)


def relu_grad(y: Tensor, g: Tensor) -> Tensor:
    """``where(y > 0, g, 0)`` in one kernel where the backend fuses."""
    return binary(ReluGrad, y, g)


def tanh_grad(y: Tensor, g: Tensor) -> Tensor:
    """``g * (1 - y * y)`` in one kernel where the backend fuses."""
    return binary(TanhGrad, y, g)


def sigmoid_grad(y: Tensor, g: Tensor) -> Tensor:
    """``g * y * (1 - y)`` in one kernel where the backend fuses."""
    return binary(SigmoidGrad, y, g)


def dropout_mask(u: Tensor, p: float) -> Tensor:
    """Dropout's kept-and-scaled mask from uniforms ``u``: ``(u >= p) / (1 - p)``, one
    kernel where the backend fuses (``0 <= p < 1``)."""
    return apply(DropoutMask, u, p=float(p))
