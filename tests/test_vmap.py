"""``xad.vmap``: against a Python loop on every backend, nested, composed with grad and jvp
(per-example gradients of an nn.Module), against torch.func.vmap; clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from op_table import CASES, make_inputs
from op_table import X as XAD

import xad
from xad.forward_mode import MissingRuleError

F = xad.nn.functional
rng = np.random.default_rng(0)
X = rng.standard_normal((4, 3, 5))     # a batch of 4 examples, each 3x5
V = rng.standard_normal((4, 5))        # a batch of 4 vectors
C = rng.standard_normal((2, 3, 5))     # an unbatched constant of higher rank
W = rng.standard_normal((6, 5))

# per-example functions of (x: 3x5, v: 5), with c, w closed over
FUNCS = {
    "elementwise": lambda x, v, c, w: xad.tanh(x) * v + xad.exp(-x * x) / (1 + v * v),
    "broadcast_up": lambda x, v, c, w: (x + c) * 2.0 - xad.maximum(x, 0.1),
    "reduce": lambda x, v, c, w: x.sum(axis=-1) + x.mean(axis=0).sum() + xad.max(x, axis=1),
    "keepdims": lambda x, v, c, w: x / x.sum(axis=-1, keepdims=True) + x.prod(),
    "shape": lambda x, v, c, w: xad.reshape(x.T, (15,))[2:9] + x[1, ::2].sum(),
    "matmul": lambda x, v, c, w: xad.matmul(x, v) + xad.matmul(v, v) + (x @ w.T).sum(),
    "linear": lambda x, v, c, w: F.linear(xad.tanh(x), w, v[:-1].sum() + xad.zeros(6)),
    "softmax_norm": lambda x, v, c, w: xad.softmax(x, axis=-1) + F.layer_norm(x, (5,)),
    "concat_where": lambda x, v, c, w: xad.where(x > 0, x, v * 0.5) + xad.concat(
        [x, x * 2], axis=0)[:3],
    "stack_relu": lambda x, v, c, w: xad.stack([F.relu(v), xad.sigmoid(v)], axis=-1),
}


def _on_numpy(fn):
    """``fn()`` on NumPy: the per-example loops that the tests hold ``vmap`` against are
    computed there, so every backend meets the same reference and JAX compiles no loop."""
    with xad.use_backend("numpy"):
        return fn()


def _args():
    return xad.tensor(X), xad.tensor(V), xad.tensor(C), xad.tensor(W)


@pytest.mark.parametrize("name", list(FUNCS))
def test_vmap_matches_a_loop(name, xb):
    f = FUNCS[name]
    x, v, c, w = _args()
    got = xad.vmap(f, in_axes=(0, 0, None, None))(x, v, c, w)

    def loop():
        x, v, c, w = _args()
        return np.stack([f(x[i], v[i], c, w).numpy() for i in range(4)])
    want = _on_numpy(loop)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12, err_msg=name)


def test_in_and_out_axes(xb):
    x = xad.tensor(X)
    got = xad.vmap(lambda a: a * a.sum(), in_axes=1, out_axes=1)(x)
    want = np.stack([(X[:, i] * X[:, i].sum()) for i in range(3)], axis=1)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    const = xad.vmap(lambda a: xad.tensor(2.0) + 0.0, in_axes=0)(x)
    assert const.shape == (4,)


def test_nested_vmap(xb):
    x = xad.tensor(X)
    got = xad.vmap(xad.vmap(lambda r: (r * r).sum() - r.max()))(x)
    np.testing.assert_allclose(got.numpy(), (X * X).sum(-1) - X.max(-1), rtol=1e-12)
    y = xad.tensor(V)
    outer = xad.vmap(xad.vmap(lambda a, b: a * b, in_axes=(0, None)), in_axes=(None, 0))(
        xad.tensor(V[0]), y)
    np.testing.assert_allclose(outer.numpy(), np.einsum("j,bk->bjk", V[0], V), rtol=1e-12)


def _mlp():
    xad.manual_seed(0)
    return xad.nn.Sequential(xad.nn.Linear(5, 8), xad.nn.Tanh(), xad.nn.Linear(8, 3))


def test_per_example_gradients(xb):
    model = _mlp()
    params = {k: p.detach() for k, p in model.named_parameters()}
    x = xad.tensor(V, dtype=xad.float32)
    y = xad.tensor(rng.standard_normal((4, 3)), dtype=xad.float32)

    def loss(p, xi, yi):
        out = xad.nn.functional_call(model, p, (xi,))
        return ((out - yi) ** 2).mean()

    per = xad.vmap(xad.grad(loss), in_axes=(None, 0, 0))(params, x, y)
    assert not any(g.requires_grad for g in per.values())  # plain values, no graph kept
    _check_per_example(per, loss, params, x, y, rtol=1e-5, atol=1e-6)


def test_per_example_weight_gradients_keep_the_weights_layout():
    """``x @ w.T`` (by hand and as ``nn.Linear``) under ``vmap(grad)``: each example's weight
    gradient comes back contiguous in ``w``'s layout, as torch.func's (was a transposed
    view, copied again by the next reshape), and equal to a loop's bit for bit."""
    lin = xad.nn.Linear(5, 3)
    params = {"w": xad.tensor(W, dtype=xad.float32), "v": lin.weight.detach()}
    x = xad.tensor(V, dtype=xad.float32)

    def loss(p, xi):
        h = xad.tanh(xi @ p["w"].T)
        return (xad.nn.functional_call(lin, {"weight": p["v"], "bias": lin.bias}, (h[:5],))
                ** 2).sum()

    with xad.use_backend("numpy"):
        per = xad.vmap(xad.grad(loss), in_axes=(None, 0))(params, x)
        for k, g in per.items():
            assert g.array.flags.c_contiguous, k
            for i in range(4):
                np.testing.assert_array_equal(g.numpy()[i],
                                              xad.grad(loss)(params, x[i])[k].numpy())


