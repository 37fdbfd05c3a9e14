"""The multi-tensor step (xad/optim/multi_tensor.py): where the backend fuses (cupy-sim,
CuPy), an optimiser updates a run of more than 8 parameters with one gradient ``concat`` and
one fused kernel over flat buffers. Each test runs on every backend and holds the step to
the numbers of each optimiser's rule, run one parameter at a time as on immutable arrays
(bit for bit where the backend fuses); on cupy-sim it also checks that the flat path ran,
also when things change under it (a missing gradient, a rebound parameter, a loaded state,
a new group, two devices, two dtypes, views of a parameter, a compiled step)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from cupy_sim.streams import COUNTS
from same_numbers import assert_same_numbers

import xad
from xad import optim
from xad.optim.fused import fuses

SHAPES = [(7, 5), (5,), (3, 4, 2), (), (6,), (2, 3), (4,), (1,), (9, 2), (3,), (5, 5)]

CASES = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.05, maximize=True)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1)),
    ("Adam", dict(lr=0.05, amsgrad=True, eps=1e-6, maximize=True)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, weight_decay=0.1, momentum=0.5)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.9)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.1)),
    ("Adamax", dict(lr=0.05, weight_decay=0.1)),
    ("NAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05)),
    ("Adadelta", dict(lr=0.5, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=2)),
    ("Rprop", dict(lr=0.05)),
]


_OWN_RULES = ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad")


def _grads(steps: int, shapes=SHAPES, seed: int = 3) -> list:
    rng = np.random.default_rng(seed)
    return [[np.asarray(rng.standard_normal(s)) for s in shapes] for _ in range(steps)]


def _params(dt, shapes=SHAPES, seed: int = 4) -> list:
    rng = np.random.default_rng(seed)
    return [xad.tensor(np.asarray(rng.standard_normal(s), dtype=str(dt).split(".")[-1]),
                       requires_grad=True) for s in shapes]


def _values(ps, opt) -> list:
    """Parameters and state tensors: their values, then their versions (a flat run counts
    what the per-parameter path counts: moving into the flat buffers counted one more)."""
    held = [v for p in ps for v in opt.state.get(p, {}).values() if isinstance(v, xad.Tensor)]
    return [t.numpy() for t in (*ps, *held)] + [np.asarray(t._version) for t in (*ps, *held)]


def _both(xb, monkeypatch, trajectory, rule: bool = False) -> list:
    """``trajectory()`` on the fast path, then again one parameter at a time: where the
    backend fuses, one fused kernel each (the same bits), and with ``rule`` also the rule's
    path (the backend made immutable, as JAX: the same bits too); elsewhere the rule's path
    (close). Returns the fast run's extra results."""
    from xad.optim import multi_tensor
    fast, extra = trajectory()
    refs = []
    with monkeypatch.context() as m:
        if fuses(xb):
            m.setattr(multi_tensor, "_fits", lambda run: False)
            refs.append(trajectory()[0])
        if xb.mutable and (rule or not fuses(xb)):  # (immutable: the rule's path already)
            m.setattr(type(xb), "mutable", False)
            refs.append(trajectory()[0])
    for ref in refs:
        assert len(fast) == len(ref)
        for a, b in zip(fast, ref):
            assert a.dtype == b.dtype and a.shape == b.shape
            if fuses(xb):
                assert_same_numbers(xb, a, b)
            else:
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    return extra


def _steps(opt, ps, grads, change=None) -> None:
    """``opt.step()`` once per entry of ``grads`` (float32 gradients of ``ps``), calling
    ``change(i)`` before step ``i``."""
    for i, gs in enumerate(grads):
        if change is not None:
            change(i)
        for p, g in zip(ps, gs):
            p.grad = xad.tensor(g.astype("float32"))
        opt.step()


def _flat_on(xb) -> bool:
    return xb.mutable and fuses(xb)


