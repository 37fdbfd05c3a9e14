"""xad's host time per operation on ``cupy-sim`` against NumPy (issue 25, item 5).

The 200-operation chain of ``bench_ops.py`` (``y <- tanh(y * w + x) * 0.9``, forward and
backward, 8-element float32 arrays) on the numpy backend and on the CuPy emulator. On the
emulator a kernel is a NumPy call plus the emulator's own bookkeeping, so the difference
bounds from above what CuPy's backend adds per operation in xad (the device scope, the
compat layer's wrappers); ``--profile`` prints the functions that take the time.

xad's own time per operation is each backend's time multiplied by the share of own time
that cProfile puts in ``xad/`` and ``backends/`` (the same method on both backends, so the
profiler's distortion cancels in their ratio).

Run: ``python bench/profile_sim.py [--profile]`` (CPU time, best of 7).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
for _p in (os.path.dirname(_HERE), os.path.join(os.path.dirname(_HERE), "tests")):
    if _p not in sys.path:
        sys.path.append(_p)

import cupy_sim  # noqa: E402
import numpy as np  # noqa: E402

import xad  # noqa: E402

N_CHAIN = 200


def chain(backend: str):
    """One forward and backward of the chain on ``backend``, as a function."""
    b = xad.resolve_backend(backend)
    rng = np.random.default_rng(0)
    x = xad.tensor(rng.standard_normal(8).astype(np.float32), backend=b, requires_grad=True)
    w = xad.tensor(rng.standard_normal(8).astype(np.float32), backend=b, requires_grad=True)

    def run() -> None:
        x.grad = w.grad = None
        y = x
        for _ in range(N_CHAIN // 4):
            y = xad.tanh(y * w + x) * 0.9
        y.sum().backward()
    return run


def us_per_op(run, repeat: int = 7) -> float:
    run()
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        for _ in range(5):
            run()
        best = min(best, (time.process_time() - t) / 5)
    return best / N_CHAIN * 1e6


def shares(run, calls: int = 40) -> tuple[dict[str, float], pstats.Stats]:
    """Shares of own time under cProfile over ``calls`` runs: xad, the backends, the
    emulator, and the rest (NumPy, builtins)."""
    prof = cProfile.Profile()
    prof.runcall(lambda: [run() for _ in range(calls)])
    stats = pstats.Stats(prof)
    own = {"xad": 0.0, "backends": 0.0, "emulator": 0.0, "other": 0.0}
    for (path, _, _), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        part = "emulator" if "cupy_sim" in path else "backends" if "backends/" in path \
            else "xad" if "/xad/" in path else "other"
        own[part] += tottime
    total = sum(own.values())
    return {k: v / total for k, v in own.items()}, stats


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    cupy_sim.register()
    runs = {name: chain(name) for name in ("numpy", "cupy-sim")}
    own = {}
    for name, run in runs.items():
        t = us_per_op(run)
        profiles = sorted((shares(run) for _ in range(3)),  # the median of three profiles
                          key=lambda s: s[0]["xad"] + s[0]["backends"])
        share, stats = profiles[1]
        own[name] = t * (share["xad"] + share["backends"])
        print(f"{name}: {t:.1f} us/op (forward and backward, CPU time); shares of own time "
              f"under cProfile: " + ", ".join(f"{k} {v:.0%}" for k, v in share.items())
              + f"; xad's own (xad + backends) {own[name]:.1f} us/op")
    print(f"xad's own time on cupy-sim / on numpy: {own['cupy-sim'] / own['numpy']:.2f}x")
    if args.profile:
        stats.sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
