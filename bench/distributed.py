"""Data-parallel scaling of the ``mlp`` training step (784-512-512-10, global batch 256,
float32, Adam) from 1 to 2 processes over MPI on this machine.

``python bench/distributed.py [--steps N]`` launches itself with ``mpiexec -n 1`` and
``-n 2`` (each process single-threaded BLAS, so 2 processes use the 2 cores). In each
launch every configuration has its own model and optimiser and they take steps in
rotation (so drift in the machine's load hits all alike). It prints a Markdown table:
milliseconds per global batch (median over steps, rank 0), and the share of the step a rank
spends blocked in ``DataParallel``'s wait for the gradient all-reduces, with each bucket's
all-reduce started during the backward (overlapped) or only after it.

``python bench/distributed.py --collectives [--steps N]`` instead times one ``all_reduce``
on 2 processes, by size: mpi4py's own blocking ``Allreduce`` on the NumPy array (the floor),
xad with the ranks' agreement on each call (the default) and without it
(``init(check=False)``, the fast mode); microseconds per call: the median round of 50
calls (the fastest round in parentheses, the least disturbed by other load).
``--fast`` trains with ``init(check=False)`` (DataParallel then skips its agreement per
backward).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
sys.path.insert(0, _ROOT)
CONFIGS = {1: [("plain", 25, True), ("ddp", 25, True)],
           2: [("ddp", 25, True), ("ddp", 25, False), ("ddp", 1, True), ("ddp", 1, False)]}


def worker(steps: int, fast: bool) -> None:
    import numpy as np
    from bench_mlp import mlp_spec

    import xad
    from xad import nn
    spec = mlp_spec("mlp", "full")
    xad.distributed.init("mpi", check=not fast)
    rank, size = xad.distributed.rank(), xad.distributed.world_size()
    runs = []
    for kind, mb, overlap in CONFIGS[size]:
        model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                              nn.Linear(512, 10))
        with xad.no_grad():
            for p, w in zip(model.parameters(), spec.params):
                p.copy_(xad.tensor(w))
        if kind == "ddp":
            model = xad.distributed.DataParallel(model, bucket_mb=mb, overlap=overlap)
        runs.append((model, xad.optim.Adam(model.parameters(), lr=1e-3), [], []))
    x, y = spec.batches[0]
    xb, yb = xad.tensor(np.array_split(x, size)[rank]), xad.tensor(np.array_split(y, size)[rank])
    loss_fn = nn.CrossEntropyLoss()
    for i in range(steps + 5):
        for model, opt, times, waits in runs:
            wait0 = getattr(model, "wait_seconds", 0.0)
            t0 = time.perf_counter()
            opt.zero_grad()
            loss_fn(model(xb), yb).backward()
            opt.step()
            if i >= 5:
                times.append(time.perf_counter() - t0)
                waits.append(getattr(model, "wait_seconds", 0.0) - wait0)
    if rank == 0:
        for (kind, mb, overlap), (_, _, times, waits) in zip(CONFIGS[size], runs):
            mode = "-" if kind == "plain" else ("overlapped" if overlap else "after backward")
            print(f"| {size} | {kind} | {mb if kind == 'ddp' else '-'} | {mode} | "
                  f"{statistics.median(times) * 1e3:.1f} | {sum(waits) / sum(times):.0%} |")


def collectives_worker(steps: int) -> None:
    import numpy as np
    from mpi4py import MPI

    import xad
    import xad.distributed as dist
    dist.init("mpi")
    c, w = dist.world.comm(), MPI.COMM_WORLD
    for n in (1, 1024, 2**20):
        a = np.ones(n, np.float32)
        t = xad.tensor(a)
        runs = {"mpi4py Allreduce": lambda a=a: w.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM),
                "xad, checked": lambda t=t: dist.all_reduce(t),
                "xad, check=False": lambda t=t: dist.all_reduce(t)}
        times: dict[str, list[float]] = {k: [] for k in runs}
        for _ in range(steps):
            for name, fn in runs.items():
                c.check = name != "xad, check=False"
                t0 = time.perf_counter()
                for _ in range(50):
                    fn()
                times[name].append((time.perf_counter() - t0) / 50)
        if dist.rank() == 0:
            cells = " | ".join(f"{statistics.median(v) * 1e6:.0f} ({min(v) * 1e6:.0f})"
                               for v in times.values())
            print(f"| {n * 4} | {cells} |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--collectives", action="store_true",
                   help="time one all_reduce with and without the ranks' agreement")
    p.add_argument("--fast", action="store_true",
                   help="train with init(check=False): no agreement of the ranks per step")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return collectives_worker(args.steps) if args.collectives else \
            worker(args.steps, args.fast)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONPATH=_ROOT)
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if args.collectives:
        print("| bytes | mpi4py Allreduce µs | xad checked µs | xad check=False µs |")
        print("| --- | --- | --- | --- |", flush=True)
    else:
        print("| processes | model | bucket MiB | all-reduce | ms / global batch | waiting share |")
        print("| --- | --- | --- | --- | --- | --- |", flush=True)
    for n in [2] if args.collectives else CONFIGS:
        cmd = [mpiexec, "-n", str(n), sys.executable, __file__, "--steps", str(args.steps),
               "--worker"] + (["--collectives"] if args.collectives else []) + \
            (["--fast"] if args.fast else [])
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        if out.returncode:
            raise SystemExit(f"{cmd} failed:\n{out.stdout}\n{out.stderr}")
        print(out.stdout, end="", flush=True)


if __name__ == "__main__":
    main()
