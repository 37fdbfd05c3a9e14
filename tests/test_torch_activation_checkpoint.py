"""``torch.utils.checkpoint`` under ``xad.as_torch`` against torch 2.13 in float64 on every
backend: values and gradients of inputs and closed-over weights (``backward`` and
``autograd.grad``), both ``use_reentrant`` variants with PyTorch's warnings and refusals,
``checkpoint_sequential``, and dropout re-drawn identically in the re-run."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import xad  # noqa: E402
from xad import as_torch  # noqa: E402

T = as_torch.namespace()["torch"]
_RNG = np.random.default_rng(5)
W1, W2, X = _RNG.standard_normal((3, 4)), _RNG.standard_normal((4, 2)), _RNG.standard_normal((5, 3))


def _setup(t):
    w1 = t.tensor(W1, dtype=t.float64, requires_grad=True)
    w2 = t.tensor(W2, dtype=t.float64, requires_grad=True)
    x = t.tensor(X, dtype=t.float64, requires_grad=True)
    return w1, w2, x


def _block(t, w1, w2):
    def f(h, scale=1.0):
        return (t.tanh(h @ w1) * scale) @ w2
    return f


def _np(v):
    return v.detach().numpy() if hasattr(v, "detach") else v.numpy()


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_gradients_match_torch(xb, reentrant):
    """Gradients reach the input and both closed-over weights, as torch's (and as without
    checkpointing)."""
    res = []
    for t in (T, torch):
        w1, w2, x = _setup(t)
        y = t.utils.checkpoint.checkpoint(_block(t, w1, w2), x * 2, use_reentrant=reentrant)
        (y.sin().sum()).backward()
        res.append([_np(y), _np(x.grad), _np(w1.grad), _np(w2.grad)])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_non_reentrant_works_with_autograd_grad_and_keywords(xb):
    """``autograd.grad`` of closed-over weights, and keyword arguments passed through."""
    res = []
    for t in (T, torch):
        w1, w2, x = _setup(t)
        y = t.utils.checkpoint.checkpoint(_block(t, w1, w2), x, scale=0.5, use_reentrant=False)
        res.append([_np(g) for g in t.autograd.grad((y * y).sum(), (w1, x))])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_reentrant_warnings_and_refusals_follow_torch(xb):
    """Left out, ``use_reentrant`` warns and means True; True refuses keywords and, with no
    input that requires grad, warns and gives results that do not require grad."""
    for t in (T, torch):
        w1, w2, x = _setup(t)
        f = _block(t, w1, w2)
        with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
            y = t.utils.checkpoint.checkpoint(f, x)
        assert y.requires_grad
        with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
            t.utils.checkpoint.checkpoint(f, x, scale=2.0, use_reentrant=True)
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
            y = t.utils.checkpoint.checkpoint(f, x.detach(), use_reentrant=True)
        assert not y.requires_grad
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert t.utils.checkpoint.checkpoint(f, x.detach(), use_reentrant=False).requires_grad


@pytest.mark.parametrize("segments", [1, 2, 3])
def test_checkpoint_sequential_matches_torch(xb, segments):
    """Values and gradients of every parameter and the input, torch's weights loaded."""
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 4),
                              torch.nn.GELU(), torch.nn.Linear(4, 2)).double()
    ours = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 4), T.nn.GELU(),
                           T.nn.Linear(4, 2)).double()
    ours.load_state_dict({k: T.tensor(_np(v)) for k, v in net.state_dict().items()})
    res = []
    for t, m in ((T, ours), (torch, net)):
        x = t.tensor(X, dtype=t.float64, requires_grad=True)
        y = t.utils.checkpoint.checkpoint_sequential(m, segments, x, use_reentrant=False)
        (y ** 2).sum().backward()
        res.append([_np(y), _np(x.grad)] + [_np(p.grad) for p in m.parameters()])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_dropout_is_drawn_again_identically(xb):
    """The re-run draws the first run's dropout mask: the gradient equals the one without
    checkpointing from the same seed."""
    grads = []
    for ckpt in (False, True):
        xad.manual_seed(3)
        w1, w2, x = _setup(T)
        block = _block(T, w1, w2)

        def f(h, block=block):
            return T.nn.functional.dropout(block(h), 0.5)
        y = T.utils.checkpoint.checkpoint(f, x, use_reentrant=False) if ckpt else f(x)
        (y * y).sum().backward()
        grads.append([_np(x.grad), _np(w1.grad)])
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)


def test_import_under_install():
    """``from torch.utils.checkpoint import checkpoint`` in a script run on xad."""
    as_torch.install()
    try:
        exec("import torch.utils.checkpoint\nfrom torch.utils.checkpoint import "
             "checkpoint, checkpoint_sequential", ns := {})
    finally:
        as_torch.uninstall()
    assert ns["checkpoint"] is T.utils.checkpoint.checkpoint
    assert ns["torch"].utils.checkpoint.checkpoint_sequential is ns["checkpoint_sequential"]
