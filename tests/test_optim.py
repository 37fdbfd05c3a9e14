"""Optimisers: 20-step trajectories against PyTorch's (float64, every backend), parameter
groups, validation, zero_grad, state dicts, dtype/backend preservation."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from same_numbers import assert_same_numbers

import xad
from xad import optim
from xad.optim.fused import fuses

torch = pytest.importorskip("torch")

# the same problem in both libraries: f(w1, w2) = sum(tanh(A @ w1) * w2) + |w1|^2/2 + sum(w2^4)/4
# (a non-quadratic loss, so momentum, second-moment and weight-decay terms all matter)
_RNG = np.random.default_rng(1234)
A = _RNG.standard_normal((4, 3))
W1 = _RNG.standard_normal(3)
W2 = _RNG.standard_normal(4) * 0.5


def _loss_xad(w1, w2, a):
    return (xad.tanh(a @ w1) * w2).sum() + 0.5 * (w1 * w1).sum() + (w2 * w2 * w2 * w2).sum() / 4


def _loss_torch(w1, w2, a):
    return (torch.tanh(a @ w1) * w2).sum() + 0.5 * (w1 * w1).sum() + (w2 ** 4).sum() / 4


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.05)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1)),
    ("Adam", dict(lr=0.05, amsgrad=True, eps=1e-6)),
    ("Adam", dict(lr=0.05, weight_decay=0.2, decoupled_weight_decay=True)),  # was TypeError
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, weight_decay=0.1, momentum=0.5)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.9)),
    ("RMSprop", dict(lr=0.01, centered=True, eps=1e-4)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1,
                     initial_accumulator_value=0.1, eps=1e-8)),
]


def _groups(w1, w2, kwargs, grouped):
    if not grouped:
        return [w1, w2], kwargs
    # the second group overrides the learning rate (and weight decay where there is one)
    g2 = {"params": [w2], "lr": kwargs["lr"] * 0.5}
    if "weight_decay" in kwargs:
        g2["weight_decay"] = 0.0
    return [{"params": [w1]}, g2], kwargs


def _f64(a, requires_grad=False):
    # a copy: xad.tensor(ndarray) on array_api_strict shares the NumPy array's memory
    return xad.tensor(a.copy(), dtype=xad.float64, requires_grad=requires_grad)


def _run_xad(name, kwargs, grouped, steps=20):
    a = _f64(A)
    w1 = _f64(W1, True)
    w2 = _f64(W2, True)
    params, kw = _groups(w1, w2, kwargs, grouped)
    opt = getattr(optim, name)(params, **kw)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        _loss_xad(w1, w2, a).backward()
        opt.step()
        out.append(np.concatenate([w1.numpy(), w2.numpy()]))
    return np.array(out), opt, (w1, w2)


def _run_torch(name, kwargs, grouped, steps=20):
    a = torch.tensor(A)
    w1 = torch.tensor(W1, requires_grad=True)
    w2 = torch.tensor(W2, requires_grad=True)
    params, kw = _groups(w1, w2, kwargs, grouped)
    opt = getattr(torch.optim, name)(params, **kw)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        _loss_torch(w1, w2, a).backward()
        opt.step()
        out.append(np.concatenate([w1.detach().numpy(), w2.detach().numpy()]))
    return np.array(out)


@pytest.mark.parametrize("grouped", [False, True], ids=["one-group", "two-groups"])
@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in
                                                     enumerate(CASES)])
def test_trajectory_matches_torch(xb, name, kwargs, grouped):
    ours, opt, (w1, w2) = _run_xad(name, kwargs, grouped)
    ref = _run_torch(name, kwargs, grouped)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)
    # updates stay on the parameters' backend and dtype; state too
    for p in (w1, w2):
        assert p.backend is xb and p.dtype == xad.float64 and p.is_leaf and p.requires_grad
        for v in opt.state.get(p, {}).values():
            if isinstance(v, xad.Tensor):
                assert v.backend is xb and v.dtype == xad.float64 and v.shape == p.shape


def test_float32_stays_float32(xb):
    for cls, kw in [(optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
                    (optim.Adam, dict(lr=0.1, amsgrad=True, weight_decay=0.1)),
                    (optim.AdamW, dict(lr=0.1)),
                    (optim.RMSprop, dict(centered=True, momentum=0.5)),
                    (optim.Adagrad, dict(weight_decay=0.1))]:
        w = xad.randn(3, 2, requires_grad=True)
        opt = cls([w], **kw)
        for _ in range(2):
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()
        assert w.dtype == xad.float32, cls
        for v in opt.state[w].values():
            if isinstance(v, xad.Tensor):
                assert v.dtype == xad.float32, cls


def test_step_records_no_graph(xb):
    w = xad.ones(3, requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    assert w.is_leaf and w.grad_fn is None and w.requires_grad
    # the parameter is still a leaf usable for the next step
    opt.zero_grad()
    (w * 2).sum().backward()
    assert w.grad is not None


def test_skips_params_without_grad(xb):
    a = xad.ones(2, requires_grad=True)
    b = xad.ones(2, requires_grad=True)
    opt = optim.SGD([a, b], lr=0.5, momentum=0.9)
    (a * a).sum().backward()
    opt.step()
    assert a.tolist() == [0.0, 0.0] and b.tolist() == [1.0, 1.0]
    assert b not in opt.state


def test_zero_grad(xb):
    w = xad.ones(2, requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    (w * 3).sum().backward()
    g = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is not g and w.grad.tolist() == [0.0, 0.0] and g.tolist() == [3.0, 3.0]
    opt.zero_grad()
    assert w.grad is None


def test_closure(xb):
    w = xad.ones(2, requires_grad=True)
    opt = optim.SGD([w], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    with xad.no_grad():  # the closure still records
        loss = opt.step(closure)
    assert loss.item() == 2.0 and w.tolist() == [0.5, 0.5]


@pytest.mark.parametrize("cls,kwargs,message", [
    (optim.SGD, dict(lr=-1), "Invalid learning rate: -1"),
    (optim.SGD, dict(lr=0.1, momentum=-0.5), "Invalid momentum value: -0.5"),
    (optim.SGD, dict(lr=0.1, weight_decay=-1e-3), "Invalid weight_decay value: -0.001"),
    (optim.SGD, dict(lr=0.1, nesterov=True), "Nesterov momentum requires a momentum"),
    (optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
     "zero dampening"),
    (optim.Adam, dict(lr=-0.1), "Invalid learning rate: -0.1"),
    (optim.Adam, dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    (optim.Adam, dict(betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
    (optim.Adam, dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (optim.AdamW, dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    (optim.RMSprop, dict(alpha=-0.5), "Invalid alpha value: -0.5"),
    (optim.RMSprop, dict(momentum=-1), "Invalid momentum value: -1"),
    (optim.RMSprop, dict(eps=-1), "Invalid epsilon value: -1"),
    (optim.Adagrad, dict(lr_decay=-1), "Invalid lr_decay value: -1"),
    (optim.Adagrad, dict(initial_accumulator_value=-1),
     "Invalid initial_accumulator_value value: -1"),
    (optim.Adagrad, dict(lr=math.nan), "Invalid learning rate: nan"),
])
def test_validation(cls, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        cls([xad.zeros(1, requires_grad=True)], **kwargs)


def test_validation_in_groups_and_params():
    w = xad.zeros(1, requires_grad=True)
    with pytest.raises(ValueError, match="Invalid learning rate: -2"):
        optim.Adam([{"params": [w], "lr": -2}])
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        optim.SGD(w, lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        optim.SGD([w, 3.0], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([w * 2], lr=0.1)


@pytest.mark.parametrize("name", optim.__all__[1:13])
def test_a_tensor_hyperparameter_is_refused_by_name(name):
    # PyTorch takes lr=torch.tensor(0.01); xad said "Invalid learning rate: 0.01"
    w = xad.zeros(1, requires_grad=True)
    with pytest.raises(TypeError, match=rf"{name}: hyperparameter 'lr' holds a tensor"):
        getattr(optim, name)([w], lr=xad.tensor(0.01))
    opt = getattr(optim, name)([w], lr=0.01)
    sd = opt.state_dict()
    sd["param_groups"][0]["lr"] = xad.tensor(0.5)
    with pytest.raises(TypeError, match="'lr' holds a tensor"):
        opt.load_state_dict(sd)


def test_adagrad_starts_each_group_at_its_own_accumulator_value(xb):
    # PyTorch 2.13 starts every group at the constructor's value; its documented per-group
    # options are followed here (xad/optim/adagrad.py)
    a, b = xad.zeros(2, requires_grad=True), xad.zeros(2, requires_grad=True)
    opt = optim.Adagrad([{"params": [a]}, {"params": [b], "initial_accumulator_value": 0.5}],
                        lr=0.1, initial_accumulator_value=0.25)
    assert opt.state[a]["sum"].tolist() == [0.25, 0.25]
    assert opt.state[b]["sum"].tolist() == [0.5, 0.5]


def test_a_negative_lr_from_a_scheduler_survives_a_state_dict_round_trip(xb):
    # CosineAnnealingLR chained after a decay goes below 0 (PyTorch's too) and steps take it;
    # loading that state raised "Invalid learning rate: -0.0096" (PyTorch's load checks nothing)
    w = xad.tensor([1.0, -2.0], dtype=xad.float64, requires_grad=True)
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    opt.param_groups[0]["lr"] = -0.0096
    again = optim.SGD([w], lr=0.1, momentum=0.9)
    again.load_state_dict(opt.state_dict())
    assert again.param_groups[0]["lr"] == -0.0096


def test_adamw_group_without_decoupled_decay_matches_torch(xb):
    # decoupled_weight_decay is a group option in PyTorch: False in an AdamW group is Adam's
    # L2 decay there (xad's AdamW decayed every group decoupled)
    def run(lib, make):
        w1, w2 = make(W1), make(W2)
        opt = lib.optim.AdamW([{"params": [w1]}, {"params": [w2],
                                                  "decoupled_weight_decay": False}],
                              lr=0.05, weight_decay=0.3)
        for _ in range(5):
            opt.zero_grad()
            (w1 * w1 * w1).sum().backward()
            (w2 * w2).sum().backward()
            opt.step()
        return np.concatenate([np.asarray(w.detach().numpy()) for w in (w1, w2)])

    ours = run(xad, lambda a: xad.tensor(a.copy(), dtype=xad.float64, requires_grad=True))
    ref = run(torch, lambda a: torch.tensor(a, requires_grad=True))
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)


def _train(opt, w, steps, a):
    for _ in range(steps):
        opt.zero_grad()
        (xad.tanh(a @ w) ** 2).sum().backward()
        opt.step()


@pytest.mark.parametrize("cls,kwargs", [
    (optim.SGD, dict(lr=0.1, momentum=0.9)),
    (optim.Adam, dict(lr=0.1, amsgrad=True)),
    (optim.RMSprop, dict(lr=0.01, centered=True, momentum=0.5)),
    (optim.Adagrad, dict(lr=0.1)),
])
def test_state_dict_round_trip(xb, cls, kwargs):
    a = _f64(A)
    w = _f64(W1, True)
    opt = cls([w], **kwargs)
    _train(opt, w, 3, a)
    sd = opt.state_dict()
    assert sd["param_groups"][0]["params"] == [0]
    assert set(sd["param_groups"][0]) >= set(kwargs) | {"params"}
    assert all(isinstance(v, (xad.Tensor, int, float)) for v in sd["state"][0].values())
    saved_w = w.numpy().copy()
    _train(opt, w, 3, a)
    expected = w.numpy()
    # the snapshot is not changed by later steps; a fresh optimiser resumes identically
    w2 = _f64(saved_w, True)
    opt2 = cls([w2], lr=123.0)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == kwargs["lr"]
    _train(opt2, w2, 3, a)
    np.testing.assert_allclose(w2.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_load_state_dict_onto_other_backend_and_dtype(xb):
    w = xad.tensor(W1, dtype=xad.float64, requires_grad=True, backend=xad.resolve_backend("numpy"))

    a_np = xad.tensor(A, dtype=xad.float64, backend=w.backend)
    opt = optim.Adam([w], lr=0.1)
    _train(opt, w, 2, a_np)
    sd = opt.state_dict()
    w2 = xad.tensor(W1.copy(), dtype=xad.float32, requires_grad=True)  # on xb, float32
    opt2 = optim.Adam([w2], lr=0.1)
    opt2.load_state_dict(sd)
    st = opt2.state[w2]
    assert st["step"] == 2
    for k in ("exp_avg", "exp_avg_sq"):
        assert st[k].backend is xb and st[k].dtype == xad.float32
        np.testing.assert_allclose(st[k].numpy(), sd["state"][0][k].numpy(), rtol=1e-6)


def test_load_state_dict_errors():
    w = xad.zeros(2, requires_grad=True)
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    sd = opt.state_dict()
    two = optim.SGD([{"params": [w]}, {"params": [xad.zeros(1, requires_grad=True)]}], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        two.load_state_dict(sd)
    bigger = optim.SGD([w, xad.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size"):
        bigger.load_state_dict(sd)
    other = optim.SGD([xad.zeros(5, requires_grad=True)], lr=0.1, momentum=0.9)
    (w * w).sum().backward()
    opt.step()
    with pytest.raises(ValueError, match="shape"):
        other.load_state_dict(opt.state_dict())


@pytest.mark.parametrize("saved,target", [((1,), (3,)), ((), (3,)), ((1,), ()), ((1, 1), (1,))])
def test_load_state_dict_refuses_a_one_element_state_of_another_shape(xb, saved, target):
    # one-element states slipped through the shape check: on JAX the next step broadcast them
    # and reshaped the parameter ((1, 1) onto (1,) gave a (1, 1) parameter); PyTorch fails
    for cls, kw in ((optim.Adam, {}), (optim.SGD, dict(momentum=0.9)), (optim.Rprop, {})):
        a = xad.ones(saved, dtype=xad.float64, requires_grad=True)
        opt = cls([a], lr=0.1, **kw)
        a.grad = xad.ones(saved, dtype=xad.float64)
        opt.step()
        b = xad.ones(target, dtype=xad.float64, requires_grad=True)
        with pytest.raises(ValueError, match=rf"of parameter 0 has shape {re.escape(str(saved))}"):
            cls([b], lr=0.1, **kw).load_state_dict(opt.state_dict())


def test_load_state_dict_keeps_0d_counts_of_any_parameter(xb):
    # a step count kept as a 0-d tensor (PyTorch's layout) loads onto a parameter of any shape
    w = xad.ones((2, 3), dtype=xad.float64, requires_grad=True)
    opt = optim.NAdam([w], lr=0.1)
    w.grad = xad.ones((2, 3), dtype=xad.float64)
    opt.step()
    sd = opt.state_dict()
    sd["state"][0] = {k: xad.tensor(v, dtype=xad.float64) if k in ("step", "mu_product") else v
                      for k, v in sd["state"][0].items()}
    opt2 = optim.NAdam([w], lr=0.1)
    opt2.load_state_dict(sd)  # (raised: "state 'step' ... has shape () but the parameter ...")
    assert float(opt2.state[w]["step"]) == 1
    assert float(opt2.state[w]["mu_product"]) == float(opt.state[w]["mu_product"])


def test_mlp_with_nn_module(xb):
    nn = xad.nn
    xad.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = optim.Adam(model.parameters(), lr=0.05)
    x = xad.randn(16, 3)
    y = (x * x).sum(axis=1, keepdims=True)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]



# ----- the in-place paths for large parameters (scratch arrays, chunks), forced on tiny ones --
_W0 = _RNG.standard_normal((5, 3)) * 0.5
_X0 = _RNG.standard_normal(3)
_C0 = _RNG.standard_normal(5)


def _run_2d(lib, name, kwargs, steps=12):
    if lib == "torch":
        w = torch.tensor(_W0.copy(), requires_grad=True)
        bias = torch.tensor(_C0.copy(), requires_grad=True)
        x, opt_mod = torch.tensor(_X0), torch.optim
        tanh, to_np = torch.tanh, (lambda t: t.detach().numpy().ravel())
    else:
        w, bias, x = _f64(_W0, True), _f64(_C0, True), _f64(_X0)
        opt_mod, tanh, to_np = optim, xad.tanh, (lambda t: t.numpy().ravel())
    opt = getattr(opt_mod, name)([w, bias], **kwargs)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss = (tanh(w @ x + bias) * bias).sum() + (w * w * w * w).sum() / 4
        loss.backward()
        opt.step()
        out.append(np.concatenate([to_np(w), to_np(bias)]))
    return np.array(out), opt


@pytest.mark.parametrize("small,chunk", [(0, 10**9), (0, 1), (0, 4)],
                         ids=["scratch", "chunk-rows", "chunk-2rows"])
@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in
                                                     enumerate(CASES)])
def test_inplace_paths_match_torch(xb, monkeypatch, name, kwargs, small, chunk):
    from xad.optim import optimizer as _opt
    monkeypatch.setattr(_opt, "_SMALL", small)
    monkeypatch.setattr(_opt, "_CHUNK", chunk)
    ours, opt = _run_2d("xad", name, kwargs)
    np.testing.assert_allclose(ours, _run_2d("torch", name, kwargs)[0], rtol=1e-5, atol=1e-5)
    if xb.mutable:  # one persistent scratch entry per parameter; none for a fused kernel
        assert len(opt._scratch) == (0 if fuses(xb) else 2)


def test_scratch_not_in_state_dict_and_reset_on_load(xb, monkeypatch):
    from xad.optim import optimizer as _opt
    monkeypatch.setattr(_opt, "_SMALL", 0)
    w = _f64(_W0, True)
    opt = optim.Adam([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    opt.load_state_dict(sd)
    assert opt._scratch == {}
    opt.step()  # scratch made again
    assert len(opt._scratch) == (1 if xb.mutable and not fuses(xb) else 0)


def test_gradient_not_written(xb, monkeypatch):
    # gradients may alias other arrays: the update only reads them, on every path
    from xad.optim import optimizer as _opt
    for small in (0, 10**9):
        monkeypatch.setattr(_opt, "_SMALL", small)
        for name, kwargs in CASES:
            w = _f64(_W0, True)
            g = _f64(_W0 * 0.3)
            w.grad = g
            getattr(optim, name)([w], **kwargs).step()
            np.testing.assert_array_equal(g.numpy(), _W0 * 0.3)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in
                                                    enumerate(CASES)])
def test_in_place_kernel_equals_the_functional_rule(xb, name, kwargs, dtype, monkeypatch):
    """The fast path (an in-place kernel; one fused kernel per parameter where the backend
    fuses, CuPy) against the rule each optimiser states once (the pure function immutable
    backends run), on the same backend, over several steps; the fused kernel runs that very
    rule, so its numbers are the rule's bits (on the emulator; CUDA may contract a * b + c
    into one rounding)."""
    rng = np.random.default_rng(3)
    start = [rng.standard_normal((7, 5)), rng.standard_normal(5)]
    grads = [[rng.standard_normal(a.shape) for a in start] for _ in range(6)]
    dt = getattr(xad, dtype)

    def trajectory():
        ps = [xad.tensor(a, dtype=dt, requires_grad=True) for a in start]
        opt = getattr(xad.optim, name)(ps, **kwargs)
        for gs in grads:
            for p, g in zip(ps, gs):
                p.grad = xad.tensor(g, dtype=dt)
            opt.step()
        return [p.numpy() for p in ps] + [v.numpy() for st in opt.state.values()
                                          for v in st.values() if isinstance(v, xad.Tensor)]

    fast = trajectory()
    monkeypatch.setattr(type(xb), "mutable", False)  # the rule's path, as on JAX
    rule = trajectory()
    assert len(fast) == len(rule)
    for a, b in zip(fast, rule):
        assert a.dtype == b.dtype == np.dtype(dtype)
        if fuses(xb):
            assert_same_numbers(xb, a, b)
        else:
            tol = 1e-12 if dtype == "float64" else 1e-5
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol / 100)
