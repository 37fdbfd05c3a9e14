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

# the families PyTorch has beyond the first ones, and their KL pairs
from . import kl_families as _kl_families  # noqa: E402, F401  (registers their KL pairs)
from . import kl_lowrank as _kl_lowrank  # noqa: E402, F401
from . import kl_uniform as _kl_uniform  # noqa: E402, F401
from .chi2 import Chi2, FisherSnedecor, StudentT  # noqa: E402
from .continuous_bernoulli import ContinuousBernoulli  # noqa: E402
from .counts import Binomial, Geometric, NegativeBinomial, Poisson  # noqa: E402
from .exponential import Exponential, GeneralizedPareto  # noqa: E402
from .location_scale import Cauchy, Laplace  # noqa: E402
from .lowrank_multivariate_normal import LowRankMultivariateNormal  # noqa: E402
from .mixture_same_family import MixtureSameFamily  # noqa: E402
from .one_hot import Multinomial, OneHotCategorical, OneHotCategoricalStraightThrough  # noqa: E402
from .von_mises import VonMises  # noqa: E402

__all__ += ["Exponential", "Laplace", "Cauchy", "StudentT", "Chi2", "FisherSnedecor",
            "Poisson", "Binomial", "Geometric", "NegativeBinomial", "Multinomial",
            "OneHotCategorical", "OneHotCategoricalStraightThrough", "ContinuousBernoulli",
            "VonMises", "GeneralizedPareto", "LowRankMultivariateNormal", "MixtureSameFamily"]
