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


# ---- torch functions (item 2): values, first and second derivatives against torch ----

T = None  # the as_torch namespace, made once


def _t():
    global T
    if T is None:
        from xad import as_torch
        T = as_torch.namespace()["torch"]
    return T


def _same_fn(name):
    """``torch.<name>`` of xad's namespace and of torch, called alike."""
    return (lambda *a, **k: getattr(_t(), name)(*a, **k),
            lambda *a, **k: getattr(torch, name)(*a, **k))


FUNCTIONS = [  # (case, call(f, *inputs), shapes)
    ("kron", lambda f, a, b: f.kron(a, b), [(2, 3), (3, 1, 2)]),
    ("inner", lambda f, a, b: f.inner(a, b), [(2, 3), (4, 3)]),
    ("vdot", lambda f, a, b: f.vdot(a, b), [(4,), (4,)]),
    ("addmv", lambda f, i, m, v: f.addmv(i, m, v, beta=0.5, alpha=-2), [(3,), (3, 4), (4,)]),
    ("addr", lambda f, i, a, b: f.addr(i, a, b, beta=2, alpha=0.5), [(3, 1), (3,), (4,)]),
    ("baddbmm", lambda f, i, a, b: f.baddbmm(i, a, b, beta=0.5, alpha=1.5),
     [(2, 3, 1), (2, 3, 4), (2, 4, 2)]),
    ("addbmm", lambda f, i, a, b: f.addbmm(i, a, b, alpha=-1), [(3, 2), (2, 3, 4), (2, 4, 2)]),
    ("cov", lambda f, a, w: f.cov(a, aweights=w.abs() + 0.1, correction=2), [(3, 5), (5,)]),
    ("corrcoef", lambda f, a: f.corrcoef(a), [(3, 5)]),
    ("trapezoid dx", lambda f, y: f.trapezoid(y, dx=0.5, dim=0), [(4, 3)]),
    ("trapezoid x", lambda f, y, x: f.trapezoid(y, x), [(3, 4), (4,)]),
    ("trapezoid xy", lambda f, y, x: f.trapezoid(y, x, dim=0), [(4, 3), (4, 3)]),
    ("diag_embed", lambda f, a: f.diag_embed(a, 1, 0, 2), [(2, 3)]),
    ("diag_embed -2", lambda f, a: f.diag_embed(a, -2), [(2, 3)]),
    ("diagflat", lambda f, a: f.diagflat(a, -1), [(2, 2)]),
    ("select_scatter", lambda f, a, s: f.select_scatter(a, s, 1, -1), [(3, 4), (3,)]),
    ("slice_scatter", lambda f, a, s: f.slice_scatter(a, s, 1, 1, None, 2), [(3, 5), (3, 2)]),
    ("diagonal_scatter", lambda f, a, s: f.diagonal_scatter(a, s, 1, 2, 0), [(4, 2, 3), (2, 3)]),
    ("adjoint", lambda f, a: f.adjoint(a) * 1, [(2, 3, 4)]),
    ("select", lambda f, a: f.select(a, -2, 1) * 1, [(2, 3, 4)]),
    ("sinc", lambda f, a: f.sinc(a), [(3, 4)]),
    ("ldexp", lambda f, a, e: f.ldexp(a, e), [(3,), (3,)]),
    ("frexp", lambda f, a: f.frexp(a)[0], [(3, 4)]),
]


@pytest.mark.parametrize("case, call, shapes", FUNCTIONS, ids=[c[0] for c in FUNCTIONS])
def test_torch_functions_match_torch(xb, case, call, shapes):
    check_against_torch(lambda *a: call(_t(), *a), lambda *a: call(torch, *a), shapes, case)


def _np(t):
    return t.numpy() if isinstance(t, xad.Tensor) else t.detach().numpy(force=True)


