"""PyTorch's functions of custom optimisers and data code (``addcmul``, ``lerp``, ``xlogy``,
``cdist``, ``masked_scatter``, ``rot90``, ...) against torch 2.13 in float64 on every
backend: values, first and second derivatives (``torch_check``); ``lerp``'s two formulas;
the in-place forms (``addcmul_``, ``lerp_``, ``Dropout(inplace=True)``): their values,
version counters, refusals and gradients. Values over many seeds and dtypes:
tests/test_torch_subset_fuzz.py."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch_check import check_against_torch  # noqa: E402

import xad  # noqa: E402
import xad.nn.functional as F  # noqa: E402
from xad import as_torch  # noqa: E402

T = as_torch.namespace()["torch"]


def _both(f):
    """``f(m, *tensors)`` as the xad and the torch function of ``check_against_torch``."""
    return (lambda *a: f(T, *a)), (lambda *a: f(torch, *a))


_RNG = np.random.default_rng(11)
MASK = _RNG.random((3, 4)) > 0.4
ORDER = np.argsort(_RNG.random((3, 4)), axis=1)
PICK = _RNG.integers(0, 12, (5,))


# name, f(m, *inputs), input shapes: m is xad's torch namespace or torch itself
CASES = [
    ("addcmul", lambda m, a, b, c: m.addcmul(a, b, c, value=-0.7), [(3, 4), (1, 4), (3, 1)]),
    ("addcdiv", lambda m, a, b, c: m.addcdiv(a, b, c * c + 1, value=2.5), [(3, 4)] * 3),
    ("x.addcmul", lambda m, a, b, c: a.addcmul(b, c), [(3, 4), (3, 4), (4,)]),
    ("lerp(0.3)", lambda m, a, b: m.lerp(a, b, 0.3), [(3, 4), (3, 4)]),
    ("lerp(0.8)", lambda m, a, b: m.lerp(a, b, 0.8), [(3, 4), (4,)]),
    ("lerp(tensor)", lambda m, a, b, w: m.lerp(a, b, w), [(3, 4), (3, 4), (3, 4)]),
    ("x.lerp(tensor, broadcast)", lambda m, a, b, w: a.lerp(b, w), [(3, 4), (3, 1), (4,)]),
    ("hypot", lambda m, a, b: m.hypot(a, b), [(3, 4), (4,)]),
    ("logaddexp", lambda m, a, b: m.logaddexp(a, b), [(3, 4), (3, 1)]),
    ("logaddexp2", lambda m, a, b: m.logaddexp2(a * 3, b), [(3, 4), (3, 4)]),
    ("xlogy", lambda m, a, b: m.xlogy(a, b * b + 0.1), [(3, 4), (3, 4)]),
    ("xlogy(zeros)", lambda m, a, b: m.xlogy(m.where(a > 0, a, 0.0), b * b), [(3, 4), (4,)]),
    ("diff", lambda m, a, b: m.diff(a, 2, 0, prepend=b), [(4, 3), (1, 3)]),
    ("cross", lambda m, a, b: m.cross(a, b, dim=1), [(4, 3), (1, 3)]),
    ("linalg.cross", lambda m, a, b: m.linalg.cross(a, b), [(2, 3), (2, 3)]),
    ("clamp(tensor bounds)", lambda m, a, lo, hi: m.clamp(a, lo, lo + hi * hi),
     [(3, 4), (3, 4), (4,)]),
    ("clamp(min tensor)", lambda m, a, lo: m.clamp(a, min=lo), [(3, 4), (4,)]),
    ("nan_to_num", lambda m, a: m.nan_to_num(m.log(a) / (a - a[0, 0]), posinf=2.0),
     [(3, 4)]),
    ("masked_select", lambda m, a: m.masked_select(a, m.tensor(MASK[0])), [(3, 4)]),
    ("masked_scatter", lambda m, a, s: m.masked_scatter(a, m.tensor(MASK), s),
     [(3, 4), (12,)]),
    ("take_along_dim", lambda m, a: m.take_along_dim(a, m.tensor(ORDER[:, :2]), dim=1),
     [(3, 4)]),
    ("take_along_dim(None)", lambda m, a: m.take_along_dim(a, m.tensor(PICK)), [(3, 4)]),
    ("index_select", lambda m, a: m.index_select(a, 1, m.tensor(ORDER[0])), [(3, 4)]),
    ("rot90", lambda m, a: m.rot90(a, 1, [1, 2]), [(2, 3, 4)]),
    ("rot90(k=3)", lambda m, a: m.rot90(a, 3), [(3, 4)]),
    ("block_diag", lambda m, a, b, c: m.block_diag(a, b, c.sum()), [(2, 3), (4,), (2,)]),
    ("cartesian_prod", lambda m, a, b: m.cartesian_prod(a, b).prod(-1), [(3,), (2,)]),
    ("rsqrt, exp2, logit", lambda m, a: m.rsqrt(a * a + 0.5) + m.exp2(a)
     + m.logit(m.sigmoid(a), eps=0.2) + m.deg2rad(a), [(3, 4)]),
    # eps above a half: PyTorch's order (below eps first) gives eps itself (xad's clip gave
    # 1 - eps: logit(0.5, eps=0.6) was -0.405, PyTorch's +0.405)
    ("logit(eps > 0.5)", lambda m, a: m.logit(m.sigmoid(a), eps=0.6) * a, [(3, 4)]),
    ("outer, dot, mv", lambda m, a, b, c: m.outer(a, b) * m.dot(a, c)
     + m.mv(m.outer(c, b), b)[:, None], [(3,), (4,), (3,)]),
    ("bmm, addmm", lambda m, a, b, c: m.bmm(a, b).sum(0) + m.addmm(c, a[0], b[1], beta=0.5,
                                                                     alpha=-2),
     [(2, 3, 4), (2, 4, 5), (5,)]),
    ("trace, diagonal", lambda m, a: m.trace(a[0]) * m.diagonal(a, 1, 1, 2), [(2, 3, 4)]),
    ("chunk, unbind", lambda m, a: m.chunk(a, 2, 1)[1] * m.unbind(a, 1)[2][:, None],
     [(3, 5)]),
    ("fmax, fmin, frac, float_power", lambda m, a, b: m.fmax(a, b) * m.fmin(a, b)
     + m.frac(a * 3) + m.float_power(b, 3), [(3, 4), (4,)]),
    ("std_mean, var_mean", lambda m, a: m.std_mean(a, 1)[0] * m.var_mean(a, 1)[1]
     + m.var_mean(a, 1, correction=0)[0], [(3, 4)]),
    ("hstack, vstack, unflatten, repeat_interleave", lambda m, a, b: m.vstack(
        [m.hstack([a, b]), m.unflatten(m.repeat_interleave(a, 2, dim=0), 0, (1, 6))]),
     [(3,), (3,)]),
    ("meshgrid(xy)", lambda m, a, b: m.stack(m.meshgrid(a, b * a[0], indexing="xy")),
     [(3,), (2,)]),
]


@pytest.mark.parametrize("name,f,shapes", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(xb, name, f, shapes):
    check_against_torch(*_both(f), shapes, name)


CDIST = [((4, 3), (5, 3), 2.0), ((2, 4, 3), (2, 5, 3), 1.0), ((4, 3), (2, 3), 3.0),
         ((3, 2), None, 2.0), ((3, 2), None, float("inf"))]


@pytest.mark.parametrize("s1,s2,p", CDIST)
def test_cdist_matches_torch(xb, s1, s2, p):
    """Values and gradients against ``torch.cdist`` (``s2=None``: the distances of ``x1``
    to itself, zeros on the diagonal, where PyTorch's gradient is 0); second derivatives
    against torch's ``vector_norm`` of the differences (``cdist`` has none in torch; at a
    zero distance torch's is NaN, xad's finite: not compared)."""
    def tf(a, b=None):
        b = a if b is None else b
        return torch.linalg.vector_norm(a[..., :, None, :] - b[..., None, :, :], p, -1)
    shapes = [s1] if s2 is None else [s1, s2]
    if s2 is not None:
        check_against_torch(lambda *a: xad.cdist(a[0], a[-1], p), tf, shapes, "cdist")
    rng = np.random.default_rng(2)
    arrs = [rng.standard_normal(s) for s in shapes]
    xs = [xad.tensor(a, dtype=xad.float64, requires_grad=True) for a in arrs]
    ts = [torch.tensor(a, requires_grad=True) for a in arrs]
    y, t = xad.cdist(xs[0], xs[-1], p), torch.cdist(ts[0], ts[-1], p)
    np.testing.assert_allclose(y.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-12)
    (y * y.detach()).sum().backward()
    (t * t.detach()).sum().backward()
    for a, b in zip(xs, ts):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_lerp_switches_formula_at_half(xb):
    """PyTorch computes ``end - (end - start) * (1 - w)`` for ``|w| >= 0.5``: ``w = 1``
    gives ``end`` exactly where ``start + w * (end - start)`` loses it in float32."""
    start, end = xad.tensor([1e8, -3e7, 0.1]), xad.tensor([1.0, 0.3, 7.0])
    ts, te = torch.tensor(start.numpy()), torch.tensor(end.numpy())
    for w in (1.0, 0.5, -0.5, 0.49, 0.75, 1.5, -2.0):
        for got, ref in ((xad.lerp(start, end, w), torch.lerp(ts, te, w)),
                         (start.lerp(end, xad.full((3,), w)),
                          ts.lerp(te, torch.full((3,), w)))):
            np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-6, atol=1e-6,
                                       err_msg=f"w={w}")
    assert xad.lerp(start, end, 1.0).tolist() == end.tolist()


@pytest.mark.parametrize("name", ["addcmul_", "addcdiv_", "lerp_", "nan_to_num_",
                                  "masked_scatter_", "sigmoid_", "pow_", "hypot_", "tril_",
                                  "div"])
def test_inplace_forms(xb, name):
    """Written into the tensor (same object, version + 1), the tensor's dtype kept, the
    same numbers as torch's; a leaf that requires grad refuses; a non-leaf's gradient
    flows through, as torch's."""
    rng = np.random.default_rng(3)
    arrs = [rng.standard_normal((3, 4)) for _ in range(3)]
    args = {"addcmul_": lambda m, b, c: (b, c), "addcdiv_": lambda m, b, c: (b, c * c + 1),
            "lerp_": lambda m, b, c: (b, 0.7), "nan_to_num_": lambda m, b, c: (),
            "masked_scatter_": lambda m, b, c: (b > 0, c), "sigmoid_": lambda m, b, c: (),
            "pow_": lambda m, b, c: (2,), "hypot_": lambda m, b, c: (b,),
            "tril_": lambda m, b, c: (1,), "div": lambda m, b, c: (b,)}[name]
    name = "div_" if name == "div" else name  # xad's own, beside the generated ones
    xs = [xad.tensor(a, dtype=xad.float64, requires_grad=True) for a in arrs]
    ts = [torch.tensor(a, requires_grad=True) for a in arrs]
    x, t = xs[0] * 1.0, ts[0] * 1.0
    v = x._version
    assert getattr(x, name)(*args(T, *xs[1:])) is x and x._version > v
    getattr(t, name)(*args(torch, *ts[1:]))
    np.testing.assert_allclose(x.detach().numpy(), t.detach().numpy(), rtol=1e-12)
    x.sum().backward()
    t.sum().backward()
    for a, b in zip(xs, ts):
        ga = np.zeros((3, 4)) if a.grad is None else a.grad.numpy()
        gb = np.zeros((3, 4)) if b.grad is None else b.grad.numpy()
        np.testing.assert_allclose(ga, gb, rtol=1e-12, atol=1e-12, err_msg=name)
    with pytest.raises(RuntimeError, match="leaf"):
        getattr(xad.ones(3, 4, dtype=xad.float64, requires_grad=True), name)(*args(T, *xs[1:]))
    i = xad.ones(2, dtype=xad.int64)
    assert i.addcmul_(i, i, value=2).dtype is xad.int64 and i.tolist() == [3, 3]


