"""Statistics of a constant slice against torch 2.13 (float64, every backend): ``std`` and
``var`` (tensor methods, ``torch.std``/``var``, ``std_mean``/``var_mean``) give exactly 0
and ``std``'s gradient exactly 0, as PyTorch's; the normalisation layers agree with it on a
constant row. The mean ``sum * (1/n)`` is not exactly the constant for about 38% of random
constants, so ``var`` was ~1e-32, ``std`` ~1e-16 and ``std``'s gradient O(1), no error."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import xad
import xad.nn.functional as XF
from xad import as_torch

F64 = xad.float64
T = as_torch.namespace()["torch"]
CONSTANTS = [0.1, 3.7, -1e3, 1 / 3, 12345.678, -0.7]


def _pair(a, fx, ft, std):
    """``fx`` on xad and ``ft`` on torch: values equal, exactly 0 on xad; the gradients of a
    weighted sum equal, exactly 0 for ``std`` (PyTorch's own are only for short slices: it
    gives 5.6e-17 and a gradient of 0.024 for ``std`` of 42 times 1/3, xad 0 and 0)."""
    x = xad.tensor(a, dtype=F64, requires_grad=True)
    t = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    ox, ot = fx(x), ft(t)
    w = np.random.default_rng(0).standard_normal(tuple(ot.shape))
    (ox * xad.tensor(w, dtype=F64)).sum().backward()
    (ot * torch.tensor(w)).sum().backward()
    assert np.all(ox.numpy() == 0.0)
    np.testing.assert_allclose(ox.numpy(), ot.detach().numpy(), rtol=0, atol=1e-15)
    if std:
        assert np.all(x.grad.numpy() == 0.0)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=0, atol=1e-9)


STATS = {
    "std": (lambda x: x.std(1), lambda t: t.std(1)),
    "std_dim": (lambda x: x.std(1, keepdim=True), lambda t: t.std(1, keepdim=True)),
    "std_biased": (lambda x: x.std((0, 2), unbiased=False),
                   lambda t: t.std((0, 2), unbiased=False)),
    "torch.std": (lambda x: T.std(x, dim=-1, correction=2),
                  lambda t: torch.std(t, dim=-1, correction=2)),
    "std_mean": (lambda x: T.std_mean(x, -1)[0], lambda t: torch.std_mean(t, -1)[0]),
    "var": (lambda x: x.var(-1), lambda t: t.var(-1)),
    "var_mean": (lambda x: T.var_mean(x, (0, 1))[0], lambda t: torch.var_mean(t, (0, 1))[0]),
}


@pytest.mark.parametrize("name", sorted(STATS))
@pytest.mark.parametrize("c", CONSTANTS)
def test_a_constant_has_zero_spread_and_std_gradient(name, c, xb):
    fx, ft = STATS[name]
    _pair(np.full((2, 3, 7), c), fx, ft, std="std" in name)


@pytest.mark.parametrize("c", CONSTANTS)
def test_var_of_a_constant_is_exactly_zero(c, xb):
    """``xad.var`` (the standard's): exactly 0 on every slice, mixed with a varying one."""
    a = np.full((3, 9), c)
    a[2] = np.linspace(-1.0, 2.0, 9)
    got = xad.var(xad.tensor(a, dtype=F64), axis=1).numpy()
    assert got[0] == got[1] == 0.0
    np.testing.assert_allclose(got[2], np.var(a[2]), rtol=1e-14)
    assert xad.var(xad.full((5,), c, dtype=xad.float32)).numpy() == 0.0
    x = xad.full((1000,), c, dtype=F64, requires_grad=True)  # (PyTorch's: 3.6e-12 for
    x.std().backward()                                       # 12345.678, gradient 1e-3)
    assert np.all(x.grad.numpy() == 0.0)


@pytest.mark.parametrize("c", CONSTANTS)
def test_std_of_a_constant_through_the_transforms(c, xb):
    """The compiled step, ``vmap`` and ``jvp`` of ``Tensor.std`` agree: value 0, tangent and
    gradient 0, as eager."""
    a = xad.full((4, 6), c, dtype=F64)
    f = xad.compile(lambda x: xad.grad(lambda v: v.std(1).sum())(x))
    for _ in range(2):  # record, then replay
        assert np.all(f(a).numpy() == 0.0)
    assert np.all(xad.vmap(lambda r: r.std())(a).numpy() == 0.0)
    out, tan = xad.jvp(lambda x: x.std(1), (a,), (xad.ones((4, 6), dtype=F64),))
    assert np.all(out.numpy() == 0.0) and np.all(tan.numpy() == 0.0)


NORMS = {
    "layer_norm": (lambda x: XF.layer_norm(x, (7,)), lambda t: TF.layer_norm(t, (7,))),
    "layer_norm_affine": (
        lambda x: XF.layer_norm(x, (7,), xad.full((7,), 2.0, dtype=F64),
                                xad.ones(7, dtype=F64)),
        lambda t: TF.layer_norm(t, (7,), torch.full((7,), 2.0, dtype=torch.float64),
                                torch.ones(7, dtype=torch.float64))),
    "group_norm": (lambda x: XF.group_norm(x, 3), lambda t: TF.group_norm(t, 3)),
    "instance_norm": (lambda x: XF.instance_norm(x), lambda t: TF.instance_norm(t)),
    "batch_norm": (lambda x: XF.batch_norm(x, None, None, training=True),
                   lambda t: TF.batch_norm(t, None, None, training=True)),
}


@pytest.mark.parametrize("name", sorted(NORMS))
@pytest.mark.parametrize("c", CONSTANTS)
def test_normalisation_of_a_constant_row(name, c, xb):
    """Values 0 (plus the affine part) and torch's gradient (``rstd`` is ``1/sqrt(eps)``);
    PyTorch's own batch and instance norms leave up to 2e-10 for 12345.678, xad's 0."""
    fx, ft = NORMS[name]
    x = xad.tensor(np.full((2, 3, 7), c), dtype=F64, requires_grad=True)
    t = torch.full((2, 3, 7), c, dtype=torch.float64, requires_grad=True)
    ox, ot = fx(x), ft(t)
    np.testing.assert_allclose(ox.numpy(), ot.detach().numpy(), rtol=0, atol=1e-9)
    w = np.random.default_rng(1).standard_normal((2, 3, 7))
    (ox * xad.tensor(w, dtype=F64)).sum().backward()
    (ot * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)
