"""``lgamma``, ``digamma`` and ``xlogy`` as the distributions use them: the first two are
xad's primitives (:func:`xad.lgamma`, :func:`xad.digamma`: the library's own function on
each backend, every order differentiable)."""

from __future__ import annotations

from .. import ops as _ops
from ..tensor import Tensor

__all__ = ["lgamma", "digamma", "xlogy"]


def lgamma(x: Tensor) -> Tensor:
    """``log |Gamma(x)|``, differentiable (:func:`xad.lgamma`).

    Example:
        >>> import xad
        >>> from xad.distributions.special import lgamma
        >>> round(lgamma(xad.tensor([5.0], dtype=xad.float64)).item(), 12)  # log 4!
        3.178053830348
    """
    return _ops.lgamma(x)


def digamma(x: Tensor) -> Tensor:
    """The logarithmic derivative of Gamma, ``d lgamma(x)/dx``, differentiable
    (:func:`xad.digamma`).

    Example:
        >>> import xad
        >>> from xad.distributions.special import digamma
        >>> round(digamma(xad.tensor([1.0], dtype=xad.float64)).item(), 12)  # -Euler's gamma
        -0.577215664902
    """
    return _ops.digamma(x)


def xlogy(x: Tensor, y: Tensor) -> Tensor:
    """``x * log(y)``, ``0`` where ``x == 0`` (``0 log 0 = 0``, and ``0 log inf = 0``, so a
    Gamma's ``log_prob`` at ``inf`` is ``-inf``): :func:`xad.xlogy`, PyTorch's, with its
    gradients (``log y`` in ``x``, no NaN at ``x == y == 0``).

    Example:
        >>> import xad
        >>> from xad.distributions.special import xlogy
        >>> xlogy(xad.tensor([0.0, 2.0]), xad.tensor([0.0, 1.0])).tolist()
        [0.0, 0.0]
    """
    return _ops.xlogy(x, y)