def test_adam_step_by_inplace_methods(xb):
    """A hand-written Adam step (``lerp_``, ``mul_().addcmul_()``, ``addcdiv_``), as custom
    optimisers write it, gives torch's numbers."""
    rng = np.random.default_rng(5)
    p0, g0 = rng.standard_normal(6), rng.standard_normal(6)
    out = []
    for m, mk in ((T, xad.tensor), (torch, torch.tensor)):
        p, g = mk(p0), mk(g0)
        avg, sq = m.zeros_like(p), m.zeros_like(p)
        with m.no_grad():
            for step in range(1, 4):
                avg.lerp_(g * step, 0.1)
                sq.mul_(0.999).addcmul_(g * step, g * step, value=0.001)
                denom = (sq / (1 - 0.999 ** step)).sqrt().add_(1e-8)
                p.addcdiv_(avg, denom, value=-1e-3 / (1 - 0.9 ** step))
        out.append(np.asarray(p.numpy()))
    np.testing.assert_allclose(out[0], out[1], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("module", [False, True])
def test_dropout_inplace(xb, module):
    """``F.dropout(x, inplace=True)`` and ``nn.Dropout(inplace=True)`` write the scaled
    mask into ``x`` and return it (version + 1); a leaf that requires grad refuses; the
    gradient of a non-leaf is the mask, as out of place."""
    drop = xad.nn.Dropout(0.4, inplace=True) if module else (
        lambda x: F.dropout(x, 0.4, inplace=True))
    a = xad.randn(200, dtype=xad.float64, requires_grad=True)
    x = a * 1.0
    before, v = x.detach().numpy().copy(), x._version
    y = drop(x)
    assert y is x and x._version > v
    got = x.detach().numpy()
    kept = got != 0
    np.testing.assert_allclose(got[kept], before[kept] / 0.6, rtol=1e-12)
    assert 0 < kept.sum() < 200
    x.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), kept / 0.6, rtol=1e-12)
    with pytest.raises(RuntimeError, match="leaf"):
        drop(xad.ones(3, requires_grad=True))
    z = xad.ones(3)
    assert F.dropout(z, 0.5, training=False, inplace=True) is z and z.tolist() == [1.0] * 3
    assert F.dropout(z, 1.0, inplace=True) is z and z.tolist() == [0.0] * 3
    if module:
        assert repr(xad.nn.Dropout(0.4, inplace=True)) == repr(
            torch.nn.Dropout(0.4, inplace=True))


