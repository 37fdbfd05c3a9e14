"""A seeded fuzzer of PyTorch's reductions (tests/test_torch_reductions.py's names) against
torch 2.13: random shapes, dims, keepdim, quantiles and interpolations over values with ties,
zeros and NaNs; values, indices and gradients must agree, on every backend. ``XAD_FUZZ_N``
sets the number of cases (default 60 on NumPy, 15 elsewhere), ``XAD_FUZZ_SEED`` the seed."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import xad

N = int(os.environ.get("XAD_FUZZ_N", "0")) or None
SEED = int(os.environ.get("XAD_FUZZ_SEED", "20261126"))
MODES = ("linear", "lower", "higher", "midpoint", "nearest")
# where torch's answer depends on its kernels' order of operations, not on a rule:
# which index nanmedian/mode report in an all-NaN (or NaN-holding) slice, and which of tied
# elements gets a quantile's gradient (torch's sort is not stable past small sizes; xad's
# is): there the gradient summed over each slice's equal elements must agree
NAN_INDEX_OPS = ("nanmedian", "mode")


def _case(rng):
    shape = tuple(int(n) for n in rng.integers(1, 6, size=rng.integers(1, 4)))
    a = rng.integers(-3, 4, size=shape).astype(float) * rng.choice([1.0, 0.5])
    op = rng.choice(["cumprod", "amax", "amin", "median", "nanmedian", "quantile",
                     "nanquantile", "mode", "nansum", "nanmean"])
    if op not in ("cumprod", "amax", "amin", "mode") and rng.random() < 0.5:
        a[rng.random(shape) < 0.3] = np.nan
    if op in ("quantile", "nanquantile", "median", "nanmedian") and rng.random() < 0.5:
        a = a + rng.random(shape) * 1e-3  # fewer ties: gradients through sorted positions
    dim = int(rng.integers(-len(shape), len(shape)))
    keep = bool(rng.random() < 0.5)
    if op == "cumprod":
        return a, op, (dim,), {}
    if op in ("amax", "amin", "nansum", "nanmean"):
        d = None if rng.random() < 0.3 else dim
        return a, op, (() if d is None and op.startswith("am") else d, keep), {}
    if op in ("median", "nanmedian"):
        return a, op, (() if rng.random() < 0.3 else (dim, keep)), {}
    if op == "mode":
        return a, op, (dim, keep), {}
    q = float(rng.random()) if rng.random() < 0.5 else sorted(rng.random(3).tolist())
    d = None if rng.random() < 0.3 else dim
    return a, op, (q, d, keep), {"interpolation": str(rng.choice(MODES))}


def _run(lib, a, op, args, kw):
    x = lib.tensor(a, dtype=lib.float64, requires_grad=True)
    if op in ("quantile", "nanquantile") and isinstance(args[0], list):
        q = lib.tensor(args[0], dtype=lib.float64)
        args = (q,) + tuple(args[1:])
    with np.errstate(all="ignore"):
        out = getattr(x, op)(*args, **kw)
    outs = tuple(out) if isinstance(out, tuple) else (out,)
    w = np.cos(np.arange(int(np.prod(outs[0].shape)))).reshape(tuple(outs[0].shape))
    (outs[0] * lib.tensor(w, dtype=lib.float64)).sum().backward()
    return [np.asarray(o.detach().tolist(), dtype=float) for o in outs], \
        np.asarray(x.grad.tolist(), dtype=float)


def _differs(a, op, args, kw):
    try:
        want = _run(torch, a, op, args, kw)
    except (RuntimeError, IndexError, ValueError):
        return None  # torch refuses (an empty or zero-size slice): not compared
    got = _run(xad, a, op, args, kw)
    nan_slices = np.isnan(a).any()
    for i, (g, w) in enumerate(zip(got[0], want[0])):
        if i == 1 and op in NAN_INDEX_OPS and nan_slices:
            continue
        if g.shape != w.shape or not np.allclose(g, w, rtol=1e-12, atol=1e-12, equal_nan=True):
            return f"output {i}: xad {g.tolist()} torch {w.tolist()}"
    if op in NAN_INDEX_OPS and nan_slices:
        return None
    if not np.allclose(got[1], want[1], rtol=1e-10, atol=1e-12, equal_nan=True) and not (
            op in ("quantile", "nanquantile") and _same_per_value(a, got[1], want[1], args[1])):
        return f"gradient: xad {got[1].tolist()} torch {want[1].tolist()}"
    return None


def _same_per_value(a, g, h, dim):
    """Whether gradients ``g`` and ``h`` of ``a`` agree summed over each slice's equal
    elements (NaNs as one value)."""
    rows = lambda t: (t.reshape(1, -1) if dim is None  # noqa: E731
                      else np.moveaxis(t, dim, -1).reshape(-1, t.shape[dim]))
    for v, x, y in zip(rows(np.where(np.isnan(a), 1e300, a)), rows(g), rows(h)):
        for u in np.unique(v):
            if not np.isclose(x[v == u].sum(), y[v == u].sum(), rtol=1e-10, atol=1e-12):
                return False
    return True


@pytest.mark.filterwarnings("ignore")
def test_reductions_agree_with_torch(xb):
    rng = np.random.default_rng(SEED)
    bad = []
    n = N or (60 if xb.name == "numpy" else 15)
    for k in range(n):
        a, op, args, kw = _case(rng)
        msg = _differs(a, op, args, kw)
        if msg:
            bad.append(f"case {k}: {op}{args} {kw} on {a.tolist()}: {msg}")
    assert not bad, f"{len(bad)} of {n} differ:\n" + "\n".join(bad[:10])
