"""Per-example gradients (issue 28): ``xad.vmap(xad.grad(loss))`` against a Python loop of
``xad.grad`` and against ``torch.func.vmap(torch.func.grad(loss))``, in one run.

    python bench/per_example.py                  # both workloads, 7 rounds, CPU clock
    python bench/per_example.py --only mlp --repeat 15 --clock wall

Workloads (float32, same weights and data for xad and torch):
- ``mlp``: a 784-64-10 tanh MLP, squared error, batch 256 (issue 28's row);
- ``digits``: ``examples/per_example_gradients.py``'s model (``Linear(64, 64)``, ``Tanh``,
  ``Linear(64, 10)`` through ``nn.functional_call``, cross-entropy on one-hot labels), its
  batch of 64.
The per-example gradients are checked against torch's first (largest relative error
printed). Then each round times one call of every implementation, in a rotating order
(interleaved, so a load change hits all alike); the best of the rounds is quoted, the median
beside it. One BLAS thread (NumPy's and torch's); ``OPENBLAS_CORETYPE`` and
``OPENBLAS_L2_SIZE``, which this machine sets and which halve NumPy's matrix products, are
unset (the script re-executes itself without them).
"""

from __future__ import annotations

import os
import sys

_OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if __name__ == "__main__" and any(v in os.environ for v in _OPENBLAS_VARS):
    _env = {k: v for k, v in os.environ.items() if k not in _OPENBLAS_VARS}
    os.execve(sys.executable, [sys.executable, *sys.argv], _env)

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

if __name__ == "__main__":  # bench/ must not shadow the standard library's ``profile``
    _HERE = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    sys.path.insert(0, os.path.dirname(_HERE))

import xad  # noqa: E402
from xad import nn  # noqa: E402


def _data(sizes: tuple[int, ...], batch: int) -> tuple[dict, np.ndarray, np.ndarray]:
    """Weights as ``nn.Linear`` keeps them (``(out, in)``), inputs, one-hot targets."""
    rng = np.random.default_rng(0)
    p = {}
    for k, (fi, fo) in enumerate(zip(sizes[:-1], sizes[1:])):
        p[f"{2 * k}.weight"] = (rng.standard_normal((fo, fi)) * fi ** -0.5).astype(np.float32)
        p[f"{2 * k}.bias"] = (rng.standard_normal(fo) * 0.1).astype(np.float32)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    y = np.eye(sizes[-1], dtype=np.float32)[rng.integers(0, sizes[-1], batch)]
    return p, x, y


def _xad_loss(kind: str, model: nn.Module) -> Callable:
    if kind == "mlp":
        def loss(p, xi, yi):
            h = xad.tanh(xi @ p["0.weight"].T + p["0.bias"])
            return ((h @ p["2.weight"].T + p["2.bias"] - yi) ** 2).sum()
    else:
        def loss(p, xi, yi):
            logits = nn.functional_call(model, p, (xi,))
            return -(xad.log_softmax(logits, axis=-1) * yi).sum()
    return loss


def _torch_loss(kind: str, model) -> Callable:
    import torch
    if kind == "mlp":
        def loss(p, xi, yi):
            h = torch.tanh(xi @ p["0.weight"].T + p["0.bias"])
            return ((h @ p["2.weight"].T + p["2.bias"] - yi) ** 2).sum()
    else:
        def loss(p, xi, yi):
            logits = torch.func.functional_call(model, p, (xi,))
            return -(torch.log_softmax(logits, dim=-1) * yi).sum()
    return loss


