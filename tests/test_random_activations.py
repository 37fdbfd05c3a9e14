"""The activations that draw random numbers, ``F.rrelu`` in training and
``F.gumbel_softmax``, on every backend: xad's generator is not PyTorch's, so their draws are
checked by what PyTorch documents of them (the range and mean of the slopes, the gradient a
slope gives, rows that sum to one, the one-hot of the first largest entry with the soft
sample's gradient, class frequencies that follow the softmax); their deterministic forms are
compared with torch in tests/test_nn_activations.py and tests/test_torch_subset_fuzz.py."""

from __future__ import annotations

import numpy as np
import pytest

import xad
import xad.nn.functional as F

f64 = xad.float64


def test_rrelu_in_training_draws_a_slope_per_negative_element(xb):
    a = np.linspace(-3.0, 3.0, 4001)
    x = xad.tensor(a, dtype=f64, requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    y.sum().backward()
    out, g = y.numpy(), x.grad.numpy()
    neg = a < 0
    np.testing.assert_array_equal(out[a > 0], a[a > 0])
    np.testing.assert_array_equal(g[a > 0], 1.0)
    slopes = out[neg] / a[neg]
    assert 0.1 <= slopes.min() and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 0.01 and slopes.std() > 0.05  # U(0.1, 0.3): std 0.058
    np.testing.assert_allclose(g[neg], slopes, rtol=1e-12)  # the gradient is the slope
    assert 0.1 <= g[a == 0][0] <= 0.3  # at 0, PyTorch's (input <= 0 draws a slope)


def test_rrelu_module_draws_in_training_only_and_refuses_inverted_bounds(xb):
    m = xad.nn.RReLU(0.1, 0.5)
    x = xad.full((1000,), -2.0, dtype=f64)
    assert len(set(m(x).tolist())) > 100
    assert m.eval()(x).tolist() == [-2.0 * ((0.1 + 0.5) / 2)] * 1000
    x = xad.tensor([-1.0, 2.0], dtype=f64)
    assert F.rrelu(x, 0.2, 0.2, training=True, inplace=True) is x and x.tolist() == [-0.2, 2.0]
    with pytest.raises(ValueError, match="rrelu: lower bound 0.5 must be at most"):
        F.rrelu(x, 0.5, 0.1)


def test_gumbel_softmax_samples_follow_the_softmax(xb):
    logits = xad.tensor([[0.0, 1.0, 2.0]] * 4000, dtype=f64)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(dim=-1).numpy(), 1.0, rtol=1e-12)
    hard = F.gumbel_softmax(logits, hard=True).numpy()
    assert set(np.unique(hard)) == {0.0, 1.0} and (hard.sum(-1) == 1).all()
    want = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    np.testing.assert_allclose(hard.mean(0), want, atol=0.03)  # the Gumbel-max trick
    cols = F.gumbel_softmax(xad.zeros(3, 2000, dtype=f64), hard=True, dim=0).numpy()
    assert (cols.sum(0) == 1).all() and abs(cols.mean(1) - 1 / 3).max() < 0.04


def test_hard_gumbel_softmax_has_the_soft_samples_gradient(xb):
    w = xad.tensor([3.0, 1.0, 2.0], dtype=f64)
    grads = []
    for hard in (True, False):
        xad.manual_seed(7)
        logits = xad.tensor([[0.5, -1.0, 2.0], [1.0, 1.0, 0.0]], dtype=f64, requires_grad=True)
        y = F.gumbel_softmax(logits, tau=0.7, hard=hard)
        (y * w).sum().backward()
        grads.append(logits.grad.numpy())
        if hard:
            one = y.numpy()
            assert (one.sum(-1) == 1).all() and set(np.unique(one)) == {0.0, 1.0}
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-15)
    assert np.abs(grads[0]).max() > 0
