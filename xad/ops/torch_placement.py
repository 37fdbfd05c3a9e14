"""PyTorch's functions that place values along axes and diagonals, or cut tensors, where
the standard lacks them: ``diag_embed``, ``diagflat``, ``select_scatter``,
``slice_scatter``, ``diagonal_scatter``, ``argwhere``, ``vsplit``/``hsplit``/``dsplit``,
``split_with_sizes`` and ``adjoint``; composed from xad's primitives and indexed writes
into a new tensor, so gradients reach both the input and the values placed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..factories import arange, zeros
from ..tensor import Tensor
from .axes import normalize_axis
from .complex_parts import conj
from .inplace import setitem_
from .manipulation import moveaxis
from .shape import concat, reshape
from .splits_and_windows import tensor_split

__all__ = ["diag_embed", "diagflat", "select_scatter", "slice_scatter", "diagonal_scatter",
           "argwhere", "vsplit", "hsplit", "dsplit", "split_with_sizes", "adjoint"]


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:  # noqa: A002
    """The last axis of ``input`` on the ``offset`` diagonal of two new axes ``dim1``,
    ``dim2`` (of the result) of size ``n + |offset|``; zeros elsewhere.

    Example:
        >>> import xad
        >>> xad.diag_embed(xad.tensor([1.0, 2.0]), 1).tolist()
        [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]
    """
    if input.ndim == 0:
        raise ValueError("diag_embed: input needs at least one axis, got a 0-d tensor")
    nd = input.ndim + 1
    d1, d2 = normalize_axis(dim1, nd, "diag_embed"), normalize_axis(dim2, nd, "diag_embed")
    if d1 == d2:
        raise ValueError(f"diag_embed: dim1 and dim2 name one axis ({dim1}, {dim2})")
    *lead, m = input.shape
    k = abs(offset)
    # m values, each followed by m zeros: read as (m, m + 1) then cut, the values fall on
    # the diagonal of an (m, m) matrix
    z = zeros((*lead, m, m), dtype=input.dtype, backend=input._backend)
    rows = concat([reshape(input, (*lead, m, 1)), z], axis=-1)
    square = reshape(reshape(rows, (*lead, m * (m + 1)))[..., :m * m], (*lead, m, m))
    if k:
        right = zeros((*lead, m, k), dtype=input.dtype, backend=input._backend)
        square = concat([right, square] if offset > 0 else [square, right], axis=-1)
        below = zeros((*lead, k, m + k), dtype=input.dtype, backend=input._backend)
        square = concat([square, below] if offset > 0 else [below, square], axis=-2)
    return moveaxis(square, (-2, -1), (d1, d2))


def diagflat(input: Tensor, offset: int = 0) -> Tensor:  # noqa: A002
    """The flattened ``input`` on the ``offset`` diagonal of a square matrix.

    Example:
        >>> import xad
        >>> xad.diagflat(xad.tensor([[1.0, 2.0]])).tolist()
        [[1.0, 0.0], [0.0, 2.0]]
    """
    return diag_embed(reshape(input, (-1,)), offset)


def _placed(input: Tensor, key: tuple, src: Tensor, expected: tuple, what: str) -> Tensor:  # noqa: A002
    """A copy of ``input`` with ``src`` (of shape ``expected``, cast to ``input``'s dtype,
    as PyTorch's) written at ``key``."""
    if tuple(src.shape) != tuple(expected):
        raise ValueError(f"{what}: src of shape {src.shape} does not fit the {expected} "
                         f"place of input shape {input.shape}")
    out = input.clone()
    setitem_(out, key, src if src.dtype is input.dtype else src.astype(input.dtype))
    return out


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:  # noqa: A002
    """A copy of ``input`` with ``src`` at ``index`` along ``dim`` (``input.select(dim,
    index)``'s place).

    Example:
        >>> import xad
        >>> xad.select_scatter(xad.zeros(2, 2), xad.ones(2), 0, 1).tolist()
        [[0.0, 0.0], [1.0, 1.0]]
    """
    d = normalize_axis(dim, input.ndim, "select_scatter")
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select_scatter: index {index} is out of range for dim {dim} of "
                         f"size {n}")
    key = (slice(None),) * d + (index % n,)
    return _placed(input, key, src, input.shape[:d] + input.shape[d + 1:], "select_scatter")


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,  # noqa: A002
                  end: int | None = None, step: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` at ``start:end:step`` along ``dim``.

    Example:
        >>> import xad
        >>> xad.slice_scatter(xad.zeros(4), xad.ones(2), start=0, step=2).tolist()
        [1.0, 0.0, 1.0, 0.0]
    """
    d = normalize_axis(dim, input.ndim, "slice_scatter")
    if step < 1:
        raise ValueError(f"slice_scatter: step must be positive, got {step}")
    key = (slice(None),) * d + (slice(start, end, step),)
    n = len(range(*key[-1].indices(input.shape[d])))
    expected = input.shape[:d] + (n,) + input.shape[d + 1:]
    return _placed(input, key, src, expected, "slice_scatter")


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,  # noqa: A002
                     dim2: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` on the diagonal ``input.diagonal(offset, dim1,
    dim2)`` (the diagonal along ``src``'s last axis).

    Example:
        >>> import xad
        >>> xad.diagonal_scatter(xad.zeros(2, 3), xad.ones(2), 1).tolist()
        [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    d1 = normalize_axis(dim1, input.ndim, "diagonal_scatter")
    d2 = normalize_axis(dim2, input.ndim, "diagonal_scatter")
    if d1 == d2:
        raise ValueError(f"diagonal_scatter: dim1 and dim2 name one axis ({dim1}, {dim2})")
    moved = moveaxis(input, (d1, d2), (-2, -1))
    r, c = moved.shape[-2:]
    n = max(0, min(r + min(offset, 0), c - max(offset, 0)))
    rows = arange(n, backend=input._backend) + max(-offset, 0)
    key = (..., rows, rows + offset)
    out = _placed(moved, key, src, moved.shape[:-2] + (n,), "diagonal_scatter")
    return moveaxis(out, (-2, -1), (d1, d2))


def argwhere(input: Tensor) -> Tensor:  # noqa: A002
    """The indices of the non-zero elements, one row each: ``input.nonzero()``.

    Example:
        >>> import xad
        >>> xad.argwhere(xad.tensor([0, 3, 5])).tolist()
        [[1], [2]]
    """
    return input.nonzero()


def _split(name: str, input: Tensor, sections: Any, dim: int, need: int) -> tuple[Tensor, ...]:  # noqa: A002
    if input.ndim < need:
        raise ValueError(f"{name}: input needs at least {need} axes, got shape {input.shape}")
    if isinstance(sections, int) and (sections < 1 or input.shape[dim] % sections):
        raise ValueError(f"{name}: dim {dim} of size {input.shape[dim]} (shape "
                         f"{input.shape}) does not split into {sections} equal parts")
    return tensor_split(input, sections, dim)


def vsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:  # noqa: A002
    """Split along axis 0 into equal parts, or at the given indices (views).

    Example:
        >>> import xad
        >>> [t.shape for t in xad.vsplit(xad.ones(4, 2), 2)]
        [(2, 2), (2, 2)]
    """
    return _split("vsplit", input, indices_or_sections, 0, 2)


def hsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:  # noqa: A002
    """Split along axis 1 (axis 0 of a vector) into equal parts, or at the given indices.

    Example:
        >>> import xad
        >>> [t.tolist() for t in xad.hsplit(xad.arange(4), [1])]
        [[0], [1, 2, 3]]
    """
    return _split("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


def dsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:  # noqa: A002
    """Split along axis 2 into equal parts, or at the given indices.

    Example:
        >>> import xad
        >>> [t.shape for t in xad.dsplit(xad.ones(1, 1, 4), 2)]
        [(1, 1, 2), (1, 1, 2)]
    """
    return _split("dsplit", input, indices_or_sections, 2, 3)


def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0,  # noqa: A002
                     ) -> tuple[Tensor, ...]:
    """Pieces of the given sizes along ``dim`` (they must add up to its length).

    Example:
        >>> import xad
        >>> [t.tolist() for t in xad.split_with_sizes(xad.arange(5), [2, 3])]
        [[0, 1], [2, 3, 4]]
    """
    d = normalize_axis(dim, input.ndim, "split_with_sizes")
    sizes = [int(k) for k in split_sizes]
    if sum(sizes) != input.shape[d] or min(sizes, default=0) < 0:
        raise ValueError(f"split_with_sizes: sizes {sizes} do not add up to the length "
                         f"{input.shape[d]} of dim {dim} (shape {input.shape})")
    cuts = [sum(sizes[:i + 1]) for i in range(len(sizes) - 1)]
    return tensor_split(input, cuts, d)


def adjoint(input: Tensor) -> Tensor:  # noqa: A002
    """The conjugate transpose of the last two axes.

    Example:
        >>> import xad
        >>> xad.adjoint(xad.tensor([[1.0, 2.0]])).tolist()
        [[1.0], [2.0]]
    """
    if input.ndim < 2:
        raise ValueError(f"adjoint: input must be a matrix or a batch of matrices, got shape "
                         f"{input.shape}")
    return conj(input).mT
