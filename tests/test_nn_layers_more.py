"""More layers of xad.nn against PyTorch in float64 on every backend: interpolate and
Upsample, PixelShuffle, 1-d and adaptive-max pooling, InstanceNorm, EmbeddingBag, Bilinear,
the Transformer decoder and Transformer, the containers, and the Tensor methods scatter,
index_add, index_fill, masked_fill_, topk, kthvalue (values, first and second derivatives)."""

from __future__ import annotations

import numpy as np
import pytest

import xad
import xad.nn as nn
import xad.nn.functional as F

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402
from torch_check import check_against_torch  # noqa: E402

f64 = xad.float64

INTERP = [  # (shape, keywords)
    ((1, 2, 3, 4), dict(scale_factor=2)),
    ((1, 2, 3, 4), dict(size=(5, 7))),
    ((1, 2, 5, 4), dict(size=(3, 3))),
    ((1, 2, 3, 4), dict(size=(5, 7), mode="nearest-exact")),
    ((2, 1, 3, 4), dict(size=(5, 3), mode="bilinear", align_corners=False)),
    ((2, 1, 3, 4), dict(size=(5, 3), mode="bilinear", align_corners=True)),
    ((1, 2, 3, 4), dict(scale_factor=1.5, mode="bilinear", align_corners=False)),
    ((1, 2, 3, 4), dict(size=(1, 6), mode="bilinear", align_corners=True)),
    ((2, 2, 5), dict(size=8, mode="linear", align_corners=False)),
    ((2, 2, 5), dict(scale_factor=0.5, mode="linear", align_corners=True)),
    ((2, 2, 5), dict(scale_factor=3)),
]


@pytest.mark.parametrize("shape, kw", INTERP, ids=[str(kw) for _, kw in INTERP])
def test_interpolate_matches_torch(xb, shape, kw):
    check_against_torch(lambda x: F.interpolate(x, **kw), lambda x: TF.interpolate(x, **kw),
                        [shape], f"interpolate {kw}")


def test_upsample_modules_match_functional(xb):
    x = xad.randn(1, 2, 3, 3, dtype=f64)
    t = torch.tensor(x.numpy())
    for xm, tm in [(nn.Upsample(scale_factor=2, mode="bilinear"),
                    torch.nn.Upsample(scale_factor=2, mode="bilinear")),
                   (nn.UpsamplingBilinear2d(size=(4, 5)), torch.nn.UpsamplingBilinear2d((4, 5))),
                   (nn.UpsamplingNearest2d(scale_factor=2), torch.nn.UpsamplingNearest2d(
                       scale_factor=2))]:
        np.testing.assert_allclose(xm(x).numpy(), tm(t).numpy(), rtol=1e-12, atol=1e-12)


def test_pixel_shuffle_round_trip_matches_torch(xb):
    check_against_torch(lambda x: F.pixel_shuffle(x, 2), lambda x: TF.pixel_shuffle(x, 2),
                        [(2, 8, 2, 3)], "pixel_shuffle")
    check_against_torch(lambda x: F.pixel_unshuffle(x, 2), lambda x: TF.pixel_unshuffle(x, 2),
                        [(3, 2, 4, 6)], "pixel_unshuffle")
    x = xad.randn(1, 8, 2, 3)
    assert (nn.PixelUnshuffle(2)(nn.PixelShuffle(2)(x)).numpy() == x.numpy()).all()


POOLS = [
    ("max_pool1d", (2, 3, 9), dict(kernel_size=3, stride=2, padding=1)),
    ("max_pool1d", (3, 7), dict(kernel_size=2, dilation=2, ceil_mode=True)),
    ("avg_pool1d", (2, 3, 9), dict(kernel_size=3, stride=2, padding=1,
                                   count_include_pad=False)),
    ("avg_pool1d", (2, 3, 8), dict(kernel_size=3, ceil_mode=True)),
    ("adaptive_avg_pool1d", (2, 3, 7), dict(output_size=3)),
    ("adaptive_max_pool1d", (2, 3, 7), dict(output_size=3)),
    ("adaptive_max_pool2d", (2, 2, 7, 5), dict(output_size=(3, 2))),
    ("adaptive_max_pool2d", (2, 5, 4), dict(output_size=(None, 3))),
]


