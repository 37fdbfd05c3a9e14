"""Datasets and mini-batches: ``TensorDataset`` and ``DataLoader``.

A loader over a :class:`TensorDataset` never leaves the dataset's backend: batches are
copied slices, or (shuffled) integer-array indexing with a permutation drawn on the backend,
so a batch on a GPU is cut on the GPU; a batch never shares memory with the dataset.
Shuffling with a ``seed`` uses a private generator (the backend's generator state, swapped
in and out), so it is reproducible and leaves the global random stream alone.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from . import data_workers as _workers
from . import dtypes as _dt
from .backend import Backend, get_backend
from .data_workers import WorkerInfo, get_worker_info
from .factories import randperm, tensor
from .generator import Generator, drawing
from .ops import stack
from .samplers import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from .tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "DataLoader", "Subset",
           "ConcatDataset", "random_split", "default_collate", "Sampler", "DistributedSampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler", "get_worker_info", "WorkerInfo"]


class Dataset:
    """What a :class:`DataLoader` reads: ``len(ds)`` and ``ds[i]`` (a tuple of tensors)."""

    def __len__(self) -> int:
        raise NotImplementedError

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError


class IterableDataset(Dataset):
    """A dataset read as a stream: ``__iter__`` gives its items (PyTorch's); a
    :class:`DataLoader` groups them ``batch_size`` at a time (no shuffle, no sampler).

    Example:
        >>> import xad
        >>> class Count(xad.data.IterableDataset):
        ...     def __iter__(self):
        ...         return iter(range(5))
        >>> [b.tolist() for b in xad.data.DataLoader(Count(), batch_size=2)]
        [[0, 1], [2, 3], [4]]
    """

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise TypeError(f"{type(self).__name__} (an IterableDataset) has no len(); define "
                        f"__len__ for len(loader)")

    def __getitem__(self, index: int) -> Any:
        raise TypeError(f"{type(self).__name__} is an IterableDataset: iterate it")


class TensorDataset(Dataset):
    """Samples are the rows of some tensors that share their first dimension and backend.

    Example:
        >>> import xad
        >>> ds = xad.data.TensorDataset(xad.zeros(4, 3), xad.arange(4))
        >>> len(ds), [t.shape for t in ds[1]]
        (4, [(3,), ()])
    """

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset: argument {i} is a {type(t).__name__}, not a "
                                f"tensor; make it with xad.tensor(...)")
            if t.ndim == 0:
                raise ValueError(f"TensorDataset: argument {i} is 0-d; every tensor needs a "
                                 f"first (sample) dimension")
        n = tensors[0].shape[0]
        shapes = [t.shape for t in tensors]
        if any(s[0] != n for s in shapes):
            raise ValueError(f"TensorDataset: the tensors' first dimensions differ (shapes "
                             f"{shapes}); every tensor needs one row per sample")
        b = tensors[0]._backend
        for i, t in enumerate(tensors):
            if t._backend is not b:
                raise ValueError(f"TensorDataset: argument {i} is on {t._backend.label} but "
                                 f"argument 0 is on {b.label}; move them with .to(...)")
        self.tensors = tuple(tensors)

    @property
    def backend(self) -> Backend:
        """The backend the samples live on."""
        return self.tensors[0]._backend

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)


class DataLoader:
    """Mini-batches of a dataset: ``for xb, yb in DataLoader(ds, batch_size=32)``.

    Batches are tuples of tensors on the dataset's backend. ``shuffle=True`` draws a new
    permutation each epoch (on the backend; from a private generator seeded with ``seed``
    when given, else from the backend's global one); ``drop_last`` skips a short final batch.
    A ``sampler`` (an iterable of indices with ``len``, e.g. :class:`DistributedSampler`)
    gives the order instead of ``shuffle``.
    A dataset that is not a :class:`TensorDataset` is read item by item and its items are
    stacked (its indices are then host integers). As PyTorch's: ``collate_fn`` makes a batch
    of a list of items (then every dataset is read item by item); ``batch_size=None`` turns
    batching off (items one by one); ``batch_sampler`` gives each batch's indices.
    ``num_workers > 0`` reads items in worker processes (``worker_init_fn``,
    ``prefetch_factor``, ``persistent_workers``, ``timeout``, ``multiprocessing_context``
    and :func:`get_worker_info` as PyTorch's; the same batches in the same order as
    ``num_workers=0``): workers read on the host and the main process moves each batch to
    the backend (:mod:`xad.data_workers` says why).

    Example:
        >>> import xad
        >>> ds = xad.data.TensorDataset(xad.arange(5.0))
        >>> loader = xad.data.DataLoader(ds, batch_size=2)
        >>> len(loader), [b.tolist() for (b,) in loader]
        (3, [[0.0, 1.0], [2.0, 3.0], [4.0]])
    """

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool = False,
                 sampler: Any = None, *, batch_sampler: Any = None,
                 collate_fn: Callable[[list], Any] | None = None, drop_last: bool = False,
                 generator: Generator | None = None, seed: int | None = None,
                 num_workers: int = 0, worker_init_fn: Callable[[int], Any] | None = None,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 timeout: float = 0, multiprocessing_context: Any = None,
                 pin_memory: bool = False) -> None:
        # positional as PyTorch's up to ``sampler``; the rest by keyword (PyTorch's fifth to
        # eighth positions are options xad does not take: an error, not another meaning)
        _check_batching(batch_size, shuffle, drop_last, sampler, batch_sampler)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"DataLoader: seed must be an int or None, got {seed!r}")
        if isinstance(dataset, IterableDataset):
            if shuffle or sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 "shuffle, sampler and batch_sampler options (the dataset "
                                 "gives the order)")
        elif not hasattr(dataset, "__len__") or not hasattr(dataset, "__getitem__"):
            raise TypeError(f"DataLoader: the dataset ({type(dataset).__name__}) needs "
                            f"__len__ and __getitem__ (or subclass IterableDataset)")
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler and shuffle=True are exclusive (the sampler "
                             "gives the order; DistributedSampler shuffles itself)")
        self.dataset = dataset
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn
        self.batch_size = None if batch_sampler is not None else batch_size
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.seed = seed
        self.generator = generator  # PyTorch's spelling of a private shuffling stream
        self.prefetch_factor = _workers.check_options(
            num_workers, prefetch_factor, persistent_workers, timeout, multiprocessing_context)
        self.num_workers, self.worker_init_fn, self.timeout = num_workers, worker_init_fn, timeout
        self.persistent_workers, self.multiprocessing_context = (persistent_workers,
                                                                 multiprocessing_context)
        self.pin_memory = pin_memory  # accepted: batches reach the backend in one copy anyway
        self._pool: _workers.WorkerPool | None = None
        self._rng_state: Any = None
        self._epochs = 0  # epochs read by worker processes (their seeds differ by it)
        if shuffle and seed is not None:
            b = self._backend()
            saved = b.get_rng_state()
            try:
                b.manual_seed(seed)
                self._rng_state = b.get_rng_state()
            finally:
                b.set_rng_state(saved)

    def _backend(self) -> Backend:
        b = getattr(self.dataset, "backend", None)
        return b if isinstance(b, Backend) else get_backend()

    def __len__(self) -> int:
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        n = len(self.dataset if self.sampler is None else self.sampler)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _draw(self, draw: Callable[[Backend], Any]) -> Any:
        """``draw(backend)`` from the loader's stream: its ``seed``'s, its ``generator``, or
        the backend's global one."""
        b = self._backend()
        if self._rng_state is None:
            with drawing(self.generator, b):
                return draw(b)
        saved = b.get_rng_state()
        try:
            b.set_rng_state(self._rng_state)
            out = draw(b)
            self._rng_state = b.get_rng_state()
        finally:
            b.set_rng_state(saved)
        return out

    def _permutation(self, n: int) -> Any:
        return self._draw(lambda b: b.permutation(n))

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers > 0:
            yield from _workers.load(self, default_collate,
                                     isinstance(self.dataset, IterableDataset))
            return
        tensors = getattr(self.dataset, "tensors", None)
        if not isinstance(self.dataset, TensorDataset) or tensors is None or \
                self.batch_sampler is not None or self.batch_size is None or \
                self.collate_fn is not None:
            yield from self._by_item()  # items read one by one, collated
            return
        if self.sampler is not None:
            yield from self._sampled()
            return
        n = len(self.dataset)
        bs = self.batch_size
        stop = n - n % bs if self.drop_last else n
        perm = self._permutation(n) if self.shuffle else None
        from .ops import clone
        from .ops.indexing import getitem_raw
        for i in range(0, stop, bs):
            j = min(i + bs, n)
            if perm is None:  # a slice is a view: copy it, so a batch is the caller's
                yield tuple(clone(t[i:j]) for t in tensors)
            else:  # integer-array indexing copies already; a permutation is in range,
                key = (perm[i:j], ...)  # so no bounds check (a host read on a GPU)
                yield tuple(getitem_raw(t, key) for t in tensors)

    def _tasks(self) -> Any:
        """This epoch's index lists (single indices with ``batch_size=None``)."""
        if self.batch_sampler is not None:
            return list(self.batch_sampler)
        if self.batch_size is None:
            return self._order()
        return list(BatchSampler(self._order(), self.batch_size, self.drop_last))

    def _base_seed(self) -> int:
        """The workers' base seed: read from the loader's stream without moving it (so the
        shuffles, and any later draw, are those of ``num_workers=0``), mixed with the
        epoch's number (PyTorch draws one per epoch)."""
        def peek(b: Backend) -> Any:
            state = b.get_rng_state()
            try:
                return b.rand((2,), b.dtype(_dt.float64))
            finally:
                b.set_rng_state(state)
        u = self._backend().to_numpy(self._draw(peek)).tolist()  # an explicit host read
        self._epochs += 1
        return (int(u[0] * 2 ** 31) * 2 ** 31 + int(u[1] * 2 ** 31)
                + self._epochs * 0x9E3779B97F4A7C15) % 2 ** 62

    def _order(self) -> list[int]:
        """This epoch's indices on the host: the sampler's, a permutation, or in order."""
        if self.sampler is not None:
            return list(self.sampler)
        n = len(self.dataset)
        if not self.shuffle:
            return list(range(n))
        perm = self._backend().to_numpy(self._permutation(n))  # an explicit host read
        return [int(i) for i in perm.tolist()]

    def _by_item(self) -> Iterator[Any]:
        """PyTorch's general path: items read one by one and made a batch by collate_fn
        (each item on its own when ``batch_size`` is None)."""
        collate = self.collate_fn
        if isinstance(self.dataset, IterableDataset):
            yield from self._streamed()
            return
        if self.batch_sampler is not None:
            batches: Any = iter(self.batch_sampler)
        elif self.batch_size is None:
            for k in self._order():
                yield self.dataset[k] if collate is None else collate(self.dataset[k])
            return
        else:
            batches = BatchSampler(self._order(), self.batch_size, self.drop_last)
        for idx in batches:
            yield (collate or default_collate)([self.dataset[k] for k in idx])

    def _streamed(self) -> Iterator[Any]:
        """An IterableDataset's items, in groups of ``batch_size`` (or one by one)."""
        collate, bs = self.collate_fn, self.batch_size
        if bs is None:
            for item in self.dataset:
                yield item if collate is None else collate(item)
            return
        batch: list = []
        for item in self.dataset:
            batch.append(item)
            if len(batch) == bs:
                yield (collate or default_collate)(batch)
                batch = []
        if batch and not self.drop_last:
            yield (collate or default_collate)(batch)

    def _sampled(self) -> Iterator[tuple[Tensor, ...]]:
        """A TensorDataset's batches in the sampler's order (indices on the host, cut on
        the backend)."""
        b, size = self.dataset.backend, self.batch_size
        assert size is not None  # (batching on: __iter__ takes this path only then)
        for idx in BatchSampler(list(self.sampler), size, self.drop_last):
            key = Tensor._make(b.asarray(idx, dtype=b.xp.int64), b)
            yield tuple(t[key] for t in self.dataset.tensors)


def _check_batching(batch_size: Any, shuffle: bool, drop_last: bool, sampler: Any,
                    batch_sampler: Any) -> None:
    """PyTorch's argument checks of DataLoader's batching options."""
    if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None
                                      or drop_last):
        raise ValueError("DataLoader: batch_sampler option is mutually exclusive with "
                         "batch_size, shuffle, sampler, and drop_last")
    if batch_size is None:
        if drop_last:
            raise ValueError("DataLoader: batch_size=None option disables auto-batching and "
                             "is mutually exclusive with drop_last")
    elif isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch_size should be a positive integer value, but got "
                         f"batch_size={batch_size!r}")


