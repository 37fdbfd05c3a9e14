"""Module hooks (forward pre-hooks, forward hooks, full backward hooks) with handles, checked
against torch 2.13's values on every backend; hooks are not state."""

from __future__ import annotations

import numpy as np
import pytest

import xad
from xad import nn

torch = pytest.importorskip("torch")  # torch is a test dependency: the oracle


def _pair():
    rng = np.random.default_rng(0)
    w1, b1 = rng.standard_normal((4, 3)), rng.standard_normal(4)
    w2, b2 = rng.standard_normal((2, 4)), rng.standard_normal(2)
    x = rng.standard_normal((5, 3))
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).to(xad.float64)
    m.load_state_dict({"0.weight": xad.tensor(w1), "0.bias": xad.tensor(b1),
                       "2.weight": xad.tensor(w2), "2.bias": xad.tensor(b2)})
    t = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    t = t.double()
    with torch.no_grad():
        for p, a in zip(t.parameters(), (w1, b1, w2, b2)):
            p.copy_(torch.tensor(a))
    return m, t, x


def _run(model, x, lib):
    seen = []
    h = model[2].register_full_backward_hook(
        lambda mod, gi, go: seen.append((gi, go)) or (gi[0] * 3,))
    inp = lib.tensor(x, requires_grad=True) if lib is xad else torch.tensor(x,
                                                                            requires_grad=True)
    model(inp).sum().backward() if lib is torch else model(inp).sum().backward()
    h.remove()
    (gi,), (go,) = seen[0]
    grads = [p.grad for p in model.parameters()] + [inp.grad]
    return gi, go, grads


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.numpy()


def test_full_backward_hook_matches_torch(xb):
    m, t, x = _pair()
    gi, go, grads = _run(m, x, xad)
    tgi, tgo, tgrads = _run(t, x, torch)
    np.testing.assert_allclose(_np(gi), _np(tgi), rtol=1e-12)
    np.testing.assert_allclose(_np(go), _np(tgo), rtol=1e-12)
    for a, b in zip(grads, tgrads):  # the hook's (gi * 3) reached the earlier layers
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10)


def test_forward_hooks_run_in_order_and_handles_remove_them(xb):
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("pre") or (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append("post") or out + 1)
    y = m(xad.ones((1, 2)))
    assert calls == ["pre", "post"]
    assert np.allclose(y.numpy(), m.bias.numpy() + 1)
    h1.remove()
    h2.remove()
    h2.remove()  # a second remove does nothing
    assert np.allclose(m(xad.zeros((1, 2))).numpy(), m.bias.numpy())


def test_hooks_are_not_state_and_survive_a_state_dict_round_trip(xb):
    m = nn.Linear(2, 2)
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append(1))
    sd = m.state_dict()
    assert list(sd) == ["weight", "bias"]
    m.load_state_dict(sd)
    m(xad.ones((1, 2)))
    assert seen == [1]


def test_backward_hook_on_a_module_whose_input_needs_no_grad(xb):
    m = nn.Linear(3, 1)
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go[0].shape)))
    m(xad.ones((2, 3))).sum().backward()
    assert seen == [((None,), (2, 1))]
    assert m.weight.grad is not None
