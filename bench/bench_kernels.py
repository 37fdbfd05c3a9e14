"""Kernel counts per training step on ``cupy-sim`` (the CuPy emulator of tests/cupy_sim).

At GPU sizes a training step is bound by kernel launches and host work, not arithmetic, and
the emulator counts launches exactly: this table is deterministic (no timing). For each
workload, one step after two warm-up steps, four when compiled (the optimiser's state
exists, fused kernels are made, the graph is captured): kernels launched one by one,
CUDA-graph launches, device-to-host transfers and new memory-pool blocks; and
host-to-device copies and device memcpys (no kernels: what a replayed CUDA graph needs
around its launch). ``tests/test_kernel_budget.py`` holds the
budgets.

Run: ``python bench/bench_kernels.py [--compiled]`` (from the repository root).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
for _p in (_ROOT, os.path.join(_ROOT, "tests"), os.path.join(_ROOT, "examples"), _HERE):
    if _p not in sys.path:
        sys.path.append(_p)

import cupy_sim  # noqa: E402
import numpy as np  # noqa: E402
from cupy_sim.streams import COUNTS  # noqa: E402

import xad  # noqa: E402
from xad import nn  # noqa: E402

__all__ = ["Counts", "WORKLOADS", "count_step"]


@dataclass
class Counts:
    """What one training step cost the emulated device."""

    kernels: int    # kernels launched one by one (a cupy.fuse call is one)
    graphs: int     # CUDA-graph launches
    transfers: int  # device-to-host transfers (explicit and implicit)
    blocks: int     # new memory-pool blocks (allocations no freed block could serve)
    uploads: int = 0  # host-to-device copies (a graph's learning rate, draws' offsets)
    copies: int = 0   # device-to-device memcpys (a graph's arguments in, results out)


def count_step(step: Callable[[], Any], warmup: int = 2, device: int = 0) -> Counts:
    """Run ``step`` ``warmup`` times, then once more counting what the device did."""
    for _ in range(warmup):
        step()
    pool = cupy_sim.POOLS[device]
    COUNTS.reset()
    cupy_sim.STATE.reset()
    before = pool.mallocs
    step()
    return Counts(COUNTS.kernels, COUNTS.launches, len(cupy_sim.STATE.transfers),
                  pool.mallocs - before, COUNTS.uploads, COUNTS.copies)


def _trainer(model: nn.Module, loss_fn: Callable, x: Any, y: Any, opt: Any,
             compiled: bool) -> Callable[[], Any]:
    def body(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    fn = xad.compile(body, cuda_graphs=True) if compiled else body
    return lambda: fn(x, y)


def _data(shape: tuple[int, ...], classes: int | None = None) -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    x = xad.tensor(rng.standard_normal(shape).astype(np.float32))
    if classes is None:
        return x, None
    return x, xad.tensor(rng.integers(0, classes, shape[0]))


def mlp(compiled: bool) -> Callable[[], Any]:
    """bench/bench_gpu.py's MLP: 784-1024-1024-10, batch 512, cross-entropy, Adam."""
    sizes = (784, 1024, 1024, 10)
    layers: list[nn.Module] = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    x, y = _data((512, 784), 10)
    opt = xad.optim.Adam(model.parameters(), lr=1e-3)
    return _trainer(model, nn.functional.cross_entropy, x, y, opt, compiled)


def attention(compiled: bool) -> Callable[[], Any]:
    """bench/bench_attention.py's encoder: 4 post-norm layers, d_model 128, 4 heads, ff 512,
    input (32, 64, 128), MSE, Adam."""
    layer = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, 4)
    x, _ = _data((32, 64, 128))
    y, _ = _data((32, 64, 128))
    opt = xad.optim.Adam(model.parameters(), lr=1e-3)
    return _trainer(model, nn.functional.mse_loss, x, y, opt, compiled)


