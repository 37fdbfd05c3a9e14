"""``transforms``: PyTorch's ``torch.distributions.transforms``, every transform by name.

Example:
    >>> import xad
    >>> from xad.distributions import transforms as T
    >>> t = T.ComposeTransform([T.AffineTransform(0.0, 2.0), T.TanhTransform()])
    >>> x = xad.tensor([0.1], dtype=xad.float64)
    >>> round(t.inv(t(x)).item(), 12), t.bijective
    (0.1, True)
"""

from .elementwise_transforms import (
    AbsTransform,
    AffineTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    SoftplusTransform,
    TanhTransform,
)
from .joined_transforms import CatTransform, StackTransform
from .matrix_transforms import (
    CorrCholeskyTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
)
from .simplex_transforms import SoftmaxTransform, StickBreakingTransform
from .transform import (
    ComposeTransform,
    IndependentTransform,
    ReshapeTransform,
    Transform,
    identity_transform,
)

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
           "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
           "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
           "SoftmaxTransform", "StackTransform", "StickBreakingTransform", "TanhTransform",
           "Transform", "identity_transform"]
