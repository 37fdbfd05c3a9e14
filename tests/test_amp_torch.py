"""``torch.autocast`` and ``torch.amp.GradScaler`` under ``xad.as_torch`` against PyTorch's
CPU implementations (the oracle).

Autocast: each operation of a table runs inside ``autocast("cpu", dtype)`` (bfloat16 where
the backend has it, float16 everywhere it has that), nested in ``enabled=False`` at times;
its result dtype must be PyTorch's, except the rows of ``FLOAT32_HERE`` (xad computes them
in float32 on every device, PyTorch's CPU lists keep the low dtype: docs/PORTING.md), and
its value and the float32 gradients of its inputs must agree within the low dtype's
rounding (the whole table on NumPy and torch, a third of it on the other backends).

GradScaler: a fuzzer of random training runs (one or two optimizers, parameters without a
gradient, Inf/NaN injected into some gradients, ``unscale_`` then gradient clipping,
``update(new_scale)``, state-dict round trips into a fresh scaler, factors that are not
powers of two) against PyTorch's run: the scale and growth tracker after every step, which
steps were skipped, and the parameters. ``XAD_FUZZ_N`` sets the runs (default 12 on NumPy,
2 elsewhere; the long run: 2000); replay one with ``XAD_FUZZ_SEED=<seed> XAD_FUZZ_N=1``.
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

import xad
from xad import as_torch

torch = pytest.importorskip("torch")
T = as_torch.namespace()["torch"]

N = int(os.environ.get("XAD_FUZZ_N", "0")) or None
SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))

_G = np.random.default_rng(5)
A, B, W, BIAS = (_G.standard_normal(s) for s in ((4, 6), (6, 5), (5, 6), (5,)))
TARGET = np.array([0, 2, 1, 4])

# name: the operation of (M, F, a, b, w, bias, low) inside autocast; a, b, w, bias float32
OPS = {
    "mm": lambda M, F, a, b, w, c, lo: a @ b,
    "matmul": lambda M, F, a, b, w, c, lo: M.matmul(a, b),
    "linear": lambda M, F, a, b, w, c, lo: F.linear(a, w, c),
    "einsum": lambda M, F, a, b, w, c, lo: M.einsum("ij,jk->ik", a, b),
    "tensordot": lambda M, F, a, b, w, c, lo: M.tensordot(a, b, dims=1),
    "mm of low and float32": lambda M, F, a, b, w, c, lo: a.to(lo) @ b,
    "conv1d": lambda M, F, a, b, w, c, lo: F.conv1d(a[None], w[:, :4, None], c),
    "sdpa": lambda M, F, a, b, w, c, lo: F.scaled_dot_product_attention(a[None], a[None],
                                                                         a[None]),
    "softmax of float32": lambda M, F, a, b, w, c, lo: M.softmax(a, dim=-1),
    "softmax": lambda M, F, a, b, w, c, lo: M.softmax(a @ b, dim=-1),
    "log_softmax": lambda M, F, a, b, w, c, lo: F.log_softmax(a @ b, dim=-1),
    "sum": lambda M, F, a, b, w, c, lo: (a @ b).sum(),
    "sum of float32": lambda M, F, a, b, w, c, lo: a.sum(),
    "mean": lambda M, F, a, b, w, c, lo: (a @ b).mean(),
    "var": lambda M, F, a, b, w, c, lo: (a @ b).var(),
    "cumsum": lambda M, F, a, b, w, c, lo: M.cumsum(a @ b, dim=0),
    "prod": lambda M, F, a, b, w, c, lo: M.prod(a @ b, dim=0),
    "logsumexp": lambda M, F, a, b, w, c, lo: M.logsumexp(a @ b, dim=0),
    "layer_norm": lambda M, F, a, b, w, c, lo: F.layer_norm(a @ b, (5,)),
    "batch_norm": lambda M, F, a, b, w, c, lo: F.batch_norm(a @ b, None, None, training=True),
    "group_norm": lambda M, F, a, b, w, c, lo: F.group_norm((a @ b)[None], 1),
    "cross_entropy": lambda M, F, a, b, w, c, lo: F.cross_entropy(a @ b, M.tensor(TARGET)),
    "nll_loss": lambda M, F, a, b, w, c, lo: F.nll_loss(a @ b, M.tensor(TARGET)),
    "mse_loss": lambda M, F, a, b, w, c, lo: F.mse_loss(a @ b, (a @ b).detach() * 0.5),
    "l1_loss": lambda M, F, a, b, w, c, lo: F.l1_loss(a @ b, (a @ b).detach() * 0.5),
    "smooth_l1_loss": lambda M, F, a, b, w, c, lo: F.smooth_l1_loss(a @ b, (a @ b) * 0.5),
    "bce_with_logits": lambda M, F, a, b, w, c, lo: F.binary_cross_entropy_with_logits(
        a @ b, M.ones(4, 5)),
    "kl_div": lambda M, F, a, b, w, c, lo: F.kl_div(F.log_softmax(a @ b, -1),
                                                    F.softmax(a @ b, -1).detach(),
                                                    reduction="batchmean"),
    "avg_pool2d": lambda M, F, a, b, w, c, lo: F.avg_pool2d(_image(M, a, b), 2),
    "avg_pool2d, padded": lambda M, F, a, b, w, c, lo: F.avg_pool2d(_image(M, a, b), 3, 2, 1),
    "adaptive_avg_pool2d": lambda M, F, a, b, w, c, lo: F.adaptive_avg_pool2d(_image(M, a, b),
                                                                              (2, 3)),
    "max_pool2d": lambda M, F, a, b, w, c, lo: F.max_pool2d(_image(M, a, b), 2),
    "group_norm, affine": lambda M, F, a, b, w, c, lo: F.group_norm((a @ b)[None], 2,
                                                                    c[:4], c[:4]),
    "cosine_similarity": lambda M, F, a, b, w, c, lo: F.cosine_similarity(a @ b, (a @ b) * 2),
    "softmin": lambda M, F, a, b, w, c, lo: F.softmin(a @ b, dim=-1),
    "reflect pad": lambda M, F, a, b, w, c, lo: F.pad(_image(M, a, b), (1, 1, 1, 1), "reflect"),
    "replicate pad": lambda M, F, a, b, w, c, lo: F.pad(_image(M, a, b)[0], (1, 2), "replicate"),
    "relu": lambda M, F, a, b, w, c, lo: M.relu(a @ b),
    "gelu": lambda M, F, a, b, w, c, lo: F.gelu(a @ b),
    "exp": lambda M, F, a, b, w, c, lo: M.exp(a @ b),
    "tanh": lambda M, F, a, b, w, c, lo: M.tanh(a @ b),
    "pow": lambda M, F, a, b, w, c, lo: (a @ b) ** 2,
    "vector_norm": lambda M, F, a, b, w, c, lo: M.linalg.vector_norm(a @ b),
    "low plus float32": lambda M, F, a, b, w, c, lo: (a @ b) + b[0],
    "float64 mm": lambda M, F, a, b, w, c, lo: a.double() @ b.double(),
    "mm with autocast off": lambda M, F, a, b, w, c, lo: _off(M, lambda: a @ b),
    "linear, off, on again": lambda M, F, a, b, w, c, lo: _off(M, lambda: _on(
        M, lo, lambda: F.linear(a, w, c))),
}

# xad runs these in float32 under autocast on every device; PyTorch's CPU autocast leaves
# them in their input's low dtype (its CUDA lists put softmax, log_softmax, sum, cumsum,
# logsumexp and layer_norm in float32 too)
FLOAT32_HERE = {"softmax", "log_softmax", "sum", "mean", "var", "cumsum", "logsumexp",
                "layer_norm", "batch_norm", "group_norm", "group_norm, affine",
                "cosine_similarity", "softmin",  # these two: their inner sum and softmax
                "exp", "pow", "vector_norm"}  # CUDA's float32 list (tests/test_amp_float32_list.py)
# and the reverse: PyTorch's CPU list runs these padding modes in float32 (CUDA's does not)
LOW_HERE = {"reflect pad", "replicate pad"}


def _image(M, a, b):
    """A (1, 2, 4, 5) image in the low dtype (a product under autocast)."""
    return M.stack([a @ b, (a @ b) * 0.5])[None]


def _off(M, fn):
    with M.autocast("cpu", enabled=False):
        return fn()


def _on(M, lo, fn):
    with M.autocast("cpu", dtype=lo):
        return fn()


def _name(dtype) -> str:
    return str(dtype).split(".")[-1]


def _run(M, name, low):
    F = M.nn.functional
    leaves = [M.tensor(v, dtype=M.float32, requires_grad=True) for v in (A, B, W, BIAS)]
    lo = getattr(M, low)
    with M.autocast("cpu", dtype=lo):
        y = OPS[name](M, F, *leaves, lo)
    (y.float() * 0.5).sum().backward()
    return y, leaves


def _np(t):
    return t.detach().float().numpy() if isinstance(t, torch.Tensor) else np.asarray(
        t.detach().astype(xad.float32).numpy())


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_autocast_dtypes_values_and_gradients_agree_with_pytorch(xb, low):
    if xb._dtypes.get(getattr(xad, low)) is None:
        with pytest.raises(TypeError, match=f"has no {low}"):
            _run(T, "mm", low)
        return
    tol = 4e-2 if low == "bfloat16" else 5e-3
    names = list(OPS) if xb.name in ("numpy", "torch") else list(OPS)[::3]  # a third elsewhere
    for name in names:
        want, tleaves = _run(torch, name, low)
        got, xleaves = _run(T, name, low)
        expect = ("float32" if name in FLOAT32_HERE else low if name in LOW_HERE
                  else _name(want.dtype))
        assert _name(got.dtype) == expect, f"{name}: {_name(got.dtype)}, PyTorch {want.dtype}"
        scale = max(1.0, float(np.abs(_np(want)).max()))
        np.testing.assert_allclose(_np(got), _np(want), rtol=tol, atol=tol * scale,
                                   err_msg=name)
        for x, t in zip(xleaves, tleaves):
            assert (x.grad is None) == (t.grad is None), name
            if t.grad is not None:
                assert x.grad.dtype is xad.float32, f"{name}: gradient {x.grad.dtype}"
                g = max(1.0, float(t.grad.abs().max()))
                np.testing.assert_allclose(_np(x.grad), _np(t.grad), rtol=tol,
                                           atol=tol * g, err_msg=f"{name} gradient")


def test_float32_rows_are_pytorchs_on_cuda_lists():
    """The pinned rows: PyTorch's CPU autocast keeps them low (the rows above check it
    each run); xad's single list is the CUDA one plus mean, var/std and batch_norm."""
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = torch.ones(2, 2) @ torch.ones(2, 2)
        assert all(OPS[n](torch, torch.nn.functional, *(torch.tensor(v, dtype=torch.float32)
                                                         for v in (A, B, W, BIAS)),
                          torch.bfloat16).dtype == torch.bfloat16 for n in FLOAT32_HERE)
    assert y.dtype == torch.bfloat16


