"""PyTorch names that ported code met as AttributeError (third round): the in-place
``atan2_``, ``copysign_``, ``bitwise_*_``; ``index_copy(_)``, ``put(_)``,
``scatter_reduce_``, ``index_reduce(_)``; values and gradients against torch 2.13 in
float64, gradients against finite differences, on every backend; the in-place rules
(version, saved-tensor check, dtype casts) as torch's."""

from __future__ import annotations

import math
import os
import zlib

import numpy as np
import pytest

import xad
import xad.nn.functional as F
from xad.nn import init

torch = pytest.importorskip("torch")
F64 = xad.float64
REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _same(ours, theirs):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    assert str(ours.dtype).rsplit(".")[-1] == str(theirs.dtype).rsplit(".")[-1]


def _pair(a, dtype=F64):
    """A leaf of each library (float64) and an in-place target computed from it."""
    x = xad.tensor(a, dtype=dtype, requires_grad=True)
    xt = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    return x, xt


def _backward_both(y, yt, w):
    (y * xad.tensor(w, dtype=F64)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()


@pytest.mark.parametrize("name", ["atan2", "copysign"])
def test_float_inplace_values_gradients_and_rules(xb, name):
    a, o = np.array([[0.5, -1.5, 2.0], [-0.3, 0.0, 1.2]]), np.array([1.1, -0.7, 0.4])
    x, xt = _pair(a)
    y, yt = x * 1, xt * 1
    v0 = y._version
    assert getattr(y, name + "_")(xad.tensor(o, dtype=F64)) is y
    getattr(yt, name + "_")(torch.tensor(o))
    assert y._version == v0 + 1
    _same(y, yt)
    _backward_both(y, yt, a + 3)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    z = x.exp()  # exp saves its output: changing it in place fails at backward
    getattr(z, name + "_")(0.5)
    with pytest.raises(RuntimeError, match="in place|in-place|version"):
        z.sum().backward()
    with pytest.raises(RuntimeError, match="leaf"):
        getattr(x, name + "_")(1.0)
    with pytest.raises(TypeError, match="cannot be cast"):  # torch: can't be cast to Long
        getattr(xad.tensor([1, 2]), name + "_")(xad.tensor([0.5, 1.0]))
    with pytest.raises(ValueError, match="shape"):  # the other operand broadcasts beyond x
        getattr(xad.zeros(3), name + "_")(xad.zeros(2, 3))
    if name == "copysign":  # torch's forward-mode tangent is 0 at x == 0 too
        _, t = xad.jvp(lambda v: v.copysign(-1.0), (xad.tensor([0.0, 2.0, -3.0], dtype=F64),),
                       (xad.ones(3, dtype=F64),))
        assert t.tolist() == [0.0, -1.0, 1.0]


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor",
                                  "bitwise_left_shift", "bitwise_right_shift"])
def test_bitwise_inplace_match_torch(xb, name):
    a, o = np.array([[5, -3, 12], [7, 0, 9]]), np.array([1, 2, 3])
    for dt, tdt in ((xad.int32, torch.int32), (xad.int64, torch.int64)):
        x, xt = xad.tensor(a, dtype=dt), torch.tensor(a, dtype=tdt)
        v0 = x._version
        assert getattr(x, name + "_")(xad.tensor(o)) is x  # int64 operand into int32: kept
        getattr(xt, name + "_")(torch.tensor(o))
        _same(x, xt)
        getattr(x, name + "_")(2)
        getattr(xt, name + "_")(2)
        _same(x, xt)
        assert x._version == v0 + 2
    b, bt = xad.tensor([True, False, True]), torch.tensor([True, False, True])
    if "shift" not in name:
        getattr(b, name + "_")(xad.tensor([True, True, False]))
        getattr(bt, name + "_")(torch.tensor([True, True, False]))
        _same(b, bt)
    with pytest.raises((TypeError, NotImplementedError)):  # the backend's own error
        getattr(xad.ones(3), name + "_")(1)  # floats have no bitwise operations


