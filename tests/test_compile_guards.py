"""xad.compile against Python-side state a first call reads: each test is a way a replay
gave another number than eager mode (found by an adversarial hunt), now a new recording, an
eager call with a warning, or the same number."""

from __future__ import annotations

import numpy as np
import pytest

import xad
from xad import nn


def _f64(*values):
    return xad.tensor(list(values), dtype=xad.float64)


def test_grads_accumulate_after_a_host_call_that_leaves_them(xb):
    """A scheduler's step (a host call) before ``backward()`` decides nothing about the
    ``.grad`` fields: with no ``zero_grad``, they accumulate across calls, as in eager
    mode (the replay used to overwrite them)."""
    def world():
        w = _f64(1.0, 2.0).requires_grad_()
        opt = xad.optim.SGD([w], lr=0.1)
        sched = xad.optim.lr_scheduler.StepLR(opt, 1)

        def step(x):
            sched.step()
            (w * x).sum().backward()
            return w.grad.detach() * 1
        return step

    f, eager = xad.compile(world()), world()
    for k in range(4):
        np.testing.assert_array_equal(f(_f64(1.0, k)).numpy(), eager(_f64(1.0, k)).numpy())


def test_zero_grad_inside_records_once(xb):
    """``opt.zero_grad()`` inside the step decides ``.grad`` (None) whatever it was: one
    recording serves the first call (no gradients yet) and the later ones."""
    w = _f64(1.0, 2.0).requires_grad_()
    opt = xad.optim.SGD([w], lr=0.1)

    @xad.compile
    def step(x):
        opt.zero_grad()
        (w * x).sum().backward()
        opt.step()
        return w.grad.detach() * 1

    for k in range(3):
        assert step(_f64(1.0, k)).tolist() == [1.0, k]
    assert step.recordings == 1


def test_an_argument_keyed_by_identity_is_never_a_later_object(xb):
    """A function passed as an argument is keyed by identity: another function made
    later at the same address (the first one freed) records its own program."""
    f = xad.compile(lambda x, g: g(x) * 1)
    x = _f64(1.0)
    for k in range(4):
        g = (lambda t: t * 2) if k % 2 == 0 else (lambda t: t + 5)
        assert f(x, g).tolist() == g(x).tolist()
        del g


@pytest.mark.filterwarnings("ignore:xad.compile:RuntimeWarning")
def test_a_module_attribute_assigned_between_calls_records_again(xb):
    """Dropout's ``p`` (a Python number the first call used) set to 0 between calls: the
    next call records again and drops nothing, as eager mode."""
    d = nn.Dropout(0.5)
    f = xad.compile(lambda x: d(x) * 1)
    x = xad.ones(16, dtype=xad.float64)
    f(x)
    d.p = 0.0
    assert f(x).tolist() == [1.0] * 16
    assert f(x).tolist() == [1.0] * 16


def test_a_parameter_replaced_between_calls_is_read(xb):
    """``lin.weight = Parameter(...)`` between calls: the next call reads the new one."""
    lin = nn.Linear(2, 1).to(xad.float64)
    opt = xad.optim.SGD(lin.parameters(), lr=0.1)  # holds the first weight
    f = xad.compile(lambda x: lin(x) * 1)
    x = _f64(1.0, 1.0)
    with xad.no_grad():
        f(x)
        lin.weight = nn.Parameter(xad.full((1, 2), 3.0, dtype=xad.float64))
        np.testing.assert_array_equal(f(x).numpy(), lin(x).numpy())
        lin.weight = nn.Parameter(xad.zeros(1, 2, dtype=xad.float64))
        np.testing.assert_array_equal(f(x).numpy(), lin(x).numpy())
    assert len(opt.param_groups[0]["params"]) == 2


def test_a_branch_on_a_raw_array_runs_eagerly(xb):
    """``x.array`` read inside: what Python does with it (a branch) is not recorded, so
    the function runs eagerly with a warning instead of replaying the first branch."""
    def fn(x):
        if x.backend.to_numpy(x.array).sum() > 0:  # a host copy of the raw array
            return x * 1
        return x * -1

    f = xad.compile(fn)
    with pytest.warns(RuntimeWarning, match=r"\.array of a tensor"):
        assert f(_f64(1.0)).tolist() == [1.0]
    assert f(_f64(-1.0)).tolist() == [1.0]