@pytest.mark.parametrize("name,kwargs,dtype", [
    pytest.param(n, kw, dt, id=f"{n}-{i}-{dt}") for i, (n, kw) in enumerate(CASES)
    for dt in ("float32", "float64") if dt == "float32" or n in _OWN_RULES and i])
def test_flat_step_equals_the_rule(xb, monkeypatch, name, kwargs, dtype):
    dt = getattr(xad, dtype)
    grads = _grads(4)

    def trajectory():
        ps = _params(dt)
        opt = getattr(optim, name)(ps, **kwargs)
        counts = []
        for gs in grads:
            for p, g in zip(ps, gs):
                p.grad = xad.tensor(g.astype(dtype))
            COUNTS.reset()
            opt.step()
            counts.append(COUNTS.kernels)
        return _values(ps, opt), (counts, opt)

    # the rules of optim/functional.py (Adamax ...) run as a fused kernel differ from
    # themselves run as array operations by an ulp in float32: held to the fused kernel
    counts, opt = _both(xb, monkeypatch, trajectory, rule=name in _OWN_RULES)
    if _flat_on(xb):  # 11 parameters: a gradient concat and one fused kernel (+1: -g)
        assert len(opt._flat) == 1
        if xb.name == "cupy-sim":  # (the emulator counts kernels; a GPU does not here)
            assert counts[-1] == 2 + kwargs.get("maximize", False), counts


def test_a_parameter_without_gradient_is_skipped(xb, monkeypatch):
    grads = _grads(5)

    def trajectory():
        ps = _params(xad.float32)
        opt = optim.Adam(ps, lr=0.1)
        for i, gs in enumerate(grads):
            for j, (p, g) in enumerate(zip(ps, gs)):
                p.grad = None if (i in (2, 3) and j == 1) or j == 10 and i < 2 else \
                    xad.tensor(g.astype("float32"))
            opt.step()
        return _values(ps, opt), opt

    opt = _both(xb, monkeypatch, trajectory)
    if _flat_on(xb):  # the last parameter counts fewer Adam steps: a run of its own
        assert len(opt._flat) == 1 and len(next(iter(opt._flat.values())).params) == 10


def test_rebound_parameters_and_loaded_state_are_flattened_again(xb, monkeypatch):
    grads = _grads(8)
    rng = np.random.default_rng(5)
    fresh = [rng.standard_normal(s) for s in SHAPES]

    def trajectory():
        ps = _params(xad.float64)
        opt = optim.Adam(ps, lr=0.1, amsgrad=True)
        saved = None
        for i, gs in enumerate(grads):
            for p, g in zip(ps, gs):
                p.grad = xad.tensor(g)
            if i == 2:  # a user's rebinding of one parameter, as Module.load_state_dict
                ps[3].data = xad.tensor(fresh[3])
            if i == 3:
                saved = opt.state_dict()
            if i == 5:  # the optimiser's state replaced
                opt.load_state_dict(saved)
            opt.step()
        return _values(ps, opt), opt

    _both(xb, monkeypatch, trajectory)


def test_add_param_group_and_groups_with_other_numbers(xb, monkeypatch):
    grads = _grads(5, SHAPES * 2)

    def trajectory():
        ps = _params(xad.float32, SHAPES * 2)
        opt = optim.SGD(ps[:11], lr=0.1, momentum=0.9)

        def change(i):
            if i == 2:
                opt.add_param_group({"params": ps[11:], "lr": 0.05})
            if i == 4:
                opt.param_groups[1]["lr"] = 0.1  # both groups now share one run
        _steps(opt, ps, grads, change)
        return _values(ps, opt), opt

    opt = _both(xb, monkeypatch, trajectory)
    if _flat_on(xb):
        assert [len(f.params) for f in opt._flat.values()] == [22]


