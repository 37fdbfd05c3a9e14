"""``LowRankMultivariateNormal``: a Gaussian whose covariance is ``W W^T + diag(D)``,
evaluated through the Woodbury identity and the ``m x m`` capacitance ``I + W^T D^-1 W``."""

from __future__ import annotations

from .. import factories as _f
from .. import linalg as _la
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .distribution import LOG_2PI, Distribution, Shape, broadcast_shapes
from .multivariate_normal import tril_solve

__all__ = ["LowRankMultivariateNormal", "tril_solve_matrix", "lowrank_logdet",
           "lowrank_mahalanobis", "trace_xxt"]


def tril_solve_matrix(lower: Tensor, b: Tensor) -> Tensor:
    """``lower^-1 b`` for matrices ``b``, batches broadcast (entries above ``lower``'s
    diagonal ignored)."""
    lower = _ops.tril(lower)
    batch = broadcast_shapes(lower.shape[:-2], b.shape[:-2])
    return _la.solve(_ops.broadcast_to(lower, batch + tuple(lower.shape[-2:])),
                     _ops.broadcast_to(b, batch + tuple(b.shape[-2:])))


def trace_xxt(x: Tensor) -> Tensor:
    """``trace(x x^T)`` over the last two axes: the squared sum of ``x``."""
    return _ops.sum(x * x, axis=(-2, -1))


def _capacitance_tril(w: Tensor, d: Tensor) -> Tensor:
    """The Cholesky factor of ``I + W^T D^-1 W``."""
    wt_dinv = _ops.matrix_transpose(w) / _ops.expand_dims(d, axis=-2)
    k = _ops.matmul(wt_dinv, w)
    return _la.cholesky(k + _f.eye(w.shape[-1], dtype=w.dtype, backend=w.backend))


def lowrank_logdet(w: Tensor, d: Tensor, cap_tril: Tensor) -> Tensor:
    """``log det(W W^T + diag(D))`` by the matrix determinant lemma."""
    diag = _la.diagonal(cap_tril)
    return 2 * _ops.sum(_ops.log(diag), axis=-1) + _ops.sum(_ops.log(d), axis=-1)


def lowrank_mahalanobis(w: Tensor, d: Tensor, x: Tensor, cap_tril: Tensor) -> Tensor:
    """``x^T (W W^T + diag(D))^-1 x`` by the Woodbury identity."""
    wt_dinv = _ops.matrix_transpose(w) / _ops.expand_dims(d, axis=-2)
    wt_dinv_x = _ops.matmul(wt_dinv, _ops.expand_dims(x, axis=-1))[..., 0]
    z = tril_solve(cap_tril, wt_dinv_x)
    return _ops.sum(x ** 2 / d, axis=-1) - _ops.sum(z * z, axis=-1)


class LowRankMultivariateNormal(Distribution):
    """A Gaussian over vectors of size ``n`` with mean ``loc`` and covariance
    ``cov_factor @ cov_factor.T + diag(cov_diag)`` (``cov_factor``: ``(..., n, m)``).

    Example:
        >>> import xad
        >>> d = xad.distributions.LowRankMultivariateNormal(
        ...     xad.zeros(2), xad.zeros(2, 1), xad.ones(2))
        >>> d.event_shape, round(d.log_prob(xad.zeros(2)).item(), 4)
        ((2,), -1.8379)
    """

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    _expand_params = ("loc", "cov_diag", "cov_factor")

    has_rsample = True

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor,
                 validate_args: bool | None = None) -> None:
        if loc.ndim < 1 or cov_factor.ndim < 2:
            raise ValueError(f"LowRankMultivariateNormal: loc needs at least one dimension and "
                             f"cov_factor two, found shapes {loc.shape} and {cov_factor.shape}")
        n = loc.shape[-1]
        if cov_factor.shape[-2] != n or cov_diag.shape[-1:] != (n,):
            raise ValueError(f"LowRankMultivariateNormal: loc of shape {loc.shape} needs a "
                             f"cov_factor of (..., {n}, m) and a cov_diag of (..., {n}), found "
                             f"{cov_factor.shape} and {cov_diag.shape}")
        try:
            batch = broadcast_shapes(loc.shape[:-1], cov_factor.shape[:-2], cov_diag.shape[:-1])
        except ValueError as e:
            raise ValueError(f"LowRankMultivariateNormal: incompatible batch shapes: loc "
                             f"{loc.shape}, cov_factor {cov_factor.shape}, cov_diag "
                             f"{cov_diag.shape}") from e
        self.loc = _ops.broadcast_to(loc, batch + (n,))
        self.cov_diag = _ops.broadcast_to(cov_diag, batch + (n,))
        self.cov_factor = _ops.broadcast_to(cov_factor, batch + tuple(cov_factor.shape[-2:]))
        self._w, self._d = cov_factor, cov_diag  # unbroadcast, as PyTorch's
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch, (n,))

    def _matrix(self, m: Tensor) -> Tensor:
        return _ops.broadcast_to(m, self.batch_shape + self.event_shape * 2)

    @property
    def scale_tril(self) -> Tensor:
        d_sqrt = _ops.expand_dims(_ops.sqrt(self._d), axis=-1)
        w = self._w / d_sqrt
        k = _ops.matmul(w, _ops.matrix_transpose(w))
        k = k + _f.eye(self.event_shape[0], dtype=k.dtype, backend=k.backend)
        return self._matrix(d_sqrt * _la.cholesky(k))

    @property
    def covariance_matrix(self) -> Tensor:
        cov = _ops.matmul(self._w, _ops.matrix_transpose(self._w)) + _ops.diag_embed(self._d)
        return self._matrix(cov)

    @property
    def precision_matrix(self) -> Tensor:
        wt_dinv = _ops.matrix_transpose(self._w) / _ops.expand_dims(self._d, axis=-2)
        a = tril_solve_matrix(self._capacitance_tril, wt_dinv)
        prec = _ops.diag_embed(1 / self._d) - _ops.matmul(_ops.matrix_transpose(a), a)
        return self._matrix(prec)

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        shape = self._shape(sample_shape)
        dtype, backend = self.loc.dtype, self.loc.backend
        eps_w = _f.randn(shape[:-1] + tuple(self._w.shape[-1:]), dtype=dtype, backend=backend)
        eps_d = _f.randn(shape, dtype=dtype, backend=backend)
        return (self.loc + _ops.matmul(self._w, _ops.expand_dims(eps_w, axis=-1))[..., 0]
                + _ops.sqrt(self._d) * eps_d)

    def _log_det(self) -> Tensor:
        return lowrank_logdet(self._w, self._d, self._capacitance_tril)

    def log_prob(self, value: Tensor) -> Tensor:
        m = lowrank_mahalanobis(self._w, self._d, value - self.loc, self._capacitance_tril)
        return -0.5 * (self.event_shape[0] * LOG_2PI + self._log_det() + m)

    def entropy(self) -> Tensor:
        h = 0.5 * (self.event_shape[0] * (1.0 + LOG_2PI) + self._log_det())
        return _ops.broadcast_to(h, self.batch_shape)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        var = _ops.sum(self._w ** 2, axis=-1) + self._d
        return _ops.broadcast_to(var, self.batch_shape + self.event_shape)

