"""``xad.distributions``: PyTorch's ``torch.distributions`` interface (``sample``,
``rsample``, ``log_prob``, ``entropy``, ``mean``, ``variance``, ``kl_divergence``).

Example:
    >>> import xad
    >>> from xad.distributions import Normal
    >>> loc = xad.tensor([0.5], requires_grad=True)
    >>> Normal(loc, 1.0).log_prob(xad.tensor([1.5])).sum().backward()
    >>> loc.grad.tolist()
    [1.0]
"""

from .categorical import Bernoulli, Categorical
from .distribution import Distribution
from .gamma import Beta, Dirichlet, Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal, Uniform

__all__ = ["Distribution", "Normal", "Uniform", "Categorical", "Bernoulli", "Gamma", "Beta",
           "Dirichlet", "MultivariateNormal", "Independent", "kl_divergence", "register_kl"]

from . import constraint_registry, constraints, transforms
from .constraint_registry import biject_to, transform_to
from .gumbel_weibull_pareto import Gumbel, Pareto, Weibull
from .half_distributions import HalfCauchy, HalfNormal
from .inverse_gamma import InverseGamma
from .kumaraswamy import Kumaraswamy
from .log_normal import LogisticNormal, LogNormal
from .relaxed import (
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F403  (PyTorch exports every transform here too)

__all__ += ["constraints", "constraint_registry", "transforms", "biject_to", "transform_to",
            "TransformedDistribution", "LogNormal", "LogisticNormal", "HalfNormal",
            "HalfCauchy", "Gumbel", "Weibull", "Pareto", "InverseGamma", "Kumaraswamy",
            "RelaxedBernoulli", "LogitRelaxedBernoulli", "RelaxedOneHotCategorical",
            "ExpRelaxedCategorical", *transforms.__all__]
from . import transformed_kl  # noqa: E402, F401  (registers the transformed families' KL pairs)