def test_two_dtypes_in_one_group(xb, monkeypatch):
    grads = _grads(3, SHAPES * 2)

    def trajectory():
        ps = _params(xad.float32) + _params(xad.float64)
        opt = optim.RMSprop(ps, lr=0.01, centered=True)
        for gs in grads:
            for p, g in zip(ps, gs):
                p.grad = xad.tensor(g.astype(str(p.dtype).split(".")[-1]))
            opt.step()
        return _values(ps, opt), opt

    opt = _both(xb, monkeypatch, trajectory)
    if _flat_on(xb):
        assert sorted(len(f.params) for f in opt._flat.values()) == [11, 11]


def test_detached_views_of_a_parameter_follow_it(xb):
    """``detach()`` and ``.data`` of a parameter share its storage, as in PyTorch, through
    optimiser steps on every backend (on JAX the step's new array is written into them, as
    for an in-place change; it used to leave them at the old values)."""
    ps = _params(xad.float32)
    d, v = ps[0].detach(), ps[0].data
    opt = optim.Adam(ps, lr=0.1)
    for gs in _grads(2):
        for p, g in zip(ps, gs):
            p.grad = xad.tensor(g.astype("float32"))
        opt.step()
    np.testing.assert_array_equal(d.numpy(), ps[0].numpy())
    np.testing.assert_array_equal(v.numpy(), ps[0].numpy())
    if xb.mutable:
        v[0, 0] = 3.0  # and still share its memory
        assert ps[0][0, 0].item() == 3.0


def test_two_devices_in_one_group():
    import cupy_sim
    cupy_sim.register()
    out = {}
    for mutable in (True, False):
        ps = []
        for dev in ("cuda:0", "cuda:1"):
            with xad.use_backend("cupy-sim", dev):
                ps += _params(xad.float32)
        b0, b1 = ps[0]._backend, ps[-1]._backend
        assert b0 is not b1
        saved = type(b0).mutable
        type(b0).mutable = mutable
        try:
            opt = optim.Adam(ps, lr=0.1)
            for gs in _grads(3, SHAPES * 2):
                for p, g in zip(ps, gs):
                    p.grad = xad.tensor(g.astype("float32")).to(p._backend)
                opt.step()
        finally:
            type(b0).mutable = saved
        out[mutable] = _values(ps, opt)
        if mutable:
            assert sorted(len(f.params) for f in opt._flat.values()) == [11, 11]
    for a, b in zip(out[True], out[False]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name,graphs", [("RMSprop", False), ("RMSprop", True),
                                         ("Adam", True)])
