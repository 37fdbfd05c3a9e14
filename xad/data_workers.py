"""DataLoader's worker processes (``num_workers > 0``), PyTorch's protocol on the standard
library's ``multiprocessing``.

Batch ``k`` of an epoch goes to worker ``k % num_workers`` (the next one still running, for
an :class:`IterableDataset`), at most ``prefetch_factor`` batches per worker are in flight,
and batches come back in the order of ``num_workers=0`` whatever order the workers finish
in. Each worker is seeded with ``base_seed + worker_id`` (xad's generator of its backend,
Python's ``random`` and, where it is loaded, NumPy's global ``np.random``; ``base_seed`` is
read from the loader's generator without moving it, mixed with the epoch's number, once per
epoch or once for ``persistent_workers``),
runs ``worker_init_fn(worker_id)``, and sees its :func:`get_worker_info` (an
IterableDataset shards itself by it). An exception in a worker is raised in the main
process, with the worker's traceback, when its batch's turn comes.

**Where the data lives.** A worker reads and collates items on the host: its current backend
is NumPy, so tensors it makes are NumPy arrays, and they travel to the main process as such.
The main process then moves each tensor of the batch to the loader's backend (the dataset's,
else the current one) in one explicit copy (``Backend.from_numpy``). This is PyTorch's
split: its workers return CPU tensors and the training step moves them to the GPU
(``pin_memory`` only makes that copy faster; xad accepts the flag and changes nothing). A
worker never touches a device, so forking a process that holds CUDA (or JAX) state is safe,
and a :class:`TensorDataset` kept on a device is refused: index it in the main process
(``num_workers=0``), which is already a device gather per batch.
"""

from __future__ import annotations

import itertools
import multiprocessing
import pickle
import queue
import random
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .backend import Backend, use_backend
from .tensor import Tensor

__all__ = ["WorkerInfo", "get_worker_info"]

