"""The eager fused paths of issue 25 item 3 (``xad/ops/fused.py``): each gives the numbers of
the rule it replaces on every backend, and is the number of kernels it promises on
``cupy-sim``. Gradients against finite differences and second derivatives are the op table's
(tests/op_table.py: ``gelu``, ``softmax``, ``standardize``, ``attention``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from same_numbers import assert_same_numbers

import xad
from xad.ops import fused


def _arrays(xb, dt, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [xad.tensor(rng.standard_normal(s), dtype=dt) for s in shapes]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_array_kernels_equal_their_plain_expressions(xb, dtype):
    """Bit for bit: one kernel on CuPy, the same operations one by one elsewhere."""
    dt = getattr(xad, dtype)
    g, y = (t._array for t in _arrays(xb, dt, (4, 5), (4, 5)))
    b, xp = xb, xb.xp
    with b.on_device():
        s1, s2 = xp.sum(g, axis=-1, keepdims=True), xp.sum(g * y, axis=-1, keepdims=True)
        rstd = 1.0 / xp.sqrt(s2 * s2 + 1.0)
        m = xp.where(s1 > 0, -math.inf, s1)  # rows with no finite entry
        e = xp.exp(g - xp.where(xp.isfinite(m), m, 0))
        pairs = [
            (fused.standardize_grad(b, g, y, s1, s2, rstd, 0.2),
             (g - s1 * 0.2 - y * (s2 * 0.2)) * rstd),
            (fused.softmax_grad(b, g, y, s1), g - y * s1),
            (fused.product_grad(b, g, y, s1, 0.3), (g * y - y * s1) * 0.3),
            (fused.product_grad(b, g, y, s1), g * y - y * s1),
            (fused.softmax_out(b, g, s1, s2, 0.3), xp.exp((g - s1) * 0.3) / s2),
            (fused.softmax_out_guarded(b, g, m, s2), e / xp.where(s2 > 0, s2, 1)),
            (fused.centred_scaled(b, g, s1, 0.2, rstd), (g - s1 * 0.2) * rstd),
            (fused.layer_norm_input_grad(b, g, y[0, ...], y, s1, s2, rstd, 0.2),
             (g * y[0, ...] - s1 * 0.2 - y * (s2 * 0.2)) * rstd),
            (fused.exp_guarded(b, g, m), e),
            (fused.divide_guarded(b, e, s2 - s2), e / xp.ones_like(s2)),
        ]
        d = g - s1 * 0.2
        pairs += [
            (fused.centred_affine(b, g, s1, 0.2, rstd, y[0, ...], y[1, ...]),
             (d * rstd * y[0, ...] + y[1, ...], d * rstd)),
            # kernels with one reduction: the same operations one by one
            (fused.centred_rstd(b, g, s1, (1,), 0.2, 1e-5),
             1.0 / xp.sqrt(xp.sum(d * d, axis=1, keepdims=True) * 0.2 + 1e-5)),
            (fused.sum_product(b, g, y, (1,)), xp.sum(g * y, axis=1, keepdims=True)),
            (fused.sum_product(b, g, y, (0, 1), y[0, ...]),
             xp.sum(g * y * y[0, ...], axis=(0, 1), keepdims=True)),
            (fused.sum_exp_shifted(b, g, s1, (1,)), xp.sum(xp.exp(g - s1), axis=1,
                                                            keepdims=True)),
            (fused.sum_exp_shifted(b, g, s1, (1,), 0.3),
             xp.sum(xp.exp((g - s1) * 0.3), axis=1, keepdims=True)),
            (fused.sum_exp_guarded(b, g, m, (1,)), xp.sum(e, axis=1, keepdims=True)),
        ]
        for got, want in pairs:
            for a, c in zip(*((got, want) if type(want) is tuple else ((got,), (want,)))):
                assert a.dtype == c.dtype and a.shape == c.shape
                assert_same_numbers(xb, b.to_numpy(a), b.to_numpy(c))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_exact_gelu_and_its_gradient_equal_the_composed_rule(xb, dtype):
    """``gelu`` and ``gelu_grad`` (one kernel each on CuPy) give the bits of the composed
    ``x * (erf(x / sqrt(2)) + 1) * 0.5`` and of its recorded gradient."""
    dt = getattr(xad, dtype)
    x, g = _arrays(xb, dt, (3, 7), (3, 7))
    x = x * 3.0
    x.requires_grad = True
    composed = x * (xad.erf(x * (1 / math.sqrt(2))) + 1) * 0.5
    (want,) = xad.autograd.grad(composed, [x], g)
    y = xad.gelu(x)
    (got,) = xad.autograd.grad(y, [x], g)
    assert y.dtype is got.dtype is dt
    assert_same_numbers(xb, y.numpy(), composed.detach().numpy())
    assert_same_numbers(xb, got.numpy(), want.numpy())


def test_exact_gelu_of_float16_stays_float16(xb):
    """CuPy's ``erf`` of float16 is float64: that dtype runs unfused and is cast back."""
    if xb._dtypes.get(xad.float16) is None:
        pytest.skip(f"{xb.name} has no float16")
    x = xad.tensor([-2.0, -0.5, 0.0, 0.5, 2.0], dtype=xad.float16, requires_grad=True)
    y = xad.gelu(x)
    (gx,) = xad.autograd.grad(y.sum(), [x])
    assert y.dtype is gx.dtype is xad.float16
    ref = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.detach().tolist()]
    np.testing.assert_allclose(y.tolist(), ref, atol=2e-3)


