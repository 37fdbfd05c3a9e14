"""PyTorch functions that training code calls and the standard lacks (``addcmul``, ``lerp``,
``xlogy``, ``cdist``, ``masked_select``, ``rot90``, ``block_diag``, ...), composed from
xad's primitives: their gradients come from the primitives' rules, with PyTorch's
numbers (``lerp``'s two formulas, ``cdist``'s zero gradient at a zero distance)."""

from __future__ import annotations

import math
import operator
from typing import Any

from .. import dtypes as _dt
from ..factories import tensor, zeros
from ..tensor import Tensor
from ._apply import Op, binary, unary
from .amp_cast import autocast_float32, autocast_low, autocast_off
from .batching import elementwise_batch
from .creation import asarray
from .diagonal import Diagonal
from .dtype_functions import finfo, result_type
from .elementwise import astype, isfinite, isnan, log, sqrt, where
from .elementwise_math import floor, floor_divide, isinf, logaddexp, trunc
from .linalg import matmul
from .manipulation import broadcast_arrays, meshgrid, take_along_axis
from .reduce import cumsum
from .select import index_add, same_dtype
from .shape import concat, flip, permute_dims, reshape, stack, view_of
from .tangent import total
from .torch_conventions import vector_norm

__all__ = ["addcmul", "addcdiv", "lerp", "logaddexp2", "xlogy", "cross", "cdist", "dist",
           "pdist", "renorm",
           "bucketize", "histc", "nan_to_num", "masked_select", "masked_scatter",
           "take_along_dim", "rot90", "tril_indices", "triu_indices", "block_diag",
           "cartesian_prod", "rsqrt", "exp2", "logit", "deg2rad", "rad2deg", "outer", "dot",
           "trace", "diagonal", "chunk", "unbind", "isclose", "allclose", "div",
           "bmm", "mv", "addmm", "frac", "float_power", "fmax", "fmin", "heaviside",
           "std_mean", "var_mean", "broadcast_tensors", "hstack", "vstack", "unflatten",
           "repeat_interleave", "bernoulli", "fliplr", "flipud", "ravel", "atleast_1d",
           "atleast_2d", "atleast_3d", "column_stack", "dstack", "diag"]


