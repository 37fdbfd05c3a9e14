"""Transforms onto matrices (PyTorch's): ``LowerCholeskyTransform``,
``PositiveDefiniteTransform`` and ``CorrCholeskyTransform``, with the packing of a
triangle into a vector that the last uses."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .. import dtypes as _dt
from .. import factories as _f
from .. import linalg as _la
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .elementwise_transforms import _Stateless

__all__ = ["LowerCholeskyTransform", "PositiveDefiniteTransform", "CorrCholeskyTransform",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]


def _tril_positions(n: int, diag: int) -> list[tuple[int, int]]:
    """The ``(row, column)`` of the triangle ``column < row + diag + 1``, row-major."""
    return [(i, j) for i in range(n) for j in range(n) if j < i + diag + 1]


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower triangle (diagonal ``diag`` and below) of the last two dimensions, read
    row by row into the last one (PyTorch's ``tril_matrix_to_vec``).

    Example:
        >>> import xad
        >>> tril_matrix_to_vec(xad.tensor([[1, 2], [3, 4]]), diag=-1).tolist()
        [3]
    """
    n = mat.shape[-1]
    if not -n <= diag < n:
        raise ValueError(f"tril_matrix_to_vec: diag={diag} is outside [{-n}, {n})")
    flat = [i * n + j for i, j in _tril_positions(n, diag)]
    index = _f.tensor(flat, dtype=_dt.int64, backend=mat.backend)
    return _ops.take(_ops.reshape(mat, mat.shape[:-2] + (n * n,)), index, axis=-1)


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of :func:`tril_matrix_to_vec`: zeros above the triangle.

    Example:
        >>> import xad
        >>> vec_to_tril_matrix(xad.tensor([3.0]), diag=-1).tolist()
        [[0.0, 0.0], [3.0, 0.0]]
    """
    m = vec.shape[-1]
    root = ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5
    n = round((-(1 + 2 * diag) + root) / 2)
    positions = _tril_positions(n, diag)
    if len(positions) != m:
        raise ValueError(f"vec_to_tril_matrix: a vector of {m} entries is no triangle "
                         f"(diag={diag}) of a square matrix")
    where = dict(zip(positions, range(m)))
    flat = [where.get((i, j), m) for i in range(n) for j in range(n)]  # m: the zero
    index = _f.tensor(flat, dtype=_dt.int64, backend=vec.backend)
    padded = _ops.concat([vec, _f.zeros_like(vec[..., :1])], axis=-1)
    return _ops.reshape(_ops.take(padded, index, axis=-1), vec.shape[:-1] + (n, n))


def _with_diagonal(x: Tensor, diagonal: Tensor) -> Tensor:
    return _ops.tril(x, k=-1) + _ops.diag_embed(diagonal)


class LowerCholeskyTransform(_Stateless):
    """A square matrix to a lower-triangular one with a positive diagonal: the strict lower
    triangle kept, the diagonal exponentiated.

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import LowerCholeskyTransform
        >>> LowerCholeskyTransform()(xad.tensor([[0.0, 5.0], [2.0, 0.0]])).tolist()
        [[1.0, 0.0], [2.0, 1.0]]
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x: Tensor) -> Tensor:
        return _with_diagonal(x, _ops.exp(_la.diagonal(x)))

    def _inverse(self, y: Tensor) -> Tensor:
        return _with_diagonal(y, _ops.log(_la.diagonal(y)))


class PositiveDefiniteTransform(_Stateless):
    """A square matrix to ``L L^T``, ``L`` its :class:`LowerCholeskyTransform` image.

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import PositiveDefiniteTransform
        >>> PositiveDefiniteTransform()(xad.tensor([[0.0, 5.0], [2.0, 0.0]])).tolist()
        [[1.0, 2.0], [2.0, 5.0]]
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x: Tensor) -> Tensor:
        lower = LowerCholeskyTransform()(x)
        return _ops.matmul(lower, _ops.matrix_transpose(lower))

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(_la.cholesky(y))


class CorrCholeskyTransform(_Stateless):
    """``D (D - 1) / 2`` reals to the Cholesky factor of a ``D x D`` correlation matrix:
    ``tanh``, then stick-breaking on the squares of each row (Stan's, PyTorch's).

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import CorrCholeskyTransform
        >>> y = CorrCholeskyTransform()(xad.zeros(1))
        >>> y.tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """

    domain, codomain, bijective = constraints.real_vector, constraints.corr_cholesky, True

    def _call(self, x: Tensor) -> Tensor:
        eps = _ops.finfo(x.dtype).eps
        r = vec_to_tril_matrix(_ops.clip(_ops.tanh(x), -1 + eps, 1 - eps), diag=-1)
        # y = sign(r) sqrt(z z1m_cumprod) = r sqrt(z1m_cumprod), z = r ** 2
        z1m_cumprod_sqrt = _ops.cumprod(_ops.sqrt(1 - r * r), axis=-1)
        r = r + _f.eye(r.shape[-1], dtype=r.dtype, backend=r.backend)
        shifted = _ops.concat([_f.ones_like(r[..., :1]), z1m_cumprod_sqrt[..., :-1]],
                              axis=-1)
        return r * shifted

    def _inverse(self, y: Tensor) -> Tensor:
        y_cumsum = 1 - _ops.cumsum(y * y, axis=-1)
        shifted = _ops.concat([_f.ones_like(y[..., :1]), y_cumsum[..., :-1]], axis=-1)
        t = tril_matrix_to_vec(y, diag=-1) / _ops.sqrt(tril_matrix_to_vec(shifted, diag=-1))
        return (_ops.log1p(t) - _ops.log1p(-t)) / 2

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """Of ``x`` and the flattened strict lower triangle of ``y`` (the spaces differ in
        dimension), as PyTorch's."""
        y1m_cumsum = 1 - _ops.cumsum(y * y, axis=-1)
        # diag=-2 reads the cumulative sums already shifted right by one
        stick = 0.5 * _ops.sum(_ops.log(tril_matrix_to_vec(y1m_cumsum, diag=-2)), axis=-1)
        tanh = -2 * _ops.sum(x + _ops.softplus(-2 * x) - math.log(2.0), axis=-1)
        return stick + tanh

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ValueError("CorrCholeskyTransform: too few dimensions on input: ()")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError(f"CorrCholeskyTransform: {n} is not the size of a matrix's "
                             f"strict lower triangle")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        if len(shape) < 2 or shape[-2] != shape[-1]:
            raise ValueError(f"CorrCholeskyTransform: input of shape {tuple(shape)} is not "
                             f"a square matrix")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)
