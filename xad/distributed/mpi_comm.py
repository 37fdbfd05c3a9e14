"""The MPI transport (``mpi4py``): collectives on host arrays of any backend.

MPI reads and writes host buffers, so each array goes through its backend's explicit host
path: ``Backend.to_numpy`` (a view on NumPy, a copy on torch, JAX and array_api_strict) and
``Backend.from_numpy`` back. ``mpi4py`` infers the MPI datatype from the buffer; booleans
reduce with a logical or. bfloat16, which MPI cannot name (and NumPy only through
``ml_dtypes``), travels as float32 (which holds every value) and comes back as bfloat16.
``iallreduce`` starts a non-blocking ``Iallreduce`` and returns a handle whose ``wait()``
gives the result.

A collective that waits longer than ``timeout`` seconds ends the job: MPI has no timeout
of its own, and polling a non-blocking call from Python slowed DataParallel's all-reduces
by up to a half here (MPICH's blocking wait spins and yields in C), so the calls stay
blocking and a watchdog thread per process (``_Watchdog``, as torch's NCCL watchdog) prints
which rank waited in which call and exits the process, which makes the launcher stop every
rank. An MPI error becomes a ``RuntimeError`` naming the call.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

from ..backend import Backend

__all__ = ["MpiComm", "load_mpi"]


def load_mpi() -> Any:
    """The ``mpi4py.MPI`` module (initialises MPI), or an error naming the extra."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError(f"xad.distributed needs mpi4py and an MPI library ({e}); install "
                          f"them with `pip install 'xad[mpi]'`") from e
    return MPI


class _Watchdog:
    """A daemon thread that ends the process when one collective outlasts ``timeout``."""

    def __init__(self, label: str, timeout: float) -> None:
        self.label, self.timeout = label, timeout
        self.current: tuple[str, float] | None = None  # (the call, its deadline)
        threading.Thread(target=self._watch, name="xad.distributed watchdog",
                         daemon=True).start()

    def _watch(self) -> None:
        while True:
            time.sleep(min(1.0, self.timeout / 4))
            current = self.current
            if current is not None and time.monotonic() > current[1]:
                sys.stderr.write(
                    f"xad.distributed: {self.label}: {current[0]}: not every rank joined "
                    f"within {self.timeout:g} s (init(timeout=...)): a rank is stuck, has "
                    f"died, or is in another collective; aborting every rank\n")
                sys.stderr.flush()
                os._exit(1)  # the launcher then stops the other ranks


def _back(b: Backend, h: Any, dtype: Any) -> Any:
    """The host array ``h`` on ``b``'s device, in the native ``dtype`` it left with (torch
    hands bfloat16 out as float32, and :meth:`MpiComm._host` turns JAX's into float32)."""
    out = b.from_numpy(h)
    return out if out.dtype == dtype else b.xp.astype(out, dtype)


class _Pending:
    """A started ``Iallreduce``: ``wait()`` returns the reduced array on its backend."""

    def __init__(self, comm: MpiComm, request: Any, host: Any, b: Backend, dtype: Any) -> None:
        self.comm, self.request, self.host, self.b, self.dtype = comm, request, host, b, dtype

    def test(self) -> bool:
        """Give MPI a chance to progress; True once done."""
        return self.request.Test()

    def wait(self) -> Any:
        self.comm.call("DataParallel backward", self.request.Wait)
        return _back(self.b, self.host, self.dtype)


