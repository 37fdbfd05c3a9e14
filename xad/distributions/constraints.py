"""``constraints``: PyTorch's sets of values (a distribution's ``support``, its
``arg_constraints``, a transform's ``domain`` and ``codomain``).

``check(value)`` returns a boolean tensor of the value's shape less the constraint's
``event_dim`` rightmost dimensions; it is computed on the value's device and never read on
the host (so, unlike PyTorch's, ``symmetric`` and the positive (semi)definite checks combine
their parts elementwise instead of stopping early).

Example:
    >>> import xad
    >>> from xad.distributions import constraints
    >>> constraints.positive.check(xad.tensor([-1.0, 2.0])).tolist()
    [False, True]
    >>> constraints.simplex.event_dim, constraints.interval(0.0, 2.0)
    (1, Interval(lower_bound=0.0, upper_bound=2.0))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import dtypes as _dt
from .. import factories as _f
from .. import linalg as _la
from .. import ops as _ops
from ..tensor import Tensor

__all__ = ["Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property",
           "greater_than", "greater_than_eq", "independent", "integer_interval", "interval",
           "half_open_interval", "is_dependent", "less_than", "lower_cholesky",
           "lower_triangular", "MixtureSameFamilyConstraint", "multinomial", "nonnegative",
           "nonnegative_integer", "one_hot",
           "positive", "positive_integer", "positive_semidefinite", "positive_definite", "real",
           "real_vector", "simplex", "square", "stack", "symmetric", "unit_interval"]


class Constraint:
    """A set of values: ``check(value)`` says, per event, whether ``value`` lies in it.

    Example:
        >>> import xad
        >>> from xad.distributions.constraints import real
        >>> real.check(xad.tensor([1.0, float("nan")])).tolist(), real.event_dim
        ([True, False], 0)
    """

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__}.check")

    def __repr__(self) -> str:
        return type(self).__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder for a constraint that depends on other values (``Uniform``'s support);
    it cannot be checked."""

    def __init__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented
                 ) -> None:
        self._is_discrete, self._event_dim = is_discrete, event_dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return bool(self._is_discrete)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return int(self._event_dim)

    def __call__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented
                 ) -> _Dependent:
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value: Tensor) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint: Any) -> bool:
    """Whether ``constraint`` is a :data:`dependent` placeholder.

    Example:
        >>> from xad.distributions import constraints
        >>> constraints.is_dependent(constraints.dependent), constraints.is_dependent(
        ...     constraints.real)
        (True, False)
    """
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property whose class-level value is a :data:`dependent` constraint (PyTorch's
    ``constraints.dependent_property``)."""

    def __init__(self, fn: Callable[..., Any] | None = None, *,
                 is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> None:
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn: Callable[..., Any]) -> _DependentProperty:  # type: ignore[override]
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


def _all_last(x: Tensor, n: int) -> Tensor:
    """``x`` reduced by ``all`` over its ``n`` rightmost dimensions."""
    return _ops.all(x, axis=tuple(range(-n, 0))) if n else x


class _OnBase(Constraint):
    """A constraint checked through ``base_constraint``, with ``_added_event_dims`` more
    event dimensions than it."""

    base_constraint: Constraint
    _added_event_dims = 0

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self._added_event_dims


class _IndependentConstraint(_OnBase):
    """``base_constraint`` with ``reinterpreted_batch_ndims`` more event dimensions."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        if not isinstance(base_constraint, Constraint) or not (
    isinstance(reinterpreted_batch_ndims, int) and reinterpreted_batch_ndims >= 0):
            raise TypeError(f"constraints.independent needs a Constraint and an int >= 0, "
                            f"found {base_constraint!r} and {reinterpreted_batch_ndims!r}")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = self._added_event_dims = reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        result = self.base_constraint.check(value)
        if result.ndim < self.reinterpreted_batch_ndims:
            raise ValueError(f"constraints.independent: expected value.dim() >= "
                             f"{self.event_dim} but got {value.ndim}")
        return _all_last(result, self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return (f"{type(self).__name__[1:]}({self.base_constraint!r}, "
                f"{self.reinterpreted_batch_ndims})")


class MixtureSameFamilyConstraint(_OnBase):
    """``base_constraint`` (a component's support) checked against every component: the
    rightmost batch dimension is added back, then reduced by ``all``.

    Example:
        >>> import xad
        >>> from xad.distributions import constraints
        >>> c = constraints.MixtureSameFamilyConstraint(constraints.positive)
        >>> c.check(xad.tensor([1.0, -1.0])).tolist(), c.event_dim
        ([True, False], 0)
    """

    def __init__(self, base_constraint: Constraint) -> None:
        if not isinstance(base_constraint, Constraint):
            raise TypeError(f"constraints.MixtureSameFamilyConstraint needs a Constraint, "
                            f"found {base_constraint!r}")
        self.base_constraint = base_constraint

    def check(self, value: Tensor) -> Tensor:
        if value.ndim < self.event_dim:
            raise ValueError(f"constraints.MixtureSameFamilyConstraint: expected value.dim() "
                             f">= {self.event_dim} but got {value.ndim}")
        result = self.base_constraint.check(_ops.expand_dims(value, axis=-1 - self.event_dim))
        keep = value.ndim - self.event_dim
        return _ops.all(_ops.reshape(result, tuple(result.shape[:keep]) + (-1,)), axis=-1)

    def __repr__(self) -> str:
        return f"MixtureSameFamilyConstraint({self.base_constraint!r})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete, event_dim = True, 1

    def check(self, value: Tensor) -> Tensor:
        boolean = _ops.all((value == 0) | (value == 1), axis=-1)
        return boolean & (_ops.sum(value, axis=-1) == 1)


class _Bounds(Constraint):
    """A constraint with bounds, shown as PyTorch shows them."""

    _names: tuple[str, ...] = ()

    def __repr__(self) -> str:
        args = ", ".join(f"{n}={getattr(self, n)}" for n in self._names)
        return f"{type(self).__name__[1:]}({args})"


def _is_integer(value: Tensor) -> Tensor:
    return value % 1 == 0


class _IntegerInterval(_Bounds):
    is_discrete, _names = True, ("lower_bound", "upper_bound")

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        return _is_integer(value) & (self.lower_bound <= value) & (value <= self.upper_bound)


class _IntegerLessThan(_Bounds):
    is_discrete, _names = True, ("upper_bound",)

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return _is_integer(value) & (value <= self.upper_bound)


class _IntegerGreaterThan(_Bounds):
    is_discrete, _names = True, ("lower_bound",)

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return _is_integer(value) & (value >= self.lower_bound)


class _Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        return value == value  # False for NaN


class _GreaterThan(_Bounds):
    _names = ("lower_bound",)

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return value > self.lower_bound


class _GreaterThanEq(_GreaterThan):
    def check(self, value: Tensor) -> Tensor:
        return value >= self.lower_bound


class _LessThan(_Bounds):
    _names = ("upper_bound",)

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return value < self.upper_bound


class _Interval(_Bounds):
    _names = ("lower_bound", "upper_bound")

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value <= self.upper_bound)


