"""PyTorch tensor methods that were missing under ``xad.as_torch`` (each raised
AttributeError): method forms of functions xad had (``x.hsplit``, ``x.select_scatter``, ...),
in-place forms (``absolute_``, ``arctan2_``, ``i0_``, ``renorm_``, ``conj_physical_``), the
random fills (``exponential_``, ``cauchy_``, ``log_normal_``, ``geometric_``, ``random_``:
their ranges, dtypes and statistics, not PyTorch's streams), ``is_conj``/``is_neg``, and
``torch.cholesky_solve``/``cholesky_inverse`` (values and gradients against PyTorch)."""

from __future__ import annotations

import numpy as np
import pytest

from xad import as_torch

torch = pytest.importorskip("torch")
T = as_torch.namespace()["torch"]

_G = np.random.default_rng(7)
A0 = _G.standard_normal((4, 6))


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().numpy()
    return t.numpy()


def _same(got, want, tol=1e-12):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w, tol)
        return
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(_np(got), _np(want), rtol=tol, atol=tol)


METHODS = {
    "hsplit": lambda x: x.hsplit(3), "vsplit": lambda x: x.vsplit([1, 3]),
    "dsplit": lambda x: x.reshape(2, 2, 6).dsplit(2),
    "split_with_sizes": lambda x: x.split_with_sizes([2, 4], 1),
    "select_scatter": lambda x: x.select_scatter(x[0] * 2, 0, 1),
    "slice_scatter": lambda x: x.slice_scatter(x[:, :2] + 1, 1, 2, 4),
    "diagonal_scatter": lambda x: x.diagonal_scatter(x.diagonal() * 0 + 5, 1),
    "bernoulli": lambda x: (x * 0).bernoulli(),
    "is_conj": lambda x: x.is_conj(), "is_neg": lambda x: (-x).is_neg(),
}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_methods_are_pytorchs(name, xb):
    got = METHODS[name](T.tensor(A0, dtype=T.float64))
    want = METHODS[name](torch.tensor(A0, dtype=torch.float64))
    if isinstance(want, bool):
        assert got is want
    else:
        _same(got, want)


INPLACE = {
    "absolute_": lambda x: x.absolute_(),
    "arctan2_": lambda x: x.arctan2_(x.flip(0) + 0.5),
    "i0_": lambda x: x.i0_(),
    "renorm_": lambda x: x.renorm_(2, 0, 1.5),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_in_place_forms_are_pytorchs_with_their_gradients(name, xb):
    results = []
    for L in (T, torch):
        a = L.tensor(A0, dtype=L.float64, requires_grad=True)
        x = a * 1.0
        out = INPLACE[name](x)
        assert out is x
        (x * L.arange(6.0, dtype=L.float64)).sum().backward()
        results.append((x, a.grad))
    _same(*results)


def test_conj_physical_in_place(xb):
    got = T.complex(T.tensor([1.0, -2.0]), T.tensor([2.0, 0.5]))
    want = torch.complex(torch.tensor([1.0, -2.0]), torch.tensor([2.0, 0.5]))
    assert got.conj_physical_() is got
    _same(got, want.conj_physical_())


# dtype -> the largest value random_() draws into it (PyTorch's documented bounds)
RANGES = {"float16": 2 ** 11, "bfloat16": 2 ** 8, "float32": 2 ** 24, "float64": 2 ** 53,
          "int8": 127, "uint8": 255, "int16": 2 ** 15 - 1, "int32": 2 ** 31 - 1,
          "int64": 2 ** 63 - 1, "bool": 1}


def _check_range(v, lo, hi):
    """Integers in ``[lo, hi]``, reaching both ends where the range is small."""
    a = v.double().numpy() if hasattr(v, "double") else v
    assert np.all(a == np.floor(a)) and a.min() >= lo and a.max() <= hi
    if hi - lo <= 300:
        assert (a.min(), a.max()) == (lo, hi)
    else:
        assert a.min() < lo + (hi - lo) * 0.01 and a.max() > hi - (hi - lo) * 0.01


@pytest.mark.parametrize("dtype", sorted(RANGES))
def test_random_fills_pytorchs_ranges(dtype, xb):
    try:
        xb.dtype(getattr(T, dtype))
    except TypeError:
        pytest.skip(f"{xb.name} has no {dtype}")
    signed = dtype not in ("uint8", "bool")
    cases = [((), 0, RANGES[dtype]), ((2,) if dtype == "bool" else (5,), 0, 1 if dtype == "bool"
                                      else 4), ((-3, 2), -3, 1) if signed else ((1, 2), 1, 1)]
    for args, lo, hi in cases:
        x = T.zeros(4000, dtype=getattr(T, dtype)).random_(*args)
        assert x.dtype is getattr(T, dtype)
        for v in (x, torch.zeros(4000, dtype=getattr(torch, dtype)).random_(*args)):
            _check_range(v, lo, hi)


def test_distribution_fills_have_their_moments(xb):
    n = 20000
    g = T.Generator().manual_seed(3)
    e = T.zeros(n, dtype=T.float64).exponential_(2.0, generator=g)
    assert float(e.min()) >= 0 and abs(float(e.mean()) - 0.5) < 0.03
    c = T.zeros(n + 1, dtype=T.float64).cauchy_(1.0, 2.0, generator=g)
    q = np.quantile(c.numpy(), [0.25, 0.5, 0.75])  # median 1, quartiles 1 -/+ 2
    np.testing.assert_allclose(q, [-1.0, 1.0, 3.0], atol=0.15)
    ln = T.zeros(n, dtype=T.float64).log_normal_(0.5, 0.3, generator=g).log()
    assert abs(float(ln.mean()) - 0.5) < 0.02 and abs(float(ln.std()) - 0.3) < 0.02
    for dt in (T.float32, T.int64):
        k = T.zeros(n, dtype=dt).geometric_(0.25, generator=g)
        assert k.dtype is dt and float(k.min()) == 1
        assert abs(float(k.double().mean()) - 4.0) < 0.15  # mean 1/p
    assert T.zeros(3).geometric_(1.0).tolist() == [1.0, 1.0, 1.0]


def test_fills_repeat_with_the_same_generator_seed(xb):
    draws = []
    for _ in range(2):
        g = T.Generator().manual_seed(11)
        draws.append([T.zeros(5, dtype=T.float64).exponential_(generator=g),
                      T.zeros(5).random_(0, 100, generator=g)])
    _same(draws[0], draws[1], 0)


def test_fill_errors(xb):
    with pytest.raises(TypeError, match="exponential_: fills a floating tensor"):
        T.zeros(3, dtype=T.int64).exponential_()
    with pytest.raises(RuntimeError, match="'from' to be less than 'to'"):
        T.zeros(3).random_(5, 2)
    with pytest.raises(ValueError, match="geometric_: p must be in"):
        T.zeros(3).geometric_(0.0)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse_are_pytorchs(upper, xb):
    m = _G.standard_normal((2, 3, 3))
    a, b = m @ m.transpose(0, 2, 1) + 3 * np.eye(3), _G.standard_normal((1, 3, 2))
    results = []
    for L in (T, torch):
        f = L.linalg.cholesky(L.tensor(a), upper=upper).requires_grad_()
        rhs = L.tensor(b, requires_grad=True)
        x = L.cholesky_solve(rhs, f, upper=upper)
        inv = L.cholesky_inverse(f[0], upper=upper)
        (x.sum() + (inv * inv).sum()).backward()
        tri = L.triu if upper else L.tril  # the triangle that is read
        results.append((x, inv, tri(f.grad), rhs.grad, rhs[0].cholesky_solve(f[1], upper)))
        if L is T:  # the other triangle is never read: its gradient is 0 (PyTorch's is not)
            assert not (f.grad - tri(f.grad)).abs().max().item()
    _same(*results, tol=1e-10)


def test_cholesky_solve_errors(xb):
    with pytest.raises(RuntimeError, match="cholesky_solve: the right-hand side"):
        T.cholesky_solve(T.ones(3), T.eye(3))
    with pytest.raises(RuntimeError, match="float32 and the factor float64|float64"):
        T.cholesky_solve(T.ones(3, 1), T.eye(3, dtype=T.float64))
