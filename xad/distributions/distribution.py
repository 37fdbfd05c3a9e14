"""The ``Distribution`` base class (PyTorch's interface) and parameter broadcasting."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

from .. import dtypes as _dt
from .. import factories as _f
from .. import ops as _ops
from ..grad_mode import no_grad
from ..tensor import Tensor

__all__ = ["Distribution", "broadcast_all", "broadcast_shapes", "Shape"]

Shape = Sequence[int]


def broadcast_shapes(*shapes: Shape) -> tuple[int, ...]:
    """The shape that ``shapes`` broadcast to (NumPy's rules)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for dims in zip(*[(1,) * (ndim - len(s)) + tuple(s) for s in shapes]):
        big = {d for d in dims if d != 1}
        if len(big) > 1:
            raise ValueError(f"shapes {[tuple(s) for s in shapes]} do not broadcast")
        out.append(big.pop() if big else 1)
    return tuple(out)


def broadcast_all(*values: Any) -> list[Tensor]:
    """Parameters as tensors of one broadcast shape; Python numbers take the dtype of the
    tensors among them (the default float dtype when there are none), as PyTorch's."""
    like = next((v for v in values if isinstance(v, Tensor)), None)
    dtype = like.dtype if like is not None and like.dtype.is_floating else _dt.get_default_dtype()
    backend = like.backend if like is not None else None
    ts = [v if isinstance(v, Tensor) else _f.tensor(float(v), dtype=dtype, backend=backend)
          for v in values]
    return _ops.broadcast_arrays(*ts) if len(ts) > 1 else ts


class Distribution:
    """A batch of probability distributions: ``batch_shape`` independent ones, each over
    values of ``event_shape``. ``sample``/``rsample`` take a ``sample_shape`` that is
    prepended; ``rsample`` is differentiable with respect to the parameters.

    ``validate_args`` is accepted for PyTorch's signature; xad does not check parameters
    or values against their support (that would read device data on the host).
    """

    has_rsample = False
    arg_constraints: dict[str, Any] = {}
    support: Any = None
    _validate_args = False
    _expand_params: tuple[str, ...] = ()  # the tensors that ``expand`` broadcasts
    _expand_dists: tuple[str, ...] = ()  # the inner distributions that ``expand`` expands

    def __init__(self, batch_shape: Shape = (), event_shape: Shape = (),
                 validate_args: bool | None = None) -> None:
        self.batch_shape = tuple(batch_shape)
        self.event_shape = tuple(event_shape)

    def expand(self, batch_shape: Shape, _instance: Distribution | None = None
               ) -> Distribution:
        """The same distribution broadcast to ``batch_shape`` (PyTorch's: parameters are
        broadcast, not copied; a size-1 or missing batch dimension may grow).

        Example:
            >>> import xad
            >>> d = xad.distributions.Normal(xad.tensor([0.0]), 1.0).expand((3, 2))
            >>> d.batch_shape, d.sample().shape
            ((3, 2), (3, 2))
        """
        batch_shape = tuple(batch_shape)
        new = copy.copy(self) if _instance is None else _instance
        old = len(self.batch_shape)
        tail = batch_shape[len(batch_shape) - old:] if old else ()
        if len(batch_shape) < old or any(a not in (1, b)
                                         for a, b in zip(self.batch_shape, tail)):
            raise ValueError(f"{type(self).__name__}.expand: batch shape {self.batch_shape} "
                             f"cannot be expanded to {batch_shape}")
        for name in self._expand_params:
            p = getattr(self, name)
            setattr(new, name, _ops.broadcast_to(p, batch_shape + tuple(p.shape[old:])))
        for name in self._expand_dists:
            d = getattr(self, name)
            setattr(new, name, d.expand(batch_shape + d.batch_shape[old:]))
        new.batch_shape = batch_shape
        return new

    def _shape(self, sample_shape: Shape = ()) -> tuple[int, ...]:
        return tuple(sample_shape) + self.batch_shape + self.event_shape

    def sample(self, sample_shape: Shape = ()) -> Tensor:
        """Draws of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Shape = ()) -> Tensor:
        """Reparameterised draws: gradients flow to the parameters."""
        raise NotImplementedError(f"{type(self).__name__}.rsample: xad has no reparameterised "
                                  f"sampler for this distribution; use sample() (no gradient)")

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.log_prob")

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.cdf")

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.icdf")

    def entropy(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.entropy")

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.mean")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.variance")

    @property
    def stddev(self) -> Tensor:
        return _ops.sqrt(self.variance)

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.mode")

    def perplexity(self) -> Tensor:
        """``exp(entropy)``."""
        return _ops.exp(self.entropy())

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(batch_shape={self.batch_shape}, "
                f"event_shape={self.event_shape})")


LOG_2PI = math.log(2 * math.pi)
