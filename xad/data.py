"""Datasets and mini-batches: ``TensorDataset`` and ``DataLoader``.

A loader over a :class:`TensorDataset` never leaves the dataset's backend: batches are
copied slices, or (shuffled) integer-array indexing with a permutation drawn on the backend,
so a batch on a GPU is cut on the GPU; a batch never shares memory with the dataset.
Shuffling with a ``seed`` uses a private generator (the backend's generator state, swapped
in and out), so it is reproducible and leaves the global random stream alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from . import dtypes as _dt
from .backend import Backend, get_backend
from .factories import randperm, tensor
from .generator import Generator, drawing
from .ops import stack
from .samplers import DistributedSampler
from .tensor import Tensor

__all__ = ["Dataset", "TensorDataset", "DataLoader", "DistributedSampler", "Subset",
           "random_split"]


class Dataset:
    """What a :class:`DataLoader` reads: ``len(ds)`` and ``ds[i]`` (a tuple of tensors)."""

    def __len__(self) -> int:
        raise NotImplementedError

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError


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
    stacked (its indices are then host integers).

    Example:
        >>> import xad
        >>> ds = xad.data.TensorDataset(xad.arange(5.0))
        >>> loader = xad.data.DataLoader(ds, batch_size=2)
        >>> len(loader), [b.tolist() for (b,) in loader]
        (3, [[0.0, 1.0], [2.0, 3.0], [4.0]])
    """

    def __init__(self, dataset: Any, batch_size: int = 1, shuffle: bool = False,
                 drop_last: bool = False, seed: int | None = None, sampler: Any = None,
                 generator: Generator | None = None) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise TypeError(f"DataLoader: seed must be an int or None, got {seed!r}")
        if not hasattr(dataset, "__len__") or not hasattr(dataset, "__getitem__"):
            raise TypeError(f"DataLoader: the dataset ({type(dataset).__name__}) needs "
                            f"__len__ and __getitem__")
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler and shuffle=True are exclusive (the sampler "
                             "gives the order; DistributedSampler shuffles itself)")
        self.dataset = dataset
        self.sampler = sampler
        self.batch_size = batch_size
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.seed = seed
        self.generator = generator  # PyTorch's spelling of a private shuffling stream
        self._rng_state: Any = None
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
        n = len(self.dataset if self.sampler is None else self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _permutation(self, n: int) -> Any:
        b = self._backend()
        if self._rng_state is None:
            with drawing(self.generator, b):
                return b.permutation(n)
        saved = b.get_rng_state()
        try:
            b.set_rng_state(self._rng_state)
            perm = b.permutation(n)
            self._rng_state = b.get_rng_state()
        finally:
            b.set_rng_state(saved)
        return perm

    def __iter__(self) -> Iterator[tuple[Tensor, ...]]:
        if self.sampler is not None:
            yield from self._sampled()
            return
        n = len(self.dataset)
        bs = self.batch_size
        stop = n - n % bs if self.drop_last else n
        perm = self._permutation(n) if self.shuffle else None
        tensors = getattr(self.dataset, "tensors", None)
        if isinstance(self.dataset, TensorDataset) and tensors is not None:
            from .ops import clone
            from .ops.indexing import getitem_raw
            for i in range(0, stop, bs):
                j = min(i + bs, n)
                if perm is None:  # a slice is a view: copy it, so a batch is the caller's
                    yield tuple(clone(t[i:j]) for t in tensors)
                else:  # integer-array indexing copies already; a permutation is in range,
                    key = (perm[i:j], ...)  # so no bounds check (a host read on a GPU)
                    yield tuple(getitem_raw(t, key) for t in tensors)
            return
        order = list(range(n)) if perm is None else \
            [int(i) for i in self._backend().to_numpy(perm).tolist()]  # explicit host read
        for i in range(0, stop, bs):
            yield _collate([self.dataset[k] for k in order[i:min(i + bs, n)]])

    def _sampled(self) -> Iterator[tuple[Tensor, ...]]:
        """Batches in the sampler's order (indices on the host, cut on the backend)."""
        order, bs = list(self.sampler), self.batch_size
        stop = len(order) - len(order) % bs if self.drop_last else len(order)
        for i in range(0, stop, bs):
            idx = order[i:i + bs]
            if isinstance(self.dataset, TensorDataset):
                b = self.dataset.backend
                key = Tensor._make(b.asarray(idx, dtype=b.xp.int64), b)
                yield tuple(t[key] for t in self.dataset.tensors)
            else:
                yield _collate([self.dataset[k] for k in idx])


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
    if any(isinstance(v, float) for v in lengths) and abs(sum(lengths) - 1) < 1e-6:
        sizes = [int(v * n) for v in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
    if sum(sizes) != n:
        raise ValueError(f"random_split: the lengths {list(lengths)} do not add up to the "
                         f"dataset's length {n} (or fractions to 1)")
    order = randperm(n, generator=generator).tolist()  # explicit host read
    cuts = [sum(sizes[:i]) for i in range(len(sizes) + 1)]
    return [Subset(dataset, order[a:c]) for a, c in zip(cuts[:-1], cuts[1:])]


def _collate(items: Sequence[Any]) -> Any:
    """PyTorch's default collation: tensors stack along a new first axis (a batch is a
    tensor), Python floats/ints/bools become float64/int64/bool tensors, and tuples, lists
    and dicts of them are collated field by field."""
    first = items[0]
    if isinstance(first, Tensor):
        return stack(list(items))
    if isinstance(first, (bool, int, float)):
        return tensor(list(items), dtype=_dt.bool_ if isinstance(first, bool) else
                      _dt.float64 if isinstance(first, float) else _dt.int64)
    if isinstance(first, dict):
        return {k: _collate([it[k] for it in items]) for k in first}
    if isinstance(first, (tuple, list)):
        return tuple(_collate([it[k] for it in items]) for k in range(len(first)))
    raise TypeError(f"DataLoader: a sample is a {type(first).__name__}; a dataset item must "
                    f"be a tensor, a Python number, or a tuple/list/dict of them")

