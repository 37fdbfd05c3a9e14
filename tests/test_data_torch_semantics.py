"""xad.data against torch.utils.data: batch index sequences, shapes and dtypes of loaders
(drop_last, batch_size=None, collate_fn, batch_sampler, samplers), default collation,
random_split's rounding, Subset/ConcatDataset indexing. Random draws differ by design (another
generator): only what does not depend on them is compared."""

from __future__ import annotations

import collections
import os
import random

import numpy as np
import pytest

import xad
from xad import data

torch = pytest.importorskip("torch")
tud = torch.utils.data


class _Items:
    """A map-style dataset of host items (the same for both libraries)."""

    def __init__(self, make, n=7):
        self.make, self.n = make, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.make(i)


def _norm(b):
    """A batch as comparable plain data: (values, dtype name) for tensors."""
    if hasattr(b, "dtype") and hasattr(b, "shape"):
        arr = b.numpy() if not hasattr(b, "detach") else b.detach().numpy()
        return ("T", arr.tolist(), str(b.dtype).split(".")[-1], tuple(b.shape))
    if isinstance(b, dict):
        return {k: _norm(v) for k, v in b.items()}
    if isinstance(b, (tuple, list)):
        return (type(b).__name__ if hasattr(b, "_fields") else "seq", [_norm(v) for v in b])
    return b


def _both(make, **kw):
    ours = [_norm(b) for b in data.DataLoader(_Items(make), **kw)]
    theirs = [_norm(b) for b in tud.DataLoader(_Items(make), **kw)]
    assert len(data.DataLoader(_Items(make), **kw)) == len(tud.DataLoader(_Items(make), **kw))
    return ours, theirs


Pair = collections.namedtuple("Pair", "x y")


@pytest.mark.parametrize("make", [
    lambda i: float(i) / 2,
    lambda i: i,
    lambda i: i > 2,
    lambda i: (i, float(i)),
    lambda i: {"a": i, "b": [i, i + 1]},
    lambda i: np.arange(3, dtype=np.float32) * i,
    lambda i: np.int32(i),
    lambda i: np.float32(i) / 3,
    lambda i: Pair(i, float(i)),
    lambda i: f"s{i}",
], ids=["float", "int", "bool", "tuple", "dict", "ndarray_f32", "np_int32", "np_float32",
        "namedtuple", "str"])
@pytest.mark.parametrize("kw", [{"batch_size": 3}, {"batch_size": 3, "drop_last": True},
                                {"batch_size": 10}, {"batch_size": 10, "drop_last": True}])
def test_default_collation_and_batching_match_torch(make, kw):
    ours, theirs = _both(make, **kw)
    if make(0).__class__ is Pair:
        theirs = [("Pair", t[1]) for t in theirs]
        ours = [("Pair", t[1]) for t in ours]
    assert ours == theirs


def test_mixed_and_ragged_samples():
    ours, theirs = _both(lambda i: [1, 2.5][i % 2], batch_size=2)  # int first: inferred
    assert ours == theirs and ours[0][2] == "float32"
    batch = next(iter(data.DataLoader(_Items(lambda i: Pair(i, float(i))), batch_size=2)))
    assert isinstance(batch, Pair) and batch.y.dtype == xad.float64
    assert ours == theirs and ours[0][2] == "float32"
    for ragged in (lambda i: tuple(range(i % 2 + 1)), lambda i: tuple(range(2 - i % 2))):
        with pytest.raises(RuntimeError, match="equal size"):
            list(tud.DataLoader(_Items(ragged), batch_size=2))
        with pytest.raises(RuntimeError, match="equal size"):
            list(data.DataLoader(_Items(ragged), batch_size=2))


def test_batch_size_none_collate_fn_and_batch_sampler():
    ours, theirs = _both(lambda i: (i, float(i)), batch_size=None)
    assert ours == theirs and len(ours) == 7
    assert [o for o in data.DataLoader(_Items(lambda i: i), batch_size=None)] == list(range(7))
    cf = (lambda items: sum(items))
    assert _both(lambda i: i, batch_size=3, collate_fn=cf) == ([3, 12, 6], [3, 12, 6])
    assert _both(lambda i: i, batch_size=3, collate_fn=cf, drop_last=True) == ([3, 12],) * 2
    bs = [[4, 0], [6], [1, 2, 3]]
    ours, theirs = _both(lambda i: i, batch_sampler=bs)
    assert ours == theirs
    for lib in (data, tud):
        with pytest.raises(ValueError, match="mutually exclusive"):
            lib.DataLoader(_Items(lambda i: i), batch_sampler=bs, batch_size=2)
        with pytest.raises(ValueError, match="mutually exclusive"):
            lib.DataLoader(_Items(lambda i: i), batch_size=None, drop_last=True)


