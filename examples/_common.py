"""What the example scripts share: the command line and a progress bar (tqdm if installed,
else a line printed now and then)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

try:
    import xad  # noqa: F401
except ImportError:  # run from a source checkout without installing: use the repository
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import xad


def parser(description: str, epochs: int, **extra: object) -> argparse.ArgumentParser:
    """``--backend``, ``--epochs``, ``--seed``, ``--quiet`` and ``--compile``, plus the
    script's own."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--backend", default="numpy",
                   help="numpy (default), cupy, torch, jax, array_api_strict")
    p.add_argument("--epochs", type=int, default=epochs, help=f"default {epochs}")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--compile", action="store_true", help="record the training step once "
                   "(xad.compile) and replay its array program for later batches")
    return p


class _Lines:
    """A stand-in for tqdm: prints about ten lines over the run."""

    def __init__(self, it: Iterable[int], total: int, desc: str) -> None:
        self.it, self.total, self.desc = it, total, desc
        self.postfix = ""
        self.start = time.perf_counter()

    def __iter__(self) -> Iterator[int]:
        every = max(1, self.total // 10)
        for i, x in enumerate(self.it, 1):
            yield x
            if i % every == 0 or i == self.total:
                print(f"{self.desc} {i}/{self.total} {self.postfix} "
                      f"[{time.perf_counter() - self.start:.1f}s]", flush=True)

    def set_postfix_str(self, s: str) -> None:
        self.postfix = s

    def close(self) -> None:
        pass


class _Silent(_Lines):
    def __iter__(self) -> Iterator[int]:
        yield from self.it


def progress(total: int, desc: str, quiet: bool = False) -> _Lines:
    """An iterator over ``range(total)`` that shows progress; ``set_postfix_str`` adds the
    loss."""
    if quiet:
        return _Silent(range(total), total, desc)
    try:
        from tqdm import tqdm
    except ImportError:
        return _Lines(range(total), total, desc)
    return tqdm(range(total), total=total, desc=desc, leave=True)  # type: ignore[return-value]


def distribute(ddp: bool, model: Any, dataset: Any, batch_size: int, seed: int) -> tuple:
    """``(model, loader, sampler)``: as given, or with ``--ddp`` data-parallel over MPI
    (launch with ``mpiexec -n 4 python examples/<name>.py --ddp``): the model wrapped in
    ``DataParallel``, each rank loading its shard (``batch_size`` per rank); call
    ``sampler.set_epoch(epoch)`` each epoch when ``sampler`` is not None."""
    if not ddp:
        return model, xad.data.DataLoader(dataset, batch_size=batch_size, shuffle=True,
                                          seed=seed), None
    xad.distributed.init("mpi")
    sampler = xad.data.DistributedSampler(dataset, seed=seed)
    loader = xad.data.DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    return xad.distributed.DataParallel(model), loader, sampler


def add_amp_flag(p: argparse.ArgumentParser) -> None:
    """``--amp``: train in float16 (matrix products) with loss scaling."""
    p.add_argument("--amp", action="store_true",
                   help="mixed precision: autocast to float16 with a GradScaler")


def amp_step(opt: Any, scaler: Any, loss_fn: Any, *args: Any) -> Any:
    """One optimiser step on ``loss_fn(*args)``, under float16 autocast and loss scaling when
    ``scaler`` is enabled (else a plain step); returns the loss, detached."""
    opt.zero_grad()  # first: under xad.compile's CUDA graphs a host call between kernels
    with xad.amp.autocast(xad.float16, enabled=scaler.is_enabled()):  # splits the graph
        loss = loss_fn(*args)
    scaler.scale(loss).backward()
    scaler.step(opt)  # skipped when a gradient overflowed
    scaler.update()
    return loss.detach()


def training_step(opt: Any, loss_fn: Any, compile: bool = False,
                  scaler: Any = None) -> Callable[..., Any]:
    """``step(*batch)``: one optimiser step on ``loss_fn(*batch)`` (``amp_step``, with loss
    scaling only when ``scaler`` is given and enabled), returning the loss detached; with
    ``compile`` (``--compile``) wrapped in ``xad.compile``: recorded on its first call (per
    batch shape) and replayed afterwards."""
    scaler = scaler if scaler is not None else xad.amp.GradScaler(enabled=False)

    def step(*batch: Any) -> Any:
        return amp_step(opt, scaler, loss_fn, *batch)
    return xad.compile(step) if compile else step