class _HalfOpenInterval(_Interval):
    def check(self, value: Tensor) -> Tensor:
        return (self.lower_bound <= value) & (value < self.upper_bound)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return (_ops.all(value >= 0, axis=-1)
                & (_ops.abs(_ops.sum(value, axis=-1) - 1) < 1e-6))


class _Multinomial(Constraint):
    is_discrete, event_dim = True, 1

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return _ops.all(value >= 0, axis=-1) & (_ops.sum(value, axis=-1) <= self.upper_bound)


def _lower(value: Tensor) -> Tensor:
    return _all_last(_ops.tril(value) == value, 2)


def _positive_diagonal(value: Tensor) -> Tensor:
    return _ops.all(_la.diagonal(value) > 0, axis=-1)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return _lower(value)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return _lower(value) & _positive_diagonal(value)


class _CorrCholesky(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        tol = _ops.finfo(value.dtype).eps * value.shape[-1] * 10
        norm = _la.vector_norm(value.detach(), axis=-1)
        unit_rows = _ops.all(_ops.abs(norm - 1.0) <= tol, axis=-1)
        return _lower(value) & _positive_diagonal(value) & unit_rows


class _Square(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return _f.full(value.shape[:-2], value.shape[-2] == value.shape[-1], dtype=_dt.bool_,
                       backend=value.backend)


class _Symmetric(_Square):
    def check(self, value: Tensor) -> Tensor:
        if value.shape[-2] != value.shape[-1]:
            return super().check(value)
        close = _ops.isclose(value, _ops.matrix_transpose(value), atol=1e-6)
        return _all_last(close, 2)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value: Tensor) -> Tensor:
        symmetric = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return symmetric
        return symmetric & _ops.all(_la.eigvalsh(value) >= 0, axis=-1)


class _PositiveDefinite(_Symmetric):
    def check(self, value: Tensor) -> Tensor:
        symmetric = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return symmetric
        return symmetric & _ops.all(_la.eigvalsh(value) > 0, axis=-1)


def _axis_slices(value: Tensor, dim: int, starts: Sequence[int], lengths: Sequence[int]
                 ) -> list[Tensor]:
    """The slices ``[start, start + length)`` of ``value`` along ``dim``."""
    if not -value.ndim <= dim < value.ndim:
        raise ValueError(f"dim={dim} is out of range for a value of shape {value.shape}")
    dim = dim % value.ndim
    lead = (slice(None),) * dim
    return [value[lead + (slice(s, s + n),)] for s, n in zip(starts, lengths)]


def cat_lengths(what: str, n: int, lengths: Sequence[int] | None) -> list[int]:
    """The slice lengths of a concatenation of ``n`` parts: ones by default."""
    out = [1] * n if lengths is None else list(lengths)
    if len(out) != n:
        raise ValueError(f"{what}: {n} parts but {len(out)} lengths")
    return out


class _Cat(Constraint):
    """The constraints ``cseq`` applied to consecutive slices (of ``lengths``) along ``dim``."""

    def __init__(self, cseq: Sequence[Constraint], dim: int = 0,
                 lengths: Sequence[int] | None = None) -> None:
        self.cseq, self.dim = list(cseq), dim
        self.lengths = cat_lengths("constraints.cat", len(self.cseq), lengths)

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(c.event_dim for c in self.cseq)

    def check(self, value: Tensor) -> Tensor:
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        parts = _axis_slices(value, self.dim, starts, self.lengths)
        return _ops.concat([c.check(v) for c, v in zip(self.cseq, parts)], axis=self.dim)


class _Stack(_Cat):
    """The constraints ``cseq`` applied to the slices ``value.select(dim, i)``."""

    def __init__(self, cseq: Sequence[Constraint], dim: int = 0) -> None:
        super().__init__(cseq, dim)

    def check(self, value: Tensor) -> Tensor:
        dim = self.dim % value.ndim if -value.ndim <= self.dim < value.ndim else self.dim
        parts = _axis_slices(value, dim, range(value.shape[dim]), [1] * value.shape[dim])
        return _ops.stack([c.check(_ops.squeeze(v, axis=dim)) for c, v in
                           zip(self.cseq, parts)], axis=self.dim)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
