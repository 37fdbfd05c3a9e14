"""Micro-benchmark: one ``opt.step()`` alone, xad against hand-written NumPy (and torch).

    python bench/optim_step.py                   # mlp and mlp-small parameter shapes
    python bench/optim_step.py --opt sgd --clock wall --threads 2

The parameters have the shapes of the ``mlp`` (784-512-512-10) or ``mlp-small``
(784-64-64-10) workloads, float32, with fixed random gradients; only the update is timed
(no forward or backward). The NumPy reference is Adam by hand with preallocated buffers and
``out=`` (``bench_mlp.NumpyMLP.update``'s loop), the floor for this update on NumPy; torch
is ``torch.optim.<Opt>`` with its defaults (foreach on CPU). Medians of interleaved samples,
each about 0.2 s of calls; ``--clock cpu`` (default) times this process's CPU time.
"""

from __future__ import annotations

import os
import sys

_OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if __name__ == "__main__" and any(v in os.environ for v in _OPENBLAS_VARS):
    _env = {k: v for k, v in os.environ.items() if k not in _OPENBLAS_VARS}
    os.execve(sys.executable, [sys.executable, *sys.argv], _env)

import argparse  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
# a bench/ module must not shadow the standard library's ``profile`` (torch imports cProfile)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.insert(0, os.path.dirname(_HERE))

SHAPES = {"mlp": (784, 512, 512, 10), "mlp-small": (784, 64, 64, 10),
          "seed-deep": (1,) + (10,) * 9 + (1,)}
B1, B2, EPS, LR = 0.9, 0.999, 1e-8, 1e-3


def _arrays(sizes: tuple[int, ...]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(0)
    ps, gs = [], []
    for fi, fo in zip(sizes[:-1], sizes[1:]):
        for shape in ((fo, fi), (fo,)):
            ps.append(rng.standard_normal(shape).astype(np.float32))
            gs.append((rng.standard_normal(shape) * 1e-2).astype(np.float32))
    return ps, gs


def numpy_adam(ps: list[np.ndarray], gs: list[np.ndarray]) -> Callable[[], None]:
    ps = [p.copy() for p in ps]
    m = [np.zeros_like(p) for p in ps]
    v = [np.zeros_like(p) for p in ps]
    tmp = [np.empty_like(p) for p in ps]
    t = [0]

    def step() -> None:
        t[0] += 1
        root_bc2 = math.sqrt(1 - B2 ** t[0])
        step = np.float32(LR * root_bc2 / (1 - B1 ** t[0]))
        eps = np.float32(EPS * root_bc2)
        for p, g, mi, vi, tm in zip(ps, gs, m, v, tmp):
            mi *= B1
            np.multiply(g, 1 - B1, out=tm)
            mi += tm
            vi *= B2
            np.multiply(g, g, out=tm)
            tm *= 1 - B2
            vi += tm
            np.sqrt(vi, out=tm)
            tm += eps
            np.divide(mi, tm, out=tm)
            tm *= step
            p -= tm
    return step


def numpy_sgd(ps: list[np.ndarray], gs: list[np.ndarray]) -> Callable[[], None]:
    ps = [p.copy() for p in ps]
    bufs = [g.copy() for g in gs]
    tmp = [np.empty_like(p) for p in ps]

    def step() -> None:
        for p, g, b, tm in zip(ps, gs, bufs, tmp):
            b *= 0.9
            b += g
            np.multiply(b, LR, out=tm)
            p -= tm
    return step


def xad_opt(name: str, ps: list[np.ndarray], gs: list[np.ndarray]) -> Callable[[], None]:
    import xad
    params = [xad.tensor(p.copy(), requires_grad=True) for p in ps]
    for p, g in zip(params, gs):
        p.grad = xad.tensor(g)
    opt = _make(xad.optim, name, params)
    return opt.step


def torch_opt(name: str, ps: list[np.ndarray], gs: list[np.ndarray]) -> Callable[[], None]:
    import torch
    params = [torch.tensor(p.copy(), requires_grad=True) for p in ps]
    for p, g in zip(params, gs):
        p.grad = torch.tensor(g)
    opt = _make(torch.optim, name, params)
    return opt.step


def _make(mod, name: str, params: list):
    if name == "adam":
        return mod.Adam(params, lr=LR)
    if name == "adamw":
        return mod.AdamW(params, lr=LR)
    if name == "sgd":
        return mod.SGD(params, lr=LR, momentum=0.9)
    if name == "rmsprop":
        return mod.RMSprop(params, lr=LR)
    if name == "adagrad":
        return mod.Adagrad(params, lr=LR)
    raise ValueError(name)


def _sample(fn: Callable[[], None], clock: Callable[[], float], n: int) -> float:
    t0 = clock()
    for _ in range(n):
        fn()
    return (clock() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="mlp-small,mlp")
    ap.add_argument("--opt", default="adam", choices=["adam", "adamw", "sgd", "rmsprop",
                                                      "adagrad"])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--clock", choices=["cpu", "wall"], default="cpu")
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args()
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(args.threads)
    except ImportError:
        pass
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    print(f"opt.step() alone: {args.opt}, float32, {args.threads} thread(s), {args.clock} "
          f"clock, medians of {args.repeat} interleaved samples")
    print(f"{'shapes':<10} {'impl':<6} {'us/step':>10} {'vs numpy':>9}")
    for shape in args.shapes.split(","):
        ps, gs = _arrays(SHAPES[shape])
        impls: dict[str, Callable[[], None]] = {"xad": xad_opt(args.opt, ps, gs)}
        ref = {"adam": numpy_adam, "adamw": None, "sgd": numpy_sgd}.get(args.opt)
        if ref is not None:
            impls["numpy"] = ref(ps, gs)
        if not args.no_torch:
            import torch
            torch.set_num_threads(args.threads)
            impls["torch"] = torch_opt(args.opt, ps, gs)
        counts = {}
        for k, fn in impls.items():
            fn()
            t0 = time.perf_counter()
            fn()
            counts[k] = max(1, int(0.2 / max(time.perf_counter() - t0, 1e-7)))
        samples: dict[str, list[float]] = {k: [] for k in impls}
        keys = list(impls)
        for r in range(args.repeat):
            for k in keys[r % len(keys):] + keys[:r % len(keys)]:
                samples[k].append(_sample(impls[k], clock, counts[k]))
        med = {k: statistics.median(s) for k, s in samples.items()}
        for k in keys:
            rel = f"{med[k] / med['numpy']:.2f}x" if "numpy" in med else "-"
            print(f"{shape:<10} {k:<6} {med[k] * 1e6:>10.1f} {rel:>9}")


if __name__ == "__main__":
    main()
