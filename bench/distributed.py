"""Data-parallel scaling of the ``mlp`` training step (784-512-512-10, global batch 256,
float32, Adam) from 1 to 2 processes over MPI on this machine.

``python bench/distributed.py [--steps N]`` launches itself with ``mpiexec`` once per row
(each process single-threaded BLAS, so 2 processes use the 2 cores) and prints a Markdown
table: milliseconds per global batch (median), and the share of the step a rank spends
blocked in ``DataParallel``'s wait for the gradient all-reduces, with the buckets'
all-reduces started during the backward (overlap) or only after it.
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
ROWS = [(1, "plain", 25, True), (1, "ddp", 25, True), (2, "ddp", 25, True),
        (2, "ddp", 25, False), (2, "ddp", 1, True), (2, "ddp", 1, False)]


def worker(kind: str, bucket_mb: float, overlap: bool, steps: int) -> None:
    import numpy as np
    from bench_mlp import mlp_spec

    import xad
    from xad import nn
    spec = mlp_spec("mlp", "full")
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    with xad.no_grad():
        for p, w in zip(model.parameters(), spec.params):
            p.copy_(xad.tensor(w))
    rank, size = 0, 1
    if kind == "ddp":
        xad.distributed.init("mpi")
        rank, size = xad.distributed.rank(), xad.distributed.world_size()
        model = xad.distributed.DataParallel(model, bucket_mb=bucket_mb, overlap=overlap)
    x, y = spec.batches[0]
    xb, yb = xad.tensor(np.array_split(x, size)[rank]), xad.tensor(np.array_split(y, size)[rank])
    opt, loss_fn = xad.optim.Adam(model.parameters(), lr=1e-3), nn.CrossEntropyLoss()
    times, waits = [], []
    for i in range(steps + 5):
        wait0 = model.wait_seconds if kind == "ddp" else 0.0
        t0 = time.perf_counter()
        opt.zero_grad()
        loss_fn(model(xb), yb).backward()
        opt.step()
        if i >= 5:
            times.append(time.perf_counter() - t0)
            waits.append((model.wait_seconds if kind == "ddp" else 0.0) - wait0)
    if rank == 0:
        print(f"RESULT {statistics.median(times) * 1e3:.2f} {sum(waits) / sum(times):.3f}")


def run_row(row: tuple, steps: int, env: dict) -> tuple[float, float]:
    n, kind, mb, overlap = row
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    cmd = [mpiexec, "-n", str(n), sys.executable, __file__, "--steps", str(steps),
           "--worker", kind, str(mb), "1" if overlap else "0"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT")]
    if out.returncode or not line:
        raise SystemExit(f"{cmd} failed:\n{out.stdout}\n{out.stderr}")
    ms, share = line[0].split()[1:]
    return float(ms), float(share)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--repeat", type=int, default=3, help="launches per row, in rotation; "
                   "the fastest median is reported (this machine is shared)")
    p.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        kind, mb, overlap = args.worker
        return worker(kind, float(mb), overlap == "1", args.steps)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONPATH=_ROOT)
    best: dict[tuple, tuple[float, float]] = {}
    for _ in range(args.repeat):
        for row in ROWS:
            r = run_row(row, args.steps, env)
            best[row] = min(best.get(row, r), r)
    print("| processes | model | bucket MiB | all-reduce | ms / global batch | waiting share |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (n, kind, mb, overlap), (ms, share) in best.items():
        mode = "-" if kind == "plain" else ("overlapped" if overlap else "after backward")
        print(f"| {n} | {kind} | {mb if kind == 'ddp' else '-'} | {mode} | {ms:.1f} | "
              f"{share:.0%} |")


if __name__ == "__main__":
    main()
