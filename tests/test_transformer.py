"""``MultiheadAttention``, ``TransformerEncoderLayer``, ``TransformerEncoder`` and
``Unflatten`` against PyTorch: a torch state_dict converted to arrays loads and gives the same
outputs and parameter gradients (float64, eval mode, every backend); PyTorch's names, shapes
and initialisation; clear errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import xad
import xad.nn as nn

torch = pytest.importorskip("torch")

f64 = xad.float64


def _load(xmod: nn.Module, tmod) -> None:
    """Copy ``tmod``'s state into ``xmod`` through plain arrays, as a user would."""
    assert list(xmod.state_dict()) == list(tmod.state_dict())
    xmod.load_state_dict({k: xad.tensor(v.detach().numpy()) for k, v in
                          tmod.state_dict().items()})


def _compare(xmod, tmod, xargs: tuple, targs: tuple, xkw: dict, tkw: dict) -> None:
    """Same outputs (all of a tuple), and same parameter gradients of a weighted sum."""
    xo, to = xmod(*xargs, **xkw), tmod(*targs, **tkw)
    xo, to = (xo, to) if isinstance(to, tuple) else ((xo,), (to,))
    w = np.random.default_rng(1).standard_normal(to[0].shape)
    for a, b in zip(xo, to):
        assert (a is None) == (b is None)
        if b is not None:
            np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-10)
    (xo[0] * xad.tensor(w)).sum().backward()
    (to[0] * torch.tensor(w)).sum().backward()
    tgrads = dict(tmod.named_parameters())
    for name, p in xmod.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tgrads[name].grad.numpy(), rtol=1e-8,
                                   atol=1e-10, err_msg=name)


def _both(a):
    return None if a is None else xad.tensor(a), None if a is None else torch.tensor(a)


MHA_CASES = [  # id, batch_first, kdim, vdim, key_padding_mask kind, attn_mask kind, average
    ("seq-first", False, None, None, None, None, True),
    ("batch-first", True, None, None, None, None, True),
    ("kdim-vdim", False, 3, 5, None, None, False),
    ("padding-bool", True, None, None, "bool", None, True),
    ("padding-float", False, None, None, "float", "float", False),
    ("mask-3d", True, None, None, "float", "float3d", True),
    ("both-bool", True, None, None, "bool", "bool", True),
]


def _masks(kpm: str | None, am: str | None, n: int, lq: int, s: int, heads: int):
    rng = np.random.default_rng(2)
    pad = rng.random((n, s)) > 0.7
    pad[:, 0] = False
    k = {None: None, "bool": pad, "float": rng.standard_normal((n, s))}[kpm]
    causal = np.triu(np.ones((lq, s), bool), 1)
    a = {None: None, "bool": causal, "float": np.where(causal, -np.inf, 0.0),
         "float3d": rng.standard_normal((n * heads, lq, s))}[am]
    return k, a


@pytest.mark.parametrize("case", MHA_CASES, ids=[c[0] for c in MHA_CASES])
def test_multihead_attention_matches_torch(xb, case):
    _, bf, kdim, vdim, kpm, am, average = case
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2, kdim=kdim, vdim=vdim, batch_first=bf).double()
    xm = nn.MultiheadAttention(8, 2, kdim=kdim, vdim=vdim, batch_first=bf, dtype=f64)
    _load(xm, tm)
    n, lq, s = 3, 4, 5
    rng = np.random.default_rng(0)
    shapes = [(lq, 8), (s, kdim or 8), (s, vdim or 8)]
    arrays = [rng.standard_normal((n, *sh) if bf else (sh[0], n, sh[1])) for sh in shapes]
    (xq, tq), (xk, tk), (xv, tv) = (_both(a) for a in arrays)
    (xp, tp), (xa, ta) = (_both(a) for a in _masks(kpm, am, n, lq, s, 2))
    kw = {"average_attn_weights": average}
    _compare(xm, tm, (xq, xk, xv), (tq, tk, tv), {**kw, "key_padding_mask": xp,
                                                  "attn_mask": xa},
             {**kw, "key_padding_mask": tp, "attn_mask": ta})


