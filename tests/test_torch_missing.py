"""PyTorch names that ported code met as AttributeError: ``unique``, ``unique_consecutive``,
``bincount``, ``isin``, ``tensor_split``, ``Tensor.unfold``, ``scatter_reduce``,
``index_put(_)``, ``cummax``/``cummin``, ``logcumsumexp``: values and gradients against
torch 2.13 in float64, and gradients against finite differences, on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import xad

torch = pytest.importorskip("torch")
F64 = xad.float64


def _same(ours, theirs):
    ours = ours if isinstance(ours, (tuple, list)) else (ours,)
    theirs = theirs if isinstance(theirs, (tuple, list)) else (theirs,)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)
        assert str(a.dtype).rsplit(".")[-1] == str(b.dtype).rsplit(".")[-1], (a.dtype, b.dtype)


@pytest.mark.parametrize("kw", [{"return_inverse": True},
                                {"return_inverse": True, "return_counts": True, "dim": 0},
                                {"return_inverse": True, "return_counts": True, "dim": 1}])
def test_unique_and_unique_consecutive_match_torch(xb, kw):
    a = np.array([[3, 1, 3], [1, 1, 2], [3, 1, 3], [0, 5, 5]])
    if "dim" not in kw:
        _same(xad.unique(xad.tensor(a), **kw), torch.unique(torch.tensor(a), **kw))
        _same(xad.tensor(a).unique(sorted=False, **kw), torch.tensor(a).unique(**kw))
    else:
        _same(xad.unique(xad.tensor(a), **kw), torch.unique(torch.tensor(a), **kw))
    _same(xad.unique_consecutive(xad.tensor(a), **kw),
          torch.unique_consecutive(torch.tensor(a), **kw))
    f = np.array([2.5, np.nan, -1.0, 2.5, np.nan])
    _same(xad.unique(xad.tensor(f), return_counts=True),
          torch.unique(torch.tensor(f), return_counts=True))  # NaNs stay apart, as torch's


def test_empty_inputs(xb):
    e = xad.tensor([], dtype=xad.int64)
    assert xad.unique(e).shape == (0,) and xad.bincount(e, minlength=3).tolist() == [0, 0, 0]
    assert xad.isin(xad.tensor([1, 2]), e).tolist() == [False, False]


def test_bincount_and_isin_match_torch(xb):
    i = np.array([1, 1, 3, 0, 7])
    w = np.array([0.5, 1.0, 2.0, -1.0, 3.0])
    _same(xad.bincount(xad.tensor(i)), torch.bincount(torch.tensor(i)))
    _same(xad.bincount(xad.tensor(i), minlength=10), torch.bincount(torch.tensor(i),
                                                                    minlength=10))
    _same(xad.bincount(xad.tensor(i), xad.tensor(w, dtype=F64)),
          torch.bincount(torch.tensor(i), torch.tensor(w)))
    with pytest.raises(ValueError, match="negative"):
        xad.bincount(xad.tensor([1, -2]))
    with pytest.raises(ValueError, match="1-d tensor of integers"):
        xad.bincount(xad.tensor([1.0]))
    e, t = np.array([[1, 4], [2, 9]]), np.array([9, 1, 3])
    _same(xad.isin(xad.tensor(e), xad.tensor(t)), torch.isin(torch.tensor(e), torch.tensor(t)))
    _same(xad.isin(xad.tensor(e), xad.tensor(t), invert=True),
          torch.isin(torch.tensor(e), torch.tensor(t), invert=True))
    _same(xad.isin(xad.tensor([1.0, 2.5]), 2.5), torch.isin(torch.tensor([1.0, 2.5]), 2.5))


def test_tensor_split_matches_torch_and_gives_views(xb):
    a = np.arange(14.0).reshape(2, 7)
    for spec in (3, [1, 5], [2, 2, 9], (-2,), 7):
        _same(xad.tensor_split(xad.tensor(a), spec, dim=1),
              torch.tensor_split(torch.tensor(a), spec, dim=1))
    _same(xad.tensor(a).tensor_split(xad.tensor([1, 4]), 1),
          torch.tensor(a).tensor_split(torch.tensor([1, 4]), 1))
    x = xad.tensor(a, dtype=F64, requires_grad=True)
    parts = xad.tensor_split(x, 3, dim=1)
    (parts[0].sum() * 2 + parts[2].sum()).backward()
    assert x.grad.tolist() == [[2, 2, 2, 0, 0, 1, 1]] * 2


@pytest.mark.parametrize("size,step", [(2, 2), (2, 3), (3, 1), (1, 1), (4, 2), (2, 4)])
def test_unfold_matches_torch(xb, size, step):
    a = np.arange(24.0).reshape(2, 6, 2)
    x = xad.tensor(a, dtype=F64, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    y, yt = x.unfold(1, size, step), xt.unfold(1, size, step)
    _same(y, yt)
    w = np.random.default_rng(0).standard_normal(tuple(yt.shape))
    (y * xad.tensor(w, dtype=F64)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


def test_unfold_without_overlap_is_a_view_both_ways(xb):
    x = xad.arange(8.0, dtype=F64)
    w = x.unfold(0, 2, 2)
    w[1] *= 10.0
    assert x.tolist() == [0, 1, 20, 30, 4, 5, 6, 7]  # torch: the same
    x[0] = -1.0
    assert w[0].tolist() == [-1.0, 1.0]
    y = xad.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64, requires_grad=True) * 2
    v = y.unfold(0, 2, 2)
    v[0] += 1.0
    assert y.tolist() == [3.0, 5.0, 6.0, 8.0]


def test_cummax_cummin_match_torch_with_gradients_to_the_index(xb):
    a = np.array([[1.0, 3.0, 3.0, 2.0, 5.0], [4.0, 4.0, 1.0, 0.0, 4.0]])
    for name, dims in (("cummax", (0, -1)), ("cummin", (1,))):
        for dim in dims:
            x = xad.tensor(a, dtype=F64, requires_grad=True)
            xt = torch.tensor(a, requires_grad=True)
            r, rt = getattr(xad, name)(x, dim), getattr(torch, name)(xt, dim)
            _same(tuple(r), tuple(rt))
            _same((r.values, r.indices), (rt.values, rt.indices))
            (r.values * xad.tensor(a + 1, dtype=F64)).sum().backward()
            (rt.values * torch.tensor(a + 1)).sum().backward()
            np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())
    n = np.array([1.0, np.nan, 5.0, np.nan, 0.0])
    _same(tuple(xad.cummax(xad.tensor(n, dtype=F64), 0)), tuple(torch.cummax(
        torch.tensor(n), 0)))
    _same(tuple(xad.tensor([3, 1, 1, 2]).cummin(0)), tuple(torch.tensor([3, 1, 1, 2]).cummin(0)))


def test_logcumsumexp_is_stable_and_matches_torch(xb):
    a = np.array([[0.0, -np.inf, 1000.0, 1000.0, -1000.0], [-np.inf, -np.inf, 2.0, 700.0, 3.0]])
    _same(xad.logcumsumexp(xad.tensor(a, dtype=F64), 1), torch.logcumsumexp(
        torch.tensor(a), 1))
    b = np.random.default_rng(1).standard_normal((3, 9))
    x = xad.tensor(b, dtype=F64, requires_grad=True)
    xt = torch.tensor(b, requires_grad=True)
    y, yt = x.logcumsumexp(0), torch.logcumsumexp(xt, 0)
    _same(y, yt)
    w = np.random.default_rng(2).standard_normal(b.shape)
    (y * xad.tensor(w, dtype=F64)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_torch(xb, reduce, include_self):
    rng = np.random.default_rng(3)
    for trial in range(2):
        a = np.round(rng.uniform(-2, 2, (3, 4)), 1)
        idx = rng.integers(0, 3, (2, 4))
        src = np.round(rng.uniform(-2, 2, (2, 4)), 1)
        if trial == 1:
            src[0] = a.max()  # ties, among sources and with the tensor's own values
            src[1, 0] = 0.0
        x, s = (xad.tensor(v, dtype=F64, requires_grad=True) for v in (a, src))
        xt, st = (torch.tensor(v, requires_grad=True) for v in (a, src))
        y = x.scatter_reduce(0, xad.tensor(idx), s, reduce, include_self=include_self)
        yt = xt.scatter_reduce(0, torch.tensor(idx), st, reduce, include_self=include_self)
        _same(y, yt)
        w = a + 3
        (y * xad.tensor(w, dtype=F64)).sum().backward()
        (yt * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
        if reduce in ("amax", "amin") and not include_self:
            # torch shares a source's gradient with an equal value of the tensor it leaves
            # out (the gradient no longer sums to 1); xad's is the derivative (gradcheck)
            continue
        np.testing.assert_allclose(s.grad.numpy(), st.grad.numpy(), rtol=1e-12)


def test_scatter_reduce_integers_and_errors(xb):
    x, i, s = [5, 1, 7], [0, 0, 2], [2, 9, 3]
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        _same(xad.tensor(x).scatter_reduce(0, xad.tensor(i), xad.tensor(s), reduce),
              torch.tensor(x).scatter_reduce(0, torch.tensor(i), torch.tensor(s), reduce))
    with pytest.raises(ValueError, match="reduce must be one of"):
        xad.scatter_reduce(xad.zeros(2), 0, xad.tensor([0]), xad.ones(1), "max")


def test_index_put_matches_torch(xb):
    a = np.arange(12.0).reshape(3, 4)
    for acc in (True, False):
        x = xad.tensor(a, dtype=F64, requires_grad=True)
        v = xad.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
        xt = torch.tensor(a, requires_grad=True)
        vt = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
        key, keyt = (xad.tensor([0, 2, 0]), xad.tensor([1, 3, 1])), (
            torch.tensor([0, 2, 0]), torch.tensor([1, 3, 1]))
        if not acc:  # no repeated index: which one lands is unspecified without accumulate
            key, keyt = (key[0], xad.tensor([1, 3, 2])), (keyt[0], torch.tensor([1, 3, 2]))
        y, yt = x.index_put(key, v, accumulate=acc), xt.index_put(keyt, vt, accumulate=acc)
        _same(y, yt)
        (y * xad.tensor(a, dtype=F64)).sum().backward()
        (yt * torch.tensor(a)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())
        np.testing.assert_allclose(v.grad.numpy(), vt.grad.numpy())
    z = xad.zeros(3)
    assert z.index_put_((xad.tensor([0, 0, 2]),), xad.ones(3), accumulate=True) is z
    assert z.tolist() == [2.0, 0.0, 1.0]
    # a place named twice takes the last value, as torch's on the CPU (never their mean)
    i, v = [1, 3, 1, 0, 1], [1.0, 2.0, 3.0, 4.0, 5.0]
    _same(xad.zeros(4, dtype=F64).index_put((xad.tensor(i),), xad.tensor(v, dtype=F64)),
          torch.zeros(4, dtype=torch.float64).index_put((torch.tensor(i),), torch.tensor(
              v, dtype=torch.float64)))
    w = xad.tensor(v, dtype=F64, requires_grad=True)
    xad.index_put(xad.zeros(4, dtype=F64), (xad.tensor(i),), w).sum().backward()
    assert w.grad.tolist() == [0.0, 1.0, 0.0, 1.0, 1.0]  # the derivative (torch: all ones)
    m = xad.zeros(3)
    m.index_put_((xad.tensor([True, False, True]),), xad.tensor(7.0))
    assert m.tolist() == [7.0, 0.0, 7.0]


def _scatter_reduce(r: str, s: bool):
    return lambda x: xad.scatter_reduce(x, 1, xad.tensor([[0, 0, 3], [1, 1, 1]]),
                                        x[:, 1:] * 1.5, r, include_self=s)


_GRADCHECK = {
    "cummax": lambda x: xad.cummax(x, 1).values,
    "logcumsumexp": lambda x: xad.logcumsumexp(x, 1),
    "unfold": lambda x: x.unfold(1, 2, 1) * x.unfold(1, 2, 1),
    "tensor_split": lambda x: xad.tensor_split(x, 3, dim=1)[1] ** 2,
    "index_put": lambda x: xad.index_put(x, (xad.tensor([0, 1, 0]),), x[1] * x[0],
                                         accumulate=True),
    **{f"scatter_reduce:{r}:{s}": _scatter_reduce(r, s)
       for r, s in (("sum", True), ("prod", False), ("mean", True), ("amax", True),
                    ("amin", False))},
}


@pytest.mark.parametrize("name", sorted(_GRADCHECK))
def test_gradients_against_finite_differences(xb, name):
    a = np.array([[0.3, -1.2, 2.1, 0.7], [1.4, -0.4, 0.9, -2.3]])  # no ties
    x = xad.tensor(a, dtype=F64, requires_grad=True)
    assert xad.gradcheck(_GRADCHECK[name], [x])
    if name.split(":")[0] in ("logcumsumexp", "index_put") or ":prod" in name:
        assert xad.gradgradcheck(_GRADCHECK[name], [x])
