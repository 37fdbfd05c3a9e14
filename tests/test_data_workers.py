"""DataLoader(num_workers > 0): worker processes as PyTorch's (order, seeding,
worker_init_fn, get_worker_info, IterableDataset sharding, persistent_workers,
prefetch_factor, timeout, errors), batches on the loader's backend. Tiny datasets, 2
workers: each test forks a few processes."""

from __future__ import annotations

import os
import random
import time

import numpy as np
import pytest

import xad
from xad.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info

# workers never run JAX (they read on NumPy): its warning about fork() does not apply
pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")


class Squares(Dataset):
    """Items ``(i, i**2, i * 0.5)`` as a NumPy array, a Python int and a float."""

    def __init__(self, n: int = 7) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        return np.array([i, i + 0.25]), i * i, i * 0.5


class WhoAmI(Dataset):
    """Items that tell which worker read them and what its seeds drew."""

    def __len__(self) -> int:
        return 6

    def __getitem__(self, i: int):
        info = get_worker_info()
        return (info.id, info.num_workers, info.seed, os.getpid(), random.random(),
                float(xad.rand(1).item()), float(np.random.random()))


class Range(IterableDataset):
    """``range(n)`` split between workers by :func:`get_worker_info`, as PyTorch's docs."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


class Slow(Dataset):
    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int):
        time.sleep(1.0)
        return i


class Broken(Dataset):
    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int):
        if i == 2:
            raise KeyError(f"no item {i}")
        return i


class Dies(Dataset):
    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int):
        if i == 1:
            os._exit(3)  # a worker killed (out of memory, a crash in native code)
        return i


def _batches(loader):
    return [[t.tolist() if hasattr(t, "tolist") else t for t in b] for b in loader]


def test_same_batches_in_the_same_order_on_the_backend(xb):
    ds = Squares()
    for kw in ({"batch_size": 2}, {"batch_size": 3, "drop_last": True}, {"batch_size": None}):
        want = _batches(DataLoader(ds, **kw))
        loader = DataLoader(ds, num_workers=2, **kw)
        got = list(loader)
        assert _batches(got) == want
        if kw["batch_size"] is not None:  # (batch_size=None: the items as they are)
            x, sq, half = got[0]
            assert x.backend is xb and sq.backend is xb  # moved there by the main process
            assert x.dtype == xad.float64 and sq.dtype == xad.int64 and half.dtype == xad.float64
    for seeded in ({}, {"seed": 4}, {"generator": xad.Generator().manual_seed(4)}):
        xad.manual_seed(3)
        one = DataLoader(ds, batch_size=2, shuffle=True, **seeded)
        want = [_batches(one) for _ in range(2)] + [xad.rand(2).tolist()]
        xad.manual_seed(3)
        if "generator" in seeded:
            seeded = {"generator": xad.Generator().manual_seed(4)}
        two = DataLoader(ds, batch_size=2, shuffle=True, num_workers=2, prefetch_factor=1,
                         **seeded)
        # every epoch's shuffle, and the global stream after them, as num_workers=0's
        assert [_batches(two) for _ in range(2)] + [xad.rand(2).tolist()] == want


def test_worker_info_seeds_and_init_fn(xb):
    loader = DataLoader(WhoAmI(), batch_size=1, num_workers=2,
                        worker_init_fn=lambda i: random.seed(100 + i))
    rows = [tuple(t.tolist()[0] for t in b) for b in loader]
    assert [r[0] for r in rows] == [0, 1, 0, 1, 0, 1]  # batch k from worker k % 2
    assert {r[1] for r in rows} == {2}
    seeds = {r[0]: r[2] for r in rows}
    assert seeds[1] == seeds[0] + 1  # base_seed + worker_id
    assert len({r[3] for r in rows}) == 2 and os.getpid() not in {r[3] for r in rows}
    r0 = random.Random(100)
    assert [r[4] for r in rows if r[0] == 0] == [r0.random() for _ in range(3)]
    assert len({r[5] for r in rows}) == 6  # xad's generator seeded differently per worker
    assert len({r[6] for r in rows}) == 6  # and NumPy's global one (PyTorch's too)
    xad.manual_seed(5)
    first = [tuple(t.tolist()[0] for t in b)[5] for b in DataLoader(WhoAmI(), num_workers=2)]
    xad.manual_seed(5)
    again = [tuple(t.tolist()[0] for t in b)[5] for b in DataLoader(WhoAmI(), num_workers=2)]
    assert first == again  # the base seed comes from xad's seeded stream
    loader = DataLoader(WhoAmI(), num_workers=2)
    assert [b[2].item() for b in loader][0] != [b[2].item() for b in loader][0]  # per epoch
    assert get_worker_info() is None


def test_iterable_dataset_sharded_by_worker_info(xb):
    want = sorted(range(10))
    for kw in ({"batch_size": 2}, {"batch_size": None}, {"batch_size": 3, "drop_last": True}):
        got = [b.tolist() if isinstance(b, xad.Tensor) else b
               for b in DataLoader(Range(10), num_workers=2, **kw)]
        flat = sorted(v for b in got for v in (b if isinstance(b, list) else [b]))
        if kw.get("drop_last"):
            assert got == [[0, 2, 4], [1, 3, 5]]  # each worker drops its own short batch
        else:
            assert flat == want
    # torch's interleaving: worker 0's first batch, worker 1's first, ...
    assert [b.tolist() for b in DataLoader(Range(7), batch_size=2, num_workers=2)] == [
        [0, 2], [1, 3], [4, 6], [5]]


def test_persistent_workers_serve_every_epoch(xb):
    loader = DataLoader(WhoAmI(), batch_size=2, num_workers=2, persistent_workers=True)
    pids = [{int(p) for b in loader for p in b[3].tolist()} for _ in range(2)]
    assert pids[0] == pids[1] and len(pids[0]) == 2  # the same processes both epochs
    it = DataLoader(Range(6), batch_size=2, num_workers=2, persistent_workers=True)
    assert [b.tolist() for b in it] == [b.tolist() for b in it] == [[0, 2], [1, 3], [4], [5]]
    first = iter(it)
    next(first)  # an epoch left early: its late batches never reach the next one
    assert [b.tolist() for b in it] == [[0, 2], [1, 3], [4], [5]]
    loader._pool.shutdown()
    it._pool.shutdown()


def test_errors_and_timeout(xb):
    with pytest.raises(KeyError, match="worker process 0(.|\n)*no item 2"):
        list(DataLoader(Broken(), num_workers=2))
    with pytest.raises(ValueError, match="prefetch_factor"):
        DataLoader(Squares(), prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(Squares(), persistent_workers=True)
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(Squares(), num_workers=-1)
    with pytest.raises(ValueError, match="timeout"):
        DataLoader(Squares(), num_workers=1, timeout=-1)
    if xb.name != "numpy":
        with pytest.raises(ValueError, match="tensors are on"):
            list(DataLoader(TensorDataset(xad.arange(4.0)), num_workers=2))


def test_tensor_dataset_on_numpy_spawn_pickling_and_timeout():
    with pytest.raises(RuntimeError, match="timed out after 0.3 seconds"):
        list(DataLoader(Slow(), num_workers=2, timeout=0.3))
    with pytest.raises(RuntimeError, match=r"worker \(pid\(s\) \[\d+\]\) exited unexpectedly"):
        list(DataLoader(Dies(), num_workers=2))
    ds = TensorDataset(xad.arange(6.0, backend=xad.resolve_backend("numpy")))
    assert _batches(DataLoader(ds, batch_size=4, num_workers=2)) == [[[0, 1, 2, 3]], [[4, 5]]]
    # under spawn each worker gets a pickled copy (and imports xad: ~2 s)
    assert _batches(DataLoader(Squares(4), batch_size=3, num_workers=2,
                               multiprocessing_context="spawn")) == _batches(
        DataLoader(Squares(4), batch_size=3))
    local = type("Local", (Squares,), {})  # a class made in a function: not picklable
    with pytest.raises(TypeError, match="cannot be pickled(.|\n)*module level"):
        list(DataLoader(local(), num_workers=2, multiprocessing_context="spawn"))
    with pytest.raises(TypeError, match="worker_init_fn"):
        list(DataLoader(Squares(), num_workers=2, multiprocessing_context="spawn",
                        worker_init_fn=lambda i: None))
