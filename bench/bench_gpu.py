"""Training steps on a CUDA GPU: xad on CuPy (eager, ``xad.compile``, ``xad.compile`` with
CUDA graphs) beside PyTorch eager on CUDA, for an MLP and the ``attention`` encoder.

Run by hand on a machine with a GPU: ``python bench/bench_gpu.py [--repeat N]``. Each step
ends with a device synchronisation, so a sample is the step's whole time. Prints medians
(ms per step) and each implementation's ratio to PyTorch.
"""

from __future__ import annotations

import argparse
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))
sys.path.append(_HERE)

import numpy as np  # noqa: E402
from bench_attention import spec  # noqa: E402
from bench_harness import StepFn, time_interleaved  # noqa: E402

import xad  # noqa: E402

MLP_SIZES = (784, 1024, 1024, 10)
MLP_BATCH = 512


def _mlp(nn):
    layers = []
    for a, b in zip(MLP_SIZES, MLP_SIZES[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def _mlp_data():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((MLP_BATCH, MLP_SIZES[0])).astype(np.float32),
            rng.integers(0, MLP_SIZES[-1], MLP_BATCH))


def _encoder(nn, s):
    layer = nn.TransformerEncoderLayer(s.d_model, s.heads, s.d_ff, dropout=0.0,
                                       batch_first=True)
    return nn.TransformerEncoder(layer, s.layers)


def xad_step(workload: str, mode: str) -> StepFn:
    xad.manual_seed(0)
    xad.set_backend("cupy")
    if workload == "mlp":
        model = _mlp(xad.nn)
        xs, ys = _mlp_data()
        loss_fn = xad.nn.functional.cross_entropy
    else:
        s = spec("full")
        model = _encoder(xad.nn, s)
        xs, ys = s.data()
        loss_fn = xad.nn.functional.mse_loss
    x, y = xad.tensor(xs), xad.tensor(ys)
    opt = xad.optim.Adam(model.parameters(), lr=1e-3)

    def body(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    fn = body if mode == "eager" else xad.compile(body, cuda_graphs=(mode == "graphs"))
    sync = x._backend.synchronize

    def step():
        fn(x, y)
        sync()
    return StepFn(step)


def torch_step(workload: str) -> StepFn:
    import torch
    torch.manual_seed(0)
    if workload == "mlp":
        model = _mlp(torch.nn).cuda()
        xs, ys = _mlp_data()
        loss_fn = torch.nn.functional.cross_entropy
    else:
        s = spec("full")
        model = _encoder(torch.nn, s).cuda()
        xs, ys = s.data()
        loss_fn = torch.nn.functional.mse_loss
    x, y = torch.tensor(xs).cuda(), torch.tensor(ys).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        torch.cuda.synchronize()
    return StepFn(step)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    print("| workload | implementation | ms/step | / torch |")
    print("| --- | --- | ---: | ---: |")
    for workload in ("mlp", "attention"):
        runners = {"torch cuda eager": torch_step(workload)}
        for mode in ("eager", "compiled", "graphs"):
            runners[f"xad cupy {mode}"] = xad_step(workload, mode)
        t = time_interleaved(runners, args.repeat, min_time=0.2)
        base = t["torch cuda eager"].median
        for name, timing in t.items():
            print(f"| {workload} | {name} | {timing.median * 1e3:.3f} | "
                  f"{timing.median / base:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
