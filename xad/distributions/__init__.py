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

from . import (
    constraint_registry,
    constraints,
    transformed_kl,  # noqa: F401  (registers the transformed families' KL pairs)
    transforms,
)
from . import kl_families as _kl_families  # noqa: F401  (registers their KL pairs)
from . import kl_gumbel_pareto as _kl_gumbel_pareto  # noqa: F401
from . import kl_lowrank as _kl_lowrank  # noqa: F401
from . import kl_uniform as _kl_uniform  # noqa: F401
from .categorical import Bernoulli, Categorical
from .chi2 import Chi2, FisherSnedecor, StudentT
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .counts import Binomial, Geometric, NegativeBinomial, Poisson
from .distribution import Distribution
from .exponential import Exponential, GeneralizedPareto
from .gamma import Beta, Dirichlet, Gamma
from .gumbel_weibull_pareto import Gumbel, Pareto, Weibull
from .half_distributions import HalfCauchy, HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .location_scale import Cauchy, Laplace
from .log_normal import LogisticNormal, LogNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .normal import Normal, Uniform
from .one_hot import Multinomial, OneHotCategorical, OneHotCategoricalStraightThrough
from .relaxed import (
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F403  (PyTorch exports every transform here too)
from .von_mises import VonMises

__all__ = ["Distribution", "Normal", "Uniform", "Categorical", "Bernoulli", "Gamma", "Beta",
           "Dirichlet", "MultivariateNormal", "Independent", "kl_divergence", "register_kl",
           "constraints", "constraint_registry", "transforms", "biject_to", "transform_to",
           "TransformedDistribution", "LogNormal", "LogisticNormal", "HalfNormal",
           "HalfCauchy", "Gumbel", "Weibull", "Pareto", "InverseGamma", "Kumaraswamy",
           "RelaxedBernoulli", "LogitRelaxedBernoulli", "RelaxedOneHotCategorical",
           "ExpRelaxedCategorical", "Exponential", "Laplace", "Cauchy", "StudentT", "Chi2",
           "FisherSnedecor", "Poisson", "Binomial", "Geometric", "NegativeBinomial",
           "Multinomial", "OneHotCategorical", "OneHotCategoricalStraightThrough",
           "ContinuousBernoulli", "VonMises", "GeneralizedPareto", "LowRankMultivariateNormal",
           "MixtureSameFamily", *transforms.__all__]