def _first_and_recorded(fn, *ts):
    """Input gradients of ``sum(fn(*ts) * w)`` by the first-order rule and by the recorded
    (``create_graph``) one."""
    out = fn(*ts)
    w = xad.tensor(np.random.default_rng(1).standard_normal(out.shape), dtype=out.dtype)
    first = xad.autograd.grad((out * w).sum(), ts)
    again = xad.autograd.grad((fn(*ts) * w).sum(), ts, create_graph=True)
    return first, again


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_log_softmax_equals_the_shifted_formula(xb, dtype):
    """The LogSoftmax node's forward gives the bits of ``(x - m) - log(sum(exp(x - m)))``
    (``m`` the maximum: PyTorch's formula; ``x - logsumexp(x)`` rounds ``log 2`` away
    beside ``m = 1e30``)."""
    dt = getattr(xad, dtype)
    (x,) = _arrays(xb, dt, (3, 5))
    x = xad.where(x > 1.0, -math.inf, x) * 4.0  # some -inf entries
    m = xad.max(x, axis=-1, keepdims=True)
    want = (x - m) - xad.log(xad.sum(xad.exp(x - m), axis=-1, keepdims=True))
    assert_same_numbers(xb, xad.log_softmax(x, axis=-1).numpy(), want.numpy())


