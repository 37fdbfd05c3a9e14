"""A stand-in for ``cupy.cuda.nccl`` (tests only): NCCL's call signatures on raw pointers,
carried out over MPI on host memory, so xad's NCCL code path runs without a GPU.

It takes what ``cupy.cuda.nccl.NcclCommunicator`` takes (``allReduce(sendbuf, recvbuf,
count, datatype, op, stream)``, ``bcast(buff, count, datatype, root, stream)``,
``allGather(sendbuf, recvbuf, count, datatype, stream)``, ``reduceScatter(sendbuf, recvbuf,
recvcount, datatype, op, stream)``, pointers as ints) and NCCL's enum values.
"""

import ctypes

import numpy as np
from mpi4py import MPI


class nccl:  # noqa: N801 - stands in for the module cupy.cuda.nccl
    NCCL_INT8, NCCL_UINT8, NCCL_INT32, NCCL_UINT32, NCCL_INT64 = 0, 1, 2, 3, 4
    NCCL_UINT64, NCCL_FLOAT16, NCCL_FLOAT32, NCCL_FLOAT64 = 5, 6, 7, 8
    NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN = 0, 1, 2, 3
    DTYPES = {0: np.int8, 1: np.uint8, 2: np.int32, 3: np.uint32, 4: np.int64,
              5: np.uint64, 6: np.float16, 7: np.float32, 8: np.float64}
    OPS = {0: MPI.SUM, 1: MPI.PROD, 2: MPI.MAX, 3: MPI.MIN}
    calls: list = []

    @staticmethod
    def get_unique_id():
        return tuple(range(128))

    class NcclCommunicator:
        def __init__(self, ndev, commId, rank):
            self.comm = MPI.COMM_WORLD
            assert (ndev, rank) == (self.comm.Get_size(), self.comm.Get_rank())
            assert commId == tuple(range(128))

        @staticmethod
        def _view(ptr, count, datatype):
            dt = np.dtype(nccl.DTYPES[datatype])
            raw = (ctypes.c_char * (count * dt.itemsize)).from_address(ptr)
            return np.frombuffer(raw, dtype=dt, count=count)

        def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):
            nccl.calls.append(("allReduce", stream))
            send = self._view(sendbuf, count, datatype).copy()
            self.comm.Allreduce(send, self._view(recvbuf, count, datatype), op=nccl.OPS[op])

        def bcast(self, buff, count, datatype, root, stream):
            nccl.calls.append(("bcast", stream))
            self.comm.Bcast(self._view(buff, count, datatype), root=root)

        def allGather(self, sendbuf, recvbuf, count, datatype, stream):
            nccl.calls.append(("allGather", stream))
            n = self.comm.Get_size()
            self.comm.Allgather(self._view(sendbuf, count, datatype).copy(),
                                self._view(recvbuf, count * n, datatype))

        def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):
            nccl.calls.append(("reduceScatter", stream))
            n = self.comm.Get_size()
            send = self._view(sendbuf, recvcount * n, datatype).copy()
            self.comm.Reduce_scatter_block(send, self._view(recvbuf, recvcount, datatype),
                                           op=nccl.OPS[op])


class _Stream:
    def __init__(self, ptr):
        self.ptr = ptr


class Transport:
    """What ``CupyBackend.nccl_transport()`` returns, on NumPy arrays: host pointers, two
    named streams, and ``after`` recording the stream orderings asked for."""

    nccl = nccl

    def __init__(self):
        self.current, self.side, self.orders = _Stream(1), _Stream(2), []

    @staticmethod
    def pointer(a):
        return a.__array_interface__["data"][0]

    def current_stream(self):
        return self.current

    def side_stream(self):
        return self.side

    def after(self, waiter, producer):
        self.orders.append((waiter.ptr, producer.ptr))