@pytest.mark.parametrize("name, shape, kw", POOLS, ids=[f"{n}-{k}" for n, _, k in POOLS])
def test_pooling_matches_torch(xb, name, shape, kw):
    check_against_torch(lambda x: getattr(F, name)(x, **kw),
                        lambda x: getattr(TF, name)(x, **kw), [shape], name)


def test_pooling_modules(xb):
    x = xad.randn(2, 3, 8, dtype=f64)
    assert nn.MaxPool1d(2)(x).shape == (2, 3, 4) and nn.AvgPool1d(3, 1)(x).shape == (2, 3, 6)
    assert nn.AdaptiveAvgPool1d(1)(x).shape == (2, 3, 1)
    assert nn.AdaptiveMaxPool2d(2)(x).shape == (2, 2, 2)


def test_adaptive_max_gradient_goes_to_first_tied_maximum(xb):
    x = xad.zeros(1, 1, 3, 3, dtype=f64, requires_grad=True)
    t = torch.zeros(1, 1, 3, 3, dtype=torch.float64, requires_grad=True)
    F.adaptive_max_pool2d(x, 2).sum().backward()
    TF.adaptive_max_pool2d(t, 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_instance_norm_matches_torch(xb):
    check_against_torch(lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
                        lambda x, w, b: TF.instance_norm(x, weight=w, bias=b),
                        [(2, 3, 4, 5), (3,), (3,)], "instance_norm")


@pytest.mark.parametrize("cls", ["InstanceNorm1d", "InstanceNorm2d"])
def test_instance_norm_modules_match_torch(xb, cls):
    kw = dict(affine=True, track_running_stats=True, momentum=0.3)
    xm, tm = getattr(nn, cls)(3, **kw, dtype=f64), getattr(torch.nn, cls)(3, **kw).double()
    assert list(xm.state_dict()) == list(tm.state_dict())
    shape = (2, 3, 6) if cls == "InstanceNorm1d" else (2, 3, 3, 4)
    a = np.random.default_rng(0).standard_normal(shape) * 2 + 1
    for _ in range(2):
        np.testing.assert_allclose(xm(xad.tensor(a)).numpy(), tm(torch.tensor(a)).detach(),
                                   atol=1e-12)
    for k in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(xm, k).numpy(), getattr(tm, k).numpy(), atol=1e-12)
    xm.eval(), tm.eval()
    np.testing.assert_allclose(xm(xad.tensor(a[0])).numpy(), tm(torch.tensor(a[0])).detach(),
                               atol=1e-12)


def test_bilinear_matches_torch(xb):
    check_against_torch(F.bilinear, TF.bilinear, [(2, 3, 4), (2, 3, 5), (6, 4, 5), (6,)],
                        "bilinear")
    xm, tm = nn.Bilinear(4, 5, 6), torch.nn.Bilinear(4, 5, 6)
    assert list(xm.state_dict()) == list(tm.state_dict())
    assert xm.weight.shape == tuple(tm.weight.shape)
    assert float(abs(xm.weight).max()) <= 0.5


BAGS = [(m, psw) for m in ("sum", "mean", "max") for psw in (False, True) if
        not psw or m == "sum"]


@pytest.mark.parametrize("mode, psw", BAGS, ids=[f"{m}-psw={p}" for m, p in BAGS])
def test_embedding_bag_matches_torch(xb, mode, psw):
    idx = [1, 2, 4, 5, 4, 3, 2, 9, 0]
    offs = [0, 2, 2, 5]  # one empty bag
    w_psw = np.random.default_rng(2).standard_normal(len(idx))
    xi, ti = xad.tensor(idx), torch.tensor(idx)
    xo, to = xad.tensor(offs), torch.tensor(offs)
    xp = xad.tensor(w_psw) if psw else None
    tp = torch.tensor(w_psw) if psw else None
    check_against_torch(lambda w: F.embedding_bag(xi, w, xo, mode=mode, per_sample_weights=xp),
                        lambda w: TF.embedding_bag(ti, w, to, mode=mode,
                                                   per_sample_weights=tp),
                        [(10, 3)], f"embedding_bag {mode}")


