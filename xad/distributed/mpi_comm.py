"""The MPI transport (``mpi4py``): collectives on host arrays of any backend.

MPI reads and writes host buffers, so each array goes through its backend's explicit host
path: ``Backend.to_numpy`` (a view on NumPy, a copy on torch, JAX and array_api_strict) and
``Backend.from_numpy`` back. ``mpi4py`` infers the MPI datatype from the buffer; booleans
reduce with a logical or. ``iallreduce`` starts a non-blocking ``Iallreduce`` and returns a
handle whose ``wait()`` gives the result.

Every collective runs as its non-blocking form, polled until done or until ``timeout``
seconds have passed (MPI has no timeout of its own): then it raises ``TimeoutError`` and the
communicator is marked broken (the uncaught error aborts every rank). The poll spins for
2 ms, then sleeps a tenth of the time waited so far (at most 1 ms), so a long wait leaves
the core to the others and adds at most ~10% to it.
"""

from __future__ import annotations

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


class _Pending:
    """A started ``Iallreduce``: ``wait()`` returns the reduced array on its backend."""

    def __init__(self, comm: MpiComm, request: Any, host: Any, b: Backend) -> None:
        self.comm, self.request, self.host, self.b = comm, request, host, b

    def test(self) -> bool:
        """Give MPI a chance to progress; True once done."""
        return self.request.Test()

    def wait(self) -> Any:
        self.comm.wait(self.request, "DataParallel backward")
        return self.b.from_numpy(self.host)


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

    def wait(self, request: Any, what: str) -> None:
        """Wait for ``request``; raise after ``timeout`` seconds, or on an MPI error."""
        if self.broken:
            raise RuntimeError(f"xad.distributed.{what}: the process group is unusable after "
                               f"an earlier failure ({self.broken})")
        start = time.monotonic()
        while not self._test(request, what):
            waited = time.monotonic() - start
            if waited > self.timeout:
                self.broken = f"{what} timed out"
                raise TimeoutError(
                    f"xad.distributed.{what}: not every rank joined within {self.timeout:g} s "
                    f"(init(timeout=...)): a rank is stuck, has died, or is in another "
                    f"collective; this rank gives up and the process group is unusable")
            if waited > 2e-3:  # spin 2 ms, then sleep a tenth of the wait so far (<= 1 ms)
                time.sleep(min(1e-3, 0.1 * waited))

    def _test(self, request: Any, what: str) -> bool:
        try:
            return request.Test()
        except self.MPI.Exception as e:
            self.broken = f"MPI error in {what}"
            raise RuntimeError(f"xad.distributed.{what}: MPI failed ({e.Get_error_string()}): "
                               f"the ranks are out of step (different collectives, dtypes or "
                               f"sizes); run with checks on (init(check=True)) to have them "
                               f"named") from None

    def exchange(self, desc: Any, what: str) -> Any:
        """All-gather the int64 buffer ``desc`` (an ``array.array``) from every rank."""
        out = type(desc)(desc.typecode, bytes(desc.itemsize * len(desc) * self.size))
        self.wait(self.comm.Iallgather([desc, self.MPI.INT64_T], [out, self.MPI.INT64_T]),
                  what)
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
        if private or h is not a or not h.flags.c_contiguous or not h.flags.writeable:
            h = h.copy()
        return h

    def gather_objects(self, obj: Any) -> list:
        """Every rank's picklable ``obj`` (for error reports, after the ranks agreed)."""
        return self.comm.allgather(obj)

    def allreduce(self, a: Any, b: Backend, op: str) -> Any:
        h = self._host(b, a)
        self.wait(self.comm.Iallreduce(self.MPI.IN_PLACE, h, op=self._op(op, h)), "all_reduce")
        return b.from_numpy(h)

    def iallreduce(self, a: Any, b: Backend) -> _Pending:
        """Start summing ``a`` (a fresh array the caller gives up) across ranks."""
        h = self._host(b, a, private=False)
        return _Pending(self, self.comm.Iallreduce(self.MPI.IN_PLACE, h, op=self._op("sum", h)),
                        h, b)

    def broadcast(self, a: Any, b: Backend, root: int) -> Any:
        h = self._host(b, a)
        self.wait(self.comm.Ibcast(h, root=root), "broadcast")
        return b.from_numpy(h)

    def all_gather(self, a: Any, b: Backend) -> Any:
        h = self._host(b, a)
        out = self._host(b, b.zeros((self.size, *a.shape), a.dtype))
        self.wait(self.comm.Iallgather(h, out), "all_gather")
        return b.from_numpy(out)

    def reduce_scatter(self, a: Any, b: Backend, op: str) -> Any:
        h = self._host(b, a)
        out = self._host(b, b.zeros((a.shape[0] // self.size, *a.shape[1:]), a.dtype))
        self.wait(self.comm.Ireduce_scatter_block(h, out, op=self._op(op, h)), "reduce_scatter")
        return b.from_numpy(out)

    def barrier(self) -> None:
        self.wait(self.comm.Ibarrier(), "barrier")

    def abort(self, code: int = 1) -> None:
        self.comm.Abort(code)
