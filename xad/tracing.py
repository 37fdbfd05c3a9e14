"""What ``xad.compile``'s recorder is told while a compiled function's first call runs.

The recorder itself lives in :mod:`xad.compile`; this module only gives the two decorators
that the rest of xad puts on code the recorder must not look inside:

- :func:`host_call`: a function with Python-side effects (an optimiser's ``step``,
  ``zero_grad``, a scheduler's ``step``, ``GradScaler.update``) is recorded as one call and
  run again, as Python, at every replay;
- :func:`host_upload`: the same for a call that launches no kernel and only copies host
  numbers into device memory later kernels read (an optimiser's learning rate): under CUDA
  graphs it runs before the launch of the graph that reads them, and splits no graph;
- :func:`host_check`: the same for a check that only reads its tensor arguments (an index
  range check), run again on each replay's tensors;
- :func:`traced_draw`: a random factory (``rand``, ``randn``, ...) is recorded as one call and
  drawn again at every replay, so the random stream advances exactly as in eager mode.

Outside a recording both decorators cost one attribute read.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

from .context import context

__all__ = ["host_call", "host_check", "host_upload", "traced_draw", "unrecorded"]

# each decorator returns a function with fn's signature (functools.wraps): typed so, for
# type checkers and editors
_F = TypeVar("_F", bound=Callable[..., Any])


def host_call(fn: _F) -> _F:
    """Mark ``fn`` as replayed by calling it again (its array work is not recorded)."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        rec = context.recorder
        if rec is None or rec.paused:
            return fn(*args, **kwargs)
        return rec.host_call(fn, args, kwargs)

    return cast(_F, call)


def host_upload(fn: _F) -> _F:
    """Mark ``fn`` (no kernels; host-to-device copies only, of values no earlier kernel of
    the call reads) as run again at every replay, before the graph that reads what it
    writes."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        rec = context.recorder
        if rec is None or rec.paused:
            return fn(*args, **kwargs)
        return rec.host_call(fn, args, kwargs, upload=True)

    return cast(_F, call)


def host_check(fn: _F) -> _F:
    """Mark ``fn`` as a check that only reads its tensor arguments and returns ``None`` (an
    index range check): run again at every replay on that call's tensors. Its device work
    must be :meth:`xad.Backend.check_bounds` only: under CUDA graphs on CuPy it runs inside
    the capture, where the backend keeps the check's maximum in the graph."""

    @functools.wraps(fn)
    def check(*args: Any, **kwargs: Any) -> Any:
        rec = context.recorder
        if rec is None or rec.paused:
            return fn(*args, **kwargs)
        return rec.host_call(fn, args, kwargs, reads=True)

    return cast(_F, check)


def traced_draw(fn: _F) -> _F:
    """Mark the random factory ``fn`` (returning a tensor) as drawn again at every replay."""

    @functools.wraps(fn)
    def draw(*args: Any, **kwargs: Any) -> Any:
        rec = context.recorder
        if rec is None or rec.paused:
            return fn(*args, **kwargs)
        return rec.draw(fn, args, kwargs)

    return cast(_F, draw)


@contextlib.contextmanager
def unrecorded() -> Iterator[None]:
    """Run the block outside any recording: state made once, before the recorded call's
    own work (an optimiser's device numbers, GradScaler's device growth count)."""
    rec, context.recorder = context.recorder, None
    try:
        yield
    finally:
        context.recorder = rec
