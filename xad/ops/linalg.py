"""Contractions: matmul, einsum (whose gradient is again an einsum), tensordot, and sums
taken as products with a column of ones where that is faster (NumPy)."""

from __future__ import annotations

import math
import string
from collections.abc import Sequence
from typing import Any

from .. import dtypes as _dt
from ..context import HOOKED, context
from ..factories import eye, ones
from ..tensor import Tensor
from ._apply import Op, apply
from .amp_cast import autocast_low
from .batching import align
from .elementwise import holomorphic, relu
from .fused import bias_gelu, bias_relu, gelu, gelu_grad, recorded, relu_grad
from .shape import PermuteDims, broadcast_to, matrix_transpose, reshape
from .tangent import total

__all__ = ["matmul", "linear", "einsum", "tensordot"]

_BY_PRODUCT = (_dt.float32, _dt.float64)  # the dtypes summed as products with ones
_BIAS_BY_PRODUCT = 1 << 17  # a bias gradient of this many elements: a product with ones


@holomorphic
class Matmul(Op):
    name = "matmul"
    library = "matmul"  # cuBLAS on CuPy, by a handle that captures where it can
    save_inputs = True

    @staticmethod
    def forward(b, x, y):
        if x.shape[-1] == 1:  # an outer product: one product an element, no BLAS call
            return b.outer(x, y)
        return b.xp.matmul(x, y)

    @staticmethod
    def backward(node, g):
        x, y = node.inputs
        gx = matmul(g, matrix_transpose(y)) if node.needs_grad(0) else None
        if not node.needs_grad(1):
            return gx, None
        if x.ndim > 2 and x.shape[-2] == 1 and _transposed(y):  # batched outer products:
            return gx, matrix_transpose(matmul(matrix_transpose(g), x))  # in w's layout
        return gx, matmul(matrix_transpose(x), g)

    @staticmethod
    def batch(args, batched):
        return _matmul_batch(*args, *batched), True

    @staticmethod
    def jvp(primals, tangents, out):
        (x, y), (tx, ty) = primals, tangents
        return total(out, None if tx is None else apply(Matmul, tx, y),
                     None if ty is None else apply(Matmul, x, ty))


def _transposed(t: Tensor) -> bool:
    """Whether ``t`` was made as ``matrix_transpose(w)`` in the graph (``x @ w.T``, as
    ``vmap(grad)`` of a layer runs it on per-example weights): its gradient is then made
    transposed, so that ``w``'s comes back contiguous, as PyTorch's ``mm_mat2_backward``
    keeps a transposed operand's layout (was a strided view: a copy at its next reshape).
    Only for a batch of them: on one small matrix the two more operations cost more."""
    n = t._node
    if n is None or n.op is not PermuteDims:
        return False
    axes = n.params["axes"]
    return axes[-2:] == (len(axes) - 1, len(axes) - 2)


def _matmul_batch(x: Tensor, y: Tensor, fx: bool, fy: bool) -> Tensor:
    """``matmul`` one level down with the batch axis first on the flagged operands: a
    logical vector made a matrix (and its unit axis dropped after), batched operands given
    unit axes up to the larger logical rank, so the batch axis broadcasts."""
    vx, vy = x.ndim - fx == 1, y.ndim - fy == 1
    if vx and fx:
        x = reshape(x, (x.shape[0], 1, x.shape[1]))
    if vy and fy:
        y = reshape(y, tuple(y.shape) + (1,))
    r = max(x.ndim - fx, y.ndim - fy)
    x, y = align((x, y), (fx, fy), r)
    out = matmul(x, y)
    if vy and fy:
        out = reshape(out, tuple(out.shape[:-1]))
    if vx and fx:
        out = reshape(out, tuple(out.shape[:-2]) + tuple(out.shape[-1:]))
    return out


