"""Reductions (sum, mean, var, max, ...), cumulative sums, softmax and logsumexp."""

from __future__ import annotations

import math
from typing import Any

from .. import dtypes as _dt
from ..context import context
from ..factories import arange
from ..tensor import Tensor
from ._apply import Op, apply, unary
from .amp_cast import HALF as _HALF
from .amp_cast import autocast_float32, in_float32
from .axes import normalize_axes, normalize_axis
from .batching import axes_batch, shift_axes
from .complex_parts import imag, real
from .dtype_functions import finfo
from .elementwise import (
    astype,
    clip,
    exp,
    holomorphic,
    isfinite,
    log,
    logical_and,
    logical_not,
    logical_or,
    sign,
    sqrt,
    where,
)
from .fused import (
    divide_guarded,
    exp_guarded,
    exp_shifted,
    fuses,
    log_softmax_grad,
    log_softmax_out,
    product_grad,
    recorded,
    softmax_grad,
    softmax_out,
    softmax_out_guarded,
    sum_exp_guarded,
    sum_exp_shifted,
    sum_product,
)
from .linalg import by_product, keep_sum, keep_sum_array
from .shape import broadcast_to, expand_dims, flip, reshape
from .tangent import linear_jvp

__all__ = ["sum", "mean", "var", "std", "max", "min", "prod", "logsumexp", "cumsum",
           "softmax", "log_softmax", "argmax", "argmin", "any", "all"]


def _axes(axis: Any, ndim: int, op: str = "reduction") -> tuple[int, ...]:
    return normalize_axes(axis, ndim, op, scalar_ok=True)


def _kept_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _expand(g: Tensor, node: Any) -> Tensor:
    """Reshape a reduction's gradient to the input's rank (keepdims form); a 0-d gradient
    (a reduction over every axis) broadcasts as it is."""
    p = node.params
    if not p["keepdims"] and g.ndim:
        g = reshape(g, _kept_shape(node.in_shapes[0], p["axis"]))
    return g


def _accumulator(b: Any, x: Any) -> Any:
    """float32 for a half-precision array (PyTorch's accumulation: a float16 sum of 2049
    ones stops at 2048, of 3000 values of 30 overflows to inf), else None."""
    return b.dtype(_dt.float32) if b.xad_dtype(x.dtype) in _HALF else None


_WIDENED = {_dt.bool_: _dt.int64, _dt.uint8: _dt.uint64, _dt.uint16: _dt.uint64,
            _dt.uint32: _dt.uint64, _dt.uint64: _dt.uint64}


def _widened(b: Any, f: Any, x: Any, axis: Any, keepdims: bool) -> Any | None:
    """``f`` (the namespace's ``sum`` or ``prod``) of a bool or unsigned integer array in
    the standard's dtype (int64, uint64) on every backend, or None for another dtype:
    through int64 (the same bits modulo 2**64), since PyTorch gave int64 and has no uint64
    sum, and array_api_strict refuses bool."""
    to = _WIDENED.get(b.xad_dtype(x.dtype))
    if to is None:
        return None
    out = f(b.xp.astype(x, b.dtype(_dt.int64)), axis=axis, keepdims=keepdims)
    return out if to is _dt.int64 else b.xp.astype(out, b.dtype(to))


class Sum(Op):
    name = "sum"

    @staticmethod
    def forward(b, x, axis, keepdims, dtype=None):
        acc = dtype or _accumulator(b, x)
        if acc is None:
            out = _widened(b, b.xp.sum, x, axis, keepdims)
            if out is not None:
                return out
        out = b.xp.sum(x, axis=axis, dtype=acc, keepdims=keepdims)
        return out if dtype is not None or acc is None else b.xp.astype(out, x.dtype)

    @staticmethod
    def backward(node, g):
        return broadcast_to(_expand(g, node), node.in_shapes[0])

    batch = classmethod(axes_batch)

    jvp = classmethod(linear_jvp)


