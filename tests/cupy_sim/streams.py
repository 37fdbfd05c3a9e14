"""Emulated CUDA streams, stream capture and graphs: ``cupy.cuda.Stream``, ``Graph``,
``get_current_stream`` and ``using_allocator``.

As in CuPy, a stream is made current with ``with stream:`` (or ``use()``), capture is begun
and ended on a non-default stream (``begin_capture``/``end_capture``), and ``end_capture``
returns a :class:`Graph` whose ``launch(stream)`` runs the captured work again. While the
current stream captures, :mod:`.core` does not run a kernel but *records* it (its NumPy
function and the very buffers it read and wrote), so a launch re-executes the kernels
against the same memory. What capture forbids fails as on a GPU: a device-to-host transfer
or a synchronisation (CUDA's ``cudaErrorStreamCaptureUnsupported``), a host-to-device copy
(CuPy refuses it), capture on the default stream.

Faithful to CUDA where it matters to a caller: captured kernels have *not* run when
``end_capture`` returns (their freshly allocated outputs then hold NaN, or -7777 for
integers, until a launch writes them), and in-place kernels leave their targets unchanged
until a launch. A graph keeps a weak reference to the memory pools it allocated from; a
launch after such a pool is gone fails as a use of freed memory would. A block a temporary
frees inside a capture is reused by a later allocation of that capture, sharing its memory
(:class:`_Capture`), as CuPy's pool does.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np


class _Local(threading.local):
    """Per thread: the current device, the stack of current streams, ``using_allocator``'s
    allocator and the ``cupy.fuse`` trace being built; the class holds the defaults, so each
    is a plain attribute read (the emulator reads them at every kernel)."""

    dev = 0
    streams: list | None = None
    allocator: Any = None
    fusing: Any = None


_local = _Local()
_ptrs = itertools.count(0x7F0000)
STREAMS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # ptr -> Stream


class Counters:
    """Launch counts for the tests (reset with ``reset``)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.graphs = 0      # graphs made by end_capture
        self.launches = 0    # Graph.launch calls
        self.kernels = 0     # kernels launched one by one (a cupy.fuse call is one)
        self.uploads = 0     # host-to-device copies (ndarray.set)
        self.copies = 0      # device-to-device memcpys (MemoryPointer.copy_from_device_async)


COUNTS = Counters()


def _capture_error(what: str) -> RuntimeError:
    return RuntimeError(f"cudaErrorStreamCaptureUnsupported: operation not permitted when "
                        f"stream is capturing ({what})")


class _Capture:
    """What one capture recorded: a replay closure per kernel, the buffers it allocated,
    and the blocks its temporaries freed.

    A block allocated in this capture whose last device array is gone (a temporary) goes
    back to its pool at once, as in CuPy, and a later allocation of the same size class in
    the same capture takes it: the new array then *shares the memory* the graph's earlier
    kernels write at each launch (``reuse``). So a word that the host writes before a launch
    (``ndarray.set``) in such a block is overwritten by the launch, as on a GPU.
    """

    def __init__(self) -> None:
        self.kernels: list[Callable[[], None]] = []
        self.fresh: list[np.ndarray] = []
        self.pools: list[Any] = []
        self.open = True
        self._live: dict[int, int] = {}  # id(root) -> its live device arrays
        self._blocks: dict[int, tuple] = {}  # id(root) -> (root, pool, size class)
        self._freed: dict[tuple, list] = {}  # (id(pool), size class) -> freed roots

    def made(self, wrapper: Any, root: np.ndarray, block: tuple | None) -> None:
        """Count ``wrapper``, a device array on ``root`` (``block``: a new block, ``(pool,
        size)``); when a block's last array is gone, the block is free for reuse."""
        key = id(root)
        if block is not None:
            self._blocks[key], self._live[key] = (root, *block), 0
        if key in self._live:
            self._live[key] += 1
            weakref.finalize(wrapper, self._dropped, key)

    def _dropped(self, key: int) -> None:
        self._live[key] -= 1
        if self._live[key] == 0 and self.open:
            root, pool, size = self._blocks[key]
            self._freed.setdefault((id(pool), size), []).append(root)

    def reuse(self, pool: Any, size: int, nbytes: int) -> np.ndarray | None:
        """A block of ``pool`` freed in this capture with room for ``nbytes``, or None."""
        blocks = self._freed.get((id(pool), size), [])
        for i, root in enumerate(blocks):
            if root.nbytes >= nbytes and root.flags.c_contiguous and root.flags.writeable:
                return blocks.pop(i)
        return None

    def allocated(self, pool: Any) -> None:
        if all(r() is not pool for r in self.pools):
            self.pools.append(weakref.ref(pool))

    def poison(self) -> None:
        """The captured kernels have not run: their new outputs hold garbage."""
        for a in self.fresh:
            if a.flags.writeable and a.dtype.kind in "fc":
                a[...] = np.nan
            elif a.flags.writeable and a.dtype.kind in "iu":
                a[...] = min(7777, np.iinfo(a.dtype).max)
        self.fresh = []


