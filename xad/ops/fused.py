"""Primitives whose forward is one elementwise kernel where the backend fuses
(:meth:`xad.Backend.elementwise`: CuPy's ``cupy.fuse``), and plain array operations
elsewhere: the activations' gradients (``relu_grad``, ``tanh_grad``, ``sigmoid_grad``, each
a primitive with its own gradient rule, so ``create_graph`` differentiates them again; real
dtypes: complex ones keep the composed, holomorphic rule), dropout's scaled mask
(``dropout_mask``, no gradient), and array-level kernels inside other primitives' forwards
(``standardize``: ``centre``, ``inverse_sqrt``; ``softmax``: ``exp_shifted``), and kernels
with one reduction inside them (:meth:`xad.Backend.reduction`: a ``cupy.fuse`` reduction
kernel on CuPy, its pre-map over the arguments and its post-map on the reduced value only;
the same calls one by one elsewhere): ``centred_rstd``, ``sum_exp_shifted``,
``sum_exp_guarded``, ``sum_product`` and its users.

Each is written once, as an expression of operators and ufuncs (:class:`_Fused`); its
number literals are weak scalars (the array's dtype) in a kernel as in the operators.
"""

from __future__ import annotations

import functools
import math
import struct
from typing import Any

from ..context import context
from ..tensor import Tensor
from ._apply import Op, apply, binary
from .batching import elementwise_batch
from .tangent import total

__all__ = ["relu_grad", "tanh_grad", "sigmoid_grad", "dropout_mask", "centre", "inverse_sqrt",
           "exp_shifted", "standardize_grad", "softmax_grad",
           "exp_guarded", "divide_guarded", "log_softmax_out", "log_softmax_grad", "recorded",
           "gelu", "gelu_grad", "range_ends", "affine_grads",
           "bias_relu", "bias_gelu", "centred_rstd", "centred_scaled", "centred_affine",
           "sum_of_sum", "sum_product", "sum_exp_shifted", "sum_exp_guarded", "softmax_out",
           "softmax_out_guarded", "product_grad", "layer_norm_input_grad", "fuses", "copy"]


class _Fused(Op):
    """A primitive whose result is its ``expression(b, *arrays)``: one ``return`` of
    operators and ``b.xp`` ufuncs over its arguments and number literals, run as one kernel
    where the backend fuses (:meth:`xad.Backend.elementwise`) and read by
    ``xad.compile(fuse=True)`` as one line of a fused region, as a plain op's forward."""

    _kernel_name: str  # set per subclass by __init_subclass__
    _make: Any  # the kernel's maker, ``_bound(expression)``, where the subclass has one

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
    def expression(b: Any, x: Any) -> Any:
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
    """0 where ``y <= 0``, else ``g``: relu's gradient for its output ``y`` (``g`` at a NaN,
    as PyTorch's ``threshold_backward`` at every size)."""

    name = "relu_grad"
    save_inputs = True

    @staticmethod
    def expression(b, y, g):
        # where(), not a multiply by a 0/1 mask: inf * 0 would be NaN (sqrt(relu(x)) at x < 0)
        return b.xp.where(y <= 0, 0, g)

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
    return lambda x, m, s: (x - m) - ns.log(s)


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
    """``(x - m) - log(s)`` (``m`` the kept-dims maximum, ``s`` the sum of
    :func:`exp_shifted`): log-softmax, as PyTorch computes it (``log(s)`` is not lost beside
    a huge ``m``; a row with ``+inf`` or only ``-inf`` gives NaN), one kernel where ``b``
    fuses."""
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


_FUSES: dict[Any, bool] = {}


def fuses(b: Any) -> bool:
    """Whether backend ``b`` runs elementwise functions as fused kernels (``b.fuse`` makes
    one: CuPy), asked once per backend."""
    if b not in _FUSES:
        _FUSES[b] = b.fuse(_copy, "xad_probe") is not None
    return _FUSES[b]


def _copy(ns: Any) -> Any:
    return lambda a: ns.positive(a)


