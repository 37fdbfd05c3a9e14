"""The MPI transport (``mpi4py``): collectives on host arrays of any backend.

MPI reads and writes host buffers, so each array goes through its backend's explicit host
path: ``Backend.to_numpy`` (a view on NumPy, a copy on torch, JAX and array_api_strict) and
``Backend.from_numpy`` back. ``mpi4py`` infers the MPI datatype from the buffer; booleans
reduce with a logical or. ``iallreduce`` starts a non-blocking ``Iallreduce`` and returns a
handle whose ``wait()`` gives the result.
"""

from __future__ import annotations

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

    def __init__(self, request: Any, host: Any, b: Backend) -> None:
        self.request, self.host, self.b = request, host, b

    def test(self) -> bool:
        """Give MPI a chance to progress; True once done."""
        return self.request.Test()

    def wait(self) -> Any:
        self.request.Wait()
        return self.b.from_numpy(self.host)


class MpiComm:
    """Collectives over an ``mpi4py`` communicator (``COMM_WORLD`` by default)."""

    name = "mpi"

    def __init__(self, comm: Any = None) -> None:
        self.MPI = load_mpi()
        self.comm = comm if comm is not None else self.MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()

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

    def allreduce(self, a: Any, b: Backend, op: str) -> Any:
        h = self._host(b, a)
        self.comm.Allreduce(self.MPI.IN_PLACE, h, op=self._op(op, h))
        return b.from_numpy(h)

    def iallreduce(self, a: Any, b: Backend) -> _Pending:
        """Start summing ``a`` (a fresh array the caller gives up) across ranks."""
        h = self._host(b, a, private=False)
        return _Pending(self.comm.Iallreduce(self.MPI.IN_PLACE, h, op=self._op("sum", h)),
                        h, b)

    def broadcast(self, a: Any, b: Backend, root: int) -> Any:
        h = self._host(b, a)
        self.comm.Bcast(h, root=root)
        return b.from_numpy(h)

    def all_gather(self, a: Any, b: Backend) -> Any:
        h = self._host(b, a)
        out = self._host(b, b.zeros((self.size, *a.shape), a.dtype))
        self.comm.Allgather(h, out)
        return b.from_numpy(out)

    def reduce_scatter(self, a: Any, b: Backend, op: str) -> Any:
        h = self._host(b, a)
        out = self._host(b, b.zeros((a.shape[0] // self.size, *a.shape[1:]), a.dtype))
        self.comm.Reduce_scatter_block(h, out, op=self._op(op, h))
        return b.from_numpy(out)

    def barrier(self) -> None:
        self.comm.Barrier()

    def abort(self, code: int = 1) -> None:
        self.comm.Abort(code)