def test_integer_and_float_parts_match_torch(xb):
    a = [0, -4, 6, 9, 7, -12, 2 ** 30 + 1, 1, 0]
    b = [0, 6, -4, 0, 13, -18, 3 * (2 ** 29), -1, 5]
    for dt, tdt in ((xad.int64, torch.int64), (xad.int32, torch.int32)):
        x, y = xad.tensor(a, dtype=dt), xad.tensor(b, dtype=dt)
        xt, yt = torch.tensor(a, dtype=tdt), torch.tensor(b, dtype=tdt)
        for name in ("gcd", "lcm"):
            ours, theirs = getattr(x, name)(y), getattr(xt, name)(yt)
            assert ours.dtype == dt and ours.tolist() == theirs.tolist(), name
    assert xad.gcd(xad.tensor([2 ** 62, 3 ** 39]), 2 ** 40).tolist() == \
        torch.gcd(torch.tensor([2 ** 62, 3 ** 39]), torch.tensor(2 ** 40)).tolist()
    v = [0.0, -0.0, -3.0, 1e-310, 5e-324, 1.7e308, 0.5, 1.0, math.inf, -math.inf, math.nan,
         0.1, 2.0 ** -1022]
    x = xad.tensor(v, dtype=F64)
    m, e = xad.frexp(x)  # torch's of the values as the backend computes with them (JAX's
    mt, et = torch.frexp(torch.tensor((x * 1).tolist(), dtype=torch.float64))  # XLA: 0 for
    np.testing.assert_array_equal(_np(m), _np(mt))  # a subnormal; the others keep them)
    assert e.dtype == xad.int32 and e.tolist() == et.tolist()
    x32 = xad.tensor([3.0, 1e-40, 0.75])  # float32's subnormals too
    m32, e32 = xad.frexp(x32)
    mt32, et32 = torch.frexp(torch.tensor((x32 * 1).tolist()))
    np.testing.assert_array_equal(_np(m32), _np(mt32))
    assert e32.tolist() == et32.tolist()
    f = [-2.5, -0.5, 0.7, 3.999, -0.0]
    assert xad.tensor(f, dtype=F64).fix().tolist() == torch.tensor(f).fix().tolist()
    ints = xad.tensor([1, 2, -3]), torch.tensor([1, 2, -3])
    for f in ("sinc", "fix"):
        ours, theirs = getattr(xad, f)(ints[0]), getattr(torch, f)(ints[1])
        assert str(ours.dtype).endswith(str(theirs.dtype).rsplit(".")[-1])
        np.testing.assert_allclose(_np(ours), _np(theirs), rtol=1e-7)
    ours, theirs = xad.ldexp(ints[0], ints[0]), torch.ldexp(ints[1], ints[1])
    assert ours.dtype == xad.float32 and ours.tolist() == theirs.tolist()
    with pytest.raises(TypeError, match="gcd: integer tensors only"):
        xad.gcd(xad.ones(2), xad.ones(2))
    with pytest.raises(TypeError, match="frexp: floating-point input only"):
        xad.frexp(xad.tensor([1, 2]))


def test_sinc_at_zero_has_torch_derivatives(xb):
    x = xad.tensor([0.0, 1e-9, 0.5], dtype=F64, requires_grad=True)
    t = torch.tensor([0.0, 1e-9, 0.5], dtype=torch.float64, requires_grad=True)
    (g,) = xad.autograd.grad(xad.sinc(x).sum(), [x], create_graph=True)
    (gt,) = torch.autograd.grad(torch.sinc(t).sum(), [t], create_graph=True)
    np.testing.assert_allclose(_np(g), _np(gt), atol=1e-7)
    assert g.tolist()[0] == 0.0


