"""Adamax, NAdam, RAdam, Rprop, Adadelta, ASGD (and LBFGS, below): trajectories against
PyTorch's (float64, every backend, one and two parameter groups, large parameters through
the chunked in-place path), state keys and state-dict round trips, validation.

The rules are written once (xad/optim): 50 steps on NumPy check the long run, and a shorter
run on each other backend (past RAdam's rectification switch and ASGD's t0) checks that
backend's arrays; JAX compiles each new operation, so fewer steps there cost far less."""

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


def _steps(xb, n: int = 50, short: int = 12) -> int:
    """``n`` steps on NumPy, ``short`` on the other backends."""
    return n if xb.name == "numpy" else min(n, short)


_REFS: dict = {}


def _ref(run, *args):
    """``run(torch, *args)``: PyTorch's run, made once for every backend's test."""
    key = (run.__name__, repr(args))
    if key not in _REFS:
        _REFS[key] = run(torch, *args)
    return _REFS[key]


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
    ("Adadelta", dict(lr=1.0)),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=10, weight_decay=0.1)),
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
    ours, opt = _run(xad, name, kwargs, grouped, _steps(xb))
    ref, topt = _ref(_run, name, kwargs, grouped, _steps(xb))
    np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-6)
    assert sorted(opt.state_dict()["state"][0]) == sorted(topt.state_dict()["state"][0])
    assert opt.state_dict()["param_groups"][0].keys() >= {
        k for k in topt.state_dict()["param_groups"][0] if k in kwargs or k == "lr"}


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "Rprop", "Adadelta", "ASGD"])
def test_large_parameter_matches_torch(xb, name):
    """A parameter big enough for the chunked in-place path."""
    a = np.random.default_rng(3).standard_normal((100, 100))  # over the small-update size
    x, t = xad.tensor(a.copy(), dtype=xad.float64, requires_grad=True), \
        torch.tensor(a, requires_grad=True)
    xo, to = getattr(optim, name)([x], lr=0.01), getattr(torch.optim, name)([t], lr=0.01)
    for _ in range(_steps(xb, 8, short=3)):
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
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        optim.NAdam(w, differentiable=True)
    with pytest.raises(NotImplementedError, match="SGD: differentiable=True"):
        optim.SGD(w, differentiable=True)


def test_asgd_average_matches_torch(xb):
    """ASGD's average ``ax`` (with averaging starting at t0) and its eta/mu, as torch's."""
    def run(lib):
        ours = lib is xad
        w = (xad.tensor(W1.copy(), dtype=xad.float64, requires_grad=True) if ours
             else torch.tensor(W1, requires_grad=True))
        opt = (optim if ours else torch.optim).ASGD([w], lr=0.05, lambd=0.01, t0=20)
        for _ in range(50):
            opt.zero_grad()
            ((w * w * w * w).sum() - w.sum()).backward()
            opt.step()
        st = opt.state[w]
        return np.asarray(st["ax"].numpy() if ours else st["ax"].detach().numpy()), \
            float(st["eta"]), float(st["mu"])

    with torch_float64():
        ref = run(torch)
    ours = run(xad)
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-9)
    np.testing.assert_allclose(ours[1:], ref[1:], rtol=1e-12)


def torch_float64():
    """torch keeps ASGD's eta and mu in its default dtype: float64 for exact references."""
    import contextlib

    @contextlib.contextmanager
    def ctx():
        old = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            yield
        finally:
            torch.set_default_dtype(old)
    return ctx()


# ----- LBFGS: a closure, a few iterations per step, 50 steps ---------------------------------
def _rosen(lib, w1, w2, a):
    tanh = xad.tanh if lib is xad else torch.tanh
    r = (1 - w1[:-1]) ** 2 + 10 * (w1[1:] - w1[:-1] ** 2) ** 2
    return r.sum() + (tanh(a @ w1) * w2).sum() + (w2 * w2).sum()


def _run_lbfgs(lib, kwargs, steps=50, resume_at=None):
    make = (lambda a, g=False: xad.tensor(a.copy(), dtype=xad.float64, requires_grad=g)) \
        if lib is xad else (lambda a, g=False: torch.tensor(a, requires_grad=g))
    a, w1, w2 = make(A), make(W1 * 0.5 - 1, True), make(W2, True)
    opt = (optim if lib is xad else torch.optim).LBFGS([w1, w2], **kwargs)

    def closure():
        opt.zero_grad()
        loss = _rosen(lib, w1, w2, a)
        loss.backward()
        return loss

    out = []
    for i in range(steps):
        if i == resume_at:
            sd = opt.state_dict()
            opt = optim.LBFGS([w1, w2], **kwargs)
            opt.load_state_dict(sd)
        loss = opt.step(closure)
        out.append(np.concatenate([np.asarray(w.detach().numpy()) for w in (w1, w2)]
                                  + [[float(loss.detach())]]))
    return np.array(out), opt