def digits(compiled: bool) -> Callable[[], Any]:
    """examples/digits.py's model, batch 32, cross-entropy, Adam."""
    import digits as ex
    x, y = _data((32, 64), 10)
    model = ex.make_model()
    opt = xad.optim.Adam(model.parameters(), lr=1e-3)
    return _trainer(model, nn.CrossEntropyLoss(), x, y, opt, compiled)


def cnn_digits(compiled: bool) -> Callable[[], Any]:
    """examples/cnn_digits.py's model, batch 64 of 1x8x8 images, cross-entropy, Adam."""
    import cnn_digits as ex
    x, y = _data((64, 1, 8, 8), 10)
    model = ex.make_model()
    opt = xad.optim.Adam(model.parameters(), lr=1e-3)
    return _trainer(model, nn.CrossEntropyLoss(), x, y, opt, compiled)


def fit_nonlinear(compiled: bool) -> Callable[[], Any]:
    """examples/fit_nonlinear.py's ten-layer model, batch 32, MSE, Adam."""
    import fit_nonlinear as ex
    x, _ = _data((32, 1))
    y, _ = _data((32, 1))
    model = ex.make_model()
    opt = xad.optim.Adam(model.parameters(), lr=1e-3)
    return _trainer(model, nn.MSELoss(), x, y, opt, compiled)


def linear_regression(compiled: bool) -> Callable[[], Any]:
    """examples/linear_regression.py's model: 5 features, no bias, batch 64, MSE, SGD with
    momentum 0.9."""
    x, _ = _data((64, 5))
    y, _ = _data((64, 1))
    model = nn.Linear(5, 1, bias=False)
    opt = xad.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return _trainer(model, nn.MSELoss(), x, y, opt, compiled)


def transformer(compiled: bool) -> Callable[[], Any]:
    """examples/transformer_addition.py's decoder on a batch of 64 sequences, AdamW."""
    import transformer_addition as ex
    rng = np.random.default_rng(0)
    seqs = xad.tensor(rng.integers(0, len(ex.VOCAB), (64, ex.PROMPT + ex.ANSWER + 1)))
    model = ex.Decoder()
    opt = xad.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    return _seq_trainer(model, ex.answer_loss, seqs, opt, compiled)


def _seq_trainer(model: nn.Module, loss_fn: Callable, seqs: Any, opt: Any,
                 compiled: bool) -> Callable[[], Any]:
    def body(seqs):
        opt.zero_grad()
        loss = loss_fn(model, seqs)
        loss.backward()
        opt.step()
        return loss.detach()

    fn = xad.compile(body, cuda_graphs=True) if compiled else body
    return lambda: fn(seqs)


WORKLOADS: dict[str, Callable[[bool], Callable[[], Any]]] = {
    "mlp": mlp, "attention": attention, "digits": digits, "cnn_digits": cnn_digits,
    "fit_nonlinear": fit_nonlinear, "linear_regression": linear_regression,
    "transformer": transformer,
}


def measure(name: str, compiled: bool = False, device: int = 0) -> Counts:
    """The counts of one step of workload ``name`` on cupy-sim's device ``device``."""
    cupy_sim.register()
    with xad.use_backend("cupy-sim", f"cuda:{device}"):
        xad.manual_seed(0)
        # compiled: recording, capture, and a third step where SGD's momentum buffers
        # were new at the first (their ``b = g`` step records the call again)
        return count_step(WORKLOADS[name](compiled), 4 if compiled else 2, device)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--compiled", action="store_true",
                   help="also count xad.compile(step, cuda_graphs=True) steps")
    p.add_argument("workloads", nargs="*", default=list(WORKLOADS))
    args = p.parse_args()
    print("| workload | mode | kernels | graph launches | host transfers | new pool blocks "
          "| uploads | memcpys |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in args.workloads:
        for compiled in (False, True) if args.compiled else (False,):
            c = measure(name, compiled)
            mode = "compiled + graphs" if compiled else "eager"
            print(f"| {name} | {mode} | {c.kernels} | {c.graphs} | {c.transfers} | "
                  f"{c.blocks} | {c.uploads} | {c.copies} |", flush=True)


if __name__ == "__main__":
    main()