class Max(Op):
    name = "max"
    save_inputs = True
    save_output = True

    @staticmethod
    def forward(b, x, axis, keepdims):
        return b.xp.max(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def backward(node, g):
        return _extreme_grad(node, g)

    batch = classmethod(axes_batch)

    @staticmethod
    def jvp(primals, tangents, out, axis, keepdims):
        return _extreme_jvp(primals[0], tangents[0], out, axis, keepdims)


class Min(Op):
    name = "min"
    save_inputs = True
    save_output = True

    @staticmethod
    def forward(b, x, axis, keepdims):
        return b.xp.min(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def backward(node, g):
        return _extreme_grad(node, g)

    batch = classmethod(axes_batch)

    @staticmethod
    def jvp(primals, tangents, out, axis, keepdims):
        return _extreme_jvp(primals[0], tangents[0], out, axis, keepdims)


def _extreme_grad(node: Any, g: Tensor) -> Tensor:
    """Split the gradient evenly among the elements equal to the max (or min); the others
    get exactly 0 (selected, not multiplied by a 0/1 mask: an infinite ``g`` gives no NaN).
    A NaN max (a NaN in the slice) equals no element: NaN for all, as PyTorch's ``amax``
    and JAX's."""
    x = node.inputs[0]
    y = _expand(node.output(), node)
    hit = x == y
    count = sum(astype(hit, g.dtype), axis=node.params["axis"], keepdims=True)
    return where(count == 0, math.nan, where(hit, _expand(g, node) / count, 0.0))


class MaxIndexed(Op):
    """The max (``largest``) or min over one axis whose gradient goes all to the element
    ``argmax`` (``argmin``) returns, the first of tied extremes: PyTorch's ``max_pool2d``;
    :class:`Max` shares it, as JAX. (PyTorch's ``max(dim)`` takes the element at its index:
    ``xad.ops.torch_conventions.max_dim``.)"""

    name = "max_indexed"
    save_inputs = True

    @staticmethod
    def forward(b, x, axis, keepdims, largest):
        return (b.xp.max if largest else b.xp.min)(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def backward(node, g):
        p = node.params
        return where(_indexed(node.inputs[0], p["axis"], p["largest"]), _expand(g, node), 0.0)

    batch = classmethod(axes_batch)

    @staticmethod
    def jvp(primals, tangents, out, axis, keepdims, largest):
        hit = _indexed(primals[0], axis, largest)
        return sum(where(hit, tangents[0], 0.0), axis=axis, keepdims=keepdims)


def _indexed(x: Tensor, axis: tuple[int], largest: bool) -> Tensor:
    """Where ``x`` holds the element ``argmax`` (``argmin``) returns along ``axis``."""
    (a,) = axis
    return index_mask((argmax if largest else argmin)(x, axis=a, keepdims=True), a,
                      x.shape[a])


def index_mask(idx: Tensor, axis: int, n: int) -> Tensor:
    """Where the positions ``0..n-1`` along ``axis`` are the indices ``idx`` (``axis``
    kept, of length 1): a mask of ``idx``'s shape with ``n`` along ``axis``."""
    shape = [1] * idx.ndim
    shape[axis] = n
    return reshape(arange(n, dtype=idx.dtype, backend=idx._backend), tuple(shape)) == idx


class MaxDim(Op):
    """PyTorch's ``max(dim)`` (``largest=False``: ``min(dim)``): ``(values, indices)``, the
    index the backend's ``argmax`` (``argmin``) gives (the first of tied extremes, a NaN's)
    and the element there, so its sign at a tie of 0.0 and -0.0 (the libraries' ``max``
    gives either). Two kernels; the gradient goes all to the index, the input is not kept
    (it may change in place afterwards, as in PyTorch)."""

    name = "max_dim"
    save_output = True

    @staticmethod
    def forward(b, x, axis, keepdims, largest):
        (a,) = axis
        xp = b.xp
        i = (xp.argmax if largest else xp.argmin)(x, axis=a, keepdims=True)
        v = xp.take_along_axis(x, i, axis=a)
        return (v, i) if keepdims else (xp.squeeze(v, axis=a), xp.squeeze(i, axis=a))

    @staticmethod
    def backward(node, g, _g_indices):
        return where(_at_index(node), _expand(g, node), 0.0)

    batch = classmethod(axes_batch)

    @staticmethod
    def jvp(primals, tangents, out, axis, keepdims, largest):
        (a,), x = axis, primals[0]
        idx = out[1] if keepdims else expand_dims(out[1], axis=a)
        hit = index_mask(idx, a, x.shape[a])
        return sum(where(hit, tangents[0], 0.0), axis=axis, keepdims=keepdims), None


def _at_index(node: Any) -> Tensor:
    """Where :class:`MaxDim`'s input holds the elements its indices name."""
    (a,) = node.params["axis"]
    idx = node.output(1)
    if not node.params["keepdims"]:
        idx = expand_dims(idx, axis=a)
    return index_mask(idx, a, node.in_shapes[0][a])


def max_indexed(x: Tensor, axis: int, keepdims: bool = False, largest: bool = True) -> Tensor:
    """:class:`MaxIndexed` over ``axis`` (an int)."""
    a = normalize_axis(axis, x.ndim, "max" if largest else "min")
    return unary(MaxIndexed, x, axis=(a,), keepdims=keepdims, largest=largest)
def _extreme_jvp(x: Tensor, t: Tensor, out: Tensor, axis: Any, keepdims: bool) -> Tensor:
    """The mean tangent of the elements equal to the max (or min): the gradient's tie rule."""
    kept = tuple(1 if i in axis else n for i, n in enumerate(x.shape))
    hit = x == (out if keepdims else reshape(out, kept))
    count = sum(astype(hit, t.dtype), axis=axis, keepdims=keepdims)
    return sum(where(hit, t, 0.0), axis=axis, keepdims=keepdims) / count


@holomorphic
class Prod(Op):
    name = "prod"
    save_inputs = True

    @staticmethod
    def forward(b, x, axis, keepdims, dtype=None):
        out = None if dtype is not None else _widened(b, b.xp.prod, x, axis, keepdims)
        return b.xp.prod(x, axis=axis, dtype=dtype, keepdims=keepdims) if out is None else out

    @staticmethod
    def backward(node, g):
        return _expand(g, node) * _prod_grad(node.inputs[0], node.params["axis"])

    batch = classmethod(axes_batch)

    @staticmethod
    def jvp(primals, tangents, out, axis, keepdims, dtype=None):
        t = tangents[0] * _prod_grad(primals[0], axis)
        return sum(t, axis=axis, keepdims=keepdims)


def _prod_grad(x: Tensor, axes: tuple[int, ...]) -> Tensor:
    """``d prod(x) / d x_i = prod_{j != i} x_j`` (kept-dims form), exact at zeros, infinities
    and NaNs (JAX's; PyTorch's where the tensor holds a zero, else its ``prod / x_i`` is NaN
    at an infinity).

    With ``p`` the product of the ordinary (finite, nonzero) elements, ``zp`` that of the
    zeros (1 without zeros, else 0) and ``fp`` that of the infinities and NaNs: an ordinary
    element gets ``zp * fp * p / x_i``; a zero ``p * fp`` times the product of the *other*
    zeros (1, the other zero's value, or 0 for ``nz`` = 1, 2, >= 3), so second derivatives
    are exact at zeros too; an infinity or NaN ``p * zp`` times the product of the other
    infinities and NaNs (:func:`_others_nonfinite`).
    """
    z = x == 0
    nf = logical_not(isfinite(x))
    special = logical_or(z, nf)
    safe = where(special, 1.0, x)
    p = prod(safe, axes, keepdims=True)
    zp = prod(where(z, x, 1.0), axes, keepdims=True)
    fp = prod(where(nf, x, 1.0), axes, keepdims=True)
    nz = sum(astype(z, x.dtype), axes, keepdims=True)
    zs = sum(where(z, x, 0.0), axes, keepdims=True)  # 0, with derivative 1 at each zero
    others = where(nz == 1, 1.0, where(nz == 2, zs - x, 0.0))
    return where(z, p * others * fp,
                 where(nf, p * zp * _others_nonfinite(x.detach(), nf, axes), zp * fp * p / safe))


def _others_nonfinite(x: Tensor, nf: Tensor, axes: tuple[int, ...]) -> Tensor:
    """For each infinity or NaN of ``x``, the product of the other infinities and NaNs of
    its slice, from their counts: NaN with another NaN, else +-inf with another infinity
    (the sign of their product), else 1."""
    nan = x != x
    inf = logical_and(nf, logical_not(nan))
    sgn = where(inf, sign(x), 1.0)
    d = real(x).dtype  # counts in a real dtype (complex ones have no order)
    n_nan = sum(astype(nan, d), axes, keepdims=True) - astype(nan, d)
    n_inf = sum(astype(inf, d), axes, keepdims=True) - astype(inf, d)
    s = prod(sgn, axes, keepdims=True) * sgn  # (sgn is +-1: times is divided by)
    return where(n_nan > 0, math.nan, where(n_inf > 0, s * math.inf, 1.0))


class Cumsum(Op):
    name = "cumsum"

    @staticmethod
    def forward(b, x, axis):
        acc = _accumulator(b, x)
        if acc is None:  # (the caller chose the dtype: PyTorch's scan of uint64 gave int64)
            out = b.xp.cumulative_sum(x, axis=axis)
            out = out if out.dtype == x.dtype else b.xp.astype(out, x.dtype)
        else:
            out = b.xp.astype(b.xp.cumulative_sum(x, axis=axis, dtype=acc), x.dtype)
        return b.row_major(out)  # (PyTorch's scans write contiguous results)

    @staticmethod
    def backward(node, g):
        a = node.params["axis"]
        return flip(cumsum(flip(g, axis=a), axis=a), axis=a)

    batch = classmethod(axes_batch)

    jvp = classmethod(linear_jvp)


def _reduce(op: type[Op], x: Tensor, axis: Any, keepdims: bool, dtype: Any = None) -> Tensor:
    """``op`` over ``axis``; ``dtype`` (sum and prod): ``x`` cast to it, and the result in it."""
    if dtype is not None:
        x = astype(x, dtype, copy=False)
        return unary(op, x, axis=_axes(axis, x.ndim, op.name), keepdims=bool(keepdims),
                     dtype=x._array.dtype)
    axes = _axes(axis, x.ndim, op.name)
    if context.autocast is not None and (op is Sum or op is Prod):  # float32 under autocast
        (x,) = autocast_float32(x, op=op.name)
    if (op is Max or op is Min) and 0 in [x.shape[a] for a in axes]:
        raise ValueError(f"{op.name}: cannot reduce a tensor of shape {x.shape} over an "
                         f"empty axis (it has no {op.name}imum); check the input's size")
    return unary(op, x, axis=axes, keepdims=bool(keepdims))


def sum(x: Tensor, axis: Any = None, keepdims: bool = False, *, dtype: Any = None) -> Tensor:
    """Sum over ``axis`` (an int, a tuple, or ``None`` for all), accumulated in ``dtype``
    when given (``x`` is cast to it first, so the gradient comes back in ``x``'s dtype).

    Example:
        >>> import xad
        >>> xad.sum(xad.ones((2, 3)), axis=1).tolist()
        [3.0, 3.0]
        >>> xad.sum(xad.ones(2), dtype=xad.float64).dtype
        xad.float64
    """
    return _reduce(Sum, x, axis, keepdims, dtype)


def mean(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Arithmetic mean over ``axis``.

    Example:
        >>> import xad
        >>> xad.mean(xad.tensor([1.0, 3.0])).item()
        2.0
    """
    axes = _axes(axis, x.ndim)
    if x.dtype in _HALF:  # the sum and the division in float32, as PyTorch's
        out = mean(astype(x, _dt.float32), axes, keepdims)
        return out if context.autocast is not None else astype(out, x.dtype)  # (its list)
    n = math.prod(x.shape[a] for a in axes)
    return _reduce(Sum, x, axes, keepdims) * (1.0 / n if n else math.nan)


class Var(Op):
    """The variance over ``axis``, dividing by ``n - correction``, as one node: its rule is
    the analytic ``2 (x - mean) g / (n - correction)`` (PyTorch's). The composed mean,
    square and sum rules add ``sum(x - mean)``, zero in exact arithmetic but not in floating
    point, to every element's gradient: ``[1e30, -1e30, 3, 0]`` gave ``[.., 1.25, -0.75]``
    for ``[.., 1.5, -0.5]``. At ``n - correction <= 0`` the value is NaN (the standard's
    special case) or, with ``pytorch``, PyTorch's ``sum / max(n - correction, 0)`` (inf,
    NaN for no spread) and its rule's unclamped divisor. The forward shifts each slice by
    its first element (``var(x - x[0])``, one more elementwise pass): a constant slice's
    variance is exactly 0 (``sum * (1/n)`` misses the constant for ~38% of them: ``std`` was
    1e-16 and PyTorch's ``std`` gradient, masked only at exactly 0, O(1))."""

    name = "var"
    save_inputs = True
    floating = True

    @staticmethod
    def forward(b, x, axis, correction, keepdims, pytorch):
        acc = _accumulator(b, x)  # half precision: in float32, as PyTorch's
        xw = x if acc is None else b.xp.astype(x, acc)
        n = math.prod(x.shape[a] for a in axis)
        if n:  # shifted by the first element: a constant slice's deviations are exactly 0
            xw = xw - xw[_first(xw.ndim, axis)]
        d = xw - b.xp.sum(xw, axis=axis, keepdims=True) * (1.0 / n if n else math.nan)
        scale = _var_scale(n, correction, pytorch)
        out = b.xp.sum(d * d, axis=axis, keepdims=keepdims) * scale
        return out if acc is None else b.xp.astype(out, x.dtype)

    @staticmethod
    def backward(node, g):
        x, p = node.inputs[0], node.params
        return _expand(g, node) * _var_grad(x, p["axis"], p["correction"], p["pytorch"])

    batch = classmethod(axes_batch)

    @staticmethod
    def jvp(primals, tangents, out, axis, correction, keepdims, pytorch):
        return sum(tangents[0] * _var_grad(primals[0], axis, correction, pytorch), axis,
                   keepdims)


def _first(ndim: int, axes: tuple[int, ...]) -> tuple[slice, ...]:
    """The key of each slice's first element over ``axes`` (kept dims)."""
    return tuple(slice(0, 1) if a in axes else slice(None) for a in range(ndim))


def _var_scale(n: int, correction: float, pytorch: bool = False, rule: bool = False) -> float:
    """``1 / (n - correction)``; where that is not positive, NaN (the standard's) or, with
    ``pytorch``, inf, and in the gradient rule (``rule``) PyTorch's negative divisor."""
    if n - correction > 0 or (pytorch and rule and n - correction < 0):
        return 1.0 / (n - correction)
    return math.inf if pytorch else math.nan


def _var_grad(x: Tensor, axes: tuple[int, ...], correction: float,
              pytorch: bool = False) -> Tensor:
    """``d var(x) / d x = 2 (x - mean(x)) / (n - correction)`` (kept-dims form)."""
    n = math.prod(x.shape[a] for a in axes)
    return (x - mean(x, axes, keepdims=True)) * (2.0 * _var_scale(n, correction, pytorch, True))


def var(x: Tensor, axis: Any = None, correction: float = 0, keepdims: bool = False) -> Tensor:
    """Variance over ``axis``, dividing by ``N - correction`` (the standard's keyword): NaN
    where ``N - correction <= 0`` (the standard's special case).

    Example:
        >>> import xad
        >>> xad.var(xad.tensor([1.0, 3.0])).item()
        1.0
    """
    return variance(x, axis, correction, keepdims, pytorch=False)


def variance(x: Tensor, axis: Any, correction: float, keepdims: bool, pytorch: bool) -> Tensor:
    """:func:`var`; ``pytorch``: inf, not NaN, where ``N - correction <= 0`` (``Var``). A
    complex ``x``'s is real, ``var(real(x)) + var(imag(x))`` (PyTorch's; was complex)."""
    if x.dtype in (_dt.complex64, _dt.complex128):
        return (variance(real(x), axis, correction, keepdims, pytorch)
                + variance(imag(x), axis, correction, keepdims, pytorch))
    if context.autocast is not None:  # float32 under autocast, as its sums were
        (x,) = autocast_float32(x, op="var")
    return unary(Var, x, axis=_axes(axis, x.ndim, "var"), correction=correction,
                 keepdims=bool(keepdims), pytorch=pytorch)


def std(x: Tensor, axis: Any = None, correction: float = 0, keepdims: bool = False) -> Tensor:
    """Standard deviation, ``sqrt(var(...))``."""
    if half_root(x):
        return in_float32(std, x, axis, correction, keepdims)
    return sqrt(var(x, axis, correction, keepdims))


def half_root(x: Tensor) -> bool:
    """Whether a standard deviation of ``x`` is taken in float32 and rounded once: a
    float16/bfloat16 variance overflows (inf) where its root does not (std of 3 and 1e4
    was inf), as PyTorch's (autocast makes it float32 already)."""
    return x.dtype in _HALF and context.autocast is None


def max(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Maximum over ``axis``; the gradient is shared among tied maxima."""
    return _reduce(Max, x, axis, keepdims)


def min(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Minimum over ``axis``."""
    return _reduce(Min, x, axis, keepdims)


def prod(x: Tensor, axis: Any = None, keepdims: bool = False, *, dtype: Any = None) -> Tensor:
    """Product over ``axis``, accumulated in ``dtype`` when given (as ``sum``)."""
    return _reduce(Prod, x, axis, keepdims, dtype)


def logsumexp(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` computed stably (shifted by the maximum).

    Example:
        >>> import xad
        >>> round(xad.logsumexp(xad.tensor([0.0, 0.0])).item(), 4)
        0.6931
    """
    if context.autocast is not None:
        (x,) = autocast_float32(x, op="logsumexp")
    axes = _axes(axis, x.ndim, "logsumexp")
    if 0 in x.shape:  # log(0) = -inf over an empty axis, as torch
        return log(sum(exp(x), axes, keepdims=keepdims))
    m = max(x, axes, keepdims=True).detach()
    # -inf (all masked) and NaN: shift by 0; +inf: by the largest finite number, so a
    # finite element's gradient is exp(x - m) / inf = 0 (PyTorch's), not inf / inf = NaN
    if m.dtype.is_floating:
        m = clip(m, None, finfo(m.dtype).max)
    m = where(isfinite(m), m, 0.0)
    out = log(sum(exp(x - m), axes, keepdims=True)) + m
    if not keepdims:
        out = reshape(out, tuple(n for i, n in enumerate(x.shape) if i not in axes))
    return out


class Softmax(Op):
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` as one node: its rule
    ``y * (g - sum(g * y))`` reads only the output (three passes where the composed
    exp/sum/divide graph took seven). ``empty_zero``: a row with no finite entry gives zeros
    (masked attention's rows with every key masked out), not NaN. Three kernels on CuPy:
    the maximum, the sum of the exponentials in one reduction kernel, the output (was
    four)."""

    name = "softmax"
    save_output = True
    floating = True  # integers in the default floating dtype first (NumPy's exp: float64)

    @staticmethod
    def forward(b: Any, x: Any, axis: tuple[int, ...], empty_zero: bool, product: bool
                ) -> Any:
        m = b.xp.max(x, axis=axis, keepdims=True)
        if product or not fuses(b):  # on the host: the exponentials once (the same bits;
            # NumPy's large arrays: summed by a product)
            e = exp_guarded(b, x, m) if empty_zero else exp_shifted(b, x, m)
            s = keep_sum_array(b, e, axis, product)
            out = divide_guarded(b, e, s) if empty_zero else e / s
        elif empty_zero:  # a row of -inf: shift by 0, divide by 1 (zeros, not NaN)
            out = softmax_out_guarded(b, x, m, sum_exp_guarded(b, x, m, axis))
        else:
            out = softmax_out(b, x, m, sum_exp_shifted(b, x, m, axis))
        return b.row_major(out)  # (PyTorch's softmax writes a contiguous result)

    @staticmethod
    def backward(node, g):
        y, p = node.output(), node.params
        if not recorded(g, y):
            return apply(SoftmaxGrad, g, y, axis=p["axis"], product=p["product"])
        gy = g * y
        return gy - y * keep_sum(gy, p["axis"], p["product"])

    batch = classmethod(axes_batch)

    @staticmethod
    def jvp(primals, tangents, out, axis, empty_zero, product):
        ty = out * tangents[0]
        return ty - out * keep_sum(ty, axis, product)


class SoftmaxGrad(Op):
    """:class:`Softmax`'s rule ``g * y - y * sum(g * y)`` as its rule computes it, two
    kernels on CuPy (a reduction kernel for the sum, one for the rest; was three); only
    for a backward pass that is not itself recorded."""

    name = "softmax_grad"
    differentiable = False

    @staticmethod
    def forward(b, g, y, axis, product):
        if not product and fuses(b):
            return product_grad(b, g, y, sum_product(b, g, y, axis))
        gy = g * y  # (on the host once: the same bits)
        return softmax_grad(b, gy, y, keep_sum_array(b, gy, axis, product))


def softmax(x: Tensor, axis: int = -1, *, empty_zero: bool = False) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``axis``, computed stably; with ``empty_zero`` a slice
    with no finite entry (all ``-inf``: every key masked out) gives zeros instead of NaN.

    Example:
        >>> import xad
        >>> xad.softmax(xad.tensor([0.0, 0.0])).tolist()
        [0.5, 0.5]
    """
    if context.autocast is not None:
        (x,) = autocast_float32(x, op="softmax")
    if x.dtype in _HALF:  # its sum in float32, as PyTorch's
        return in_float32(softmax, x, axis, empty_zero=empty_zero)
    if 0 in x.shape:  # nothing to normalise (torch returns the empty tensor too)
        return x * 1
    axes = _axes(axis, x.ndim, "softmax")
    return unary(Softmax, x, axis=axes, empty_zero=bool(empty_zero),
                 product=by_product(x, axes))


class LogSoftmax(Op):
    """``x - logsumexp(x)`` along ``axis`` as one node, computed as PyTorch computes it,
    ``(x - max) - log(sum(exp(x - max)))``: ``log_softmax([1e30, 1e30])`` is ``-log 2``
    each (``x - logsumexp(x)`` rounds it to 0), and a row holding ``+inf`` or only ``-inf``
    is NaN. Three kernels on CuPy (was nine, then four). Its rule
    ``g - exp(y) * sum(g)`` reads only the output: two kernels, first order (was six)."""

    name = "log_softmax"
    save_output = True
    floating = True  # integers in the default floating dtype first, as exp's

    @staticmethod
    def forward(b, x, axis, product):
        m = b.xp.max(x, axis=axis, keepdims=True)
        s = (keep_sum_array(b, exp_shifted(b, x, m), axis, product) if product else
             sum_exp_shifted(b, x, m, axis))
        return b.row_major(log_softmax_out(b, x, m, s))  # (PyTorch's: contiguous)

    @staticmethod
    def backward(node, g):
        y, p = node.output(), node.params
        if not recorded(g, y):
            return apply(LogSoftmaxGrad, g, y, axis=p["axis"], product=p["product"])
        return g - exp(y) * keep_sum(g, p["axis"], p["product"])

    batch = classmethod(axes_batch)

    @staticmethod
    def jvp(primals, tangents, out, axis, product):
        t = tangents[0]
        return t - keep_sum(exp(out) * t, axis, product)


class LogSoftmaxGrad(Op):
    """:class:`LogSoftmax`'s rule ``g - exp(y) * sum(g)``: a sum and one fused kernel on
    CuPy; only for a backward pass that is not itself recorded."""

    name = "log_softmax_grad"
    differentiable = False

    @staticmethod
    def forward(b, g, y, axis, product):
        return log_softmax_grad(b, g, y, keep_sum_array(b, g, axis, product))


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    """``x - logsumexp(x)`` along ``axis``, as one operation.

    Example:
        >>> import xad
        >>> round(xad.log_softmax(xad.tensor([0.0, 0.0])).tolist()[0], 4)
        -0.6931
    """
    if context.autocast is not None:
        (x,) = autocast_float32(x, op="log_softmax")
    if x.dtype in _HALF:  # its sum in float32, as PyTorch's
        return in_float32(log_softmax, x, axis)
    if 0 in x.shape:
        return x * 1
    axes = _axes(axis, x.ndim, "log_softmax")
    return unary(LogSoftmax, x, axis=axes, product=by_product(x, axes))


def cumsum(x: Tensor, axis: int | None = None) -> Tensor:
    """Cumulative sum along ``axis`` (flattened first when ``None``).

    Example:
        >>> import xad
        >>> xad.cumsum(xad.tensor([1.0, 2.0, 3.0])).tolist()
        [1.0, 3.0, 6.0]
    """
    if context.autocast is not None:
        (x,) = autocast_float32(x, op="cumsum")
    return cumulative(Cumsum, x, axis)


def cumulative(op: type[Op], x: Tensor, axis: int | None) -> Tensor:
    """The scan ``op`` along ``axis``: of the flattened tensor when ``None``, of a 0-d
    tensor as one element (``cumsum``, ``cumprod``)."""
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    if x.ndim == 0:
        normalize_axes(axis, 0, op.name, scalar_ok=True)
        return unary(op, reshape(x, (1,)), axis=0)[0]
    return unary(op, x, axis=normalize_axis(axis, x.ndim, op.name))


class _NoGradReduce(Op):
    """argmax, argmin, any, all: the namespace function ``fn``, no gradient."""

    name = "no_grad_reduce"
    differentiable = False

    @staticmethod
    def forward(b, x, fn, axis, keepdims):
        return getattr(b.xp, fn)(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def batch(args, flags, fn, axis, keepdims):
        x = args[0]
        if axis is not None or fn in ("any", "all"):
            return apply(_NoGradReduce, x, fn=fn, axis=shift_axes(axis, x.ndim),
                         keepdims=keepdims), True
        # argmax/argmin over every logical axis: of each example's flattened values
        out = apply(_NoGradReduce, x.reshape((x.shape[0], -1)), fn=fn, axis=1, keepdims=False)
        return (out.reshape((x.shape[0],) + (1,) * (x.ndim - 1)) if keepdims else out), True


def _arg(x: Tensor, fn: str, axis: Any, keepdims: bool) -> Tensor:
    if x.ndim == 0 and axis not in (None, ()):  # axis 0 or -1 of a 0-d tensor (JAX refuses)
        normalize_axes(axis, 0, fn, scalar_ok=True)
        return reshape(unary(_NoGradReduce, reshape(x, (1,)), fn=fn, axis=0, keepdims=False),
                       ())
    return unary(_NoGradReduce, x, fn=fn, axis=axis, keepdims=keepdims)


def argmax(x: Tensor, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the maximum (no gradient)."""
    return _arg(x, "argmax", axis, keepdims)


def argmin(x: Tensor, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the minimum (no gradient)."""
    return _arg(x, "argmin", axis, keepdims)


def any(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Whether any element is true."""
    return _arg(x, "any", axis, keepdims)


def all(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Whether every element is true."""
    return _arg(x, "all", axis, keepdims)



