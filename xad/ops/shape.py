"""Shape operations: reshape, transpose, broadcast, concatenate, split, flip."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from ..tensor import Tensor
from ._apply import Op, apply, unary
from .axes import normalize_axes, normalize_axis
from .batching import align, axes_batch, shift_axes
from .dtype_functions import result_type
from .layout import strides, view_strides
from .tangent import linear_jvp

__all__ = ["reshape", "permute_dims", "transpose", "matrix_transpose", "squeeze",
           "expand_dims", "broadcast_to", "concat", "stack", "split", "split_copy", "flip", "tile",
           "flatten"]


class Reshape(Op):
    name = "reshape"
    view = True

    @staticmethod
    def forward(b, x, shape, copy=None):
        if copy is not True:
            return b.xp.reshape(x, shape) if copy is None else b.xp.reshape(x, shape, copy=copy)
        # a copy in row-major order (a library's copy may keep a transposed layout, and
        # xad's views of the copy are of row-major strides): flat, then shaped (a view)
        return b.xp.reshape(b.xp.reshape(x, (-1,), copy=True), shape)

    @classmethod
    def is_view(cls, params: dict) -> bool:
        return params.get("copy") is not True

    @staticmethod
    def backward(node, g):
        return reshape(g, node.in_shapes[0])

    @staticmethod
    def batch(args, batched, shape, copy=None):
        x = args[0]
        extra = {} if copy is None else {"copy": copy}
        return apply(Reshape, x, shape=(x.shape[0],) + tuple(shape), **extra), True

    jvp = classmethod(linear_jvp)


class PermuteDims(Op):
    name = "permute_dims"
    view = True

    @staticmethod
    def forward(b, x, axes):
        return b.xp.permute_dims(x, axes)

    @staticmethod
    def backward(node, g):
        axes = node.params["axes"]
        inv = [0] * len(axes)
        for i, a in enumerate(axes):
            inv[a] = i
        return permute_dims(g, tuple(inv))

    @staticmethod
    def batch(args, batched, axes):
        return apply(PermuteDims, args[0], axes=(0,) + tuple(a + 1 for a in axes)), True

    jvp = classmethod(linear_jvp)


class BroadcastTo(Op):
    name = "broadcast_to"
    view = True

    @staticmethod
    def forward(b, x, shape):
        return b.xp.broadcast_to(x, shape)

    @staticmethod
    def backward(node, g):
        return g  # the engine sums a gradient back down to its input's shape

    @staticmethod
    def batch(args, batched, shape):
        x = align(args, batched, len(shape))[0]
        return apply(BroadcastTo, x, shape=(x.shape[0],) + tuple(shape)), True

    jvp = classmethod(linear_jvp)


class Concat(Op):
    name = "concat"

    @staticmethod
    def forward(b, *xs, axis):
        return b.row_major(b.xp.concat(xs, axis=axis))  # (NumPy keeps F-ordered inputs' order)

    @staticmethod
    def backward(node, g):
        axis = node.params["axis"]
        out, start = [], 0
        for shape in node.in_shapes:
            stop = start + shape[axis]
            out.append(g[(slice(None),) * axis + (slice(start, stop), ...)])
            start = stop
        return tuple(out)

    @staticmethod
    def batch(args, batched, axis):
        n = next(a.shape[0] for a, f in zip(args, batched) if f)
        xs = [a if f else apply(BroadcastTo, a, shape=(n,) + tuple(a.shape))
              for a, f in zip(args, batched)]
        return apply(Concat, *xs, axis=shift_axes(axis, 0)), True

    jvp = classmethod(linear_jvp)


class SplitCopy(Op):
    """``x`` cut along ``axis`` at ``bounds`` into new arrays, one node with an output per
    piece; the rule concatenates the pieces' gradients (zeros for a piece none reached)."""

    name = "split_copy"

    @staticmethod
    def forward(b, x, axis, bounds):
        pre = (slice(None),) * axis
        return tuple(b.xp.asarray(x[pre + (slice(lo, hi),)], copy=True)
                     for lo, hi in zip(bounds[:-1], bounds[1:]))

    @staticmethod
    def backward(node, *grads):
        return concat(grads, axis=node.params["axis"])

    @staticmethod
    def batch(args, batched, axis, bounds):
        outs = apply(SplitCopy, args[0], axis=axis + 1, bounds=bounds)
        return outs, (True,) * len(outs)

    jvp = classmethod(linear_jvp)


class Flip(Op):
    """A reversed copy (PyTorch's ``flip`` copies; NumPy's view would share memory)."""

    name = "flip"

    @staticmethod
    def forward(b, x, axis):
        return b.xp.asarray(b.xp.flip(x, axis=axis), copy=True)

    @staticmethod
    def backward(node, g):
        return flip(g, axis=node.params["axis"])

    batch = classmethod(axes_batch)

    jvp = classmethod(linear_jvp)