def test_bitwise_not_inplace(xb):
    for a, dt in (([5, -3, 0], xad.int64), ([True, False], xad.bool_)):
        x = xad.tensor(a, dtype=dt)
        assert x.bitwise_not_() is x
        assert x.tolist() == torch.tensor(a).bitwise_not_().tolist()


def test_index_copy_matches_torch(xb):
    a = np.arange(12.0).reshape(3, 4) / 7
    for dim, idx, shape in ((0, [2, 0], (2, 4)), (-1, [3, 0], (3, 2))):  # shared shapes
        s = np.linspace(-1, 1, int(np.prod(shape))).reshape(shape)
        x, xt = _pair(a)
        src, srct = _pair(s)
        y = x.index_copy(dim, xad.tensor(idx), src)
        yt = xt.index_copy(dim, torch.tensor(idx), srct)
        _same(y, yt)
        _backward_both(y, yt, a + 2)
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())
        np.testing.assert_allclose(src.grad.numpy(), srct.grad.numpy())
    z, zt = xad.zeros(3, 4), torch.zeros(3, 4)
    i, v = [1, 1], np.arange(8.0).reshape(2, 4)
    assert z.index_copy_(0, xad.tensor(i), xad.tensor(v, dtype=xad.float32)) is z
    zt.index_copy_(0, torch.tensor(i), torch.tensor(v, dtype=torch.float32))
    _same(z, zt)  # a slice named twice keeps the last, as torch's CPU loop
    _same(xad.zeros(3).index_copy(0, xad.tensor(1), xad.tensor(5.0)),
          torch.zeros(3).index_copy(0, torch.tensor(1), torch.tensor(5.0)))


def test_index_copy_and_put_errors_as_torch(xb):
    with pytest.raises(TypeError, match="dtype|float64"):
        xad.zeros(3).index_copy_(0, xad.tensor([1]), xad.ones(1, dtype=F64))
    with pytest.raises(IndexError, match="out of bounds"):
        xad.zeros(3).index_copy_(0, xad.tensor([-1]), xad.ones(1))
        xad.get_backend().synchronize()
    with pytest.raises(ValueError, match="shape"):
        xad.zeros(3, 2).index_copy(0, xad.tensor([1]), xad.ones(2, 2))
    with pytest.raises(TypeError, match="dtype|float64"):
        xad.zeros(3).put_(xad.tensor([1]), xad.ones(1, dtype=F64))
    with pytest.raises(ValueError, match="same number of elements"):
        xad.zeros(3).put_(xad.tensor([1, 2]), xad.ones(3))
    with pytest.raises(IndexError, match="out of bounds"):
        xad.zeros(3).put_(xad.tensor([3]), xad.ones(1))
        xad.get_backend().synchronize()
    with pytest.raises(TypeError, match="dtype|float64"):  # a cast truncated floats before
        xad.zeros(3, dtype=xad.int64).scatter_reduce(0, xad.tensor([1]), xad.tensor([2.7]),
                                                     "sum")
    with pytest.raises(ValueError, match="reduce must be one of"):
        xad.zeros(3).index_reduce_(0, xad.tensor([1]), xad.ones(1), "sum")


@pytest.mark.parametrize("accumulate", [False, True])
def test_put_matches_torch(xb, accumulate):
    a = np.arange(12.0).reshape(3, 4) / 5  # the shapes of the other index tests
    idx = [[-1, 0, 4, 0], [7, 2, 2, 9]] if accumulate else [[-1, 0, 4, 1], [7, 2, 3, 9]]
    s = np.linspace(-2, 3, 8).reshape(2, 4)
    x, xt = _pair(a)
    src, srct = _pair(s)
    y = x.put(xad.tensor(idx), src, accumulate=accumulate)
    yt = xt.put(torch.tensor(idx), srct, accumulate=accumulate)
    _same(y, yt)
    _backward_both(y, yt, a - 1)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())
    np.testing.assert_allclose(src.grad.numpy(), srct.grad.numpy())
    z, zt = xad.tensor([1, 2, 3]), torch.tensor([1, 2, 3])
    assert z.put_(xad.tensor([0, 0]), xad.tensor([7, 8]), accumulate=accumulate) is z
    zt.put_(torch.tensor([0, 0]), torch.tensor([7, 8]), accumulate=accumulate)
    if accumulate:
        _same(z, zt)
    else:
        assert z.tolist() == [8, 2, 3]  # the last write (torch's CPU order)