# ----- GradScaler --------------------------------------------------------------------------

def _plan(rng: random.Random) -> dict:
    """One random run: scaler options and, per step, what happens."""
    opts = dict(init_scale=rng.choice([2.0 ** 16, 8.0, 3.0, 1000.0]),
                growth_factor=rng.choice([2.0, 4.0, 1.7, 3.3]),
                backoff_factor=rng.choice([0.5, 0.25, 0.3, 0.55]),
                growth_interval=rng.choice([1, 2, 3, 5]))
    steps = []
    for _ in range(rng.randint(4, 12)):
        steps.append(dict(
            bad=rng.choice([None] * 4 + [("inf", 0), ("nan", 1), ("-inf", 2), ("inf", 3)]),
            unscale=rng.random() < 0.3, clip=rng.choice([None, 0.5, 10.0]),
            new_scale=rng.choice([None] * 8 + [5.0, 0.1]), reload=rng.random() < 0.15,
            no_grad_for=rng.choice([None, None, 1])))
    return {"opts": opts, "steps": steps, "two": rng.random() < 0.4, "seed": rng.random()}


def _grads_like(plan, k):
    g = np.random.default_rng(int(plan["seed"] * 1e6) + k)
    return [g.standard_normal(s) for s in ((3,), (2, 2), (4,), (1,))]


