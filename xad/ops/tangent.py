"""Helpers for the forward-mode (JVP) rules the Op classes carry beside their gradient rules.

A rule is ``jvp(primals, tangents, out, **params)``: the inputs as the primitive got them,
one tangent per input (``None``: zero, or not differentiable), the primal result; it
returns the result's tangent (a tuple for several results, ``None`` for zero), written in
xad operations so that it can itself be differentiated.
"""

from __future__ import annotations

from typing import Any, overload

from ..factories import zeros_like
from ..tensor import Tensor
from ._apply import apply

__all__ = ["linear_jvp", "fit", "total"]


@overload
def fit(t: Tensor, out: Tensor) -> Tensor: ...
@overload
def fit(t: None, out: Tensor) -> None: ...
@overload
def fit(t: Tensor | None, out: Tensor) -> Tensor | None: ...
def fit(t: Tensor | None, out: Tensor) -> Tensor | None:
    """``t`` as a tangent of ``out``: broadcast to its shape and cast to its dtype."""
    if t is None:
        return None
    if t.dtype is not out.dtype:
        t = t.astype(out.dtype)
    if tuple(t.shape) != tuple(out.shape):
        t = t.broadcast_to(tuple(out.shape)) if hasattr(t, "broadcast_to") else \
            t + zeros_like(out)
    return t


def total(out: Tensor, *terms: Tensor | None) -> Tensor | None:
    """The sum of the non-zero ``terms``, as a tangent of ``out``."""
    acc = None
    for t in terms:
        if t is not None:
            acc = t if acc is None else acc + t
    return fit(acc, out)


def linear_jvp(cls: Any, primals: tuple, tangents: list, out: Any, **params: Any) -> Any:
    """The rule of a primitive linear in its floating inputs: itself, on the tangents."""
    args = [t if t is not None else zeros_like(p) if _floating(p) else p
            for p, t in zip(primals, tangents)]
    return apply(cls, *args, **params)


def _floating(p: Any) -> bool:
    return isinstance(p, Tensor) and p.dtype.is_floating