def copy(b: Any, a: Any) -> Any:
    """``a`` copied into a new C-ordered array (an exact copy: ``positive``), one kernel where
    ``b`` fuses (CuPy's elementwise kernels write C order)."""
    return b.elementwise(_copy, "xad_copy")(a)


# ----- kernels with one reduction (Backend.reduction) -------------------------------------
_REDUCTIONS: dict[tuple, Any] = {}  # (backend, name, axes, numbers): the kernel


def _reduce(b: Any, make: Any, name: str, shape: tuple[int, ...], axes: tuple[int, ...],
            *args: Any, numbers: tuple[float, ...] = ()) -> Any:
    """``make(axes, *numbers)``'s one-reduction kernel called on ``args`` (``shape``: their
    broadcast shape), its result with the reduced axes kept (a view, no kernel); the kernel
    is named for the axes and the numbers baked into it as literals, and made once."""
    key = (b, name, axes, numbers)
    fn = _REDUCTIONS.get(key)
    if fn is None:
        tag = "_".join([name, *map(str, axes), *(struct.pack("<d", v).hex() for v in numbers)])
        fn = _REDUCTIONS[key] = b.reduction(make(axes, *numbers), tag)
    return b.xp.reshape(fn(*args), tuple(1 if i in axes else n for i, n in enumerate(shape)))


def _centred_rstd(axes: tuple[int, ...], r: float, eps: float) -> Any:
    def make(ns: Any) -> Any:
        def kernel(x: Any, total: Any) -> Any:
            d = x - total * r
            return 1.0 / ns.sqrt(ns.sum(d * d, axis=axes) * r + eps)
        return kernel
    return make


def _centred_rstd_of_sum(axes: tuple[int, ...], r: float, eps: float) -> Any:
    def make(ns: Any) -> Any:
        def kernel(x: Any, t: Any, total: Any) -> Any:
            d = x + t - total * r
            return 1.0 / ns.sqrt(ns.sum(d * d, axis=axes) * r + eps)
        return kernel
    return make


def _centred_rstd_of_sum3(axes: tuple[int, ...], r: float, eps: float) -> Any:
    def make(ns: Any) -> Any:
        def kernel(x: Any, t: Any, c: Any, total: Any) -> Any:
            d = x + (t + c) - total * r
            return 1.0 / ns.sqrt(ns.sum(d * d, axis=axes) * r + eps)
        return kernel
    return make


def _sum_of_sum(axes: tuple[int, ...]) -> Any:
    return lambda ns: lambda x, t: ns.sum(x + t, axis=axes)


def _sum_of_sum3(axes: tuple[int, ...]) -> Any:
    return lambda ns: lambda x, t, c: ns.sum(x + (t + c), axis=axes)


def _sum_product(axes: tuple[int, ...]) -> Any:
    return lambda ns: lambda a, c: ns.sum(a * c, axis=axes)


def _sum_product3(axes: tuple[int, ...]) -> Any:
    return lambda ns: lambda a, c, e: ns.sum(a * c * e, axis=axes)


def _sum_exp_shifted(axes: tuple[int, ...], scale: float = 1.0) -> Any:
    if scale == 1.0:
        return lambda ns: lambda x, m: ns.sum(ns.exp(x - m), axis=axes)
    return lambda ns: lambda x, m: ns.sum(ns.exp((x - m) * scale), axis=axes)


def _sum_exp_guarded(axes: tuple[int, ...]) -> Any:
    return lambda ns: lambda x, m: ns.sum(ns.exp(x - ns.where(ns.isfinite(m), m, 0)), axis=axes)