def test_log_softmax_of_integers_is_the_default_float(xb):
    """Integers go to the default floating dtype first, as ``exp`` of them does (the node
    once ran on the integers and gave float64 where the default is float32)."""
    x = xad.tensor([[1, 2, 3], [0, 0, 5]])
    y = xad.log_softmax(x, axis=-1)
    assert y.dtype == xad.exp(x).dtype == xad.float32
    assert_same_numbers(xb, y.numpy(), xad.log_softmax(x.astype(xad.float32)).numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_host_paths_equal_the_fused_kernels(xb, dtype):
    """Where a backend does not fuse, softmax, layer norm and their rules run the kernels'
    operations one by one with shared values computed once (``exp(x - m)``, ``x - mean``,
    ``g * w``): bit for bit what the fused kernels give, on every backend (CuPy's path)."""
    from xad.ops.normalization import AddLayerNorm, LayerNorm, LayerNormGrad
    from xad.ops.reduce import Softmax, SoftmaxGrad

    dt = getattr(xad, dtype)
    x, t, c, g = (v._array for v in _arrays(xb, dt, (2, 3, 4), (2, 3, 4), (4,), (2, 3, 4)))
    w, bias = (v._array for v in _arrays(xb, dt, (4,), (4,), seed=1))
    b, xp, ax = xb, xb.xp, (2,)
    with b.on_device():
        m = xp.max(x, axis=2, keepdims=True)
        y = fused.softmax_out(b, x, m, fused.sum_exp_shifted(b, x, m, ax))
        s = fused.sum_product(b, g, y, ax)
        total = xp.sum(x, axis=2, keepdims=True)
        rstd = fused.centred_rstd(b, x, total, ax, 0.25, 1e-5)
        out, z = fused.centred_affine(b, x, total, 0.25, rstd, w, bias)
        tot3 = fused.sum_of_sum(b, x, t, ax, c)
        rstd3 = fused.centred_rstd(b, x, tot3, ax, 0.25, 1e-5, t, c)
        out3, z3 = fused.centred_affine(b, x, tot3, 0.25, rstd3, w, bias, t, c)
        s1, s2 = fused.sum_product(b, g, w, ax), fused.sum_product(b, g, w, ax, z)
        pairs = [
            (Softmax.forward(b, x, ax, False, False), y),
            (SoftmaxGrad.forward(b, g, y, ax, False), fused.product_grad(b, g, y, s)),
            (LayerNorm.forward(b, x, w, bias, ax, 1e-5, False), (out, z, rstd)),
            (AddLayerNorm.forward(b, x, t, c, w, bias, ax, 1e-5, False), (out3, z3, rstd3)),
            (LayerNormGrad.forward(b, g, z, w, rstd, ax, False, 0.25),
             (fused.layer_norm_input_grad(b, g, w, z, s1, s2, rstd, 0.25),
              xp.reshape(fused.sum_product(b, g, z, (0, 1)), (4,))))]
    for got, want in pairs:
        for a, e in zip(*((got, want) if isinstance(got, tuple) else ((got,), (want,)))):
            assert_same_numbers(xb, b.to_numpy(a), b.to_numpy(e))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_node_equals_the_composed_operations(xb, dtype):
    """F.layer_norm with weight and bias (one LayerNorm node) gives the bits of
    ``standardize(x) * w + b`` and of its gradients."""
    from xad.ops.normalization import layer_norm

    dt = getattr(xad, dtype)
    x, w, b, g = _arrays(xb, dt, (2, 3, 4), (4,), (4,), (2, 3, 4))
    for t in (x, w, b):
        t.requires_grad = True
    want = xad.standardize(x, -1) * w + b
    got = layer_norm(x, (2,), w, b)
    assert_same_numbers(xb, got.detach().numpy(), want.detach().numpy())
    for a, c in zip(xad.autograd.grad(got, [x, w, b], g), xad.autograd.grad(want, [x, w, b], g)):
        assert a.dtype is dt
        assert_same_numbers(xb, a.numpy(), c.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_add_layer_norm_equals_layer_norm_of_the_sum(xb, dtype):
    """AddLayerNorm (the sum never stored) gives the bits of ``layer_norm(x + t)`` and of
    its gradients; a post-norm encoder layer runs it, with the same numbers as with a hook
    on its norm (which keeps the plain sum and norm)."""
    from xad.ops.normalization import add_layer_norm, layer_norm

    dt = getattr(xad, dtype)
    x, t, w, b, g = _arrays(xb, dt, (2, 3, 4), (2, 3, 4), (4,), (4,), (2, 3, 4))
    for v in (x, t, w, b):
        v.requires_grad = True
    got, want = add_layer_norm(x, t, (2,), w, b), layer_norm(x + t, (2,), w, b)
    assert got._node.name == "add_layer_norm"
    assert_same_numbers(xb, got.detach().numpy(), want.detach().numpy())
    for a, c in zip(xad.autograd.grad(got, [x, t, w, b], g),
                    xad.autograd.grad(want, [x, t, w, b], g)):
        assert_same_numbers(xb, a.numpy(), c.numpy())
    # with the bias of the linear layer that made t: as Linear's output and its bias sum
    (c,) = _arrays(xb, dt, (4,), seed=3)
    c.requires_grad = True
    lin = xad.linear(t, w.detach() * 0 + xad.eye(4, dtype=dt), c)  # t + c, through Linear
    got = add_layer_norm(x, xad.linear(t, w.detach() * 0 + xad.eye(4, dtype=dt)), (2,), w, b,
                         t_bias=c)
    want = layer_norm(x + lin, (2,), w, b)
    assert_same_numbers(xb, got.detach().numpy(), want.detach().numpy())
    for a, c_ in zip(xad.autograd.grad(got, [x, t, c, w, b], g),
                     xad.autograd.grad(want, [x, t, c, w, b], g)):
        assert_same_numbers(xb, a.numpy(), c_.numpy())
    xad.manual_seed(0)
    layer = xad.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True).to(dt)
    outs = []
    for hooked in (False, True):
        if hooked:
            layer.norm2.register_forward_hook(lambda m, a, out: None)
        y = layer(x)
        outs.append([y, *xad.autograd.grad(y, [x, layer.norm1.weight, layer.linear2.bias], g)])
    assert outs[0][0]._node.name == "add_layer_norm" != outs[1][0]._node.name
    for a, c in zip(*outs):
        assert_same_numbers(xb, a.detach().numpy(), c.detach().numpy())


@pytest.mark.parametrize("case", ["standardize", "softmax", "masked_softmax", "attention",
                                  "log_softmax", "layer_norm"])
def test_first_order_rules_equal_the_recorded_rules(xb, case):
    """StandardizeGrad, SoftmaxGrad, AttentionGrad, LogSoftmaxGrad and LayerNormGrad (fused
    kernels, not recorded) give the numbers of the same formulas in xad operations (what
    create_graph records)."""
    dt = xad.float64
    ts = _arrays(xb, dt, (2, 3, 4), (2, 5, 4), (2, 5, 2))
    for t in ts:
        t.requires_grad = True
    mask = xad.tensor(np.where(np.arange(4) < 2, -math.inf, 0.0))
    fns = {"standardize": lambda x: xad.standardize(x, -1),
           "softmax": lambda x: xad.softmax(x, axis=-1),
           "masked_softmax": lambda x: xad.softmax(x * 0.0 + mask, axis=-1, empty_zero=True)
           + xad.softmax(x + mask, axis=-1, empty_zero=True),
           "attention": lambda q, k, v: xad.ops.attention.attention(q, k, v, 0.5),
           "log_softmax": lambda x: xad.log_softmax(x, axis=1),
           "layer_norm": lambda x, w, b: xad.nn.functional.layer_norm(
               x, 4, w[0, 0], b[0, :2].reshape((4,)))}
    fn = fns[case]
    args = ts if case in ("attention", "layer_norm") else ts[:1]
    first, again = _first_and_recorded(fn, *args)
    for a, b in zip(first, again):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)


