"""The tools PyTorch scripts call in their first lines, as ``python -m xad.as_torch`` gives
them: ``torch.jit`` (the eager function, unchanged), ``torch.profiler`` (no-op context
managers), ``torch.set_default_device``, ``torch.multiprocessing.spawn`` and
``torch.nn.init``'s deprecated aliases.
"""

from __future__ import annotations

import contextlib
import enum
import multiprocessing
import warnings
from collections.abc import Callable
from typing import Any

from .backend import get_backend
from .nn import init as _init
from .tensor import on_cuda
from .torch_functions import cuda_usable

__all__ = ["script", "trace", "ignore", "unused", "is_scripting", "is_tracing", "export",
           "profile", "record_function", "ProfilerActivity", "schedule",
           "set_default_device", "get_default_device", "spawn", "deprecated_init_aliases"]


def script(obj: Any = None, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> Any:
    """``torch.jit.script``: ``obj`` itself (xad runs the eager Python; ``xad.compile`` is
    its compiler).

    Example:
        >>> from xad import torch_script_tools as jit
        >>> f = jit.script(lambda x: x + 1); f(1)
        2
    """
    return obj


def trace(func: Any, example_inputs: Any = None, *args: Any, **kwargs: Any) -> Any:
    """``torch.jit.trace``: ``func`` itself, run eagerly (its example inputs are unused)."""
    return func


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """``@torch.jit.ignore`` and ``@torch.jit.ignore(drop=True)``: the function unchanged."""
    return drop if callable(drop) else (lambda fn: fn)


def unused(fn: Any) -> Any:
    """``@torch.jit.unused``: the function unchanged."""
    return fn


export = unused


def is_scripting() -> bool:
    """False: nothing runs under TorchScript."""
    return False


def is_tracing() -> bool:
    """False: nothing runs under ``torch.jit.trace``."""
    return False


class ProfilerActivity(enum.Enum):
    """``torch.profiler.ProfilerActivity``'s names (xad's profiler records nothing)."""

    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class profile(contextlib.ContextDecorator):  # noqa: N801 - PyTorch's name
    """``torch.profiler.profile``: accepts PyTorch's arguments and records nothing (a no-op
    context manager; ``step()`` does nothing). Time xad code with ``time.perf_counter`` and
    ``xad.get_backend().synchronize()``.

    Example:
        >>> from xad.torch_script_tools import profile
        >>> with profile(activities=[]) as prof:
        ...     prof.step()
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.kwargs = kwargs

    def __enter__(self) -> profile:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def start(self) -> None:
        """Nothing to start."""

    def stop(self) -> None:
        """Nothing to stop."""

    def step(self) -> None:
        """Nothing to record."""


class record_function(contextlib.ContextDecorator):  # noqa: N801 - PyTorch's name
    """``torch.profiler.record_function(name)``: a no-op context manager and decorator."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name

    def __enter__(self) -> record_function:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], None]:
    """``torch.profiler.schedule``: checks PyTorch's arguments; the profile records nothing."""
    for name, v in (("wait", wait), ("warmup", warmup), ("active", active),
                    ("repeat", repeat), ("skip_first", skip_first)):
        if not isinstance(v, int) or v < 0 or (name == "active" and v < 1):
            raise ValueError(f"torch.profiler.schedule: {name} must be a "
                             f"{'positive' if name == 'active' else 'non-negative'} int, "
                             f"got {v!r}")
    return lambda step: None


_DEFAULT: dict[str, str] = {}


def set_default_device(device: Any) -> None:
    """``torch.set_default_device``: ``"cpu"`` on a host backend and ``"cuda"`` on a GPU
    backend are what xad does already; any other device raises, pointing at ``--backend``."""
    if device is None:
        _DEFAULT.clear()
        return
    kind = str(device).split(":")[0]
    if kind == "cpu" and not cuda_usable() or kind == "cuda" and cuda_usable():
        _DEFAULT["device"] = str(device)
        return
    raise NotImplementedError(
        f"torch.set_default_device({device!r}): xad places tensors by backend, not by "
        f"device, and the backend is {get_backend().label}; choose it with `python -m "
        f"xad.as_torch --backend NAME` (cupy for a GPU)")


def get_default_device() -> str:
    """``"cuda:N"`` on a GPU backend, ``"cpu"`` otherwise."""
    b = get_backend()
    return f"cuda:{int(b.device.id)}" if on_cuda(b) else "cpu"


def spawn(fn: Callable[..., Any], args: tuple = (), nprocs: int = 1, join: bool = True,
          daemon: bool = False, start_method: str = "spawn") -> Any:
    """``torch.multiprocessing.spawn``: run ``fn(i, *args)`` in ``nprocs`` processes; with
    ``join``, wait and raise if one failed, else return the processes."""
    ctx: Any = multiprocessing.get_context(start_method)
    procs = [ctx.Process(target=fn, args=(i, *args), daemon=daemon) for i in range(nprocs)]
    for p in procs:
        p.start()
    if not join:
        return procs
    for p in procs:
        p.join()
    failed = [(i, p.exitcode) for i, p in enumerate(procs) if p.exitcode != 0]
    if failed:
        raise RuntimeError(f"torch.multiprocessing.spawn: process {failed[0][0]} exited with "
                           f"code {failed[0][1]}")
    return None


_DEPRECATED_INIT = ("uniform", "normal", "constant", "xavier_uniform", "xavier_normal",
                    "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse")


def _deprecated(name: str) -> Callable[..., Any]:
    new = getattr(_init, name + "_")

    def f(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`.",
                      FutureWarning, stacklevel=2)
        return new(*args, **kwargs)
    f.__name__, f.__doc__ = name, f"Deprecated: ``nn.init.{name}_`` (a FutureWarning)."
    return f


def deprecated_init_aliases() -> dict[str, Callable[..., Any]]:
    """``torch.nn.init.normal`` and the like: the in-place initialiser with PyTorch's
    FutureWarning."""
    return {n: _deprecated(n) for n in _DEPRECATED_INIT if hasattr(_init, n + "_")}