def test_large_outer_products_are_broadcastings_products():
    """NumPy's outer product (``matmul`` with k = 1) by ``einsum`` past 2**16 elements gives
    broadcasting's numbers bit for bit, batched and broadcast alike."""
    b = xad.resolve_backend("numpy")
    for xs, ys in [((2, 64, 1), (2, 1, 600)), ((64, 1), (3, 1, 1100)), ((300, 1), (1, 300))]:
        x, y = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ys)
        np.testing.assert_array_equal(b.outer(x, y.astype(np.float32)), x * y.astype(np.float32))


def _check_per_example(per, loss, params, *data, rtol, atol):
    """``per`` (per-example gradients of ``loss`` for ``params``) against a loop on NumPy."""
    hp = {k: p.numpy() for k, p in params.items()}
    hd = [d.numpy() for d in data]

    def loop():
        p = {k: xad.tensor(a) for k, a in hp.items()}
        ds = [xad.tensor(a) for a in hd]
        return [{k: g.numpy() for k, g in xad.grad(loss)(p, *[d[i] for d in ds]).items()}
                for i in range(len(hd[0]))]
    for i, gi in enumerate(_on_numpy(loop)):
        for k in hp:
            np.testing.assert_allclose(per[k].numpy()[i], gi[k], rtol=rtol, atol=atol,
                                       err_msg=k)