def test_embedding_bag_2d_padding_and_last_offset_match_torch(xb):
    a = np.random.default_rng(0).standard_normal((6, 2))
    idx = [[1, 0, 2], [0, 0, 5]]
    for mode in ("sum", "mean", "max"):
        x = F.embedding_bag(xad.tensor(idx), xad.tensor(a), mode=mode, padding_idx=0)
        t = TF.embedding_bag(torch.tensor(idx), torch.tensor(a), mode=mode, padding_idx=0)
        np.testing.assert_allclose(x.numpy(), t.numpy(), atol=1e-12)
    kw = dict(mode="mean", include_last_offset=True)
    x = F.embedding_bag(xad.tensor([1, 2, 3, 4]), xad.tensor(a), xad.tensor([0, 1, 4]), **kw)
    t = TF.embedding_bag(torch.tensor([1, 2, 3, 4]), torch.tensor(a), torch.tensor([0, 1, 4]),
                         **kw)
    np.testing.assert_allclose(x.numpy(), t.numpy(), atol=1e-12)
    xm, tm = nn.EmbeddingBag(6, 2, mode="max"), torch.nn.EmbeddingBag(6, 2, mode="max")
    assert list(xm.state_dict()) == list(tm.state_dict())


def test_embedding_from_pretrained_matches_torch(xb):
    """`from_pretrained` (was missing): the weight as given (padding row not zeroed), frozen
    by default, trained with freeze=False; values, gradients and max_norm's in-place
    renormalisation as PyTorch's."""
    a = np.random.default_rng(3).standard_normal((5, 3))
    idx = [[1, 0, 4], [4, 4, 2]]
    for kw in (dict(), dict(freeze=False, padding_idx=0), dict(freeze=False, max_norm=0.7)):
        xm = nn.Embedding.from_pretrained(xad.tensor(a), **kw)
        tm = torch.nn.Embedding.from_pretrained(torch.tensor(a), **kw)
        assert xm.weight.requires_grad == tm.weight.requires_grad
        assert (xm.padding_idx, xm.max_norm) == (tm.padding_idx, tm.max_norm)
        xo, to = xm(xad.tensor(idx)), tm(torch.tensor(idx))
        np.testing.assert_allclose(xo.numpy(), to.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(xm.weight.numpy(), tm.weight.detach().numpy(), rtol=1e-12)
        if tm.weight.requires_grad:
            w = np.random.default_rng(1).standard_normal(tuple(to.shape))
            (xo * xad.tensor(w)).sum().backward()
            (to * torch.tensor(w)).sum().backward()
            np.testing.assert_allclose(xm.weight.grad.numpy(), tm.weight.grad.numpy(),
                                       rtol=1e-12)
    for mode in ("sum", "mean", "max"):
        xb_ = nn.EmbeddingBag.from_pretrained(xad.tensor(a), mode=mode, padding_idx=4)
        tb = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(a), mode=mode, padding_idx=4)
        assert xb_.weight.requires_grad is False
        np.testing.assert_allclose(xb_(xad.tensor(idx)).numpy(),
                                   tb(torch.tensor(idx)).detach().numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="Embedding.from_pretrained: .*2-d"):
        nn.Embedding.from_pretrained(xad.ones(3))