def test_scatter_reduce_inplace_matches_torch(xb):
    """Each reduction with ``include_self`` one way (sum and amax both ways); the
    out-of-place forms are checked both ways in tests/test_torch_missing.py."""
    rng = np.random.default_rng(5)
    a = np.round(rng.uniform(-2, 2, (3, 4)), 2)
    idx, s = rng.integers(0, 3, (2, 4)), np.round(rng.uniform(-2, 2, (2, 4)), 2)
    runs = [(r, k % 2 == 0) for k, r in enumerate(REDUCTIONS)] + [("sum", False),
                                                                   ("amax", True)]
    for reduce, include_self in runs:
        x, xt = _pair(a)
        src, srct = _pair(s)
        y, yt = x * 1, xt * 1
        assert y.scatter_reduce_(0, xad.tensor(idx), src, reduce,
                                 include_self=include_self) is y
        yt.scatter_reduce_(0, torch.tensor(idx), srct, reduce, include_self=include_self)
        _same(y, yt)
        _backward_both(y, yt, a + 3)
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(src.grad.numpy(), srct.grad.numpy(), rtol=1e-12)
    for include_self in (True, False):
        z, zt = xad.tensor([5, 1, 7]), torch.tensor([5, 1, 7])
        z.scatter_reduce_(0, xad.tensor([0, 0, 2]), xad.tensor([2, 9, 4]), "mean",
                          include_self=include_self)
        zt.scatter_reduce_(0, torch.tensor([0, 0, 2]), torch.tensor([2, 9, 4]), "mean",
                           include_self=include_self)
        _same(z, zt)  # integer means floor, as torch's


@pytest.mark.filterwarnings("ignore:index_reduce")
def test_scatter_and_index_reduce_extremes_propagate_nan_as_torch(xb):
    """A NaN source is the result of ``amin`` as of ``amax`` (the smallest came last in a
    descending sort, which put NaN first: ``amin`` gave 5.0 or 1.0 where torch gives NaN)."""
    nan = math.nan
    for reduce in ("amax", "amin"):
        for include_self in (True, False):
            for src in ([nan, 5.0], [5.0, nan], [math.inf, nan]):
                for base in ([1.0, 2.0, 3.0], [nan, 2.0, 3.0]):
                    x, xt = xad.tensor(base, dtype=F64), torch.tensor(base, dtype=torch.float64)
                    i, it = xad.tensor([0, 0]), torch.tensor([0, 0])
                    s, st = xad.tensor(src, dtype=F64), torch.tensor(src, dtype=torch.float64)
                    _same(x.scatter_reduce(0, i, s, reduce, include_self=include_self),
                          xt.scatter_reduce(0, it, st, reduce, include_self=include_self))
                    _same(x.index_reduce(0, i, s, reduce, include_self=include_self),
                          xt.index_reduce(0, it, st, reduce, include_self=include_self))


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.filterwarnings("ignore:index_reduce")
def test_index_reduce_matches_torch(xb, include_self):
    a = np.array([[0.5, -1.0, 2.0, 0.1], [1.5, 0.25, -0.75, 1.2], [3.0, -2.0, 1.0, -0.3]])
    s = np.array([[1.25, -0.5, 0.75, 0.6], [-1.5, 2.5, 0.3, 1.1]])
    for k, reduce in enumerate(("prod", "mean", "amax", "amin")):
        for dim, src_a, i in [((0, s, [2, 2]), (1, s[:, :3].T * 0.5, [3, 3]))[
                (k + include_self) % 2]]:
            x, xt = _pair(a)
            src, srct = _pair(np.ascontiguousarray(src_a))
            y, yt = x * 1, xt * 1
            assert y.index_reduce_(dim, xad.tensor(i), src, reduce,
                                   include_self=include_self) is y
            yt.index_reduce_(dim, torch.tensor(i), srct, reduce, include_self=include_self)
            _same(y, yt)
            _backward_both(y, yt, a + 2)
            np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
            np.testing.assert_allclose(src.grad.numpy(), srct.grad.numpy(), rtol=1e-12)
    _same(xad.zeros(3, dtype=xad.int64).index_reduce(0, xad.tensor([1, 1]),
                                                     xad.tensor([3, 4]), "mean"),
          torch.zeros(3, dtype=torch.int64).index_reduce(0, torch.tensor([1, 1]),
                                                         torch.tensor([3, 4]), "mean"))


