"""Kernel counts of each example's training step as its script runs it, on ``cupy-sim``.

``bench_kernels.py`` builds its own steps; this runs each example's ``main`` (its optimiser,
scheduler, data loader and GradScaler, ``--compile``, CUDA graphs on) and counts, per call
of the step ``examples/_common.training_step`` made, the kernels launched one by one, the
graph launches, memcpys and host-to-device uploads; it prints the commonest count over the
last third of the calls (the steady state: recordings, warm-up replays and captures come
first) and how many of those calls had it. Deterministic (no timing).

Run: ``python bench/example_steps.py [--eager] [name ...]`` (from the repository root).
"""

from __future__ import annotations

import argparse
import collections
import importlib
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _p in (_ROOT, os.path.join(_ROOT, "tests"), os.path.join(_ROOT, "examples")):
    if _p not in sys.path:
        sys.path.append(_p)

import _common  # noqa: E402
import cupy_sim  # noqa: E402
from cupy_sim.streams import COUNTS  # noqa: E402

# a few epochs each: enough calls for a steady state after the recordings and captures
RUNS = {
    "linear_regression": [],
    "fit_nonlinear": ["--epochs", "4"],
    "digits": ["--epochs", "4"],
    "cnn_digits": ["--epochs", "2"],
    "cnn_digits --amp": ["--epochs", "2", "--amp"],
    "transformer_addition": ["--epochs", "2"],
}


def steady_counts(name: str, compiled: bool = True) -> tuple[tuple[int, ...], int, int]:
    """``((kernels, graph launches, memcpys, uploads), calls with them, calls counted)`` of
    the example's step in its steady state."""
    cupy_sim.register()
    os.environ["XAD_CUDA_GRAPHS"] = "1"
    module, *flags = name.split()
    mod = importlib.import_module(module)
    make, rows = _common.training_step, []

    def spy(*args, **kwargs):
        step = make(*args, **kwargs)

        def counted(*batch):
            before = (COUNTS.kernels, COUNTS.launches, COUNTS.copies, COUNTS.uploads)
            out = step(*batch)
            now = (COUNTS.kernels, COUNTS.launches, COUNTS.copies, COUNTS.uploads)
            rows.append(tuple(b - a for a, b in zip(before, now)))
            return out
        return counted

    mod.training_step = spy
    try:
        mod.main(["--backend", "cupy-sim", "--quiet", *RUNS[name],
                  *(["--compile"] if compiled else [])])
    finally:
        mod.training_step = make
    last = rows[len(rows) * 2 // 3:]
    counts, n = collections.Counter(last).most_common(1)[0]
    return counts, n, len(last)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--eager", action="store_true", help="count the eager steps instead")
    p.add_argument("names", nargs="*", default=list(RUNS))
    args = p.parse_args()
    mode = "eager" if args.eager else "compiled + graphs"
    print("| example | mode | kernels | graph launches | memcpys | uploads | calls |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name in args.names:
        (k, g, c, u), n, total = steady_counts(name, not args.eager)
        print(f"| {name} | {mode} | {k} | {g} | {c} | {u} | {n} of {total} |", flush=True)


if __name__ == "__main__":
    main()
