"""``det``'s backward on NumPy against torch's and a hand-written NumPy one.

Each round times one ``det(x)`` forward and backward of an ``n x n`` float64 matrix (the
gradient ``det(x) x^-T``): xad (``y = det(x); y.backward()``), torch (the same on a CPU
tensor) and NumPy by hand (``det``, then ``det * inv(x).T``). The three run interleaved,
one BLAS thread, CPU time; the best of the rounds is printed with xad's ratio to each.

    python bench/bench_det.py [--sizes 2,3,4,8,16,64] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

import xad  # noqa: E402


def _xad(a: np.ndarray):
    x = xad.tensor(a, requires_grad=True)

    def run() -> None:
        x.grad = None
        xad.linalg.det(x).backward()
    return run


def _torch(a: np.ndarray):
    x = torch.tensor(a, requires_grad=True)

    def run() -> None:
        x.grad = None
        torch.linalg.det(x).backward()
    return run


def _numpy(a: np.ndarray):
    def run() -> None:
        d = np.linalg.det(a)
        d * np.linalg.inv(a).T  # noqa: B018 - the gradient
    return run


def _per_call(run, calls: int) -> float:
    t = time.process_time()
    for _ in range(calls):
        run()
    return (time.process_time() - t) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2,3,4,8,16,64")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"{'n':>4} {'xad us':>9} {'torch us':>9} {'numpy us':>9} {'/torch':>7} {'/numpy':>7}")
    for n in map(int, args.sizes.split(",")):
        a = np.random.default_rng(n).standard_normal((n, n)) + n * np.eye(n)
        runs = {"xad": _xad(a), "torch": _torch(a), "numpy": _numpy(a)}
        calls = max(20, 2000 // n)
        best = dict.fromkeys(runs, float("inf"))
        for run in runs.values():
            run()
        for _ in range(args.rounds):
            for k, run in runs.items():
                best[k] = min(best[k], _per_call(run, calls))
        print(f"{n:>4} {best['xad']:9.1f} {best['torch']:9.1f} {best['numpy']:9.1f} "
              f"{best['xad'] / best['torch']:7.2f} {best['xad'] / best['numpy']:7.2f}")


if __name__ == "__main__":
    main()
