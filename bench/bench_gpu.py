"""Training steps on a CUDA GPU (issue 25, item 7): xad on CuPy (eager, ``xad.compile``,
``xad.compile`` with CUDA graphs) beside PyTorch on CUDA, eager and as one CUDA graph
(``torch.cuda.graph`` of the whole step, Adam with ``capturable=True``: PyTorch's own
recipe), for bench_gpu's MLP (784-1024-1024-10, batch 512, cross-entropy), the encoder of
``bench_attention.py`` (4 post-norm layers, d_model 128, 32 x 64, MSE) and the decoder of
``examples/transformer_addition.py`` (2 pre-norm causal layers, GELU, two embeddings,
cross-entropy, AdamW; batch 64).

Run by hand on a machine with a GPU (``ci/gpu.sh`` does): ``python bench/bench_gpu.py
[--repeat N] [--workloads mlp,attention,transformer]``. Prints two tables:

- ms per step (medians of interleaved samples, each step ending with a device
  synchronisation) and the ratio to PyTorch eager;
- per step, in a fresh process per implementation: CUDA kernels executed and kernel and
  graph launches, as ``torch.profiler`` records them (CUPTI sees CuPy's kernels too; a
  graph's kernels count as executed, its launch as one graph launch), and the device
  memory the process holds after five steps beyond what it held before building the model
  (``cudaMemGetInfo``: memory pools, workspaces and graphs included, for both libraries).

``--sim`` rehearses the script without a GPU: xad on the CuPy emulator (kernels counted by
the emulator), PyTorch eager on the CPU; what needs CUDA prints ``n/a``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
sys.path[:0] = [_ROOT]
sys.path += [_HERE, os.path.join(_ROOT, "examples"), os.path.join(_ROOT, "tests")]

import numpy as np  # noqa: E402
from bench_attention import spec  # noqa: E402
from bench_harness import StepFn, time_interleaved  # noqa: E402

import xad  # noqa: E402

SIM = "--sim" in sys.argv
WORKLOADS = ("mlp", "attention", "transformer")
IMPLS = ("torch eager", "torch graphs", "xad eager", "xad compiled", "xad graphs")
MLP_SIZES = (784, 1024, 1024, 10)
MLP_BATCH = 512


def _mlp(nn: Any) -> Any:
    layers = []
    for a, b in zip(MLP_SIZES, MLP_SIZES[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def _decoder(nn: Any, arange: Callable) -> Any:
    """examples/transformer_addition.py's ``Decoder`` (xad's own), or the same in torch."""
    import transformer_addition as ex
    if nn is xad.nn:
        return ex.Decoder()

    class Decoder(nn.Module):
        def __init__(self, d_model: int = 64) -> None:
            super().__init__()
            self.tok = nn.Embedding(len(ex.VOCAB), d_model)
            self.pos = nn.Embedding(ex.PROMPT + ex.ANSWER, d_model)
            self.blocks = nn.ModuleList(
                nn.TransformerEncoderLayer(d_model, 4, 4 * d_model, dropout=0.0,
                                           activation="gelu", batch_first=True,
                                           norm_first=True) for _ in range(2))
            self.norm = nn.LayerNorm(d_model)
            self.head = nn.Linear(d_model, len(ex.VOCAB))

        def forward(self, idx: Any) -> Any:
            x = self.tok(idx) + self.pos(arange(idx.shape[1]))
            rows = arange(idx.shape[1])
            future = rows.unsqueeze(-1) < rows
            for block in self.blocks:
                x = block(x, src_mask=future, is_causal=True)
            return self.head(self.norm(x))

    return Decoder()


def _build(lib: str, workload: str) -> tuple[Any, Callable[[], Any], Any]:
    """The model, its loss (a function of nothing) and its optimiser, in ``lib`` ("xad" or
    "torch"), with the same shapes and data (weights: each library's own initialisation)."""
    if lib == "xad":
        xad.set_backend("cupy-sim" if SIM else "cupy")
        xad.manual_seed(0)
        nn, tensor = xad.nn, xad.tensor
        arange = lambda n: xad.arange(n, dtype=xad.int64)  # noqa: E731
        make_opt = {"mlp": xad.optim.Adam, "attention": xad.optim.Adam,
                    "transformer": xad.optim.AdamW}[workload]
    else:
        import torch
        torch.manual_seed(0)
        device = "cpu" if SIM else "cuda"
        nn = torch.nn
        tensor = lambda a: torch.tensor(a, device=device)  # noqa: E731
        arange = lambda n: torch.arange(n, device=device)  # noqa: E731
        make_opt = {"mlp": torch.optim.Adam, "attention": torch.optim.Adam,
                    "transformer": torch.optim.AdamW}[workload]
    rng = np.random.default_rng(0)
    F = nn.functional
    if workload == "mlp":
        model = _mlp(nn)
        x = tensor(rng.standard_normal((MLP_BATCH, MLP_SIZES[0])).astype(np.float32))
        y = tensor(rng.integers(0, MLP_SIZES[-1], MLP_BATCH))
        loss = lambda: F.cross_entropy(model(x), y)  # noqa: E731
    elif workload == "attention":
        s = spec("full")
        model = nn.TransformerEncoder(nn.TransformerEncoderLayer(
            s.d_model, s.heads, s.d_ff, dropout=0.0, batch_first=True), s.layers)
        x, y = (tensor(a) for a in s.data())
        loss = lambda: F.mse_loss(model(x), y)  # noqa: E731
    else:
        import transformer_addition as ex
        model = _decoder(nn, arange)
        seqs = tensor(rng.integers(0, len(ex.VOCAB), (64, ex.PROMPT + ex.ANSWER + 1)))
        loss = lambda: F.cross_entropy(  # noqa: E731
            model(seqs[:, :-1])[:, ex.PROMPT - 1:].reshape(-1, len(ex.VOCAB)),
            seqs[:, ex.PROMPT:].reshape(-1))
    if lib == "torch" and not SIM:
        model = model.cuda()
    kw = {"capturable": True} if lib == "torch" and not SIM else {}
    return model, loss, make_opt(model.parameters(), lr=1e-3, **kw)


def xad_step(workload: str, mode: str) -> Callable[[], None]:
    """One synchronised xad step: eager, compiled, or compiled with CUDA graphs."""
    _, loss_fn, opt = _build("xad", workload)

    def body() -> Any:
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
        return loss.detach()

    fn = body if mode == "eager" else xad.compile(body, cuda_graphs=(mode == "graphs"))
    sync = xad.get_backend().synchronize

    def step() -> None:
        fn()
        sync()
    return step


def torch_step(workload: str, graphs: bool) -> Callable[[], None]:
    """One synchronised PyTorch step; with ``graphs``, the whole step (forward, backward,
    Adam with ``capturable=True``) captured once as a CUDA graph and replayed, as PyTorch's
    documentation's whole-network capture does (warm-up on a side stream first)."""
    import torch
    _, loss_fn, opt = _build("torch", workload)

    def body() -> None:
        opt.zero_grad(set_to_none=True)
        loss_fn().backward()
        opt.step()

    if SIM:
        return body
    if not graphs:
        def eager() -> None:
            body()
            torch.cuda.synchronize()
        return eager
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        loss_fn().backward()
        opt.step()

    def replay() -> None:
        graph.replay()
        torch.cuda.synchronize()
    return replay


def runs_here(impl: str) -> bool:
    """Whether ``impl`` runs in this process: all but PyTorch's graphs in a rehearsal."""
    return not (SIM and impl == "torch graphs")


def make_step(impl: str, workload: str) -> Callable[[], None]:
    """The step of implementation ``impl`` (one of :data:`IMPLS`)."""
    lib, mode = impl.split()
    if lib == "torch":
        return torch_step(workload, mode == "graphs")
    return xad_step(workload, mode)


def child(impl: str, workload: str) -> dict[str, Any]:
    """In a fresh process: the device memory held after five steps beyond the baseline, then
    one profiled step's kernels and launches."""
    used = _device_used(impl)
    before = used()
    step = make_step(impl, workload)
    for _ in range(5):
        step()
    out: dict[str, Any] = {"memory_mib": None if before is None else (used() - before) / 2**20}
    if SIM:  # the emulator's counts for xad; nothing for PyTorch on the CPU
        from cupy_sim.streams import COUNTS
        COUNTS.reset()
        step()
        if impl.startswith("xad"):
            out.update(kernels=COUNTS.kernels, launches=COUNTS.kernels, graphs=COUNTS.launches)
        if os.environ.get("XAD_BENCH_PROFILE"):
            _host_profile(impl, workload, step, None)
        return out
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
    events = prof.events()
    out["kernels"] = sum(e.device_type.name == "CUDA" for e in events)
    out["launches"] = sum("LaunchKernel" in e.name for e in events)
    out["graphs"] = sum("GraphLaunch" in e.name for e in events)
    torch.cuda.synchronize()
    if os.environ.get("XAD_BENCH_PROFILE"):
        _host_profile(impl, workload, step, prof)
    return out


def _host_profile(impl: str, workload: str, step: Callable[[], None], prof: Any) -> None:
    """Where a step's host time goes, appended to ``$XAD_BENCH_PROFILE``: the CUDA runtime
    calls of the profiled step (launches, copies, synchronisations: a step that waits on the
    device shows here; none in a rehearsal) and, for xad, cProfile's top functions over 20
    steps."""
    import cProfile
    import io
    import pstats
    text = "" if prof is None else prof.key_averages().table(sort_by="self_cpu_time_total",
                                                             row_limit=12)
    if impl.startswith("xad"):
        pr = cProfile.Profile()
        pr.runcall(lambda: [step() for _ in range(20)])
        buf = io.StringIO()
        pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(25)
        text += buf.getvalue()
    with open(os.environ["XAD_BENCH_PROFILE"], "a") as f:
        f.write(f"===== {workload} / {impl}\n{text}\n")


def _device_used(impl: str) -> Callable[[], float | None]:
    """A function giving the device memory in use (bytes), after the library made its CUDA
    context (``None`` in a rehearsal)."""
    if SIM:
        return lambda: None
    if impl.startswith("torch"):
        import torch
        torch.zeros(1, device="cuda")
        return lambda: (lambda f, t: t - f)(*torch.cuda.mem_get_info())
    import cupy
    cupy.zeros(1)
    return lambda: (lambda f, t: t - f)(*cupy.cuda.runtime.memGetInfo())


def counts(workload: str) -> dict[str, dict[str, Any]]:
    """:func:`child`'s figures for each implementation, each in its own process."""
    found = {}
    for impl in filter(runs_here, IMPLS):
        cmd = [sys.executable, __file__, "--child", impl, workload] + (["--sim"] if SIM else [])
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        last = run.stdout.strip().splitlines()[-1:] or [""]
        try:
            found[impl] = json.loads(last[0])
        except json.JSONDecodeError:
            found[impl] = {"error": (run.stderr.strip().splitlines() or ["no output"])[-1]}
    return found


def _cell(v: Any, fmt: str) -> str:
    return "n/a" if v is None else format(v, fmt)


def time_torch_graphs(workload: str, repeat: int) -> dict[str, Any]:
    """PyTorch's graph step timed alone in a process of its own: ``{"ms": ...}`` or
    ``{"error": ...}``. (Built beside PyTorch's eager step of a cross-entropy workload in
    one process, its first replay tripped nll_loss's device-side assert on an H100 and an
    H200, which poisons the CUDA context of every library in the process; alone, as in
    :func:`child`, it replays.)"""
    cmd = [sys.executable, __file__, "--child-time", workload, "--repeat", str(repeat)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    try:
        return json.loads(run.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": (run.stderr.strip().splitlines() or ["no output"])[-1][:160]}


def child_time(workload: str, repeat: int) -> dict[str, Any]:
    t = time_interleaved({"g": StepFn(make_step("torch graphs", workload))}, repeat, 0.2)
    return {"ms": t["g"].median * 1e3}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--sim", action="store_true", help="rehearse on the emulator and the CPU")
    p.add_argument("--child", nargs=2, metavar=("IMPL", "WORKLOAD"), help=argparse.SUPPRESS)
    p.add_argument("--child-time", metavar="WORKLOAD", help=argparse.SUPPRESS)
    args = p.parse_args()
    if SIM:
        import cupy_sim
        cupy_sim.register()
    if args.child or args.child_time:
        out = child(*args.child) if args.child else child_time(args.child_time, args.repeat)
        print(json.dumps(out), flush=True)
        return
    rows = []
    print("| workload | implementation | ms/step | / torch eager |\n| --- | --- | ---: | ---: |")
    for workload in args.workloads.split(","):
        runners = {impl: StepFn(make_step(impl, workload)) for impl in IMPLS
                   if runs_here(impl) and impl != "torch graphs"}
        t = time_interleaved(runners, args.repeat, min_time=0.2)
        base = t["torch eager"].median
        for impl, timing in t.items():
            print(f"| {workload} | {impl} | {timing.median * 1e3:.3f} | "
                  f"{timing.median / base:.2f}x |", flush=True)
        if runs_here("torch graphs"):
            g = time_torch_graphs(workload, args.repeat)
            print(f"| {workload} | torch graphs | {g['ms']:.3f} | {g['ms'] / 1e3 / base:.2f}x "
                  "(own process) |" if "error" not in g else
                  f"| {workload} | torch graphs | error: {g['error']} | |", flush=True)
        for impl, c in counts(workload).items():
            print(f"counts {workload} {impl}: {json.dumps(c)}", file=sys.stderr, flush=True)
            rows.append((workload, impl, c))
    print_counts(rows)


def print_counts(rows: list) -> None:
    print("\n| workload | implementation | kernels executed | kernel launches | graph launches "
          "| device memory held (MiB) |\n| --- | --- | ---: | ---: | ---: | ---: |")
    for workload, impl, c in rows:
        if "error" in c:
            print(f"| {workload} | {impl} | error: {c['error']} | | | |")
            continue
        print(f"| {workload} | {impl} | {_cell(c.get('kernels'), 'd')} | "
              f"{_cell(c.get('launches'), 'd')} | {_cell(c.get('graphs'), 'd')} | "
              f"{_cell(c.get('memory_mib'), '.1f')} |", flush=True)

if __name__ == "__main__":
    main()
