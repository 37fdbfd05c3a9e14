"""Unmasked attention as one node (xad/ops/attention.py): the same numbers as the composed
path (scores, softmax, product) on every backend, forward, first derivatives (its one-node
rule, ``attention_grad``) and second derivatives; NumPy's piece-by-piece path with a last
piece shorter than the others; which calls take the node."""

from __future__ import annotations

import numpy as np
import pytest

import xad
import xad.nn.functional as F
from xad import nn
from xad.nn.functional.attention import attention_weights
from xad.ops import attention as node

f64 = xad.float64


def _qkvg(shape=(5, 3, 4, 6), s=7, ev=2):
    rng = np.random.default_rng(0)
    lead, e = shape[:-1], shape[-1]
    arrays = [rng.standard_normal(lead + (e,)), rng.standard_normal(lead[:-1] + (s, e)),
              rng.standard_normal(lead[:-1] + (s, ev)), rng.standard_normal(lead + (ev,))]
    return [xad.tensor(a, dtype=f64, requires_grad=i < 3) for i, a in enumerate(arrays)]


def _composed(q, k, v, scale):
    return xad.matmul(attention_weights(q, k, scale=scale), v)


@pytest.fixture
def pieces(monkeypatch):
    """NumPy's pieces of 2 (batch, head) pairs: 15 pairs make 8 pieces, the last of 1."""
    from xad_backends.numpy_backend import NumpyBackend
    monkeypatch.setattr(NumpyBackend, "ATTENTION_PIECE", 2 * 4 * 7)


@pytest.mark.usefixtures("pieces")
def test_node_matches_the_composed_path(xb, monkeypatch):
    calls = []
    grad_forward = node.AttentionGrad.forward
    monkeypatch.setattr(node.AttentionGrad, "forward",
                        staticmethod(lambda *a, **k: calls.append(1) or grad_forward(*a, **k)))
    q, k, v, g = _qkvg()
    got = node.attention(q, k, v, 0.3)
    want = _composed(q, k, v, 0.3)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    assert got._node.op.name == "attention"
    ours = xad.autograd.grad((got * g).sum(), (q, k, v))
    ref = xad.autograd.grad((want * g).sum(), (q, k, v))
    assert calls == [1]  # the three gradients in one operation
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


def test_second_derivatives_use_the_recorded_rule(xb):
    q, k, v, g = _qkvg((2, 3, 4), s=5)
    ours = xad.autograd.grad((node.attention(q, k, v, 0.5) * g).sum(), (q, k, v),
                             create_graph=True)
    ref = xad.autograd.grad((_composed(q, k, v, 0.5) * g).sum(), (q, k, v), create_graph=True)
    hv = [xad.autograd.grad((a * a).sum(), (q, k, v)) for a in (ours[0], ref[0])]
    for a, b in zip(*hv):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_unmasked_calls_take_the_node_and_masked_ones_do_not(xb):
    q, k, v, _ = _qkvg((2, 3, 4, 6))
    assert F.scaled_dot_product_attention(q, k, v)._node.op.name == "attention"
    assert F.scaled_dot_product_attention(q, k, v, is_causal=False, scale=0.2)._node.op.name \
        == "attention"
    assert F.scaled_dot_product_attention(q, q, q, is_causal=True)._node.op.name == "matmul"
    assert F.scaled_dot_product_attention(q, k[:1], v[:1])._node.op.name == "matmul"  # bcast
    mha = nn.MultiheadAttention(6, 2, batch_first=True).to(f64)
    x = xad.tensor(np.random.default_rng(1).standard_normal((2, 4, 6)), dtype=f64)
    out, _ = mha(x, x, x, need_weights=False)
    ref, w = mha(x, x, x)  # need_weights: the composed path, which keeps the weights
    assert w is not None
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.usefixtures("pieces")
def test_float32_stays_float32(xb):
    q, k, v, _ = (t.detach().astype(xad.float32) for t in _qkvg())
    out = node.attention(q, k, v, 0.3)
    assert out.dtype == xad.float32
    np.testing.assert_allclose(out.numpy(), _composed(q, k, v, 0.3).numpy(), rtol=1e-5,
                               atol=1e-6)


def test_no_queries_and_no_keys(xb):
    q = xad.ones(2, 0, 4, dtype=f64, requires_grad=True)
    out = node.attention(q, xad.ones(2, 3, 4, dtype=f64), xad.ones(2, 3, 5, dtype=f64), 0.5)
    out.sum().backward()
    assert out.shape == (2, 0, 5) and q.grad.shape == (2, 0, 4)
    with pytest.raises(ValueError, match=r"attention: no keys \(key shape \(2, 0, 4\)\)"):
        node.attention(xad.ones(2, 3, 4), xad.ones(2, 0, 4), xad.ones(2, 0, 5), 0.5)


@pytest.mark.usefixtures("pieces")
def test_a_second_backward_reads_the_saved_weights_unchanged(xb):
    q, k, v, g = _qkvg()
    out = node.attention(q, k, v, 0.3)
    first = xad.autograd.grad((out * g).sum(), (q, k, v), retain_graph=True)
    second = xad.autograd.grad((out * g).sum(), (q, k, v))
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
