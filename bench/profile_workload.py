"""Profile one benchmark workload with cProfile and print the top entries by own time.

    python bench/profile_workload.py overhead                  # xad, full size, top 25 by tottime
    python bench/profile_workload.py mlp-small --impl torch --top 40 --sort cumtime
    python bench/profile_workload.py mlp-small --impl xad-compiled   # what a replay still does
    python bench/profile_workload.py seed-deep --size quick

The workload is built exactly as ``bench/run.py`` builds it, warmed up with one ``step()``,
timed without the profiler, then profiled for ``--steps`` calls (default: about 2 s worth).
"""

from __future__ import annotations

import os
import sys

_OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if __name__ == "__main__" and any(v in os.environ for v in _OPENBLAS_VARS):
    # this machine's OpenBLAS settings halve NumPy's matmul: rerun without them
    _env = {k: v for k, v in os.environ.items() if k not in _OPENBLAS_VARS}
    os.execve(sys.executable, [sys.executable, *sys.argv], _env)

_HERE = os.path.dirname(os.path.abspath(__file__))
# this file shadows the standard library's ``profile``, which cProfile imports: hide bench/
# from the path while the standard modules load, then put it back (last) for ``run``
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import argparse  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import math  # noqa: E402
import pstats  # noqa: E402
import time  # noqa: E402

sys.path.append(_HERE)

import run  # noqa: E402


def profile(name: str, impl: str = "xad", size: str = "full", steps: int | None = None,
            top: int = 25, sort: str = "tottime") -> str:
    """The profile report of ``steps`` calls of workload ``name``'s ``step()`` as text."""
    w = run.WORKLOADS[name]
    if impl not in w.impls:
        raise SystemExit(f"workload {name} has no {impl} implementation (it has {w.impls})")
    runner = w.build(impl, size)
    runner.step()  # warm-up: lazy imports, caches, optimiser state
    t0 = time.perf_counter()
    runner.step()
    dt = time.perf_counter() - t0
    if steps is None:
        steps = max(1, min(10_000, math.ceil(2.0 / max(dt, 1e-6))))
    t0 = time.perf_counter()
    for _ in range(steps):
        runner.step()
    plain = (time.perf_counter() - t0) / steps
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        runner.step()
    prof.disable()
    out = io.StringIO()
    scale = w.scale(size)
    out.write(f"{name} [{impl}, {size}]: {plain * scale:.4g} {w.unit} without the profiler; "
              f"profiled {steps} step() calls; top {top} by {sort}\n")
    st = pstats.Stats(prof, stream=out)
    st.sort_stats(sort).print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Profile one benchmark workload with cProfile.")
    p.add_argument("name", choices=list(run.WORKLOADS))
    p.add_argument("--impl", default="xad", choices=list(run.ALL_IMPLS))
    p.add_argument("--size", default="full", choices=["full", "quick", "tiny"])
    p.add_argument("--steps", type=int, default=None, help="profiled step() calls")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--sort", default="tottime",
                   help="pstats key: tottime, cumtime, ncalls, ...")
    a = p.parse_args(argv)
    run.setup_threads()
    text = profile(a.name, a.impl, a.size, a.steps, a.top, a.sort)
    # drop pstats' preamble lines about the file and ordering; keep the table
    print("\n".join(line.replace(os.path.dirname(_HERE) + os.sep, "")
                    for line in text.splitlines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
