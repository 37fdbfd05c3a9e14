"""nn.Module API meanings against PyTorch: shared modules in state_dict and traversal,
remove_duplicate, zero_grad(set_to_none=False), train recursion, dtype casts; nn.init's
deterministic parts (gains, fans, the bound a kaiming/xavier draw is scaled to)."""

from __future__ import annotations

import math
import os
import random
import warnings

import numpy as np
import pytest

import xad
import xad.nn as nn

torch = pytest.importorskip("torch")


def _shared(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            lin = lib.nn.Linear(2, 2)
            self.a, self.b = lin, lin
            self.c = lib.nn.Linear(2, 1)
            self.c.weight = self.a.weight  # a tied parameter across two modules
            self.register_buffer("steps", lib.zeros(()))
            self.register_buffer("cache", lib.zeros(2), persistent=False)
    return Net()


def test_shared_module_keys_and_traversal_match_torch():
    ours, theirs = _shared(xad), _shared(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    for kw in ({}, {"remove_duplicate": False}):
        assert [n for n, _ in ours.named_modules(**kw)] == \
            [n for n, _ in theirs.named_modules(**kw)]
        assert [n for n, _ in ours.named_parameters(**kw)] == \
            [n for n, _ in theirs.named_parameters(**kw)]
        assert [n for n, _ in ours.named_buffers(**kw)] == \
            [n for n, _ in theirs.named_buffers(**kw)]
    assert len(list(ours.parameters())) == len(list(theirs.parameters())) == 3
    calls, tcalls = [], []
    ours.apply(lambda m: calls.append(type(m).__name__))
    theirs.apply(lambda m: tcalls.append(type(m).__name__))
    assert calls == tcalls  # the shared Linear once, children before the parent


def test_load_state_dict_with_shared_modules_reports_as_torch():
    ours, theirs = _shared(xad), _shared(torch)
    sd = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    assert ours.load_state_dict(sd) == ([], [])
    assert np.array_equal(ours.b.bias.numpy(), theirs.b.bias.detach().numpy())
    partial = {k: v for k, v in sd.items() if not k.startswith("b.")}
    partial["extra"] = np.zeros(1)
    r = ours.load_state_dict(partial, strict=False)
    t = theirs.load_state_dict({k: torch.tensor(v) for k, v in partial.items()},
                               strict=False)
    assert (r.missing_keys, r.unexpected_keys) == (t.missing_keys, t.unexpected_keys)
    assert "cache" not in ours.state_dict()


def test_zero_grad_keep_gives_zeros(xb):
    """torch zeroes in place (NaN and inf become 0); xad gives new zeros, as its optimisers'
    zero_grad (gradients may alias other arrays: docs/PORTING.md)."""
    lin = nn.Linear(2, 1)
    g = xad.tensor([[float("nan"), float("inf")]], dtype=lin.weight.dtype)
    lin.weight.grad = g
    lin.zero_grad(set_to_none=False)
    assert lin.weight.grad.tolist() == [[0.0, 0.0]] and not lin.weight.grad.requires_grad
    assert lin.weight.grad.dtype == lin.weight.dtype and g.tolist()[0][0] != 0
    lin.zero_grad()
    assert lin.weight.grad is None


def test_train_runs_each_childs_own_train():
    class Frozen(nn.Module):
        def train(self, mode=True):
            return super().train(False)  # e.g. a frozen BatchNorm backbone

    net = nn.Sequential(nn.Linear(1, 1), Frozen())
    net.train()
    assert net.training and net[0].training and not net[1].training
    with pytest.raises(ValueError, match="boolean"):
        net.train(1)


def test_dtype_casts_leave_integer_buffers_and_refuse_integer_targets(xb):
    bn = nn.BatchNorm1d(3)
    bn.double()
    assert bn.weight.dtype == xad.float64 and bn.num_batches_tracked.dtype == xad.int64
    if xb.name in ("numpy", "torch", "jax"):
        bn.half()
        assert bn.running_mean.dtype == xad.float16
        assert bn.num_batches_tracked.dtype == xad.int64
    with pytest.raises(TypeError, match="floating point or complex"):
        bn.to(xad.int64)
    assert bn.num_batches_tracked.dtype == xad.int64


def test_requires_grad_on_a_module():
    net = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())
    net[1].requires_grad_()
    assert [p.requires_grad for p in net.parameters()] == [False, False, True, True]


_NONLINEAR = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"]


@pytest.mark.parametrize("nonlinearity", _NONLINEAR)
def test_calculate_gain_matches_torch(nonlinearity):
    for param in (None, 0, 0.2, 1, 3.5):
        assert nn.init.calculate_gain(nonlinearity, param) == \
            pytest.approx(torch.nn.init.calculate_gain(nonlinearity, param), rel=1e-15)
    for bad in (True, "x"):
        with pytest.raises(ValueError):
            torch.nn.init.calculate_gain("leaky_relu", bad)
        with pytest.raises(ValueError):
            nn.init.calculate_gain("leaky_relu", bad)
    with pytest.raises(ValueError):
        nn.init.calculate_gain("gelu")


_SHAPES = [(5, 3), (4, 3, 2), (6, 2, 3, 3), (2, 4, 1, 2, 3), (7, 1)]


@pytest.mark.parametrize("shape", _SHAPES)
def test_init_scales_follow_torchs_fans(shape):
    """Uniform draws scaled to torch's bound: the largest |value| over many draws sits just
    under the bound torch's formula gives (fan_in/fan_out from the same shape)."""
    tfan_in, tfan_out = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    assert nn.init._calculate_fan_in_and_fan_out(xad.zeros(*shape)) == (tfan_in, tfan_out)
    cases = [(nn.init.xavier_uniform_, {"gain": 0.7},
              0.7 * math.sqrt(6 / (tfan_in + tfan_out)))]
    for mode in ("fan_in", "fan_out"):
        fan = tfan_in if mode == "fan_in" else tfan_out
        for nl, a in (("relu", 0), ("leaky_relu", 0.3), ("leaky_relu", math.sqrt(5)),
                      ("tanh", 0), ("selu", 0), ("linear", 0)):
            gain = torch.nn.init.calculate_gain(nl, a)
            cases.append((nn.init.kaiming_uniform_, {"a": a, "mode": mode, "nonlinearity": nl},
                          gain * math.sqrt(3 / fan)))
    for fn, kw, bound in cases:
        w = xad.zeros(*shape, dtype=xad.float64)
        m = max(float(fn(w, **kw).abs().max().item()) for _ in range(40))
        t = torch.zeros(shape, dtype=torch.float64)
        tm = max(float(getattr(torch.nn.init, fn.__name__)(t, **kw).abs().max())
                 for _ in range(40))
        assert m <= bound and tm <= bound and m > 0.8 * bound, (fn.__name__, kw)


def test_zero_element_init_warns_and_is_a_no_op():
    w = xad.zeros(0, 3)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        nn.init.kaiming_uniform_(w)
        nn.init.xavier_normal_(w)
    assert len(rec) == 2 and w.shape == (0, 3)


def test_state_dict_prefix_and_keep_vars_match_torch():
    ours = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    theirs = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    assert list(ours.state_dict(prefix="enc.")) == list(theirs.state_dict(prefix="enc."))
    kept = ours.state_dict(keep_vars=True)
    assert kept["0.weight"] is ours[0].weight and kept["0.weight"].requires_grad
    assert not ours.state_dict()["0.weight"].requires_grad


def test_module_list_edits_keep_torchs_keys():
    def edit(lib):
        ml = lib.nn.ModuleList([lib.nn.Linear(1, 1), lib.nn.Tanh()])
        ml.extend([lib.nn.Linear(1, 2)])
        ml.insert(1, lib.nn.Linear(2, 2))
        ml[0] = lib.nn.Linear(3, 3)
        del ml[2]
        return ml, [(k, tuple(v.shape)) for k, v in ml.state_dict().items()]
    (ours, keys), (theirs, tkeys) = edit(xad), edit(torch)
    assert keys == tkeys and [type(m).__name__ for m in ours] == \
        [type(m).__name__ for m in theirs]
    assert type(ours[1:]).__name__ == "ModuleList" and len(ours[1:]) == len(theirs[1:])


def _random_tree(lib, seed):
    """A random module tree (shared sub-modules and parameters, None parameters, persistent
    and non-persistent buffers, re-assigned names), the same for either library."""
    rng, pool, params = random.Random(seed), [], []

    def grow(depth):
        m = lib.nn.Module()
        for j in range(rng.randint(0, 4)):
            r, name = rng.random(), f"n{j}"
            if r < 0.3:
                p = rng.choice(params) if params and rng.random() < 0.3 else \
                    lib.nn.Parameter(lib.zeros(2))
                params.append(p)
                setattr(m, name, p)
            elif r < 0.45:
                m.register_buffer(name, lib.zeros(1), persistent=rng.random() < 0.6)
            elif r < 0.55 and pool:
                setattr(m, name, rng.choice(pool))
            elif r < 0.6:
                m.register_parameter(name, None)
            elif depth < 3:
                pool.append(grow(depth + 1))
                setattr(m, name, pool[-1])
        names = [k for k, v in m._parameters.items() if v is not None]
        if names and rng.random() < 0.3:
            setattr(m, rng.choice(names), rng.choice(params))
        return m
    return grow(0)


def _tree_facts(m, lib, seed):
    calls = []
    m.apply(lambda mm: calls.append(1))
    facts = [list(m.state_dict()), list(m.state_dict(prefix="p.")), len(calls),
             len(list(m.parameters())), [n for n, _ in m.named_children()]]
    for kw in ({}, {"remove_duplicate": False}):
        facts += [[n for n, _ in f(**kw)] for f in (m.named_modules, m.named_parameters,
                                                     m.named_buffers)]
    rng = random.Random(seed)
    sd = {k: lib.zeros(*v.shape) for k, v in m.state_dict().items() if rng.random() < 0.7}
    if rng.random() < 0.5:
        sd["zz.extra"] = lib.zeros(1)
    r = m.load_state_dict(sd, strict=False)
    return facts + [r.missing_keys, r.unexpected_keys]


def test_random_module_trees_match_torch():
    """XAD_FUZZ_N trees (default 60): keys, traversal and load_state_dict's report."""
    rng = random.Random(0)
    for _ in range(int(os.environ.get("XAD_FUZZ_N", "60"))):
        seed = rng.randrange(10 ** 9)
        assert _tree_facts(_random_tree(xad, seed), xad, seed) == \
            _tree_facts(_random_tree(torch, seed), torch, seed), seed