class Subset(Dataset):
    """The items of ``dataset`` at ``indices``, in that order.

    Example:
        >>> import xad
        >>> s = xad.data.Subset(xad.data.TensorDataset(xad.arange(5)), [4, 0])
        >>> len(s), s[0][0].item()
        (2, 4)
    """

    def __init__(self, dataset: Any, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = list(indices)

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[self.indices[index]]


class ConcatDataset(Dataset):
    """The items of several datasets one after another (PyTorch's; a negative index counts
    from the end of the whole).

    Example:
        >>> import xad
        >>> c = xad.data.ConcatDataset([xad.data.TensorDataset(xad.arange(3)),
        ...                             xad.data.TensorDataset(xad.arange(10, 12))])
        >>> len(c), c[3][0].item(), c[-1][0].item()
        (5, 10, 11)
    """

    def __init__(self, datasets: Sequence[Any]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"ConcatDataset: index {index} is out of range for length {n}")
        index = index + n if index < 0 else index
        d = bisect.bisect_right(self.cumulative_sizes, index)
        return self.datasets[d][index - (self.cumulative_sizes[d - 1] if d else 0)]


def random_split(dataset: Any, lengths: Sequence[float], generator: Generator | None = None
                 ) -> list[Subset]:
    """Split ``dataset`` at random into parts of the given lengths (or fractions summing to
    1, as PyTorch's). Reads one permutation to the host (an explicit copy).

    Example:
        >>> import xad
        >>> a, b = xad.data.random_split(xad.data.TensorDataset(xad.arange(10)), [0.8, 0.2])
        >>> len(a), len(b)
        (8, 2)
    """
    n = len(dataset)
    sizes = [int(v) for v in lengths]
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:  # fractions (PyTorch's test:
        for v in lengths:                                    # [0, 1] are fractions too)
            if not 0 <= v <= 1:
                raise ValueError(f"random_split: the fraction {v} of {list(lengths)} is not "
                                 f"within [0, 1]")
        sizes = [math.floor(n * v) for v in lengths]
        for i in range(n - sum(sizes)):  # the remainder, one each, round robin from the first
            sizes[i % len(sizes)] += 1
    if any(v < 0 for v in sizes):
        raise ValueError(f"random_split: a length is negative in {list(lengths)}")
    if sum(sizes) != n:
        raise ValueError(f"random_split: the lengths {list(lengths)} do not add up to the "
                         f"dataset's length {n} (or fractions to 1)")
    order = randperm(n, generator=generator).tolist()  # explicit host read
    cuts = [sum(sizes[:i]) for i in range(len(sizes) + 1)]
    return [Subset(dataset, order[a:c]) for a, c in zip(cuts[:-1], cuts[1:])]


def default_collate(items: Sequence[Any]) -> Any:
    """PyTorch's default collation: tensors (and NumPy arrays and scalars, kept in their
    dtype) stack along a new first axis; Python floats make a float64 tensor, ints an int64
    one, bools a bool one (a mix, as ``xad.tensor`` infers it: ``[1, 2.5]`` is float32);
    strings stay a list; tuples, lists, named tuples and dicts are collated field by field
    (a named tuple stays one; samples of unequal lengths are an error).

    Example:
        >>> import xad
        >>> b = xad.data.default_collate([{"x": 1.0, "y": 2}, {"x": 3.0, "y": 4}])
        >>> b["x"].dtype, b["y"].tolist()
        (xad.float64, [2, 4])
    """
    first = items[0]
    if isinstance(first, Tensor):
        return stack(list(items))
    if isinstance(first, float):
        return tensor(list(items), dtype=_dt.float64)
    if isinstance(first, (bool, int)):
        kinds = {type(it) for it in items}
        return tensor(list(items), dtype=_dt.bool_ if kinds == {bool} else
                      _dt.int64 if all(issubclass(k, int) for k in kinds) else None)
    if isinstance(first, str):
        return list(items)
    if hasattr(first, "__array__"):  # a NumPy array or scalar: torch.as_tensor, then stack
        return stack([tensor(it) for it in items])
    if isinstance(first, dict):
        return {k: default_collate([it[k] for it in items]) for k in first}
    if isinstance(first, (tuple, list)):
        if any(len(it) != len(first) for it in items):
            raise RuntimeError(f"DataLoader: each element in list of batch should be of equal "
                               f"size, got lengths {[len(it) for it in items]}")
        fields = [default_collate([it[k] for it in items]) for k in range(len(first))]
        return type(first)(*fields) if hasattr(first, "_fields") else tuple(fields)
    raise TypeError(f"DataLoader: a sample is a {type(first).__name__}; a dataset item must "
                    f"be a tensor, a Python number, or a tuple/list/dict of them")