def build(kind: str, sizes: tuple[int, ...], batch: int) -> dict:
    """``{impl: call}``: each gives the per-example gradients, ``{name: (batch, *shape)}``
    (the loop: a list of ``{name: shape}``)."""
    p, x, y = _data(sizes, batch)
    model = nn.Sequential(nn.Linear(sizes[0], sizes[1]), nn.Tanh(), nn.Linear(sizes[1], sizes[2]))
    xp = {k: xad.tensor(v) for k, v in p.items()}
    xx, xy = xad.tensor(x), xad.tensor(y)
    loss = _xad_loss(kind, model)
    per = xad.vmap(xad.grad(loss), in_axes=(None, 0, 0))
    g1 = xad.grad(loss)
    calls = {"xad vmap(grad)": lambda: per(xp, xx, xy),
             "xad loop of grad": lambda: [g1(xp, xx[i], xy[i]) for i in range(batch)]}
    try:
        import torch
    except ImportError:
        return calls
    tmodel = torch.nn.Sequential(torch.nn.Linear(sizes[0], sizes[1]), torch.nn.Tanh(),
                                 torch.nn.Linear(sizes[1], sizes[2]))
    tp = {k: torch.tensor(v) for k, v in p.items()}
    tx, ty = torch.tensor(x), torch.tensor(y)
    tper = torch.func.vmap(torch.func.grad(_torch_loss(kind, tmodel)), in_dims=(None, 0, 0))
    calls["torch.func vmap(grad)"] = lambda: tper(tp, tx, ty)
    return calls


def _numpy(res: dict | list) -> dict:
    if isinstance(res, list):
        return {k: np.stack([g[k].numpy() for g in res]) for k in res[0]}
    return {k: v.numpy() for k, v in res.items()}


def agreement(calls: dict) -> float:
    """The largest ``max|a - ref| / max|ref|`` of any implementation against the last
    (torch.func's where torch is installed)."""
    res = [_numpy(call()) for call in calls.values()]
    ref = res[-1]
    worst = 0.0
    for r in res:
        for k, v in ref.items():
            worst = max(worst, float(np.abs(r[k] - v).max() / np.abs(v).max()))
    return worst


def time_interleaved(calls: dict, repeat: int, clock: Callable[[], float]) -> dict:
    """``{impl: [seconds per round]}``: one call of each per round, the order rotating."""
    names = list(calls)
    for fn in calls.values():
        fn()  # warm up
    out: dict = {n: [] for n in names}
    for r in range(repeat):
        for n in names[r % len(names):] + names[:r % len(names)]:
            t0 = clock()
            calls[n]()
            out[n].append(clock() - t0)
    return out


def report(title: str, times: dict, err: float) -> list[tuple[str, float, float]]:
    best = {n: min(ts) for n, ts in times.items()}
    vm = best["xad vmap(grad)"]
    print(f"\n{title} (largest relative difference from torch.func: {err:.1e})")
    print(f"  {'implementation':24s} {'best ms':>9s} {'median ms':>10s}   vs xad vmap(grad)")
    rows = []
    for n, ts in times.items():
        print(f"  {n:24s} {best[n] * 1e3:9.2f} {statistics.median(ts) * 1e3:10.2f}   "
              f"{best[n] / vm:6.2f}x")
        rows.append((n, best[n], statistics.median(ts)))
    loop, tf = best["xad loop of grad"], best.get("torch.func vmap(grad)")
    print(f"  targets: loop / vmap = {loop / vm:.1f}x (want >= 20)" +
          (f"; vmap / torch.func = {vm / tf:.2f}x (want <= 1.5)" if tf else ""))
    return rows


WORKLOADS = {"mlp": ((784, 64, 10), 256), "digits": ((64, 64, 10), 64)}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="mlp,digits")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits
    threadpool_limits(args.threads)
    try:
        import torch
        torch.set_num_threads(args.threads)
    except ImportError:
        pass
    xad.set_backend("numpy")
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    out = {}
    for kind in args.only.split(","):
        sizes, batch = WORKLOADS[kind]
        calls = build(kind, sizes, batch)
        err = agreement(calls)
        times = time_interleaved(calls, args.repeat, clock)
        title = f"{kind}: {'-'.join(map(str, sizes))}, batch {batch}, {args.clock} clock"
        out[kind] = report(title, times, err)
    return out


if __name__ == "__main__":
    main()
