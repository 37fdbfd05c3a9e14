"""Module hooks PyTorch has beside the basic three, against torch 2.13's call order and
values on every backend: forward (pre-)hooks ``with_kwargs=True`` and ``prepend=True``, and
full backward pre-hooks (alone, beside full backward hooks, replacing ``grad_output``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import xad


def _rounded(t):
    return [round(v, 6) for v in t.detach().reshape(-1).tolist()]


def _run(lib, calls):
    nn = lib.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x, scale=1.0):
            return self.lin(x) * scale

    m = M()
    with (torch.no_grad() if lib is torch else xad.no_grad()):
        m.lin.weight.copy_(lib.tensor([[1.0, 2.0], [3.0, -1.0]]))
        m.lin.bias.copy_(lib.tensor([0.5, -0.5]))
    m.register_forward_pre_hook(
        lambda mod, a, k: calls.append(("pre_kw", sorted(k))) or (a, {**k, "scale": 2.0}),
        with_kwargs=True)
    m.register_forward_pre_hook(lambda mod, a: calls.append("pre_first"), prepend=True)
    m.register_forward_hook(lambda mod, a, k, out: calls.append(("fwd_kw", k["scale"])) or out + 1,
                            with_kwargs=True)
    m.register_forward_hook(lambda mod, a, out: calls.append("fwd_first"), prepend=True)
    m.register_full_backward_pre_hook(
        lambda mod, go: calls.append(("bpre", _rounded(go[0]))) or (go[0] * 3,))
    m.register_full_backward_hook(
        lambda mod, gi, go: calls.append(("bwd", _rounded(go[0]), _rounded(gi[0]))))
    m.lin.register_full_backward_pre_hook(lambda mod, go: calls.append(("inner", _rounded(go[0]))))
    x = lib.tensor([[1.0, 2.0], [0.5, -1.0]], requires_grad=True)
    y = m(x, scale=5.0)
    y.sum().backward()
    return y.tolist(), x.grad.tolist(), m.lin.weight.grad.tolist()


def test_kwargs_prepend_and_backward_pre_hooks_as_torch(xb):
    got, want = [], []
    assert _run(xad, got) == _run(torch, want)
    assert got == want


def test_a_backward_pre_hook_alone_and_on_inputs_without_grad(xb):
    """torch calls it even when no input requires grad; its tuple replaces grad_output."""
    for lib in (torch, xad):
        m = lib.nn.Linear(3, 1)
        seen = []
        m.register_full_backward_pre_hook(
            lambda mod, go, seen=seen: seen.append(go[0].shape) or (go[0] * 0,))
        m(lib.ones((2, 3))).sum().backward()
        assert seen == [(2, 1)] and m.weight.grad.abs().sum().item() == 0.0


def test_handles_remove_kwargs_hooks_and_backward_pre_hooks(xb):
    m = xad.nn.Identity()
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, a, k: calls.append(1), with_kwargs=True)
    h2 = m.register_forward_hook(lambda mod, a, k, o: calls.append(2), with_kwargs=True)
    h3 = m.register_full_backward_pre_hook(lambda mod, go: calls.append(3))
    x = xad.ones(2, requires_grad=True)
    m(x * 1).sum().backward()
    assert calls == [1, 2, 3]
    for h in (h1, h2, h3):
        h.remove()
    m(x * 1).sum().backward()
    assert calls == [1, 2, 3] and not m._forward_pre_hooks and not m._backward_pre_hooks


def test_hook_results_of_the_wrong_form_raise_as_torch(xb):
    m = xad.nn.Identity()
    h = m.register_forward_pre_hook(lambda mod, a, k: a, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"must return None or a tuple of \(new_args, "):
        m(xad.ones(1), )
    h.remove()
    m.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match="invalid number of grad_output, got 2, but "
                                           "expected 1"):
        m(xad.ones(2, requires_grad=True) * 1).sum().backward()


def test_prepend_orders_backward_hooks_as_torch(xb):
    out = {}
    for lib in (torch, xad):
        m, calls = lib.nn.Linear(2, 2), []
        for tag, pre in (("a", False), ("b", True), ("c", False)):
            m.register_full_backward_hook(lambda mod, gi, go, t=tag, c=calls: c.append(t),
                                          prepend=pre)
            m.register_full_backward_pre_hook(lambda mod, go, t=tag, c=calls: c.append("p" + t),
                                              prepend=pre)
        m(lib.ones((1, 2), requires_grad=True)).sum().backward()
        out[lib.__name__] = calls
    assert out["xad"] == out["torch"]
    np.testing.assert_equal(len(out["xad"]), 6)
