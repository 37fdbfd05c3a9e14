"""``nn.functional.scaled_dot_product_attention`` against PyTorch (float64, every backend):
values, first derivatives and second derivatives, over masks, scales and broadcast shapes."""

from __future__ import annotations

import numpy as np
import pytest

import xad
import xad.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

f64 = xad.float64


def _mask(kind: str, rng: np.random.Generator) -> np.ndarray | None:
    """Masks for queries L=4 and keys S=6; each bool mask has a fully masked row."""
    if kind == "none":
        return None
    keep = rng.random((4, 6)) > 0.4
    keep[1] = False
    if kind == "bool":
        return keep
    if kind == "bool-broadcast":
        m = rng.random((2, 1, 4, 6)) > 0.3
        m[0, 0, 2] = False
        return m
    if kind == "additive":
        return np.where(keep, rng.standard_normal((4, 6)), -np.inf)
    if kind == "additive-broadcast":
        return rng.standard_normal((3, 1, 6))
    raise AssertionError(kind)


# (case id, query shape, key shape, value shape, mask kind, is_causal, scale)
CASES = [
    ("plain", (2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2), "none", False, None),
    ("batch-head-broadcast", (2, 3, 4, 5), (1, 3, 6, 5), (2, 1, 6, 2), "none", False, None),
    ("no-head-axis", (2, 4, 5), (2, 6, 5), (2, 6, 3), "none", False, None),
    ("bool-mask", (2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2), "bool", False, None),
    ("bool-mask-broadcast", (2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2), "bool-broadcast",
     False, None),
    ("additive-mask", (2, 3, 4, 5), (1, 3, 6, 5), (2, 3, 6, 2), "additive", False, None),
    ("additive-broadcast", (2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2), "additive-broadcast",
     False, 0.7),
    ("causal-square", (2, 3, 4, 5), (2, 3, 4, 5), (2, 3, 4, 2), "none", True, None),
    ("causal-rectangular", (1, 2, 4, 3), (1, 2, 6, 3), (1, 2, 6, 2), "none", True, None),
    ("scale", (2, 4, 5), (2, 6, 5), (2, 6, 3), "bool", False, 0.3),
]


def _pair(a: np.ndarray):
    return xad.tensor(a, dtype=f64, requires_grad=True), torch.tensor(a, requires_grad=True)


def _close(a: xad.Tensor, b, tol: float = 1e-10) -> None:
    np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_sdpa_matches_torch_to_second_order(xb, case):
    _, qs, ks, vs, kind, causal, scale = case
    rng = np.random.default_rng(0)
    (xq, tq), (xk, tk), (xv, tv) = (_pair(rng.standard_normal(s)) for s in (qs, ks, vs))
    m = _mask(kind, rng)
    xm, tm = (None, None) if m is None else (xad.tensor(m), torch.tensor(m))
    xo = F.scaled_dot_product_attention(xq, xk, xv, attn_mask=xm, is_causal=causal,
                                        scale=scale)
    to = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, is_causal=causal,
                                         scale=scale)
    _close(xo, to)
    w = rng.standard_normal(to.shape)
    xg = xad.autograd.grad((xo * xad.tensor(w)).sum(), [xq, xk, xv], create_graph=True)
    tg = torch.autograd.grad((to * torch.tensor(w)).sum(), [tq, tk, tv], create_graph=True)
    for a, b in zip(xg, tg):
        _close(a, b)
    # second order: the gradient of a function of the first gradients
    c = [rng.standard_normal(s) for s in (qs, ks, vs)]
    xs = sum((g * g * xad.tensor(ci)).sum() for g, ci in zip(xg, c))
    ts = sum((g * g * torch.tensor(ci)).sum() for g, ci in zip(tg, c))
    for a, b in zip(xad.autograd.grad(xs, [xq, xk, xv]), torch.autograd.grad(ts, [tq, tk, tv])):
        _close(a, b, 1e-9)


def test_sdpa_gradgradcheck_with_mask(xb):
    q, k, v = (xad.randn(1, 2, 3, 2, dtype=f64, requires_grad=True) for _ in range(3))
    mask = xad.tensor([[True, False, True], [True, True, False], [False, False, False]])
    assert xad.gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mask),
                         [q, k, v])
    assert xad.gradgradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mask),
                             [q, k, v])


def test_fully_masked_rows_give_zeros_not_nan(xb):
    q, k, v = (xad.randn(2, 3, 4, dtype=f64, requires_grad=True) for _ in range(3))
    mask = xad.tensor([[False] * 3, [True, False, True], [False] * 3])
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out.sum().backward()
    o, g = out.numpy(), q.grad.numpy()
    assert np.isfinite(o).all() and np.isfinite(g).all()
    assert (o[:, [0, 2]] == 0).all() and (g[:, [0, 2]] == 0).all()
    assert (np.abs(o[:, 1]) > 0).any()
    neg = xad.where(mask, 0.0, -float("inf")).astype(f64)
    np.testing.assert_allclose(F.scaled_dot_product_attention(q, k, v, neg).numpy(), o)


def test_sdpa_dropout_uses_the_seeded_generator(xb):
    q, k, v = (xad.randn(2, 5, 4, dtype=f64) for _ in range(3))
    plain = F.scaled_dot_product_attention(q, k, v).numpy()
    xad.manual_seed(3)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    xad.manual_seed(3)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, plain)
    assert (F.scaled_dot_product_attention(q, k, v, dropout_p=1.0).numpy() == 0).all()


def test_sdpa_keeps_float32(xb):
    q = xad.randn(2, 3, 4)
    assert F.scaled_dot_product_attention(q, q, q, is_causal=True).dtype == xad.float32
    mask = xad.zeros(3, 3)
    assert F.scaled_dot_product_attention(q, q, q, mask).dtype == xad.float32


@pytest.mark.parametrize("kwargs, shapes, match", [
    ({"is_causal": True, "attn_mask": "bool"}, None, "not both"),
    ({"attn_mask": "wrong"}, None, r"attn_mask of shape \(3, 5\).*\(2, 4, 6\)"),
    ({"dropout_p": 1.5}, None, "dropout_p must be in"),
    ({}, ((2, 4, 5), (2, 6, 4), (2, 6, 3)), "last axis"),
    ({}, ((2, 4, 5), (2, 6, 5), (2, 5, 3)), "second-to-last"),
    ({}, ((2, 4, 5), (3, 6, 5), (3, 6, 3)), "do not broadcast"),
    ({}, ((5,), (6, 5), (6, 3)), "at least 2 dimensions"),
], ids=["causal-and-mask", "mask-shape", "dropout", "E", "S", "batch", "1-D"])
def test_sdpa_errors_name_the_shapes(kwargs, shapes, match):
    qs, ks, vs = shapes or ((2, 4, 5), (2, 6, 5), (2, 6, 3))
    masks = {"bool": xad.ones(4, 6, dtype=xad.bool), "wrong": xad.zeros(3, 5)}
    kwargs = {k: masks.get(v, v) if isinstance(v, str) else v for k, v in kwargs.items()}
    with pytest.raises(ValueError, match=match):
        F.scaled_dot_product_attention(xad.zeros(*qs), xad.zeros(*ks), xad.zeros(*vs),
                                       **kwargs)
