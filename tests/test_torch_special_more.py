"""More of ``torch.special`` (xad/ops/torch_special.py: ``ndtr``, ``log_ndtr``, ``erfcx``,
``xlog1py``, ``entr``, ``i0``, ``i0e``, ``i1``, ``i1e``): values against torch 2.13 in float64
and float32 on every backend over grids that reach the tails, overflow, 0, infinities and
NaN, gradients against torch's autograd in float64, and the names under ``as_torch``."""

from __future__ import annotations

import numpy as np
import pytest

import xad

torch = pytest.importorskip("torch")

_INF, _NAN = np.inf, np.nan
_BESSEL = np.concatenate([np.linspace(-720, 720, 73), np.linspace(-34, 34, 69),
                          [29.999, 30.001, -30.001, 1e-300, -0.0, 1e4, 1e300, _INF, -_INF,
                           _NAN]])
GRIDS = {
    "ndtr": np.concatenate([np.linspace(-39, 9, 97), [-1e3, 1e3, -0.0, _INF, -_INF, _NAN]]),
    "log_ndtr": np.concatenate([np.linspace(-60, 40, 101), [-1e3, -1e10, 1e3, -1.0,
                                                             -1.0000001, _INF, -_INF, _NAN]]),
    "erfcx": np.concatenate([np.linspace(-26, 60, 87), [2.999999, 3.0, 1e3, 1e10, 1e200, -30.0,
                                                         _INF, -_INF, _NAN]]),
    "entr": np.array([0.0, -0.0, 1.0, 1e-300, 1e300, -1.0, 0.5, 2.0, _INF, -_INF, _NAN]),
    "i0": _BESSEL, "i0e": _BESSEL, "i1": _BESSEL, "i1e": _BESSEL,
}
RTOL = {"float64": 1e-13, "float32": 2e-6}


def _compare(got: np.ndarray, want: np.ndarray, rtol: float, name: str,
             atol: float = 0.0) -> None:
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), name)
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want), name)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(GRIDS))
def test_values_match_torch(xb, name, dtype):
    a = GRIDS[name]
    got = getattr(xad, name)(xad.tensor(a, dtype=getattr(xad, dtype))).numpy()
    want = getattr(torch.special, name)(torch.tensor(a, dtype=getattr(torch, dtype))).numpy()
    assert got.dtype == want.dtype
    # torch's float32 kernels are a few ulps off themselves, and both flush subnormals
    # differently; torch's ndtr is 1 + erf, accurate only absolutely in the lower tail
    # (xad's relatively: test_ndtr_is_relatively_accurate_in_the_lower_tail)
    tiny = np.abs(want) < (1e-30 if dtype == "float32" else 1e-300)
    got, want = got[~tiny], want[~tiny]
    atol = {"float64": 2e-16, "float32": 1e-7}[dtype] if name == "ndtr" else 0.0
    _compare(got, want, RTOL[dtype], name, atol)


def test_ndtr_is_relatively_accurate_in_the_lower_tail(xb):
    x = xad.tensor([-5.0, -8.2, -20.0, -37.0], dtype=xad.float64)
    want = [2.866515718791939e-07, 1.2019351542735859e-16, 2.7536241186062337e-89,
            5.725571222524577e-300]  # mpmath.ncdf, 30 digits
    # rtol: the rounding of x / sqrt(2) costs x^2 ulps (as in torch's and scipy's)
    np.testing.assert_allclose(xad.ndtr(x).numpy(), want, rtol=3e-13)
    np.testing.assert_allclose(xad.ndtr(x.float()).numpy()[:2], want[:2], rtol=1e-5)


