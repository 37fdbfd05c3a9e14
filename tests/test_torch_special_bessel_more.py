"""The rest of ``torch.special``'s Bessel functions (xad/ops/torch_special_bessel.py):
``modified_bessel_i0``/``i1`` (xad's ``i0``/``i1``), ``modified_bessel_k0``/``k1``, their
scaled forms, ``bessel_y0``/``y1``, ``spherical_bessel_j0`` and ``airy_ai``: values against
torch 2.13 in float64 and float32 on every backend (edges included: 0, negative, large,
``inf``, NaN), the ``Y``'s and ``Ai`` below -2.09 against SciPy's Cephes where torch's are
off, and gradients to second order against SciPy's derivatives (PyTorch 2.13 has none: its
results carry no ``grad_fn``)."""

from __future__ import annotations

import numpy as np
import pytest

import xad

torch = pytest.importorskip("torch")
scipy_special = pytest.importorskip("scipy.special")

_EDGES = [0.0, -0.0, -1.0, -1e-300, 1e-300, 1e-20, 1e-8, 3e-8, 0.49, 0.5, 0.51, 2.0,
          2.0000001, 4.99, 5.0, 5.01, 9.99, 10.0, 30.0, 700.0, 710.0, 1e5, 1e17, np.inf,
          -np.inf, np.nan]
_X = np.concatenate([_EDGES, np.linspace(-3, 40, 87), np.logspace(-10, 3, 40)])
# every function but the Y's: to torch's values (the Y's: tests below)
_MATCHING = ("modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
             "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
             "spherical_bessel_j0")


def _special():
    from xad import as_torch

    return as_torch.namespace()["torch.special"]


def _compare(got: np.ndarray, want: np.ndarray, rtol: float, name: str) -> None:
    assert got.dtype == want.dtype, name
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), name)
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)], name)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0, err_msg=name)


@pytest.mark.filterwarnings("ignore:overflow", "ignore:invalid value")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_values_match_torch(xb, dtype):
    special = _special()
    x = _X.astype(dtype)
    for name in _MATCHING:
        got = getattr(special, name)(xad.tensor(x, dtype=getattr(xad, dtype))).numpy()
        want = getattr(torch.special, name)(torch.tensor(x)).numpy()
        if xb.name in ("jax", "cupy"):  # XLA flushes subnormal results (K0(710) in float64)
            # to 0; CUDA's float32 K0(100) was 0 on an H200 and its float64 K0(710) not
            want, got = (np.where(np.abs(v) < np.finfo(dtype).tiny, v.dtype.type(0), v)
                         for v in (want, got))
        _compare(got, want, {"float64": 4e-15, "float32": 2e-6}[dtype], f"{name} {dtype}")


@pytest.mark.filterwarnings("ignore:invalid value")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_y0_y1_match_cephes_and_torch_to_its_accuracy(xb, dtype):
    # torch's are up to 5e-6 off beyond 4 (its Cephes denominators lack their leading 1) and
    # ulp(x) off for large x (x - pi/4 rounded); xad's are Cephes' as SciPy writes them.
    # The error is measured against max(|Y|, 1/sqrt(x)), the size of Y's oscillation.
    special = _special()
    x = np.concatenate([np.linspace(0.01, 40, 151), np.logspace(-12, 3, 31), [4.99, 5.0, 5.01]])
    x = x.astype(dtype)
    xd = x.astype(np.float64)
    for name, ref in (("bessel_y0", scipy_special.y0), ("bessel_y1", scipy_special.y1)):
        got = getattr(special, name)(xad.tensor(x)).numpy()
        assert got.dtype == x.dtype
        scale = np.maximum(np.abs(ref(xd)), 1 / np.sqrt(xd))
        err = np.abs(got - ref(xd)) / scale
        assert err.max() < {"float64": 5e-14, "float32": 2e-6}[dtype], (name, err.max())
        want = getattr(torch.special, name)(torch.tensor(x)).numpy()
        assert (np.abs(got - want) / scale).max() < 1e-5, name
        edges = np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan], dtype=dtype)
        got = getattr(special, name)(xad.tensor(edges)).numpy()
        want = getattr(torch.special, name)(torch.tensor(edges)).numpy()
        np.testing.assert_array_equal(got, want, name)


def test_integers_take_the_default_float_as_torch(xb):
    special = _special()
    for name in (*_MATCHING, "bessel_y0", "bessel_y1"):
        got = getattr(special, name)(xad.tensor([1, 2, 3]))
        want = getattr(torch.special, name)(torch.tensor([1, 2, 3]))
        assert got.dtype is xad.float32, name
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-6, err_msg=name)


def _derivatives(name: str, a: np.ndarray, k: int) -> np.ndarray:
    sp = scipy_special
    if name.startswith("scaled"):  # (exp(x) K)' = exp(x) (K + K'), '' = exp(x) (K + 2K' + K'')
        n = int(name[-1])
        terms = [sp.kvp(n, a, j) for j in range(k + 1)]
        return np.exp(a) * (terms[0] + terms[1] if k == 1 else terms[0] + 2 * terms[1]
                            + terms[2])
    if name == "spherical_bessel_j0":
        return (a * np.cos(a) - np.sin(a)) / a**2 if k == 1 else (
            -np.sin(a) / a - 2 * np.cos(a) / a**2 + 2 * np.sin(a) / a**3)
    n = int(name[-1])
    if name.startswith("modified_bessel_i"):
        return sp.ivp(n, a, k)
    return sp.kvp(n, a, k) if name.startswith("modified_bessel_k") else sp.yvp(n, a, k)