def matmul(x: Tensor, y: Tensor) -> Tensor:
    """Matrix product with the standard's rules: batched, and 1-D operands as vectors.

    Example:
        >>> import xad
        >>> (xad.ones((2, 3)) @ xad.ones(3)).tolist()
        [3.0, 3.0]
    """
    if not isinstance(x, Tensor) or not isinstance(y, Tensor):
        raise TypeError(f"matmul: both operands must be tensors, got {type(x).__name__} and "
                        f"{type(y).__name__}")
    if x.ndim == 0 or y.ndim == 0:
        raise ValueError(f"matmul: operands must have at least 1 dimension, got shapes "
                         f"{x.shape} and {y.shape}")
    if x.shape[-1] != y.shape[-2 if y.ndim > 1 else 0]:
        raise ValueError(f"matmul: shapes {x.shape} and {y.shape} do not match: the last axis "
                         f"of the first ({x.shape[-1]}) must equal the "
                         f"{'second-to-last' if y.ndim > 1 else 'only'} axis of the second")
    if context.autocast is not None:
        x, y = autocast_low(x, y, op="matmul")
    if x.ndim >= 2 and y.ndim >= 2:
        return apply(Matmul, x, y)
    x2 = reshape(x, (1, x.shape[0])) if x.ndim == 1 else x
    y2 = reshape(y, (y.shape[0], 1)) if y.ndim == 1 else y
    out = apply(Matmul, x2, y2)
    shape = out.shape
    if x.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if y.ndim == 1:
        shape = shape[:-1]
    return reshape(out, shape)


@holomorphic
class Linear(Op):
    """``x @ w.T + bias`` as one node (PyTorch's addmm): the weight's gradient comes out
    contiguous, in the weight's own layout, and the bias gradient is one sum."""

    name = "linear"
    library = "matmul"
    save_inputs = True

    @staticmethod
    def forward(b, x, w, bias):
        y = _by_weight(b, x, w)
        if bias is not None:
            y += bias  # y is fresh: add in place (rebinds where arrays are immutable)
        return y

    @staticmethod
    def backward(node, g):
        return _linear_grads(node, g)

    @staticmethod
    def batch(args, batched):
        (x, w, bias), (fx, fw, fb) = args, batched
        if not fw and not fb:
            return apply(Linear, x, w, bias), True
        y = _matmul_batch(x, matrix_transpose(w), fx, fw)  # a batch axis first stays first
        if bias is None:
            return y, True
        y, bias = align((y, bias), (fx or fw, fb))
        return y + bias, True

    @staticmethod
    def jvp(primals, tangents, out):
        (x, w, _), (tx, tw, tb) = primals, tangents
        return total(out, None if tx is None else apply(Linear, tx, w, None),
                     None if tw is None else apply(Linear, x, tw, None), tb)


def _by_weight(b: Any, x: Any, w: Any) -> Any:
    """``x @ w.T`` on arrays, an N-d ``x`` as one 2-D product (PyTorch's addmm): CuPy's own
    N-d matmul broadcasts ``w`` over the batch, copying ``w.T`` and running a batched
    product of pointers, and NumPy's loops over the batch's matrices."""
    xp = b.xp
    if x.ndim <= 2:
        return xp.matmul(x, xp.matrix_transpose(w))
    y = xp.matmul(xp.reshape(x, (-1, x.shape[-1])), xp.matrix_transpose(w))
    return xp.reshape(y, (*x.shape[:-1], w.shape[0]))


def _linear_grads(node: Any, g: Tensor) -> tuple:
    """The gradients of ``x @ w.T + bias`` (a node's inputs ``x, w, bias``) for ``g``: one
    operation first order (:class:`LinearGrad`), xad operations when recorded or batched."""
    x, w, _ = node.inputs
    if g.ndim >= 2 and not context.mode & HOOKED and not recorded(g, x, w):
        needs = (node.needs_grad(0), node.needs_grad(1), node.needs_grad(2))
        out = iter(apply(LinearGrad, g, x, w, needs=needs))
        return tuple(next(out) if n else None for n in needs)
    g2 = reshape(g, (-1, g.shape[-1])) if g.ndim != 2 else g
    gx = gw = gb = None
    if node.needs_grad(0):  # N-d as one 2-D product: NumPy loops over a batch's matrices
        gx = matmul(g, w) if g.ndim < 3 else reshape(matmul(g2, w), x.shape)
    if node.needs_grad(1):
        x2 = reshape(x, (-1, x.shape[-1])) if x.ndim != 2 else x
        gw = matmul(matrix_transpose(g2), x2)
    if node.needs_grad(2):
        gb = _bias_grad(g, g2)
    return gx, gw, gb


