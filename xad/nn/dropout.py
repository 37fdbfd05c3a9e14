"""``Dropout``, the channel-wise ``Dropout1d``/``Dropout2d``/``Dropout3d``, and
``AlphaDropout`` and ``FeatureAlphaDropout``."""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]


class Dropout(Module):
    """In training, zero each element with probability ``p`` and scale the rest by
    ``1/(1-p)``; in eval mode, the identity (``inplace=True``: written into the input, as
    PyTorch's). Masks come from the input's backend's seeded
    generator (so ``xad.manual_seed`` and a restored RNG state reproduce them).

    Example:
        >>> import xad
        >>> d = xad.nn.Dropout(0.5); y = d(xad.ones(1000))
        >>> sorted(set(y.tolist())), d.eval()(xad.ones(2)).tolist()
        ([0.0, 2.0], [1.0, 1.0])
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout(x, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout2d(Dropout):
    """In training, zero whole channels of ``(N, C, H, W)`` input with probability ``p`` and
    scale the rest by ``1/(1-p)``; in eval mode, the identity.

    Example:
        >>> import xad
        >>> d = xad.nn.Dropout2d(0.5); y = d(xad.ones(1, 8, 2, 2))
        >>> sorted(set(y.tolist()[0][0][0])) in ([0.0], [2.0])
        True
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout2d(x, self.p, self.training, self.inplace)


class Dropout1d(Dropout):
    """In training, zero whole channels of ``(N, C, L)`` (or ``(C, L)``) input with
    probability ``p`` and scale the rest by ``1/(1-p)``; in eval mode, the identity.

    Example:
        >>> import xad
        >>> y = xad.nn.Dropout1d(0.5)(xad.ones(1, 8, 3))
        >>> sorted(set(y.tolist()[0][0])) in ([0.0], [2.0])
        True
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout1d(x, self.p, self.training, self.inplace)


class Dropout3d(Dropout):
    """In training, zero whole channels of ``(N, C, D, H, W)`` (or ``(C, D, H, W)``) input
    with probability ``p`` and scale the rest by ``1/(1-p)``; in eval mode, the identity.

    Example:
        >>> import xad
        >>> xad.nn.Dropout3d(0.5).eval()(xad.ones(1, 2, 1, 1, 1)).flatten().tolist()
        [1.0, 1.0]
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.dropout3d(x, self.p, self.training, self.inplace)


class AlphaDropout(Dropout):
    """In training, :func:`xad.nn.functional.alpha_dropout` (dropout that keeps the mean and
    variance of SELU activations); in eval mode, the identity.

    Example:
        >>> import xad
        >>> xad.nn.AlphaDropout(0.2).eval()(xad.ones(2)).tolist()
        [1.0, 1.0]
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.alpha_dropout(x, self.p, self.training, self.inplace)


class FeatureAlphaDropout(Dropout):
    """In training, :func:`xad.nn.functional.feature_alpha_dropout` (alpha dropout of whole
    channels of ``(N, C, ...)`` input); in eval mode, the identity.

    Example:
        >>> import xad
        >>> xad.nn.FeatureAlphaDropout(0.2).eval()(xad.ones(1, 2)).tolist()
        [[1.0, 1.0]]
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.feature_alpha_dropout(x, self.p, self.training, self.inplace)
