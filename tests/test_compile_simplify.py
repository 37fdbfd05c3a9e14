"""xad.compile's simplifications (xad/compile/simplify.py): repeated pure operations run
once and explicit broadcasts feeding ``+ - * /`` are dropped, with results bit-identical to
eager mode on NumPy; nothing merges across an in-place write or a host call, or into an
array that is written, held by a tensor or returned."""

from __future__ import annotations

import numpy as np
import pytest

import xad
from xad import optim

pytestmark = pytest.mark.filterwarnings("error:xad.compile:RuntimeWarning")


def _calls(f, name: str) -> int:
    return sum(f" = {name}(" in line for line in f.program().splitlines())


def _check(xb, fn, *args, steps: int = 3):
    """``fn`` compiled agrees with ``fn`` eager (exactly on NumPy) on every call."""
    f = xad.compile(fn)
    for k in range(steps):
        shifted = [a + 0.5 * k for a in args]
        got, want = f(*shifted), fn(*shifted)
        for g, w in zip(got, want):
            if xb.label.startswith("numpy"):
                np.testing.assert_array_equal(g.numpy(), w.numpy())
            else:
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)
    assert f.recordings == 1
    return f


def _x(*shape):
    n = int(np.prod(shape))
    return xad.linspace(-1.0, 2.0, n, dtype=xad.float64).reshape(shape)


def test_a_repeated_operation_runs_once(xb):
    f = _check(xb, lambda x: ((x * 3.0) + (x * 3.0) * (x * 3.0),), _x(4, 3))
    assert _calls(f, "multiply") == 2  # x * 3.0 once, then the product


def test_the_mse_gradient_computes_its_product_once(xb):
    w = _x(3, 2).requires_grad_()

    def step(x, y):
        w.grad = None
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        return loss.detach(), w.grad

    f = _check(xb, step, _x(5, 3), _x(5, 2))
    rules = [line.split(" = ", 1)[1] for line in f.program().splitlines() if " = " in line]
    assert len(rules) == len(set(rules)), f.program()  # no right-hand side twice


def test_no_merge_across_an_inplace_write(xb):
    def fn(x):
        y = x * 1.0
        a = y * 2.0
        y += 1.0       # y changed between the two products
        return a, y * 2.0

    f = _check(xb, fn, _x(4, 3))
    assert _calls(f, "multiply") == 3


def test_no_merge_into_a_result_written_in_place(xb):
    def fn(x):
        a, b = x * 2.0, x * 2.0
        a += 1.0       # b must not see this
        return a, b

    _check(xb, fn, _x(4, 3))


def test_returned_results_stay_separate_arrays(xb):
    f = _check(xb, lambda x: (x * 2.0, x * 2.0), _x(4, 3))
    a, b = f(_x(4, 3))
    assert a.array is not b.array


def _across_sgd_step(before, after):
    """Three calls of a compiled step: gradient of ``sum(w * x)``, ``b = before(w)``, an SGD
    step (lr 0.1: ``w`` changes in place), then ``after(w, b)``; yields ``w`` before each
    call, ``x`` and the call's results (read after the step, so nothing is returned early)."""
    w = _x(4, 3).requires_grad_()
    opt = optim.SGD([w], lr=0.1)

    def step(x):
        opt.zero_grad()
        (w * x).sum().backward()
        b = before(w)
        opt.step()
        return tuple(r.detach() for r in after(w, b))

    f = xad.compile(step)
    x = _x(4, 3)
    for _ in range(3):
        w_now = w.numpy().copy()
        yield w_now, x.numpy(), f(x)
    assert f.recordings == 1


def test_no_merge_across_an_optimiser_step(xb):
    # w * 2.0 before and after opt.step(), which changes w in place: not the same value
    for w_now, x, (before, after) in _across_sgd_step(
            lambda w: w * 2.0, lambda w, b: (b + 0.0, w * 2.0 + 0.0)):
        np.testing.assert_allclose(before.numpy(), 2 * w_now, rtol=1e-15)
        np.testing.assert_allclose(after.numpy(), 2 * (w_now - 0.1 * x), rtol=1e-12)


def test_a_broadcast_feeding_a_product_is_implicit(xb):
    f = _check(xb, lambda x, v: (xad.broadcast_to(v, (4, 3)) * x,), _x(4, 3), _x(4, 1))
    assert _calls(f, "broadcast_to") == 0


@pytest.mark.parametrize("fn", [
    lambda x, v: (-xad.broadcast_to(v, (4, 3)),),                   # no full-shape operand
    lambda x, v: (xad.broadcast_to(v, (4, 3)) * x[:1],),             # x[:1] is (1, 3)
    lambda x, v: (xad.broadcast_to(v, (4, 3)) * x, xad.broadcast_to(v, (4, 3))),  # returned
], ids=["unary", "partial-shapes", "returned"])
def test_a_broadcast_stays_where_its_shape_is_needed(xb, fn):
    f = _check(xb, fn, _x(4, 3), _x(4, 1))
    assert _calls(f, "broadcast_to") >= 1


def test_a_product_by_one_is_its_operand_on_numpy(xb):
    f = _check(xb, lambda x: (((x * 1.0) * xad.ones((4, 3), dtype=xad.float64)).exp(),),
               _x(4, 3))
    if xb.label.startswith("numpy"):  # reading a constant's values is free on the host only
        assert _calls(f, "multiply") == 0


def test_a_product_by_one_keeps_its_value_across_an_optimiser_step(xb):
    # a copy in eager mode: opt.step() must not reach it
    for w_now, _, (before,) in _across_sgd_step(lambda w: w.detach() * 1.0,
                                                lambda w, b: (b + 0.0,)):
        np.testing.assert_array_equal(before.numpy(), w_now)


def test_a_returned_product_by_one_is_a_new_array(xb):
    w = _x(4, 3)
    f = _check(xb, lambda x: (w * 1.0, x * 1.0), _x(4, 3))
    a, b = f(_x(4, 3))
    assert a.array is not w.array


def test_takes_out_only_where_out_writes(xb):
    """``takes_out`` (which lets compile and the optimisers write into buffers) holds only
    for a namespace whose ufuncs write ``out=``: not JAX's, whose ``multiply`` is
    ufunc-shaped (``nout``) but refuses ``out=``."""
    from xad.backend import takes_out

    xp = xb.xp
    if takes_out(xp):
        t = xp.zeros((3,), dtype=xp.float64)
        xp.multiply(xp.ones((3,), dtype=xp.float64), 2.0, out=t)
        assert bool(xp.all(t == 2.0))
    else:
        assert not xb.label.startswith("numpy")


def test_a_broadcast_of_a_merged_value_reads_the_value_it_was_merged_into(xb):
    """``(sum(w * x) - 1) ** 2``'s backward broadcasts the 0-d gradient ``2 * d * 1`` to
    ``w``'s shape: the ``* 1`` is merged away, and the multiply reading the broadcast must
    then read the merged value's name (it read a name no instruction made, and the replay
    raised UnboundLocalError)."""
    w = xad.ones(3, dtype=xad.float64, requires_grad=True)

    def step(x):
        w.grad = None
        loss = ((w * x).sum() - 1.0) ** 2
        loss.backward()
        return loss.detach(), w.grad

    _check(xb, step, xad.linspace(0.5, 1.5, 3, dtype=xad.float64))