_GRADCHECK = {
    "atan2_": lambda x: (x * 1).atan2_(x[:, :1] + 2.5),
    "copysign_": lambda x: (x * 1).copysign_(xad.tensor([1.0, -1.0, 1.0, -1.0], dtype=F64)),
    "index_copy_": lambda x: (x * 1).index_copy_(1, xad.tensor([3, 0]), x[:, 1:3] ** 2),
    "put": lambda x: x.put(xad.tensor([0, -1, 0]), x[0, :3] * x[1, :3], accumulate=True),
    "put_": lambda x: (x * 1).put_(xad.tensor([5, 2]), x[0, :2] ** 2),
    "scatter_reduce_:prod": lambda x: (x * 1).scatter_reduce_(
        1, xad.tensor([[0, 0, 3], [1, 1, 1]]), x[:, 1:] * 1.5, "prod", include_self=False),
    "index_reduce_:mean": lambda x: (x * 1).index_reduce_(
        0, xad.tensor([1, 1]), x * x, "mean"),
    "index_reduce:amax": lambda x: x.index_reduce(1, xad.tensor([0, 0, 2, 0]), x * 1.5,
                                                  "amax"),
}


@pytest.mark.parametrize("name", sorted(_GRADCHECK))
def test_gradients_against_finite_differences(xb, name):
    a = np.array([[0.3, -1.2, 2.1, 0.7], [1.4, -0.4, 0.9, -2.3]])  # no ties
    x = xad.tensor(a, dtype=F64, requires_grad=True)
    assert xad.gradcheck(_GRADCHECK[name], [x])


def _phi(v):
    return math.exp(-v * v / 2) / math.sqrt(2 * math.pi)


def _cdf(v):
    return (1 + math.erf(v / math.sqrt(2))) / 2


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (1.0, 2.0, 0.5, 6.0)])
def test_trunc_normal_bounds_and_moments(xb, mean, std, a, b):
    n = 20000
    w = xad.zeros(n, dtype=F64)
    g = xad.Generator().manual_seed(3)
    assert init.trunc_normal_(w, mean, std, a, b, generator=g) is w
    v = w.numpy()
    assert v.min() >= a and v.max() <= b and w.dtype == F64
    al, be = (a - mean) / std, (b - mean) / std
    z = _cdf(be) - _cdf(al)
    mu = mean + std * (_phi(al) - _phi(be)) / z
    var = std ** 2 * (1 + (al * _phi(al) - be * _phi(be)) / z - ((_phi(al) - _phi(be)) / z) ** 2)
    assert abs(v.mean() - mu) < 5 * math.sqrt(var / n)
    assert abs(v.var() - var) < 5 * var * math.sqrt(2 / n)
    again = init.trunc_normal_(xad.zeros(n, dtype=F64), mean, std, a, b,
                               generator=xad.Generator().manual_seed(3))
    assert (again.numpy() == v).all()  # seeded
    h = init.trunc_normal_(xad.zeros(50), mean, std, a, b)
    assert h.dtype == xad.float32 and (h.numpy() >= a).all() and (h.numpy() <= b).all()
    with pytest.warns(UserWarning, match="more than 2 std"):
        init.trunc_normal_(xad.zeros(3), mean=10.0, std=1.0, a=-1.0, b=1.0)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 2, 3), (6, 2, 1)])