def addcmul(input: Tensor, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:  # noqa: A002
    """PyTorch's ``addcmul``: ``input + value * tensor1 * tensor2`` (broadcast; of integer
    tensors, ``value`` truncated to an integer, as PyTorch's).

    Example:
        >>> import xad
        >>> xad.addcmul(xad.ones(2), xad.tensor([1.0, 2.0]), xad.tensor([3.0, 4.0]),
        ...             value=0.5).tolist()
        [2.5, 5.0]
    """
    tensor1, tensor2 = _in_result_dtype(input, tensor1, tensor2)
    prod = tensor1 * tensor2
    if isinstance(value, float) and not _inexact_dtype(result_type(input, prod)):
        value = int(value)
    return input + (prod if value == 1 else prod * value)


def _in_result_dtype(input: Any, tensor1: Any, tensor2: Any) -> tuple[Any, Any]:  # noqa: A002
    """``tensor1`` and ``tensor2`` in the dtype of the whole expression (PyTorch's: a
    float32 product added to a float64 ``input`` is taken in float64, an int8 one added
    to int64 does not wrap at 127)."""
    d = result_type(*(t for t in (input, tensor1, tensor2) if isinstance(t, Tensor)))
    a, b = (astype(t, d) if isinstance(t, Tensor) and t.dtype is not d else t
            for t in (tensor1, tensor2))
    return a, b


def alpha_scaled(input: Any, other: Any, alpha: Any, op: str) -> Any:  # noqa: A002
    """``alpha * other`` for PyTorch's ``input + alpha * other`` (``add``, ``sub``,
    ``add_``, ``sub_``): in the dtype of ``input + other``, not ``other``'s own (a uint8
    ``other`` times -1, or times 2 past 255, does not wrap); a float ``alpha`` with an
    integral result refused, as PyTorch refuses it."""
    if not isinstance(input, Tensor):
        return other if alpha == 1 else other * alpha
    d = result_type(input, other)
    if isinstance(alpha, float) and not _inexact_dtype(d):
        raise TypeError(f"{op}: alpha={alpha!r} is a float and the result is {d} (PyTorch "
                        f"refuses a floating alpha for integral tensors); pass an integer "
                        f"alpha or cast to a floating dtype first")
    if alpha == 1:
        return other
    if d is _dt.bool_:  # PyTorch's: alpha taken as a bool (x or alpha * y)
        return other if alpha else other & False
    if isinstance(other, Tensor) and other.dtype is not d:
        other = astype(other, d)
    return other * alpha


def addcdiv(input: Tensor, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:  # noqa: A002
    """PyTorch's ``addcdiv``: ``input + value * tensor1 / tensor2`` (broadcast; integer
    ``tensor1`` and ``tensor2`` refused, as PyTorch refuses them).

    Example:
        >>> import xad
        >>> xad.addcdiv(xad.ones(2), xad.tensor([1.0, 2.0]), xad.tensor([4.0, 4.0]),
        ...             value=2).tolist()
        [1.5, 2.0]
    """
    if all(not (isinstance(t, Tensor) and _inexact(t)) for t in (tensor1, tensor2)):
        raise RuntimeError("addcdiv: integer division of tensors is not supported (as "
                           "PyTorch); make tensor1 or tensor2 floating point")
    tensor1, tensor2 = _in_result_dtype(input, tensor1, tensor2)
    quot = tensor1 / tensor2
    return input + (quot if value == 1 else quot * value)


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:  # noqa: A002
    """PyTorch's ``lerp``: ``input + weight * (end - input)`` where ``|weight| < 0.5``, else
    ``end - (end - input) * (1 - weight)`` (PyTorch's two formulas: ``weight=1`` gives
    ``end`` exactly); ``weight`` a number or a tensor.

    Example:
        >>> import xad
        >>> xad.lerp(xad.tensor([0.0, 1e8]), xad.tensor([1.0, 1.0]), 1.0).tolist()
        [1.0, 1.0]
    """
    d = end - input
    if not isinstance(weight, Tensor):
        return input + weight * d if abs(weight) < 0.5 else end - d * (1 - weight)
    return where(abs(weight) < 0.5, input + weight * d, end - d * (1 - weight))


def logaddexp2(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``log2(2**input + 2**other)``, computed stably (PyTorch's ``logaddexp2``).

    Example:
        >>> import xad
        >>> xad.logaddexp2(xad.tensor([1.0]), xad.tensor([1.0])).tolist()
        [2.0]
    """
    ln2 = math.log(2.0)
    return logaddexp(input * ln2, other * ln2) / ln2


def floating_pair(a: Any, b: Any) -> tuple[Tensor, Tensor]:
    """``a`` and ``b`` as tensors of their floating result dtype (integers: float32)."""
    a, b = (v if isinstance(v, Tensor) else asarray(v) for v in (a, b))
    dt = result_type(a, b)
    dt = dt if dt.is_floating else _dt.float32
    return astype(a, dt), astype(b, dt)


class XLogY(Op):
    """``x * log(y)``, 0 where ``x == 0`` (NaN where ``y`` is NaN), as one node with
    PyTorch's gradients: ``xlogy(g, y)`` to ``x`` (0 where ``g == 0``, as where a ``where``
    masked an infinite branch; and 0 where ``x == 0`` and ``y <= 0``), ``g * x / y`` to ``y``
    (0 at ``x == y == 0``, where PyTorch's is NaN). Composed of ``x * log(y)``, the
    gradient ``g * log(0)`` of a masked branch was NaN."""

    name = "xlogy"
    floating = True
    save_inputs = True

    @staticmethod
    def forward(b, x, y):
        xp = b.xp
        zero = x == 0
        out = x * xp.log(xp.where(zero, xp.ones_like(y), y))
        out = xp.where(zero, xp.zeros_like(out), out)  # (not -0.0)
        return xp.where(xp.isnan(y), y, out)

    @staticmethod
    def backward(node, g):
        x, y = node.inputs
        gx = where((x == 0) & (y <= 0), 0.0, binary(XLogY, g, y)) if node.needs_grad(0) \
            else None
        gy = g * x / where((x == 0) & (y == 0), 1.0, y) if node.needs_grad(1) else None
        return gx, gy

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (x, y), (tx, ty) = primals, tangents
        return total(out, None if tx is None else
                     where((x == 0) & (y <= 0), 0.0, binary(XLogY, tx, y)),
                     None if ty is None else ty * x / where((x == 0) & (y == 0), 1.0, y))


def xlogy(input: Any, other: Any) -> Tensor:  # noqa: A002
    """``input * log(other)``, 0 where ``input == 0`` (NaN where ``other`` is NaN), with
    PyTorch's gradients (:class:`XLogY`).

    Example:
        >>> import xad
        >>> xad.xlogy(xad.tensor([0.0, 2.0]), xad.tensor([0.0, 1.0])).tolist()
        [0.0, 0.0]
    """
    x, y = floating_pair(input, other)
    return binary(XLogY, x, y)


def diff_bool(x: Tensor, n: int, dim: int, prepend: Any, append: Any) -> Tensor:
    """PyTorch's ``diff`` of bools: ``!=`` of neighbours, ``n`` times (``Tensor.diff``)."""
    x = concat([t for t in (prepend, x, append) if t is not None], axis=dim)
    for _ in range(n):
        k = x.shape[dim] - 1
        x = x.narrow(dim, 1, k) != x.narrow(dim, 0, k)
    return x


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``cross``: the cross product along ``dim`` (of length 3; ``None``: the
    first dimension of length 3, as ``torch.cross``), inputs broadcast.

    Example:
        >>> import xad
        >>> xad.cross(xad.tensor([1.0, 0, 0]), xad.tensor([0.0, 1, 0])).tolist()
        [0.0, 0.0, 1.0]
    """
    a, b = broadcast_arrays(input, other)
    if dim is None:
        dim = next((i for i, n in enumerate(a.shape) if n == 3), -1)
    if not -a.ndim <= dim < a.ndim or a.shape[dim] != 3:
        raise ValueError(f"cross: dimension {dim} of the inputs (broadcast shape {a.shape}) "
                         f"must have length 3")
    c = [a.narrow(dim, i, 1) for i in range(3)]
    e = [b.narrow(dim, i, 1) for i in range(3)]
    parts = [c[1] * e[2] - c[2] * e[1], c[2] * e[0] - c[0] * e[2], c[0] * e[1] - c[1] * e[0]]
    return concat(parts, axis=dim)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: Any = None) -> Tensor:
    """PyTorch's ``cdist``: the ``p``-norm distance between each row of ``x1``
    ``(..., P, M)`` and each row of ``x2`` ``(..., R, M)``: ``(..., P, R)``; the gradient at
    a zero distance is 0, as PyTorch's (``compute_mode`` is accepted and ignored: xad
    computes the differences directly, PyTorch's exact mode).

    Example:
        >>> import xad
        >>> xad.cdist(xad.tensor([[0.0, 0.0]]), xad.tensor([[3.0, 4.0], [0.0, 1.0]])).tolist()
        [[5.0, 1.0]]
    """
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise ValueError(f"cdist: x1 {x1.shape} and x2 {x2.shape} must be (..., P, M) and "
                         f"(..., R, M) with the same M")
    x1, x2 = autocast_float32(x1, x2, op="cdist")  # (autocast's float32 list)
    diff = x1[..., :, None, :] - x2[..., None, :, :]
    return vector_norm(diff, p, -1)


def dist(input: Tensor, other: Any, p: float = 2.0) -> Tensor:  # noqa: A002
    """PyTorch's ``dist``: the ``p``-norm of ``input - other`` (broadcast) over every
    element; gradient 0 where they are equal, as PyTorch's.

    Example:
        >>> import xad
        >>> xad.dist(xad.tensor([3.0, 0.0]), xad.tensor([0.0, 4.0])).item()
        5.0
    """
    input, other = autocast_float32(input, other, op="dist")  # (autocast's float32 list)
    return vector_norm(input - other, p)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:  # noqa: A002
    """PyTorch's ``pdist``: the ``p``-norm distance between rows ``i < j`` of an ``(N, M)``
    input, ``N (N - 1) / 2`` values in the order of ``triu_indices(N, N, 1)``; gradient 0 at
    a zero distance.

    Example:
        >>> import xad
        >>> xad.pdist(xad.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])).tolist()
        [5.0, 1.0, 4.242640495300293]
    """
    if input.ndim != 2:
        raise ValueError(f"pdist: input must be a matrix (N, M), got shape {input.shape}")
    (input,) = autocast_float32(input, op="pdist")  # (autocast's float32 list)
    n = input.shape[0]
    if n < 2:
        return zeros((0,), dtype=input.dtype, backend=input._backend)
    i, j = (tensor(k, dtype=_dt.int64, backend=input._backend)
            for k in zip(*[(a, b) for a in range(n) for b in range(a + 1, n)]))
    return vector_norm(input[i] - input[j], p, -1)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:  # noqa: A002
    """PyTorch's ``renorm``: each slice ``input.select(dim, k)`` whose ``p``-norm exceeds
    ``maxnorm`` scaled by ``maxnorm / (norm + 1e-7)``, the others kept.

    Example:
        >>> import xad
        >>> xad.renorm(xad.tensor([[3.0, 4.0], [0.3, 0.4]]), 2, 0, 1.0).tolist()
        [[0.6000000238418579, 0.800000011920929], [0.30000001192092896, 0.4000000059604645]]
    """
    if input.ndim < 2:
        raise ValueError(f"renorm: input needs at least 2 dimensions, got shape {input.shape}")
    (input,) = autocast_float32(input, op="renorm")  # (autocast's float32 list)
    d = dim % input.ndim
    norm = vector_norm(input, p, tuple(a for a in range(input.ndim) if a != d), True)
    out = input * where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return out.contiguous()  # (PyTorch's result is contiguous)


def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False,  # noqa: A002
              right: bool = False) -> Tensor:
    """PyTorch's ``bucketize``: for each element, the index of its bucket in the sorted 1-D
    ``boundaries`` (``right=False``: ``boundaries[i-1] < x <= boundaries[i]``).

    Example:
        >>> import xad
        >>> xad.bucketize(xad.tensor([1, 5, 9]), xad.tensor([1, 3, 5, 7])).tolist()
        [0, 2, 4]
    """
    from .sorting import searchsorted
    if boundaries.ndim != 1:
        raise ValueError(f"bucketize: boundaries must be 1-D, got shape {boundaries.shape}")
    x = input if isinstance(input, Tensor) else asarray(input, dtype=boundaries.dtype)
    out = searchsorted(boundaries, reshape(x, (-1,)), side="right" if right else "left")
    return astype(reshape(out, x.shape), _dt.int32 if out_int32 else _dt.int64)


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """PyTorch's ``histc``: counts of ``input`` in ``bins`` equal bins over ``[min, max]``
    (both 0: the data's range), in ``input``'s dtype; elements outside are ignored. Not
    differentiable (as PyTorch's). A range of the data reads it to the host.

    Example:
        >>> import xad
        >>> xad.histc(xad.tensor([0.0, 1.0, 2.0, 2.5]), bins=2, min=0, max=2).tolist()
        [1.0, 2.0]
    """
    if not input.dtype.is_floating:
        raise TypeError(f"histc: input must be floating point, got {input.dtype}")
    x = reshape(input.detach(), (-1,))
    lo, hi = float(min), float(max)
    if lo == hi and x.shape[0]:
        lo, hi = float(x.min().item()), float(x.max().item())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not lo < hi or not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"histc: max ({hi}) must be larger than min ({lo}) and both finite")
    inside = (x >= lo) & (x <= hi)
    pos = astype(floor((x - lo) * bins / (hi - lo)), _dt.int64)  # PyTorch's order of terms
    pos = where(inside, where(pos >= bins, bins - 1, pos), 0)
    return index_add(zeros(bins, dtype=input.dtype), 0, pos, astype(inside, input.dtype))


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,  # noqa: A002
               neginf: float | None = None) -> Tensor:
    """NaN to ``nan``, +inf to ``posinf`` and -inf to ``neginf`` (default: the dtype's
    largest and smallest finite values); gradient 1 where finite, else 0 (PyTorch's).

    Example:
        >>> import xad
        >>> xad.nan_to_num(xad.tensor([float("nan"), float("inf"), 1.0]), posinf=9.0).tolist()
        [0.0, 9.0, 1.0]
    """
    if not input.dtype.is_floating:
        return input.clone()
    info = finfo(input.dtype)
    hi = info.max if posinf is None else posinf
    lo = info.min if neginf is None else neginf
    out = where(isnan(input), nan, input)  # (each beside the input: its dtype, not the default)
    out = where(isinf(input) & (input > 0), hi, out)
    return where(isinf(input) & (input < 0), lo, out)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:  # noqa: A002
    """The elements of ``input`` where ``mask`` is true (both broadcast), as a 1-D tensor
    (its length reads the mask to the host).

    Example:
        >>> import xad
        >>> x = xad.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> xad.masked_select(x, xad.tensor([True, False])).tolist()
        [1.0, 3.0]
    """
    x, m = broadcast_arrays(input, mask)
    return x[m]


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """PyTorch's ``masked_scatter``: ``input`` with the places where ``mask`` (broadcast to
    ``input``) is true filled, in order, from the first elements of ``source``.

    Example:
        >>> import xad
        >>> x, m = xad.zeros(2, 2), xad.tensor([[True, False], [True, True]])
        >>> xad.masked_scatter(x, m, xad.tensor([1.0, 2.0, 3.0, 4.0])).tolist()
        [[1.0, 0.0], [2.0, 3.0]]
    """
    m = mask.broadcast_to(input.shape) if mask.shape != input.shape else mask
    same_dtype(input, source, "masked_scatter")
    if mask.dtype is not _dt.bool_:
        raise TypeError(f"masked_scatter: mask must be bool, got {mask.dtype}")
    flat = reshape(m, (-1,))
    pos = cumsum(astype(flat, _dt.int64), 0) - 1  # the source element each place takes
    src = reshape(source, (-1,))[where(flat, pos, 0)]
    return where(m, reshape(astype(src, input.dtype), input.shape), input)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``take_along_dim``: :func:`take_along_axis` (``indices`` broadcast with
    ``input`` on the other dimensions); ``dim=None`` indexes the flattened ``input``.

    Example:
        >>> import xad
        >>> x = xad.tensor([[10.0, 30.0], [60.0, 20.0]])
        >>> xad.take_along_dim(x, x.argmax(dim=1, keepdim=True), dim=1).tolist()
        [[30.0], [60.0]]
    """
    if dim is None:
        return take_along_axis(reshape(input, (-1,)), reshape(indices, (-1,)), axis=0)
    return take_along_axis(input, indices, axis=dim)


def rot90(input: Tensor, k: int = 1, dims: Any = (0, 1)) -> Tensor:  # noqa: A002
    """Rotate by 90 degrees ``k`` times in the plane of ``dims``, from the first towards
    the second (PyTorch's ``rot90``).

    Example:
        >>> import xad
        >>> xad.rot90(xad.tensor([[1, 2], [3, 4]])).tolist()
        [[2, 4], [1, 3]]
    """
    d0, d1 = (int(d) for d in dims)
    if len(dims) != 2 or input.ndim < 2 or (d0 - d1) % input.ndim == 0:
        raise ValueError(f"rot90: dims must be two different axes of the {input.ndim}-d "
                         f"input, got {tuple(dims)}")
    k %= 4
    if k == 0:
        return input.clone()
    if k == 2:
        return flip(input, axis=(d0, d1))
    return flip(input, axis=d1 if k == 1 else d0).transpose(d0, d1)


def _triangle(row: int, col: int, offset: int, lower: bool, dtype: Any) -> Tensor:
    pairs = [(i, j) for i in range(row) for j in range(col)
             if (j - i <= offset if lower else j - i >= offset)]
    ij = [[p[0] for p in pairs], [p[1] for p in pairs]]
    return asarray(ij, dtype=dtype or _dt.int64)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None) -> Tensor:
    """The ``(2, N)`` row and column indices of the lower triangle of a ``row x col``
    matrix (diagonal ``offset``), row by row (PyTorch's ``tril_indices``).

    Example:
        >>> import xad
        >>> xad.tril_indices(2, 2).tolist()
        [[0, 1, 1], [0, 0, 1]]
    """
    return _triangle(row, col, offset, True, dtype)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None) -> Tensor:
    """The ``(2, N)`` indices of the upper triangle (PyTorch's ``triu_indices``).

    Example:
        >>> import xad
        >>> xad.triu_indices(2, 2).tolist()
        [[0, 0, 1], [0, 1, 1]]
    """
    return _triangle(row, col, offset, False, dtype)


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-, 1- or 2-d) on the diagonal of one matrix, zeros elsewhere, in their
    promoted dtype (PyTorch's ``block_diag``).

    Example:
        >>> import xad
        >>> xad.block_diag(xad.tensor([[1, 2]]), xad.tensor(3)).tolist()
        [[1, 2, 0], [0, 0, 3]]
    """
    if not tensors:
        return zeros(1, 0)
    if any(t.ndim > 2 for t in tensors):
        raise ValueError(f"block_diag: tensors must have at most 2 dimensions, got shapes "
                         f"{[t.shape for t in tensors]}")
    dt = result_type(*tensors)
    mats = [reshape(astype(t, dt), (1, -1) if t.ndim < 2 else t.shape) for t in tensors]
    width = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        r, c = m.shape
        parts = [zeros(r, left, dtype=dt), m, zeros(r, width - left - c, dtype=dt)]
        rows.append(concat(parts, axis=1))
        left += c
    return concat(rows, axis=0)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of the 1-D tensors' elements, one per row (PyTorch's
    ``cartesian_prod``; one tensor comes back as it is).

    Example:
        >>> import xad
        >>> xad.cartesian_prod(xad.tensor([1, 2]), xad.tensor([3, 4])).tolist()
        [[1, 3], [1, 4], [2, 3], [2, 4]]
    """
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, (-1,)) for g in grids], axis=1)