def _run(fn, *args, **kwargs):
    """``fn``'s result and the kernels it launched, from a synchronised start (no index
    check of an earlier call pending: its running maximum would add a kernel)."""
    from cupy_sim.streams import COUNTS

    xad.get_backend().synchronize()
    COUNTS.reset()
    out = fn(*args, **kwargs)
    return out, COUNTS.kernels


def test_fused_paths_launch_the_kernels_they_promise_on_cupy_sim():
    with xad.use_backend("cupy-sim"):
        x = xad.randn(8, 16, requires_grad=True)
        g = xad.randn(8, 16)
        for f, forward, backward in [
                (xad.gelu, 1, 1),                                      # was 5 and 9
                (lambda t: xad.standardize(t, -1), 3, 3),              # was 5 and 4 (9)
                (lambda t: xad.softmax(t, axis=-1), 3, 2),             # was 4 and 3 (4)
                (lambda t: xad.log_softmax(t, axis=-1), 3, 2),         # was 4 (9) and 2 (6)
                (lambda t: xad.softmax(t, axis=-1, empty_zero=True), 3, 2)]:  # 4 (10), 3
            y, n = _run(f, x)
            assert n == forward
            assert _run(xad.autograd.grad, y, [x], g)[1] == backward
        w, b = xad.randn(16, requires_grad=True), xad.randn(16, requires_grad=True)
        y, n = _run(xad.nn.functional.layer_norm, x, 16, w, b)
        assert n == 3  # was 5 (7): a sum, rstd's reduction kernel, the output
        # was 6 (4 + 3 + 1): three reduction kernels (sum(g w), sum(g w y), the weight's),
        # x's kernel, the bias's sum
        assert _run(xad.autograd.grad, y, [x, w, b], g)[1] == 5
        t = xad.randn(8, 16, requires_grad=True)
        y, n = _run(xad.ops.normalization.add_layer_norm, x, t, (1,), w, b)
        assert n == 3  # was 4: the sum
        assert _run(xad.ops.normalization.add_layer_norm, x, t, (1,), w, b, 1e-5, b)[1] == 3
        assert _run(xad.autograd.grad, y, [x, t, w, b], g)[1] == 5
        q, k, v = (xad.randn(2, 6, 4, requires_grad=True) for _ in range(3))
        y, n = _run(xad.ops.attention.attention, q, k, v, 0.5)
        assert n == 5  # was 6 (7): two products, the maximum, the sum's reduction kernel, p
        s = y.sum()
        assert _run(xad.autograd.grad, s, [q, k, v])[1] == 7  # 6 (was 7, 10), and the seed's


