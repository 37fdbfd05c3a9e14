"""Transforms applied to parts of a tensor (PyTorch's): ``CatTransform`` (consecutive
slices along a dimension) and ``StackTransform`` (each index of a dimension)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .. import ops as _ops
from ..tensor import Tensor
from . import constraints
from .constraints import _axis_slices, cat_lengths
from .transform import Transform, sum_rightmost

__all__ = ["CatTransform", "StackTransform"]


def _parts(what: str, tseq: Sequence[Transform], cache_size: int) -> list[Transform]:
    if not all(isinstance(t, Transform) for t in tseq):
        raise TypeError(f"{what}: every part must be a Transform")
    return [t.with_cache(cache_size) for t in tseq] if cache_size else list(tseq)


class CatTransform(Transform):
    """``tseq[i]`` applied to the ``i``-th slice (``lengths[i]`` long, 1 by default) along
    ``dim``; the results concatenated.

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import CatTransform, ExpTransform
        >>> from xad.distributions.transforms import identity_transform
        >>> t = CatTransform([ExpTransform(), identity_transform], dim=0, lengths=[1, 2])
        >>> t(xad.zeros(3)).tolist()
        [1.0, 0.0, 0.0]
    """

    def __init__(self, tseq: Sequence[Transform], dim: int = 0,
                 lengths: Sequence[int] | None = None, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.transforms, self.dim = _parts("CatTransform", tseq, cache_size), dim
        self.lengths = cat_lengths("CatTransform", len(self.transforms), lengths)

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else CatTransform(
    self.transforms, self.dim, self.lengths, cache_size)

    def _slices(self, x: Tensor) -> list[Tensor]:
        if not -x.ndim <= self.dim < x.ndim or x.shape[self.dim] != self.length:
            raise ValueError(f"CatTransform: input of shape {x.shape} needs {self.length} "
                             f"entries along dim={self.dim}")
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        return _axis_slices(x, self.dim, starts, self.lengths)

    def _map(self, x: Tensor, fn: Callable[[Transform, Tensor], Tensor]) -> Tensor:
        return _ops.concat([fn(t, v) for t, v in zip(self.transforms, self._slices(x))],
                           axis=self.dim)

    def _call(self, x: Tensor) -> Tensor:
        return self._map(x, lambda t, v: t(v))

    def _inverse(self, y: Tensor) -> Tensor:
        return self._map(y, lambda t, v: t.inv(v))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        terms = []
        for t, xs, ys in zip(self.transforms, self._slices(x), self._slices(y)):
            terms.append(sum_rightmost(t.log_abs_det_jacobian(xs, ys),
                                       self.event_dim - t.event_dim))
        dim = (self.dim - x.ndim if self.dim >= 0 else self.dim) + self.event_dim
        if dim < 0:
            return _ops.concat(terms, axis=dim)
        return sum(terms[1:], terms[0])

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """``tseq[i]`` applied to ``x.select(dim, i)``; the results stacked.

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import ExpTransform, StackTransform
        >>> from xad.distributions.transforms import identity_transform
        >>> StackTransform([ExpTransform(), identity_transform], dim=1)(xad.zeros(1, 2)).tolist()
        [[1.0, 0.0]]
    """

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.transforms, self.dim = _parts("StackTransform", tseq, cache_size), dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else StackTransform(
    self.transforms, self.dim, cache_size)

    def _slices(self, z: Tensor) -> list[Tensor]:
        if not -z.ndim <= self.dim < z.ndim or z.shape[self.dim] != len(self.transforms):
            raise ValueError(f"StackTransform: input of shape {z.shape} needs "
                             f"{len(self.transforms)} entries along dim={self.dim}")
        n = z.shape[self.dim]
        return [_ops.squeeze(v, axis=self.dim % z.ndim)
                for v in _axis_slices(z, self.dim, range(n), [1] * n)]

    def _map(self, fn: Callable[..., Tensor], *zs: Tensor) -> Tensor:
        parts = zip(self.transforms, *[self._slices(z) for z in zs])
        return _ops.stack([fn(t, *vs) for t, *vs in parts], axis=self.dim)

    def _call(self, x: Tensor) -> Tensor:
        return self._map(lambda t, v: t(v), x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self._map(lambda t, v: t.inv(v), y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self._map(lambda t, a, b: t.log_abs_det_jacobian(a, b), x, y)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self) -> constraints.Constraint:
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self) -> constraints.Constraint:
        return constraints.stack([t.codomain for t in self.transforms], self.dim)

