"""Mixed precision: one MLP training step (784-256-256-10, batch 256, Adam) with and without
``xad.amp.autocast(float16)`` + ``GradScaler``, on xad's numpy and torch backends, with
PyTorch eager (``torch.autocast("cpu", float16)`` + ``torch.amp.GradScaler``) beside.

Run by hand: ``python bench/bench_amp.py [--repeat N]``. Prints medians (ms per step) and
the float16/float32 ratio per implementation. On a CPU float16 has no fast matrix product
(NumPy has no float16 BLAS), so this measures autocast's bookkeeping, not a speed-up; the
speed-up needs a GPU (cupy, torch on CUDA).
"""

from __future__ import annotations

import argparse
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))
sys.path.append(_HERE)

import numpy as np  # noqa: E402
from bench_harness import StepFn, time_interleaved  # noqa: E402

import xad  # noqa: E402

SIZES = (784, 256, 256, 10)
BATCH = 256


def _data():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((BATCH, SIZES[0])).astype(np.float32),
            rng.integers(0, SIZES[-1], BATCH))


def xad_step(backend: str, amp: bool) -> StepFn:
    xad.manual_seed(0)
    with xad.use_backend(backend):
        layers = []
        for a, b in zip(SIZES, SIZES[1:]):
            layers += [xad.nn.Linear(a, b), xad.nn.ReLU()]
        model = xad.nn.Sequential(*layers[:-1])
        xs, ys = _data()
        x, y = xad.tensor(xs), xad.tensor(ys)
    opt = xad.optim.Adam(model.parameters(), lr=1e-3)
    scaler = xad.amp.GradScaler(init_scale=1024.0, enabled=amp)

    def step():
        opt.zero_grad()
        with xad.amp.autocast(xad.float16, enabled=amp):
            loss = xad.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        model[0].weight._backend.synchronize()
    return StepFn(step)


def torch_step(amp: bool) -> StepFn:
    import torch
    torch.manual_seed(0)
    layers = []
    for a, b in zip(SIZES, SIZES[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1])
    xs, ys = _data()
    x, y = torch.tensor(xs), torch.tensor(ys)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, enabled=amp)

    def step():
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16, enabled=amp):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return StepFn(step)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    import torch
    torch.set_num_threads(2)
    runners = {}
    for amp in (False, True):
        tag = "float16" if amp else "float32"
        runners[f"xad numpy {tag}"] = xad_step("numpy", amp)
        runners[f"xad torch {tag}"] = xad_step("torch", amp)
        runners[f"torch eager {tag}"] = torch_step(amp)
    timings = time_interleaved(runners, args.repeat, min_time=0.25, settle=0.05)
    print("| implementation | float32 ms | autocast float16 + GradScaler ms | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for impl in ("xad numpy", "xad torch", "torch eager"):
        a = timings[f"{impl} float32"].median * 1e3
        b = timings[f"{impl} float16"].median * 1e3
        print(f"| {impl} | {a:.2f} | {b:.2f} | {b / a:.2f}x |")


if __name__ == "__main__":
    main()
