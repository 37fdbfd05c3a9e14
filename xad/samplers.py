"""Samplers for ``DataLoader(sampler=...)``: PyTorch's sequential, random, subset-random and
weighted ones, :class:`BatchSampler` (``DataLoader(batch_sampler=...)``), and
:class:`DistributedSampler`, one shard per rank.

The random ones draw from xad's generator (``xad.manual_seed``, or a ``generator``) on the
default backend and read the indices to the host (an explicit copy): the index sequences'
lengths, ranges and structure are PyTorch's, the draws are not (another generator).

The order is drawn on the host from ``seed + epoch`` with Python's ``random`` (the same on
every rank, whatever the backend), as ``torch.utils.data.DistributedSampler`` does with its
generator. ``xad.distributed.init`` fills ``installed_world`` so that ``num_replicas`` and
``rank`` default to the process group's.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from .dtypes import float64
from .factories import multinomial, randint, randperm, tensor
from .generator import Generator

__all__ = ["Sampler", "DistributedSampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler"]


def _positive(name: str, what: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError(f"{name}: {what} should be a positive integer value, but got "
                         f"{what}={v!r}")
    return v


def _flag(name: str, what: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError(f"{name}: {what} should be a boolean value, but got {what}={v!r}")
    return v


class Sampler:
    """Base class of samplers (PyTorch's): subclass it with ``__iter__`` (indices) and,
    for ``len(loader)``, ``__len__``."""

    def __init__(self, data_source: Any = None) -> None:
        pass

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``.

    Example:
        >>> import xad
        >>> list(xad.data.SequentialSampler(range(3)))
        [0, 1, 2]
    """

    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices in random order: without ``replacement``, whole permutations (``num_samples``
    beyond ``len`` start a new one, as PyTorch's); with it, ``num_samples`` uniform draws.

    Example:
        >>> import xad
        >>> s = xad.data.RandomSampler(range(4), num_samples=6)
        >>> len(s), sorted(list(s)[:4])
        (6, [0, 1, 2, 3])
    """

    def __init__(self, data_source: Any, replacement: bool = False,
                 num_samples: int | None = None, generator: Generator | None = None) -> None:
        self.data_source, self.generator = data_source, generator
        self.replacement = _flag("RandomSampler", "replacement", replacement)
        self._num_samples = num_samples
        _positive("RandomSampler", "num_samples", self.num_samples)

    @property
    def num_samples(self) -> int:
        """How many indices an epoch gives (``len(data_source)`` unless set)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, k, g = len(self.data_source), self.num_samples, self.generator
        if self.replacement:
            yield from randint(0, n, (k,), generator=g).tolist()  # explicit host read
            return
        for _ in range(k // n):
            yield from randperm(n, generator=g).tolist()
        yield from randperm(n, generator=g).tolist()[:k % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in random order (without replacement).

    Example:
        >>> import xad
        >>> sorted(xad.data.SubsetRandomSampler([7, 3, 5]))
        [3, 5, 7]
    """

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices, self.generator = indices, generator

    def __iter__(self) -> Iterator[int]:
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices of ``range(len(weights))`` drawn with probability in
    proportion to ``weights`` (with or without ``replacement``).

    Example:
        >>> import xad
        >>> list(xad.data.WeightedRandomSampler([0.0, 1.0, 0.0], 3))
        [1, 1, 1]
    """

    def __init__(self, weights: Any, num_samples: int, replacement: bool = True,
                 generator: Generator | None = None) -> None:
        self.num_samples = _positive("WeightedRandomSampler", "num_samples", num_samples)
        self.replacement = _flag("WeightedRandomSampler", "replacement", replacement)
        w = weights.detach().astype(float64) if hasattr(weights, "detach") else \
            tensor(weights, dtype=float64)
        if w.ndim != 1:
            raise ValueError(f"WeightedRandomSampler: weights should be a 1d sequence but "
                             f"given weights have shape {tuple(w.shape)}")
        self.weights, self.generator = w, generator

    def __iter__(self) -> Iterator[int]:
        return iter(multinomial(self.weights, self.num_samples, self.replacement,
                                generator=self.generator).tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler`` (the last one shorter unless
    ``drop_last``), for ``DataLoader(batch_sampler=...)``.

    Example:
        >>> import xad
        >>> list(xad.data.BatchSampler(range(5), 2, drop_last=False))
        [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        self.sampler = sampler
        self.batch_size = _positive("BatchSampler", "batch_size", batch_size)
        self.drop_last = _flag("BatchSampler", "drop_last", drop_last)

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

installed_world: Callable[[], tuple[int, int]] | None = None  # (world size, rank)


class DistributedSampler(Sampler):
    """The indices of this rank's share of a dataset, as PyTorch's ``DistributedSampler``.

    Shuffled (when ``shuffle``) by ``seed + epoch``; padded by repeating indices from the
    start so every rank gets ``ceil(len / num_replicas)`` of them, or with ``drop_last`` cut
    to ``floor(len / num_replicas)``; rank ``r`` takes every ``num_replicas``-th index from
    ``r``. Call ``set_epoch(e)`` before each epoch for a new order.

    Example:
        >>> import xad
        >>> s = xad.data.DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False)
        >>> list(s), len(s)
        ([1, 3, 0], 3)
    """

    def __init__(self, dataset: Any, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            if installed_world is None:
                raise RuntimeError("DistributedSampler: pass num_replicas and rank, or call "
                                   "xad.distributed.init() first")
            size, r = installed_world()
            num_replicas = size if num_replicas is None else num_replicas
            rank = r if rank is None else rank
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: rank must be in [0, {num_replicas - 1}] "
                             f"with num_replicas={num_replicas} >= 1, got rank={rank}")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last = bool(shuffle), int(seed), bool(drop_last)
        self.epoch = 0
        n = len(dataset)
        self.num_samples = n // num_replicas if drop_last else -(-n // num_replicas)
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Use the order of epoch ``epoch`` (the same on every rank)."""
        self.epoch = int(epoch)

    def __iter__(self) -> Iterator[int]:
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        if self.drop_last:
            order = order[:self.total_size]
        else:
            while len(order) < self.total_size:
                order += order[:self.total_size - len(order)]
        return iter(order[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples
