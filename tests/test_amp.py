"""Mixed precision: which operations autocast runs in which dtype, gradient dtypes, the
clear errors for missing dtypes, GradScaler's skip/backoff/growth sequence against PyTorch's,
its state dict, and an MLP trained in float16 that reaches the float32 loss."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import xad
import xad.nn as nn
import xad.nn.functional as F

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(7)
X = _RNG.standard_normal((6, 4)).astype(np.float32)
W = _RNG.standard_normal((5, 4)).astype(np.float32)
B = _RNG.standard_normal(5).astype(np.float32)


def _has(b: xad.Backend, dtype: xad.DType) -> bool:
    """Whether ``b`` has ``dtype``; where it has not, autocast must say so on entry."""
    if b._dtypes.get(dtype) is not None:
        return True
    with pytest.raises(TypeError, match=f"backend '{b.name}' has no {dtype.name}"):
        with xad.amp.autocast(dtype):
            pass
    return False


def _ops_under_autocast(x, w, b):
    """Every listed operation run once inside autocast: name -> result."""
    target = xad.tensor([0, 1, 2, 3, 4, 0])
    y = F.linear(x, w, b)
    return {
        "matmul": xad.matmul(x, w.mT), "@": x @ w.mT, "linear": y,
        "einsum": xad.einsum("ij,kj->ik", x, w), "tensordot": xad.tensordot(x, w.mT, 1),
        "softmax": F.softmax(y, -1), "log_softmax": F.log_softmax(y, -1),
        "logsumexp": xad.logsumexp(y, axis=-1), "sum": y.sum(), "mean": y.mean(),
        "var": xad.var(y), "prod": xad.prod(y, axis=0), "cumsum": xad.cumsum(y, axis=1),
        "layer_norm": F.layer_norm(y, 5), "batch_norm": F.batch_norm(y, None, None,
                                                                      training=True),
        "cross_entropy": F.cross_entropy(y, target), "nll_loss": F.nll_loss(y, target),
        "mse_loss": F.mse_loss(y, y.detach() * 0.5), "l1_loss": F.l1_loss(y, y * 0.5),
        "huber_loss": F.huber_loss(y, y * 0.5),
        "bce_with_logits": F.binary_cross_entropy_with_logits(y, y.detach() * 0),
        "relu": F.relu(y), "tanh": xad.tanh(y), "max": y.max(),   # no list: the input's dtype
        "add_f32": y + x[:, :1],                                   # promote: the widest
    }


LOW = {"matmul", "@", "linear", "einsum", "tensordot", "relu", "tanh", "max"}


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_which_ops_run_in_which_dtype(xb, low):
    d = getattr(xad, low)
    x = xad.tensor(X, requires_grad=True)
    w, b = xad.tensor(W, requires_grad=True), xad.tensor(B, requires_grad=True)
    if not _has(xb, d):
        return
    with xad.amp.autocast(d):
        assert xad.amp.is_autocast_enabled() and xad.amp.get_autocast_dtype() is d
        out = _ops_under_autocast(x, w, b)
    got = {k: v.dtype for k, v in out.items()}
    want = {k: d if k in LOW else xad.float32 for k in out}
    assert got == want
    total = sum(v.astype(xad.float32).sum() for v in out.values())
    total.backward()          # outside autocast: every rule in its forward's dtype
    assert (x.grad.dtype, w.grad.dtype, b.grad.dtype) == (xad.float32,) * 3
    assert not xad.amp.is_autocast_enabled()
    assert xad.matmul(x, w.mT).dtype is xad.float32      # nothing changes outside


def test_float64_is_never_cast_and_enabled_false_turns_off(xb):
    if not _has(xb, xad.float16):
        return
    x64 = xad.tensor(X.astype(np.float64))
    x = xad.tensor(X)
    with xad.amp.autocast(xad.float16):
        assert (x64 @ x64.mT).dtype is xad.float64
        with xad.amp.autocast(enabled=False):
            assert (x @ x.mT).dtype is xad.float32
        assert (x @ x.mT).dtype is xad.float16


def test_values_and_gradients_match_float32(xb):
    """Values and gradients under autocast float16 are the float32 ones to float16's
    precision, also inside a backward that runs while autocast is on."""
    if not _has(xb, xad.float16):
        return
    target = xad.tensor([0, 1, 2, 3, 0, 1])
    results = []
    for on in (False, True):
        w, b = xad.tensor(W, requires_grad=True), xad.tensor(B, requires_grad=True)
        with xad.amp.autocast(xad.float16, enabled=on):
            loss = F.cross_entropy(F.gelu(F.linear(xad.tensor(X), w, b)) @ w, target)
            loss.backward()
        results.append((loss.item(), w.grad.numpy(), b.grad.numpy()))
    (l32, gw32, gb32), (l16, gw16, gb16) = results
    assert l16 == pytest.approx(l32, rel=3e-3)
    np.testing.assert_allclose(gw16, gw32, rtol=2e-2, atol=2e-3)
    np.testing.assert_allclose(gb16, gb32, rtol=2e-2, atol=2e-3)


def test_astype_to_a_missing_dtype_is_a_clear_error(xb):
    for d in (xad.float16, xad.bfloat16):
        if xb._dtypes.get(d) is None:
            with pytest.raises(TypeError, match=f"backend '{xb.name}' has no dtype xad.{d.name}"):
                xad.ones(2).astype(d)
        else:
            assert xad.ones(2).astype(d).astype(xad.float32).tolist() == [1.0, 1.0]


def test_autocast_decorator_thread_local_and_bad_dtype():
    seen = []

    @xad.amp.autocast()
    def f():
        t = threading.Thread(target=lambda: seen.append(xad.amp.is_autocast_enabled()))
        t.start()
        t.join()
        return xad.amp.get_autocast_dtype()

    assert f() is xad.float16 and seen == [False] and not xad.amp.is_autocast_enabled()
    with pytest.raises(ValueError, match="float16 or xad.bfloat16, got xad.float32"):
        xad.amp.autocast(xad.float32)


# ----- GradScaler -------------------------------------------------------------------------
# each row: the gradient the loss sum(w * g) gives w (before scaling); inf and nan rows must
# be skipped and back the scale off; growth_interval=2 grows it after two clean steps
GRADS = [[1.0, -2.0, 0.5], [0.5, 0.5, 0.5], [np.inf, 1.0, 1.0], [1.0, 1.0, 1.0],
         [np.nan, 0.0, 0.0], [0.25, -1.0, 2.0], [1.0, 2.0, 3.0], [-1.0, 0.5, 0.0],
         [-np.inf, 0.0, 0.0], [0.5, 0.5, -0.5]]
KW = dict(init_scale=8.0, growth_factor=4.0, backoff_factor=0.25, growth_interval=2)


def _torch_run(rows, scaler=None):
    w = torch.zeros(3, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1, momentum=0.5)
    scaler = scaler or torch.amp.GradScaler("cpu", **KW)
    trace = []
    for g in rows:
        opt.zero_grad()
        scaler.scale((w * torch.tensor(g, dtype=torch.float32)).sum()).backward()
        before = w.detach().clone()
        scaler.step(opt)
        scaler.update()
        trace.append((scaler.get_scale(), not torch.equal(before, w.detach())))
    return trace, w.detach().numpy(), scaler


def _xad_run(rows, scaler=None):
    w = xad.zeros(3, requires_grad=True)
    opt = xad.optim.SGD([w], lr=0.1, momentum=0.5)
    scaler = scaler or xad.amp.GradScaler(**KW)
    trace = []
    for g in rows:
        opt.zero_grad()
        scaler.scale((w * xad.tensor(np.asarray(g, np.float32))).sum()).backward()
        before = w.numpy().copy()
        scaler.step(opt)
        scaler.update()
        trace.append((scaler.get_scale(), not np.array_equal(before, w.numpy())))
    return trace, w.detach().numpy(), scaler


def test_grad_scaler_sequence_matches_torch(xb):
    ref, w_ref, _ = _torch_run(GRADS)
    got, w_got, _ = _xad_run(GRADS)
    assert got == ref
    assert [s for _, s in got].count(False) == 3          # the three non-finite rows
    np.testing.assert_allclose(w_got, w_ref, rtol=1e-6)


def test_grad_scaler_state_dict_round_trip(xb):
    _, _, ts = _torch_run(GRADS[:5])
    _, _, xs = _xad_run(GRADS[:5])
    assert xs.state_dict() == ts.state_dict()
    for source in (xs.state_dict(), ts.state_dict()):     # from xad and from PyTorch
        fresh = xad.amp.GradScaler()
        fresh.load_state_dict(source)
        assert fresh.state_dict() == source
        rest, _, _ = _xad_run(GRADS[5:], fresh)
        t2 = torch.amp.GradScaler("cpu")
        t2.load_state_dict(ts.state_dict())
        ref, _, _ = _torch_run(GRADS[5:], t2)
        assert rest == ref


def test_grad_scaler_unscale_then_clip_and_call_order(xb):
    w = xad.ones(2, requires_grad=True)
    opt = xad.optim.SGD([w], lr=0.5)
    scaler = xad.amp.GradScaler(init_scale=1024.0)
    scaler.scale((w * w).sum()).backward()
    assert w.grad.tolist() == [2048.0, 2048.0]
    scaler.unscale_(opt)
    assert w.grad.tolist() == [2.0, 2.0] and w.grad.dtype is xad.float32
    with pytest.raises(RuntimeError, match="already been called on this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    scaler.update()
    assert w.tolist() == [0.0, 0.0] and scaler.get_scale() == 1024.0
    with pytest.raises(RuntimeError, match="no inf checks were recorded prior to update"):
        scaler.update()
    scaler.update(new_scale=16.0)
    assert scaler.get_scale() == 16.0


def test_grad_scaler_disabled_is_a_pass_through(xb):
    w = xad.ones(2, requires_grad=True)
    opt = xad.optim.SGD([w], lr=0.5)
    scaler = xad.amp.GradScaler(enabled=False)
    loss = (w * w).sum()
    assert scaler.scale(loss) is loss and not scaler.is_enabled()
    loss.backward()
    scaler.step(opt)
    scaler.update()
    assert w.tolist() == [0.0, 0.0] and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    with pytest.raises(ValueError, match="backoff_factor must be in"):
        xad.amp.GradScaler(backoff_factor=1.5)


def _mlp_loss(xb, amp: bool) -> float:
    xad.manual_seed(3)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((512, 8)).astype(np.float32)
    noise = 0.1 * rng.standard_normal((512, 1))      # the loss cannot go far below 0.01
    ys = (np.sin(xs[:, :1] * 2) + xs[:, 1:2] * xs[:, 2:3] + noise).astype(np.float32)
    x, y = xad.tensor(xs), xad.tensor(ys)
    model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
    opt = xad.optim.Adam(model.parameters(), lr=1e-2)
    scaler = xad.amp.GradScaler(init_scale=2.0 ** 16, growth_interval=20, enabled=amp)
    for _ in range(150):
        opt.zero_grad()
        with xad.amp.autocast(xad.float16, enabled=amp):
            loss = F.mse_loss(model(x), y)
        assert loss.dtype is xad.float32
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    assert all(p.dtype is xad.float32 for p in model.parameters())
    return loss.item()


def test_mlp_trains_in_float16_to_the_float32_loss(xb):
    if not _has(xb, xad.float16):
        with pytest.raises(TypeError, match=f"backend '{xb.name}' has no float16"):
            _mlp_loss(xb, amp=True)
        return
    l32, l16 = _mlp_loss(xb, False), _mlp_loss(xb, True)
    assert l32 < 0.06                     # it learned (from about 1.5; noise floor 0.01)
    assert abs(l16 - l32) < 0.1 * l32     # float16 + GradScaler lands where float32 does


def test_checkpoint_recomputes_in_the_autocast_dtypes(xb):
    """checkpoint's re-run (inside backward, where autocast is off) uses the first run's
    autocast state: the same dtypes and gradients as without checkpointing."""
    if not _has(xb, xad.float16):
        return
    grads = []
    for ckpt in (False, True):
        w = xad.tensor(W, requires_grad=True)

        def block(h, w=w):
            return xad.tanh(F.linear(h, w))

        with xad.amp.autocast(xad.float16):
            h = xad.checkpoint(block, xad.tensor(X)) if ckpt else block(xad.tensor(X))
            assert h.dtype is xad.float16
            loss = h.sum()
        loss.backward()
        grads.append(w.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
