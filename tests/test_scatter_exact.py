"""Writes and gradient sums at index positions by the standard-only fallback (used where the
library refuses the key: array_api_strict's integer arrays, and on every backend the keys
whose integers and index arrays a slice separates): a position written twice keeps the last
value, as NumPy's and PyTorch's assignments do (the fallback gave the mean), and a value
beside a large one at another position is exact (differences of prefix sums lost it)."""

from __future__ import annotations

import numpy as np

import xad

_SPLIT = (0, slice(None), np.array([1, 1, 0]))  # an integer, a slice, then an index array


def _key(key):
    return tuple(xad.tensor(k) if isinstance(k, np.ndarray) else k for k in key)


def test_a_position_written_twice_keeps_the_last_value(xb):
    x = xad.zeros(4)
    x[xad.tensor([1, 1, 2, 1])] = xad.tensor([10.0, 20.0, 30.0, 40.0])
    assert x.tolist() == [0.0, 40.0, 30.0, 0.0]
    x, want = xad.zeros((2, 3, 2)), np.zeros((2, 3, 2), dtype=np.float32)
    v = np.arange(1, 1 + want[_SPLIT].size, dtype=np.float32).reshape(want[_SPLIT].shape)
    x[_key(_SPLIT)] = xad.tensor(v)
    want[_SPLIT] = v
    assert x.shape == want.shape and x.tolist() == want.tolist()


def test_a_small_value_beside_a_large_one_is_exact(xb):
    x = xad.zeros(3)
    x[xad.tensor([0, 1])] = xad.tensor([1e20, 1.0])
    assert x.tolist() == [np.float32(1e20), 1.0, 0.0]
    g = xad.zeros(3, requires_grad=True)
    (g[xad.tensor([0, 1, 1])] * xad.tensor([1e20, 1.0, 2.0])).sum().backward()
    assert g.grad.tolist() == [np.float32(1e20), 3.0, 0.0]
    g = xad.zeros((2, 3, 2), requires_grad=True)
    w = np.ones((2, 3, 2), dtype=np.float32)[_SPLIT].copy()
    w[..., 0] = 1e20
    (g[_key(_SPLIT)] * xad.tensor(w)).sum().backward()
    want = np.zeros((2, 3, 2), dtype=np.float32)
    np.add.at(want, _SPLIT, w)
    assert g.grad.tolist() == want.tolist()