def test_multihead_attention_unbatched_and_no_weights(xb):
    torch.manual_seed(0)
    tm, xm = torch.nn.MultiheadAttention(4, 2).double(), nn.MultiheadAttention(4, 2, dtype=f64)
    _load(xm, tm)
    x = np.random.default_rng(0).standard_normal((5, 4))
    (xx, tx), = (_both(x),)
    _compare(xm, tm, (xx, xx, xx), (tx, tx, tx), {}, {})
    out, w = xm(xx, xx, xx, need_weights=False)
    assert w is None and out.shape == (5, 4)


def test_fully_padded_sequence_matches_torch_without_weights(xb):
    torch.manual_seed(0)
    tm, xm = torch.nn.MultiheadAttention(4, 2).double(), nn.MultiheadAttention(4, 2, dtype=f64)
    _load(xm, tm)
    x = np.random.default_rng(0).standard_normal((3, 2, 4))
    pad = np.array([[True] * 3, [False, True, False]])
    (xx, tx), (xp, tp) = _both(x), _both(pad)
    kw = {"need_weights": False}
    _compare(xm, tm, (xx, xx, xx), (tx, tx, tx), {**kw, "key_padding_mask": xp},
             {**kw, "key_padding_mask": tp})


MASKED = [(nw, kind) for nw in (True, False)
          for kind in ("padding-bool", "padding-float", "mask-bool", "mask-float")]


@pytest.mark.parametrize("need_weights, kind", MASKED, ids=[f"nw={a}-{b}" for a, b in MASKED])
def test_queries_with_every_key_masked_match_torch(xb, need_weights, kind):
    """PyTorch's answer for a query that may see no key: NaN output and weights with
    ``need_weights`` (its softmax of ``-inf`` only), zeros without (its SDPA path); xad gave
    zeros both ways. Gradients compare NaN with NaN."""
    torch.manual_seed(0)
    tm, xm = torch.nn.MultiheadAttention(4, 2).double(), nn.MultiheadAttention(4, 2, dtype=f64)
    _load(xm, tm)
    x = np.random.default_rng(0).standard_normal((3, 2, 4))
    if kind.startswith("padding"):  # the first sequence is all padding
        name, m = "key_padding_mask", np.array([[True] * 3, [False, True, False]])
    else:  # the second query may see no key
        name, m = "attn_mask", np.array([[False, True, True], [True] * 3, [False] * 3])
    if kind.endswith("float"):
        m = np.where(m, -np.inf, 0.0)
    (xx, tx), (xm_, tm_) = _both(x), _both(m)
    kw = {"need_weights": need_weights}
    _compare(xm, tm, (xx, xx, xx), (tx, tx, tx), {**kw, name: xm_}, {**kw, name: tm_})
    out = xm(xx, xx, xx, **kw, **{name: xm_})[0].numpy()
    assert np.isnan(out).any() == need_weights


def test_multihead_attention_second_order(xb):
    m = nn.MultiheadAttention(4, 2, batch_first=True, dtype=f64)
    x = xad.randn(1, 3, 4, dtype=f64, requires_grad=True)
    mask = xad.tensor([[False, True, True], [False, False, True], [False, False, False]])
    assert xad.gradgradcheck(lambda x: m(x, x, x, attn_mask=mask)[0], [x])


LAYER_CASES = [(bf, nf, act) for bf in (False, True) for nf in (False, True)
               for act in ("relu", "gelu")]


@pytest.mark.parametrize("bf, nf, act", LAYER_CASES,
                         ids=[f"bf={a}-nf={b}-{c}" for a, b, c in LAYER_CASES])
