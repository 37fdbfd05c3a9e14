"""The process group: ``init``, ``rank``, ``world_size``, ``barrier``, and saving once.

One communicator per process, made by :func:`init`: MPI (``mpi4py``) for host arrays, NCCL
(``cupy.cuda.nccl``, bootstrapped over MPI) for CuPy arrays. A process started without a
launcher is a world of size 1 (MPI's singleton start). With more than one rank, no rank is
left waiting forever: an uncaught exception on any rank prints which rank failed and aborts
every rank; a rank whose program ends (or calls ``sys.exit``) tells the others it is leaving
(agreement.py), and a rank still waiting for it raises, naming the call; and a collective
still waiting after ``timeout`` seconds ends the job, naming the rank and the call.
"""

from __future__ import annotations

import atexit
import sys
import time
from typing import Any

from .. import samplers
from ..backend import get_backend
from ..utils.serialization import save as _save
from .agreement import agree, describe
from .mpi_comm import MpiComm
from .nccl_comm import NcclComm

__all__ = ["init", "is_initialized", "rank", "world_size", "barrier", "save", "comm"]

_state: dict[str, Any] = {"comm": None}


def init(backend: str | None = None, timeout: float = 600.0, check: bool = True) -> None:
    """Join the process group: ``"mpi"`` (host arrays), ``"nccl"`` (CuPy arrays) or ``None``
    (NCCL when the current backend is CuPy, MPI otherwise). Calling it again does nothing.

    ``timeout``: seconds a collective may wait for the other ranks; then a watchdog prints
    the rank and the call and ends the job (as torch's process groups; 10 minutes, NCCL's
    default there).
    ``check``: before each collective the ranks all-gather a small descriptor (call, dtype,
    shape, op, root) and raise, naming what each rank holds, when they differ;
    ``check=False`` skips it (the fast mode: a mismatch then gives MPI's own error or a
    timeout). Launch with ``mpiexec -n 4 python train.py``; without a launcher the world
    has size 1.

    Example:
        >>> import xad.distributed as dist
        >>> dist.init(); dist.world_size(), dist.rank()
        (1, 0)
    """
    if not timeout > 0:
        raise ValueError(f"xad.distributed.init: timeout must be a positive number of seconds, "
                         f"got {timeout}")
    if _state["comm"] is not None:
        return
    b = get_backend()
    name = backend if backend is not None else ("nccl" if b.name == "cupy" else "mpi")
    if name == "mpi":
        c: Any = MpiComm(timeout=timeout, check=check)
    elif name == "nccl":
        transport = getattr(b, "nccl_transport", None)
        if transport is None:
            raise ValueError(f"xad.distributed.init(backend='nccl'): the current backend "
                             f"{b.label} has no NCCL transport; NCCL needs CuPy arrays "
                             f"(xad.set_backend('cupy')); use backend='mpi' for host arrays")
        c = NcclComm(transport(), b, MpiComm(timeout=timeout, check=check))
    else:
        raise ValueError(f"xad.distributed.init: backend must be 'mpi', 'nccl' or None, "
                         f"got {backend!r}")
    _state["comm"] = c
    samplers.installed_world = lambda: (c.size, c.rank)
    if c.size > 1:
        _abort_on_error(c)
        atexit.register(_leave, c)


def _abort_on_error(c: Any) -> None:
    """Make an uncaught exception on this rank name the rank and abort every rank."""
    previous = sys.excepthook

    def hook(kind: type, value: BaseException, tb: Any) -> None:
        previous(kind, value, tb)
        _stop(c, f"xad.distributed: rank {c.rank} of {c.size} failed with {kind.__name__}: "
                 f"{value}; aborting every rank", grace=0.2)
    sys.excepthook = hook


def _leave(c: Any) -> None:
    """At exit, tell the other ranks this one leaves; abort every rank when one still waits
    in a collective (or the group failed before), so none waits forever."""
    mpi = getattr(c, "mpi", c).MPI
    if mpi.Is_finalized():
        return  # the program finalised MPI itself: it synchronised the ranks then
    try:
        if c.broken:
            raise RuntimeError(f"the process group failed earlier ({c.broken})")
        agree(c, "exit", describe("leaving"))
    except RuntimeError as e:
        _stop(c, f"xad.distributed: rank {c.rank} of {c.size} is leaving: {e}; aborting "
                 f"every rank", grace=1.0)  # the ranks still waiting print their own error


def _stop(c: Any, message: str, grace: float) -> None:
    """Print ``message``, give the launcher ``grace`` seconds to pass the output on, abort."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    time.sleep(grace)
    c.abort(1)


def comm() -> Any:
    """The process group's communicator (an error when :func:`init` was not called)."""
    c = _state["comm"]
    if c is None:
        raise RuntimeError("xad.distributed: the process group is not initialised; call "
                           "xad.distributed.init() first (launch with `mpiexec -n N python "
                           "script.py`, or run one process for a world of size 1)")
    return c


def is_initialized() -> bool:
    """Whether :func:`init` has run in this process.

    Example:
        >>> import xad.distributed as dist
        >>> dist.init(); dist.is_initialized()
        True
    """
    return _state["comm"] is not None


def rank() -> int:
    """This process's rank, 0 to ``world_size() - 1``.

    Example:
        >>> import xad.distributed as dist
        >>> dist.init(); dist.rank()
        0
    """
    return comm().rank


def world_size() -> int:
    """How many processes the group has.

    Example:
        >>> import xad.distributed as dist
        >>> dist.init(); dist.world_size()
        1
    """
    return comm().size


def barrier() -> None:
    """Wait until every rank reaches this call.

    Example:
        >>> import xad.distributed as dist
        >>> dist.init(); dist.barrier()
    """
    c = comm()
    if c.check and c.size > 1:
        agree(c, "barrier", describe("barrier"))  # the all-gather is itself a barrier
    else:
        c.barrier()


def save(obj: Any, path: str) -> None:
    """Checkpoint as ``xad.save`` on rank 0 only, then wait until it is written; every rank
    may then ``xad.load(path)`` it.

    Example:
        >>> import os, tempfile, xad, xad.distributed as dist
        >>> dist.init(); path = os.path.join(tempfile.mkdtemp(), "ckpt.xad")
        >>> dist.save({"w": xad.ones(2)}, path); xad.load(path)["w"].tolist()
        [1.0, 1.0]
    """
    if comm().rank == 0:
        _save(obj, path)
    barrier()
