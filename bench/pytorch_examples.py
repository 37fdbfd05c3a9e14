"""The longer runs behind docs/PORTING.md's table of PyTorch's examples: each program with
real PyTorch and through ``python -m xad.as_torch`` (NumPy backend), one thread each, one
after the other; prints a Markdown row per program with both results and times.

Run: python bench/pytorch_examples.py [NAME ...]   (names as in examples/pytorch/local/programs.py)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "pytorch" /
                       "local"))
import programs  # noqa: E402


def _fmt(m: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.4g}" for k, v in m.items())


def main(names: list[str]) -> None:
    print("| program | arguments | PyTorch 2.13 | xad (as_torch, numpy) | time PyTorch | "
          "time xad |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for prog in programs.programs(long=True):
            if names and prog.name not in names:
                continue
            (out_t, s_t), (out_x, s_x) = (programs.run(prog, use_xad, Path(tmp) / prog.name[:4])
                                          for use_xad in (False, True))
            args = " ".join(Path(a).name if "/" in a else a for a in prog.args)
            print(f"| {prog.name} | `{args}` | {_fmt(programs.metrics(prog.name, out_t))} | "
                  f"{_fmt(programs.metrics(prog.name, out_x))} | {s_t:.1f} s | {s_x:.1f} s |",
                  flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