def test_vmap_of_jvp_and_jvp_of_vmap(xb):
    x, t = xad.tensor(V), xad.tensor(rng.standard_normal((4, 5)))
    f = lambda a: xad.tanh(a) * a.sum()  # noqa: E731
    a = xad.vmap(lambda p, q: xad.jvp(f, (p,), (q,))[1])(x, t)
    b = xad.jvp(xad.vmap(f), (x,), (t,))[1]
    want = np.stack([xad.jvp(f, (x[i],), (t[i],))[1].numpy() for i in range(4)])
    np.testing.assert_allclose(a.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(b.numpy(), want, rtol=1e-12)


def _pair_loss(w, x):
    return (xad.tanh(x @ w) ** 2).sum() * (w * w).sum()


def test_grad_of_a_vmapped_grad(xb):
    """A gradient through vmap (the argument requires grad outside): against a loop."""
    inner = lambda a, x: xad.grad(_pair_loss)(a, x).sum()  # noqa: E731
    inner_x = lambda a, x: xad.grad(_pair_loss, argnums=1)(a, x).sum()  # noqa: E731

    def loop():
        w, xs = xad.tensor(W[:3, :2]), xad.tensor(V[:, :3])
        return (sum(xad.grad(inner)(w, xs[i]).numpy() for i in range(4)),
                np.stack([xad.grad(inner_x, argnums=1)(w, xs[i]).numpy() for i in range(4)]))
    want_w, want_x = _on_numpy(loop)
    w, xs = xad.tensor(W[:3, :2]), xad.tensor(V[:, :3])
    outer = lambda a: xad.vmap(xad.grad(_pair_loss), in_axes=(None, 0))(a, xs).sum()  # noqa: E731
    np.testing.assert_allclose(xad.grad(outer)(w).numpy(), want_w, rtol=1e-12)
    by_x = xad.grad(lambda a: xad.vmap(xad.grad(_pair_loss, argnums=1), in_axes=(None, 0))(
        w, a).sum())(xs)  # through the mapped argument
    np.testing.assert_allclose(by_x.numpy(), want_x, rtol=1e-12)


def test_grad_of_a_vmapped_grad_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    wh, xh = W[:3, :2], V[:, :3]
    jf = lambda w, x: (jnp.tanh(x @ w) ** 2).sum() * (w * w).sum()  # noqa: E731
    want = jax.jit(jax.grad(lambda w: jax.vmap(jax.grad(jf), in_axes=(None, 0))(
        w, xh).sum()))(wh)  # jitted: one compilation, not one per operation
    with xad.use_backend("numpy"):
        xs = xad.tensor(xh)
        got = xad.grad(lambda w: xad.vmap(xad.grad(_pair_loss), in_axes=(None, 0))(
            w, xs).sum())(xad.tensor(wh))
    np.testing.assert_allclose(got.numpy(), np.asarray(want), rtol=1e-12)


def test_against_torch_func():
    torch = pytest.importorskip("torch")
    from torch.func import grad as tgrad
    from torch.func import vmap as tvmap
    with xad.use_backend("numpy"):
        w = xad.tensor(W)
        f = lambda x, v: (xad.tanh(F.linear(x, w)) ** 2).sum() * v.sum()  # noqa: E731
        tw = torch.tensor(W)
        tf = lambda x, v: (torch.tanh(x @ tw.T) ** 2).sum() * v.sum()  # noqa: E731
        got = xad.vmap(xad.grad(f))(xad.tensor(X), xad.tensor(V))
        want = tvmap(tgrad(tf))(torch.tensor(X), torch.tensor(V))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
        got = xad.vmap(f)(xad.tensor(X), xad.tensor(V))
        np.testing.assert_allclose(got.numpy(), tvmap(tf)(torch.tensor(X), torch.tensor(V)),
                                   rtol=1e-12)


def test_errors(xb):
    a = xad.tensor(rng.standard_normal((3, 2, 2)))
    def set_some(p):
        q = p * 1.0
        q[[0, 1]] = 1.0  # index_put by an integer array: no batching rule yet
        return q

    with pytest.raises(NotImplementedError, match="'index_put' has no batching rule"):
        xad.vmap(set_some)(a)
    with pytest.raises(ValueError, match="different sizes"):
        xad.vmap(lambda p, q: p + q)(xad.tensor(X), xad.tensor(V[:3]))
    with pytest.raises(ValueError, match="randomness must be one of"):
        xad.vmap(lambda p: p, randomness="differ")
    with pytest.raises(NotImplementedError, match="bool mask that is batched"):
        xad.vmap(lambda p: p[p > 0])(a)


# ----- advanced indexing, attention, convolution ---------------------------------------------
J = np.array([2, 0, 2])
INDEXING = {  # per-example x: 3x5 (a batch of 4), i: a per-example index vector of 2
    "array": lambda x, i: x[:, J] * 2.0,
    "int_and_array": lambda x, i: x[1, [4, 0]],
    "split_by_slice": lambda x, i: x[[0, 2], :][:, [1, 1]] + x[None, [0, 1], 2].sum(),
    "mask": lambda x, i: x[X[0] > 0],
    "ellipsis": lambda x, i: x[..., [1, 1, 0]],
    "batched_index": lambda x, i: x[i] + x[:, i].sum(),
    "index_only_batched": lambda x, i: xad.tensor(C[0])[i, 1:],
}


@pytest.mark.parametrize("name", list(INDEXING))
def test_advanced_indexing(name, xb):
    f = INDEXING[name]
    loss = lambda a, j: (f(a, j) ** 2).sum()  # noqa: E731
    idx = np.array([[0, 2], [1, 1], [2, 0], [0, 0]])

    def loop():
        x, i = xad.tensor(X), xad.tensor(idx)
        return (np.stack([f(x[b], i[b]).numpy() for b in range(4)]),
                np.stack([xad.grad(loss)(x[b], i[b]).numpy() for b in range(4)]))
    want, want_g = _on_numpy(loop)
    x, i = xad.tensor(X), xad.tensor(idx)
    np.testing.assert_allclose(xad.vmap(f)(x, i).numpy(), want, rtol=1e-14, err_msg=name)
    g = xad.vmap(xad.grad(loss))(x, i)
    np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-12, err_msg=name)


