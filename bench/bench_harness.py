"""What every workload shares: the runner protocol, agreement checks, interleaved timing.

A workload builds one *runner* per implementation (``xad``, ``xad-compiled``, ``numpy``,
``torch``, ``jax-jit``). A runner has
``step()`` (the timed unit of work) and ``check()`` (run once on a fresh runner: the loss,
gradients and whatever else must agree, as NumPy arrays, plus ``self/...`` entries: errors a
runner measured against its own reference, e.g. an optimiser step against the closed form).
"""

from __future__ import annotations

import gc
import math
import statistics
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

__all__ = ["ALL_IMPLS", "Runner", "Workload", "CheckError", "compare", "time_interleaved",
           "Timing", "adam_first_step_error", "to_np", "rel_err", "compile_replaying",
           "must_replay", "import_jax", "StepFn", "TrainStep"]


# every implementation a workload may have, in the table's column order
ALL_IMPLS = ("xad", "xad-compiled", "numpy", "torch", "jax-jit")


class Runner(Protocol):
    def step(self) -> None: ...
    def check(self) -> dict[str, Any]: ...


class StepFn:
    """A runner for :func:`time_interleaved` made of one step function."""

    def __init__(self, fn: Any) -> None:
        self.step = fn


class TrainStep(StepFn):
    """A training step's runner, for xad and torch alike: ``step()`` is ``opt.zero_grad()``,
    ``loss_fn().backward()``, ``opt.step()``; ``check()`` gives the loss and the gradient of
    each of ``params`` (``(name, tensor)`` pairs) and, with ``adam_lr``, then takes the
    optimiser step and gives ``self/adam``, its largest error against Adam's closed-form
    first step (``adam_first_step_error``)."""

    def __init__(self, loss_fn: Callable[[], Any], opt: Any, params: list[tuple[str, Any]],
                 adam_lr: float | None = None) -> None:
        def step() -> None:
            opt.zero_grad()
            loss_fn().backward()
            opt.step()
        super().__init__(step)
        self.loss_fn, self.opt, self.params, self.adam_lr = loss_fn, opt, params, adam_lr

    def check(self) -> dict[str, Any]:
        self.opt.zero_grad()
        loss = self.loss_fn()
        loss.backward()
        grads = [(n, to_np(p.grad)) for n, p in self.params]
        out: dict[str, Any] = {"loss": to_np(loss.item())}
        out.update((f"grad/{n}", g) for n, g in grads)
        if self.adam_lr is not None:
            before = [to_np(p) for _, p in self.params]
            self.opt.step()
            out["self/adam"] = max(adam_first_step_error(b, to_np(p), g, self.adam_lr)
                                   for b, (_, p), (_, g) in zip(before, self.params, grads))
        return out


@dataclass
class Workload:
    """One benchmark: how to build each implementation's runner and how to report it.

    ``build(impl, size)`` returns a runner; ``size`` is ``"full"``, ``"quick"`` or ``"tiny"``
    (tiny: the smoke test's sizes). ``scale`` turns seconds per ``step()`` into ``unit``.
    """

    name: str
    description: str
    unit: str
    build: Callable[[str, str], Runner]
    scale: Callable[[str], float] = lambda size: 1.0
    impls: tuple[str, ...] = ("xad", "numpy", "torch")
    target: str = ""
    min_time: float = 0.25          # seconds per timed sample (full run)
    reps: int = 9                   # samples per implementation (full run)
    max_time: float = 120.0         # seconds after which no new repetition starts
    rtol: float = 1e-4
    extra: dict[str, Any] = field(default_factory=dict)


class CheckError(AssertionError):
    """Implementations disagree: the benchmark refuses to time them."""


def to_np(x: Any) -> np.ndarray:
    """A host float64 copy of an xad tensor, torch tensor, NumPy array or Python number."""
    if hasattr(x, "detach") and hasattr(x, "numpy") and type(x).__module__.startswith("torch"):
        return x.detach().cpu().numpy().astype(np.float64)
    if hasattr(x, "numpy") and not isinstance(x, np.ndarray):
        return np.asarray(x.numpy(), dtype=np.float64)
    return np.asarray(x, dtype=np.float64)


def compile_replaying(xad: Any, fn: Callable, calls: list[tuple]) -> Any:
    """``xad.compile(fn)``, called twice with each argument tuple in ``calls`` (one per set of
    guards): it must record exactly ``len(calls)`` programs, then replay them, and never fall
    back to eager mode (its RuntimeWarning is an error here): else timing it would time eager.
    """
    step = xad.compile(fn)
    with must_replay(step, recording=len(calls)):
        for args in calls + calls:
            step(*args)
    return step


@contextmanager
def must_replay(step: Any, recording: int = 0) -> Iterator[None]:
    """Inside: ``step`` (an ``xad.compile`` function) records ``recording`` new programs, no
    more, and never warns that it falls back to eager mode (the warning is an error here)."""
    n = step.recordings
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            yield
        except RuntimeWarning as e:
            raise CheckError(f"xad-compiled runs eagerly: {e}") from e
    if step.recordings != n + recording:
        raise CheckError(f"xad-compiled: {step.recordings - n} programs recorded where "
                         f"{recording} were expected (it re-records instead of replaying)")