def centred_rstd(b: Any, x: Any, total: Any, axes: tuple[int, ...], r: float,
                 eps: float, t: Any = None, c: Any = None) -> Any:
    """``1 / sqrt(sum(d * d) * r + eps)`` for ``d = x - total * r`` (``total`` the kept-dims
    sum of ``x`` over ``axes``, ``r`` one over its count), with kept dims: standardize's
    ``rstd`` in one reduction kernel where ``b`` fuses (was three kernels). With ``t``,
    of ``x + t`` (``x + (t + c)`` with ``c``), the sum never stored."""
    if t is None:
        return _reduce(b, _centred_rstd, "xad_centred_rstd", x.shape, axes, x, total,
                       numbers=(r, eps))
    if c is not None:
        return _reduce(b, _centred_rstd_of_sum3, "xad_centred_rstd_of_sum3", x.shape, axes,
                       x, t, c, total, numbers=(r, eps))
    return _reduce(b, _centred_rstd_of_sum, "xad_centred_rstd_of_sum", x.shape, axes, x, t,
                   total, numbers=(r, eps))


def sum_of_sum(b: Any, x: Any, t: Any, axes: tuple[int, ...], c: Any = None) -> Any:
    """``sum(x + t)`` (``sum(x + (t + c))`` with ``c``) over ``axes`` with kept dims (``x``
    of the broadcast shape): one reduction kernel where ``b`` fuses, the sum never
    stored."""
    if c is not None:
        return _reduce(b, _sum_of_sum3, "xad_sum_of_sum3", x.shape, axes, x, t, c)
    return _reduce(b, _sum_of_sum, "xad_sum_of_sum", x.shape, axes, x, t)


def centred_scaled(b: Any, x: Any, total: Any, r: float, rstd: Any) -> Any:
    """``(x - total * r) * rstd``: standardize's output, one kernel where ``b`` fuses."""
    return b.elementwise(_centred_scaled, "xad_centred_scaled")(x, total, b.scalar(r, x.dtype),
                                                                 rstd)


def centred_affine(b: Any, x: Any, total: Any, r: float, rstd: Any, w: Any,
                   bias: Any, t: Any = None, c: Any = None) -> tuple[Any, Any]:
    """``(y * w + bias, y)`` for ``y = (x - total * r) * rstd``: layer norm's output and its
    standardised input, one kernel where ``b`` fuses; with ``t``, of ``x + t`` (``x + (t + c)``
    with ``c``)."""
    r = b.scalar(r, x.dtype)
    if t is None:
        return b.elementwise(_centred_affine, "xad_centred_affine")(x, total, r, rstd, w, bias)
    if c is not None:
        return b.elementwise(_centred_affine_of_sum3, "xad_centred_affine_of_sum3")(
            x, t, c, total, r, rstd, w, bias)
    return b.elementwise(_centred_affine_of_sum, "xad_centred_affine_of_sum")(
        x, t, total, r, rstd, w, bias)


def sum_product(b: Any, a: Any, c: Any, axes: tuple[int, ...], e: Any = None) -> Any:
    """``sum(a * c)`` (``sum(a * c * e)`` with ``e``) over ``axes`` with kept dims, ``a`` of
    the broadcast shape: one reduction kernel where ``b`` fuses (the product is never
    stored)."""
    if e is None:
        return _reduce(b, _sum_product, "xad_sum_product", a.shape, axes, a, c)
    return _reduce(b, _sum_product3, "xad_sum_product3", a.shape, axes, a, c, e)


def sum_exp_shifted(b: Any, x: Any, m: Any, axes: tuple[int, ...], scale: float = 1.0) -> Any:
    """``sum(exp((x - m) * scale))`` over ``axes`` (``m`` a kept-dims maximum; without
    ``* scale`` for 1), kept dims: softmax's and attention's normaliser, one reduction
    kernel where ``b`` fuses (the exponentials are never stored)."""
    numbers = () if scale == 1.0 else (scale,)
    return _reduce(b, _sum_exp_shifted, "xad_sum_exp_shifted", x.shape, axes, x, m,
                   numbers=numbers)


def sum_exp_guarded(b: Any, x: Any, m: Any, axes: tuple[int, ...]) -> Any:
    """``sum(exp(x - where(isfinite(m), m, 0)))`` over ``axes``, kept dims: a masked
    softmax's and log-softmax's normaliser, one reduction kernel where ``b`` fuses."""
    return _reduce(b, _sum_exp_guarded, "xad_sum_exp_guarded", x.shape, axes, x, m)


