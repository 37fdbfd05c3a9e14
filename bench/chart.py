"""Draw the benchmark chart from ``bench/run.sh --json`` output (matplotlib).

    bash bench/run.sh --threads 1 --clock cpu --json docs/benchmarks/cpu.json
    python bench/chart.py docs/benchmarks/cpu.json -o docs/benchmarks/cpu.svg

One row per workload; one bar per implementation: its median time divided by the
reference's (hand-written NumPy where the workload has it, else PyTorch), on a log axis, so
bars left of 1 are faster than the reference. Nothing is typed in by hand: every bar is a
median from the JSON file.
"""

from __future__ import annotations

import argparse
import json
import sys

IMPLS = ["xad", "xad-compiled", "numpy", "torch", "jax-jit"]
COLOURS = {"xad": "#3f51b5", "xad-compiled": "#00897b", "numpy": "#9e9e9e",
           "torch": "#e64a19", "jax-jit": "#fbc02d"}


def ratios(rows: list[dict]) -> tuple[list[str], dict[str, list[float | None]]]:
    """Workload labels and, per implementation, median / the reference's median."""
    labels, out = [], {i: [] for i in IMPLS}
    for row in rows:
        med = row.get("median") or {}
        ref = "numpy" if "numpy" in med else "torch"
        if ref not in med or "failed" in row:
            continue
        labels.append(f"{row['name']}\n(vs {ref}, {med[ref]:.3g} {row['unit']})")
        for impl in IMPLS:
            out[impl].append(med[impl] / med[ref] if impl in med else None)
    return labels, out


def _all(data: dict[str, list[float | None]]) -> list[float]:
    return [v for vs in data.values() for v in vs if v is not None]


def draw(rows: list[dict], title: str, path: str) -> None:
    """Save the chart of ``rows`` (``bench/run.py``'s JSON rows) to ``path`` (.svg or .png)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    matplotlib.rcParams["svg.hashsalt"] = "xad-bench"  # the same file for the same data
    labels, data = ratios(rows)
    impls = [i for i in IMPLS if any(v is not None for v in data[i])]
    height = 0.8 / len(impls)
    fig, ax = plt.subplots(figsize=(8, 0.75 * len(labels) + 1.2))
    for k, impl in enumerate(impls):
        ys = [j + k * height for j, v in enumerate(data[impl]) if v is not None]
        xs = [v for v in data[impl] if v is not None]
        ax.barh(ys, xs, height=height, label=impl, color=COLOURS[impl])
    ax.set_xscale("log")
    ticks = [t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20) if min(_all(data)) / 1.5 <= t
             <= max(_all(data)) * 1.5]
    ax.set_xticks(ticks, [f"{t:g}x" for t in ticks])
    ax.minorticks_off()
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks([j + 0.4 - height / 2 for j in range(len(labels))], labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("time relative to the reference (log scale; < 1 is faster)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Date": None} if path.endswith(".svg") else None)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("json", help="a file written by bench/run.sh --json")
    p.add_argument("-o", "--out", required=True, action="append",
                   help="output file(s), .svg or .png (repeatable)")
    a = p.parse_args(argv)
    with open(a.json) as f:
        doc = json.load(f)
    env = doc.get("environment", [])
    title = ("median time (memory: peak RSS) relative to the reference\n"
             + (env[0].split(";")[0].replace("machine: ", "").replace(", ?", "") if env else ""))
    for path in a.out:
        draw(doc["rows"], title, path)
        print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