def test_nll_loss_is_two_reduction_kernels_on_cupy_sim():
    """``nll_loss`` without class weights: the rows' losses and the count of the targets
    that count as one reduction kernel each (the one-hot, its product, sums and negation
    were eight kernels, eleven with an ignored class); the gradient one kernel."""
    with xad.use_backend("cupy-sim"):
        lp = xad.log_softmax(xad.randn(8, 10, requires_grad=True), axis=1)
        t = xad.tensor([1, 2, 3, 4, 5, 6, 7, 0])
        for kw in ({}, {"ignore_index": 1}):
            # the range check (4; its running maximum is one more when an earlier check
            # is still pending, and the first call at a site makes that maximum), arange,
            # the rows, their sum, the count, the division
            xad.nn.functional.nll_loss(lp, t, **kw)
            y, n = _run(xad.nn.functional.nll_loss, lp, t, **kw)
            assert n == 9  # was 13, and 16 with an ignored class
            assert _run(xad.autograd.grad, y, [lp])[1] == 3  # was 4


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nll_rows_equal_the_composed_one_hot_rule(xb, dtype):
    """NllRows and CountTargets give the bits of the composed selection they replace, and
    its gradient; a log-probability of -inf at another class than the target's does not
    enter (PyTorch's value; a one-hot product gave ``-inf * 0 = nan``)."""
    from xad.nn.functional import one_hot
    from xad.ops.nll import count_targets, nll_rows

    dt = getattr(xad, dtype)
    (x,) = _arrays(xb, dt, (6, 5))
    x = xad.where(x > 1.5, -math.inf, x)
    x.requires_grad = True
    t = xad.tensor([4, 0, -100, 2, 1, 3])
    oh = one_hot(xad.where(t < 0, 5, t), 5, dtype=dt)  # the ignored target: a zero row
    for ignore, w in ((None, oh), (1, oh * (t != 1).astype(dt).expand_dims(-1))):
        got, want = nll_rows(x, t, ignore), -xad.where(w != 0, x, 0.0).sum(axis=-1)
        assert_same_numbers(xb, got.detach().numpy(), want.detach().numpy())
        g = xad.tensor(np.arange(6.0), dtype=dt)
        assert_same_numbers(xb, xad.autograd.grad(got, [x], g)[0].numpy(),
                                      xad.autograd.grad(want, [x], g)[0].numpy())
        count = count_targets(t, 5, -100 if ignore is None else ignore, dt)
        assert count.dtype is dt and count.item() == w.sum().item()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mse_mean_equals_the_composed_mean_of_squares(xb, dtype):
    """MseMean (``mse_loss``'s mean, one node) gives the bits of ``((x - t) * (x - t)).mean()``
    and of its gradients, first order and recorded, and per example under ``vmap``."""
    from xad.ops.mse import mse_mean

    dt = getattr(xad, dtype)
    x, t = _arrays(xb, dt, (4, 3, 5), (4, 3, 5))
    for v in (x, t):
        v.requires_grad = True
    got, want = mse_mean(x, t), ((x - t) * (x - t)).mean()
    assert got._node.name == "mse_mean" and got.dtype is dt
    assert_same_numbers(xb, got.detach().numpy(), want.detach().numpy())
    for create in (False, True):
        for a, c in zip(xad.autograd.grad(got * 1.5, [x, t], retain_graph=True,
                                          create_graph=create),
                        xad.autograd.grad(want * 1.5, [x, t], retain_graph=True,
                                          create_graph=create)):
            assert_same_numbers(xb, a.detach().numpy(), c.detach().numpy())
    per = xad.vmap(mse_mean, in_axes=(0, None))(x.detach(), t.detach()[0])
    ref = [((x[i] - t[0]) * (x[i] - t[0])).mean().item() for i in range(4)]
    assert_same_numbers(xb, per.numpy(), np.asarray(ref, dtype=per.numpy().dtype))


