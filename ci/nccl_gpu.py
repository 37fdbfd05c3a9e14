"""On a real GPU (ci/gpu.sh): xad.distributed's NCCL path with world size 1, through CuPy's
own ``cupy.cuda.nccl`` (issue 25, item 7; CI runs it only through ``nccl_standin``, a
stand-in over MPI on host memory). One GPU allows no more than one rank, so what this
proves is the binding, not the exchange: the communicator is made from a real unique id,
every collective's call (pointers, counts, NCCL datatypes and ops, stream handles) is
accepted by NCCL and gives the one-rank answer for each dtype, and DataParallel trains
exactly as one process, with the overlapped all-reduces on a side stream ordered by CUDA
events. Prints one line per check and exits non-zero on a failure.

``--sim`` rehearses it on the emulator (``cupy-sim``) with a one-rank NCCL of its own
(copies between emulated device buffers), where every check passes.
"""

from __future__ import annotations

import os
import sys

import numpy as np

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [_ROOT, os.path.join(_ROOT, "tests")]
from gpu_checks import check, status  # noqa: E402 - ci/, the script's folder

import xad  # noqa: E402
import xad.distributed as dist  # noqa: E402
from xad import nn  # noqa: E402
from xad.distributed import world  # noqa: E402


def sim_backend() -> str:
    """cupy-sim with a one-rank NCCL whose collectives copy between emulated buffers."""
    import cupy_sim
    from cupy_sim.core import memory_at

    cupy_sim.register()
    b = xad.set_backend("cupy-sim")

    def view(ptr: int, count: int, dtype: int) -> np.ndarray:
        dt = {2: np.int32, 4: np.int64, 1: np.uint8, 7: np.float32, 8: np.float64}[dtype]
        flat, i = memory_at(ptr, dt)
        return flat[i:i + count]

    class Comm:
        def __init__(self, ndev: int, uid: object, rank: int) -> None:
            assert (ndev, rank) == (1, 0)

        def allReduce(self, send, recv, count, dtype, op, stream):  # noqa: N802
            view(recv, count, dtype)[...] = view(send, count, dtype)

        def bcast(self, buf, count, dtype, root, stream):
            assert root == 0

        def allGather(self, send, recv, count, dtype, stream):  # noqa: N802
            view(recv, count, dtype)[...] = view(send, count, dtype)

        def reduceScatter(self, send, recv, count, dtype, op, stream):  # noqa: N802
            view(recv, count, dtype)[...] = view(send, count, dtype)

    class Nccl:
        NCCL_UINT8, NCCL_INT32, NCCL_INT64, NCCL_FLOAT16, NCCL_FLOAT32 = 1, 2, 4, 6, 7
        NCCL_FLOAT64, NCCL_SUM, NCCL_MAX = 8, 0, 2
        NcclCommunicator = Comm

        @staticmethod
        def get_unique_id() -> tuple:
            return tuple(range(128))

    def transport() -> object:  # the backend's own transport, made with the emulator's
        from xad_backends.cupy_backend import _NcclTransport

        t = object.__new__(_NcclTransport)
        t.nccl, t._cp = Nccl, cupy_sim.cupy  # streams and events
        t._side = cupy_sim.cupy.cuda.Stream(non_blocking=True)
        return t

    b.nccl_transport = transport
    return "cupy-sim"


def collectives() -> None:
    """Each collective on each NCCL dtype: with one rank, every result is the input."""
    rng = np.random.default_rng(0)
    for dtype in ("float32", "float64", "int32", "int64", "bool"):
        for shape in ((), (5,), (4, 3)):
            a = rng.standard_normal(shape) * 10
            a = (a > 0) if dtype == "bool" else a.astype(dtype)
            ops = ("max",) if dtype == "bool" else ("sum", "max") if "int" in dtype \
                else ("sum", "max", "mean")
            ok = all(np.array_equal(dist.all_reduce(xad.tensor(a), op=op).numpy(), a)
                     for op in ops)
            ok &= np.array_equal(dist.broadcast(xad.tensor(a), root=0).numpy(), a)
            got = dist.all_gather(xad.tensor(a))
            ok &= len(got) == 1 and np.array_equal(got[0].numpy(), a)
            if shape:
                ok &= np.array_equal(dist.reduce_scatter(xad.tensor(a)).numpy(), a)
            check(f"collectives {dtype} {shape}", bool(ok))


def data_parallel(overlap: bool) -> None:
    """DataParallel (several buckets) against the same model trained alone: equal after
    eight SGD steps with momentum."""
    def model() -> nn.Module:
        xad.manual_seed(1)
        return nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 32), nn.Tanh(),
                             nn.Linear(32, 1))

    ddp, ref = dist.DataParallel(model(), bucket_mb=0.004, overlap=overlap), model()
    rng = np.random.default_rng(2)
    batches = [(xad.tensor(rng.standard_normal((32, 16)).astype(np.float32)),
                xad.tensor(rng.standard_normal((32, 1)).astype(np.float32))) for _ in range(8)]
    for m in (ddp, ref):
        opt = xad.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
        for x, y in batches:
            opt.zero_grad()
            nn.functional.mse_loss(m(x), y).backward()
            opt.step()
    err = max(float(np.abs(a.numpy() - b.numpy()).max())
              for a, b in zip(ddp.parameters(), ref.parameters()))
    check(f"DataParallel overlap={overlap} ({len(ddp._reducer.buckets)} buckets) equals one "
          f"process", err <= 1e-6, f"max |diff| {err:.2e}")


def main() -> int:
    backend = sim_backend() if "--sim" in sys.argv else "cupy"
    xad.set_backend(backend)
    dist.init("nccl")
    check("init('nccl'): one rank", (dist.world_size(), dist.rank()) == (1, 0),
          f"{world.comm().name}, backend {backend}")
    collectives()
    data_parallel(overlap=True)
    data_parallel(overlap=False)
    return status()


if __name__ == "__main__":
    sys.exit(main())
