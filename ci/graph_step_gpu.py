"""On a real GPU (ci/gpu.sh): what the emulator can only model of a compiled step as one
CUDA graph (issue 25, item 4). Prints one line per check and exits non-zero on a failure.

1. xad's own cuBLAS handle (backends/cupy_blas.py) multiplies inside a stream capture, where
   CuPy's matmul refuses, and the graph's product equals ``cupy.matmul`` (float32/64, a
   transposed operand, a batch, a broadcast matrix);
2. the bench MLP, attention and digits (dropout) steps compiled with ``cuda_graphs=True``
   launch 1-2 graphs and match the eager step (tolerance: cuBLAS may pick other
   algorithms per handle);
3. a scheduler's learning-rate change reaches the replayed graph.

``--sim`` rehearses it on the emulator (``cupy-sim``), where every check passes.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [os.path.join(_ROOT, "bench"), os.path.join(_ROOT, "tests")]
from gpu_checks import check, status  # noqa: E402 - ci/, the script's folder

import xad  # noqa: E402
from xad import nn  # noqa: E402

if "--sim" in sys.argv:  # a rehearsal on the CuPy emulator (CI has no GPU)
    import cupy_sim

    cupy_sim.register()
    cupy, BACKEND = cupy_sim.cupy, "cupy-sim"
else:
    import cupy  # noqa: E402

    BACKEND = "cupy"

def products() -> None:
    b = xad.set_backend(BACKEND)
    rng = np.random.default_rng(0)
    cases = [((64, 32), (32, 48)), ((8, 64, 32), (32, 48)), ((8, 64, 32), (8, 32, 16)),
             ((32,), (32, 5))]
    for dtype in (np.float16, np.float32, np.float64):  # float16: autocast's, by gemmEx
        tol = 2e-3 if dtype == np.float16 else 1e-5  # (CuPy's N-d float16 goes by float32)
        for sx, sy in cases:
            x, y = (cupy.asarray(rng.standard_normal(s).astype(dtype)) for s in (sx, sy))
            yt = cupy.ascontiguousarray(y.swapaxes(-1, -2)).swapaxes(-1, -2)
            for yy in (y, yt):
                assert b.captures_matmul(x.dtype)
                pool = b.graph_pool()
                with b.graph_capture(pool):
                    b.begin_graph(pool)
                    z = b.xp.matmul(x, yy)
                    g = b.end_graph()
                b.launch_graph(g)
                want = cupy.matmul(x, yy)
                err = float(abs(z - want).max() / (abs(want).max() + 1e-30))
                check(f"captured gemm {np.dtype(dtype).name} {sx}@{sy}", err < tol, f"{err:.2e}")
    try:
        s = cupy.cuda.Stream(non_blocking=True)
        with s:
            s.begin_capture()
            try:
                cupy.matmul(x, y)
                refused = False
            except NotImplementedError:
                refused = True
            finally:
                s.end_capture()
        check("CuPy's own matmul refuses capture (the emulator models this)", refused)
    except Exception as e:  # noqa: BLE001
        check("CuPy's own matmul refuses capture", False, repr(e))


def steps() -> None:
    import bench_kernels as bk

    xad.set_backend(BACKEND)
    for name in ("mlp", "attention", "digits"):  # digits: dropout drawn inside the graph
        out = []
        for compiled in (False, True):
            xad.manual_seed(0)
            step = bk.WORKLOADS[name](compiled)
            out.append([step().numpy() for _ in range(6)])
        err = float(np.max(np.abs(np.array(out[0]) - np.array(out[1]))))
        fn = next(c.cell_contents for c in step.__closure__
                  if hasattr(c.cell_contents, "graphs"))
        check(f"{name}: compiled + graphs matches eager", err < 1e-4, f"max |dloss| {err:.2e}")
        check(f"{name}: graphs per step <= 2", 1 <= fn.graphs <= 2, f"graphs={fn.graphs}")


def _scheduled(compiled: bool, amp: bool = False) -> tuple[list, Any]:
    """Losses of 8 steps of AdamW under OneCycleLR (the rate and betas change at every
    step); with ``amp``, float16 autocast and a GradScaler whose first steps overflow."""
    xad.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))
    opt = xad.optim.AdamW(model.parameters(), lr=0.05, capturable=True)
    sched = xad.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=8)
    scaler = xad.amp.GradScaler(init_scale=2.0 ** 20, growth_interval=2, enabled=amp)
    x, y = xad.randn(4, 6) * (100 if amp else 1), xad.randn(4, 2)

    def body(x, y):
        opt.zero_grad()
        with xad.amp.autocast(xad.float16, enabled=amp):
            loss = nn.functional.mse_loss(model(x).float(), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        sched.step()
        return loss.detach()

    fn = xad.compile(body, cuda_graphs=True) if compiled else body
    return [fn(x, y).numpy() for _ in range(8)] + [scaler.get_scale()], fn


def scheduler() -> None:
    xad.set_backend(BACKEND)
    for amp in (False, True):
        (eager, _), (graph, fn) = (_scheduled(compiled, amp) for compiled in (False, True))
        err = float(np.max(np.abs(np.array(eager) - np.array(graph))))
        what = "an AMP step (GradScaler on the device, float16 products)" if amp else \
            "OneCycleLR's rate and betas"
        check(f"{what} reach the replayed graph", err < 1e-3 if amp else 1e-5, f"{err:.2e}")
        check(f"{what}: one graph a step, one recording", fn.graphs == 1 and
              fn.recordings == 1, f"graphs={fn.graphs} recordings={fn.recordings}")


if __name__ == "__main__":
    for part in (products, steps, scheduler):
        try:
            part()
        except Exception as e:  # noqa: BLE001 - report and go on
            check(part.__name__, False, f"{type(e).__name__}: {e}")
    sys.exit(status())