def test_mse_loss_is_one_reduction_kernel_on_cupy_sim():
    with xad.use_backend("cupy-sim"):
        x, t = xad.randn(8, 10, requires_grad=True), xad.randn(8, 10)
        y, n = _run(xad.nn.functional.mse_loss, x, t)
        assert n == 1  # was 4: the difference, the square, the sum, the scaling
        assert _run(xad.autograd.grad, y, [x])[1] == 2  # the seed and one kernel (was 6)


def test_range_ends_reads_ignored_values_as_zero(xb):
    """Index range checks (embedding, nll_loss): ``[-min, max]`` with ``ignore`` as 0."""
    t = xad.tensor([3, -100, 7, 2])
    assert fused.range_ends(t).tolist() == [100, 7]
    assert fused.range_ends(t, -100).tolist() == [0, 7]
    assert fused.range_ends(t[2:], -100).tolist() == [-2, 7]


def test_range_check_is_three_kernels_and_the_running_maximum_on_cupy_sim():
    with xad.use_backend("cupy-sim"):
        t = xad.tensor([3, -100, 7, 2])
        # was 6 (where, min, -, max, stack); the stack of 2 is 2 copies in CuPy 14
        assert _run(fused.range_ends, t, -100)[1] == 4
        with pytest.raises(IndexError, match="target 9 is out of bounds"):
            xad.nn.functional.nll_loss(xad.zeros(2, 4), xad.tensor([9, 1])).item()


@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_linear_then_activation_in_a_sequential_gives_the_same_numbers(xb, act):
    """``Sequential(Linear, ReLU/GELU)`` runs one LinearAct node: the bits of the two
    layers called one by one, gradients included."""
    nn = xad.nn
    xad.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU() if act == "relu" else nn.GELU())
    (x,) = _arrays(xb, xad.float32, (5, 3))
    y = model(x)
    assert y._node.name == "linear_act"
    ref = model[1](model[0](x))
    assert ref._node.name == act
    assert_same_numbers(xb, y.detach().numpy(), ref.detach().numpy())
    ps = list(model.parameters())
    for a, b in zip(xad.autograd.grad(y.sum(), ps), xad.autograd.grad(ref.sum(), ps)):
        assert_same_numbers(xb, a.numpy(), b.numpy())


def test_linear_then_activation_is_not_fused_where_a_hook_would_see_it():
    nn = xad.nn
    seen = []
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2), nn.GELU("tanh"))
    model[1].register_forward_hook(lambda m, a, out: seen.append(out))
    y = model(xad.ones(2, 3))
    assert len(seen) == 1 and y._node.name != "linear_act"

    class Shifted(nn.Linear):
        def forward(self, x):
            return super().forward(x) + 1.0

    y = nn.Sequential(Shifted(3, 4), nn.ReLU())(xad.ones(2, 3))
    assert y._node.name == "relu"  # the subclass's own forward ran


