"""``kl_divergence`` for the transformed families (PyTorch's pairs): two distributions that
push their bases through the same transforms, and ``Gumbel`` pairs."""

from __future__ import annotations

from .. import ops as _ops
from ..tensor import Tensor
from .gumbel_weibull_pareto import EULER_CONSTANT, Gumbel
from .kl import kl_divergence, register_kl
from .transformed_distribution import TransformedDistribution

__all__: list[str] = []


@register_kl(TransformedDistribution, TransformedDistribution)
def _transformed_transformed(p: TransformedDistribution, q: TransformedDistribution
                             ) -> Tensor:
    """The bases' KL, when both push them through equal transforms (``LogNormal``,
    ``HalfNormal``, ...)."""
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError(f"kl_divergence: {type(p).__name__} and "
                                  f"{type(q).__name__} with different transforms or event "
                                  f"shapes have no closed form")
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Gumbel, Gumbel)
def _gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    t3 = _ops.exp(ct2 + _ops.lgamma(1 + ct1) - ct3)
    return -_ops.log(ct1) - ct2 + ct3 + ct1 * EULER_CONSTANT + t3 - (1 + EULER_CONSTANT)
