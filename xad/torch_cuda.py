"""``torch.cuda``'s device functions under ``python -m xad.as_torch``.

On a CuPy backend (``--backend cupy``) they are CuPy's: the backend's device, CuPy's
default memory pool (``memory_allocated`` is its used bytes, ``memory_reserved`` its total,
``empty_cache`` frees its cached blocks) and CUDA events. On a host backend they answer as
a PyTorch built without CUDA: the memory counters are 0, seeding and ``empty_cache`` do
nothing, and the functions that need a GPU raise "Torch not compiled with CUDA enabled".
CuPy's pool keeps no peak, so ``max_memory_allocated``/``max_memory_reserved`` raise on a
CuPy backend rather than give a number that is not the peak.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .backend import get_backend, resolve_backend, set_backend, use_backend
from .context import context
from .tensor import on_cuda

__all__ = ["manual_seed", "manual_seed_all", "synchronize", "empty_cache", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_peak_memory_stats", "get_device_name", "get_device_properties",
           "current_device", "set_device", "device", "Event", "Stream", "current_stream",
           "stream", "is_bf16_supported",
           "is_initialized", "cuda_runtime_version"]


def _cupy(name: str) -> Any:
    """The current backend's CuPy module; a host backend raises as a CPU-only PyTorch."""
    b: Any = get_backend()
    if not on_cuda(b) or not hasattr(b, "cupy"):
        raise AssertionError(f"Torch not compiled with CUDA enabled (torch.cuda.{name}: the "
                             f"xad backend {b.label} is on the host; run with `python -m "
                             f"xad.as_torch --backend cupy` for a GPU)")
    return b.cupy


def _on_gpu() -> bool:
    b = get_backend()
    return on_cuda(b) and hasattr(b, "cupy")


def _index(device: Any) -> int:
    """A device argument (None, an int, ``"cuda:N"``) as the device's index."""
    if device is None:
        return int(get_backend().device.id)
    if isinstance(device, int):
        return device
    kind, _, index = str(device).partition(":")
    if kind != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {device}")
    return int(index) if index else int(get_backend().device.id)


def cuda_runtime_version() -> str | None:
    """``torch.version.cuda``: the CUDA runtime's ``"major.minor"`` on a CuPy backend, else
    None (as a PyTorch built without CUDA)."""
    if not _on_gpu():
        return None
    v = int(_cupy("version").cuda.runtime.runtimeGetVersion())
    return f"{v // 1000}.{v % 1000 // 10}"


def manual_seed(seed: int) -> None:
    """Seed the GPU backend's generator (a host backend: nothing, as a CPU-only PyTorch).

    Example:
        >>> from xad import torch_cuda
        >>> torch_cuda.manual_seed(0)
    """
    if _on_gpu():
        get_backend().manual_seed(int(seed))


manual_seed_all = manual_seed


def synchronize(device: Any = None) -> None:
    """Wait for the GPU backend's queued work (:meth:`xad.backend.Backend.synchronize`)."""
    _cupy("synchronize")
    get_backend().synchronize()


def _pool_bytes(what: str, device: Any) -> int:
    """CuPy's default pool's ``used_bytes``/``total_bytes``/``free_all_blocks`` on the
    device (the pool answers for the current device); 0 on a host backend."""
    if not _on_gpu():
        return 0
    cp = _cupy("memory_allocated")
    with cp.cuda.Device(_index(device)):
        return int(getattr(cp.get_default_memory_pool(), what)() or 0)


def empty_cache() -> None:
    """Give CuPy's cached free blocks back to the driver (nothing on a host backend)."""
    _pool_bytes("free_all_blocks", None)


def memory_allocated(device: Any = None) -> int:
    """Bytes of device memory tensors hold now (CuPy's pool's used bytes; 0 on the host).

    Example:
        >>> from xad import torch_cuda
        >>> torch_cuda.memory_allocated()
        0
    """
    return _pool_bytes("used_bytes", device)


def memory_reserved(device: Any = None) -> int:
    """Bytes CuPy's pool holds from the driver, used or cached (0 on the host)."""
    return _pool_bytes("total_bytes", device)


def _no_peak(name: str) -> int:
    if _on_gpu():
        raise NotImplementedError(f"torch.cuda.{name}: CuPy's memory pool keeps no peak, so "
                                  f"xad has none to give; read torch.cuda.memory_allocated() "
                                  f"or memory_reserved() where the peak is reached")
    return 0


def max_memory_allocated(device: Any = None) -> int:
    """0 on a host backend (as a CPU-only PyTorch); a CuPy backend raises (no peak kept)."""
    return _no_peak("max_memory_allocated")


def max_memory_reserved(device: Any = None) -> int:
    """0 on a host backend (as a CPU-only PyTorch); a CuPy backend raises (no peak kept)."""
    return _no_peak("max_memory_reserved")


def reset_peak_memory_stats(device: Any = None) -> None:
    """Nothing to reset on a CuPy backend (no peak is kept); a host backend raises."""
    _cupy("reset_peak_memory_stats")