def test_bias_and_activation_are_one_kernel_on_cupy_sim():
    with xad.use_backend("cupy-sim"):
        xad.manual_seed(0)
        for act in (xad.nn.ReLU(), xad.nn.GELU()):
            model = xad.nn.Sequential(xad.nn.Linear(16, 8), act)
            x = xad.randn(4, 16)
            assert _run(model, x)[1] == 2  # the product, then bias and activation (was 3)


@pytest.mark.parametrize("batch_first", [True, False])
def test_split_heads_equals_split_copy_reshape_and_permute(xb, batch_first):
    """MultiheadAttention's packed projection cut into heads by one copy: the arrays, and
    the gradient, of the three copies and permutations it replaced."""
    from xad.ops.attention import split_heads

    to_heads = (0, 2, 1, 3) if batch_first else (1, 2, 0, 3)
    (y,) = _arrays(xb, xad.float64, (6, 12))
    y.requires_grad = True
    got = split_heads(y, (2, 3), 2, to_heads)
    (g,) = _arrays(xb, xad.float64, got[0].shape, seed=1)
    want = [xad.permute_dims(p.reshape((2, 3, 2, 2)), to_heads)
            for p in xad.ops.split_copy(y, 4, axis=-1)]
    for a, b in zip(got, want):
        assert a.shape == b.shape
        assert_same_numbers(xb, a.detach().numpy(), b.detach().numpy())
    (ga,) = xad.autograd.grad(sum(((t * g * (i + 1)).sum() for i, t in enumerate(got))), [y])
    (gb,) = xad.autograd.grad(sum(((t * g * (i + 1)).sum() for i, t in enumerate(want))), [y])
    assert_same_numbers(xb, ga.numpy(), gb.numpy())


def test_split_heads_is_one_copy_kernel_on_cupy_sim():
    from xad.ops.attention import split_heads

    with xad.use_backend("cupy-sim"):
        y = xad.randn(6, 12, requires_grad=True)
        (q, k, v), n = _run(split_heads, y, (2, 3), 2, (0, 2, 1, 3))
        # one fused copy into a C-ordered array (was one join of 3, which CuPy 14 runs as 3
        # copies: at most 8 arrays)
        assert n == 1 and q._array.flags.c_contiguous
        gs = xad.ones(2, 2, 3, 2)
        # 2: the positions along the axis of 3 (arange) and one select kernel, C-ordered, so
        # reading it as y is a view (was 4: a join of 3, three copies in CuPy 14, and the
        # reshape of the emulator's join, which NumPy lays out as its strided inputs)
        assert _run(xad.autograd.grad, [q, k, v], [y], [gs, gs, gs])[1] == 2


def test_emulated_fused_outputs_are_c_ordered_as_cupys_elementwise_kernels():
    """CuPy's ElementwiseKernel allocates its outputs in C order whatever its inputs' layout
    (``_kernel.pyx``: ``_get_out_args_with_params``); the emulator's fused kernels too."""
    import cupy_sim

    cp = cupy_sim.cupy
    with xad.use_backend("cupy-sim"):
        a = cp.asarray(np.arange(24.0).reshape(2, 3, 4)).transpose(2, 0, 1)
        out = cp.fuse(lambda v: cp.positive(v))(a)
        assert out.flags.c_contiguous and not a.flags.c_contiguous
        np.testing.assert_array_equal(out.get(), a.get())


