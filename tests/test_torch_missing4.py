"""PyTorch names that ported code met as AttributeError (fourth round): the padding layers,
``Softshrink``/``Hardshrink``/``Threshold``, channel-wise and alpha dropout, ``Softmax2d``,
``Fold``/``Unfold``, ``LocalResponseNorm``, ``ChannelShuffle``; values and first and second
derivatives against torch 2.13 in float64 on every backend (dropout: its masks' structure
and statistics, since the random streams differ)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import xad
import xad.nn as nn
import xad.nn.functional as F

torch = pytest.importorskip("torch")
from torch_check import check_against_torch  # noqa: E402

F64 = xad.float64

PADS = [  # (layer name, constructor arguments, input shape)
    ("ZeroPad1d", (2,), (2, 3, 4)), ("ZeroPad2d", ((1, 0, 2, 1),), (3, 3, 4)),
    ("ZeroPad3d", (1,), (1, 2, 2, 3, 2)), ("ConstantPad1d", ((0, 2), 1.5), (3, 4)),
    ("ConstantPad2d", (1, -0.5), (1, 2, 3, 4)), ("ConstantPad3d", ((1, 0, 0, 1, 2, 0), 2.0),
                                                   (2, 2, 3, 2)),
    ("ReflectionPad1d", ((3, 1),), (2, 3, 4)), ("ReflectionPad2d", (2,), (3, 3, 4)),
    ("ReflectionPad3d", ((1, 0, 1, 1, 0, 1),), (1, 2, 2, 3, 2)),
    ("ReplicationPad1d", ((3, 1),), (3, 4)), ("ReplicationPad2d", ((2, 0, 1, 3),),
                                               (1, 2, 3, 4)),
    ("ReplicationPad3d", (1,), (2, 2, 3, 2)), ("CircularPad1d", ((2, 1),), (2, 3, 4)),
    ("CircularPad2d", ((1, 2, 0, 3),), (3, 3, 4)), ("CircularPad3d", ((1, 1, 2, 0, 0, 2),),
                                                     (1, 2, 2, 3, 2)),
]


@pytest.mark.parametrize("name, args, shape", PADS, ids=[p[0] for p in PADS])
def test_padding_layers_match_torch(xb, name, args, shape):
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    check_against_torch(ours, theirs, [shape], name)


def test_padding_layers_errors():
    with pytest.raises(ValueError, match="ZeroPad2d: padding must be an int or 4 ints"):
        nn.ZeroPad2d((1, 2, 3))
    with pytest.raises(ValueError, match=r"ReflectionPad2d: expected a 3-d .* got shape "
                                         r"\(2, 2\)"):
        nn.ReflectionPad2d(1)(xad.ones(2, 2))
    with pytest.raises(ValueError, match=r"CircularPad1d.*3-d \(batched\).*\(1, 1, 2, 2\)"):
        nn.CircularPad1d(1)(xad.ones(1, 1, 2, 2))
    assert nn.ConstantPad1d(1, 3.0)(xad.ones(2)).tolist() == [3.0, 1.0, 1.0, 3.0]  # any rank


def _shrink_input():
    """Random values and the kinks (``+-lambd``, 0, ``+-threshold``) exactly."""
    a = np.random.default_rng(3).uniform(-2, 2, 12)
    return np.concatenate([a, [0.5, -0.5, 0.0, 1.25, -1.25, 0.75]])


@pytest.mark.parametrize("name, args", [("Softshrink", ()), ("Softshrink", (1.25,)),
                                        ("Hardshrink", ()), ("Hardshrink", (1.25,)),
                                        ("Threshold", (0.75, -3.0)),
                                        ("Threshold", (-1.25, 2.0))])
def test_shrink_and_threshold_match_torch(xb, name, args):
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    a = _shrink_input()
    x = xad.tensor(a, dtype=F64, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    y, yt = ours(x), theirs(t)
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-14)
    (y * xad.tensor(a + 3, dtype=F64)).sum().backward()
    (yt * torch.tensor(a + 3)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())  # 0 at the kinks, as torch
    nan = xad.tensor([math.nan], dtype=F64)
    assert math.isnan(ours(nan).item()) and math.isnan(theirs(torch.tensor([math.nan])).item())
    check_against_torch(ours, theirs, [(2, 3)], name)


def test_threshold_inplace_and_integers(xb):
    a = [-1.0, 0.5, 2.0]
    x = xad.tensor(a, dtype=F64, requires_grad=True)
    y = x * 1
    v0 = y._version
    assert nn.Threshold(0.5, 7.0, inplace=True)(y) is y
    assert y._version == v0 + 1 and y.tolist() == [7.0, 7.0, 2.0]
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0]
    z = xad.tensor([0.0, 3.0])
    assert F.threshold_(z, 1.0, 5.0) is z and z.tolist() == [5.0, 3.0]
    i = F.threshold(xad.tensor([1, 2, 3]), 2.5, 7.5)
    it = torch.nn.functional.threshold(torch.tensor([1, 2, 3]), 2.5, 7.5)
    assert i.dtype == xad.int64 and i.tolist() == it.tolist()  # torch keeps the integer dtype
    with pytest.raises(ValueError, match="softshrink: lambd must be at least 0"):
        F.softshrink(xad.ones(2), -1.0)


def test_softmax2d_local_response_norm_channel_shuffle_match_torch(xb):
    check_against_torch(nn.Softmax2d(), torch.nn.Softmax2d(), [(2, 3, 2, 2)], "Softmax2d")
    check_against_torch(nn.Softmax2d(), torch.nn.Softmax2d(), [(3, 2, 2)], "Softmax2d 3-d")
    for size, shape in ((3, (2, 5, 3)), (2, (1, 4, 2, 3)), (4, (2, 3, 2, 1, 2)),
                        (7, (1, 3, 2))):
        kw = dict(alpha=0.3, beta=0.6, k=1.5)
        ours, theirs = nn.LocalResponseNorm(size, **kw), torch.nn.LocalResponseNorm(size, **kw)
        assert repr(ours) == repr(theirs)
        check_against_torch(ours, theirs, [shape], f"LocalResponseNorm {size} {shape}")
    for g, shape in ((2, (2, 6, 3)), (3, (1, 6, 2, 2)), (1, (2, 3, 2))):
        ours, theirs = nn.ChannelShuffle(g), torch.nn.ChannelShuffle(g)
        assert repr(ours) == repr(theirs)
        check_against_torch(ours, theirs, [shape], f"ChannelShuffle {g}")
    with pytest.raises(ValueError, match="Softmax2d: expected"):
        nn.Softmax2d()(xad.ones(2, 2))
    with pytest.raises(ValueError, match=r"channel_shuffle: .* 4 groups .* \(1, 6, 1\)"):
        F.channel_shuffle(xad.ones(1, 6, 1), 4)
    with pytest.raises(ValueError, match="local_response_norm: expected"):
        F.local_response_norm(xad.ones(2, 3), 2)


def test_fold_unfold_modules_match_torch(xb):
    kw = dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    ours, theirs = nn.Unfold(**kw), torch.nn.Unfold(**kw)
    assert repr(ours) == repr(theirs)
    check_against_torch(ours, theirs, [(2, 2, 4, 5)], "Unfold")
    blocks = theirs(torch.ones(2, 2, 4, 5)).shape
    ours, theirs = nn.Fold((4, 5), **kw), torch.nn.Fold((4, 5), **kw)
    assert repr(ours) == repr(theirs)
    check_against_torch(ours, theirs, [tuple(blocks)], "Fold")


@pytest.mark.parametrize("name, shape, spatial", [
    ("dropout1d", (64, 16, 5), 1), ("dropout1d", (400, 5), 1),
    ("dropout3d", (16, 16, 2, 3, 2), 3), ("dropout3d", (400, 2, 1, 3), 3)])
def test_channel_dropout_masks(xb, name, shape, spatial):
    xad.manual_seed(0)
    x = xad.tensor(np.random.default_rng(1).uniform(1, 2, shape), dtype=F64,
                   requires_grad=True)
    y = getattr(F, name)(x, 0.25)
    v, a = y.detach().numpy(), x.detach().numpy()
    kept = (v != 0).reshape(shape[:-spatial] + (-1,))
    assert np.all(kept == kept[..., :1])  # whole channels kept or dropped
    n = kept[..., 0].size  # the dropped share within 4 standard deviations of p
    assert abs(1 - kept[..., 0].mean() - 0.25) < 4 * math.sqrt(0.25 * 0.75 / n)
    np.testing.assert_allclose(v, np.where(v != 0, a / 0.75, 0.0), rtol=1e-15)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(v != 0, 1 / 0.75, 0.0))
    assert getattr(nn, name.capitalize())(0.25).eval()(x) is x
    with pytest.raises(ValueError, match=f"{name}: expected"):
        getattr(F, name)(xad.ones(*shape[-spatial:]), 0.5)
    z = xad.ones(*shape)
    assert getattr(F, name)(z, 0.5, inplace=True) is z and z._version == 1


def test_alpha_dropout_statistics_and_eval(xb):
    xad.manual_seed(0)
    a = np.random.default_rng(2).standard_normal(200_000)
    x = xad.tensor(a, dtype=F64, requires_grad=True)
    assert F.alpha_dropout(x, 0.2) is x  # training=False by default, as torch's
    assert nn.AlphaDropout(0.2).eval()(x) is x
    assert repr(nn.AlphaDropout(0.2)) == repr(torch.nn.AlphaDropout(0.2))
    for p in (0.1, 0.5):
        y = nn.AlphaDropout(p)(x)
        v = y.detach().numpy()
        assert abs(v.mean()) < 0.01 and abs(v.std() - 1) < 0.01  # mean 0, variance 1 kept
        alpha = 1.7580993408473766
        ca = 1 / math.sqrt((alpha ** 2 * p + 1) * (1 - p))
        y.sum().backward()
        g = x.grad.numpy()
        x.grad = None
        dropped = g == 0
        assert abs(dropped.mean() - p) < 0.01
        np.testing.assert_allclose(g[~dropped], ca)
        np.testing.assert_allclose(v[~dropped], ca * a[~dropped] + alpha * ca * p)
        np.testing.assert_allclose(v[dropped], -alpha * ca * (1 - p))
    assert F.alpha_dropout(x, 1.0, True).abs().sum().item() == 0.0  # torch: all zero