class LinearAct(Op):
    """``act(x @ w.T + bias)`` for ``act`` ``"relu"`` or ``"gelu"`` (exact) as one node: the
    product, then the bias and the activation in one kernel on CuPy (was two), with the
    bits of ``Linear`` followed by the activation. GELU keeps ``z = x @ w.T + bias`` as a
    hidden second output for its rule; relu's rule reads its output."""

    name = "linear_act"
    library = True
    save_inputs = True
    save_output = True
    materialize_grads = False

    @staticmethod
    def forward(b, x, w, bias, act):
        y = _by_weight(b, x, w)
        return bias_relu(b, y, bias) if act == "relu" else bias_gelu(b, y, bias)

    @staticmethod
    def backward(node, g, g_z=None):
        if node.params["act"] == "relu":
            gz = None if g is None else relu_grad(node.output(0), g)
        else:
            gz = None if g is None else gelu_grad(node.output(1), g)
            gz = g_z if gz is None else gz if g_z is None else gz + g_z
        return (None, None, None) if gz is None else _linear_grads(node, gz)

    @staticmethod
    def batch(args, batched, act):
        z, flag = Linear.batch(args, batched)
        if act == "relu":
            return relu(z), flag
        return (gelu(z), z), (flag, flag)

    @staticmethod
    def jvp(primals, tangents, out, act):
        tz = Linear.jvp(primals, tangents, out if act == "relu" else out[1])
        if act == "relu":
            return None if tz is None else relu_grad(out, tz)
        return (None if tz is None else gelu_grad(out[1], tz)), tz


def linear_act(x: Tensor, weight: Tensor, bias: Tensor, act: str) -> Tensor:
    """``act(x @ weight.T + bias)`` (``act`` ``"relu"`` or exact ``"gelu"``) as one node;
    the caller has checked what :func:`linear` checks (shapes, dtypes; no autocast).

    Example:
        >>> import xad
        >>> from xad.ops.linalg import linear_act
        >>> linear_act(xad.ones((1, 2)), -xad.ones((3, 2)), xad.ones(3), "relu").tolist()
        [[0.0, 0.0, 0.0]]
    """
    out = apply(LinearAct, x, weight, bias, act=act)
    return out if act == "relu" else out[0]


class LinearGrad(Op):
    """:class:`Linear`'s first-order rule on arrays, for a gradient of at least 2 dimensions
    and a backward pass that is not itself recorded: the gradients of ``x``, ``w`` and the
    bias that ``needs`` asks for, each computed as :func:`_linear_grads`'s xad operations
    compute it (the same bits), as one operation."""

    name = "linear_grad"
    library = "matmul"
    differentiable = False

    @staticmethod
    def forward(b, g, x, w, needs):
        xp = b.xp
        g2 = g if g.ndim == 2 else xp.reshape(g, (-1, g.shape[-1]))
        out = []
        if needs[0]:
            gx = Matmul.forward(b, g2, w)
            out.append(gx if g.ndim == 2 else xp.reshape(gx, x.shape))
        if needs[1]:
            x2 = x if x.ndim == 2 else xp.reshape(x, (-1, x.shape[-1]))
            out.append(Matmul.forward(b, xp.matrix_transpose(g2), x2))
        if needs[2]:
            out.append(LinearGrad.bias(b, g, g2))
        return tuple(out)

    @staticmethod
    def bias(b, g, g2):
        """:func:`_bias_grad` on arrays (``g`` of at least 2 dimensions): its choice of a
        product with ones, the sum's float32 accumulation of half precision."""
        xp, d = b.xp, b.xad_dtype(g.dtype)
        if b.sums_by_product and math.prod(g.shape) >= _BIAS_BY_PRODUCT \
                and d in _BY_PRODUCT:
            row = b.full((1, g2.shape[0]), 1, g.dtype)
            return xp.reshape(Matmul.forward(b, row, g2), (g.shape[-1],))
        axes = 0 if g.ndim == 2 else tuple(range(g.ndim - 1))
        if d in (_dt.float16, _dt.bfloat16):
            return xp.astype(xp.sum(g, axis=axes, dtype=b.dtype(_dt.float32)), g.dtype)
        return xp.sum(g, axis=axes)


def _bias_grad(g: Tensor, g2: Tensor) -> Tensor:
    """``g`` summed over all but its last axis (``g2``: ``g`` as 2-D); on NumPy
    (``Backend.sums_by_product``), float32/float64 from 2**17 elements as ``ones @ g2``,
    one BLAS call (2x NumPy's column sums of a (1024-8192, 128-512) array; smaller ones
    gain less than the two extra operations cost)."""
    if g.ndim == 1:
        return g
    if _sum_pays(g, _BIAS_BY_PRODUCT):
        row = ones((1, g2.shape[0]), dtype=g.dtype, backend=g._backend)
        return reshape(apply(Matmul, row, g2), (g.shape[-1],))
    return g.sum(axis=0 if g.ndim == 2 else tuple(range(g.ndim - 1)))  # the method:
    # reduce imports this module


