"""Adamax, NAdam, RAdam, Adadelta, ASGD and Rprop with their numbers on the device
(xad/optim/capturable.py, xad/optim/rule_step.py; issue 25, item 4), on ``cupy-sim``: the
device path gives the host path's numbers, a compiled step with ``cuda_graphs=True`` is one
graph with no kernel outside it, and the device counts and carried numbers (NAdam's
``mu_product``, ASGD's ``eta`` and ``mu``) survive a state dict.

The exact configurations keep every power exact (``0.5**t``, ``0.75**t``, ``0.96**0``,
``x**1``): there NumPy's ``pow`` (the emulated device's) and CPython's (the host path's)
agree, so the two paths agree bit for bit. With other betas a bias correction may differ in
its last bit (NumPy's and CUDA's ``pow`` are not CPython's), as Adam's does
(tests/test_graph_step.py)."""

from __future__ import annotations

import cupy_sim
import numpy as np
import pytest
from cupy_sim.streams import COUNTS
from test_graph_step import _eager_and_graphed

import xad
from xad import nn

EXACT = [
    ("Adamax", dict(betas=(0.5, 0.75), weight_decay=0.1)),
    ("NAdam", dict(betas=(0.5, 0.75), momentum_decay=0.0, weight_decay=0.1)),
    ("NAdam", dict(betas=(0.5, 0.75), momentum_decay=0.0, weight_decay=0.1,
                   decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(betas=(0.5, 0.75), weight_decay=0.1)),  # rectified from step 8 on
    ("RAdam", dict(betas=(0.5, 0.75), weight_decay=0.1, decoupled_weight_decay=True)),
    ("Adadelta", dict(rho=0.8, weight_decay=0.1)),
    ("ASGD", dict(t0=3, alpha=1.0, weight_decay=0.1)),  # averaging from step 5 on
    ("Rprop", dict(maximize=True)),
]
IDS = ["adamax", "nadam", "nadam-decoupled-maximize", "radam", "radam-decoupled", "adadelta",
       "asgd", "rprop"]
NAMES = ["Adamax", "NAdam", "RAdam", "Adadelta", "ASGD", "Rprop"]
CARRIED = {"NAdam": ("mu_product",), "ASGD": ("eta", "mu")}


def _host_and_device(name, kw, steps=12):
    """``steps`` steps, capturable False then True, of two groups with their own rates,
    set at each step (as a scheduler does), a float32 parameter beside float64 ones, one
    parameter without a gradient at every third step, and a state dict saved and loaded
    into a new optimiser halfway: each run's parameters and counts, the last optimiser."""
    rng = np.random.default_rng(1)
    shapes = [(3, 2), (4,), (2, 2)]
    start = [rng.standard_normal(s) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(steps)]
    cupy_sim.register()
    out = []
    for capturable in (False, True):
        with xad.use_backend("cupy-sim"):
            ps = [xad.tensor(a, dtype=dt, requires_grad=True)
                  for a, dt in zip(start, (xad.float64, xad.float32, xad.float64))]
            groups = [{"params": ps[:2], "lr": 0.05}, {"params": ps[2:], "lr": 0.02}]

            opt = getattr(xad.optim, name)(groups, capturable=capturable, **kw)
            for i, gs in enumerate(grads):
                for j, (p, g) in enumerate(zip(ps, gs)):
                    p.grad = None if (j == 1 and i % 3 == 0) else xad.tensor(g, dtype=p.dtype)
                for group, base in zip(opt.param_groups, (0.05, 0.02)):
                    group["lr"] = base * 0.8 ** i
                opt.step()
                if i == steps // 2:
                    sd = opt.state_dict()
                    opt = getattr(xad.optim, name)(groups, capturable=capturable, **kw)
                    opt.load_state_dict(sd)
            out.append(([p.numpy() for p in ps], [float(opt.state[p]["step"]) for p in ps]))
    return out, opt


@pytest.mark.parametrize("name,kw", EXACT, ids=IDS)
def test_the_device_path_gives_the_host_paths_bits(name, kw):
    ((host, host_steps), (dev, dev_steps)), opt = _host_and_device(name, kw)
    for a, b in zip(host, dev):
        np.testing.assert_array_equal(a, b)
    assert host_steps == dev_steps == [12.0, 8.0, 12.0]
    assert opt._device is not None and all(
        isinstance(opt.state[p][k], xad.Tensor) and opt.state[p][k].dtype == xad.float64
        for g in opt.param_groups for p in g["params"] for k in ("step", *CARRIED.get(name, ())))


@pytest.mark.parametrize("name", NAMES)
def test_the_device_path_with_default_betas_is_within_an_ulp(name):
    ((host, _), (dev, _)), opt = _host_and_device(name, {}, steps=8)
    assert opt._device is not None  # (the device path ran)
    for a, b in zip(host, dev):
        np.testing.assert_allclose(a, b, rtol=1e-6 if a.dtype == np.float32 else 1e-12, atol=0)


@pytest.mark.parametrize("name,kw", EXACT + [
    (name, dict(capturable=True)) for name in ("NAdam", "RAdam")],
    ids=IDS + ["nadam-capturable", "radam-capturable"])
def test_the_compiled_step_is_one_graph_with_eager_modes_bits(name, kw):
    """The whole step, the optimiser's included, in one graph launch, nothing outside it,
    and eager mode's numbers bit for bit as the scheduler changes the rate (eager on the
    host path, or on the device path where the betas are the defaults)."""
    _, fn = _eager_and_graphed(lambda ps: getattr(xad.optim, name)(ps, lr=0.05, **kw), 10)
    assert (fn.graphs, COUNTS.kernels, COUNTS.launches) == (1, 0, 1)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", NAMES)
def test_device_counts_and_carried_numbers_load_back(name, dtype):
    """A state dict of the device path holds the counts (and NAdam's product, ASGD's eta
    and mu) as 0-d float64 device tensors; a new optimiser loads them back onto the
    device, not rounded to a float32 parameter's dtype, and goes on as the uninterrupted
    one, bit for bit."""
    dtype = getattr(xad, dtype)
    cupy_sim.register()
    rng = np.random.default_rng(2)
    grads = [rng.standard_normal(5) for _ in range(8)]
    with xad.use_backend("cupy-sim"):
        ws = [xad.ones(5, dtype=dtype, requires_grad=True) for _ in range(2)]
        opts = [getattr(xad.optim, name)([w], lr=0.05, capturable=True) for w in ws]
        for i, g in enumerate(grads):
            for w, opt in zip(ws, opts):
                w.grad = xad.tensor(g, dtype=dtype)
                opt.step()
            if i == 3:
                sd = opts[1].state_dict()
                saved = {k: float(v) for k, v in sd["state"][0].items()
                         if k in ("step", *CARRIED.get(name, ()))}
                opts[1] = getattr(xad.optim, name)([ws[1]], lr=0.05)
                opts[1].load_state_dict(sd)
                st = opts[1].state[ws[1]]
                assert {k: float(st[k]) for k in saved} == saved and saved["step"] == 4.0
        np.testing.assert_array_equal(ws[0].numpy(), ws[1].numpy())
        assert opts[1]._device is not None
        assert isinstance(opts[1].state[ws[1]]["step"], xad.Tensor)
        assert float(opts[1].state[ws[1]]["step"]) == 8.0


@pytest.mark.parametrize("name,kw", [EXACT[1], EXACT[3], EXACT[6]], ids=["nadam", "radam", "asgd"])
def test_host_steps_then_compiled_steps_go_on_as_host_steps(name, kw):
    """Eager steps on the host path (counts ints, NAdam's product and ASGD's eta and mu
    Python numbers), then compiled steps in a graph: the device takes the numbers over
    from the state and gives the all-eager run's bits."""
    cupy_sim.register()
    runs = []
    for graphs in (False, True):
        with xad.use_backend("cupy-sim"):
            xad.manual_seed(0)
            model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))
            opt = getattr(xad.optim, name)(model.parameters(), lr=0.05, **kw)
            x, y = xad.randn(4, 6), xad.randn(4, 2)

            def body(x, y, model=model, opt=opt):
                opt.zero_grad()
                loss = nn.functional.mse_loss(model(x), y)
                loss.backward()
                opt.step()
                return loss.detach()

            fn = xad.compile(body, cuda_graphs=True) if graphs else body
            out = [body(x, y).numpy() for _ in range(4)] + [fn(x, y).numpy() for _ in range(8)]
            runs.append(out + [p.numpy() for p in model.parameters()])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    assert fn.graphs == 1 and opt._device is not None
