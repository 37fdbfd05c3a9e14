"""Sums over rows taken as products with a column of ones (``Backend.sums_by_product``,
NumPy's default) give what the plain sums give: values, first and second derivatives of
softmax (plain and masked), standardize (layer norm's core) and Linear's bias. The
gradient table uses tensors too small for that path, so it is checked here, on every
backend with the flag switched on and off."""

from __future__ import annotations

import numpy as np
import pytest

import xad
import xad.nn.functional as F
from xad import autograd as ag

ROWS, COLS = 96, 1024  # 2**16 elements and more: large enough for the product path


def _softmax(x, w):
    return xad.softmax(x * 3.0, axis=-1)


def _masked(x, w):
    keep = xad.tensor(np.arange(COLS) % 3 != 0)
    return xad.softmax(xad.where(keep, x, -np.inf), axis=-1, empty_zero=True)


def _standardize(x, w):
    return xad.standardize(x, -1, eps=1e-3) * w


def _linear(x, w):
    return F.linear(x.reshape((ROWS * 2, COLS // 2)), w.reshape((2, COLS // 2)), w[:2] * 5)


@pytest.mark.parametrize("fn", [_softmax, _masked, _standardize, _linear],
                         ids=["softmax", "masked_softmax", "standardize", "linear_bias"])
def test_product_sums_match_plain_sums(xb, monkeypatch, fn):
    rng = np.random.default_rng(1)
    a, c = rng.standard_normal((ROWS, COLS)), rng.standard_normal(COLS)
    results = {}
    for flag in (True, False):
        monkeypatch.setattr(xb, "sums_by_product", flag)
        x = xad.tensor(a, dtype=xad.float64, requires_grad=True)
        w = xad.tensor(c, dtype=xad.float64, requires_grad=True)
        assert xad.ops.reduce.by_product(x, (1,)) is flag
        y = fn(x, w)
        probe = xad.tensor(np.random.default_rng(2).standard_normal(y.shape))
        gx, gw = ag.grad((y * probe).sum(), (x, w), create_graph=True, allow_unused=True)
        grads = [g for g in (gx, gw) if g is not None]
        ggx = ag.grad(sum((g * g).sum() for g in grads), x)[0]
        results[flag] = [t.detach().to("numpy").numpy() for t in (y, *grads, ggx)]
    for on, off in zip(results[True], results[False]):
        np.testing.assert_allclose(on, off, rtol=1e-9, atol=1e-9)