def test_embedding_bag_max_refuses_scale_grad_by_freq(xb):
    """PyTorch refuses scale_grad_by_freq in mode 'max'; xad scaled the gradient instead."""
    w = xad.ones(4, 2, requires_grad=True)
    with pytest.raises(ValueError, match="embedding_bag: scale_grad_by_freq"):
        F.embedding_bag(xad.tensor([[1, 2]]), w, mode="max", scale_grad_by_freq=True)
    with pytest.raises(ValueError, match="embedding_bag: scale_grad_by_freq"):
        nn.EmbeddingBag(4, 2, mode="max", scale_grad_by_freq=True)(xad.tensor([[1, 2]]))


def _load(xmod: nn.Module, tmod) -> None:
    assert list(xmod.state_dict()) == list(tmod.state_dict())
    xmod.load_state_dict({k: xad.tensor(v.detach().numpy()) for k, v in
                          tmod.state_dict().items()})


def _compare(xo, to, xmod, tmod) -> None:
    np.testing.assert_allclose(xo.numpy(), to.detach().numpy(), rtol=1e-9, atol=1e-10)
    w = np.random.default_rng(1).standard_normal(tuple(to.shape))
    (xo * xad.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    tgrads = dict(tmod.named_parameters())
    for name, p in xmod.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tgrads[name].grad.numpy(), rtol=1e-8,
                                   atol=1e-10, err_msg=name)


def test_decoder_matches_torch(xb, bf=False, nf=True):  # Transformer below: the other two
    torch.manual_seed(0)
    kw = dict(dim_feedforward=12, dropout=0.1, batch_first=bf, norm_first=nf)
    tl = torch.nn.TransformerDecoderLayer(8, 2, **kw).double()
    td = torch.nn.TransformerDecoder(tl, 2, norm=torch.nn.LayerNorm(8).double()).eval()
    xd = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, **kw, dtype=f64), 2,
                               norm=nn.LayerNorm(8, dtype=f64)).eval()
    _load(xd, td)
    rng = np.random.default_rng(0)
    n, s, m = 2, 4, 3
    tgt, mem = (rng.standard_normal((n, k, 8) if bf else (k, n, 8)) for k in (s, m))
    mask = np.triu(np.full((s, s), -np.inf), 1)
    pad = np.zeros((n, m), bool)
    pad[1, 2] = True
    xo = xd(xad.tensor(tgt), xad.tensor(mem), tgt_mask=xad.tensor(mask),
            memory_key_padding_mask=xad.tensor(pad))
    to = td(torch.tensor(tgt), torch.tensor(mem), tgt_mask=torch.tensor(mask),
            memory_key_padding_mask=torch.tensor(pad))
    _compare(xo, to, xd, td)


def test_transformer_matches_torch(xb):
    torch.manual_seed(0)
    kw = dict(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=2,
              dim_feedforward=12, dropout=0.0, batch_first=True)
    tt, xt = torch.nn.Transformer(**kw).double(), nn.Transformer(**kw, dtype=f64)
    _load(xt, tt)
    rng = np.random.default_rng(0)
    src, tgt = rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 3, 8))
    xm = nn.Transformer.generate_square_subsequent_mask(3, dtype=f64)
    tm = torch.nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64)
    np.testing.assert_array_equal(xm.numpy(), tm.numpy())
    xo = xt(xad.tensor(src), xad.tensor(tgt), tgt_mask=xm)
    to = tt(torch.tensor(src), torch.tensor(tgt), tgt_mask=tm)
    _compare(xo, to, xt, tt)
    w = xt.encoder.layers[0].linear1.weight  # Xavier-uniform: bound sqrt(6 / (8 + 12))
    assert float(abs(w).max()) <= (6 / 20) ** 0.5