def _inexact(x: Tensor) -> bool:
    """Whether ``x`` is floating or complex (what PyTorch's float functions keep)."""
    return _inexact_dtype(x.dtype)


def _inexact_dtype(d: Any) -> bool:
    """Whether ``d`` is floating or complex (``is_floating`` is False for complex: a float
    ``value``/``alpha`` was truncated to an integer, or refused, for complex tensors)."""
    return d.is_floating or d.is_complex


def rsqrt(input: Tensor) -> Tensor:  # noqa: A002
    """``1 / sqrt(input)`` (PyTorch's ``rsqrt``).

    Example:
        >>> import xad
        >>> xad.rsqrt(xad.tensor([4.0])).tolist()
        [0.5]
    """
    (input,) = autocast_float32(input, op="rsqrt")  # (autocast's float32 list)
    return 1.0 / sqrt(input if _inexact(input) else astype(input, _dt.float32))


def exp2(input: Tensor) -> Tensor:  # noqa: A002
    """``2 ** input`` (PyTorch's ``exp2``; integers give float32).

    Example:
        >>> import xad
        >>> xad.exp2(xad.tensor([3.0])).tolist()
        [8.0]
    """
    return 2.0 ** (input if _inexact(input) else astype(input, _dt.float32))


def logit(input: Tensor, eps: float | None = None) -> Tensor:  # noqa: A002
    """``log(p / (1 - p))``, ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given
    (gradient 0 outside, as PyTorch's).

    Example:
        >>> import xad
        >>> xad.logit(xad.tensor([0.5])).tolist()
        [0.0]
    """
    p = input
    if eps is not None:  # PyTorch's order: below eps first (so eps > 0.5 gives eps)
        p = where(input < eps, eps, where(input > 1.0 - eps, 1.0 - eps, input))
    return log(p / (1.0 - p))


