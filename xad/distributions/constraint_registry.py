"""``biject_to`` and ``transform_to`` (PyTorch's ``constraint_registry``): from a
constraint to a transform that maps the unconstrained reals onto it, a bijection for
``biject_to``; ``register`` adds a constraint type.

Example:
    >>> import xad
    >>> from xad.distributions import constraints
    >>> from xad.distributions.constraint_registry import biject_to, transform_to
    >>> biject_to(constraints.positive)(xad.tensor([0.0])).tolist()
    [1.0]
    >>> transform_to(constraints.simplex)
    SoftmaxTransform()
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import constraints
from . import transforms as _t

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]

Factory = Callable[[Any], _t.Transform]


class ConstraintRegistry:
    """A map from constraint types to functions ``constraint -> Transform``.

    Example:
        >>> from xad.distributions import constraints
        >>> from xad.distributions.constraint_registry import ConstraintRegistry
        >>> from xad.distributions.transforms import ExpTransform
        >>> r = ConstraintRegistry()
        >>> _ = r.register(constraints.positive, lambda c: ExpTransform())
        >>> r(constraints.positive)
        ExpTransform()
    """

    def __init__(self) -> None:
        self._registry: dict[type, Factory] = {}

    def register(self, constraint: Any, factory: Factory | None = None) -> Any:
        """Registers ``factory`` for ``constraint`` (a Constraint subclass or an instance of
        one); without ``factory``, a decorator."""
        if factory is None:
            return lambda f: self.register(constraint, f)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint,
                                                              constraints.Constraint):
            raise TypeError(f"ConstraintRegistry.register: expected a Constraint subclass or "
                            f"instance, found {constraint!r}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: constraints.Constraint) -> _t.Transform:
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} "
                                      f"constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(*cons: Any, bijective: bool = True) -> Callable[[Factory], Factory]:
    """Registers a factory for ``cons`` in ``transform_to`` (and ``biject_to`` too)."""
    def deco(factory: Factory) -> Factory:
        for c in cons:
            transform_to.register(c, factory)
            if bijective:
                biject_to.register(c, factory)
        return factory
    return deco


@_both(constraints.real)
def _to_real(constraint: Any) -> _t.Transform:
    return _t.identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint: Any) -> _t.Transform:
    return _t.IndependentTransform(biject_to(constraint.base_constraint),
                                   constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint: Any) -> _t.Transform:
    return _t.IndependentTransform(transform_to(constraint.base_constraint),
                                   constraint.reinterpreted_batch_ndims)


@_both(constraints.positive, constraints.nonnegative)
def _to_positive(constraint: Any) -> _t.Transform:
    return _t.ExpTransform()


@_both(constraints.greater_than, constraints.greater_than_eq)
def _to_greater_than(constraint: Any) -> _t.Transform:
    return _t.ComposeTransform([_t.ExpTransform(),
                                _t.AffineTransform(constraint.lower_bound, 1)])


@_both(constraints.less_than)
def _to_less_than(constraint: Any) -> _t.Transform:
    return _t.ComposeTransform([_t.ExpTransform(),
                                _t.AffineTransform(constraint.upper_bound, -1)])


@_both(constraints.interval, constraints.half_open_interval)
def _to_interval(constraint: Any) -> _t.Transform:
    lo, hi = constraint.lower_bound, constraint.upper_bound
    if isinstance(lo, (int, float)) and lo == 0 and isinstance(hi, (int, float)) and hi == 1:
        return _t.SigmoidTransform()
    return _t.ComposeTransform([_t.SigmoidTransform(), _t.AffineTransform(lo, hi - lo)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint: Any) -> _t.Transform:
    return _t.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint: Any) -> _t.Transform:
    return _t.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint: Any) -> _t.Transform:
    return _t.LowerCholeskyTransform()


@_both(constraints.positive_definite, constraints.positive_semidefinite, bijective=False)
def _transform_to_positive_definite(constraint: Any) -> _t.Transform:
    return _t.PositiveDefiniteTransform()


@_both(constraints.corr_cholesky)
def _to_corr_cholesky(constraint: Any) -> _t.Transform:
    return _t.CorrCholeskyTransform()


@biject_to.register(constraints.cat)
def _biject_to_cat(constraint: Any) -> _t.Transform:
    return _t.CatTransform([biject_to(c) for c in constraint.cseq], constraint.dim,
                           constraint.lengths)


@transform_to.register(constraints.cat)
def _transform_to_cat(constraint: Any) -> _t.Transform:
    return _t.CatTransform([transform_to(c) for c in constraint.cseq], constraint.dim,
                           constraint.lengths)


@biject_to.register(constraints.stack)
def _biject_to_stack(constraint: Any) -> _t.Transform:
    return _t.StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


@transform_to.register(constraints.stack)
def _transform_to_stack(constraint: Any) -> _t.Transform:
    return _t.StackTransform([transform_to(c) for c in constraint.cseq], constraint.dim)