_POLL = 0.2  # seconds between checks of the workers' (and the parent's) health


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker process knows of itself (PyTorch's ``WorkerInfo``)."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker process, its :class:`WorkerInfo` (``id``, ``num_workers``,
    ``seed``, ``dataset``: this worker's copy); ``None`` in the main process.

    Example:
        >>> import xad
        >>> xad.data.get_worker_info() is None
        True
    """
    return _info


@dataclass(frozen=True)
class _Spec:
    """What a worker needs besides its dataset."""

    worker_id: int
    num_workers: int
    seed: int
    collate: Callable | None  # None: items as they are (batch_size=None, no collate_fn)
    batched: bool             # items grouped into batches (batch_size is not None)
    batch_size: int | None
    drop_last: bool
    init_fn: Callable | None
    iterable: bool


@dataclass(frozen=True)
class _Host:
    """A tensor's array on the host, on its way to the main process."""

    array: Any


@dataclass(frozen=True)
class _Failure:
    worker_id: int
    kind: Any   # the exception's class where it pickles, else None
    text: str


@dataclass(frozen=True)
class _Exhausted:
    worker_id: int


_RESUME = "resume"
_SKIP = object()


def _to_host(data: Any) -> Any:
    """``data`` with each tensor replaced by its host array (structure kept)."""
    if isinstance(data, Tensor):
        return _Host(data._backend.to_numpy(data._array))
    if isinstance(data, dict):
        return {k: _to_host(v) for k, v in data.items()}
    if isinstance(data, (tuple, list)):
        items = [_to_host(v) for v in data]
        return type(data)(*items) if hasattr(data, "_fields") else type(data)(items)
    return data


def _to_backend(data: Any, b: Backend) -> Any:
    """``data`` with each host array of :func:`_to_host` made a tensor on ``b`` (one
    explicit host-to-device copy each)."""
    if isinstance(data, _Host):
        return Tensor._make(b.from_numpy(data.array), b)
    if isinstance(data, dict):
        return {k: _to_backend(v, b) for k, v in data.items()}
    if isinstance(data, (tuple, list)):
        items = [_to_backend(v, b) for v in data]
        return type(data)(*items) if hasattr(data, "_fields") else type(data)(items)
    return data


def _failure(e: BaseException, worker_id: int) -> _Failure:
    kind: Any = type(e)
    try:
        pickle.dumps(kind)
    except Exception:  # a class defined in a function: the main process gets RuntimeError
        kind = None
    return _Failure(worker_id, kind, traceback.format_exc())


def _next_batch(stream: Iterator, spec: _Spec) -> Any:
    """The next batch (or item) of an IterableDataset's stream, or :class:`_Exhausted`."""
    if not spec.batched:
        for item in stream:
            return item if spec.collate is None else spec.collate(item)
        return _Exhausted(spec.worker_id)
    assert spec.batch_size is not None and spec.collate is not None
    items = list(itertools.islice(stream, spec.batch_size))
    if not items or (spec.drop_last and len(items) < spec.batch_size):
        return _Exhausted(spec.worker_id)
    return spec.collate(items)


def _fetch(dataset: Any, indices: Any, spec: _Spec) -> Any:
    if not spec.batched:
        item = dataset[indices]
        return item if spec.collate is None else spec.collate(item)
    assert spec.collate is not None
    return spec.collate([dataset[k] for k in indices])


def _parent_gone() -> bool:
    parent = multiprocessing.parent_process()
    return parent is not None and not parent.is_alive()


def _worker_loop(dataset: Any, spec: _Spec, tasks: Any, results: Any) -> None:
    """A worker process: seed, ``worker_init_fn``, then answer ``(epoch, index, task)``
    messages with ``(epoch, index, batch)`` until ``None`` (or the parent is gone)."""
    global _info
    with use_backend("numpy") as b:
        b.manual_seed(spec.seed)
        random.seed(spec.seed)
        np = sys.modules.get("numpy")  # PyTorch reseeds NumPy's global generator too (the
        if np is not None:             # same augmentations in every worker otherwise)
            np.random.seed([spec.seed & 0xFFFFFFFF, spec.seed >> 32])
        _info = WorkerInfo(spec.worker_id, spec.num_workers, spec.seed, dataset)
        broken = None
        if spec.init_fn is not None:
            try:
                spec.init_fn(spec.worker_id)
            except Exception as e:
                broken = _failure(e, spec.worker_id)
        stream: Iterator | None = None
        while True:
            try:
                message = tasks.get(timeout=_POLL)
            except queue.Empty:
                if _parent_gone():
                    return
                continue
            if message is None:
                return
            if message == _RESUME:  # a new epoch of a persistent IterableDataset worker
                stream = None
                continue
            epoch, idx, task = message
            try:
                if broken is not None:
                    data: Any = broken
                elif spec.iterable:
                    stream = iter(dataset) if stream is None else stream
                    data = _next_batch(stream, spec)
                else:
                    data = _fetch(dataset, task, spec)
                results.put((epoch, idx, _to_host(data)))
            except Exception as e:
                results.put((epoch, idx, _failure(e, spec.worker_id)))


def load(loader: Any, default_collate: Callable, iterable: bool) -> Iterator[Any]:
    """One epoch of ``loader`` (a DataLoader with ``num_workers > 0``) read by its workers:
    the batches on the loader's backend, in the order ``num_workers=0`` gives."""
    b, n = loader._backend(), loader.num_workers
    if isinstance(getattr(loader.dataset, "backend", None), Backend) and b.name != "numpy":
        raise ValueError(f"DataLoader(num_workers={n}): the dataset's tensors are on "
                         f"{b.label}; workers read host data and the main process moves each "
                         f"batch to the backend. Keep the dataset on numpy (and move batches "
                         f"with .to(...)), or use num_workers=0")
    tasks: Iterator[Any] = itertools.repeat(None) if iterable else iter(loader._tasks())
    pool = loader._pool
    if pool is None:  # the order is drawn first: the same batches as num_workers=0
        specs = make_specs(n, loader._base_seed(), loader, iterable, default_collate)
        pool = WorkerPool(loader.dataset, specs, loader.multiprocessing_context,
                          loader.prefetch_factor, loader.timeout)
        loader._pool = pool if loader.persistent_workers else None
    try:
        yield from pool.run(tasks, iterable, b)
    finally:
        if not loader.persistent_workers:
            pool.shutdown()


def check_options(num_workers: Any, prefetch_factor: Any, persistent_workers: bool,
                  timeout: Any, multiprocessing_context: Any) -> int | None:
    """PyTorch's checks of DataLoader's worker options; the prefetch factor in use."""
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(f"DataLoader: num_workers option should be a non-negative int, got "
                         f"{num_workers!r}; use num_workers=0 to disable multiprocessing")
    if not isinstance(timeout, (int, float)) or timeout < 0:
        raise ValueError(f"DataLoader: timeout option should be non-negative, got {timeout!r}")
    if num_workers == 0:
        if prefetch_factor is not None:
            raise ValueError("DataLoader: prefetch_factor option could only be specified in "
                             "multiprocessing; let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None")
        if persistent_workers:
            raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None:
            raise ValueError("DataLoader: multiprocessing_context can only be used with "
                             "multi-process loading (num_workers > 0), but got num_workers=0")
        return None
    if prefetch_factor is None:
        return 2
    if isinstance(prefetch_factor, bool) or not isinstance(prefetch_factor, int) \
            or prefetch_factor < 1:
        raise ValueError(f"DataLoader: prefetch_factor option should be a positive int, got "
                         f"{prefetch_factor!r}")
    return prefetch_factor


def _context(spec: Any) -> Any:
    if spec is None:
        return multiprocessing.get_context()
    return multiprocessing.get_context(spec) if isinstance(spec, str) else spec


class WorkerPool:
    """The worker processes of one DataLoader (one epoch's, or every epoch's with
    ``persistent_workers``): :meth:`run` feeds them an epoch's tasks and yields the batches
    in order."""

    def __init__(self, dataset: Any, specs: list[_Spec], context: Any, prefetch: int,
                 timeout: float) -> None:
        ctx = _context(context)
        if ctx.get_start_method() != "fork":
            _check_picklable(dataset, specs[0], ctx.get_start_method(), len(specs))
        self.prefetch, self.timeout, self.epoch = prefetch, float(timeout), 0
        self.results = ctx.Queue()
        self.queues = [ctx.Queue() for _ in specs]
        self.workers = [ctx.Process(target=_worker_loop, args=(dataset, s, q, self.results),
                                    daemon=True) for s, q in zip(specs, self.queues)]
        for w in self.workers:
            w.start()

    def run(self, tasks: Iterator[Any], iterable: bool, to: Backend) -> Iterator[Any]:
        """One epoch: ``tasks`` (index lists; anything for an IterableDataset) handed out
        round robin, the batches yielded in task order on the backend ``to``."""
        self.epoch += 1
        if iterable and self.epoch > 1:
            for q in self.queues:
                q.put(_RESUME)
        n = len(self.workers)
        active, turn = [True] * n, itertools.cycle(range(n))
        ready: dict[int, Any] = {}
        sent = got = 0

        def send() -> bool:
            nonlocal sent
            if not any(active):
                return False
            task = next(tasks, _SKIP)
            if task is _SKIP:
                return False
            w = next(i for i in turn if active[i])
            self.queues[w].put((self.epoch, sent, task))
            sent += 1
            return True

        for _ in range(self.prefetch * n):
            if not send():
                break
        while got < sent:
            if got not in ready:
                idx, data = self._receive()
                if isinstance(data, _Exhausted):
                    active[data.worker_id] = False
                ready[idx] = _SKIP if isinstance(data, _Exhausted) else data
                continue
            data = ready.pop(got)
            got += 1
            send()
            if data is not _SKIP:
                yield _to_backend(_raise_failure(data), to)

    def _receive(self) -> tuple[int, Any]:
        """The next result of this epoch (older epochs' are dropped), raising on a timeout
        or on a worker that died."""
        start = time.monotonic()
        while True:
            wait = _POLL if self.timeout <= 0 else min(
                _POLL, max(0.0, self.timeout - (time.monotonic() - start)))
            try:
                epoch, idx, data = self.results.get(timeout=wait)
            except queue.Empty:
                if 0 < self.timeout <= time.monotonic() - start:
                    raise RuntimeError(f"DataLoader timed out after {self.timeout:g} seconds "
                                       f"(no batch from the workers)") from None
                dead = [w.pid for w in self.workers if not w.is_alive()]
                if dead:
                    raise RuntimeError(f"DataLoader worker (pid(s) {dead}) exited "
                                       f"unexpectedly") from None
                continue
            if epoch == self.epoch:
                return idx, data

    def shutdown(self) -> None:
        """Stop the workers (a ``None`` task each, then terminate the slow ones)."""
        for q, w in zip(self.queues, self.workers):
            if w.is_alive():
                q.put(None)
        for w in self.workers:
            w.join(timeout=2.0)
            if w.is_alive():
                w.terminate()
                w.join()
        for q in (*self.queues, self.results):
            q.cancel_join_thread()
            q.close()
        self.workers = []

    def __del__(self) -> None:
        if getattr(self, "workers", None):
            self.shutdown()


def _raise_failure(data: Any) -> Any:
    if not isinstance(data, _Failure):
        return data
    text = (f"Caught {data.kind.__name__ if data.kind else 'an exception'} in DataLoader "
            f"worker process {data.worker_id}.\nOriginal {data.text}")
    try:
        e = data.kind(text) if data.kind is not None else RuntimeError(text)
    except Exception:  # an exception class that takes other arguments
        e = RuntimeError(text)
    raise e


def _check_picklable(dataset: Any, spec: _Spec, method: str, n: int) -> None:
    """Refuse, before any process starts, what a ``spawn``/``forkserver`` worker cannot
    receive (it gets a pickled copy of the dataset and the functions)."""
    for what, obj in (("dataset", dataset), ("collate_fn", spec.collate),
                      ("worker_init_fn", spec.init_fn)):
        try:
            pickle.dumps(obj)
        except Exception as e:
            raise TypeError(
                f"DataLoader(num_workers={n}, multiprocessing_context={method!r}): the "
                f"{what} ({type(obj).__name__}) cannot be pickled ({type(e).__name__}: {e}); "
                f"a '{method}' worker receives a pickled copy of it. Define it at module "
                f"level (no lambdas, local classes, open files or locks), or use the 'fork' "
                f"context (Linux), or num_workers=0") from e


def make_specs(n: int, base_seed: int, loader: Any, iterable: bool,
               default_collate: Callable) -> list[_Spec]:
    """Each worker's :class:`_Spec` for ``loader`` (a DataLoader)."""
    batched = loader.batch_size is not None or loader.batch_sampler is not None
    collate = loader.collate_fn or (default_collate if batched else None)
    return [_Spec(i, n, base_seed + i, collate, batched, loader.batch_size,
                  loader.drop_last, loader.worker_init_fn, iterable) for i in range(n)]