def test_attention(xb):
    hq, hk = rng.standard_normal((4, 2, 3, 5)), rng.standard_normal((2, 6, 5))
    f = lambda a, b: F.scaled_dot_product_attention(a, b, b * 0.5)  # noqa: E731
    loss = lambda a, b: f(a, b).sum() ** 2  # noqa: E731

    def loop():
        q, k = xad.tensor(hq), xad.tensor(hk)
        return (np.stack([f(q[b], k).numpy() for b in range(4)]),
                np.stack([xad.grad(loss, argnums=1)(q[i], k).numpy() for i in range(4)]))
    want, want_g = _on_numpy(loop)
    q, k = xad.tensor(hq), xad.tensor(hk)
    np.testing.assert_allclose(xad.vmap(f, in_axes=(0, None))(q, k).numpy(), want, rtol=1e-12)
    g = xad.vmap(xad.grad(loss, argnums=1), in_axes=(0, None))(q, k)
    np.testing.assert_allclose(g.numpy(), want_g, rtol=1e-10)


def test_per_example_gradients_of_a_cnn(xb):
    """vmap(grad) through conv (im2col), max pooling, cross-entropy (an integer-array index
    per example) against a Python loop."""
    nn = xad.nn
    xad.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(3 * 3 * 3, 4))
    params = {k: p.detach() for k, p in model.named_parameters()}
    xs = xad.tensor(rng.standard_normal((3, 1, 6, 6)), dtype=xad.float32)
    ys = xad.tensor(np.array([0, 3, 1]))

    def loss(p, x, y):
        return F.cross_entropy(xad.nn.functional_call(model, p, (x[None],)), y[None])

    per = xad.vmap(xad.grad(loss), in_axes=(None, 0, 0))(params, xs, ys)
    _check_per_example(per, loss, params, xs, ys, rtol=1e-4, atol=1e-5)


def test_out_of_range_target_under_vmap_raises(xb):
    """The range check of cross-entropy's targets runs under vmap over every example (one
    bad target among good ones raises; never a number read from outside the row)."""
    logits = xad.tensor(rng.standard_normal((3, 2, 4)))
    loss = lambda z, y: F.cross_entropy(z, y)  # noqa: E731
    good = xad.tensor(np.array([[0, 3], [1, 2], [3, 3]]))
    assert xad.vmap(loss)(logits, good).shape == (3,)
    with pytest.raises(IndexError, match="out of bounds"):
        xad.vmap(loss)(logits, xad.tensor(np.array([[0, 3], [1, 4], [3, 3]])))
        xb.synchronize()


def test_index_range_checks_per_example(xb):
    """An out-of-range class index inside vmap raises, as in a loop (the range check's
    reduction has a batching rule: one [-min, max] pair per example)."""
    logits = xad.tensor(rng.standard_normal((3, 4)), dtype=xad.float32)
    ce = lambda z, y: F.cross_entropy(z[None], y[None])  # noqa: E731
    ok = xad.vmap(ce)(logits, xad.tensor(np.array([0, 3, 1])))
    assert ok.shape == (3,)
    with pytest.raises(IndexError):
        xad.vmap(ce)(logits, xad.tensor(np.array([0, 4, 1]))).tolist()  # (CuPy: at a read)