def _train(M, plan):
    ps = [M.zeros(s, requires_grad=True) for s in ((3,), (2, 2), (4,), (1,))]
    groups = [ps[:2], ps[2:]] if plan["two"] else [ps]
    opts = [M.optim.SGD(g, lr=0.1, momentum=0.5) for g in groups]
    scaler = M.amp.GradScaler("cpu", **plan["opts"])
    trace = []
    for k, st in enumerate(plan["steps"]):
        for o in opts:
            o.zero_grad()
        gs = _grads_like(plan, k)
        if st["bad"] is not None:
            gs[st["bad"][1]].flat[0] = float(st["bad"][0])
        loss = sum((p * M.tensor(g, dtype=M.float32)).sum() for i, (p, g) in
                   enumerate(zip(ps, gs)) if i != st["no_grad_for"])
        scaler.scale(loss).backward()
        if st["unscale"]:
            scaler.unscale_(opts[0])
            if st["clip"] is not None:
                M.nn.utils.clip_grad_norm_(groups[0], st["clip"])
        before = [p.detach().clone() for p in ps]
        for o in opts:
            scaler.step(o)
        scaler.update(st["new_scale"])
        moved = [not np.array_equal(_np(b), _np(p)) for b, p in zip(before, ps)]
        state = scaler.state_dict()
        trace.append((state["scale"], state["_growth_tracker"], moved))
        if st["reload"]:
            scaler = M.amp.GradScaler("cpu")
            scaler.load_state_dict(state)
    return trace, [_np(p) for p in ps]