def deg2rad(input: Tensor) -> Tensor:  # noqa: A002
    """Degrees to radians.

    Example:
        >>> import xad
        >>> round(xad.deg2rad(xad.tensor([180.0])).item(), 5)
        3.14159
    """
    return input * (math.pi / 180.0)


def rad2deg(input: Tensor) -> Tensor:  # noqa: A002
    """Radians to degrees.

    Example:
        >>> import xad
        >>> xad.rad2deg(xad.tensor([0.0])).tolist()
        [0.0]
    """
    return input * (180.0 / math.pi)


def outer(input: Tensor, vec2: Tensor) -> Tensor:  # noqa: A002
    """The outer product of two 1-D tensors (PyTorch's ``outer``/``ger``).

    Example:
        >>> import xad
        >>> xad.outer(xad.tensor([1, 2]), xad.tensor([3, 4])).tolist()
        [[3, 4], [6, 8]]
    """
    if input.ndim != 1 or vec2.ndim != 1:
        raise ValueError(f"outer: both inputs must be 1-D, got {input.shape} and {vec2.shape}")
    return input[:, None] * vec2[None, :]


def dot(input: Tensor, tensor: Tensor) -> Tensor:  # noqa: A002
    """The dot product of two 1-D tensors of the same length (PyTorch's ``dot``).

    Example:
        >>> import xad
        >>> xad.dot(xad.tensor([1.0, 2.0]), xad.tensor([3.0, 4.0])).item()
        11.0
    """
    if input.ndim != 1 or tensor.ndim != 1 or input.shape != tensor.shape:
        raise ValueError(f"dot: two 1-D tensors of one length, got {input.shape} and "
                         f"{tensor.shape}")
    return autocast_off(matmul, input, tensor)  # (on neither of autocast's lists)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa: A002
    """PyTorch's ``diagonal``: the diagonal (``offset`` above the main one) of the planes
    of ``dim1`` and ``dim2``, as the last dimension.

    Example:
        >>> import xad
        >>> xad.diagonal(xad.tensor([[1, 2], [3, 4]]), 1).tolist()
        [2]
    """
    n = input.ndim
    d1, d2 = dim1 % n, dim2 % n
    if d1 == d2:
        raise ValueError(f"diagonal: dim1 and dim2 must differ, got {dim1} and {dim2}")
    rest = [d for d in range(n) if d not in (d1, d2)]
    x = input if (d1, d2) == (n - 2, n - 1) else permute_dims(input, (*rest, d1, d2))
    return unary(Diagonal, x, offset=operator.index(offset))  # a view, as PyTorch's


