"""xad's host time per operation on ``cupy-sim`` against NumPy (issue 25, item 5).

The 200-operation chain of ``bench_ops.py`` (``y <- tanh(y * w + x) * 0.9``, forward and
backward, 8-element float32 arrays) on the numpy backend and on the CuPy emulator. On the
emulator a kernel is a NumPy call plus the emulator's own bookkeeping, so the difference
bounds from above what CuPy's backend adds per operation in xad (the device scope, the
compat layer's wrappers).

xad's own time per operation, by subtraction (the default; no profiler): the chain through
xad minus the same kernels called directly on the same namespace (NumPy, or the emulator's
``cupy``: the array program xad runs, written out, with the tanh gradient as one fused
kernel where xad fuses it), each CPU time, best of ``--repeat``, the runs interleaved. Both
programs' emulator kernel counts are printed (equal: the same kernels). ``--profile`` adds
the older estimate (each backend's time times the share of own time cProfile puts in
``xad/`` and ``backends/``, median of three profiles), whose shares move by about 5 points
between runs, and the functions that take the time.

``--instructions`` counts instead of timing: the same subtraction in instructions, each
program run under valgrind's callgrind for 10 and 60 chains (the difference over 50:
without the start, imports and set-up; Python's hash seed fixed). Counts are not moved by
other processes or by caches, so the emulator slowing xad's own Python beside it (cache
pollution) drops out; what the emulator's Python adds to xad's calls that are not kernels
(attribute reads that are Cython on CuPy) still counts as xad's.

Run: ``python bench/profile_sim.py [--repeat 15] [--devices 1] [--profile | --instructions]``
(``--devices 1``: the emulator shows one GPU, as a one-GPU machine: no device scope per
operation).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
for _p in (os.path.dirname(_HERE), os.path.join(os.path.dirname(_HERE), "tests")):
    if _p not in sys.path:
        sys.path.append(_p)

import cupy_sim  # noqa: E402
import numpy as np  # noqa: E402
from cupy_sim.streams import COUNTS  # noqa: E402
from instructions import callgrind_count  # noqa: E402

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


def raw_chain(xp: Any, fuse: Any):
    """The array program xad runs for :func:`chain`, written out over namespace ``xp``:
    the same kernels, out of place as xad's, with no graph and no tensors."""
    rng = np.random.default_rng(0)
    x = xp.asarray(rng.standard_normal(8).astype(np.float32))
    w = xp.asarray(rng.standard_normal(8).astype(np.float32))
    tanh_grad = fuse(lambda t, g: g * (1 - t * t))

    def run() -> None:
        ys, ts, y = [], [], x
        for _ in range(N_CHAIN // 4):
            ys.append(y)
            t = xp.tanh(y * w + x)
            ts.append(t)
            y = t * 0.9
        s = xp.sum(y)
        g = xp.broadcast_to(xp.ones_like(s), y.shape)
        gx = gw = (None, False)
        for y_in, t in zip(reversed(ys), reversed(ts)):
            g = tanh_grad(t, g * 0.9)
            gx = _accumulate(gx, g)  # the round's + x
            gw = _accumulate(gw, g * y_in)  # * w, w's side
            g = g * w  # * w, y's side (x's own in the first round)
        _accumulate(gx, g)
    return run


def _accumulate(acc: tuple, g: Any) -> tuple:
    """A leaf's sum as xad's engine keeps it: the first gradient as it is, a new sum at
    the second, then in place."""
    total, owned = acc
    if total is None:
        return g, False
    if not owned:
        return total + g, True
    total += g
    return total, True


def us_per_op(run, repeat: int = 7) -> float:
    run()
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        for _ in range(5):
            run()
        best = min(best, (time.process_time() - t) / 5)
    return best / N_CHAIN * 1e6


def _fused(fn: Any) -> Any:
    """``fn`` as one emulated ``cupy.fuse`` kernel, as xad's CuPy backend makes it."""
    return cupy_sim.cupy.fuse(kernel_name="tanh_grad")(fn)


def kernels(run) -> int:
    """The emulator's kernel launches of one call of ``run``."""
    COUNTS.reset()
    run()
    return COUNTS.kernels


def _programs() -> dict[str, tuple[Any, Any]]:
    """Per backend: the chain through xad and its kernels called directly."""
    return {"numpy": (chain("numpy"), raw_chain(np, lambda f: f)),
            "cupy-sim": (chain("cupy-sim"), raw_chain(cupy_sim.cupy, _fused))}


def subtracted(repeat: int) -> None:
    """Print xad's own time per operation on each backend by subtraction, and their ratio."""
    runs = _programs()
    best: dict[tuple[str, int], float] = {}
    for _ in range(3):  # interleaved, so a change of load reaches every figure alike
        for name, pair in runs.items():
            for i, run in enumerate(pair):
                t = us_per_op(run, max(1, repeat // 3))
                best[name, i] = min(best.get((name, i), t), t)
    own = {}
    for name in runs:
        own[name] = best[name, 0] - best[name, 1]
        print(f"{name}: xad {best[name, 0]:.2f} us/op, its kernels called directly "
              f"{best[name, 1]:.2f}: xad's own {own[name]:.2f} us/op")
    xad_k, raw_k = (kernels(r) for r in runs["cupy-sim"])
    print(f"cupy-sim kernels per chain: xad {xad_k}, written out {raw_k}")
    print(f"xad's own time on cupy-sim / on numpy: {own['cupy-sim'] / own['numpy']:.2f}x "
          f"(target <= 1.3x)")


def _instructions(name: str, i: int, n: int, devices: int) -> int:
    """Instructions of a process running program ``i`` of backend ``name`` ``n`` times."""
    return callgrind_count([sys.executable, os.path.abspath(__file__), "--devices",
                            str(devices), "--inner", f"{name}:{i}:{n}"])


def counted(devices: int, lo: int = 10, hi: int = 110) -> None:
    """Print xad's own instructions per operation on each backend by subtraction."""
    per_op = {}
    for name in ("numpy", "cupy-sim"):
        for i in (0, 1):
            n = [_instructions(name, i, k, devices) for k in (lo, hi)]
            per_op[name, i] = (n[1] - n[0]) / (hi - lo) / N_CHAIN
    own = {name: per_op[name, 0] - per_op[name, 1] for name in ("numpy", "cupy-sim")}
    for name in own:
        print(f"{name}: xad {per_op[name, 0]:,.0f} instructions/op, its kernels called "
              f"directly {per_op[name, 1]:,.0f}: xad's own {own[name]:,.0f}")
    print(f"xad's own instructions on cupy-sim / on numpy: "
          f"{own['cupy-sim'] / own['numpy']:.2f}x (target <= 1.3x)")


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
    p.add_argument("--repeat", type=int, default=15, help="best of this many (default 15)")
    p.add_argument("--profile", action="store_true", help="also the cProfile estimate")
    p.add_argument("--devices", type=int, default=2, choices=(1, 2),
                   help="the emulator's GPU count (1: no device scope per operation)")
    p.add_argument("--instructions", action="store_true",
                   help="count instructions under callgrind instead of timing")
    p.add_argument("--inner", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    cupy_sim.core.N_DEVICES = args.devices
    cupy_sim.register()
    if args.inner is not None:  # a counted process: backend:program:runs
        name, i, n = args.inner.split(":")
        run = _programs()[name][int(i)]
        for _ in range(int(n) + 1):
            run()
        return
    if args.instructions:
        counted(args.devices)
        return
    subtracted(args.repeat)
    if args.profile:
        profiled()


def profiled() -> None:
    """The cProfile-share estimate and the profile of the emulator's run."""
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
    print(f"(cProfile) xad's own time on cupy-sim / on numpy: "
          f"{own['cupy-sim'] / own['numpy']:.2f}x")
    stats.sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