def test_containers_register_like_torch():
    xd = nn.ModuleDict({"a": nn.Linear(2, 3), "b": nn.ReLU()})
    xd["c"] = nn.Linear(3, 1)
    td = torch.nn.ModuleDict({"a": torch.nn.Linear(2, 3), "b": torch.nn.ReLU()})
    td["c"] = torch.nn.Linear(3, 1)
    assert list(xd.state_dict()) == list(td.state_dict()) and list(xd) == list(td)
    assert "a" in xd and len(xd) == 3 and xd.pop("b") is not None and list(xd) == ["a", "c"]
    pl = nn.ParameterList([xad.zeros(2), nn.Parameter(xad.ones(3))])
    pl.append(xad.ones(1))
    assert list(pl.state_dict()) == ["0", "1", "2"] and pl[-1].shape == (1,)
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(list(pl.parameters())) == 3
    pd = nn.ParameterDict({"s": xad.ones(2)})
    pd.update([("t", xad.zeros(1))])
    assert list(pd.state_dict()) == ["s", "t"] and isinstance(pd["t"], nn.Parameter)
    assert pd.pop("s").shape == (2,) and list(pd.keys()) == ["t"]


METHODS = [  # (name, xad function, torch function, shapes)
    ("scatter", lambda x, s: x.scatter(1, xad.tensor([[2, 0], [1, 3]]), s),
     lambda x, s: x.scatter(1, torch.tensor([[2, 0], [1, 3]]), s), [(2, 4), (2, 2)]),
    ("scatter value", lambda x: x.scatter(0, xad.tensor([[1, 0, 1]]), 2.5),
     lambda x: x.scatter(0, torch.tensor([[1, 0, 1]]), 2.5), [(2, 3)]),
    ("index_add", lambda x, s: x.index_add(1, xad.tensor([2, 0, 2]), s, alpha=2.0),
     lambda x, s: x.index_add(1, torch.tensor([2, 0, 2]), s, alpha=2.0), [(2, 4), (2, 3)]),
    ("index_fill", lambda x: x.index_fill(0, xad.tensor([-1, 0]), -1.5),
     lambda x: x.index_fill(0, torch.tensor([-1, 0]), -1.5), [(3, 2)]),
    ("topk", lambda x: x.topk(2, dim=0)[0] * 1.0, lambda x: x.topk(2, dim=0)[0], [(4, 3)]),
    ("topk smallest", lambda x: x.topk(3, largest=False).values,
     lambda x: x.topk(3, largest=False).values, [(2, 5)]),
    ("kthvalue", lambda x: x.kthvalue(2, dim=1, keepdim=True)[0],
     lambda x: x.kthvalue(2, dim=1, keepdim=True)[0], [(3, 4)]),
]


@pytest.mark.parametrize("name, xf, tf, shapes", METHODS, ids=[m[0] for m in METHODS])
def test_tensor_methods_match_torch(xb, name, xf, tf, shapes):
    check_against_torch(xf, tf, shapes, name)


def test_indices_of_topk_and_kthvalue_match_torch(xb):
    a = np.random.default_rng(3).standard_normal((3, 5))
    x, t = xad.tensor(a), torch.tensor(a)
    np.testing.assert_array_equal(x.topk(3).indices.numpy(), t.topk(3).indices.numpy())
    np.testing.assert_array_equal(x.kthvalue(2, 0).indices.numpy(),
                                  t.kthvalue(2, 0).indices.numpy())


def test_in_place_methods_match_torch_with_gradients(xb):
    a = np.random.default_rng(4).standard_normal((3, 4))
    idx = [[0, 2, 1, 3], [1, 0, 3, 2]]
    res = []
    for lib, mk, ix in ((xad, xad.tensor, xad.tensor), (torch, torch.tensor, torch.tensor)):
        p = mk(a, requires_grad=True) if lib is torch else mk(a, dtype=f64, requires_grad=True)
        y = p * 2
        y.masked_fill_(y > 1, 0.5)
        y.scatter_(1, ix(idx)[:, :2], 3.0)
        y.index_add_(0, ix([2, 2]), y[:2] * 1.5)
        y.index_fill_(1, ix([3]), -2.0)
        y.scatter_add_(1, ix(idx), y[:2] * 0.5)
        (y * y).sum().backward()
        res.append((y.detach().numpy() if lib is torch else y.numpy(), p.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], atol=1e-12)
    np.testing.assert_allclose(res[0][1], res[1][1], atol=1e-12)