def trace(input: Tensor) -> Tensor:  # noqa: A002
    """The sum of a matrix's main diagonal (PyTorch's ``trace``; integers sum in int64).

    Example:
        >>> import xad
        >>> xad.trace(xad.tensor([[1, 2], [3, 4]])).item()
        5
    """
    if input.ndim != 2:
        raise ValueError(f"trace: expected a matrix, got shape {input.shape}")
    return diagonal(input).sum()


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    """PyTorch's ``chunk``: pieces of ``ceil(n / chunks)`` along ``dim`` (the last one
    shorter; fewer than ``chunks`` pieces where they run out).

    Example:
        >>> import xad
        >>> [c.tolist() for c in xad.chunk(xad.arange(5), 2)]
        [[0, 1, 2], [3, 4]]
    """
    if chunks < 1:
        raise ValueError(f"chunk: chunks must be at least 1, got {chunks}")
    n = input.shape[dim]
    if n == 0:  # PyTorch's: `chunks` empty pieces
        return tuple(input.narrow(dim, 0, 0) for _ in range(chunks))
    size = -(-n // chunks)
    return tuple(input.narrow(dim, i, min(size, n - i)) for i in range(0, n, size))


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    """The slices of ``input`` along ``dim``, that dimension removed (PyTorch's ``unbind``).

    Example:
        >>> import xad
        >>> [r.tolist() for r in xad.unbind(xad.tensor([[1, 2], [3, 4]]), 1)]
        [[1, 3], [2, 4]]
    """
    d = dim % input.ndim
    return tuple(input[(slice(None),) * d + (i,)] for i in range(input.shape[d]))


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,  # noqa: A002
            equal_nan: bool = False) -> Tensor:
    """``|input - other| <= atol + rtol * |other|`` elementwise (infinities equal to
    themselves; NaN equal to NaN with ``equal_nan``), as PyTorch's ``isclose``.

    Example:
        >>> import xad
        >>> xad.isclose(xad.tensor([1.0, 2.0]), xad.tensor([1.0 + 1e-9, 2.1])).tolist()
        [True, False]
    """
    a, b = input.detach(), other.detach() if isinstance(other, Tensor) else other
    if isinstance(b, Tensor) and a.dtype is not b.dtype and not (a.dtype.is_floating and
                                                                b.dtype.is_floating):
        dt = result_type(a, b)
        a, b = astype(a, dt), astype(b, dt)
    if not a.dtype.is_floating:
        return a == b
    close = (a == b) | (isfinite(a) & isfinite(b) & (abs(a - b) <= atol + rtol * abs(b)))
    return close | (isnan(a) & isnan(b)) if equal_nan else close


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,  # noqa: A002
             equal_nan: bool = False) -> bool:
    """Whether :func:`isclose` holds everywhere (a Python bool: reads one to the host).

    Example:
        >>> import xad
        >>> xad.allclose(xad.tensor([1.0]), xad.tensor([1.0 + 1e-9]))
        True
    """
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:  # noqa: A002
    """PyTorch's ``div``: true division, or rounded ``"trunc"`` (towards 0) or ``"floor"``
    (Python's ``//``), exact for integers.

    Example:
        >>> import xad
        >>> xad.div(xad.tensor([-7, 7]), 2, rounding_mode="trunc").tolist()
        [-3, 3]
    """
    if rounding_mode is None:
        return input / other
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode != "trunc":
        raise ValueError(f"div: rounding_mode must be None, 'trunc' or 'floor', got "
                         f"{rounding_mode!r}")
    x = input if isinstance(input, Tensor) else asarray(input)
    if result_type(x, other).is_floating:
        return trunc(x / other)
    q = floor_divide(x, other)
    inexact = (q * other != x) & ((x < 0) != (asarray(other) < 0 if not isinstance(
        other, Tensor) else other < 0))
    return where(inexact, q + 1, q)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002
    """``torch.bmm``: batched matrix products of two 3-d tensors (no broadcasting).

    Example:
        >>> import xad
        >>> xad.bmm(xad.ones(2, 3, 4), xad.ones(2, 4, 5)).shape
        (2, 3, 5)
    """
    if input.ndim != 3 or mat2.ndim != 3 or input.shape[0] != mat2.shape[0]:
        raise ValueError(f"bmm: two 3-d tensors with one batch size, got {input.shape} and "
                         f"{mat2.shape}")
    return matmul(input, mat2)