def _sum_pays(x: Tensor, least: int) -> bool:
    """Whether a sum of ``x`` is better as a product with ones: a float32/float64 tensor of
    ``least`` elements or more on a backend with ``sums_by_product`` (NumPy)."""
    return x._backend.sums_by_product and math.prod(x.shape) >= least and \
        x.dtype in _BY_PRODUCT



def by_product(x: Tensor, axes: tuple[int, ...]) -> bool:
    """Whether :func:`keep_sum` over ``axes`` takes a product with ones: the last axis
    alone of a float32/float64 tensor of 2**16 elements or more on a backend with
    ``sums_by_product`` (NumPy: one BLAS call, about 4x its own sum over rows of 64-128
    numbers; on small tensors the sum is cheaper than the extra operation)."""
    return x.ndim >= 2 and axes == (x.ndim - 1,) and _sum_pays(x, 1 << 16)


def keep_sum_array(b: Any, x: Any, axes: tuple[int, ...], product: bool) -> Any:
    """``sum(x, axes, keepdims=True)`` on the array ``x``; ``x @ ones`` when ``product``."""
    if product:
        return b.xp.matmul(x, b.full((x.shape[-1], 1), 1, x.dtype))
    return b.xp.sum(x, axis=axes, keepdims=True)


def keep_sum(x: Tensor, axes: tuple[int, ...], product: bool) -> Tensor:
    """:func:`keep_sum_array` on a tensor, differentiable (the product skips autocast)."""
    if product:
        col = ones((x.shape[-1], 1), dtype=x.dtype, backend=x._backend)
        return apply(Matmul, x, col)
    return x.sum(axis=axes, keepdims=True)  # the method: reduce imports this module


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias`` with ``weight`` of shape ``(out, in)``, as one operation.

    Example:
        >>> import xad
        >>> xad.linear(xad.ones((2, 3)), xad.ones((4, 3)), xad.zeros(4)).shape
        (2, 4)
    """
    if weight.ndim != 2 or x.ndim == 0 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"linear: the input has shape {x.shape} and the weight {weight.shape}; "
                         f"the weight must be (out_features, in_features) with in_features "
                         f"equal to the input's last axis")
    if bias is not None and bias.shape != (weight.shape[0],):
        raise ValueError(f"linear: the bias has shape {bias.shape}, expected "
                         f"({weight.shape[0]},) for a weight of shape {weight.shape}")
    if context.autocast is not None:
        x, weight, bias = autocast_low(x, weight, bias, op="linear")
    return apply(Linear, x, weight, bias)


# ----- einsum ---------------------------------------------------------------------------
@holomorphic
class Einsum(Op):
    name = "einsum"
    library = True
    save_inputs = True

    @staticmethod
    def forward(b, *xs, spec):
        out = b.einsum(spec, *xs)
        lhs, kept = spec.split("->")
        if len(xs) == 1 and set(lhs) <= set(kept):  # NumPy's permutation or diagonal is a view
            out = b.xp.asarray(out, copy=True)
        return out

    @staticmethod
    def backward(node, g):
        ins, out = _split_spec(node.params["spec"])
        xs = node.inputs
        return tuple(_einsum_grad(g, out, ins, xs, i) if node.needs_grad(i) else None
                     for i in range(len(xs)))

    @staticmethod
    def batch(args, batched, spec):
        ins, out = _split_spec(spec)
        z = next(c for c in string.ascii_letters if c not in spec)  # the batch axis' letter
        new = ",".join(z + s if f else s for s, f in zip(ins, batched)) + "->" + z + out
        return apply(Einsum, *args, spec=new), True

    @staticmethod
    def jvp(primals, tangents, out, spec):
        return total(out, *(None if t is None else
                            apply(Einsum, *primals[:i], t, *primals[i + 1:], spec=spec)
                            for i, t in enumerate(tangents)))


def _split_spec(spec: str) -> tuple[list[str], str]:
    lhs, out = spec.split("->")
    return lhs.split(","), out


def _einsum_grad(g: Tensor, out: str, ins: list[str], xs: tuple, i: int) -> Tensor:
    """The gradient for operand ``i``: contract ``g`` with the other operands.

    Repeated letters in operand ``i`` (a diagonal) get fresh letters tied by identity
    matrices; letters summed in operand ``i`` alone get a vector of ones.
    """
    target = ins[i]
    free = iter(c for c in string.ascii_letters if c not in "".join(ins) + out)
    terms, ops = [out], [g]
    for j, (t, x) in enumerate(zip(ins, xs)):
        if j != i:
            terms.append(t)
            ops.append(x)
    size = {c: n for c, n in zip(target, xs[i].shape)}
    new_target, seen = [], set()
    for c in target:
        if c in seen:
            f = next(free)
            terms.append(c + f)
            ops.append(eye(size[c], dtype=g.dtype, backend=g._backend))
            new_target.append(f)
        else:
            seen.add(c)
            new_target.append(c)
    present = set("".join(terms))
    for c in seen - present:
        terms.append(c)
        ops.append(ones(size[c], dtype=g.dtype, backend=g._backend))
    return einsum(",".join(terms) + "->" + "".join(new_target), *ops)


def _normalize(subscripts: str, shapes: list[tuple[int, ...]]) -> tuple[str, list]:
    """Expand ``...`` into letters and make the output explicit; returns the spec and the
    broadcast shape each operand must take (or None)."""
    s = subscripts.replace(" ", "")
    lhs, arrow, out = s.partition("->")
    ins = lhs.split(",")
    if len(ins) != len(shapes):
        raise ValueError(f"einsum: '{subscripts}' names {len(ins)} operands but "
                         f"{len(shapes)} were given")
    used = set(s) - set(".,->")
    spare = [c for c in string.ascii_letters if c not in used]
    ell_nd = max((len(sh) - (len(t) - 3) for t, sh in zip(ins, shapes) if "..." in t),
                 default=0)
    ell = "".join(spare[:ell_nd])
    targets: list[Any] = []
    new_ins = []
    for t, sh in zip(ins, shapes):
        if "..." in t:
            k = len(sh) - (len(t) - 3)
            t = t.replace("...", ell[ell_nd - k:])
        if len(t) != len(sh):
            raise ValueError(f"einsum: operand subscripts '{t}' do not match its shape {sh}")
        new_ins.append(t)
    sizes: dict[str, int] = {}
    for t, sh in zip(new_ins, shapes):
        for c, n in zip(t, sh):
            if sizes.get(c, 1) == 1:
                sizes[c] = n
            elif n not in (1, sizes[c]):
                raise ValueError(f"einsum: index '{c}' has sizes {sizes[c]} and {n} in "
                                 f"'{subscripts}' with shapes {shapes}")
    for t, sh in zip(new_ins, shapes):
        full = tuple(sizes[c] for c in t)
        targets.append(full if full != tuple(sh) else None)
    if arrow:
        out = out.replace("...", ell)
    else:
        counts = "".join(new_ins)
        out = ell + "".join(sorted(c for c in set(counts) if counts.count(c) == 1
                                   and c not in ell))
    return ",".join(new_ins) + "->" + out, targets


def einsum(subscripts: str, *operands: Tensor) -> Tensor:
    """Einstein summation over tensors, with ``...``, diagonals and implicit output.

    Example:
        >>> import xad
        >>> xad.einsum("ij,jk->ik", xad.ones((2, 3)), xad.ones((3, 4))).shape
        (2, 4)
    """
    spec, targets = _normalize(subscripts, [t.shape for t in operands])
    if context.autocast is not None:
        operands = autocast_low(*operands, op="einsum")
    ops = [t if s is None else broadcast_to(t, s) for t, s in zip(operands, targets)]
    return apply(Einsum, *ops, spec=spec)


def tensordot(x: Tensor, y: Tensor, axes: int | Sequence[Sequence[int]] = 2) -> Tensor:
    """Sum products over the given axes (the standard's ``tensordot``), via einsum.

    Example:
        >>> import xad
        >>> xad.tensordot(xad.ones((2, 3)), xad.ones((3, 4)), axes=1).shape
        (2, 4)
    """
    if isinstance(axes, int):
        ax = list(range(x.ndim - axes, x.ndim))
        ay = list(range(axes))
    else:
        ax, ay = [a % x.ndim for a in axes[0]], [a % y.ndim for a in axes[1]]
    letters = iter(string.ascii_letters)
    sx = [next(letters) for _ in range(x.ndim)]
    sy = [next(letters) for _ in range(y.ndim)]
    for a, b in zip(ax, ay):
        sy[b] = sx[a]
    out = [c for i, c in enumerate(sx) if i not in ax] + \
        [c for i, c in enumerate(sy) if i not in ay]
    return einsum(f"{''.join(sx)},{''.join(sy)}->{''.join(out)}", x, y)