def test_histc_and_bucketize_edges(xb):
    """Values on the bin edges and outside the range, as torch counts them."""
    a = [0.0, 0.5, 1.0, 1.5, 2.0, -0.1, 2.1, 1.0]
    for args in ((4, 0, 2), (3, 0, 0), (2, 1, 1)):
        got = xad.histc(xad.tensor(a), *args)
        ref = torch.histc(torch.tensor(a), *args)
        assert got.dtype is xad.float32 and got.tolist() == ref.tolist(), args
    b = [0.0, 1.0, 2.0]
    for right in (False, True):
        got = xad.bucketize(xad.tensor(a), xad.tensor(b), right=right)
        assert got.tolist() == torch.bucketize(torch.tensor(a), torch.tensor(b),
                                               right=right).tolist()


def test_errors_name_the_operation(xb):
    with pytest.raises(ValueError, match="cross: dimension 1"):
        xad.cross(xad.ones(2, 2), xad.ones(2, 2), dim=1)
    with pytest.raises(ValueError, match="cdist"):
        xad.cdist(xad.ones(2, 3), xad.ones(2, 4))
    with pytest.raises(ValueError, match="rot90"):
        xad.rot90(xad.ones(2, 2), 1, (0, 0))
    with pytest.raises(RuntimeError, match="addcdiv"):
        xad.addcdiv(xad.ones(2), xad.ones(2, dtype=xad.int64), xad.ones(2, dtype=xad.int64))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nan_to_num_defaults_are_the_dtypes_own_limits(xb, dtype):
    """``nan_to_num``'s default replacements of +-inf are the largest finite numbers of the
    input's dtype (float64 gave inf and float16 came back float32: the limits were made in
    the default dtype)."""
    if xb._dtypes.get(getattr(xad, dtype)) is None:
        pytest.skip(f"{xb.name} has no {dtype}")
    v = [float("inf"), -float("inf"), float("nan"), 1.5]
    x, t = T.tensor(v, dtype=getattr(T, dtype)), torch.tensor(v, dtype=getattr(torch, dtype))
    for kw in ({}, {"posinf": 1e300}, {"neginf": -1e300, "nan": 2.0}):
        got, want = x.nan_to_num(**kw), t.nan_to_num(**kw)
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=str(kw))
        np.testing.assert_array_equal(T.nan_to_num(x, **kw).numpy(), want.numpy())