def softmax_out(b: Any, x: Any, m: Any, s: Any, scale: float = 1.0) -> Any:
    """``exp((x - m) * scale) / s`` (without ``* scale`` for 1): softmax from its
    normaliser, one kernel where ``b`` fuses."""
    if scale == 1.0:
        return b.elementwise(_softmax_out, "xad_softmax_out")(x, m, s)
    return b.elementwise(_softmax_out_scaled, "xad_softmax_out_scaled")(
        x, m, s, b.scalar(scale, x.dtype))


def softmax_out_guarded(b: Any, x: Any, m: Any, s: Any) -> Any:
    """``exp_guarded(x, m) / where(s > 0, s, 1)``: a masked softmax from its normaliser, one
    kernel where ``b`` fuses."""
    return b.elementwise(_softmax_out_guarded, "xad_softmax_out_guarded")(x, m, s)


def product_grad(b: Any, g: Any, y: Any, s: Any, scale: float = 1.0) -> Any:
    """``(g * y - y * s) * scale`` (without ``* scale`` for 1; ``s`` the kept-dims sum of
    ``g * y``): softmax's and attention's scores' input gradient, one kernel where ``b``
    fuses."""
    if scale == 1.0:
        return b.elementwise(_product_grad, "xad_product_grad")(g, y, s)
    return b.elementwise(_product_grad_scaled, "xad_product_grad_scaled")(
        g, y, s, b.scalar(scale, g.dtype))


def layer_norm_input_grad(b: Any, g: Any, w: Any, y: Any, s1: Any, s2: Any, rstd: Any,
                          r: float) -> Any:
    """``(g * w - s1 * r - y * (s2 * r)) * rstd`` (``s1``, ``s2``: kept-dims sums of
    ``g * w`` and ``g * w * y``): layer norm's input gradient, one kernel where ``b``
    fuses."""
    return b.elementwise(_layer_norm_input_grad, "xad_layer_norm_input_grad")(
        g, w, y, s1, s2, rstd, b.scalar(r, g.dtype))


def _centred_scaled(ns: Any) -> Any:
    return lambda x, total, r, rstd: (x - total * r) * rstd


def _centred_affine(ns: Any) -> Any:
    def kernel(x: Any, total: Any, r: Any, rstd: Any, w: Any, bias: Any) -> tuple[Any, Any]:
        y = (x - total * r) * rstd
        return y * w + bias, y
    return kernel


def _centred_affine_of_sum(ns: Any) -> Any:
    def kernel(x: Any, t: Any, total: Any, r: Any, rstd: Any, w: Any,
               bias: Any) -> tuple[Any, Any]:
        y = (x + t - total * r) * rstd
        return y * w + bias, y
    return kernel


def _centred_affine_of_sum3(ns: Any) -> Any:
    def kernel(x: Any, t: Any, c: Any, total: Any, r: Any, rstd: Any, w: Any,
               bias: Any) -> tuple[Any, Any]:
        y = (x + (t + c) - total * r) * rstd
        return y * w + bias, y
    return kernel


def _softmax_out(ns: Any) -> Any:
    return lambda x, m, s: ns.exp(x - m) / s


def _softmax_out_scaled(ns: Any) -> Any:
    return lambda x, m, s, scale: ns.exp((x - m) * scale) / s


def _softmax_out_guarded(ns: Any) -> Any:
    return lambda x, m, s: ns.exp(x - ns.where(ns.isfinite(m), m, 0)) / ns.where(s > 0, s, 1)


def _product_grad(ns: Any) -> Any:
    return lambda g, y, s: g * y - y * s


def _product_grad_scaled(ns: Any) -> Any:
    return lambda g, y, s, scale: (g * y - y * s) * scale


def _layer_norm_input_grad(ns: Any) -> Any:
    return lambda g, w, y, s1, s2, rstd, r: (g * w - s1 * r - y * (s2 * r)) * rstd


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
    """``where(y <= 0, 0, g)`` in one kernel where the backend fuses."""
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