def reshape(x: Tensor, /, shape: Sequence[int] | int, *, copy: bool | None = None) -> Tensor:
    """The same elements in a new shape (one entry may be -1): a view exactly where
    PyTorch's is (the elements' strides allow it: ``x.T.reshape(-1)`` copies, and so, where
    the backend keeps layouts as PyTorch does, does ``x.T.exp().reshape(-1)``);
    ``copy=True`` always copies, ``copy=False`` raises where a view cannot be made.

    Example:
        >>> import xad
        >>> xad.reshape(xad.arange(6), (2, 3)).shape
        (2, 3)
    """
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    size = math.prod(x.shape)  # (not x.size: a per-operation path, and that makes a Size)
    if -1 in shape:
        known = math.prod(n for n in shape if n != -1)
        if known == 0 or shape.count(-1) > 1 or size % known:
            raise ValueError(f"reshape: cannot reshape a tensor of shape {x.shape} "
                             f"into {shape}")
        shape = tuple(size // known if n == -1 else n for n in shape)
    if math.prod(shape) != size:
        raise ValueError(f"reshape: cannot reshape a tensor of shape {x.shape} "
                         f"({size} elements) into {shape}")
    if shape == x.shape and copy is not True:
        return x
    if copy is True:
        return unary(Reshape, x, shape=shape, copy=True)
    a = x._array  # its own layout decides too, where it is this tensor's (under vmap it
    viewable = (x._base is None or view_strides(x.shape, strides(x), shape) is not None) \
        and (a.shape != x.shape or x._backend.reshapes_in_place(a, shape))  # holds a batch)
    if copy is False and not viewable:
        raise ValueError(f"reshape: a tensor of shape {x.shape} cannot become {shape} "
                         f"without a copy (its elements' strides {strides(x)}, or the layout "
                         f"an operation's result keeps from its input, allow no view, as in "
                         f"PyTorch); reshape with copy=None copies")
    return unary(Reshape, x, shape=shape, copy=None if viewable else True)


def view_of(x: Tensor) -> Tensor:
    """A new view of all of ``x`` (PyTorch's view methods never return their input, so a
    hook or ``retain_grad`` on the view sees only what flows through it)."""
    return unary(Reshape, x, shape=tuple(x.shape), copy=None)


def permute_dims(x: Tensor, axes: Sequence[int]) -> Tensor:
    """Reorder the axes.

    Example:
        >>> import xad
        >>> xad.permute_dims(xad.zeros((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
    """
    axes = tuple(normalize_axis(a, x.ndim, "permute_dims") for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"permute_dims: axes {axes} are not a permutation of "
                         f"{x.ndim} dimensions (shape {x.shape})")
    return unary(PermuteDims, x, axes=axes)


def transpose(x: Tensor, axes: Sequence[int] | None = None) -> Tensor:
    """NumPy's transpose: reverse the axes, or permute them as ``axes`` says."""
    if axes is None:
        axes = tuple(range(x.ndim))[::-1]
    return permute_dims(x, axes)


def matrix_transpose(x: Tensor) -> Tensor:
    """Swap the last two axes."""
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose needs at least 2 dimensions, got shape {x.shape}")
    axes = list(range(x.ndim))
    axes[-2], axes[-1] = axes[-1], axes[-2]
    return unary(PermuteDims, x, axes=tuple(axes))  # a permutation: nothing to check


def squeeze(x: Tensor, axis: int | tuple[int, ...] | None = None) -> Tensor:
    """Remove axes of length one (all of them when ``axis`` is ``None``)."""
    if axis is None:
        axes = {i for i, n in enumerate(x.shape) if n == 1}
    else:
        axes = set(normalize_axes(axis, x.ndim, "squeeze"))
        bad = [a for a in axes if x.shape[a] != 1]
        if bad:
            raise ValueError(f"squeeze: axis {bad[0]} of shape {x.shape} is not of length 1")
    return reshape(x, tuple(n for i, n in enumerate(x.shape) if i not in axes))


def expand_dims(x: Tensor, axis: int = 0) -> Tensor:
    """Insert an axis of length one at ``axis``."""
    shape = list(x.shape)
    shape.insert(normalize_axis(axis, x.ndim + 1, "expand_dims"), 1)
    return reshape(x, tuple(shape))


def broadcast_to(x: Tensor, shape: Sequence[int]) -> Tensor:
    """Repeat ``x`` along axes of length one (and new leading axes) to ``shape``."""
    shape = tuple(shape)
    if shape == x.shape:
        return x
    return unary(BroadcastTo, x, shape=shape)


def concat(tensors: Sequence[Tensor], axis: int | None = 0) -> Tensor:
    """Join tensors along an existing axis (flattened first when ``axis`` is ``None``).

    Example:
        >>> import xad
        >>> xad.concat([xad.ones(2), xad.zeros(1)]).tolist()
        [1.0, 1.0, 0.0]
    """
    tensors = tuple(tensors)
    if not tensors:
        raise ValueError("concat: need at least one tensor")
    if axis is None:  # the standard's: flatten each first
        tensors, axis = tuple(reshape(t, (-1,)) for t in tensors), 0
    d = tensors[0].dtype
    if any(t.dtype is not d for t in tensors):  # xad's promotion, not the backend's (NumPy's
        d = result_type(*tensors)  # int64 with float32 is float64; xad's, PyTorch's float32)
        tensors = tuple(t if t.dtype is d else t.astype(d) for t in tensors)
    return apply(Concat, *tensors, axis=normalize_axis(axis, tensors[0].ndim, "concat"))


def stack(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """Join tensors along a new axis."""
    tensors = tuple(tensors)
    if not tensors:
        raise ValueError("stack: need at least one tensor")
    return concat([expand_dims(t, axis) for t in tensors], axis=axis)


def split(x: Tensor, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Tensor]:
    """NumPy's split: into ``n`` equal parts, or at the given indices.

    Example:
        >>> import xad
        >>> [t.tolist() for t in xad.split(xad.arange(4), 2)]
        [[0, 1], [2, 3]]
    """
    axis = normalize_axis(axis, x.ndim, "split")
    n = x.shape[axis]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0 or n % k:
            raise ValueError(f"split: an axis of length {n} does not split into {k} equal parts")
        cuts = [i * (n // k) for i in range(1, k)]
    else:
        cuts = list(indices_or_sections)
    bounds = [0, *cuts, n]
    pre = (slice(None),) * axis
    return [x[pre + (slice(a, b), ...)] for a, b in zip(bounds[:-1], bounds[1:])]


def split_copy(x: Tensor, split_size_or_sections: int | Sequence[int],
               axis: int = 0) -> tuple[Tensor, ...]:
    """PyTorch's ``split_copy``: pieces of ``split_size_or_sections`` along ``axis`` (an
    int: pieces of that size, the last maybe shorter; a list: each piece's size), as new
    tensors rather than views, so writing to one changes nothing else. Its gradient is one
    concatenation (the views of :func:`split` scatter into zeros once per piece).

    Example:
        >>> import xad
        >>> [t.tolist() for t in xad.split_copy(xad.arange(5), 2)]
        [[0, 1], [2, 3], [4]]
    """
    axis = normalize_axis(axis, x.ndim, "split_copy")
    n = x.shape[axis]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0:
            raise ValueError(f"split_copy: the piece size must be positive, got {step}")
        sizes = [min(step, n - i) for i in range(0, n, step)] or [0]
    else:
        sizes = [int(k) for k in split_size_or_sections]
        if sum(sizes) != n or min(sizes, default=0) < 0:
            raise ValueError(f"split_copy: sizes {sizes} do not add up to the length {n} of "
                             f"axis {axis} of a tensor of shape {x.shape}")
    bounds = tuple(itertools.accumulate(sizes, initial=0))
    out = apply(SplitCopy, x, axis=axis, bounds=bounds)
    return out if isinstance(out, tuple) else (out,)


def tile(x: Tensor, repetitions: Sequence[int]) -> Tensor:
    """``repetitions[i]`` copies of ``x`` along axis ``i`` (the standard's ``tile``; PyTorch's
    ``Tensor.repeat``): missing leading repetitions count as 1, extra ones add axes.

    Example:
        >>> import xad
        >>> xad.tile(xad.tensor([1, 2]), (2, 2)).tolist()
        [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    reps = tuple(repetitions)
    reps = (1,) * (x.ndim - len(reps)) + reps
    shape = (1,) * (len(reps) - x.ndim) + x.shape
    spread = reshape(x, tuple(v for n in shape for v in (1, n)))
    tiled = broadcast_to(spread, tuple(v for r, n in zip(reps, shape) for v in (r, n)))
    return reshape(tiled, tuple(r * n for r, n in zip(reps, shape)))


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge the axes ``start_dim`` to ``end_dim`` (inclusive) into one.

    Example:
        >>> import xad
        >>> xad.flatten(xad.zeros((2, 3, 4)), 1).shape
        (2, 12)
    """
    if x.ndim == 0:
        return reshape(x, (1,))
    s = normalize_axis(start_dim, x.ndim, "flatten")
    e = normalize_axis(end_dim, x.ndim, "flatten")
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} "
                         f"(shape {x.shape})")
    return reshape(x, x.shape[:s] + (math.prod(x.shape[s:e + 1]),) + x.shape[e + 1:])


def flip(x: Tensor, axis: Any = None) -> Tensor:
    """A copy with the order of elements reversed along ``axis`` (all axes when ``None``):
    a new tensor, as PyTorch's ``flip`` (NumPy's is a view).

    Example:
        >>> import xad
        >>> x = xad.arange(3.0); y = xad.flip(x); x[0] = 9.0; y.tolist()
        [2.0, 1.0, 0.0]
    """
    return unary(Flip, x, axis=None if axis is None else normalize_axes(axis, x.ndim, "flip"))


