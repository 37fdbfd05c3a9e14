"""xad.checkpoint: exact gradients (dropout included) to second order, closed-over weights,
the memory it saves, and its errors."""

import numpy as np
import pytest

import xad
from xad import nn

F64 = xad.float64


def same(a, b):
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def make_blocks(n, width=6):
    """A stack of Linear -> tanh -> Dropout blocks (weights closed over by each block)."""
    xad.manual_seed(3)
    blocks = [nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Dropout(0.3))
              for _ in range(n)]
    for b in blocks:
        b.to(xad.get_backend())
        for p in b.parameters():
            p._set_data(p.astype(F64)._array)
    return blocks


def run(blocks, x, ck, seed=11):
    xad.manual_seed(seed)
    h = x
    for b in blocks:
        h = xad.checkpoint(b, h) if ck else b(h)
    return (h * h).sum()


def params(blocks):
    return [p for b in blocks for p in b.parameters()]


def test_gradients_equal_exactly_with_dropout(xb):
    blocks = make_blocks(4)
    x = xad.randn(3, 6, dtype=F64, requires_grad=True)
    ps = params(blocks)
    g_plain = xad.autograd.grad(run(blocks, x, False), [x, *ps])
    g_ck = xad.autograd.grad(run(blocks, x, True), [x, *ps])
    for a, b in zip(g_plain, g_ck):
        same(a, b)
    # a different seed draws different masks: the check above could fail
    g_other = xad.autograd.grad(run(blocks, x, False, seed=12), [x])
    assert not np.array_equal(g_other[0].numpy(), g_plain[0].numpy())
    # backward() fills the closed-over weights' .grad
    run(blocks, x, True).backward()
    for p, g in zip(ps, g_plain[1:]):
        same(p.grad, g)
    same(x.grad, g_plain[0])


def test_second_derivatives_through_checkpoint(xb):
    blocks = make_blocks(3)
    x = xad.randn(2, 6, dtype=F64, requires_grad=True)
    ps = params(blocks)
    out = []
    for ck in (False, True):
        g, = xad.autograd.grad(run(blocks, x, ck), [x], create_graph=True)
        out.append(xad.autograd.grad((g * g).sum(), [x, *ps]))
    for a, b in zip(*out):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)
    # and through the transforms
    xad.manual_seed(0)
    w = xad.randn(4, 4, dtype=F64)

    def f(v):
        return xad.checkpoint(lambda u: xad.tanh(u @ w), v).sum()

    v = xad.randn(4, dtype=F64)
    np.testing.assert_allclose(xad.hessian(f)(v).numpy(),
                               xad.hessian(lambda u: xad.tanh(u @ w).sum())(v).numpy(),
                               rtol=1e-12, atol=1e-12)


def test_rng_state_after_backward_is_undisturbed(xb):
    blocks = make_blocks(2)
    x = xad.randn(2, 6, dtype=F64, requires_grad=True)
    draws = []
    for ck in (False, True):
        run(blocks, x, ck).backward()
        draws.append(xad.rand(5, dtype=F64))
    same(*draws)


def test_tuple_outputs_extra_args_and_retain_graph(xb):
    a = xad.tensor([0.5, -1.0], dtype=F64, requires_grad=True)
    b = xad.tensor([2.0, 3.0], dtype=F64, requires_grad=True)

    def f(u, v, scale):
        return xad.sin(u) * v * scale, xad.exp(u + v)

    def loss(ck):
        p, q = xad.checkpoint(f, a, b, 2.0) if ck else f(a, b, 2.0)
        return (p * q).sum()

    g0 = xad.autograd.grad(loss(False), [a, b])
    y = loss(True)
    g1 = xad.autograd.grad(y, [a, b], retain_graph=True)
    g2 = xad.autograd.grad(y, [a, b])
    for x0, x1, x2 in zip(g0, g1, g2):
        same(x0, x1)
        same(x0, x2)


def test_no_grad_and_constant_inputs(xb):
    w = xad.ones(3, dtype=F64)
    with xad.no_grad():
        y = xad.checkpoint(lambda t: t * 2, w)
    assert not y.requires_grad
    y = xad.checkpoint(lambda t: t * 2, w)
    assert not y.requires_grad
    same(y, xad.full((3,), 2.0, dtype=F64))


def _saved_arrays(y):
    """Arrays held for backward by the graph behind ``y`` (saved tensors and outputs)."""
    seen, stack, ids = set(), [y._node], set()
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        for s in n.saved or ():
            if isinstance(s, xad.Tensor):
                ids.add(id(s._array))
        outs = n.out if isinstance(n.out, tuple) else (n.out,)
        ids.update(id(o) for o in outs if o is not None)
        ctx = n.ctx
        if ctx is not None:
            ids.update(id(t._array) for t in ctx._saved if isinstance(t, xad.Tensor))
        stack.extend(e[0] for e in n.edges if type(e) is tuple)
    return len(ids)


def test_memory_saved_on_a_deep_stack(xb):
    blocks = make_blocks(12)
    x = xad.randn(4, 6, dtype=F64, requires_grad=True)
    plain = _saved_arrays(run(blocks, x, False))
    ck = _saved_arrays(run(blocks, x, True))
    # without: every block keeps its input, its pre-activation, tanh's output and the mask;
    # with: only what depends on weights alone (none here) plus the loss's own node
    assert plain >= 12 * 3
    assert ck <= 3, (plain, ck)
    y = run(blocks, x, True)
    y.backward()  # still works after dropping them
    assert x.grad is not None


def test_function_that_changes_its_graph_is_refused(xb):
    calls = []

    def f(u):
        calls.append(1)
        return xad.sin(u) if len(calls) == 1 else xad.cos(u)

    x = xad.tensor([1.0], dtype=F64, requires_grad=True)
    y = xad.checkpoint(f, x).sum()
    with pytest.raises(RuntimeError, match="different graph"):
        y.backward()


def test_not_callable():
    with pytest.raises(TypeError, match="function"):
        xad.checkpoint(3, xad.ones(1))