def test_orthogonal_is_orthogonal(xb, shape):
    w = xad.zeros(*shape, dtype=F64)
    assert init.orthogonal_(w, gain=2.0, generator=xad.Generator().manual_seed(1)) is w
    q = w.numpy().reshape(shape[0], -1)
    small = min(q.shape)
    gram = q.T @ q if q.shape[0] >= q.shape[1] else q @ q.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(small), atol=1e-12)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        init.orthogonal_(xad.zeros(3))


def test_sparse_dirac_and_eye_match_torch(xb):
    w = init.sparse_(xad.zeros(10, 400, dtype=F64), sparsity=0.25, std=0.5)
    v = w.numpy()
    assert ((v == 0).sum(axis=0) == 3).all()  # ceil(0.25 * 10) zeros in every column
    assert abs(v[v != 0].std() - 0.5) < 0.03
    assert (v != 0).sum(axis=1).std() > 0  # the zeros' rows differ by column
    with pytest.raises(ValueError, match="2 dimensions"):
        init.sparse_(xad.zeros(2, 2, 2), 0.5)
    for shape, groups in (((6, 2, 3, 3), 2), ((2, 4, 1, 3, 2), 1), ((4, 2, 5), 4)):
        t = torch.zeros(shape)
        torch.nn.init.dirac_(t, groups)
        _same(init.dirac_(xad.zeros(*shape), groups), t)
    with pytest.raises(ValueError, match="divisible"):
        init.dirac_(xad.zeros(3, 2, 3), groups=2)
    with pytest.raises(ValueError, match="3, 4, or 5"):
        init.dirac_(xad.zeros(3, 2))
    for shape in ((3, 5), (4, 2)):
        _same(init.eye_(xad.zeros(*shape)), torch.nn.init.eye_(torch.zeros(shape)))
    with pytest.raises(ValueError, match="2 dimensions"):
        init.eye_(xad.zeros(3))


def test_grid_sample_bicubic_matches_torch(xb):
    rng = np.random.default_rng(7)
    img, grid = rng.normal(size=(2, 2, 4, 5)), rng.uniform(-1.3, 1.3, (2, 3, 2, 2))
    for padding_mode, align in (("zeros", False), ("border", True), ("reflection", False),
                                ("reflection", True)):
        x, xt = _pair(img)
        g, gt = _pair(grid)
        y = F.grid_sample(x, g, mode="bicubic", padding_mode=padding_mode, align_corners=align)
        yt = torch.nn.functional.grid_sample(xt, gt, mode="bicubic", padding_mode=padding_mode,
                                             align_corners=align)
        np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), atol=1e-13)
        w = rng.normal(size=tuple(yt.shape))
        _backward_both(y, yt, w)
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), atol=1e-13)
        np.testing.assert_allclose(g.grad.numpy(), gt.grad.numpy(), atol=1e-12)
    x = xad.tensor(img, dtype=F64)
    g = xad.tensor(grid, dtype=F64, requires_grad=True)
    assert xad.gradcheck(lambda g: F.grid_sample(x, g, mode="bicubic",
                                                 padding_mode="reflection"), [g])


def test_interpolate_bicubic_gradients(xb):
    img = np.random.default_rng(8).normal(size=(1, 2, 3, 4))
    for align in (False, True):
        x, xt = _pair(img)
        y = F.interpolate(x, size=(5, 3), mode="bicubic", align_corners=align)
        yt = torch.nn.functional.interpolate(xt, size=(5, 3), mode="bicubic",
                                             align_corners=align)
        _same(y, yt)
        _backward_both(y, yt, np.arange(15.0).reshape(1, 1, 5, 3) - 4)
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), atol=1e-13)
    x = xad.tensor(img, dtype=F64, requires_grad=True)
    assert xad.gradcheck(lambda x: F.interpolate(x, scale_factor=1.5, mode="bicubic"), [x])


_INPLACE_INDEX = {
    "index_copy_": lambda y: y.index_copy_(0, xad.tensor([1]), xad.ones(1, 3, dtype=F64)),
    "put_": lambda y: y.put_(xad.tensor([4]), xad.ones(1, dtype=F64), accumulate=True),
    "scatter_reduce_": lambda y: y.scatter_reduce_(0, xad.tensor([[0, 1, 0]]),
                                                   xad.ones(1, 3, dtype=F64), "amax"),
    "index_reduce_": lambda y: y.index_reduce_(1, xad.tensor([2]), xad.ones(2, 1, dtype=F64),
                                               "mean"),
}


