"""The NCCL transport (``cupy.cuda.nccl``): collectives on CuPy arrays, on the GPU.

xad never imports CuPy; the CuPy backend hands over a *transport* (``nccl_transport()``)
with: ``nccl`` (the ``cupy.cuda.nccl`` module: ``NcclCommunicator``, ``get_unique_id``, the
``NCCL_*`` constants), ``pointer(a)`` (a device pointer), ``current_stream()`` and
``side_stream()`` (objects with ``.ptr``) and ``after(waiter, producer)`` (``waiter`` waits
for the work queued so far on ``producer``, through an event; the host never waits). MPI
bootstraps the communicator (rank, size, the unique id) as in ChainerMN.

Blocking collectives are queued on the current stream; ``iallreduce`` queues its
``allReduce`` on a side stream once the current stream's work so far is done, and its
``wait()`` makes the current stream wait for it. Not run on a GPU yet: the tests drive this
code through a stand-in communicator that has NCCL's call signatures. The ranks' agreement
on each call (``exchange``) and the barrier go over MPI, with its timeout; the NCCL calls
themselves are queued on streams and not timed here (NCCL's own watchdog settings apply).
"""

from __future__ import annotations

from typing import Any

from ..backend import Backend
from .mpi_comm import MpiComm

__all__ = ["NcclComm"]


class _Pending:
    """An ``allReduce`` queued on the side stream; ``wait()`` orders the current stream
    after it and returns the result (still on the device, no host wait)."""

    def __init__(self, comm: NcclComm, out: Any, shape: tuple) -> None:
        self.comm, self.out, self.shape = comm, out, shape

    def test(self) -> bool:
        return False

    def wait(self) -> Any:
        t = self.comm.transport
        t.after(t.current_stream(), t.side_stream())
        return self.comm.b.xp.reshape(self.out, self.shape)


class NcclComm:
    """Collectives through one ``NcclCommunicator`` per process (one GPU per rank)."""

    name = "nccl"

    def __init__(self, transport: Any, b: Backend, mpi: MpiComm | None = None) -> None:
        self.transport, self.b = transport, b
        self.mpi = mpi if mpi is not None else MpiComm()
        self.rank, self.size = self.mpi.rank, self.mpi.size
        self.check = self.mpi.check
        nccl = transport.nccl
        uid = self.mpi.comm.bcast(nccl.get_unique_id() if self.rank == 0 else None, root=0)
        self.comm = nccl.NcclCommunicator(self.size, uid, self.rank)
        self._types = {"float16": nccl.NCCL_FLOAT16, "float32": nccl.NCCL_FLOAT32,
                       "float64": nccl.NCCL_FLOAT64, "int32": nccl.NCCL_INT32,
                       "int64": nccl.NCCL_INT64, "bool": nccl.NCCL_UINT8}
        self._ops = {"sum": nccl.NCCL_SUM, "max": nccl.NCCL_MAX}

    def _flat(self, a: Any) -> Any:
        """A private, contiguous 1-D copy of ``a`` (NCCL reads and writes flat buffers)."""
        xp = self.b.xp
        return xp.reshape(xp.asarray(a, copy=True), (-1,))

    def _args(self, a: Any, op: str | None = None) -> tuple:
        name = self.b.xad_dtype(a.dtype).name
        if name not in self._types:
            raise TypeError(f"xad.distributed (nccl): no NCCL datatype for {name}")
        if op is None:
            return (self._types[name],)
        return self._types[name], self._ops["max" if name == "bool" else op]

    def allreduce(self, a: Any, b: Backend, op: str) -> Any:
        f, t = self._flat(a), self.transport
        p = t.pointer(f)
        self.comm.allReduce(p, p, f.shape[0], *self._args(a, op), t.current_stream().ptr)
        return b.xp.reshape(f, a.shape)

    def iallreduce(self, a: Any, b: Backend) -> _Pending:
        """Queue a sum of ``a`` on the side stream, after the current stream's work."""
        t = self.transport
        side = t.side_stream()
        t.after(side, t.current_stream())
        f = b.xp.reshape(a, (-1,))
        p = t.pointer(f)
        self.comm.allReduce(p, p, f.shape[0], *self._args(a, "sum"), side.ptr)
        return _Pending(self, f, a.shape)

    def broadcast(self, a: Any, b: Backend, root: int) -> Any:
        f, t = self._flat(a), self.transport
        self.comm.bcast(t.pointer(f), f.shape[0], *self._args(a), root, t.current_stream().ptr)
        return b.xp.reshape(f, a.shape)

    def all_gather(self, a: Any, b: Backend) -> Any:
        f, t = self._flat(a), self.transport
        out = b.zeros((self.size * f.shape[0],), a.dtype)
        self.comm.allGather(t.pointer(f), t.pointer(out), f.shape[0], *self._args(a),
                            t.current_stream().ptr)
        return b.xp.reshape(out, (self.size, *a.shape))

    def reduce_scatter(self, a: Any, b: Backend, op: str) -> Any:
        f, t = self._flat(a), self.transport
        n = f.shape[0] // self.size
        out = b.zeros((n,), a.dtype)
        self.comm.reduceScatter(t.pointer(f), t.pointer(out), n, *self._args(a, op),
                                t.current_stream().ptr)
        return b.xp.reshape(out, (a.shape[0] // self.size, *a.shape[1:]))

    @property
    def broken(self) -> str:
        return self.mpi.broken

    def exchange(self, desc: Any, what: str) -> Any:
        return self.mpi.exchange(desc, what)

    def gather_objects(self, obj: Any) -> list:
        return self.mpi.gather_objects(obj)

    def barrier(self) -> None:
        self.mpi.barrier()

    def abort(self, code: int = 1) -> None:
        self.mpi.abort(code)