class MpiComm:
    """Collectives over an ``mpi4py`` communicator (``COMM_WORLD`` by default)."""

    name = "mpi"

    def __init__(self, comm: Any = None, timeout: float = 600.0, check: bool = True) -> None:
        self.MPI = load_mpi()
        self.comm = comm if comm is not None else self.MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.timeout, self.check = timeout, check
        self.broken = ""
        self.watchdog = _Watchdog(f"rank {self.rank} of {self.size}", timeout) \
            if self.size > 1 else None

    def call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` under the watchdog; an MPI error raised naming ``what``."""
        if self.broken:
            raise RuntimeError(f"xad.distributed.{what}: the process group is unusable after "
                               f"an earlier failure ({self.broken})")
        dog = self.watchdog
        if dog is not None:
            dog.current = (what, time.monotonic() + self.timeout)
        try:
            return fn(*args, **kwargs)
        except self.MPI.Exception as e:
            self.broken = f"MPI error in {what}"
            raise RuntimeError(f"xad.distributed.{what}: MPI failed ({e.Get_error_string()}): "
                               f"the ranks are out of step (different collectives, dtypes or "
                               f"sizes); run with checks on (init(check=True)) to have them "
                               f"named") from None
        finally:
            if dog is not None:
                dog.current = None

    def exchange(self, desc: Any, what: str) -> Any:
        """All-gather the int64 buffer ``desc`` (an ``array.array``) from every rank."""
        out = type(desc)(desc.typecode, bytes(desc.itemsize * len(desc) * self.size))
        self.call(what, self.comm.Allgather, [desc, self.MPI.INT64_T], [out, self.MPI.INT64_T])
        return out

    def _op(self, op: str, host: Any) -> Any:
        if host.dtype.kind == "b":  # MPI defines no SUM/MAX on booleans: a logical or
            return self.MPI.LOR
        return {"sum": self.MPI.SUM, "max": self.MPI.MAX}[op]

    @staticmethod
    def _host(b: Backend, a: Any, private: bool = True) -> Any:
        """``a`` as a writable, contiguous NumPy array (the backend's explicit host path);
        a private copy unless ``private`` is False and NumPy already gave one."""
        h = b.to_numpy(a)
        if h.dtype.kind == "V" or h.dtype.kind == "f" and h.dtype.itemsize == 2:
            # bfloat16 on JAX (ml_dtypes) has no MPI datatype, float16 none in Open MPI
            # (MPI_ERR_TYPE on a GPU machine's image; MPICH's is an extension): summed as
            # float32, rounded once on the way back
            return h.astype("float32")
        if private or h is not a or not h.flags.c_contiguous or not h.flags.writeable:
            h = h.copy()
        return h

    def gather_objects(self, obj: Any) -> list:
        """Every rank's picklable ``obj`` (for error reports, after the ranks agreed)."""
        return self.call("DataParallel", self.comm.allgather, obj)

    def allreduce(self, a: Any, b: Backend, op: str) -> Any:
        h = self._host(b, a)
        self.call("all_reduce", self.comm.Allreduce, self.MPI.IN_PLACE, h, op=self._op(op, h))
        return _back(b, h, a.dtype)

    def iallreduce(self, a: Any, b: Backend) -> _Pending:
        """Start summing ``a`` (a fresh array the caller gives up) across ranks."""
        h = self._host(b, a, private=False)
        return _Pending(self, self.comm.Iallreduce(self.MPI.IN_PLACE, h, op=self._op("sum", h)),
                        h, b, a.dtype)

    def broadcast(self, a: Any, b: Backend, root: int) -> Any:
        h = self._host(b, a)
        self.call("broadcast", self.comm.Bcast, h, root=root)
        return _back(b, h, a.dtype)

    def all_gather(self, a: Any, b: Backend) -> Any:
        h = self._host(b, a)
        out = self._host(b, b.zeros((self.size, *a.shape), a.dtype))
        self.call("all_gather", self.comm.Allgather, h, out)
        return _back(b, out, a.dtype)

    def reduce_scatter(self, a: Any, b: Backend, op: str) -> Any:
        h = self._host(b, a)
        out = self._host(b, b.zeros((a.shape[0] // self.size, *a.shape[1:]), a.dtype))
        self.call("reduce_scatter", self.comm.Reduce_scatter_block, h, out, op=self._op(op, h))
        return _back(b, out, a.dtype)

    def barrier(self) -> None:
        self.call("barrier", self.comm.Barrier)

    def abort(self, code: int = 1) -> None:
        self.comm.Abort(code)
