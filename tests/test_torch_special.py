"""PyTorch's special functions (``erfc``, ``erfinv``, ``lgamma``, ``digamma``, ``fmod``):
values and gradients against torch 2.13 in float64 on every backend, the points where they
are special (tails, poles, signed zeros, exact remainders), and the standard-only fallbacks
of xad/special_fallback.py against torch directly (the array_api_strict backend runs them)."""

from __future__ import annotations

import array_api_strict as strict
import numpy as np
import pytest

import xad
from xad import special_fallback as sf

torch = pytest.importorskip("torch")

_REAL = np.array([-3.7, -2.5, -0.3, 0.2, 0.5, 1.0, 1.5, 2.0, 4.3, 9.0])
_POS = np.array([1e-3, 0.2, 0.5, 1.0, 1.4616, 2.0, 3.5, 10.0, 50.0])
_UNIT = np.array([-0.99, -0.5, -0.1, 0.0, 0.3, 0.75, 0.999])
CASES = {"erfc": (_REAL, torch.special.erfc), "erfinv": (_UNIT, torch.special.erfinv),
         "lgamma": (_REAL, torch.lgamma), "digamma": (_REAL, torch.special.digamma)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(xb, name):
    a, ref = CASES[name]
    x = xad.tensor(a, dtype=xad.float64, requires_grad=True)
    y = getattr(xad, name)(x)
    xt = torch.tensor(a, requires_grad=True)
    yt = ref(xt)
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-13,
                               atol=1e-14, err_msg=name)
    (y * y).sum().backward()
    (yt * yt).sum().backward()
    # torch's digamma gradient (polygamma(1, x)) is off by up to 1e-9: xad's is exact to
    # 1e-15 (checked against mpmath below), so the comparison allows for torch's
    rtol = 1e-8 if name == "digamma" else 1e-12
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=rtol, atol=1e-12,
                               err_msg=name)
    assert getattr(x.detach(), name)().dtype is xad.float64  # the tensor method


def test_trigamma_is_exact_where_torchs_polygamma_is_not():
    mpmath = pytest.importorskip("mpmath")
    with xad.use_backend("numpy"):
        x = xad.tensor(_REAL, dtype=xad.float64, requires_grad=True)
        g = xad.autograd.grad(xad.digamma(x).sum(), x)[0].numpy()
    want = np.array([float(mpmath.psi(1, v)) for v in _REAL])
    np.testing.assert_allclose(g, want, rtol=2e-15, atol=0)


def test_tails_poles_and_zeros_match_torch(xb):
    x = np.array([0.0, -0.0, -1.0, -2.0, np.inf, -np.inf, np.nan, 1e300, 1e-300, 26.0, -26.0,
                  -1e20, 30.0])
    for name in ("erfc", "lgamma", "digamma"):
        got = getattr(xad, name)(xad.tensor(x, dtype=xad.float64)).numpy()
        want = getattr(torch, name)(torch.tensor(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=0, err_msg=name)
        real = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[real]), np.signbit(want[real]), name)
    y = np.array([1.0, -1.0, 1.5, -2.0, 1 - 2**-53, -(1 - 2**-53), 1e-300, np.nan])
    got = xad.erfinv(xad.tensor(y, dtype=xad.float64)).numpy()
    np.testing.assert_allclose(got, torch.erfinv(torch.tensor(y)).numpy(), rtol=1e-13)


def test_erfc_is_not_one_minus_erf_in_the_tail(xb):
    x = xad.tensor([6.0, 10.0, 26.0], dtype=xad.float64)
    got = xad.erfc(x).numpy()
    np.testing.assert_allclose(got, [2.1519736712498913e-17, 2.088487583762545e-45,
                                     5.663192408856143e-296], rtol=1e-14)
    assert (1 - xad.erf(x)).numpy().tolist() == [0.0, 0.0, 0.0]  # what erfc is not


def test_fmod_is_exact_and_takes_the_sign_of_x(xb):
    x = np.array([5.5, -5.5, 5.5, -5.5, 1e20, -1e-20, 0.1, -0.0, 7.0, 3.0, np.inf, 1.0])
    y = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 1.0, 1e-3, 1.0, np.inf, 0.0, 1.0, np.nan])
    got = xad.fmod(xad.tensor(x, dtype=xad.float64), xad.tensor(y, dtype=xad.float64))
    want = torch.fmod(torch.tensor(x), torch.tensor(y)).numpy()
    np.testing.assert_array_equal(got.numpy(), want)  # exact, not x - trunc(x / y) * y
    real = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got.numpy()[real]), np.signbit(want[real]))
    assert np.fmod(1e20, 3.0) != 1e20 - np.trunc(1e20 / 3.0) * 3.0  # the formula is wrong
    i = xad.fmod(xad.tensor([7, -7, 7, -7]), xad.tensor([3, 3, -3, -3]))
    assert i.tolist() == [1, -1, 1, -1] and i.dtype is xad.int64
    assert xad.fmod(xad.tensor([-7.5]), 2).tolist() == [-1.5]


