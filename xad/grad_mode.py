"""Grad modes: whether operations record graph nodes, per thread (see :mod:`xad.context`)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from .context import context

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode"]


def is_grad_enabled() -> bool:
    """Whether operations are being recorded for backward (per thread).

    Example:
        >>> import xad
        >>> with xad.no_grad():
        ...     xad.is_grad_enabled()
        False
    """
    return context.grad_enabled


class _GradMode:
    """A context manager and decorator that runs code with recording on or off."""

    def __init__(self, mode: bool) -> None:
        self.mode = mode
        self._prev: list[bool] = []

    def __enter__(self) -> None:
        self._prev.append(context.grad_enabled)
        context.grad_enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        context.grad_enabled = self._prev.pop()

    def __call__(self, fn: Callable) -> Callable:
        mode = self.mode
        if inspect.isgeneratorfunction(fn):
            return _generator_in_mode(fn, mode)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with _GradMode(mode):
                return fn(*args, **kwargs)
        return wrapper


def _generator_in_mode(fn: Callable, mode: bool) -> Callable:
    """A decorated generator function: its body runs in ``mode`` at every resumption, and
    the caller's mode is back between them (as PyTorch's decorators)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        gen = fn(*args, **kwargs)
        step, arg = gen.send, None
        while True:
            try:
                with _GradMode(mode):
                    out = step(arg)
            except StopIteration as stop:
                return stop.value
            try:
                step, arg = gen.send, (yield out)
            except GeneratorExit:
                with _GradMode(mode):
                    gen.close()
                raise
            except BaseException as e:  # thrown into us: pass it on, in mode
                step, arg = gen.throw, e
    return wrapper


class set_grad_enabled(_GradMode):
    """Turn recording on or off: at once when called, until the end of a ``with`` block,
    or around a decorated function (as in PyTorch).

    Example:
        >>> import xad
        >>> with xad.set_grad_enabled(False):
        ...     (xad.ones(2, requires_grad=True) * 2).requires_grad
        False
        >>> _ = xad.set_grad_enabled(False); xad.is_grad_enabled()
        False
        >>> _ = xad.set_grad_enabled(True)
    """

    def __init__(self, mode: bool) -> None:
        super().__init__(bool(mode))
        self._prev.append(context.grad_enabled)
        context.grad_enabled = self.mode

    def __enter__(self) -> None:
        pass  # already set by the call

    def __call__(self, fn: Callable) -> Callable:
        context.grad_enabled = self._prev.pop()  # used as a decorator: undo the call's effect
        return super().__call__(fn)


class _Switch(_GradMode):
    """``no_grad``/``enable_grad``: used as ``with x():``, ``@x()`` or ``@x``."""

    _MODE = True

    def __new__(cls, fn: Callable | None = None) -> Any:
        self = super().__new__(cls)
        if fn is None:
            return self
        _GradMode.__init__(self, cls._MODE)
        return self(fn)

    def __init__(self, fn: Callable | None = None) -> None:
        super().__init__(self._MODE)


class no_grad(_Switch):
    """Stop recording: results need no gradient and keep no graph.

    Example:
        >>> import xad
        >>> w = xad.ones(2, requires_grad=True)
        >>> with xad.no_grad():
        ...     (w * 2).requires_grad
        False
    """

    _MODE = False


class enable_grad(_Switch):
    """Record again inside a ``no_grad`` block.

    Example:
        >>> import xad
        >>> with xad.no_grad(), xad.enable_grad():
        ...     xad.is_grad_enabled()
        True
    """

    _MODE = True


class inference_mode(_GradMode):
    """PyTorch's ``inference_mode``: recording off, as ``no_grad`` (xad has no separate
    inference tensors); ``inference_mode(False)`` turns it on, as PyTorch's. A context
    manager or a decorator, with or without ``()``.

    Example:
        >>> import xad
        >>> with xad.inference_mode():
        ...     (xad.ones(2, requires_grad=True) * 2).requires_grad
        False
    """

    def __new__(cls, mode: Any = True) -> Any:
        self = super().__new__(cls)
        if isinstance(mode, bool):
            return self
        _GradMode.__init__(self, False)
        return self(mode)  # @inference_mode on a function

    def __init__(self, mode: Any = True) -> None:
        super().__init__(mode is False)
