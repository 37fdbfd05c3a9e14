"""``Transform`` (PyTorch's base: calling, inverse, log-determinant, caching) and the
transforms that rearrange others: its inverse, ``ComposeTransform``,
``IndependentTransform`` and ``ReshapeTransform``."""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from typing import Any

from .. import factories as _f
from .. import ops as _ops
from ..tensor import Tensor
from . import constraints

__all__ = ["Transform", "ComposeTransform", "IndependentTransform", "ReshapeTransform",
           "identity_transform", "sum_rightmost"]


def sum_rightmost(x: Any, n: int) -> Any:
    """``x`` summed over its ``n`` rightmost dimensions (none when ``n <= 0``)."""
    return _ops.sum(x, axis=tuple(range(-n, 0))) if n > 0 else x


class Transform:
    """An invertible (or not) map ``y = t(x)`` with ``log |dy/dx|``, as PyTorch's.

    ``cache_size=1`` keeps the last ``(x, y)`` pair: ``t.inv(t(x))`` then returns ``x``
    itself (exactly, without computing the inverse).

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import ExpTransform
        >>> t = ExpTransform(cache_size=1)
        >>> x = xad.tensor([0.0, 1.0])
        >>> y = t(x)
        >>> [round(v, 4) for v in y.tolist()], t.inv(y) is x
        ([1.0, 2.7183], True)
    """

    bijective = False
    domain: constraints.Constraint
    codomain: constraints.Constraint

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError(f"{type(self).__name__}: cache_size must be 0 or 1, found "
                             f"{cache_size}")
        self._cache_size = cache_size
        self._inv: Any = None
        self._cached_x_y: tuple[Any, Any] = (None, None)

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> Transform:
        """The inverse transform (one object per transform while it lives)."""
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = weakref.ref(inv)
        return inv

    @property
    def sign(self) -> Any:
        """The sign of the derivative, for a monotone elementwise transform."""
        raise NotImplementedError(f"{type(self).__name__}.sign")

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self).__name__}.with_cache is not implemented")

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = object.__hash__

    def __call__(self, x: Tensor) -> Tensor:
        return self._through_cache(x, forward=True)

    def _inv_call(self, y: Tensor) -> Tensor:
        return self._through_cache(y, forward=False)

    def _through_cache(self, value: Tensor, forward: bool) -> Tensor:
        """``_call(value)`` (or ``_inverse``), or the other end of the cached pair when
        ``value`` is the object cached at this end."""
        compute = self._call if forward else self._inverse
        if self._cache_size == 0:
            return compute(value)
        pair = self._cached_x_y if forward else self._cached_x_y[::-1]
        if value is pair[0]:
            return pair[1]
        out = compute(value)
        self._cached_x_y = (value, out) if forward else (out, value)
        return out

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}: no forward map")

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}: no inverse")

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """``log |det dy/dx|``, summed over the transform's event dimensions."""
        raise NotImplementedError(f"{type(self).__name__}.log_abs_det_jacobian")

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The shape of ``t(x)`` for ``x`` of ``shape``."""
        return tuple(shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The shape of ``t.inv(y)`` for ``y`` of ``shape``."""
        return tuple(shape)

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """``transform.inv``: the same map read backwards."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._inv.codomain

    @property
    def codomain(self) -> constraints.Constraint:  # type: ignore[override]
        return self._inv.domain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self._inv.bijective

    @property
    def sign(self) -> Any:
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._inv!r})"

    def __call__(self, x: Tensor) -> Tensor:
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self._inv.forward_shape(shape)


def _compose_event_dim(parts: Sequence[Transform], forward: bool) -> constraints.Constraint:
    """The domain (``forward=False``) or codomain of a composition: the end part's, made
    independent over the largest event dimension any part needs."""
    if not parts:
        return constraints.real
    seq = list(parts) if forward else list(reversed(parts))
    ends = [(p.codomain, p.domain) if forward else (p.domain, p.codomain) for p in seq]
    result = ends[-1][0]
    event_dim = ends[0][1].event_dim
    for out, inp in ends:
        event_dim = max(event_dim + out.event_dim - inp.event_dim, out.event_dim)
    if event_dim > result.event_dim:
        result = constraints.independent(result, event_dim - result.event_dim)
    return result


class ComposeTransform(Transform):
    """The transforms ``parts`` applied in order.

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import AffineTransform, ComposeTransform
        >>> from xad.distributions.transforms import ExpTransform
        >>> t = ComposeTransform([ExpTransform(), AffineTransform(1.0, 2.0)])
        >>> x = xad.tensor([0.0])
        >>> t(x).tolist(), [round(v, 4) for v in t.log_abs_det_jacobian(x, t(x)).tolist()]
        ([3.0], [0.6931])
    """

    def __init__(self, parts: Sequence[Transform], cache_size: int = 0) -> None:
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        return _compose_event_dim(self.parts, forward=False)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        return _compose_event_dim(self.parts, forward=True)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(p.bijective for p in self.parts)

    @property
    def sign(self) -> Any:
        sign: Any = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self) -> Transform:
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = weakref.ref(inv)
            inv._inv = weakref.ref(self)
        return inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x: Tensor) -> Tensor:
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if not self.parts:
            return _f.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        total: Any = 0
        event_dim = self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            term = part.log_abs_det_jacobian(a, b)
            total = total + sum_rightmost(term, event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return tuple(shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return tuple(shape)

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """``base_transform`` with its last ``reinterpreted_batch_ndims`` batch dimensions made
    event dimensions: ``log_abs_det_jacobian`` sums over them.

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import ExpTransform, IndependentTransform
        >>> t = IndependentTransform(ExpTransform(), 1)
        >>> x = xad.ones(2, 3)
        >>> t.log_abs_det_jacobian(x, t(x)).tolist(), t.event_dim
        ([3.0, 3.0], 1)
    """

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int,
                 cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self.base_transform.bijective

    @property
    def sign(self) -> Any:
        return self.base_transform.sign

    def _call(self, x: Tensor) -> Tensor:
        if x.ndim < self.domain.event_dim:
            raise ValueError(f"IndependentTransform: too few dimensions on input: "
                             f"{x.shape}, needs {self.domain.event_dim}")
        return self.base_transform(x)

    def _inverse(self, y: Tensor) -> Tensor:
        if y.ndim < self.codomain.event_dim:
            raise ValueError(f"IndependentTransform: too few dimensions on input: "
                             f"{y.shape}, needs {self.codomain.event_dim}")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                             self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.base_transform!r}, "
                f"{self.reinterpreted_batch_ndims})")

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """Reshapes the rightmost dimensions from ``in_shape`` to ``out_shape``.

    Example:
        >>> import xad
        >>> from xad.distributions.transforms import ReshapeTransform
        >>> ReshapeTransform((2, 3), (6,))(xad.zeros(4, 2, 3)).shape
        (4, 6)
    """

    bijective = True

    def __init__(self, in_shape: Sequence[int], out_shape: Sequence[int],
                 cache_size: int = 0) -> None:
        self.in_shape, self.out_shape = tuple(in_shape), tuple(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError(f"ReshapeTransform: in_shape {self.in_shape} and out_shape "
                             f"{self.out_shape} have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        batch = x.shape[:x.ndim - len(self.in_shape)]
        return _ops.reshape(x, batch + self.out_shape)

    def _inverse(self, y: Tensor) -> Tensor:
        batch = y.shape[:y.ndim - len(self.out_shape)]
        return _ops.reshape(y, batch + self.in_shape)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        batch = x.shape[:x.ndim - len(self.in_shape)]
        return _f.zeros(batch, dtype=x.dtype, backend=x.backend)

    def _swap(self, shape: Sequence[int], a: tuple[int, ...], b: tuple[int, ...]
              ) -> tuple[int, ...]:
        if len(shape) < len(a):
            raise ValueError(f"ReshapeTransform: too few dimensions on input: {tuple(shape)}")
        cut = len(shape) - len(a)
        if tuple(shape[cut:]) != a:
            raise ValueError(f"ReshapeTransform: shape mismatch: expected {a} but got "
                             f"{tuple(shape[cut:])}")
        return tuple(shape[:cut]) + b

    def forward_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self._swap(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return self._swap(shape, self.out_shape, self.in_shape)