def test_encoder_layer_matches_torch(xb, bf, nf, act):
    torch.manual_seed(0)
    kw = dict(dim_feedforward=16, dropout=0.1, activation=act, batch_first=bf, norm_first=nf)
    tl = torch.nn.TransformerEncoderLayer(8, 2, **kw).double().eval()
    xl = nn.TransformerEncoderLayer(8, 2, **kw, dtype=f64).eval()
    _load(xl, tl)
    n, s = 3, 5
    x = np.random.default_rng(0).standard_normal((n, s, 8) if bf else (s, n, 8))
    (xx, tx), = (_both(x),)
    pad = np.zeros((n, s), bool)
    pad[1, 3:] = True
    (xp, tp), (xm, tmask) = _both(pad), _both(np.triu(np.ones((s, s), bool), 1))
    _compare(xl, tl, (xx,), (tx,), {"src_mask": xm, "src_key_padding_mask": xp},
             {"src_mask": tmask, "src_key_padding_mask": tp})


def test_encoder_matches_torch_with_norm_and_causal_hint(xb):
    torch.manual_seed(0)
    kw = dict(dim_feedforward=12, dropout=0.0, batch_first=True)
    tl = torch.nn.TransformerEncoderLayer(8, 2, **kw).double()
    te = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8).double(),
                                     enable_nested_tensor=False)
    xe = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, **kw, dtype=f64), 2,
                               norm=nn.LayerNorm(8, dtype=f64))
    _load(xe, te)
    x = np.random.default_rng(0).standard_normal((2, 4, 8))
    (xx, tx), (xm, tm) = _both(x), _both(np.triu(np.full((4, 4), -np.inf), 1))
    _compare(xe, te, (xx,), (tx,), {"mask": xm, "is_causal": True},
             {"mask": tm, "is_causal": True})


def test_encoder_layers_start_equal_and_train_separately(xb):
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0), 2)
    a, b = enc.layers[0].linear1.weight, enc.layers[1].linear1.weight
    assert a is not b and (a.numpy() == b.numpy()).all()
    # weighted: a plain sum after LayerNorm has zero gradient
    (enc(xad.randn(3, 2, 4)) * xad.randn(3, 2, 4)).sum().backward()
    xad.optim.SGD(enc.parameters(), lr=0.1).step()
    assert not (a.numpy() == b.numpy()).all()


def test_default_initialisation_follows_torch(xb):
    m = nn.MultiheadAttention(64, 4)
    t = torch.nn.MultiheadAttention(64, 4)
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in t.state_dict().items()}
    w = m.in_proj_weight.numpy()
    bound = math.sqrt(6 / (64 + 3 * 64))  # xavier_uniform over the packed (3E, E) weight
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert (m.in_proj_bias.numpy() == 0).all() and (m.out_proj.bias.numpy() == 0).all()
    ow = m.out_proj.weight.numpy()  # Linear's default: U(-1/sqrt(64), 1/sqrt(64))
    assert np.abs(ow).max() <= 1 / 8 and np.abs(ow).max() > 0.9 / 8
    layer = nn.TransformerEncoderLayer(16, 2)
    assert [n for n, _ in layer.named_children()] == ["self_attn", "linear1", "dropout",
                                                      "linear2", "norm1", "norm2",
                                                      "dropout1", "dropout2"]
    assert layer.linear1.weight.shape == (2048, 16)


def test_encoder_layer_dropout_only_in_training(xb):
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    x = xad.randn(4, 2, 8)
    assert not np.allclose(layer(x).numpy(), layer(x).numpy())
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), layer(x).numpy())


def test_custom_activation_callable(xb):
    layer = nn.TransformerEncoderLayer(4, 1, 8, dropout=0.0, activation=nn.Tanh())
    assert "activation" in dict(layer.named_children())
    assert layer(xad.randn(2, 3, 4)).shape == (2, 3, 4)