_GRAD = {
    "ndtr": [-30.0, -5.0, -1.0, 0.0, 0.7, 3.0, 8.0],
    "log_ndtr": [-40.0, -5.0, -1.5, -1.0, -0.5, 0.0, 2.0, 9.0],
    "erfcx": [-5.0, -1.0, 0.0, 1.0, 2.9, 3.1, 10.0],
    "entr": [1e-3, 0.5, 1.0, 3.0],
    "i0": [-40.0, -3.0, -0.5, 0.0, 0.5, 3.0, 29.0, 31.0, 100.0],
    "i0e": [-40.0, -3.0, -0.5, 0.5, 3.0, 29.0, 31.0, 100.0],
    "i1": [-40.0, -3.0, -0.5, 0.0, 0.5, 3.0, 29.0, 31.0, 100.0],
    "i1e": [-40.0, -3.0, -0.5, 0.0, 0.5, 3.0, 29.0, 31.0, 100.0],
}


@pytest.mark.parametrize("name", sorted(_GRAD))
def test_gradients_match_torch(xb, name):
    a = np.array(_GRAD[name])
    x = xad.tensor(a, dtype=xad.float64, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    getattr(xad, name)(x).sum().backward()
    getattr(torch.special, name)(xt).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-11, atol=0,
                               err_msg=name)


def test_tail_gradients_are_exact_where_torchs_formulas_cancel(xb):
    # torch's erfcx' = 2x erfcx(x) - 2/sqrt(pi) and log_ndtr' = phi/ndtr lose x^2 ulps at
    # x = 1e3 (relative 3e-11); xad's differentiate the continued fraction (mpmath's values)
    x = xad.tensor([1e3], dtype=xad.float64, requires_grad=True)
    (g,) = xad.autograd.grad(xad.erfcx(x).sum(), x)
    np.testing.assert_allclose(g.numpy(), [-5.6418873726549666885e-7], rtol=1e-14)
    x = xad.tensor([-1e3], dtype=xad.float64, requires_grad=True)
    (g,) = xad.autograd.grad(xad.log_ndtr(x).sum(), x)
    np.testing.assert_allclose(g.numpy(), [1000.000999998], rtol=1e-15)


