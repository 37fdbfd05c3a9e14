"""Three-deep nestings of the function transforms that gave wrong numbers or raised, each
pinned against ``torch.func`` (torch 2.13) in float64 (found by the ``nest3`` case of
tests/test_func_torch_fuzz.py)."""

from __future__ import annotations

import numpy as np
import pytest

import xad
from xad import as_torch

torch = pytest.importorskip("torch")
tfunc = pytest.importorskip("torch.func")

XT = as_torch.namespace()["torch"]
XS = np.arange(12.0).reshape(3, 4) / 7 - 0.5
X4 = np.arange(48.0).reshape(2, 2, 3, 4) / 7 - 0.5


def _np(t):
    return np.asarray(t.tolist()) if isinstance(t, xad.Tensor) else t.detach().numpy()


def _libs():
    return (("xad", XT, XT.func), ("torch", torch, tfunc))


def _same(run):
    got, want = (run(T, fn) for _, T, fn in _libs())
    got, want = (r if isinstance(r, tuple) else (r,) for r in (got, want))
    for a, b in zip(got, want):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10, atol=1e-12)


def test_jvp_of_vjp_carries_the_tangent_of_the_primal_output(xb):
    """``vjp`` returned its output detached when nothing outside recorded a graph, so a
    ``jvp`` (or ``jacfwd``) around it saw a zero tangent through that output."""
    def run(T, fn):
        x = T.tensor(XS, dtype=T.float64)

        def g(x):
            out, pull = fn.vjp(lambda y: (y * y.sum(0)).sin(), x)
            return pull(out.cos())[0] + 0.1 * out
        return fn.jvp(g, (x,), (x.cos(),))[1], fn.jacfwd(g)(x)
    _same(run)


@pytest.mark.parametrize("case", ["where", "getitem_rows", "getitem_cols", "logsumexp",
                                  "norm", "mean_where"])
def test_nested_vmap_with_a_batched_condition_or_index(xb, case):
    """A batching rule sees an array parameter (``where``'s condition, an index array)
    raw, with the batch axes of every ``vmap`` level: inside ``vmap(vmap(f))`` the result
    had a batch axis twice (``logsumexp(keepdim=True)``, ``norm``, ``where`` with a
    batched condition, ``x[:, i]`` with a batched ``i``) or raised."""
    idx = np.array([[[2, 0], [1, 1]], [[0, 0], [3, 2]]])

    def run(T, fn):
        x, i = T.tensor(X4, dtype=T.float64), T.tensor(idx)
        body = {"where": lambda x: T.where(x > 0.1, x, x.amax(dim=1, keepdim=True)),
                "logsumexp": lambda x: x - x.logsumexp(dim=1, keepdim=True),
                "norm": lambda x: x / (1.0 + x.norm(dim=1, keepdim=True)),
                "mean_where": lambda x: T.where(x.mean() > x, x * 2, x).sum(0)}
        if case == "getitem_rows":
            return fn.vmap(fn.vmap(lambda x, i: x[i]))(x.transpose(2, 3), i)
        if case == "getitem_cols":
            return fn.vmap(fn.vmap(lambda x, i: x[:, i]))(x, i)
        return fn.vmap(fn.vmap(body[case]))(x)
    _same(run)


def test_vmap_of_jvp_of_grad_and_of_hessian_of_vmap(xb):
    """``vmap(jvp(grad(f)))`` raised NotImplementedError. ``vmap(hessian(vmap(f)))`` is now
    forward over reverse inside ``vmap`` too (it was reverse over reverse there), which
    needs a gradient that is a view made below the ``vmap`` levels to be copied."""
    def run(T, fn):
        x = T.tensor(XS, dtype=T.float64)
        s = T.tensor([1.0, 2.0], dtype=T.float64).reshape(-1, 1, 1)
        f = lambda y: (y.sin() * y.sum()).sum()  # noqa: E731
        a = fn.vmap(lambda y, t: fn.jvp(fn.grad(f), (y,), (t,)))(x * s, (x * s).cos())
        inner = lambda y: fn.vmap(lambda r: r.flip(0).cumsum(0) * r)(y * s).mean(0)  # noqa
        h = fn.vmap(fn.hessian(lambda y: inner(y).sin().sum()))(x * s)
        return a + (h.sum(dim=(1, 2)),)
    _same(run)