def test_splits_argwhere_and_queries_match_torch(xb):
    a = np.arange(24.0).reshape(2, 3, 4) - 5
    x, t = xad.tensor(a, dtype=F64), torch.tensor(a)
    for name, arg in (("vsplit", 2), ("vsplit", [1]), ("hsplit", [1, 2]), ("hsplit", 3),
                      ("dsplit", 2), ("dsplit", [3, 1])):
        ours, theirs = getattr(xad, name)(x, arg), getattr(torch, name)(t, arg)
        assert [_np(o).tolist() for o in ours] == [_np(o).tolist() for o in theirs], name
    ours = xad.split_with_sizes(x, [1, 3], dim=-1)
    assert [_np(o).tolist() for o in ours] == [_np(o).tolist()
                                               for o in torch.split_with_sizes(t, [1, 3], -1)]
    with pytest.raises(ValueError, match="vsplit: dim 0 of size 2 .* 3 equal parts"):
        xad.vsplit(x, 3)
    with pytest.raises(ValueError, match="split_with_sizes: sizes \\[1, 2\\]"):
        xad.split_with_sizes(x, [1, 2], dim=-1)
    for v in (a % 3, np.float64(0.0), np.float64(2.0)):
        assert _t().argwhere(xad.tensor(v)).tolist() == torch.argwhere(torch.tensor(v)).tolist()
    s = [1.0, -math.inf, math.inf, math.nan, 0.0]
    xs, ts = xad.tensor(s, dtype=F64), torch.tensor(s, dtype=torch.float64)
    for name in ("isneginf", "isposinf", "isreal"):
        assert getattr(xs, name)().tolist() == getattr(ts, name)().tolist()
    c = xad.tensor([1 + 0j, 2j]), torch.tensor([1 + 0j, 2j])
    assert c[0].isreal().tolist() == c[1].isreal().tolist()
    for kw in ({}, {"dim": 1}, {"dim": -1, "keepdim": True}):
        (lo, hi), (lt_, ht) = x.aminmax(**kw), t.aminmax(**kw)
        assert _np(lo).tolist() == _np(lt_).tolist() and _np(hi).tolist() == _np(ht).tolist()
        assert x.aminmax(**kw).max is not None
    assert _np(x.msort()).tolist() == _np(t.msort()).tolist()
    for dt, tdt in ((xad.uint8, torch.uint8), (xad.bool_, torch.bool), (xad.int16, torch.int16),
                    (xad.float32, torch.float32)):
        assert xad.zeros(1, dtype=dt).is_signed() == torch.zeros(1, dtype=tdt).is_signed()
    assert x.is_same_size(x * 2) and not x.is_same_size(x[0])
    assert xad.tensor([3.0]).is_nonzero() and not xad.tensor(0).is_nonzero()
    with pytest.raises(RuntimeError, match="is_nonzero: a tensor of one element"):
        xad.ones(2).is_nonzero()
    assert x.get_device() == (getattr(xb.device, "id", 0) if x.is_cuda else -1)
    assert not x.is_inference()
    assert x.cdouble().dtype == xad.complex128 and x.cfloat().dtype == xad.complex64


def test_old_linalg_spellings_match_torch(xb):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((4, 3))
    spd = a.T @ a + np.eye(3)
    for some in (True, False):
        x, t = xad.tensor(a, dtype=F64, requires_grad=True), torch.tensor(a, requires_grad=True)
        (u, s, v), (ut, st, vt) = _t().svd(x, some=some), torch.svd(t, some=some)
        assert u.shape == tuple(ut.shape) and v.shape == tuple(vt.shape)
        q, r = x.detach().qr(some=some)
        qt, rt = torch.qr(t.detach(), some=some)
        assert q.shape == tuple(qt.shape) and r.shape == tuple(rt.shape)
        np.testing.assert_allclose(np.abs(_np(r)), np.abs(_np(rt)), atol=1e-12)
        k = 3  # U diag(S) V^T rebuilt, and a sign-free function of U and V for the gradient
        rec = (u[:, :k] * s) @ v[:, :k].mT
        np.testing.assert_allclose(_np(rec), a, atol=1e-12)
        np.testing.assert_allclose(_np(s), _np(st), rtol=1e-12)
        loss = s.sum() + ((u[:, :k] * u[:, :k]) ** 2).sum() + (v[:, :k] ** 4).sum()
        lt = st.sum() + ((ut[:, :k] * ut[:, :k]) ** 2).sum() + (vt[:, :k] ** 4).sum()
        if not some:  # torch ignores the extra columns' gradient; xad refuses (PORTING)
            with pytest.raises(NotImplementedError, match="full_matrices"):
                loss.backward()
            continue
        loss.backward()
        lt.backward()
        np.testing.assert_allclose(_np(x.grad), _np(t.grad), rtol=1e-9, atol=1e-10)
    u, s, v = xad.tensor(a, dtype=F64).svd(compute_uv=False)
    assert u.shape == (4, 4) and v.shape == (3, 3) and not u.abs().sum().item()
    check_against_torch(lambda m: m.svd()[1], lambda m: torch.svd(m)[1], [(4, 3)], "svd S")
    for upper in (False, True):
        x, t = xad.tensor(spd, dtype=F64), torch.tensor(spd)
        np.testing.assert_allclose(_np(x.cholesky(upper=upper)),
                                   _np(torch.cholesky(t, upper=upper)), rtol=1e-12)
    sq = spd + 0.5 * np.tril(np.ones((3, 3)), -1)
    for name, f, g in (("inverse", lambda m: m.inverse(), torch.inverse),
                       ("matrix_power", lambda m: m.matrix_power(3),
                        lambda m: torch.matrix_power(m, 3)),
                       ("matrix_power -2", lambda m: _t().matrix_power(m, -2),
                        lambda m: torch.matrix_power(m, -2)),
                       ("pinverse", lambda m: m.pinverse(), torch.pinverse),
                       ("det", lambda m: m.det(), torch.det),
                       ("logdet", lambda m: m.logdet(), torch.logdet),
                       ("slogdet", lambda m: m.slogdet()[1], lambda m: torch.slogdet(m)[1])):
        if name == "pinverse":
            check_against_torch(f, g, [(4, 3)], name)
            continue
        x, t = xad.tensor(sq, dtype=F64, requires_grad=True), torch.tensor(sq, requires_grad=True)
        y, yt = f(x), g(t)
        np.testing.assert_allclose(_np(y.detach()), _np(yt), rtol=1e-11, err_msg=name)
        y.sum().backward()
        yt.sum().backward()
        np.testing.assert_allclose(_np(x.grad), _np(t.grad), rtol=1e-10, err_msg=name)