def test_tensor_dataset_loader_with_collate_fn_and_no_batching(xb):
    ds = data.TensorDataset(xad.arange(5.0, dtype=xad.float64), xad.arange(5))
    items = list(data.DataLoader(ds, batch_size=None))
    assert len(items) == 5 and items[2][0].shape == () and items[2][1].item() == 2
    firsts = [b for b in data.DataLoader(ds, batch_size=2, collate_fn=lambda b: b[0][1].item())]
    assert firsts == [0, 2, 4]


@pytest.mark.parametrize("n,lengths", [
    (10, [0.3, 0.3, 0.4]), (7, [0.5, 0.5]), (11, [0.1] * 10), (3, [0.5, 0.5]),
    (10, [0.33, 0.33, 0.34]), (10, [0, 1]), (10, [1]), (5, [2, 3]), (1, [0.5, 0.5]),
    (5, [1.2, -0.2]), (5, [2, 2])])
def test_random_split_lengths_match_torch(n, lengths):
    try:
        want = [len(s) for s in tud.random_split(range(n), lengths)]
    except ValueError:
        with pytest.raises(ValueError):
            data.random_split(data.TensorDataset(xad.arange(n)), lengths)
        return
    parts = data.random_split(data.TensorDataset(xad.arange(n)), lengths)
    assert [len(p) for p in parts] == want
    assert sorted(i for p in parts for i in p.indices) == list(range(n))


def test_random_split_refuses_negative_lengths():
    """torch 2.13 splits range(5) by [6, -1] into parts of 5 and 0 (a slice past the end);
    xad names the bad length instead (a deliberate deviation, docs/PORTING.md)."""
    with pytest.raises(ValueError, match="negative"):
        data.random_split(data.TensorDataset(xad.arange(5)), [6, -1])


def test_subset_and_concat_indexing_match_torch():
    base = list(range(10, 20))
    ours_s, theirs_s = data.Subset(base, [3, 1, 4]), tud.Subset(base, [3, 1, 4])
    assert [ours_s[i] for i in range(-3, 3)] == [theirs_s[i] for i in range(-3, 3)]
    parts = [list(range(3)), [], list(range(100, 104))]
    ours, theirs = data.ConcatDataset(parts), tud.ConcatDataset(parts)
    assert len(ours) == len(theirs) == 7
    assert [ours[i] for i in range(-7, 7)] == [theirs[i] for i in range(-7, 7)]
    with pytest.raises(IndexError):
        ours[7]
    with pytest.raises((IndexError, ValueError)):
        ours[-8]


def test_samplers_index_structure_matches_torch():
    src = range(5)
    assert list(data.SequentialSampler(src)) == list(tud.SequentialSampler(src))
    for kw in ({}, {"num_samples": 3}, {"num_samples": 12}, {"replacement": True},
               {"replacement": True, "num_samples": 9}):
        ours, theirs = list(data.RandomSampler(src, **kw)), list(tud.RandomSampler(src, **kw))
        assert len(ours) == len(theirs) == len(data.RandomSampler(src, **kw))
        assert all(0 <= i < 5 and isinstance(i, int) for i in ours)
        if not kw.get("replacement"):  # whole permutations, then a partial one
            for k in range(0, len(ours), 5):
                assert len(set(ours[k:k + 5])) == len(ours[k:k + 5])
    idx = [7, 3, 9, 11]
    assert sorted(data.SubsetRandomSampler(idx)) == sorted(tud.SubsetRandomSampler(idx))
    w = [0.0, 2.0, 0.0, 1.0]
    ours = list(data.WeightedRandomSampler(w, 20))
    assert len(ours) == 20 and set(ours) <= {1, 3}
    no_rep = list(data.WeightedRandomSampler(w, 2, replacement=False))
    assert sorted(no_rep) == sorted(tud.WeightedRandomSampler(w, 2, replacement=False)) == [1, 3]
    for drop in (False, True):
        assert list(data.BatchSampler(range(7), 3, drop)) == \
            list(tud.BatchSampler(range(7), 3, drop))
        assert len(data.BatchSampler(range(7), 3, drop)) == len(tud.BatchSampler(range(7), 3,
                                                                                 drop))


def test_sampler_argument_errors_match_torch():
    for lib in (data, tud):
        with pytest.raises(ValueError, match="num_samples"):
            lib.RandomSampler(range(3), num_samples=0)
        with pytest.raises(TypeError, match="replacement"):
            lib.RandomSampler(range(3), replacement=1)
        with pytest.raises(ValueError, match="1d"):
            lib.WeightedRandomSampler([[1.0, 2.0]], 2)
        with pytest.raises(ValueError, match="batch_size"):
            lib.BatchSampler(range(3), 0, False)


