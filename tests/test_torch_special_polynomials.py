"""``torch.special``'s orthogonal polynomials (xad/ops/torch_special_polynomials.py):
values against torch 2.13 in float64 and float32 on every backend over a grid of ``x``
(0, +-1, near +-1, outside, large, ``inf``, NaN) and ``n`` (negative, the thresholds where
PyTorch switches to the trigonometric forms, Hermite's NaN limit, large), the dtype
promotion of ``(x, n)``, gradients in ``x`` against finite differences and the closed forms
(PyTorch's have none), and the names under ``as_torch``."""

from __future__ import annotations

import numpy as np
import pytest

import xad

torch = pytest.importorskip("torch")

NAMES = ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
         "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
         "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
         "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
         "laguerre_polynomial_l", "legendre_polynomial_p")
_XS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.3, 0.999, -0.999, 1 - 1e-16, -1 + 1.1e-16, 1.5,
       -1.5, 2.0, -3.0, 10.0, 1e-3, 0.75, 0.25, 1e300, np.inf, -np.inf, np.nan]
_NS = [-3, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 30, 100, 129, 513, 700]


def _special():
    from xad import as_torch

    return as_torch.namespace()["torch.special"]


def _grid(jax: bool) -> tuple[np.ndarray, np.ndarray]:
    xs, ns = (_XS[::3] + [1.0, -1.0, np.nan], _NS[:13:2] + [9, 30]) if jax else (_XS, _NS)
    x, n = np.meshgrid(np.array(xs), np.array(ns, dtype=np.float64))
    return x.ravel(), n.ravel()


@pytest.mark.filterwarnings("ignore:overflow", "ignore:invalid value")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", NAMES)
def test_values_match_torch(xb, name, dtype):
    xg, ng = _grid(xb.name == "jax")
    x, n = xg.astype(dtype), ng.astype(dtype)
    got = getattr(_special(), name)(xad.tensor(x), xad.tensor(n)).numpy()
    want = getattr(torch.special, name)(torch.tensor(x), torch.tensor(n)).numpy()
    assert got.dtype == want.dtype
    # torch reads an uninitialised value for NaN x and n >= 2 but for T, Hermite's: NaN here
    mask = ~(np.isnan(xg) & (ng >= 2))
    got, want = got[mask].astype(np.float64), want[mask].astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), name)
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)], name)
    # the error against the value's size, or the largest value at that n on [-1, 1] ([0, 1]
    # shifted), where the value is a cancellation; n ulps (acos, the recurrence's rounding)
    # and n^2 ulps, the condition number near +-1 (PyTorch's V and W take their limits at
    # the floats next to +-1, n^2 theta^2 off; xad keeps the quotient)
    xg, ng = xg[mask], ng[mask]
    inside = (xg >= 0) & (xg <= 1) if name.startswith("shifted") else np.abs(xg) <= 1
    fin = np.isfinite(got) & np.isfinite(want)
    scale = np.array([np.abs(want[inside & fin & (ng == k)]).max(initial=0) for k in ng])
    err = np.abs(got - want)[fin] / np.maximum(np.maximum(np.abs(want), scale)[fin], 1e-300)
    ulp = {"float64": 2.2e-16, "float32": 1.2e-7}[dtype]
    k = np.maximum(ng[fin], 0)
    tol = ulp * (10 * (k + 10) + np.where(np.abs(np.abs(xg[fin]) - 1) < 1e-6, k * k, 0))
    assert (err <= tol).all(), (name, xg[fin][err > tol], ng[fin][err > tol])