class Stream:
    """``cupy.cuda.Stream``: ``with s:`` makes it current; capture on it records kernels."""

    null: Stream

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False,
                 priority: Any = None) -> None:
        self.ptr = 0 if null else next(_ptrs)
        STREAMS[self.ptr] = self
        self.device_id = -1 if null else _local.dev
        self._capture: _Capture | None = None

    def __enter__(self) -> Stream:
        _stack().append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _stack().pop()

    def use(self) -> Stream:
        stack = _stack()
        stack[-1:] = [self] if stack else [self]
        return self

    def synchronize(self) -> None:
        if self._capture is not None:
            raise _capture_error("cudaStreamSynchronize")

    @property
    def done(self) -> bool:
        """Whether the queued work is done: always (kernels run when queued)."""
        return True

    def begin_capture(self, mode: Any = None) -> None:
        if self.ptr == 0:
            raise RuntimeError("cannot capture on the default (legacy) stream")
        if self._capture is not None:
            raise RuntimeError("cudaErrorIllegalState: the stream is already capturing")
        self._capture = _Capture()

    def end_capture(self) -> Graph:
        cap, self._capture = self._capture, None
        if cap is None:
            raise RuntimeError("cudaErrorIllegalState: the stream is not capturing")
        cap.open = False
        cap.poison()
        COUNTS.graphs += 1
        return Graph._from(cap)

    def is_capturing(self) -> bool:
        return self._capture is not None

    def wait_event(self, event: Event) -> None:
        """What this stream queues next runs after the work ``event`` recorded (the emulator
        runs every kernel when it is queued, so only the argument is checked)."""
        if not isinstance(event, Event):
            raise TypeError(f"Argument 'event' has incorrect type (expected "
                            f"cupy.cuda.stream.Event, got {type(event).__name__})")

    def __repr__(self) -> str:
        return f"<Stream {self.ptr} (device {self.device_id})>"


Stream.null = Stream(null=True)


class Event:
    """``cupy.cuda.Event``: ``record(stream)`` marks the work queued on ``stream`` (the
    current one by default) so far, for another stream's :meth:`Stream.wait_event`."""

    def __init__(self, block: bool = False, disable_timing: bool = False,
                 interprocess: bool = False) -> None:
        self.stream: Stream | None = None
        self.recorded, self.time = False, 0.0

    def record(self, stream: Stream | None = None) -> None:
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"Argument 'stream' has incorrect type (expected "
                            f"cupy.cuda.stream.Stream, got {type(stream).__name__})")
        self.stream, self.recorded, self.time = stream, True, time.perf_counter()

    @property
    def done(self) -> bool:
        """Whether the recorded work is done: always (kernels run when queued)."""
        return True

    def synchronize(self) -> None:
        """Nothing to wait for: every kernel ran when it was queued."""


def _stack() -> list[Stream]:
    stack = _local.streams
    if stack is None:
        stack = _local.streams = []
    return stack


def get_current_stream(device_id: int = -1) -> Stream:
    """``cupy.cuda.get_current_stream()``: the innermost ``with stream:``, else the null one."""
    stack = _stack()
    return stack[-1] if stack else Stream.null


def capturing() -> _Capture | None:
    """The capture the current stream records into, or None (kernels run)."""
    stack = _local.streams
    return stack[-1]._capture if stack else None


def refuse_in_capture(what: str) -> None:
    """A transfer or a synchronisation on a capturing stream fails, as in CUDA."""
    if capturing() is not None:
        raise _capture_error(what)


class Graph:
    """``cupy.cuda.Graph``: made only by ``Stream.end_capture``; ``launch`` re-runs it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("currently this class cannot be initiated by the user and "
                                  "must be created via stream capture")

    @classmethod
    def _from(cls, cap: _Capture) -> Graph:
        g = cls.__new__(cls)
        g._kernels, g._pools, g.launches = cap.kernels, cap.pools, 0
        return g

    def launch(self, stream: Stream | None = None) -> None:
        target = stream if stream is not None else get_current_stream()
        if target._capture is not None:
            raise _capture_error("a graph launched into a capturing stream")
        if any(r() is None for r in self._pools):
            raise RuntimeError("cudaErrorIllegalAddress: the graph uses memory of a pool "
                               "that has been freed")
        for k in self._kernels:
            k()
        self.launches += 1
        COUNTS.launches += 1

    def upload(self, stream: Stream | None = None) -> None:
        pass


@contextlib.contextmanager
def using_allocator(allocator: Any = None):
    """``cupy.cuda.using_allocator``: new arrays inside come from ``allocator``'s pool (the
    emulator accepts a ``MemoryPool``'s bound ``malloc``)."""
    prev = _local.allocator
    _local.allocator = allocator
    try:
        yield
    finally:
        _local.allocator = prev


def current_pool(default: Any) -> Any:
    """The pool new arrays are charged to: ``using_allocator``'s, else ``default``."""
    alloc = _local.allocator
    return default if alloc is None else alloc.__self__
