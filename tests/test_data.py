"""TensorDataset and DataLoader: batching, shuffling (seeded, on the backend), drop_last."""

from __future__ import annotations

import numpy as np
import pytest

import xad
from xad.data import DataLoader, TensorDataset


def _dataset(n=10):
    x = xad.reshape(xad.arange(2 * n, dtype=xad.float64), (n, 2))
    y = xad.arange(n)
    return TensorDataset(x, y)


def test_dataset(xb):
    ds = _dataset()
    assert len(ds) == 10 and ds.backend is xb
    x, y = ds[3]
    assert x.tolist() == [6.0, 7.0] and y.item() == 3


def test_batches_in_order(xb):
    ds = _dataset()
    loader = DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    for x, y in batches:
        assert x.backend is xb and y.backend is xb and x.dtype == xad.float64
        assert x.shape == (y.shape[0], 2)
    loader = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(loader) == 2 and [b[1].shape for b in loader] == [(4,), (4,)]


def test_shuffle_is_a_seeded_permutation(xb):
    ds = _dataset()
    loader = DataLoader(ds, batch_size=3, shuffle=True, seed=7)
    epoch1 = [b for b in loader]
    ys = np.concatenate([y.numpy() for _, y in epoch1])
    assert sorted(ys.tolist()) == list(range(10))
    # rows stay together
    for x, y in epoch1:
        np.testing.assert_array_equal(x.numpy(), np.stack([2 * y.numpy(), 2 * y.numpy() + 1],
                                                          axis=1))
    epoch2 = np.concatenate([y.numpy() for _, y in loader])
    assert epoch2.tolist() != ys.tolist()  # a new permutation each epoch
    # the same seed gives the same epochs; the global stream is untouched by the loader
    xad.manual_seed(123)
    before = xad.randn(3).numpy()
    again = DataLoader(ds, batch_size=3, shuffle=True, seed=7)
    xad.manual_seed(123)
    a1 = np.concatenate([y.numpy() for _, y in again])
    after = xad.randn(3).numpy()
    np.testing.assert_array_equal(before, after)
    assert a1.tolist() == ys.tolist()
    a2 = np.concatenate([y.numpy() for _, y in again])
    assert a2.tolist() == epoch2.tolist()


def test_shuffle_without_seed_uses_global_generator(xb):
    ds = _dataset(8)
    xad.manual_seed(5)
    a = np.concatenate([y.numpy() for _, y in DataLoader(ds, batch_size=8, shuffle=True)])
    xad.manual_seed(5)
    b = np.concatenate([y.numpy() for _, y in DataLoader(ds, batch_size=8, shuffle=True)])
    assert a.tolist() == b.tolist() and sorted(a.tolist()) == list(range(8))


def test_generic_dataset():
    class Squares:
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return xad.tensor([float(i)]), xad.tensor(i * i)

    batches = list(DataLoader(Squares(), batch_size=2))
    assert [b[1].tolist() for b in batches] == [[0, 1], [4, 9], [16]]
    assert batches[0][0].shape == (2, 1)


def test_errors():
    with pytest.raises(ValueError, match="first dimensions differ"):
        TensorDataset(xad.zeros(3, 2), xad.zeros(4))
    with pytest.raises(TypeError, match="not a tensor"):
        TensorDataset([1, 2, 3])
    with pytest.raises(ValueError, match="0-d"):
        TensorDataset(xad.tensor(1.0))
    with pytest.raises(ValueError, match="on array_api_strict"):
        TensorDataset(xad.zeros(2), xad.zeros(2).to("array_api_strict"))
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(_dataset(), batch_size=0)


def test_training_loop(xb):
    """A tiny regression trained with mini-batches converges (the pieces fit together)."""
    xad.manual_seed(0)
    x = xad.randn(32, 2, dtype=xad.float64)
    w_true = xad.tensor([[1.5], [-2.0]], dtype=xad.float64)
    y = x @ w_true
    w = xad.zeros(2, 1, dtype=xad.float64, requires_grad=True)
    opt = xad.optim.SGD([w], lr=0.1)
    for _ in range(20):
        for xb_, yb in DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, seed=1):
            opt.zero_grad()
            ((xb_ @ w - yb) ** 2).mean().backward()
            opt.step()
    np.testing.assert_allclose(w.numpy(), w_true.numpy(), atol=1e-3)


def test_batches_do_not_share_memory_with_the_dataset(xb):
    """Changing a batch in place leaves the dataset alone (PyTorch's collate copies too)."""
    x = xad.reshape(xad.arange(6.0, dtype=xad.float64), (3, 2))
    ds = TensorDataset(x)
    for shuffle in (False, True):
        for (b,) in DataLoader(ds, batch_size=2, shuffle=shuffle, seed=1):
            b -= 100.0
            b[0] = -1.0
        assert x.tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
        assert x._version == 0