def test_a_compiled_step_equals_eager(xb, name, graphs):
    """Eager flat steps, then compiled ones (RMSprop: its update a host call, between CUDA
    graphs; Adam with CUDA graphs: its numbers on the device, per parameter), against all
    eager."""
    x = xad.tensor(np.random.default_rng(1).standard_normal((4, 6)), dtype=xad.float32)

    def run(compiled):
        xad.manual_seed(0)
        layers = [xad.nn.Linear(6, 6) for _ in range(6)]
        model = xad.nn.Sequential(*layers)
        opt = getattr(optim, name)(model.parameters(), lr=0.01)

        def step(x):
            opt.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            opt.step()
            return loss.detach()

        fn = xad.compile(step, cuda_graphs=graphs) if compiled else step
        losses = [step(x).item() for _ in range(2)] + [fn(x).item() for _ in range(4)]
        return losses, [p.numpy() for p in model.parameters()]

    eager, compiled = run(False), run(True)
    np.testing.assert_allclose(compiled[0], eager[0], rtol=1e-6)
    for a, b in zip(compiled[1], eager[1]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_a_parameter_in_two_optimisers(xb, monkeypatch):
    """The second optimiser leaves the first one's flat run alone (per-parameter kernels)."""
    grads = _grads(4)

    def trajectory():
        ps = _params(xad.float32)
        first, second = optim.SGD(ps, lr=0.1, momentum=0.5), optim.Adam(ps[:10], lr=0.01)
        for gs in grads:
            for p, g in zip(ps, gs):
                p.grad = xad.tensor(g.astype("float32"))
            first.step()
            second.step()
        return _values(ps, first) + _values(ps, second), (first, second)

    first, second = _both(xb, monkeypatch, trajectory)
    if _flat_on(xb):
        assert len(first._flat) == 1 and second._flat == {}


def test_data_parallel_with_a_flat_step(xb, monkeypatch):
    pytest.importorskip("mpi4py", reason="the mpi extra is not installed")
    dist = xad.distributed
    if not dist.is_initialized():
        dist.init("mpi")
    x = np.random.default_rng(2).standard_normal((4, 3)).astype("float32")

    def trajectory():
        xad.manual_seed(0)
        model = xad.nn.Sequential(*[xad.nn.Linear(3, 3) for _ in range(6)])
        ddp = dist.DataParallel(model, bucket_mb=1e-4)
        opt = optim.AdamW(model.parameters(), lr=0.01)
        for _ in range(3):
            opt.zero_grad()
            (ddp(xad.tensor(x)) ** 2).sum().backward()
            opt.step()
        ps = list(model.parameters())
        return _values(ps, opt), opt

    opt = _both(xb, monkeypatch, trajectory)
    if _flat_on(xb):
        assert len(opt._flat) == 1


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_of_many_gradients_is_one_join(xb, norm_type):
    """More than 8 gradients on a device (cupy-sim): one concat, one reduction, one product
    (was two launches per gradient and a stack); the numbers of torch's, on every backend."""
    import cupy_sim
    import torch

    grads = _grads(1, SHAPES + [(40, 3)])[0]
    ps = _params(xad.float32, SHAPES + [(40, 3)])
    for p, g in zip(ps, grads):
        p.grad = xad.tensor(g.astype("float32"))
    COUNTS.reset()
    cupy_sim.STATE.reset()
    total = xad.nn.utils.clip_grad_norm_(ps, 0.5, norm_type)
    if _flat_on(xb) and xb.name == "cupy-sim":
        assert COUNTS.kernels <= 8 and cupy_sim.STATE.transfers == []  # was 2 per gradient
    tp = [torch.zeros(g.shape, requires_grad=True) for g in grads]
    for t, g in zip(tp, grads):
        t.grad = torch.tensor(g.astype("float32"))
    expected = torch.nn.utils.clip_grad_norm_(tp, 0.5, norm_type)
    np.testing.assert_allclose(total.numpy(), expected.numpy(), rtol=1e-5)
    for p, t in zip(ps, tp):
        assert p.grad.shape == p.shape
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["SGD", "RMSprop"])
def test_a_momentum_set_from_zero_adds_a_state_buffer(xb, monkeypatch, name):
    """A momentum set from 0 between steps gives every parameter a momentum buffer: a flat
    run made without one is flattened again with it (it raised an IndexError)."""
    grads = _grads(4)

    def trajectory():
        ps = _params(xad.float32)
        opt = getattr(optim, name)(ps, lr=0.01)
        _steps(opt, ps, grads, lambda i: opt.param_groups[0].update(momentum=0.5) if i == 2
               else None)
        return _values(ps, opt), opt

    opt = _both(xb, monkeypatch, trajectory)
    if _flat_on(xb):
        assert len(opt._flat) == 1


def test_a_module_loaded_mid_training(xb, monkeypatch):
    """``Module.load_state_dict`` rebinds every parameter's data: the next step flattens
    them again from the loaded values."""
    x = np.random.default_rng(2).standard_normal((4, 3)).astype("float32")

    def trajectory():
        xad.manual_seed(0)
        model = xad.nn.Sequential(*[xad.nn.Linear(3, 3) for _ in range(6)])
        saved = {k: v.detach() * 1.0 for k, v in model.state_dict().items()}
        opt = optim.Adam(model.parameters(), lr=0.01)
        for i in range(4):
            if i == 2:
                model.load_state_dict(saved)
            opt.zero_grad()
            (model(xad.tensor(x)) ** 2).sum().backward()
            opt.step()
        return _values(list(model.parameters()), opt), opt

    opt = _both(xb, monkeypatch, trajectory)
    if _flat_on(xb):
        assert len(opt._flat) == 1


