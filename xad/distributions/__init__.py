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
