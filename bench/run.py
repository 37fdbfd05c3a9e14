"""Benchmarks: xad (numpy backend; eager and ``xad.compile``d) against hand-written NumPy,
PyTorch eager and ``jax.jit``, on the CPU.

Run ``bash bench/run.sh [--only NAME[,NAME]] [--repeat N] [--quick] [--json PATH]`` (the
wrapper unsets the OpenBLAS variables this machine sets). Every workload first checks that
all implementations agree (loss, gradients, optimiser step; float32, same initial weights),
then times them interleaved, and prints medians and ratios as a Markdown table.
"""

from __future__ import annotations

import os
import sys

_OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if __name__ == "__main__" and any(v in os.environ for v in _OPENBLAS_VARS):
    # this machine's OpenBLAS settings halve NumPy's matmul: rerun without them (run.sh
    # already unsets them; this covers ``python bench/run.py`` too)
    _env = {k: v for k, v in os.environ.items() if k not in _OPENBLAS_VARS}
    os.execve(sys.executable, [sys.executable, *sys.argv], _env)

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)  # this checkout's xad, even if another is installed
# bench/ goes last (as a script it comes first): no bench/ module may shadow the
# standard ``profile``, which cProfile imports (torch.optim does, for one)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE] + [_HERE]

import bench_memory  # noqa: E402
import numpy as np  # noqa: E402
from bench_attention import WORKLOADS as _ATTENTION  # noqa: E402
from bench_conv import WORKLOADS as _CONV  # noqa: E402
from bench_harness import (  # noqa: E402
    ALL_IMPLS,
    CheckError,
    Timing,
    Workload,
    compare,
    time_interleaved,
)
from bench_mlp import WORKLOADS as _MLP  # noqa: E402
from bench_mlp import xad_api  # noqa: E402
from bench_ops import WORKLOADS as _OPS  # noqa: E402
from bench_rnn import WORKLOADS as _RNN  # noqa: E402

__all__ = ["WORKLOADS", "MEMORY", "check_workload", "run_workload", "main"]

WORKLOADS: dict[str, Workload] = {w.name: w for w in (_MLP[:2] + _OPS[:1] + _MLP[2:] + _OPS[1:]
                                                     + _CONV + _ATTENTION + _RNN)}
MEMORY = "memory"            # the peak-RSS comparison (not a timed workload)
MEMORY_TARGET = "<= 1.2x numpy"