def test_loader_with_a_random_sampler_cuts_tensor_batches(xb):
    ds = data.TensorDataset(xad.arange(6.0, dtype=xad.float64), xad.arange(6))
    xad.manual_seed(0)
    loader = data.DataLoader(ds, batch_size=4, sampler=data.RandomSampler(ds, num_samples=8))
    batches = list(loader)
    assert len(loader) == 2 and [b[1].shape for b in batches] == [(4,), (4,)]
    for x, y in batches:
        assert x.dtype == xad.float64 and y.dtype == xad.int64
        assert x.tolist() == [float(v) for v in y.tolist()]


class _Stream:
    """An iterable dataset class for either library (its base given)."""

    @staticmethod
    def make(base, n=7, sized=False):
        class S(base):
            def __iter__(self):
                return iter(range(n))
        if sized:
            S.__len__ = lambda self: n
        return S()


@pytest.mark.parametrize("kw", [{"batch_size": 3}, {"batch_size": 3, "drop_last": True},
                                {"batch_size": None}, {"batch_size": 2, "collate_fn": sum}])
def test_iterable_dataset_batches_match_torch(kw):
    ours = [_norm(b) for b in data.DataLoader(_Stream.make(data.IterableDataset), **kw)]
    theirs = [_norm(b) for b in tud.DataLoader(_Stream.make(tud.IterableDataset), **kw)]
    assert ours == theirs
    sized = (_Stream.make(data.IterableDataset, sized=True),
             _Stream.make(tud.IterableDataset, sized=True))
    if kw.get("batch_size"):
        assert len(data.DataLoader(sized[0], **kw)) == len(tud.DataLoader(sized[1], **kw))
    for lib in (data, tud):
        with pytest.raises(TypeError):
            len(lib.DataLoader(_Stream.make(lib.IterableDataset), **kw))
        with pytest.raises(ValueError, match="shuffle"):
            lib.DataLoader(_Stream.make(lib.IterableDataset), shuffle=True)


def test_custom_sampler_subclass():
    class Evens(data.Sampler):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(0, self.n, 2))

        def __len__(self):
            return -(-self.n // 2)

    loader = data.DataLoader(_Items(lambda i: i), batch_size=2, sampler=Evens(7))
    assert [b.tolist() for b in loader] == [[0, 2], [4, 6]] and len(loader) == 2


def test_random_loader_index_sequences_match_torch():
    """XAD_FUZZ_N loaders (default 150) over an index-valued dataset: batch_size (None too),
    drop_last, a sampler (sequential, or a list with negative indices) or a batch_sampler."""
    rng = random.Random(0)
    for _ in range(int(os.environ.get("XAD_FUZZ_N", "150"))):
        n, bs = rng.randint(1, 20), rng.choice([None, 1, 2, 3, 5, 7, 25])
        kw = {"batch_size": bs, "drop_last": bs is not None and rng.random() < 0.5}
        kind = rng.choice(["none", "seq", "list", "batch"])
        if kind == "list":
            kw["sampler"] = [rng.randrange(-n, n) for _ in range(rng.randint(0, 12))]
        if kind == "batch":
            kw = {"batch_sampler": [[rng.randrange(n) for _ in range(rng.randint(1, 4))]
                                    for _ in range(rng.randint(0, 4))]}

        def run(lib, kw=kw, n=n, kind=kind):
            k = dict(kw, sampler=lib.SequentialSampler(range(n))) if kind == "seq" else kw
            loader = lib.DataLoader(_Items(lambda i: i, n), **k)
            return [b.tolist() if hasattr(b, "tolist") else b for b in loader], len(loader)
        assert run(data) == run(tud), (n, kw, kind)


def test_positional_arguments_mean_what_they_mean_in_torch():
    """torch's fourth positional argument is the sampler (xad's was drop_last: a sampler
    passed there dropped the last batch and was ignored)."""
    sampler = [4, 3, 2, 1, 0]
    ours = [b.tolist() for b in data.DataLoader(_Items(lambda i: i, 5), 2, False, sampler)]
    theirs = [b.tolist() for b in tud.DataLoader(_Items(lambda i: i, 5), 2, False, sampler)]
    assert ours == theirs == [[4, 3], [2, 1], [0]]
    with pytest.raises(TypeError):
        data.DataLoader(_Items(lambda i: i, 5), 2, False, None, None)