def mv(input: Tensor, vec: Tensor) -> Tensor:  # noqa: A002
    """``torch.mv``: a matrix times a vector.

    Example:
        >>> import xad
        >>> xad.mv(xad.ones(2, 3), xad.ones(3)).tolist()
        [3.0, 3.0]
    """
    if input.ndim != 2 or vec.ndim != 1:
        raise ValueError(f"mv: a matrix and a vector, got {input.shape} and {vec.shape}")
    return matmul(input, vec)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1,  # noqa: A002
          alpha: Any = 1) -> Tensor:
    """``torch.addmm``: ``beta * input + alpha * (mat1 @ mat2)`` (``beta=0`` ignores
    ``input``, NaN included, as PyTorch's).

    Example:
        >>> import xad
        >>> xad.addmm(xad.ones(2), xad.ones(1, 3), xad.ones(3, 2), alpha=2).tolist()
        [[7.0, 7.0]]
    """
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise ValueError(f"addmm: mat1 and mat2 must be matrices, got {mat1.shape} and "
                         f"{mat2.shape}")
    input, mat1, mat2 = autocast_low(input, mat1, mat2, op="addmm")  # (the low list)
    return beta_plus_alpha(input, matmul(mat1, mat2), beta, alpha)


def beta_plus_alpha(input: Tensor, prod: Tensor, beta: Any, alpha: Any) -> Tensor:  # noqa: A002
    """``beta * input + alpha * prod`` (``addmm`` and its kin); ``beta=0`` ignores ``input``,
    NaN included, as PyTorch's."""
    prod = prod if alpha == 1 else prod * alpha
    if beta == 0:
        return prod
    return (input if beta == 1 else input * beta) + prod


def frac(input: Tensor) -> Tensor:  # noqa: A002
    """``input - trunc(input)`` (exact), gradient 1.

    Example:
        >>> import xad
        >>> xad.frac(xad.tensor([-1.25, 2.5])).tolist()
        [-0.25, 0.5]
    """
    return input - input.detach().trunc()