# ----- environment --------------------------------------------------------------------------
def blas_threads() -> tuple[int, str]:
    """NumPy's BLAS thread count and a one-line description (threadpoolctl, else a guess)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return 2, "threadpoolctl not installed: BLAS unknown, assuming 2 threads"
    for info in threadpool_info():
        if info.get("user_api") == "blas" and "numpy" in info.get("filepath", ""):
            desc = (f"{info.get('internal_api')} {info.get('version')}, kernel "
                    f"{info.get('architecture')}, {info.get('num_threads')} threads, "
                    f"{info.get('threading_layer')}")
            return int(info["num_threads"]), desc
    return 2, "no BLAS found by threadpoolctl: assuming 2 threads"


def have_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def have_jax() -> bool:
    """Whether jax is installed (found without importing it: XLA reads its flags once)."""
    return importlib.util.find_spec("jax") is not None


_LIMITS: list[Any] = []  # keeps a threadpoolctl limit alive for the whole run


XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def setup_threads(n: int | None = None) -> int:
    """Give torch as many threads as NumPy's BLAS (or make both ``n``); return the count.

    ``n == 1`` also asks XLA (jax) for one thread, through ``XLA_FLAGS`` before jax starts.
    """
    if n is None:
        n, _ = blas_threads()
    else:
        if n == 1:
            os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " "
                                       + XLA_ONE_THREAD).strip()
        try:
            from threadpoolctl import threadpool_limits
            _LIMITS.append(threadpool_limits(limits=n, user_api="blas"))
        except ImportError:
            print("WARNING: --threads needs threadpoolctl for NumPy's BLAS; torch only")
    if have_torch():
        import torch
        torch.set_num_threads(n)
    return n


def load() -> str:
    """The 1/5/15-minute load averages (other processes skew timings on a small machine)."""
    try:
        a, b, c = os.getloadavg()
    except OSError:
        return "load average unknown"
    warn = (" (WARNING: machine busy, timings unreliable; for stable numbers use --threads 1"
            " --clock cpu)") if a > 0.5 * (os.cpu_count() or 1) \
        else ""
    return f"load average {a:.2f} {b:.2f} {c:.2f}{warn}"


def environment() -> list[str]:
    """Lines describing the machine, versions and thread settings."""
    import xad
    n, blas = blas_threads()
    try:
        commit = subprocess.run(["git", "-C", _ROOT, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        commit = "?"
    lines = [
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.processor() or '?'}; "
        f"python {platform.python_version()}; {load()}",
        f"numpy {np.__version__} ({blas})",
        f"xad {xad.__version__} (commit {commit or '?'}), numpy backend; layers: "
        + ("xad.nn + xad.optim.Adam" if xad_api() else "local stand-ins (xad.nn/optim missing)"),
    ]
    if have_torch():
        import torch
        lines.append(f"torch {torch.__version__}, {torch.get_num_threads()} threads "
                     f"(set equal to NumPy's BLAS threads)")
    else:
        lines.append("torch not installed: no torch column")
    if have_jax():
        import jax
        lines.append(f"jax {jax.__version__} (CPU), XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
    else:
        lines.append("jax not installed: no jax-jit column")
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS",
                "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        if var in os.environ:
            lines.append(f"WARNING: {var}={os.environ[var]} is set"
                         + (" (slows NumPy's matmul; run bench/run.sh)" if "OPENBLAS_C" in var
                            or "L2" in var else ""))
    return lines


# ----- running ------------------------------------------------------------------------------
_SELECTED: list[str] = list(ALL_IMPLS)  # --impls
_INSTALLED = {"torch": have_torch, "jax-jit": have_jax}


def _impls(w: Workload) -> list[str]:
    return [i for i in w.impls if i in _SELECTED and _INSTALLED.get(i, lambda: True)()]


def check_workload(name: str, size: str = "tiny") -> dict[str, float]:
    """Build a fresh runner per implementation, compare their results; worst errors per impl.

    Raises :class:`bench_harness.CheckError` when any two disagree beyond the workload's rtol.
    """
    w = WORKLOADS[name]
    results = {impl: w.build(impl, size).check() for impl in _impls(w)}
    return compare(results, w.rtol, "numpy" if "numpy" in results else next(iter(results)))


def run_workload(w: Workload, size: str, reps: int | None, quick: bool, settle: float = 0.1,
                 clock: str = "wall") -> dict[str, Any]:
    """Check, then time ``w``; returns errors, timings (in ``w.unit``) and ratios."""
    row: dict[str, Any] = {"name": w.name, "unit": w.unit, "target": w.target}
    try:
        row["errors"] = check_workload(w.name, size)
    except CheckError as e:
        row["failed"] = str(e)
        return row
    impls = _impls(w)
    runners = {impl: w.build(impl, size) for impl in impls}
    n = reps or (min(w.reps, 3) if quick else w.reps)
    min_time = min(w.min_time, 0.05) if quick else w.min_time
    max_time = w.max_time / 4 if quick else w.max_time
    timings: dict[str, Timing] = time_interleaved(runners, n, min_time, settle, clock, max_time)
    scale = w.scale(size)
    row["median"] = {k: t.median * scale for k, t in timings.items()}
    row["spread"] = {k: t.spread for k, t in timings.items()}
    row["best"] = {k: t.best * scale for k, t in timings.items()}
    row["samples"] = {k: [s * scale for s in t.samples] for k, t in timings.items()}
    row["inner"] = {k: t.inner for k, t in timings.items()}
    return row


def run_memory(size: str, steps: int, threads: int) -> dict[str, Any]:
    row: dict[str, Any] = {"name": MEMORY, "unit": "MiB peak", "target": MEMORY_TARGET,
                           "median": {}, "spread": {}}
    impls = [i for i in ("xad", "numpy", "torch") if i in _SELECTED and (i != "torch"
                                                                       or have_torch())]
    try:
        for impl in impls:
            out = bench_memory.measure(impl, size, steps, threads)
            row["median"][impl] = out["mib"]
            row["spread"][impl] = 0.0
            row.setdefault("raw", {})[impl] = out
    except RuntimeError as e:
        row["failed"] = str(e)
    return row


# ----- reporting ----------------------------------------------------------------------------
def _fmt(v: float) -> str:
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}" if v >= 0.01 else f"{v:.2g}"


def _cell(med: dict, spr: dict, k: str) -> str:
    if k not in med:
        return "-"
    return _fmt(med[k]) + (f" ±{spr[k] * 100:.0f}%" if spr.get(k) else "")


def _ratio(med: dict, a: str, b: str) -> str:
    return f"{med[a] / med[b]:.2f}x" if a in med and b in med and med[b] > 0 else "-"


# (numerator, denominator, header) of each ratio column, shown when both columns are
RATIOS = [("xad", "numpy", "xad/numpy"), ("xad", "torch", "xad/torch"),
          ("xad-compiled", "numpy", "compiled/numpy"), ("xad-compiled", "xad", "compiled/xad"),
          ("xad-compiled", "jax-jit", "compiled/jax")]


def table(rows: list[dict[str, Any]], stat: str = "median") -> str:
    """The Markdown table: medians (± half the interquartile range) and ratios; or, with
    ``stat="best"``, the fastest samples and their ratios. A column appears when some row
    has that implementation (the compiled and jax columns only for their workloads)."""
    seen = {k for r in rows for k in r.get("median", {})}
    impls = [i for i in ALL_IMPLS if i in seen] or ["xad", "numpy", "torch"]
    ratios = [(a, b, h) for a, b, h in RATIOS if a in impls and b in impls]
    head = ["workload", "unit", *impls, *(h for _, _, h in ratios), "target",
            "check (max rel err)"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(["---"] * len(head)) + " |"]
    for r in rows:
        if "failed" in r:
            blanks = [""] * (len(impls) + len(ratios) - 1)
            cells = [r["name"], r["unit"], "CHECK FAILED", *blanks, r["target"], r["failed"][:200]]
            lines.append("| " + " | ".join(cells) + " |")
            continue
        med = r.get(stat, r["median"])
        spr = r["spread"] if stat == "median" else {}
        err = r.get("errors")
        cells = [r["name"], r["unit"], *(_cell(med, spr, i) for i in impls),
                 *(_ratio(med, a, b) for a, b, _ in ratios), r["target"],
                 f"{max(err.values()):.1e}" if err else "n/a"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", action="append", default=[],
                   help=f"workload(s) to run, comma-separated: {', '.join(WORKLOADS)}, {MEMORY}")
    p.add_argument("--repeat", type=int, default=None, help="timed samples per implementation")
    p.add_argument("--quick", action="store_true", help="a 1-2 minute smoke run")
    p.add_argument("--impls", default=",".join(ALL_IMPLS),
                   help="implementations to run, comma-separated (default: all installed: "
                        f"{', '.join(ALL_IMPLS)})")
    p.add_argument("--settle", type=float, default=0.1,
                   help="seconds of idle before each timed sample (default 0.1)")
    p.add_argument("--clock", default="wall", choices=["wall", "cpu"],
                   help="wall time (default) or this process's CPU time (use with --threads 1 "
                        "on a busy machine)")
    p.add_argument("--json", default=None, help="also write the rows (with samples) here")
    p.add_argument("--threads", type=int, default=None,
                   help="BLAS and torch threads (default: NumPy's BLAS default, torch the same)")
    p.add_argument("--mem-child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--size", default="full", help=argparse.SUPPRESS)
    p.add_argument("--steps", type=int, default=200, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.mem_child:
        bench_memory.child_main(a.mem_child, a.size, a.steps, a.threads or blas_threads()[0])
        return 0
    names = [n for o in a.only for n in o.split(",") if n] or [*WORKLOADS, MEMORY]
    unknown = [n for n in names if n not in WORKLOADS and n != MEMORY]
    if unknown:
        p.error(f"unknown workload(s) {unknown}; choose from {[*WORKLOADS, MEMORY]}")
    _SELECTED[:] = [i for i in a.impls.split(",") if i]
    if not _SELECTED or set(_SELECTED) - set(ALL_IMPLS):
        p.error(f"--impls takes {', '.join(ALL_IMPLS)} (comma-separated), got {a.impls!r}")
    threads = setup_threads(a.threads)
    size = "quick" if a.quick else "full"
    for line in environment():
        print(line)
    print(f"mode: {size}; {a.clock} clock; interleaved round-robin; medians of "
          f"{a.repeat or ('<=3' if a.quick else 'per-workload')} samples\n", flush=True)
    rows = []
    t_all = time.perf_counter()
    for n in names:
        t0 = time.perf_counter()
        if n == MEMORY:
            row = run_memory(size, 30 if a.quick else 200, threads)
        else:
            row = run_workload(WORKLOADS[n], size, a.repeat, a.quick, a.settle, a.clock)
        rows.append(row)
        status = "CHECK FAILED: " + row["failed"] if "failed" in row else "ok"
        print(f"  {n}: {status} ({time.perf_counter() - t0:.1f} s)", flush=True)
    print(f"\ntotal {time.perf_counter() - t_all:.0f} s; at the end: {load()}\n")
    print(table(rows))
    print("\nFastest sample of each (least disturbed by other processes):\n")
    print(table([r for r in rows if r["name"] != MEMORY], stat="best"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"environment": environment(), "rows": rows}, f, indent=1)
    return 1 if any("failed" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