@pytest.mark.parametrize("name", sorted(_INPLACE_INDEX))
def test_index_inplace_rules(xb, name):
    """As torch's: the version counts the change, a saved tensor changed in place fails at
    backward, a leaf that requires grad is refused."""
    x = xad.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=F64, requires_grad=True)
    y = x.exp()
    v0 = y._version
    assert _INPLACE_INDEX[name](y) is y and y._version == v0 + 1
    with pytest.raises(RuntimeError, match="in place|in-place|version"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="leaf"):
        _INPLACE_INDEX[name](x)


FUZZ_N = int(os.environ.get("XAD_FUZZ_N", "0"))


def _fuzz_case(seed: int):
    """A random index write (op, shapes, dim, index, reduce, include_self) as
    ``(name, f(lib, x, src))`` with float64 inputs of distinct values (no ties)."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(v) for v in rng.integers(1, 5, int(rng.integers(1, 4))))
    dim = int(rng.integers(len(shape)))
    op = str(rng.choice(["index_copy", "put", "index_reduce", "scatter_reduce_"]))
    reduce = str(rng.choice(["prod", "mean", "amax", "amin"]))
    incl, acc = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
    n = shape[dim]
    if op == "index_copy":
        idx = rng.permutation(n)[:int(rng.integers(1, n + 1))]  # no repeats: torch's is undefined
    elif op == "put":
        size = int(np.prod(shape))
        idx = rng.integers(-size, size, int(rng.integers(1, 6))) if acc else \
            rng.permutation(size)[:int(rng.integers(1, size + 1))]
    elif op == "index_reduce":
        idx = rng.integers(0, n, int(rng.integers(1, 6)))
    else:
        idx = rng.integers(0, n, tuple(int(rng.integers(1, s + 1)) for s in shape))
    src_shape = (idx.shape if op == "put" else idx.shape if op == "scatter_reduce_" else
                 tuple(len(idx) if d == dim else s for d, s in enumerate(shape)))
    reduce = "sum" if op == "scatter_reduce_" and rng.random() < 0.2 else reduce

    def f(lib, x, src):
        i = lib.tensor(idx)
        y = x * 1
        if op == "index_copy":
            return y.index_copy_(dim, i, src)
        if op == "put":
            return y.put_(i, src, accumulate=acc)
        if op == "index_reduce":
            return y.index_reduce_(dim, i, src, reduce, include_self=incl)
        return y.scatter_reduce_(dim, i, src, reduce, include_self=incl)
    name = f"{op}(shape={shape}, dim={dim}, idx={idx.tolist()}, {reduce}, self={incl}, acc={acc})"
    return name, f, shape, src_shape, rng


@pytest.mark.filterwarnings("ignore:index_reduce")
def test_index_writes_fuzz_against_torch(xb):
    """Seeded random index writes against torch: values and both gradients, float64.
    Default: 12 draws on NumPy, one elsewhere (a draw per backend: each new shape is a
    compile on JAX); ``XAD_FUZZ_N=2000`` for the long run."""
    seeds = range(FUZZ_N) if FUZZ_N else range(12) if xb.name == "numpy" else [
        12 + zlib.crc32(xb.label.encode()) % 100]
    for seed in seeds:
        name, f, shape, src_shape, rng = _fuzz_case(seed)
        a = rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape)
        s = rng.uniform(0.5, 2.0, src_shape) * rng.choice([-1, 1], src_shape)
        x, xt = _pair(a)
        src, srct = _pair(s)
        y, yt = f(xad, x, src), f(torch, xt, srct)
        np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-12,
                                   err_msg=name)
        w = rng.uniform(-1, 1, shape)
        _backward_both(y, yt, w)
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=name)
        np.testing.assert_allclose(src.grad.numpy(), srct.grad.numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=name)
