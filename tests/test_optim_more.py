"""Adamax, NAdam, RAdam, Rprop: 50-step trajectories against PyTorch's (float64, every backend,
one and two parameter groups, large parameters through the chunked in-place path), state
keys and state-dict round trips, validation."""

from __future__ import annotations

import numpy as np
import pytest

import xad
from xad import optim

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(99)
A = _RNG.standard_normal((6, 5))
W1 = _RNG.standard_normal(5)
W2 = _RNG.standard_normal(6) * 0.5

CASES = [
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.95), eps=1e-4, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1)),
    ("RAdam", dict(lr=0.05, weight_decay=0.2, decoupled_weight_decay=True)),
    ("Rprop", dict(lr=0.05)),
    ("Rprop", dict(lr=0.02, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2))),
]


def _loss(lib, w1, w2, a):
    tanh = xad.tanh if lib is xad else torch.tanh
    return (tanh(a @ w1) * w2).sum() + 0.5 * (w1 * w1).sum() + (w2 * w2 * w2 * w2).sum() / 4


def _run(lib, name, kwargs, grouped, steps=50):
    make = (lambda a, g=False: xad.tensor(a.copy(), dtype=xad.float64, requires_grad=g)) \
        if lib is xad else (lambda a, g=False: torch.tensor(a, requires_grad=g))
    a, w1, w2 = make(A), make(W1, True), make(W2, True)
    params = [{"params": [w1]}, {"params": [w2], "lr": kwargs["lr"] / 2}] if grouped \
        else [w1, w2]
    opt = getattr(optim if lib is xad else torch.optim, name)(params, **kwargs)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        _loss(lib, w1, w2, a).backward()
        opt.step()
        out.append(np.concatenate([np.asarray(w.detach().numpy()) for w in (w1, w2)]))
    return np.array(out), opt


@pytest.mark.parametrize("grouped", [False, True], ids=["one-group", "two-groups"])
@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in
                                                     enumerate(CASES)])
def test_trajectory_matches_torch(xb, name, kwargs, grouped):
    ours, opt = _run(xad, name, kwargs, grouped)
    ref, topt = _run(torch, name, kwargs, grouped)
    np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-6)
    assert sorted(opt.state_dict()["state"][0]) == sorted(topt.state_dict()["state"][0])
    assert opt.state_dict()["param_groups"][0].keys() >= {
        k for k in topt.state_dict()["param_groups"][0] if k in kwargs or k == "lr"}


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "Rprop"])
def test_large_parameter_matches_torch(xb, name):
    """A parameter big enough for the chunked in-place path."""
    a = np.random.default_rng(3).standard_normal((100, 100))  # over the small-update size
    x, t = xad.tensor(a.copy(), dtype=xad.float64, requires_grad=True), \
        torch.tensor(a, requires_grad=True)
    xo, to = getattr(optim, name)([x], lr=0.01), getattr(torch.optim, name)([t], lr=0.01)
    for _ in range(8):
        xo.zero_grad(), to.zero_grad()
        (xad.sin(x) * x).sum().backward()
        (torch.sin(t) * t).sum().backward()
        xo.step(), to.step()
    np.testing.assert_allclose(x.numpy(), t.detach().numpy(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name,kwargs", CASES[::2], ids=[c[0] for c in CASES[::2]])
def test_state_dict_round_trip(xb, name, kwargs):
    full, _ = _run(xad, name, kwargs, False, steps=20)
    first, opt = _run(xad, name, kwargs, False, steps=10)
    w = [xad.tensor(first[-1][:5].copy(), dtype=xad.float64, requires_grad=True),
         xad.tensor(first[-1][5:].copy(), dtype=xad.float64, requires_grad=True)]
    opt2 = getattr(optim, name)(w, **kwargs)
    opt2.load_state_dict(opt.state_dict())
    a = xad.tensor(A.copy(), dtype=xad.float64)
    for _ in range(10):
        opt2.zero_grad()
        _loss(xad, w[0], w[1], a).backward()
        opt2.step()
    np.testing.assert_allclose(np.concatenate([w[0].numpy(), w[1].numpy()]), full[-1],
                               rtol=1e-12, atol=1e-12)


def test_validation():
    w = [xad.zeros(2, requires_grad=True)]
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
        optim.Adamax(w, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.RAdam(w, lr=-1)
    with pytest.raises(ValueError, match="momentum_decay"):
        optim.NAdam(w, momentum_decay=-1)
    with pytest.raises(NotImplementedError, match="maximize"):
        optim.NAdam(w, maximize=True)