def test_dtype_promotion_of_x_and_n_matches_torch(xb):
    special = _special()
    f64, f32, i64 = (np.array([0.5, 2.0]), np.array([0.5, 2.0], dtype=np.float32),
                     np.array([1, 2]))
    for x in (f64, f32, i64, 0.5):
        for n in (np.array([3, 4]), np.array([3.0, 4.0]), np.array([3.0, 4.0], np.float32),
                  3, 3.5):
            for name in ("chebyshev_polynomial_t", "hermite_polynomial_h"):
                if not isinstance(x, np.ndarray) and not isinstance(n, np.ndarray):
                    continue
                got = getattr(special, name)(*(xad.tensor(v) if isinstance(v, np.ndarray)
                                               else v for v in (x, n)))
                want = getattr(torch.special, name)(*(torch.tensor(v) if isinstance(
                    v, np.ndarray) else v for v in (x, n)))
                assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (x, n)
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


# d/dx in closed form: T' = n U_{n-1}, H' = 2n H_{n-1}, He' = n He_{n-1}, L' = -L^(1)_{n-1}
@pytest.mark.parametrize("name", NAMES)
def test_gradients_in_x_match_finite_differences(xb, name):
    a = np.array([-0.9, -0.3, 0.2, 0.45, 0.8, 0.97, 1.3, -1.7])
    ns = (2, 7, 11) if xb.name == "jax" else (0, 1, 2, 5, 7, 9, 11, 20)
    special = _special()
    for n in ns:
        x = xad.tensor(a, dtype=xad.float64, requires_grad=True)
        (g,) = xad.autograd.grad(getattr(special, name)(x, n).sum(), x)
        h = 1e-6
        up = getattr(special, name)(xad.tensor(a + h, dtype=xad.float64), n).numpy()
        down = getattr(special, name)(xad.tensor(a - h, dtype=xad.float64), n).numpy()
        fd = (up - down) / (2 * h)
        np.testing.assert_allclose(g.numpy(), fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max(),
                                   err_msg=f"{name} n={n}")


def test_gradients_match_closed_forms_at_the_ends_and_with_tensor_n(xb):
    special = _special()
    a = np.array([1.0, -1.0, 0.3, 0.999])
    n = np.array([9.0, 10.0, 12.0, 3.0])
    x = xad.tensor(a, dtype=xad.float64, requires_grad=True)
    nt = xad.tensor(n, dtype=xad.float64)
    (g,) = xad.autograd.grad(special.chebyshev_polynomial_t(x, nt).sum(), x)
    u = special.chebyshev_polynomial_u(xad.tensor(a, dtype=xad.float64), nt - 1).numpy()
    np.testing.assert_allclose(g.numpy(), n * u, rtol=1e-12)  # n^2 at 1: 81, -100 at -1
    (g,) = xad.autograd.grad(special.hermite_polynomial_h(x, nt).sum(), x)
    hm = special.hermite_polynomial_h(xad.tensor(a, dtype=xad.float64), nt - 1).numpy()
    np.testing.assert_allclose(g.numpy(), 2 * n * hm, rtol=1e-12)
    (g,) = xad.autograd.grad(special.hermite_polynomial_he(x, nt).sum(), x)
    hm = special.hermite_polynomial_he(xad.tensor(a, dtype=xad.float64), nt - 1).numpy()
    np.testing.assert_allclose(g.numpy(), n * hm, rtol=1e-12)


def test_large_n_elsewhere_leaves_each_elements_gradient_finite(xb):
    # the recurrence runs to the largest n; an element of small n stops at its own degree
    x = xad.tensor([3.0, 1.0], dtype=xad.float64, requires_grad=True)
    n = xad.tensor([2, 700])
    (g,) = xad.autograd.grad(xad.chebyshev_polynomial_t(x, n).sum(), x)
    np.testing.assert_allclose(g.numpy(), [4 * 3.0, 700.0**2], rtol=1e-12)


def test_a_recurrence_too_long_is_refused(xb):
    with pytest.raises(NotImplementedError, match="legendre_polynomial_p: n = 100000"):
        xad.legendre_polynomial_p(xad.tensor([0.5]), 100000)
    got = xad.hermite_polynomial_h(xad.tensor([0.5], dtype=xad.float64),
                                   xad.tensor([10**6])).numpy()
    assert np.isnan(got).all()  # past Hermite's limit: NaN (PyTorch's), no recurrence