FUZZ_N = int(os.environ.get("XAD_FUZZ_N", "6"))
_EVENTS = ("step", "step", "step", "no_grad", "rebind", "inplace", "state_dict", "lr",
           "zero_grad", "group", "detach_write")


def _fuzz_trajectory(seed: int, name: str, kwargs: dict, dtype: str):
    """A seeded run of ``name`` over the parameters of SHAPES through random events: steps,
    parameters without a gradient, rebound (``p.data = ...``) or changed in place, values
    written through ``detach()``, the optimiser's state saved and loaded into a new one, a
    new learning rate, ``zero_grad`` to zeros, a new parameter group."""
    def trajectory():
        import random
        rng, nrng = random.Random(seed), np.random.default_rng(seed)
        dt = getattr(xad, dtype)
        ps = _params(dt, seed=seed)
        opt = getattr(optim, name)(ps, **kwargs)
        for _ in range(10):
            event = rng.choice(_EVENTS)
            live = [p for g in opt.param_groups for p in g["params"]]
            for p in live:
                p.grad = xad.tensor(nrng.standard_normal(p.shape).astype(dtype))
            if event == "no_grad":
                for p in rng.sample(live, 3):
                    p.grad = None
            elif event == "rebind":
                p = rng.choice(live)
                p.data = xad.tensor(nrng.standard_normal(p.shape).astype(dtype))
            elif event in ("inplace", "detach_write"):
                p = rng.choice(live)
                with xad.no_grad():
                    (p if event == "inplace" else p.detach()).mul_(0.5)
            elif event == "state_dict":
                sd = opt.state_dict()
                opt = getattr(optim, name)(opt.param_groups, **kwargs)
                opt.load_state_dict(sd)
            elif event == "lr":
                opt.param_groups[0]["lr"] *= 0.5
            elif event == "zero_grad":
                opt.zero_grad(set_to_none=False)
            elif event == "group":
                new = _params(dt, [(3,)] * 9, seed=rng.randrange(100))
                for p in new:
                    p.grad = xad.tensor(nrng.standard_normal(p.shape).astype(dtype))
                opt.add_param_group({"params": new})
            opt.step()
        return _values([p for g in opt.param_groups for p in g["params"]], opt), opt
    return trajectory


@pytest.mark.parametrize("name,kwargs", [c for c in CASES if c[0] in _OWN_RULES],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_fuzz_flat_step_against_per_parameter_kernels(monkeypatch, name, kwargs):
    """Seeded random event sequences (``_fuzz_trajectory``) on cupy-sim, where the flat
    step runs: it equals the per-parameter kernels bit for bit, and ran flat. ``XAD_FUZZ_N``
    sets the sequences per optimiser (default 6; the long run: 200)."""
    import cupy_sim

    from xad.optim import multi_tensor
    cupy_sim.register()
    flat = 0  # sequences whose last step ran flat (a parameter that missed a step counts
    for seed in range(FUZZ_N):  # other Adam steps from then on: runs split, maybe to <= 8)
        run = _fuzz_trajectory(seed, name, kwargs, "float32" if seed % 2 else "float64")
        with xad.use_backend("cupy-sim"):
            fast, opt = run()
            with monkeypatch.context() as m:
                m.setattr(multi_tensor, "_fits", lambda run: False)
                ref, _ = run()
        flat += bool(opt._flat)
        for i, (a, b) in enumerate(zip(fast, ref, strict=True)):
            np.testing.assert_array_equal(a, b, err_msg=f"seed {seed}, value {i}")
    assert flat, "the flat step never ran"
