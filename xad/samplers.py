"""Samplers for ``DataLoader(sampler=...)``: :class:`DistributedSampler`, one shard per rank.

The order is drawn on the host from ``seed + epoch`` with Python's ``random`` (the same on
every rank, whatever the backend), as ``torch.utils.data.DistributedSampler`` does with its
generator. ``xad.distributed.init`` fills ``installed_world`` so that ``num_replicas`` and
``rank`` default to the process group's.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["DistributedSampler"]

installed_world: Callable[[], tuple[int, int]] | None = None  # (world size, rank)


class DistributedSampler:
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