def float_power(input: Any, exponent: Any) -> Tensor:  # noqa: A002
    """``input ** exponent`` in float64, or complex128 where either is complex (PyTorch's
    ``float_power``).

    Example:
        >>> import xad
        >>> xad.float_power(xad.tensor([2]), 3).dtype, xad.float_power(xad.tensor([2]), 1j).dtype
        (xad.float64, xad.complex128)
    """
    complex_ = any(isinstance(v, complex) or (isinstance(v, Tensor) and v.dtype.is_complex)
                   for v in (input, exponent))
    d = _dt.complex128 if complex_ else _dt.float64
    a, b = (astype(v, d) if isinstance(v, Tensor) else v for v in (input, exponent))
    return a ** b if isinstance(a, Tensor) else asarray(a, dtype=d) ** b


def fmax(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The larger of the two, ignoring a NaN (PyTorch's ``fmax``; ties give ``input`` the
    gradient).

    Example:
        >>> import xad
        >>> xad.fmax(xad.tensor([1.0, float("nan")]), xad.tensor([float("nan"), 2.0])).tolist()
        [1.0, 2.0]
    """
    return where((input >= other) | isnan(other), input, other)


def fmin(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The smaller of the two, ignoring a NaN (PyTorch's ``fmin``).

    Example:
        >>> import xad
        >>> xad.fmin(xad.tensor([1.0, float("nan")]), xad.tensor([3.0, 2.0])).tolist()
        [1.0, 2.0]
    """
    return where((input <= other) | isnan(other), input, other)


def heaviside(input: Tensor, values: Any) -> Tensor:  # noqa: A002
    """0 where ``input < 0``, 1 where ``> 0``, ``values`` where ``== 0`` (not
    differentiable, as PyTorch's).

    Example:
        >>> import xad
        >>> xad.heaviside(xad.tensor([-1.0, 0.0, 2.0]), xad.tensor(0.5)).tolist()
        [0.0, 0.5, 1.0]
    """
    x = input.detach()
    v = values.detach() if isinstance(values, Tensor) else values
    return where(x == 0, astype(asarray(v), x.dtype) if not isinstance(v, Tensor) else v,
                 astype(x > 0, x.dtype))


def std_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False,  # noqa: A002
             *, correction: Any = None) -> tuple[Tensor, Tensor]:
    """``torch.std_mean``: ``(input.std(...), input.mean(...))``.

    Example:
        >>> import xad
        >>> [t.item() for t in xad.std_mean(xad.tensor([1.0, 3.0]))]
        [1.4142135381698608, 2.0]
    """
    return (input.std(dim, unbiased, keepdim, correction=correction),
            input.mean(dim, keepdim))


def var_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False,  # noqa: A002
             *, correction: Any = None) -> tuple[Tensor, Tensor]:
    """``torch.var_mean``: ``(input.var(...), input.mean(...))``.

    Example:
        >>> import xad
        >>> [t.item() for t in xad.var_mean(xad.tensor([1.0, 3.0]))]
        [2.0, 2.0]
    """
    return (input.var(dim, unbiased, keepdim, correction=correction),
            input.mean(dim, keepdim))


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """``torch.broadcast_tensors``: :func:`xad.broadcast_arrays`, as a tuple.

    Example:
        >>> import xad
        >>> [t.shape for t in xad.broadcast_tensors(xad.ones(2, 1), xad.ones(3))]
        [(2, 3), (2, 3)]
    """
    return tuple(broadcast_arrays(*tensors))


def hstack(tensors: Any) -> Tensor:
    """``torch.hstack``: along the first axis for 1-D tensors, else the second.

    Example:
        >>> import xad
        >>> xad.hstack([xad.ones(2, 1), xad.zeros(2, 2)]).shape
        (2, 3)
    """
    ts = [t.reshape((1,)) if t.ndim == 0 else t for t in tensors]
    return concat(ts, axis=0 if ts[0].ndim == 1 else 1)


def vstack(tensors: Any) -> Tensor:
    """``torch.vstack``: 0-d and 1-D tensors as rows, joined along the first axis.

    Example:
        >>> import xad
        >>> xad.vstack([xad.ones(3), xad.zeros(2, 3)]).shape
        (3, 3)
    """
    return concat([t.reshape((1, -1)) if t.ndim < 2 else t for t in tensors], axis=0)


def unflatten(input: Tensor, dim: int, sizes: Any) -> Tensor:  # noqa: A002
    """``torch.unflatten``: dimension ``dim`` split into ``sizes`` (one may be -1).

    Example:
        >>> import xad
        >>> xad.unflatten(xad.zeros(2, 6), 1, (2, -1)).shape
        (2, 2, 3)
    """
    d = dim % input.ndim
    out = reshape(input, (*input.shape[:d], *sizes, *input.shape[d + 1:]))
    return view_of(input) if out is input else out  # never input itself, as PyTorch's


def repeat_interleave(input: Tensor, repeats: Any, dim: int | None = None) -> Tensor:  # noqa: A002
    """``torch.repeat_interleave``: each element (or slice along ``dim``) ``repeats`` times
    in a row; ``repeats`` a number or one count per element (a tensor: read to the host).

    Example:
        >>> import xad
        >>> xad.repeat_interleave(xad.tensor([1, 2]), 2).tolist()
        [1, 1, 2, 2]
    """
    x = reshape(input, (-1,)) if dim is None else input
    d = 0 if dim is None else dim % x.ndim
    n = x.shape[d]
    if isinstance(repeats, Tensor):
        counts = [int(c) for c in reshape(repeats, (-1,)).tolist()]
    else:
        counts = [int(repeats)]
    if len(counts) == 1:
        counts = counts * n
    if len(counts) != n:
        raise ValueError(f"repeat_interleave: {len(counts)} repeats for {n} elements along "
                         f"dim {dim}")
    index = asarray([i for i, c in enumerate(counts) for _ in range(c)], dtype=_dt.int64)
    return x[(slice(None),) * d + (index,)]


