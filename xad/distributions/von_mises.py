"""``VonMises``: the circular normal distribution, sampled by Best and Fisher's rejection
method with every proposal drawn at once (no host-side loop)."""

from __future__ import annotations

import math
from typing import Any

from .. import dtypes as _dt
from .. import factories as _f
from .. import ops as _ops
from ..grad_mode import no_grad
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution, Shape, broadcast_all

__all__ = ["VonMises"]

_ROUNDS = 40  # each proposal is accepted with probability above 0.65: 0.35^40 < 1e-18


def _log_i0(x: Tensor) -> Tensor:
    """``log I0(x)`` for ``x >= 0``, through the scaled Bessel function (no overflow)."""
    return _ops.log(_ops.i0e(x)) + x


def _proposal_r(kappa: Tensor) -> Tensor:
    tau = 1 + _ops.sqrt(1 + 4 * kappa ** 2)
    rho = (tau - _ops.sqrt(2 * tau)) / (2 * kappa)
    return _ops.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))


def _von_mises_draws(loc: Tensor, kappa: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Draws in ``[-pi, pi)`` about ``loc``, computed in float64 (PyTorch's: float32 needs
    far more proposals for small ``kappa``)."""
    loc, kappa = _ops.astype(loc, _dt.float64), _ops.astype(kappa, _dt.float64)
    r = _proposal_r(kappa)
    u = _f.rand((3, _ROUNDS) + shape, dtype=_dt.float64, backend=loc.backend)
    u1, u2, u3 = u[0], u[1], u[2]
    z = _ops.cos(math.pi * u1)
    f = (1 + r * z) / (r + z)
    c = kappa * (r - f)
    accept = ((c * (2 - c) - u2) > 0) | (_ops.log(c / u2) + 1 - c >= 0)
    first = _ops.argmax(_ops.astype(accept, _dt.int32), axis=0, keepdims=True)
    x = _ops.take_along_axis(_ops.sign(u3 - 0.5) * _ops.acos(_ops.clip(f, -1.0, 1.0)), first,
                             axis=0)[0]
    return _ops.remainder(x + math.pi + loc, 2 * math.pi) - math.pi


class VonMises(Distribution):
    """The von Mises distribution on the circle: mean angle ``loc`` (radians; values are
    angles modulo ``2 pi``) and ``concentration``. ``mean`` and ``variance`` are the
    circular ones.

    Example:
        >>> import xad
        >>> d = xad.distributions.VonMises(xad.tensor(0.0), xad.tensor(1.0))
        >>> round(d.log_prob(xad.tensor(0.0)).item(), 4), round(d.variance.item(), 4)
        (-1.0738, 0.5536)
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    _expand_params = ("loc", "concentration")

    def __init__(self, loc: Any, concentration: Any, validate_args: bool | None = None
                 ) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape)

    def sample(self, sample_shape: Shape = ()) -> Tensor:
        with no_grad():
            shape = self._shape(sample_shape)
            x = _von_mises_draws(_ops.broadcast_to(self.loc, shape),
                                 _ops.broadcast_to(self.concentration, shape), shape)
            return _ops.astype(x, self.loc.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        k = self.concentration
        return k * _ops.cos(value - self.loc) - math.log(2 * math.pi) - _log_i0(k)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        k = self.concentration
        return 1 - _ops.i1e(k) / _ops.i0e(k)
