"""Instructions per ``step()`` of a benchmark workload, counted by valgrind's callgrind:
a measure of host work that a busy machine does not disturb (timings here swing by 5-10%
while other processes run; this moves by about 0.3%).

    python bench/instructions.py overhead                  # xad, 20 and 220 steps
    python bench/instructions.py mlp-small --impl torch --steps 10,60

The workload runs twice under callgrind, for each of the two step counts (after building it
and one warm-up step); the difference of the two totals over the difference of the counts is
the cost of one step, without the interpreter's start, the imports and the build. Python's
hash seed is fixed (``PYTHONHASHSEED=0``) and address-space randomisation is off
(``setarch -R``): otherwise dictionary layouts change the counts of whole runs by about
3%. Needs ``valgrind`` on the PATH (Debian: ``apt install valgrind``); runs about 50x
slower than natively.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(_HERE)

import run  # noqa: E402


def _steps(name: str, impl: str, size: str, n: int) -> None:
    """Build the workload, warm it up, run ``n`` steps (the process callgrind counts)."""
    runner = run.WORKLOADS[name].build(impl, size)
    runner.step()
    for _ in range(n):
        runner.step()


def callgrind_count(argv: list[str], env: dict[str, str] | None = None) -> int:
    """Instructions of the whole process ``argv`` under callgrind, with Python's hash seed
    fixed and address-space randomisation off (``setarch -R`` where present): dictionaries
    keyed by ``id`` otherwise lay out differently per run, moving whole counts by ~3%."""
    env = dict(os.environ if env is None else env, PYTHONHASHSEED="0")
    fixed = ["setarch", os.uname().machine, "-R"] if shutil.which("setarch") else []
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [*fixed, "valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out",
               *argv]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"callgrind printed no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def _count(name: str, impl: str, size: str, n: int) -> int:
    """Instructions of a whole process running ``n`` steps."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    return callgrind_count([sys.executable, os.path.abspath(__file__), name, "--impl", impl,
                            "--size", size, "--inner", str(n)], env)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Instructions per step() under callgrind.")
    p.add_argument("name", choices=list(run.WORKLOADS))
    p.add_argument("--impl", default="xad")
    p.add_argument("--size", default="full", choices=["full", "quick", "tiny"])
    p.add_argument("--steps", default="20,220", help="the two step counts, comma-separated")
    p.add_argument("--inner", type=int, default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.inner is not None:
        _steps(a.name, a.impl, a.size, a.inner)
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt install valgrind)")
    lo, hi = (int(s) for s in a.steps.split(","))
    per_step = (_count(a.name, a.impl, a.size, hi) - _count(a.name, a.impl, a.size, lo)) / (
        hi - lo)
    print(f"{a.name} [{a.impl}, {a.size}]: {per_step:,.0f} instructions per step() "
          f"({lo} and {hi} steps under callgrind)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