@dataclass(frozen=True)
class DeviceProperties:
    """``torch.cuda.get_device_properties``'s answer (the fields scripts read)."""

    name: str
    total_memory: int
    major: int
    minor: int
    multi_processor_count: int


def get_device_properties(device: Any = None) -> DeviceProperties:
    """The GPU's name, memory (bytes), compute capability and multiprocessor count."""
    p = _cupy("get_device_properties").cuda.runtime.getDeviceProperties(_index(device))
    name = p["name"]
    return DeviceProperties(name.decode() if isinstance(name, bytes) else str(name),
                            int(p["totalGlobalMem"]), int(p["major"]), int(p["minor"]),
                            int(p["multiProcessorCount"]))


def get_device_name(device: Any = None) -> str:
    """The GPU's name (CUDA's device properties)."""
    return get_device_properties(device).name


def current_device() -> int:
    """The index of the GPU the backend is on."""
    _cupy("current_device")
    return int(get_backend().device.id)


def set_device(device: Any) -> None:
    """Put the backend on GPU ``device`` (a negative index does nothing, as in PyTorch)."""
    index = _index(device)
    if index < 0:
        return
    _cupy("set_device")
    b = get_backend()
    if index == int(b.device.id):
        return
    if "backend" in context.__dict__:  # inside use_backend: this thread's backend moves
        context.backend = resolve_backend(b.name, index)
    else:
        set_backend(b.name, index)


@contextlib.contextmanager
def device(device: Any) -> Iterator[None]:
    """``with torch.cuda.device(n):`` the backend is on GPU ``n`` inside, as before after."""
    index = _index(device)
    if index < 0:
        yield
        return
    _cupy("device")
    with use_backend(get_backend().name, index):
        yield


class Event:
    """``torch.cuda.Event``: a CUDA event (CuPy's) on the backend's device.

    ``record()``, ``synchronize()``, ``query()``, ``wait()`` and ``elapsed_time(end)``
    (milliseconds between this event's and ``end``'s records; needs ``enable_timing=True``).
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        if not _on_gpu():
            raise RuntimeError("Tried to instantiate dummy base class Event (torch.cuda.Event "
                               "needs a CUDA backend: run with `python -m xad.as_torch "
                               "--backend cupy`)")
        cp = _cupy("Event")
        self._cp, self.enable_timing = cp, enable_timing
        self._event = cp.cuda.Event(block=blocking, disable_timing=not enable_timing,
                                    interprocess=interprocess)

    def record(self, stream: Stream | None = None) -> None:
        self._event.record(None if stream is None else stream._stream)

    def synchronize(self) -> None:
        self._event.synchronize()

    def query(self) -> bool:
        return bool(self._event.done)

    def wait(self, stream: Stream | None = None) -> None:
        (stream or current_stream()).wait_event(self)

    def elapsed_time(self, end: Event) -> float:
        if not (self.enable_timing and end.enable_timing):
            raise RuntimeError("torch.cuda.Event.elapsed_time: both events must be made with "
                               "enable_timing=True")
        return float(self._cp.cuda.get_elapsed_time(self._event, end._event))


class Stream:
    """``torch.cuda.Stream``: a CUDA stream (CuPy's) on the backend's device; xad's kernels
    go to it inside ``with torch.cuda.stream(s):``."""

    def __init__(self, device: Any = None, priority: int = 0, _wrap: Any = None) -> None:
        if not _on_gpu():
            raise RuntimeError("torch.cuda.Stream requires CUDA support (run with `python -m "
                               "xad.as_torch --backend cupy`)")
        cp = _cupy("Stream")
        self._cp = cp
        self._stream = _wrap if _wrap is not None else cp.cuda.Stream(non_blocking=True)

    def synchronize(self) -> None:
        self._stream.synchronize()

    def query(self) -> bool:
        return bool(self._stream.done)

    def wait_event(self, event: Event) -> None:
        self._stream.wait_event(event._event)

    def wait_stream(self, stream: Stream) -> None:
        """Later work on this stream waits for the work queued on ``stream`` so far."""
        e = self._cp.cuda.Event(disable_timing=True)
        e.record(stream._stream)
        self._stream.wait_event(e)

    def record_event(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event


def current_stream(device: Any = None) -> Stream:
    """The stream xad's kernels are queued on now."""
    cp = _cupy("current_stream")
    return Stream(_wrap=cp.cuda.get_current_stream())


@contextlib.contextmanager
def stream(s: Stream | None) -> Iterator[None]:
    """``with torch.cuda.stream(s):`` queue the kernels on ``s`` (``None``: no change)."""
    if s is None:
        yield
        return
    with s._stream:
        yield


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: xad's CuPy and host backends have no bfloat16 arrays."""
    return False


def is_initialized() -> bool:
    """Whether the backend is a GPU's (PyTorch: whether CUDA has been initialised)."""
    return _on_gpu()
