"""PyTorch's ``out=`` keyword for the functions of the ``torch`` namespace that
``python -m xad.as_torch`` gives (``torch.add(a, b, out=c)``, ``torch.max(x, 1, out=(v, i))``,
``torch.zeros(3, out=t)``).

The result is computed as without ``out=`` and copied into ``out``'s storage (its views see
the values; its version counts the write), and ``out`` is returned, as PyTorch does. As in
PyTorch: an ``out`` with no elements takes the result's shape, one of another shape is
resized with PyTorch's warning, and no argument (``out`` included) may require grad while
gradients are recorded. Where PyTorch casts into an ``out`` of another dtype, which it does
for some functions and refuses for others (``add`` casts, ``abs`` and ``mm`` refuse, ``sum``
even accumulates in ``out``'s dtype), xad asks for the result's own dtype and says so: a
cast here would give other numbers than PyTorch's without an error.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

from .grad_mode import is_grad_enabled
from .tensor import Tensor

__all__ = ["accepting_out"]

# PyTorch's factories take the dtype of ``out`` when none is given, and all but ``arange``
# resize a mis-shaped ``out`` without a warning
_FACTORIES = frozenset(("zeros", "ones", "full", "empty", "arange", "linspace", "logspace",
                        "eye", "rand", "randn", "randint", "randperm"))
_QUIET = _FACTORIES - {"arange"}


def accepting_out(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` that also takes PyTorch's ``out=`` (a tensor, or a tuple of them for a
    function of several results), as ``torch.{name}``.

    Example:
        >>> import xad
        >>> from xad.torch_out import accepting_out
        >>> out = xad.zeros(2)
        >>> accepting_out("add", xad.add)(xad.ones(2), xad.ones(2), out=out) is out, out.tolist()
        (True, [2.0, 2.0])
    """
    @functools.wraps(fn)
    def with_out(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        if out is None:
            return fn(*args, **kwargs)
        outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if not all(isinstance(o, Tensor) for o in outs):
            raise TypeError(f"torch.{name}: out= takes a tensor or a tuple of tensors, got "
                            f"{type(out).__name__}")
        _no_grad_needed(name, args, kwargs, outs)
        if name in _FACTORIES and kwargs.get("dtype") is None and len(outs) == 1:
            kwargs["dtype"] = outs[0].dtype
        result = fn(*args, **kwargs)
        results = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        if len(results) != len(outs) or not all(isinstance(r, Tensor) for r in results):
            raise TypeError(f"torch.{name}: out= needs {len(results)} tensor(s) for its "
                            f"result, got {len(outs)}")
        for o, r in zip(outs, results):
            _write(name, o, r)
        if not isinstance(out, (tuple, list)):
            return out
        return type(result)(*outs) if hasattr(result, "_fields") else tuple(outs)
    return with_out


def _no_grad_needed(name: str, args: tuple, kwargs: dict, outs: tuple) -> None:
    """PyTorch's refusal: ``out=`` writes outside the graph."""
    if not is_grad_enabled():
        return
    flat = [*args, *kwargs.values(), *outs]
    for a in list(flat):
        if isinstance(a, (tuple, list)):
            flat.extend(a)
    if any(isinstance(a, Tensor) and a.requires_grad for a in flat):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires "
                           "grad. Call it without out= (or inside xad.no_grad())")


def _write(name: str, out: Tensor, r: Tensor) -> None:
    """Copy ``r`` into ``out``, resized first where PyTorch resizes it."""
    if r.dtype != out.dtype:
        raise TypeError(
            f"torch.{name}: the result is {r.dtype.name} and out= is {out.dtype.name}; xad "
            f"writes a result into an out= of its own dtype only (PyTorch casts for some "
            f"functions and not for others). Pass out= of dtype {r.dtype.name}, or cast "
            f"after: out.copy_(torch.{name}(...))")
    if r.backend is not out.backend:
        raise ValueError(f"torch.{name}: the result is on {r.backend.label} and out= on "
                         f"{out.backend.label}; move one with .to()")
    shape = tuple(r.shape)
    if tuple(out.shape) != shape:
        if out.numel() and name not in _QUIET:
            warnings.warn(f"torch.{name}: an output with one or more elements was resized "
                          f"since it had shape {list(out.shape)}, which does not match the "
                          f"required output shape {list(shape)} (deprecated in PyTorch)",
                          UserWarning, stacklevel=3)
        out.resize_(shape)
    out.copy_(r)
