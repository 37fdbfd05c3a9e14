"""``kl_divergence`` between ``LowRankMultivariateNormal`` and ``MultivariateNormal``
(either way round, and low-rank to low-rank): PyTorch's formulas, through the Woodbury
identity so that no ``n x n`` covariance is inverted."""

from __future__ import annotations

from .. import linalg as _la
from .. import ops as _ops
from ..tensor import Tensor
from .kl import register_kl
from .lowrank_multivariate_normal import (
    LowRankMultivariateNormal,
    lowrank_logdet,
    lowrank_mahalanobis,
    trace_xxt,
    tril_solve_matrix,
)
from .multivariate_normal import MultivariateNormal, tril_solve

__all__: list[str] = []

Gaussian = LowRankMultivariateNormal | MultivariateNormal


def _check(p: Gaussian, q: Gaussian) -> None:
    if p.event_shape != q.event_shape:
        raise ValueError(f"kl_divergence: {type(p).__name__} of event shape {p.event_shape} "
                         f"and {type(q).__name__} of event shape {q.event_shape}: the event "
                         f"shapes must agree")


def _lowrank_terms(q: LowRankMultivariateNormal, p: Gaussian) -> tuple[Tensor, Tensor]:
    """``q``'s log-determinant plus the Mahalanobis term of ``p``'s mean, and
    ``A = L^-1 W^T D^-1`` (``L``: ``q``'s capacitance factor)."""
    w, d, cap = q._w, q._d, q._capacitance_tril
    head = lowrank_logdet(w, d, cap) + lowrank_mahalanobis(w, d, q.loc - p.loc, cap)
    a = tril_solve_matrix(cap, _ops.matrix_transpose(w) / _ops.expand_dims(d, axis=-2))
    return head, a


def _half_log_det(p: MultivariateNormal) -> Tensor:
    return _ops.sum(_ops.log(_la.diagonal(p._tril)), axis=-1)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _lowrank_lowrank(p: LowRankMultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    _check(p, q)
    head, a = _lowrank_terms(q, p)
    term1 = head - lowrank_logdet(p._w, p._d, p._capacitance_tril)
    term2 = (_ops.sum(p._d / q._d, axis=-1)
             + trace_xxt(p._w * _ops.expand_dims(_ops.rsqrt(q._d), axis=-1))
             - trace_xxt(a * _ops.expand_dims(_ops.sqrt(p._d), axis=-2))
             - trace_xxt(_ops.matmul(a, p._w)))
    return 0.5 * (term1 + term2 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _full_lowrank(p: MultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    _check(p, q)
    head, a = _lowrank_terms(q, p)
    lp = p._tril  # as given (PyTorch's: its upper entries get gradients)
    term2 = (trace_xxt(lp * _ops.expand_dims(_ops.rsqrt(q._d), axis=-1))
             - trace_xxt(_ops.matmul(a, lp)))
    return 0.5 * (head - 2 * _half_log_det(p) + term2 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _lowrank_full(p: LowRankMultivariateNormal, q: MultivariateNormal) -> Tensor:
    _check(p, q)
    term1 = 2 * _half_log_det(q) - lowrank_logdet(p._w, p._d, p._capacitance_tril)
    z = tril_solve(q._tril, q.loc - p.loc)
    term2 = (trace_xxt(tril_solve_matrix(q._tril, p._w))
             + trace_xxt(tril_solve_matrix(q._tril, _ops.diag_embed(_ops.sqrt(p._d)))))
    return 0.5 * (term1 + term2 + _ops.sum(z * z, axis=-1) - p.event_shape[0])