def test_normal_and_randint_like(xb):
    xad.manual_seed(3)
    mean = xad.tensor(np.linspace(-2, 2, 4).reshape(4, 1), dtype=F64, requires_grad=True)
    std = xad.tensor([0.5, 2.0], dtype=F64, requires_grad=True)
    y = _t().normal(mean, std)
    assert y.shape == (4, 2) and y.dtype == F64
    big = _t().normal(xad.zeros(200000, dtype=F64) + 1.5, 0.5)
    v = big.numpy()
    assert abs(v.mean() - 1.5) < 0.01 and abs(v.std() - 0.5) < 0.01
    (y * 3).sum().backward()  # torch's gradient to mean and std is 0
    assert mean.grad.abs().sum().item() == 0 and std.grad.abs().sum().item() == 0
    assert _t().normal(2.0, 3.0, (3, 2)).shape == (3, 2)
    assert _t().normal(0.0, xad.ones(5)).shape == (5,)
    g1, g2 = xad.Generator().manual_seed(5), xad.Generator().manual_seed(5)
    assert _t().normal(xad.zeros(3), 1.0, generator=g1).tolist() == \
        _t().normal(xad.zeros(3), 1.0, generator=g2).tolist()
    r = _t().randint_like(xad.zeros(1000, dtype=F64), 2, 5)
    assert r.dtype == F64 and set(r.tolist()) == {2.0, 3.0, 4.0}
    assert set(_t().randint_like(xad.zeros(500, dtype=xad.int32), 3).tolist()) == {0, 1, 2}


# ---- in-place methods (item 3): torch's values, gradients and in-place rules ----

UNARY_INPLACE = ["acos", "asin", "atan", "cosh", "sinh", "asinh", "atanh", "arccos", "arcsin",
                 "arctan", "arcsinh", "arctanh", "erf", "exp2", "logit", "sinc", "sgn",
                 "deg2rad", "rad2deg", "fix", "logical_not"]
BINARY_INPLACE = ["heaviside", "ldexp", "eq", "ne", "lt", "le", "gt", "ge",
                  "greater", "greater_equal", "less", "less_equal", "not_equal",
                  "logical_and", "logical_or", "logical_xor", "multiply", "subtract",
                  "divide", "float_power"]