HALF_CASES = {  # results made beside a where of two Python numbers, in the default dtype
    "frexp": lambda m, x, y: m.frexp(x)[0],
    "binary_cross_entropy": lambda m, x, y: m.nn.functional.binary_cross_entropy(x, y),
    "kl_div": lambda m, x, y: m.nn.functional.kl_div(x, y, reduction="none"),
    "softshrink": lambda m, x, y: m.nn.functional.softshrink(x - 0.5, 0.2)}


@pytest.mark.parametrize("name", HALF_CASES)
def test_half_precision_results_stay_half(xb, name):
    """float16 in, float16 out, as torch's (they came back float32), with torch's values."""
    if xb._dtypes.get(xad.float16) is None:
        pytest.skip(f"{xb.name} has no float16")
    v, w = [[0.0, 0.25, 1.0], [0.1, 0.9, 0.6]], [[0.0, 1.0, 1.0], [0.2, 0.0, 0.5]]
    got = HALF_CASES[name](T, T.tensor(v, dtype=T.float16), T.tensor(w, dtype=T.float16))
    want = HALF_CASES[name](torch, torch.tensor(v, dtype=torch.float16),
                            torch.tensor(w, dtype=torch.float16))
    assert got.dtype == T.float16
    np.testing.assert_allclose(got.numpy().astype(float), want.numpy().astype(float),
                               rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("g", [0.0, 1.0, -2.0])
def test_xlogy_gradients_are_torchs_at_zeros(xb, g):
    """``xlogy``'s gradients at ``x == 0`` and ``y == 0`` with PyTorch's rule: ``x``'s is
    ``xlogy(g, y)``, 0 where ``g == 0`` (a branch a ``where`` masked out gave NaN, as
    ``0 * log(0)``); ``y``'s is 0 where ``x == 0``."""
    xs, ys = [0.0, 1.0, 2.0, 0.0, -1.0, 0.5], [0.0, 0.0, 0.0, 1.0, 2.0, -1.0]
    res = []
    for t in (T, torch):
        x = t.tensor(xs, dtype=t.float64, requires_grad=True)
        y = t.tensor(ys, dtype=t.float64, requires_grad=True)
        z = t.xlogy(x, y)
        gx, gy = t.autograd.grad(z, (x, y), t.full((6,), g, dtype=t.float64))
        res.append((z.detach().numpy(), gx.numpy(), gy.numpy()))
    np.testing.assert_array_equal(res[0][0], res[1][0])
    np.testing.assert_array_equal(res[0][1], res[1][1])
    keep = np.array(xs) != 0  # (y's at x == 0: xad's 0, torch's g * 0 / y, NaN at y == 0)
    np.testing.assert_array_equal(res[0][2][keep], res[1][2][keep])
    assert (res[0][2][~keep] == 0).all()