@pytest.mark.parametrize("kind", ["encoder", "decoder"])
def test_feed_forward_layers_see_torchs_shapes(xb, kind):
    """PyTorch's layers call ``linear1``/``linear2`` on the ``(N, L, E)`` input: forward hooks
    see 3-D tensors (xad's reshaped them to ``(N * L, E)`` before, and a hook saw other
    shapes than PyTorch's), and the output with hooks is the output without."""
    make = {"encoder": nn.TransformerEncoderLayer, "decoder": nn.TransformerDecoderLayer}
    tmake = {"encoder": torch.nn.TransformerEncoderLayer,
             "decoder": torch.nn.TransformerDecoderLayer}
    kw = dict(dim_feedforward=12, dropout=0.0, batch_first=True)
    torch.manual_seed(0)
    tl, xl = tmake[kind](8, 2, **kw).double(), make[kind](8, 2, **kw, dtype=f64)
    _load(xl, tl)
    x = np.random.default_rng(0).standard_normal((3, 5, 8))
    args = (x,) if kind == "encoder" else (x, x[:, :4])
    plain = xl(*(xad.tensor(a) for a in args)).numpy()
    seen: dict = {"xad": [], "torch": []}
    for lib, layer in (("xad", xl), ("torch", tl)):
        for lin in (layer.linear1, layer.linear2):
            lin.register_forward_hook(
                lambda m, a, out, lib=lib: seen[lib].append((tuple(a[0].shape),
                                                             tuple(out.shape))))
    out = xl(*(xad.tensor(a) for a in args))
    tl(*(torch.tensor(a) for a in args))
    assert seen["xad"] == seen["torch"] == [((3, 5, 8), (3, 5, 12)), ((3, 5, 12), (3, 5, 8))]
    np.testing.assert_allclose(out.numpy(), plain, rtol=1e-12, atol=1e-12)


def test_unflatten(xb):
    x = xad.randn(2, 12, 3, dtype=f64, requires_grad=True)
    assert nn.Unflatten(1, (3, 4))(x).shape == (2, 3, 4, 3)
    assert nn.Unflatten(-1, (1, -1))(x).shape == (2, 12, 1, 3)
    t = torch.nn.Unflatten(1, (2, -1, 3))(torch.zeros(2, 12, 3))
    assert nn.Unflatten(1, (2, -1, 3))(x).shape == tuple(t.shape)
    assert xad.gradcheck(nn.Unflatten(1, (6, 2)), [x])
    y = nn.Sequential(nn.Flatten(), nn.Unflatten(1, (12, 3)))(x)
    np.testing.assert_array_equal(y.numpy(), x.numpy())


@pytest.mark.parametrize("make, call, match", [
    (lambda: nn.MultiheadAttention(10, 3), None, r"embed_dim \(10\).*num_heads \(3\)"),
    (lambda: nn.MultiheadAttention(8, 2), lambda m: m(*[xad.zeros(3, 2, 6)] * 3),
     r"\(embed_dim, kdim, vdim\) = \(8, 8, 8\).*query \(3, 2, 6\)"),
    (lambda: nn.MultiheadAttention(8, 2), lambda m: m(*[xad.zeros(3, 2, 8)] * 3,
                                                      attn_mask=xad.zeros(2, 3)),
     r"attn_mask must have shape \(3, 3\) or \(4, 3, 3\).*got \(2, 3\)"),
    (lambda: nn.MultiheadAttention(8, 2, batch_first=True),
     lambda m: m(*[xad.zeros(3, 2, 8)] * 3, key_padding_mask=xad.zeros(2, 3)),
     r"key_padding_mask must have shape \(3, 2\)"),
    (lambda: nn.MultiheadAttention(8, 2), lambda m: m(*[xad.zeros(3, 2, 8)] * 3,
                                                      is_causal=True), "pass attn_mask"),
    (lambda: nn.MultiheadAttention(8, 2), lambda m: m(xad.zeros(3, 2, 8), xad.zeros(4, 3, 8),
                                                      xad.zeros(4, 3, 8)),
     "different batch sizes"),
    (lambda: nn.TransformerEncoderLayer(8, 2, activation="swish"), None, "activation"),
    (lambda: nn.Unflatten(1, (5, -1)), lambda m: m(xad.zeros(2, 12)),
     r"axis 1 of size 12.*\(5, -1\)"),
])
def test_errors_name_the_layer_and_shapes(make, call, match):
    with pytest.raises(ValueError, match=match):
        m = make()
        call(m)