def _inplace_against_torch(name, a, args, targs):
    """``y.<name>_(*args)`` on ``y = x * 1`` in both libraries: the same values (and
    dtype), the version counted, ``y`` returned, and the gradient to ``x``."""
    x, t = xad.tensor(a, dtype=F64, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, yt = x * 1, t * 1
    v0 = y._version
    assert getattr(y, name + "_")(*args) is y
    getattr(yt, name + "_")(*targs)
    assert y._version == v0 + 1
    np.testing.assert_allclose(_np(y.detach()), _np(yt), rtol=1e-13, err_msg=name)
    assert y.dtype == F64
    w = np.linspace(0.5, 1.5, len(a))
    (y * xad.tensor(w, dtype=F64)).sum().backward()
    try:
        (yt * torch.tensor(w)).sum().backward()
    except (NotImplementedError, RuntimeError):  # torch has no in-place rule: its function's
        t.grad = None
        try:
            (getattr(t, name)(*targs) * torch.tensor(w)).sum().backward()
        except (NotImplementedError, RuntimeError):  # nor that (heaviside): a step's 0
            t.grad = torch.zeros(len(a), dtype=torch.float64)
    if name.startswith("logical_"):  # torch records nothing (a gradient of 1 through a
        t.grad = torch.zeros(len(a), dtype=torch.float64)  # step): xad's 0 (PORTING)
    np.testing.assert_allclose(_np(x.grad), _np(t.grad), rtol=1e-12, err_msg=name)


def test_unary_inplace_methods_match_torch(xb):
    a = np.array([0.3, -0.6, 0.0, 0.9, -0.25])
    for name in UNARY_INPLACE:
        v = a + 1.6 if name == "acosh" else np.abs(a) * 0.9 + 0.05 if name == "logit" else a
        _inplace_against_torch(name, v, (), ())
    _inplace_against_torch("acosh", a + 1.6, (), ())
    _inplace_against_torch("arccosh", a + 1.6, (), ())
    _inplace_against_torch("cumsum", a, (0,), (0,))
    _inplace_against_torch("cumprod", a, (-1,), (-1,))


def test_binary_inplace_methods_match_torch(xb):
    a = np.array([0.3, -0.6, 0.0, 0.9, -0.25])
    o = np.array([0.3, 0.6, 0.5, -0.9, 0.0])
    for name in BINARY_INPLACE:
        other = o.round() if name == "ldexp" else o
        _inplace_against_torch(name, a, (xad.tensor(other, dtype=F64),),
                               (torch.tensor(other),))
    _inplace_against_torch("eq", a, (0.0,), (0.0,))
    _inplace_against_torch("divide", a, (xad.tensor(o + 2, dtype=F64),),
                           (torch.tensor(o + 2),))
    i, it = xad.tensor([12, 9, 0, -8]), torch.tensor([12, 9, 0, -8])
    for name in ("gcd", "lcm"):
        assert getattr(i * 1, name + "_")(xad.tensor([18, 6, 5, 6])).tolist() == \
            getattr(it * 1, name + "_")(torch.tensor([18, 6, 5, 6])).tolist()
    b = xad.tensor([1, 5, 3])
    assert b.lt_(xad.tensor([2, 2, 3])) is b and b.dtype == xad.int64 and b.tolist() == [1, 0, 0]
    n, nt = xad.tensor([0.3, 1.0], dtype=F64), torch.tensor([0.3, 1.0], dtype=torch.float64)
    assert n.nextafter_(xad.tensor([1.0, 0.0], dtype=F64)) is n
    assert n.tolist() == nt.nextafter_(torch.tensor([1.0, 0.0], dtype=torch.float64)).tolist()
    with pytest.raises(RuntimeError, match="leaf"):
        xad.ones(2, dtype=F64, requires_grad=True).nextafter_(xad.zeros(2, dtype=F64))
    with pytest.raises(TypeError, match="float_power_: the result is float64"):
        xad.ones(2).float_power_(2.0)  # torch refuses a float32 tensor too
    with pytest.raises(RuntimeError, match="leaf"):
        xad.ones(2, dtype=F64, requires_grad=True).acos_()


@pytest.mark.parametrize("name", ["addmm", "addmv", "addr", "baddbmm", "addbmm"])
def test_matrix_inplace_methods_match_torch(xb, name):
    shapes = {"addmm": [(3, 2), (3, 4), (4, 2)], "addmv": [(3,), (3, 4), (4,)],
              "addr": [(3, 4), (3,), (4,)], "baddbmm": [(2, 3, 2), (2, 3, 4), (2, 4, 2)],
              "addbmm": [(3, 2), (2, 3, 4), (2, 4, 2)]}[name]
    rng = np.random.default_rng(4)
    arrs = [rng.standard_normal(s) for s in shapes]
    xs = [xad.tensor(a, dtype=F64, requires_grad=True) for a in arrs]
    ts = [torch.tensor(a, requires_grad=True) for a in arrs]
    y, yt = xs[0] * 1, ts[0] * 1
    assert getattr(y, name + "_")(*xs[1:], beta=0.5, alpha=2) is y
    getattr(yt, name + "_")(*ts[1:], beta=0.5, alpha=2)
    np.testing.assert_allclose(_np(y.detach()), _np(yt), rtol=1e-12)
    (y ** 2).sum().backward()
    (yt ** 2).sum().backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(_np(x.grad), _np(t.grad), rtol=1e-12)
    np.testing.assert_allclose(_np(getattr(xs[0].detach(), name)(*xs[1:]).detach()),
                               _np(getattr(ts[0].detach(), name)(*ts[1:])), rtol=1e-12)


def test_view_sees_inplace_and_saved_tensor_check(xb):
    x = xad.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=F64)
    v = x[0]
    x.asin_()
    np.testing.assert_allclose(v.numpy(), np.arcsin([0.1, 0.2]))
    v.eq_(xad.tensor([v.tolist()[0], 5.0], dtype=F64))  # a write through the view reaches x
    assert x.tolist()[0] == [1.0, 0.0]
    a = xad.tensor([0.5, 0.2], dtype=F64, requires_grad=True)
    z = a.exp()  # exp saves its output: changing it in place fails at backward
    z.sinh_()
    with pytest.raises(RuntimeError, match="in place|in-place|version"):
        z.sum().backward()