def test_xlog1py_values_and_gradients_match_torch(xb):
    x = np.array([0.0, 0.0, 0.0, 2.0, -1.5, 3.0, 0.5, 1.0, 0.0])
    y = np.array([-1.0, 0.0, _NAN, 0.5, 1e-10, -0.9, 1e300, _NAN, 7.0])
    xa, ya = (xad.tensor(v, dtype=xad.float64, requires_grad=True) for v in (x, y))
    xt, yt = (torch.tensor(v, requires_grad=True) for v in (x, y))
    got, want = xad.xlog1py(xa, ya), torch.special.xlog1py(xt, yt)
    _compare(got.detach().numpy(), want.detach().numpy(), 1e-15, "xlog1py")
    keep = ~np.isnan(y)  # a NaN other's gradients are NaN in torch, in xad alike or 0
    (got * xad.tensor(keep, dtype=xad.float64)).sum().backward()
    (want * torch.tensor(keep, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(xa.grad.numpy()[keep], xt.grad.numpy()[keep], rtol=1e-14)
    keep[0] = False  # x = 0, y = -1: torch's y-gradient is 0 / 0, xad's 0 (docs/PORTING.md)
    np.testing.assert_allclose(ya.grad.numpy()[keep], yt.grad.numpy()[keep], rtol=1e-14)
    assert ya.grad.numpy()[0] == 0.0
    z = xad.xlog1py(xad.tensor([1, 2]), 1.0)  # integers give the default float dtype
    assert z.dtype is xad.float32


def test_gradients_agree_with_finite_differences(xb):
    a = [-3.0, -0.4, 0.3, 2.5, 31.0]
    x = xad.tensor(a, dtype=xad.float64, requires_grad=True)
    for name in ("ndtr", "log_ndtr", "erfcx", "i0", "i0e", "i1", "i1e"):
        xad.gradcheck(getattr(xad, name), (x,))


def test_exposed_under_as_torch(xb):
    from xad import as_torch

    mods = as_torch.namespace()
    special, top = mods["torch.special"], mods["torch"]
    x = xad.tensor([0.5, 2.0], dtype=xad.float64)
    for n in ("ndtr", "log_ndtr", "erfcx", "entr", "i0", "i0e", "i1", "i1e"):
        np.testing.assert_array_equal(getattr(special, n)(x).numpy(),
                                      getattr(xad, n)(x).numpy(), n)
    np.testing.assert_array_equal(special.xlog1py(x, x).numpy(), xad.xlog1py(x, x).numpy())
    np.testing.assert_array_equal(top.i0(x).numpy(), xad.i0(x).numpy())  # torch.i0 too
    np.testing.assert_array_equal(x.i0().numpy(), xad.i0(x).numpy())  # and Tensor.i0


_PG = np.array([-3.7, -2.5, -0.3, 0.2, 0.5, 1.0, 2.0, 4.3, 9.0, 40.0, 1e3, 0.0, -2.0, _INF,
                _NAN])


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
def test_polygamma_matches_torch(xb, n):
    x = xad.tensor(_PG, dtype=xad.float64, requires_grad=True)
    xt = torch.tensor(_PG, requires_grad=True)
    y, yt = xad.polygamma(n, x), torch.special.polygamma(n, xt)
    np.testing.assert_array_equal(x.polygamma(n).detach().numpy(), y.detach().numpy())
    # torch's polygamma(1) (trigamma) is 5e-10 off (mpmath: tests/test_torch_special.py)
    # and below 0 the series in (x + k)^-(n+1) cancels, in torch's as in xad's (1e-12)
    got, want = y.detach().numpy(), yt.detach().numpy()
    pos = ~(_PG < 0)
    _compare(got[pos], want[pos], 1e-9 if n == 1 else 1e-13, f"polygamma {n}")
    _compare(got[~pos], want[~pos], 1e-9, f"polygamma {n} below 0")
    fin = np.isfinite(_PG) & ~((_PG <= 0) & (_PG == np.floor(_PG)))
    w = xad.tensor(fin, dtype=xad.float64)
    (g,) = xad.autograd.grad((y * w).sum(), x)
    want = torch.special.polygamma(n + 1, xt.detach()).numpy()  # PyTorch's gradient
    np.testing.assert_allclose(g.numpy()[fin], want[fin], rtol=1e-9 if n == 0 else 1e-12)
    f32 = xad.polygamma(n, xad.tensor(_PG[3:10], dtype=xad.float32)).numpy()  # x > 0
    want32 = torch.special.polygamma(n, torch.tensor(_PG[3:10], dtype=torch.float32)).numpy()
    np.testing.assert_allclose(f32, want32, rtol=5e-5 if n else 2e-6)


def test_zeta_matches_torch(xb):
    x = np.array([1.0, 1.5, 2.0, 3.0, 5.0, 11.0, 0.5, 1.0, 2.0, -1.0, 2.5, 4.0, 60.0])
    q = np.array([1.0, 0.5, -2.5, 2.0, 1e3, 0.1, 1.0, 0.0, -3.0, 2.0, -1.5, 1e9, 1.0])
    xa = xad.tensor(x, dtype=xad.float64)
    qa = xad.tensor(q, dtype=xad.float64, requires_grad=True)
    qt = torch.tensor(q, requires_grad=True)
    y, yt = xad.zeta(xa, qa), torch.special.zeta(torch.tensor(x), qt)
    _compare(y.detach().numpy(), yt.detach().numpy(), 1e-13, "zeta")
    fin = np.isfinite(yt.detach().numpy())
    w = xad.tensor(fin, dtype=xad.float64)
    (g,) = xad.autograd.grad((y * w).sum(), qa)
    (gt,) = torch.autograd.grad((yt * torch.tensor(fin, dtype=torch.float64)).sum(), qt)
    np.testing.assert_allclose(g.numpy()[fin], gt.numpy()[fin], rtol=1e-12)
    with pytest.raises(NotImplementedError, match="zeta: the derivative"):
        xad.zeta(xad.tensor([2.0], requires_grad=True), 1.0)  # torch's not_implemented
    with pytest.raises(ValueError, match="polygamma: n must be"):
        xad.polygamma(-1, xa)