def test_bad_input_names_the_operation():
    with pytest.raises(ValueError, match="interpolate"):
        F.interpolate(xad.ones(1, 1, 2, 2), size=3, scale_factor=2)
    with pytest.raises(ValueError, match="pixel_shuffle"):
        F.pixel_shuffle(xad.ones(1, 3, 2, 2), 2)
    with pytest.raises(ValueError, match="index_add"):
        xad.zeros(3, 2).index_add(0, xad.tensor([0]), xad.ones(2, 2))
    with pytest.raises(IndexError, match="scatter"):
        xad.zeros(3).scatter(0, xad.tensor([3]), 1.0)
    with pytest.raises(IndexError, match="index_fill"):
        xad.zeros(3).index_fill(0, xad.tensor([3]), 1.0)  # was silently ignored
    with pytest.raises(ValueError, match="topk"):
        xad.zeros(3).topk(4)
    with pytest.raises(ValueError, match="bilinear"):
        F.bilinear(xad.ones(2, 3), xad.ones(2, 4), xad.ones(1, 3, 5))


CTC = [("mean", 2), ("sum", 1), ("none", 2)]


@pytest.mark.parametrize("reduction, ndim", CTC, ids=[f"{r}-{d}d" for r, d in CTC])
def test_ctc_loss_matches_torch(xb, reduction, ndim):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((7, 3, 5))
    tgt = [[1, 2, 2], [3, 0, 0], [4, 1, 0]]  # repeats need a blank between them
    tl, il = [3, 1, 2], [7, 5, 6]
    flat = [v for row, k in zip(tgt, tl) for v in row[:k]]
    xt, tt = (xad.tensor(tgt), torch.tensor(tgt)) if ndim == 2 else \
        (xad.tensor(flat), torch.tensor(flat))
    x = xad.tensor(a, dtype=f64, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    xl = F.ctc_loss(F.log_softmax(x, dim=-1), xt, xad.tensor(il), xad.tensor(tl),
                    reduction=reduction)
    tl_ = TF.ctc_loss(TF.log_softmax(t, dim=-1), tt, torch.tensor(il), torch.tensor(tl),
                      reduction=reduction)
    np.testing.assert_allclose(xl.numpy(), tl_.detach().numpy(), rtol=1e-10)
    w = rng.standard_normal(tuple(tl_.shape))
    (xl * xad.tensor(w)).sum().backward()
    (tl_ * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss_of_one_unbatched_sequence_matches_torch(xb, reduction):
    # (T, C) log-probabilities with (S,) targets and 0-d lengths, as PyTorch's (it raised)
    a = np.sin(np.arange(24.0).reshape(6, 4) * 0.37)
    x = xad.tensor(a, dtype=f64, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    xl = F.ctc_loss(F.log_softmax(x, dim=-1), xad.tensor([1, 3, 3]), xad.tensor(6),
                    xad.tensor(3), blank=0, reduction=reduction)
    tl = TF.ctc_loss(TF.log_softmax(t, dim=-1), torch.tensor([1, 3, 3]), torch.tensor(6),
                     torch.tensor(3), blank=0, reduction=reduction)
    assert xl.shape == tuple(tl.shape) == ()
    np.testing.assert_allclose(xl.numpy(), tl.detach().numpy(), rtol=1e-12)
    xl.backward()
    tl.backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_ctc_impossible_alignment_is_infinite_or_zeroed(xb):
    x = xad.randn(2, 1, 3, dtype=f64, requires_grad=True)
    lp = F.log_softmax(x, dim=-1)
    tgt = xad.tensor([[1, 1]])  # needs 3 frames, has 2
    assert nn.CTCLoss(reduction="sum")(lp, tgt, [2], [2]).item() == float("inf")
    z = nn.CTCLoss(zero_infinity=True)(lp, tgt, [2], [2])
    z.backward()
    assert z.item() == 0.0 and (x.grad.numpy() == 0).all()  # PyTorch's: zero, not NaN
