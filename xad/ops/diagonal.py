"""The diagonal of the last two axes as a view (PyTorch's ``diagonal`` is one: a change
through it reaches the matrix)."""

from __future__ import annotations

from .. import dtypes as _dt
from ..factories import arange
from ._apply import Op, apply, unary
from .indexing import IndexAddInto
from .tangent import linear_jvp

__all__ = ["Diagonal"]


class Diagonal(Op):
    """``x[..., i, i + offset]`` for every ``i`` in range, as the last axis; a view, whose
    in-place changes go to the matrix's elements (``Tensor._adopt_view``)."""

    name = "diagonal"
    view = True

    @staticmethod
    def forward(b, x, offset):
        return b.xp.linalg.diagonal(x, offset=offset)

    @staticmethod
    def backward(node, g):
        shape = node.in_shapes[0]
        rows, cols = shape[-2], shape[-1]
        offset = node.params["offset"]
        i0, j0 = (0, offset) if offset >= 0 else (-offset, 0)
        k = max(0, min(rows - i0, cols - j0))
        rows, cols = (arange(s, s + k, dtype=_dt.int64, backend=g._backend) for s in (i0, j0))
        key = (..., rows._array, cols._array)  # a factory's: constants of a compiled program
        return unary(IndexAddInto, g, shape=shape, key=key, advanced=True)

    @staticmethod
    def batch(args, batched, offset):
        return apply(Diagonal, args[0], offset=offset), True  # leading axes are batch axes

    jvp = classmethod(linear_jvp)