def test_fmod_gradients_match_torch(xb):
    a, b = np.array([5.3, -5.3, 2.2, -0.7]), np.array([2.0, 2.0, -0.9, 0.3])
    x, y = (xad.tensor(v, dtype=xad.float64, requires_grad=True) for v in (a, b))
    xt, yt = (torch.tensor(v, requires_grad=True) for v in (a, b))
    (xad.fmod(x, y) ** 2).sum().backward()
    (torch.fmod(xt, yt) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-14)
    np.testing.assert_allclose(y.grad.numpy(), yt.grad.numpy(), rtol=1e-14)


def test_integer_fmod_by_the_number_zero_raises(xb):
    with pytest.raises(ZeroDivisionError, match="fmod"):
        xad.fmod(xad.tensor([1, 2]), 0)


def test_inplace_methods(xb):
    x = xad.tensor([0.5, 2.0], dtype=xad.float64)
    x.lgamma_()
    np.testing.assert_allclose(x.numpy(), torch.lgamma(torch.tensor([0.5, 2.0])).numpy())
    y = xad.tensor([5.5, -5.5])
    assert y.fmod_(2.0) is y and y.tolist() == [1.5, -1.5]


def test_torch_special_under_as_torch(xb):
    from xad import as_torch
    special = as_torch.namespace()["torch.special"]
    a = np.array([0.1, 0.5, 0.9])
    for name in ("erf", "erfc", "erfinv", "gammaln", "digamma", "psi", "expit", "logit",
                 "log1p", "expm1", "exp2"):
        got = getattr(special, name)(xad.tensor(a, dtype=xad.float64)).numpy()
        want = getattr(torch.special, name)(torch.tensor(a)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-13, err_msg=name)
    m = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(special.logsumexp(xad.tensor(m), 1).numpy(),
                               torch.special.logsumexp(torch.tensor(m), 1).numpy(), rtol=1e-6)


# ----- the standard-only fallbacks, against torch on many points --------------------------
def _ulps(got, want):
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    d = np.abs(got - want) / np.maximum(np.spacing(np.abs(want)), 5e-324)
    return np.where(same, 0.0, d)


def test_fallback_erfc_and_erfinv_are_within_a_few_ulps():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-6, 6, 4000), rng.uniform(-27, 27, 1000),
                        [0.0, 0.5, 3.0, 26.5, np.inf, -np.inf, np.nan]])
    got = np.asarray(sf.erfc_generic(strict, strict.asarray(x)))
    assert _ulps(got, torch.special.erfc(torch.tensor(x)).numpy()).max() <= 8
    y = np.concatenate([rng.uniform(-1, 1, 4000), 1 - 10 ** rng.uniform(-16, 0, 1000),
                        [0.0, 1.0, -1.0, 2.0, np.nan]])
    got = np.asarray(sf.erfinv_generic(strict, strict.asarray(y)))
    assert _ulps(got, torch.special.erfinv(torch.tensor(y)).numpy()).max() <= 16


def test_fallback_lgamma_and_digamma_agree_with_torch():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-20, 20, 4000), 10 ** rng.uniform(-300, 300, 500),
                        -(10 ** rng.uniform(-300, 20, 500)),
                        [0.0, -0.0, 1.0, 2.0, -1.0, -2.5, np.inf, -np.inf, np.nan]])
    for f, ref in ((sf.lgamma_generic, torch.lgamma), (sf.digamma_generic, torch.digamma)):
        got = np.asarray(f(strict, strict.asarray(x)))
        want = ref(torch.tensor(x)).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        fin = np.isfinite(want)
        np.testing.assert_array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
        # absolute near the roots (x near 1, 2, and digamma's), relative elsewhere; torch's
        # own digamma loses 1e-13 next to the poles (pi / tan(pi x) unreduced)
        err = np.abs(got[fin] - want[fin]) / np.maximum(np.abs(want[fin]), 1.0)
        assert err.max() < 1e-12, f.__name__


def test_fallback_fmod_is_exact():
    rng = np.random.default_rng(2)
    s = rng.choice([-1.0, 1.0], (2, 3000))
    x = np.concatenate([rng.uniform(-100, 100, 3000), s[0] * 10 ** rng.uniform(-300, 300, 3000),
                        [0.0, -0.0, 5e-324, 1e308, np.inf, np.nan]])
    y = np.concatenate([rng.uniform(-10, 10, 3000), s[1] * 10 ** rng.uniform(-300, 300, 3000),
                        [0.0, 1.0, 3e-320, 3e-320, 1.0, 1.0]])
    got = np.asarray(sf.fmod_generic(strict, strict.asarray(x), strict.asarray(y)))
    want = np.fmod(x, y)
    np.testing.assert_array_equal(got, want)
    real = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[real]), np.signbit(want[real]))
    got32 = np.asarray(sf.fmod_generic(strict, strict.asarray(x[:3000].astype(np.float32)),
                                       strict.asarray(y[:3000].astype(np.float32))))
    np.testing.assert_array_equal(got32, np.fmod(x[:3000].astype(np.float32),
                                                 y[:3000].astype(np.float32)))