# ----- randomness ----------------------------------------------------------------------------
def test_randomness_modes(xb):
    """As torch.func.vmap: "error" raises, "different" draws one sample per example (the
    draw of the batch shape), "same" one sample for the whole batch."""
    xs = xad.tensor(np.arange(1.0, 13.0).reshape(4, 3))
    drop = lambda x: F.dropout(x, 0.5)  # noqa: E731
    with pytest.raises(RuntimeError, match="rand draws random numbers inside vmap"):
        xad.vmap(drop)(xs)
    ones = lambda *s: xad.ones(*s, dtype=xs.dtype)  # noqa: E731
    for mode, shape in (("different", (4, 3)), ("same", (3,))):
        xad.manual_seed(3)
        got = xad.vmap(drop, randomness=mode)(xs)
        xad.manual_seed(3)
        np.testing.assert_array_equal(got.numpy(), (xs * F.dropout(ones(*shape), 0.5)).numpy())
    kept = {tuple(r) for r in (got.numpy() != 0)}
    assert len(kept) == 1 and len({tuple(r) for r in (xad.vmap(  # "different": masks differ
        drop, randomness="different")(xs).numpy() != 0)}) > 1
    xad.manual_seed(0)
    nested = xad.vmap(xad.vmap(lambda x: x * 0 + xad.rand(()), randomness="different"),
                      randomness="same")(xs).numpy()
    assert (nested == nested[:1]).all() and len(set(nested[0].tolist())) == 3
    with pytest.raises(NotImplementedError, match="randperm, multinomial"):
        xad.vmap(lambda x: x + xad.randperm(3), randomness="different")(xs)
    assert xad.vmap(lambda x: x * 0 + xad.randperm(3), randomness="same")(xs).shape == (4, 3)


def test_randomness_different_matches_a_loop():
    """One draw per example, in the order a loop makes them (NumPy's stream), also under
    grad: per-example gradients through dropout."""
    with xad.use_backend("numpy"):
        w = xad.tensor(W)
        xs = xad.tensor(V)

        def loss(w_, x):
            return (F.dropout(F.linear(x, w_), 0.3) ** 2).sum()

        xad.manual_seed(11)
        got = xad.vmap(xad.grad(loss), in_axes=(None, 0), randomness="different")(w, xs)
        xad.manual_seed(11)
        want = np.stack([xad.grad(loss)(w, xs[i]).numpy() for i in range(4)])
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
        xad.manual_seed(2)
        got = xad.vmap(lambda x: x * xad.randn(5), randomness="different")(xs)
        xad.manual_seed(2)
        want = np.stack([(xs[i] * xad.randn(5)).numpy() for i in range(4)])
        np.testing.assert_array_equal(got.numpy(), want)


# ----- every op-table case, batched, against a loop ----------------------------------------
_LOOPS: dict = {}
_UNBATCHED = ("recurrent", "index_put")  # without a batching rule (docs/TRANSFORMS.md)


def _case_fn(case):
    def f(*a):
        out = case.fn(XAD, *a)
        return list(out) if isinstance(out, (tuple, list)) else [out]
    return f


def _loop(case, hosts):
    """The case on each of the two examples, computed once, on NumPy."""
    if case.name not in _LOOPS:
        f = _case_fn(case)
        _LOOPS[case.name] = _on_numpy(lambda: [[o.numpy() for o in f(*[
            xad.tensor(h[i], dtype=xad.float64) for h in hosts])] for i in range(2)])
    return _LOOPS[case.name]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_batch_rule(case, xb):
    """vmap over two examples of each op-table case equals the loop, or raises naming what
    has no batching rule (never a wrong number)."""
    hosts = [np.stack([a, a * 1.01 + 0.001]) for a in make_inputs(case)]
    try:
        got = xad.vmap(_case_fn(case))(*[xad.tensor(h, dtype=xad.float64) for h in hosts])
    except (MissingRuleError, NotImplementedError) as e:  # refused by name: no number
        assert any(f"'{p}' has no batching rule" in str(e) for p in _UNBATCHED), e
        return
    for i, want in enumerate(_loop(case, hosts)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy()[i], w, rtol=1e-10, atol=1e-12,
                                       err_msg=case.name)