def test_grad_scaler_agrees_with_pytorch(xb):
    n = N or (12 if xb.name == "numpy" else 2)
    for seed in range(SEED, SEED + n):
        plan = _plan(random.Random(seed))
        want, wp = _train(torch, plan)
        got, gp = _train(T, plan)
        for k, (w, g) in enumerate(zip(want, got)):
            assert g == w, f"seed {seed} step {k}: scale, tracker, moved {g}; PyTorch {w}"
        for w, g in zip(wp, gp):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"seed {seed}")


def test_grad_scaler_factors_are_applied_in_double(xb):
    """The scale after backoff/growth by factors that float32 cannot hold (0.3, 1.7) is
    PyTorch's to the bit: xad rounded the factor to float32 first and drifted."""
    for factor in (0.3, 1.7):
        kw = dict(init_scale=3.0, growth_interval=1,
                  backoff_factor=factor if factor < 1 else 0.5,
                  growth_factor=factor if factor > 1 else 2.0)
        got, want = [], []
        for M, out in ((T, got), (torch, want)):
            w = M.ones(1, requires_grad=True)
            opt, scaler = M.optim.SGD([w], lr=0.1), M.amp.GradScaler("cpu", **kw)
            for _ in range(5):
                opt.zero_grad()
                scaler.scale((w * (float("inf") if factor < 1 else 1.0)).sum()).backward()
                scaler.step(opt)
                scaler.update()
                out.append(scaler.get_scale())
        assert got == want



def test_grad_scaler_getters_and_setters():
    for M in (torch, T):
        s = M.amp.GradScaler("cpu", growth_factor=3.0, backoff_factor=0.25, growth_interval=7)
        got = (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval())
        assert got == (3.0, 0.25, 7)
        s.set_growth_factor(5.0)
        s.set_backoff_factor(0.5)
        s.set_growth_interval(2)
        assert s.state_dict()["growth_factor"] == 5.0 and s.get_growth_interval() == 2


def test_grad_scaler_scales_low_tensors_in_their_dtype(xb):
    """A float16 tensor (not 0-d) times the float32 0-d scale stays float16, as in PyTorch
    (and overflows to Inf there); a 0-d loss is scaled in float32."""
    if xb._dtypes.get(xad.float16) is None:
        return
    for M in (torch, T):
        s = M.amp.GradScaler("cpu", init_scale=2.0 ** 16)
        big = s.scale(M.ones(3, dtype=M.float16) * 2)
        assert _name(big.dtype) == "float16" and np.isinf(_np(big)).all()
        assert _name(s.scale(M.tensor(2.0, dtype=M.float16)).dtype) == "float32"