def test_small_methods_match_torch(xb):
    for shape, wrap in (((3, 5), False), ((6, 2), True), ((6, 2), False), ((3, 3, 3), False)):
        x, t = xad.zeros(*shape, dtype=F64), torch.zeros(*shape, dtype=torch.float64)
        assert x.fill_diagonal_(2.5, wrap=wrap) is x
        t.fill_diagonal_(2.5, wrap=wrap)
        assert x.tolist() == t.tolist()
    a = xad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=F64, requires_grad=True)
    y = a * 1
    y.fill_diagonal_(0.0)
    y.sum().backward()
    assert a.grad.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    check_against_torch(lambda m: m.sum_to_size(1, 3), lambda m: m.sum_to_size(1, 3),
                        [(2, 4, 3)], "sum_to_size")
    check_against_torch(lambda m: m.mH * 1, lambda m: m.mH * 1, [(2, 3, 4)], "mH")
    check_against_torch(lambda m: m.H * 1, lambda m: m.H * 1, [(3, 4)], "H")
    with pytest.raises(ValueError, match="sum_to_size: size \\(3,\\)"):
        xad.ones(2, 4).sum_to_size(3)
    with pytest.raises(ValueError, match="H: a matrix"):
        _ = xad.ones(2, 2, 2).H
    r = xad.ones(2, requires_grad=True) * 2
    assert not r.retains_grad
    r.retain_grad()
    assert r.retains_grad and not xad.ones(1, requires_grad=True).retains_grad
    z = xad.ones(2, 3)
    assert z.resize_as_(xad.zeros(2, 3)) is z
    with pytest.raises(NotImplementedError, match="resize_as_: xad tensors do not change"):
        z.resize_as_(xad.zeros(6))
    s = xad.tensor([[4.0, 1.0], [2.0, -1.0]], dtype=F64)
    st = torch.tensor(s.tolist(), dtype=torch.float64)
    assert s.dist(s * 0).item() == pytest.approx(st.dist(st * 0).item(), rel=1e-14)
    np.testing.assert_allclose(s.renorm(2, 0, 1.0).numpy(), st.renorm(2, 0, 1.0).numpy(),
                               rtol=1e-14)