def bernoulli(input: Tensor, p: float | None = None, *, generator: Any = None) -> Tensor:  # noqa: A002
    """``torch.bernoulli``: 1 with probability ``input`` (or ``p``), else 0, in ``input``'s
    dtype (from the backend's seeded generator; not PyTorch's stream).

    Example:
        >>> import xad
        >>> xad.bernoulli(xad.tensor([0.0, 1.0])).tolist()
        [0.0, 1.0]
    """
    from ..factories import rand
    u = rand(*input.shape, dtype=input.dtype if input.dtype.is_floating else None,
             backend=input._backend, generator=generator)
    prob = input.detach() if p is None else p
    return astype(u < prob, input.dtype)


def fliplr(input: Tensor) -> Tensor:  # noqa: A002
    """Reverse the second dimension (PyTorch's ``fliplr``).

    Example:
        >>> import xad
        >>> xad.fliplr(xad.tensor([[1, 2]])).tolist()
        [[2, 1]]
    """
    if input.ndim < 2:
        raise ValueError(f"fliplr: the input needs at least 2 dimensions, got {input.shape}")
    return flip(input, axis=1)


def flipud(input: Tensor) -> Tensor:  # noqa: A002
    """Reverse the first dimension (PyTorch's ``flipud``).

    Example:
        >>> import xad
        >>> xad.flipud(xad.tensor([1, 2])).tolist()
        [2, 1]
    """
    if input.ndim < 1:
        raise ValueError("flipud: the input needs at least 1 dimension, got a 0-d tensor")
    return flip(input, axis=0)


def ravel(input: Tensor) -> Tensor:  # noqa: A002
    """The elements as one dimension (PyTorch's ``ravel``: a new view where one exists,
    never ``input`` itself, so a hook on it sees only what flows through it).

    Example:
        >>> import xad
        >>> xad.ravel(xad.zeros(2, 3)).shape
        (6,)
    """
    out = reshape(input, (-1,))
    return view_of(input) if out is input else out


def _atleast(n: int, tensors: tuple) -> Any:
    one = len(tensors) == 1 and not isinstance(tensors[0], (list, tuple))
    ts = tensors[0] if len(tensors) == 1 and not one else tensors
    out = []
    for t in ts:
        shape = t.shape
        if t.ndim < n:
            shape = {0: (1,) * n, 1: ((1,) + shape + (1,))[:n] if n > 1 else shape,
                     2: shape + (1,)}[t.ndim]
        out.append(reshape(t, shape))
    return out[0] if one else tuple(out)


def atleast_1d(*tensors: Any) -> Any:
    """PyTorch's ``atleast_1d``: 0-d tensors as shape ``(1,)``; several in, a tuple out.

    Example:
        >>> import xad
        >>> xad.atleast_1d(xad.tensor(3)).shape
        (1,)
    """
    return _atleast(1, tensors)


def atleast_2d(*tensors: Any) -> Any:
    """PyTorch's ``atleast_2d``: 0-d as ``(1, 1)``, 1-D ``(n,)`` as ``(1, n)``.

    Example:
        >>> import xad
        >>> xad.atleast_2d(xad.ones(3)).shape
        (1, 3)
    """
    return _atleast(2, tensors)


def atleast_3d(*tensors: Any) -> Any:
    """PyTorch's ``atleast_3d``: ``(n,)`` as ``(1, n, 1)``, ``(m, n)`` as ``(m, n, 1)``.

    Example:
        >>> import xad
        >>> xad.atleast_3d(xad.ones(2, 3)).shape
        (2, 3, 1)
    """
    return _atleast(3, tensors)


def column_stack(tensors: Any) -> Tensor:
    """PyTorch's ``column_stack``: 0-d and 1-D tensors as columns, joined along dim 1.

    Example:
        >>> import xad
        >>> xad.column_stack([xad.ones(2), xad.zeros(2, 2)]).shape
        (2, 3)
    """
    return concat([reshape(t, (-1, 1)) if t.ndim < 2 else t for t in tensors], axis=1)


def dstack(tensors: Any) -> Tensor:
    """PyTorch's ``dstack``: :func:`atleast_3d` of each, joined along dim 2.

    Example:
        >>> import xad
        >>> xad.dstack([xad.ones(2), xad.zeros(2)]).shape
        (1, 2, 2)
    """
    return concat(list(atleast_3d(list(tensors))), axis=2)


_diagonal_of = diagonal  # diag's argument takes the name (PyTorch's)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    """PyTorch's ``diag``: a 1-D tensor on the ``diagonal``-th diagonal of a square matrix
    (zeros elsewhere), or a matrix's ``diagonal``-th diagonal as a 1-D tensor.

    Example:
        >>> import xad
        >>> xad.diag(xad.tensor([1, 2]), 1).tolist()
        [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    """
    if input.ndim == 2:
        return _diagonal_of(input, diagonal)
    if input.ndim != 1:
        raise ValueError(f"diag: a 1-D or 2-D input, got shape {input.shape}")
    k, n = abs(diagonal), input.shape[0] + abs(diagonal)
    padded = concat([input, zeros(k, dtype=input.dtype)], axis=0)
    i = asarray(list(range(n)))
    on = (i[None, :] - i[:, None]) == diagonal
    vals = padded[:, None] if diagonal >= 0 else padded[None, :]
    return where(on, vals, zeros(1, dtype=input.dtype))