@pytest.mark.parametrize("name", [*_MATCHING, "bessel_y0", "bessel_y1"])
def test_gradients_to_second_order_match_scipy(xb, name):
    # PyTorch's have none (K0' = -K1, K1' = -K0 - K1/x, Y0' = -Y1, Y1' = Y0 - Y1/x, ...)
    a = np.array([0.7, 1.99, 2.01, 4.0, 5.5, 12.0]) if xb.name == "jax" else np.array(
        [1e-3, 0.3, 0.7, 1.0, 1.99, 2.0, 2.01, 3.0, 4.99, 5.0, 5.01, 7.5, 12.0, 40.0])
    if name == "spherical_bessel_j0":  # the closed forms cancel near 0: the test below
        a = a[a > 0.1]
    f = getattr(_special(), name)
    x = xad.tensor(a, dtype=xad.float64, requires_grad=True)
    (g,) = xad.autograd.grad(f(x).sum(), x, create_graph=True)
    (h,) = xad.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g.detach().numpy(), _derivatives(name, a, 1), rtol=1e-13)
    np.testing.assert_allclose(h.numpy(), _derivatives(name, a, 2), rtol=1e-12)


def test_spherical_bessel_j0_gradient_near_zero_and_finite_differences(xb):
    a = np.array([0.0, 1e-300, 1e-8, -0.2, 0.49, 0.51, 3.0])
    x = xad.tensor(a, dtype=xad.float64, requires_grad=True)
    (g,) = xad.autograd.grad(xad.spherical_bessel_j0(x).sum(), x)
    with np.errstate(all="ignore"):
        want = np.where(a == 0, 0.0, (a * np.cos(a) - np.sin(a)) / a**2)
    want[1:3] = -a[1:3] / 3  # the closed form cancels there: its series' first term
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-14, atol=0)
    h = 1e-6
    fd = (xad.spherical_bessel_j0(x.detach() + h) - xad.spherical_bessel_j0(x.detach() - h))
    np.testing.assert_allclose(g.numpy(), fd.numpy() / (2 * h), rtol=1e-7, atol=1e-9)


def test_the_names_under_as_torch_are_xads(xb):
    special = _special()
    x = xad.tensor([0.5, 3.0], dtype=xad.float64)
    assert special.modified_bessel_i0 is xad.i0 or np.array_equal(
        special.modified_bessel_i0(x).numpy(), xad.i0(x).numpy())
    for name in _MATCHING[2:] + ("bessel_y0", "bessel_y1"):
        np.testing.assert_array_equal(getattr(special, name)(x).numpy(),
                                      getattr(xad, name)(x).numpy())


@pytest.mark.filterwarnings("ignore:overflow", "ignore:invalid value")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_airy_ai_matches_torch_and_cephes(xb, dtype):
    # from -2.09 up: torch's algorithm (the series, the decaying rational form, 0 past
    # 103.892); below, Cephes' (torch's denominators lack their leading 1: 6e-6 off)
    special = _special()
    top = 103.8 if dtype == "float64" else 25.0  # float32: Ai(26) is subnormal
    x = np.concatenate([np.linspace(-2.09, 2.08, 23), np.linspace(2.09, top, 37),
                        [0.0, -0.0, 103.892, 103.9, 1e300, np.inf, -np.inf, np.nan]])
    x = x.astype(dtype)
    got = special.airy_ai(xad.tensor(x)).numpy()
    want = torch.special.airy_ai(torch.tensor(x)).numpy()
    if xb.name == "jax":  # XLA flushes subnormal results (Ai(103.892)) to 0
        want = np.where(np.abs(want) < np.finfo(dtype).tiny, want.dtype.type(0), want)
    _compare(got, want, {"float64": 3e-13, "float32": 2e-5}[dtype], f"airy_ai {dtype}")
    # float32's zeta = 2/3 |x|^(3/2) carries ulp(zeta) of phase: 3e-5 at -60
    a = np.concatenate([np.linspace(-60, -2.1, 41), [-1e3] if dtype == "float64" else []])
    a = a.astype(dtype)
    got = special.airy_ai(xad.tensor(a)).numpy()
    ad = a.astype(np.float64)
    scale = np.maximum(np.abs(scipy_special.airy(ad)[0]), np.abs(ad) ** -0.25 / np.sqrt(np.pi))
    err = np.abs(got - scipy_special.airy(ad)[0]) / scale
    assert err.max() < {"float64": 5e-14, "float32": 4e-5}[dtype], err.max()
    want = torch.special.airy_ai(torch.tensor(a)).numpy()
    assert (np.abs(got - want) / scale).max() < {"float64": 2e-5, "float32": 6e-5}[dtype]


def test_airy_ai_gradients_to_second_order_match_scipy(xb):
    # Ai' (SciPy's), and Ai'' = x Ai; PyTorch's has none
    a = np.array([-30.0, -5.0, -2.1, -2.0, -0.5, 0.0, 0.7, 2.0, 2.1, 5.0, 20.0])
    x = xad.tensor(a, dtype=xad.float64, requires_grad=True)
    (g,) = xad.autograd.grad(_special().airy_ai(x).sum(), x, create_graph=True)
    (h,) = xad.autograd.grad(g.sum(), x)
    ai, aip, _, _ = scipy_special.airy(a)
    np.testing.assert_allclose(g.detach().numpy(), aip, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(h.numpy(), a * ai, rtol=1e-13, atol=1e-300)