LBFGS_CASES = [dict(lr=0.05, max_iter=3, history_size=4),
               dict(lr=0.7, max_iter=4, history_size=3, line_search_fn="strong_wolfe"),
               dict(max_iter=20, tolerance_change=1e-5, line_search_fn="strong_wolfe")]


@pytest.mark.parametrize("kwargs", LBFGS_CASES, ids=[str(i) for i in range(len(LBFGS_CASES))])
def test_lbfgs_matches_torch(xb, kwargs):
    ours, opt = _run_lbfgs(xad, kwargs, _steps(xb, short=10))
    ref, topt = _ref(_run_lbfgs, kwargs, _steps(xb, short=10))
    np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-6)
    st, tst = opt.state_dict()["state"][0], topt.state_dict()["state"][0]
    assert sorted(st) == sorted(tst)
    assert (st["func_evals"], st["n_iter"]) == (tst["func_evals"], tst["n_iter"])
    assert opt.state_dict()["param_groups"][0].keys() == \
        topt.state_dict()["param_groups"][0].keys()


def test_lbfgs_state_dict_round_trip(xb):
    kwargs = LBFGS_CASES[1]
    full, _ = _run_lbfgs(xad, kwargs, steps=_steps(xb, 20))
    resumed, _ = _run_lbfgs(xad, kwargs, steps=_steps(xb, 20), resume_at=6)
    np.testing.assert_allclose(resumed, full, rtol=1e-12, atol=1e-12)


def test_lbfgs_errors():
    a, b = xad.zeros(2, requires_grad=True), xad.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="parameter groups"):
        optim.LBFGS([{"params": [a]}, {"params": [b]}])
    with pytest.raises(ValueError, match="line_search_fn"):
        optim.LBFGS([a], line_search_fn="armijo")
    with pytest.raises(RuntimeError, match="needs a closure"):
        optim.LBFGS([a]).step(None)


# ----- maximize (every optimiser), foreach/fused/capturable accepted, torch's group keys -----
MAXIMIZE = [("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.1, foreach=True, fused=False)),
            ("Adam", dict(lr=0.05, weight_decay=0.1, amsgrad=True, foreach=False)),
            ("AdamW", dict(lr=0.05, capturable=False, fused=None)),
            ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1)),
            ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, fused=None)),
            ("Adamax", dict(lr=0.05, weight_decay=0.1)), ("NAdam", dict(lr=0.05)),
            ("RAdam", dict(lr=0.05, weight_decay=0.1)), ("Rprop", dict(lr=0.05)),
            ("Adadelta", dict(lr=1.0, weight_decay=0.1)), ("ASGD", dict(lr=0.05, t0=5))]


def _run_ascent(lib, name, kwargs, steps=20):
    """Ascend ``-loss`` with ``maximize=True``: the trajectory of descending ``loss``."""
    make = (lambda a, g=False: xad.tensor(a.copy(), dtype=xad.float64, requires_grad=g)) \
        if lib is xad else (lambda a, g=False: torch.tensor(a, requires_grad=g))
    a, w1, w2 = make(A), make(W1, True), make(W2, True)
    opt = getattr(optim if lib is xad else torch.optim, name)([w1, w2], maximize=True,
                                                              **kwargs)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        (-_loss(lib, w1, w2, a)).backward()
        opt.step()
        out.append(np.concatenate([np.asarray(w.detach().numpy()) for w in (w1, w2)]))
    return np.array(out), opt


@pytest.mark.parametrize("name,kwargs", MAXIMIZE, ids=[n for n, _ in MAXIMIZE])
def test_maximize_matches_torch(xb, name, kwargs):
    ours, opt = _run_ascent(xad, name, kwargs, _steps(xb, 20))
    ref, topt = _ref(_run_ascent, name, kwargs, _steps(xb, 20))
    np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-6)
    if xb.name == "numpy":  # ascending -loss is descending loss
        descent, _ = _run(xad, name, {k: v for k, v in kwargs.items()
                                      if k not in ("foreach", "fused", "capturable")}, False,
                          steps=20)
        np.testing.assert_allclose(ours, descent, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", [n for n, _ in MAXIMIZE] + ["LBFGS"])
def test_param_group_keys_are_torchs(name):
    w, t = xad.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
    ours = getattr(optim, name)([w]).state_dict()["param_groups"][0]
    ref = getattr(torch.optim, name)([t]).state_dict()["param_groups"][0]
    assert set(ours) >= set(ref), set(ref) - set(ours)