def import_jax() -> Any:
    """``jax``, on the CPU (XLA's thread flags are set by ``run.setup_threads``)."""
    import jax
    jax.config.update("jax_platforms", "cpu")
    return jax


def rel_err(a: np.ndarray, ref: np.ndarray) -> float:
    """max |a - ref| / max |ref|: elementwise agreement scaled to the array's magnitude."""
    if a.shape != ref.shape:
        return math.inf
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    diff = float(np.max(np.abs(a - ref))) if ref.size else 0.0
    if not np.all(np.isfinite(a)):
        return math.inf
    return diff / scale if scale > 0 else diff


def compare(results: dict[str, dict[str, Any]], rtol: float, reference: str = "numpy"
            ) -> dict[str, float]:
    """Check every implementation's values against ``reference``'s; return the worst errors.

    Keys starting with ``self/`` are errors a runner already measured against its own
    reference and must be <= ``rtol``. Raises :class:`CheckError` naming each disagreement.
    """
    ref = results[reference]
    worst: dict[str, float] = {}
    problems = []
    for impl, vals in results.items():
        missing = sorted(k for k in ref if not k.startswith("self/") and k not in vals)
        if missing:
            problems.append(f"{impl}: missing values {missing}")
        w = 0.0
        for k, v in vals.items():
            if k.startswith("self/"):
                e = float(v)
            elif impl == reference:
                continue
            elif k not in ref:
                problems.append(f"{impl}: value {k!r} has no reference")
                continue
            else:
                e = rel_err(to_np(v), to_np(ref[k]))
            if not e <= rtol:
                problems.append(f"{impl} vs {reference}: {k} differs, relative error {e:.3g} > "
                                f"{rtol:g}")
            w = max(w, e)
        worst[impl] = w
    if problems:
        raise CheckError("; ".join(problems))
    return worst


def adam_first_step_error(before: np.ndarray, after: np.ndarray, grad: np.ndarray, lr: float,
                          eps: float = 1e-8) -> float:
    """How far one Adam step (from zero state) is from its closed form, in units of ``lr``.

    After one step with bias correction, Adam moves ``p`` by ``-lr * g / (|g| + eps)``.
    """
    g = np.asarray(grad, np.float64)
    expect = np.asarray(before, np.float64) - lr * g / (np.abs(g) + eps)
    return float(np.max(np.abs(np.asarray(after, np.float64) - expect))) / lr


@dataclass
class Timing:
    """Seconds per ``step()`` of one implementation: every sample, and the inner loop count."""

    samples: list[float]
    inner: int

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def best(self) -> float:
        """The fastest sample: least disturbed by other processes on a shared machine."""
        return min(self.samples)

    @property
    def spread(self) -> float:
        """Half the interquartile range, relative to the median (a noise estimate)."""
        s = sorted(self.samples)
        if len(s) < 4:
            return (s[-1] - s[0]) / 2 / self.median if self.median else 0.0
        q = statistics.quantiles(s, n=4)
        return (q[2] - q[0]) / 2 / self.median if self.median else 0.0


def _calibrate(step: Callable[[], None], min_time: float) -> int:
    """How many calls make one sample last about ``min_time``.

    ``min_time <= 0``: one call, no warm-up (a long step such as a whole training run, where
    the median of the samples absorbs a slower first one). Otherwise the first call is a
    warm-up whose duration is the first estimate.
    """
    if min_time <= 0:
        return 1
    t0 = time.perf_counter()
    step()
    dt = time.perf_counter() - t0
    if dt >= min_time:
        return 1
    n = 2
    while True:  # re-measure with more calls: one call is too noisy for fast steps
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        dt = (time.perf_counter() - t0) / n
        if dt * n >= min_time / 4 or n >= 1 << 20:
            return max(1, math.ceil(min_time / max(dt, 1e-9)))
        n *= 4


def time_interleaved(runners: dict[str, Runner], reps: int, min_time: float,
                     settle: float = 0.0, clock: str = "wall", max_time: float = math.inf
                     ) -> dict[str, Timing]:
    """Time the runners round-robin: each repetition takes one sample of every runner.

    The order rotates every repetition so no implementation always runs right after the
    same other one (caches, CPU frequency). A sample is ``inner`` calls of ``step()``
    (chosen so a sample lasts about ``min_time``), reported as seconds per call. The
    garbage collector stays on (as in a real training loop) but is emptied between samples.
    ``settle`` seconds of sleep before each sample let the other library's worker threads
    (OpenBLAS, OpenMP), which spin for a while after their last task, go idle first.
    ``clock="cpu"`` measures this process's CPU time instead of wall time: with one thread
    per library it is nearly immune to other processes on the machine (with more threads,
    spinning workers inflate it). After ``max_time`` seconds no new repetition starts
    (every repetition still samples every runner).
    """
    timer = time.process_time if clock == "cpu" else time.perf_counter
    start = time.perf_counter()
    names = list(runners)
    inner = {n: _calibrate(runners[n].step, min_time) for n in names}
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(reps):
        if r and time.perf_counter() - start > max_time:
            break
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            step, k = runners[n].step, inner[n]
            gc.collect()
            if settle > 0:
                time.sleep(settle)
            t0 = timer()
            for _ in range(k):
                step()
            samples[n].append((timer() - t0) / k)
    return {n: Timing(samples[n], inner[n]) for n in names}