def test_emulated_fused_reduction_is_one_kernel_and_refuses_what_cupy_would_not_make():
    """tests/cupy_sim/fusion.py's reduction inside ``cupy.fuse`` (CuPy's old fusion): a
    pre-map over the broadcast arguments, one reduction, a post-map of the reduced value and
    literals; one launch (two for CUB's full reduction of one argument); the bits of the
    same calls one by one; refused where CuPy raises or would leave its old fusion."""
    import cupy_sim
    from cupy_sim.streams import COUNTS

    cp = cupy_sim.cupy
    with xad.use_backend("cupy-sim"):
        xn = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
        x, t = cp.asarray(xn), cp.asarray(xn.sum(axis=1, keepdims=True))

        @cp.fuse(kernel_name="rstd")
        def rstd(x, t, r):
            d = x - t * r
            return 1.0 / cp.sqrt(cp.sum(d * d, axis=-1) * 0.2 + 1e-5), cp.max(d, axis=0) * 2

        with pytest.raises(NotImplementedError, match="Multiple reduction"):
            rstd(x, t, np.float32(0.2))

        def one(x, t, r):
            d = x - t * r
            return 1.0 / cp.sqrt(cp.sum(d * d, axis=-1) * 0.2 + 1e-5)

        COUNTS.reset()
        got = cp.fuse(one)(x, t, np.float32(0.2))
        assert COUNTS.kernels == 1 and got.shape == (4,) and got.dtype == np.float32
        d = xn - xn.sum(axis=1, keepdims=True) * np.float32(0.2)
        np.testing.assert_array_equal(got.get(), 1.0 / np.sqrt(np.sum(d * d, axis=-1) * 0.2
                                                               + 1e-5))
        COUNTS.reset()
        assert cp.fuse(lambda v: cp.sum(v * v))(x).shape == () and COUNTS.kernels == 2  # CUB
        assert cp.fuse(lambda v, c: cp.max(v + c, axis=0))(x, t).shape == (5,)
        refused = [
            (NotImplementedError, "keepdims", lambda v, c: cp.sum(v, axis=1, keepdims=True)),
            (NotImplementedError, "reads only the reduced", lambda v, c: v - cp.sum(v, axis=1)),
            (NotImplementedError, "reads only the reduced", lambda v, c: cp.sum(v, axis=1) * c),
            (NotImplementedError, "returns only values", lambda v, c: (cp.sum(v, axis=1), v)),
            (TypeError, "dtype", lambda v, c: cp.sum(v, axis=1, dtype=np.float64))]
        for error, match, fn in refused:
            with pytest.raises(error, match=match):
                cp.fuse(fn)(x, t)
        with pytest.raises(NotImplementedError, match="broadcast"):  # fewer axes than (4, 5)
            cp.fuse(lambda v, w: cp.sum(w * 2, axis=0))(x, cp.asarray(xn[0]))
        # CuPy reduces the broadcast of all arguments: t's column counted five times
        np.testing.assert_array_equal(cp.fuse(lambda v, c: cp.sum(c * 2, axis=1))(x, t).get(),
                                      np.sum(np.broadcast_to(xn.sum(1, keepdims=True) * 2,
                                                             (4, 5)), axis=1))

        def write(v, c):
            c += 1.0  # into an argument: lost in CuPy's reduction kernel
            return cp.sum(v, axis=0)

        with pytest.raises(NotImplementedError, match="write into its arguments"):
            cp.fuse(write)(x, t)


@pytest.mark.parametrize("shape,out", [((5, 3), 4), ((2, 4, 3), 1), ((2048, 8), 64)])
def test_linear_first_order_rule_gives_the_recorded_rules_bits(xb, shape, out):
    """LinearGrad (one operation) gives the bits of the xad operations ``create_graph``
    records: N-d inputs, an output of width 1 (outer products), a bias summed as a product
    with ones (2**17 gradient elements on NumPy), float16's float32 accumulation (where the
    backend has float16); with and without the input's and the bias's gradients."""
    halves = [xad.float16] if xb._dtypes.get(xad.float16) is not None else []
    for dt in [xad.float32, xad.float64, *halves]:
        x, w, b = _arrays(xb, dt, shape, (out, shape[-1]), (out,))
        for wanted in ([x, w, b], [w, b], [x, w]):
            for t in wanted:
                t.requires_grad = True
            bias = b if any(t is b for t in wanted) else None
            first, again = _first_and_recorded(
                lambda *_, x=x, w=w, bias=bias: xad.nn.functional.linear(x, w, bias), *wanted)
            assert [g._node for g in first] == [None] * len(wanted)
            for a, c in zip(first, again):
                assert_same_numbers(xb, a.numpy(), c.detach().numpy())
            for t in wanted:
                t.requires_grad = False
