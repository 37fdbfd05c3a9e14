"""Initialisers: their distributions, seeding, dtypes, and Linear's PyTorch default."""

from __future__ import annotations

import math

import numpy as np
import pytest

import xad
import xad.nn as nn
from xad.nn import init


def test_kaiming_and_xavier_statistics(xb):
    w = xad.zeros(400, 300, dtype=xad.float64)
    std = init.kaiming_normal_(w, nonlinearity="relu").numpy().std()
    assert abs(std - math.sqrt(2 / 300)) < 0.02 * math.sqrt(2 / 300)
    u = init.kaiming_uniform_(w, nonlinearity="relu").numpy()
    bound = math.sqrt(6 / 300)
    assert u.max() <= bound and u.min() >= -bound and u.max() > 0.95 * bound
    assert abs(init.kaiming_normal_(w, mode="fan_out").numpy().std()
               - math.sqrt(2 / 400)) < 0.03 * math.sqrt(2 / 400)
    assert abs(init.xavier_normal_(w).numpy().std() - math.sqrt(2 / 700)) < 0.02 * math.sqrt(
        2 / 700)
    x = init.xavier_uniform_(w, gain=2.0).numpy()
    assert x.max() <= 2 * math.sqrt(6 / 700) and x.max() > 1.9 * math.sqrt(6 / 700)
    n = init.normal_(w, mean=3.0, std=0.5).numpy()
    assert abs(n.mean() - 3.0) < 0.01 and abs(n.std() - 0.5) < 0.01
    v = init.uniform_(w, -2.0, -1.0).numpy()
    assert v.min() >= -2.0 and v.max() < -1.0
    assert (init.constant_(w, 0.25).numpy() == 0.25).all()
    assert (init.zeros_(w).numpy() == 0).all() and (init.ones_(w).numpy() == 1).all()
    assert w.dtype == xad.float64 and w.backend is xb


def test_initialisers_are_seeded_and_in_place(xb):
    p = nn.Parameter(xad.zeros(3, 4))
    xad.manual_seed(11)
    a = init.kaiming_uniform_(p).numpy().copy()
    xad.manual_seed(11)
    q = init.kaiming_uniform_(p)
    assert q is p and np.array_equal(a, p.numpy())
    assert p.is_leaf and p.requires_grad and p.dtype == xad.float32
    xad.manual_seed(5)
    l1 = nn.Linear(4, 3)
    xad.manual_seed(5)
    assert np.array_equal(l1.weight.numpy(), nn.Linear(4, 3).weight.numpy())


def test_linear_default_init_as_pytorch():
    xad.manual_seed(0)
    lin = nn.Linear(50, 400)
    bound = 1 / math.sqrt(50)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.98 * bound
    assert np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound


def test_gain_and_errors():
    assert init.calculate_gain("tanh") == 5 / 3
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    assert init.calculate_gain("linear") == 1.0
    with pytest.raises(ValueError, match="nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        init.xavier_uniform_(xad.zeros(3))
    with pytest.raises(ValueError, match="mode"):
        init.kaiming_normal_(xad.zeros(2, 2), mode="fan")
    with pytest.raises(ValueError, match="non-negative"):  # PyTorch refuses both too
        init.normal_(xad.zeros(2), 0.0, -1.0)
    with pytest.raises(ValueError, match="a <= b"):
        init.uniform_(xad.zeros(2), 1.0, 0.0)


def test_gain_matches_torch():
    torch = pytest.importorskip("torch")
    for nl, p in [("relu", None), ("tanh", None), ("leaky_relu", None), ("leaky_relu", 0.3),
                  ("selu", None), ("sigmoid", None)]:
        assert math.isclose(init.calculate_gain(nl, p), torch.nn.init.calculate_gain(nl, p))


def test_initialisers_write_through_views(xb):
    # init of a slice (an LSTM's gate block, a conv's first channels) changes the base, as
    # PyTorch's: every initialiser used to give the view a new array and leave its base as it was
    w = xad.zeros(5, 3, dtype=xad.float64)
    init.constant_(w[:2], 2.5)
    init.eye_(w[2:4])
    init.ones_(w[4])
    assert w.tolist() == [[2.5] * 3, [2.5] * 3, [1, 0, 0], [0, 1, 0], [1, 1, 1]]
    h = 3
    lstm = nn.LSTM(2, h, dtype=xad.float64)
    init.zeros_(lstm.weight_hh_l0)
    init.orthogonal_(lstm.weight_hh_l0[h:2 * h])  # the forget gate's block only
    q = lstm.weight_hh_l0[h:2 * h].detach()
    assert np.allclose((q @ q.T).numpy(), np.eye(h), atol=1e-12)
    rest = np.concatenate([lstm.weight_hh_l0.numpy()[:h], lstm.weight_hh_l0.numpy()[2 * h:]])
    assert (rest == 0).all() and lstm.weight_hh_l0.is_leaf
    c = xad.zeros(4, 2, 3, dtype=xad.float64)
    init.dirac_(c[2:])
    assert c.numpy()[:2].sum() == 0 and c.numpy()[2:, :, 1].tolist() == [[1, 0], [0, 1]]
    u = xad.zeros(2, 200, dtype=xad.float64)
    init.kaiming_uniform_(u[1:])
    assert (u.numpy()[0] == 0).all() and (u.numpy()[1] != 0).all()
    assert w.backend is xb


def test_fan_in_and_fan_out_as_pytorchs(xb):
    # torch.nn.init._calculate_fan_in_and_fan_out, which reset_parameters methods copied
    # from PyTorch's layers call (it raised AttributeError under xad.as_torch)
    torch = pytest.importorskip("torch")
    from xad import as_torch
    ours = as_torch.namespace()["torch"].nn.init._calculate_fan_in_and_fan_out
    for shape in [(3, 4), (5, 3, 2), (6, 4, 3, 3), (2, 3, 1, 2, 2), (4, 0), (0, 3, 3)]:
        assert ours(xad.zeros(*shape)) == torch.nn.init._calculate_fan_in_and_fan_out(
            torch.zeros(*shape)), shape
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        ours(xad.zeros(3))
