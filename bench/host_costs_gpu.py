"""Host time per CuPy call for what xad's eager attention step calls most (issue 25, item 5).

An H200 profile of the eager attention-encoder step (docs/GPU.md, third run) put about
100 us of host time on each ``cupy.matmul`` and 90 us on each one-reduction ``cupy.fuse``
kernel, where PyTorch spends about 25 us per kernel in all. This times each candidate alone
on the device's default stream: ``--calls`` calls enqueued back to back, then one
synchronisation, best of ``--repeat``, in microseconds per call (the kernels are small, so
the GPU keeps up and the host's enqueue time is what is measured). Candidates: CuPy's
``matmul`` on 2-D, 3-D by 2-D (a linear layer on a batch: CuPy broadcasts the weight) and
batched 4-D operands; xad's own cuBLAS handle (backends/cupy_blas.py) on the same; a
``cupy.fuse`` reduction against ``cupy.ReductionKernel`` and ``cupy.sum``; a ``cupy.fuse``
elementwise kernel against ``cupy.ElementwiseKernel`` and a plain ufunc.

Run: ``python bench/host_costs_gpu.py [--calls 200] [--repeat 5]``; ``--sim`` rehearses it
on the emulator (its times mean nothing).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [_ROOT, os.path.join(_ROOT, "tests")]


def _cupy(sim: bool) -> Any:
    if not sim:
        import cupy
        return cupy
    import cupy_sim

    cupy_sim.register()
    return cupy_sim.cupy


def per_call(fn: Callable[[], Any], sync: Callable[[], None], calls: int, repeat: int) -> float:
    """Microseconds per call: ``calls`` calls then one synchronisation, best of ``repeat``."""
    fn()
    sync()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, time.perf_counter() - t)
    return best / calls * 1e6


def _own_blas(cp: Any, sim: bool) -> Any:
    """xad's own cuBLAS handle bound to the current stream (as the backend makes it for a
    capture, on its side stream); ``None`` where it cannot be made."""
    from backends.cupy_blas import OwnBlas, load

    try:
        if sim:
            from cupy_sim import blas
            cublas, lib = blas.cublas, blas.lib
        else:
            cublas, lib = load(cp)
        return OwnBlas(cp, cublas, lib, cp.cuda.get_current_stream())
    except Exception as e:  # noqa: BLE001 - reported, the rest still runs
        print(f"own cuBLAS handle: unavailable ({type(e).__name__}: {e})")
        return None


def candidates(cp: Any, sim: bool) -> dict[str, Callable[[], Any]]:
    f32 = cp.float32
    x2, w = cp.ones((2048, 128), f32), cp.ones((384, 128), f32)
    x3 = x2.reshape(32, 64, 128)
    q, k = cp.ones((32, 4, 64, 32), f32), cp.ones((32, 4, 32, 64), f32)
    out = {"matmul 2-D (2048x128 @ w.T)": lambda: cp.matmul(x2, w.T),
           "matmul 3-D @ 2-D (32x64x128 @ w.T)": lambda: cp.matmul(x3, w.T),
           "matmul 4-D batched (q @ k)": lambda: cp.matmul(q, k)}
    blas = _own_blas(cp, sim)
    if blas is not None:
        out.update({"own cuBLAS 2-D": lambda: blas.matmul(x2, w.T),
                    "own cuBLAS 4-D batched": lambda: blas.matmul(q, k)})
    a = cp.ones((2048, 128), f32)
    fused_sum = cp.fuse(kernel_name="host_sum")(lambda v: cp.sum(v * v, axis=1))
    fused_axpb = cp.fuse(kernel_name="host_axpb")(lambda v: v * 2 + 1)  # (made once: a
    out.update({"cupy.sum(axis=1)": lambda: cp.sum(a, axis=1),  # call's cost, not the make)
                "cupy.fuse reduction (sum of squares)": lambda: fused_sum(a),
                "cupy.fuse elementwise (a * 2 + 1)": lambda: fused_axpb(a),
                "ufunc (cupy.multiply)": lambda: cp.multiply(a, a)})
    if not sim:
        red = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = a", "0", "host_red")
        ew = cp.ElementwiseKernel("T x", "T y", "y = x * 2 + 1", "host_ew")
        out.update({"ReductionKernel (sum of squares)": lambda: red(a, axis=1),
                    "ElementwiseKernel (a * 2 + 1)": lambda: ew(a)})
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--sim", action="store_true", help="rehearse on the emulator")
    args = p.parse_args()
    cp = _cupy(args.sim)
    sync = cp.cuda.get_current_stream().synchronize
    print("| call | host us/call |\n| --- | ---: |")
    for name, fn in candidates(cp, args.sim).items():
        print(f"| {name} | {per_call(fn, sync, args.calls, args.repeat):.1f} |")


if __name__ == "__main__":
    main()
