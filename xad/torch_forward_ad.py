"""``torch.autograd.forward_ad`` under ``xad.as_torch``: dual tensors on xad's own forward
mode (:mod:`xad.forward_mode`), not a second engine.

A dual level is one :class:`~xad.forward_mode.JVPLevel` pushed on the calling thread's
transform stack (PyTorch's level is process-wide; xad's transforms are per thread).
``make_dual`` gives a view of the tensor carrying the tangent at that level; every operation
then gives its result a tangent through its JVP rule (run below the level, so the reverse
recorder sees it: a ``backward`` of a tangent differentiates it); ``unpack_dual`` reads it.
As PyTorch's, a dual keeps its tangent apart from its base's (an ``unpack_dual`` primal
from its dual's): an in-place change of the base leaves the dual's tangent; one through the
dual gives it the new value's and leaves the base's (``JVPLevel.root``). Leaving the level
drops every tangent. One level at a time, as PyTorch's: a nested one raises
(``torch.func.jvp`` nests). Differences (docs/PORTING.md): a tangent of another dtype than
its primal's raises, where PyTorch keeps it and gives op-dependent dtypes; a custom
``Function`` without ``jvp`` is differentiated through its ``forward``, where PyTorch raises.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, NamedTuple

from .context import context
from .forward_mode import JVPLevel
from .tensor import Tensor

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]

_NAME = "torch.autograd.forward_ad"
_state = threading.local()  # .level: this thread's JVPLevel of the dual level, if any


class UnpackedDualTensor(NamedTuple):
    """What :func:`unpack_dual` gives: the primal (a view with no tangent) and the tangent
    (``None`` where there is none)."""

    primal: Tensor
    tangent: Tensor | None


def _active() -> JVPLevel | None:
    return getattr(_state, "level", None)


def enter_dual_level() -> int:
    """Enter a forward AD level (0: PyTorch's number for the only one) on this thread.

    Example:
        >>> import xad.torch_forward_ad as fwAD
        >>> level = fwAD.enter_dual_level(); fwAD.exit_dual_level(); level
        0
    """
    if _active() is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment "
                           f"({_NAME}: one dual level at a time, as PyTorch's); for higher "
                           "derivatives nest torch.func.jvp instead")
    level = JVPLevel(_NAME)
    context.transform = level
    _state.level = level
    return 0


def exit_dual_level(*, level: int | None = None) -> None:
    """Leave the forward AD level: every tangent made in it is dropped.

    Example:
        >>> import xad, xad.torch_forward_ad as fwAD
        >>> _ = fwAD.enter_dual_level()
        >>> y = fwAD.make_dual(xad.tensor([1.0]), xad.tensor([2.0])) * 3
        >>> fwAD.exit_dual_level(); fwAD.unpack_dual(y).tangent is None
        True
    """
    lvl = _active()
    if lvl is None:
        raise RuntimeError(f"exit_dual_level: Dual level must be a positive number. ({_NAME}: "
                           f"no level was entered; use `with dual_level():`)")
    if level is not None and level != 0:
        raise RuntimeError(f"exit_dual_level(level={level}): Trying to exit a forward AD level "
                           f"that was not the last one that was created. This is not "
                           f"supported. (The level in progress is 0.)")
    if context.transform is not lvl:
        raise RuntimeError(f"exit_dual_level: a transform entered inside the dual level "
                           f"({type(context.transform).__name__}) is still running; leave it "
                           f"first")
    context.transform = lvl.parent
    _state.level = None
    lvl.tangents.clear()
    lvl.own.clear()


def _level(fname: str, level: int | None, dual: bool = True) -> JVPLevel | None:
    """The level ``level`` names (``None``: the current one, if any). A level that does not
    exist raises where ``dual`` (PyTorch's ``unpack_dual`` of a tensor with no tangent
    takes any level)."""
    lvl = _active()
    if dual and level is not None and (level != 0 or lvl is None):
        raise RuntimeError(f"{fname}: Invalid level given ({level}): {_NAME} has one level, 0, "
                           f"while a dual level is entered")
    if lvl is not None and context.transform is not lvl:
        raise NotImplementedError(f"{fname} inside a transform entered within the dual level "
                                  f"({type(context.transform).__name__}) is not supported; "
                                  f"make the dual tensors before entering it")
    return lvl


def _view(lvl: JVPLevel, t: Tensor) -> Tensor:
    """A view of ``t`` made below ``lvl`` (recorded for reverse mode, no tangent here)."""
    context.transform = lvl.parent
    try:
        return t.view_as(t)
    finally:
        context.transform = lvl


def _check_dual(lvl: JVPLevel, tensor: Any, tangent: Any) -> None:
    for what, t in (("tensor", tensor), ("tangent", tangent)):
        if not isinstance(t, Tensor):
            raise TypeError(f"make_dual: the {what} must be a Tensor, got {type(t).__name__}")
    for what, t in (("primal", tensor), ("tangent", tangent)):
        if not t.dtype.can_require_grad:
            raise ValueError(f"make_dual: Expected {what} to be floating point or complex, but "
                             f"got: {t.dtype}")
    if tangent.shape != tensor.shape:
        raise RuntimeError(
            f"make_dual: Trying to set a forward gradient that has a different size than that "
            f"of the original Tensor, this is not supported. Tensor is of size "
            f"{list(tensor.shape)} while the given forward gradient is of size "
            f"{list(tangent.shape)}.")
    if tangent.dtype != tensor.dtype or tangent._backend is not tensor._backend:
        raise ValueError(f"make_dual: the tangent ({tangent.dtype} on "
                         f"{tangent._backend.label}) must have the primal's dtype and device "
                         f"({tensor.dtype} on {tensor._backend.label}); pass "
                         f"tangent.to(primal.dtype) (xad keeps a tangent in its primal's dtype)")
    if lvl.get(tensor) is not None:
        raise RuntimeError("make_dual: Making a dual Tensor based on a Tensor that already has "
                           "a forward gradient at the same level 0 is not supported.")
    if lvl.get(tangent) is not None:
        raise RuntimeError("make_dual: Setting a forward grad that itself has a forward "
                           "gradient at the same level 0 is not supported.")


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` carrying ``tangent`` (as is) in the current dual level;
    differentiable in reverse mode for both.

    Example:
        >>> import xad, xad.torch_forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     y = fwAD.make_dual(xad.tensor([0.0, 1.0]), xad.tensor([2.0, 1.0])) ** 2
        ...     fwAD.unpack_dual(y).tangent.tolist()
        [0.0, 2.0]
    """
    lvl = _level("make_dual", level)
    if lvl is None:
        raise RuntimeError("make_dual: Trying to create a dual Tensor for forward AD but no "
                           "level exists, make sure to enter_dual_level() first. (Or make it "
                           "inside `with torch.autograd.forward_ad.dual_level():`.)")
    _check_dual(lvl, tensor, tangent)
    y = _view(lvl, tensor)
    lvl.root(y, tangent)
    return y


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` in the current dual level: the primal a view of
    it with no tangent, the tangent as is (``None`` where it has none, or outside a level).

    Example:
        >>> import xad, xad.torch_forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     y = fwAD.make_dual(xad.tensor(3.0), xad.tensor(1.0)) ** 2
        ...     p, t = fwAD.unpack_dual(y)
        >>> p.item(), t.item()
        (9.0, 6.0)
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual: the argument 'dual' must be a Tensor, not "
                        f"{type(tensor).__name__}")
    lvl = _active()
    if lvl is None and level is None:
        return UnpackedDualTensor(tensor, None)
    lvl = _level("unpack_dual", level, lvl is not None and lvl.get(tensor) is not None)
    if lvl is None:  # (a level given outside one)
        return UnpackedDualTensor(tensor.view_as(tensor), None)
    tangent = lvl.get(tensor) if level in (None, 0) else None
    primal = _view(lvl, tensor)
    lvl.root(primal, None)
    return UnpackedDualTensor(primal, tangent)


class dual_level(contextlib.ContextDecorator):  # noqa: N801 (PyTorch's name)
    """``with dual_level():`` enters a forward AD level and leaves it (its tangents dropped)
    at the end; also a decorator.

    Example:
        >>> import xad, xad.torch_forward_ad as fwAD
        >>> with fwAD.dual_level() as level:
        ...     y = fwAD.make_dual(xad.tensor(2.0), xad.tensor(1.0)).sin()
        ...     round(fwAD.unpack_dual(y).tangent.item(), 4), level
        (-0.4161, 0)
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level()
