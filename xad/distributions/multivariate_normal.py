"""``MultivariateNormal``: the Gaussian by covariance, its Cholesky factor, or precision."""

from __future__ import annotations

from .. import factories as _f
from .. import linalg as _la
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .distribution import LOG_2PI, Distribution, Shape, broadcast_shapes

__all__ = ["MultivariateNormal", "tril_solve"]


def tril_solve(lower: Tensor, b: Tensor) -> Tensor:
    """``lower^-1 b`` for the vectors on ``b``'s last axis, batches broadcast; entries above
    the diagonal are ignored (and get no gradient), as in a triangular solve."""
    lower = _ops.tril(lower)
    shape = broadcast_shapes(lower.shape[:-2], b.shape[:-1])
    k = lower.shape[-1]
    lower = _ops.broadcast_to(lower, shape + (k, k))
    b = _ops.broadcast_to(b, shape + (k,))
    return _la.solve(lower, _ops.expand_dims(b, axis=-1))[..., 0]


class MultivariateNormal(Distribution):
    """A Gaussian over vectors of size ``k`` with mean ``loc`` and exactly one of
    ``covariance_matrix``, ``precision_matrix`` or ``scale_tril`` (lower Cholesky factor).

    Example:
        >>> import xad
        >>> d = xad.distributions.MultivariateNormal(xad.zeros(2), 4 * xad.eye(2))
        >>> d.event_shape, round(d.log_prob(xad.zeros(2)).item(), 4)
        ((2,), -3.2242)
    """

    has_rsample = True

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    _expand_params = ("loc",)

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("MultivariateNormal: pass exactly one of covariance_matrix, "
                             "precision_matrix and scale_tril")
        if loc.ndim < 1 or given[0].ndim < 2 or given[0].shape[-2:] != loc.shape[-1:] * 2:
            raise ValueError(f"MultivariateNormal: loc of shape {loc.shape} needs a (..., k, "
                             f"k) matrix with k = its last size, found {given[0].shape}")
        if scale_tril is None:
            cov = covariance_matrix if precision_matrix is None else _la.inv(precision_matrix)
            assert cov is not None  # exactly one of the three was given, not scale_tril
            scale_tril = _la.cholesky(cov)
        batch = broadcast_shapes(loc.shape[:-1], scale_tril.shape[:-2])
        self.loc = _ops.broadcast_to(loc, batch + loc.shape[-1:])
        self._tril = scale_tril  # of its own batch shape; the properties broadcast it
        # the matrix given is returned as given (PyTorch's: its gradient is not symmetrised)
        self._cov, self._prec = covariance_matrix, precision_matrix
        super().__init__(batch, loc.shape[-1:])

    def _matrix(self, m: Tensor) -> Tensor:
        return _ops.broadcast_to(m, self.batch_shape + self.event_shape * 2)

    @property
    def scale_tril(self) -> Tensor:
        return self._matrix(self._tril)

    @property
    def covariance_matrix(self) -> Tensor:
        if self._cov is not None:
            return self._matrix(self._cov)
        return self._matrix(_ops.matmul(self._tril, _ops.matrix_transpose(self._tril)))

    @property
    def precision_matrix(self) -> Tensor:
        if self._prec is not None:
            return self._matrix(self._prec)
        inv = _la.inv(self._tril)
        return self._matrix(_ops.matmul(_ops.matrix_transpose(inv), inv))

    def _half_log_det(self) -> Tensor:
        return _ops.sum(_ops.log(_la.diagonal(self._tril)), axis=-1)

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        eps = _f.randn(self._shape(sample_shape), dtype=self.loc.dtype, backend=self.loc.backend)
        return self.loc + _ops.matmul(self._tril, _ops.expand_dims(eps, axis=-1))[..., 0]

    def log_prob(self, value: Tensor) -> Tensor:
        z = tril_solve(self._tril, value - self.loc)
        k = self.event_shape[0]
        return -0.5 * (k * LOG_2PI + _ops.sum(z * z, axis=-1)) - self._half_log_det()

    def entropy(self) -> Tensor:
        k = self.event_shape[0]
        h = 0.5 * k * (1 + LOG_2PI) + self._half_log_det()
        return _ops.broadcast_to(h, self.batch_shape)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        var = _ops.sum(self._tril ** 2, axis=-1)
        return _ops.broadcast_to(var, self.batch_shape + self.event_shape)


