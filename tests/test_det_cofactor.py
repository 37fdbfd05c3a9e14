"""``det``'s gradient (the cofactor matrix: closed forms to 3x3, LU factors from 4x4, as
JAX's) and ``slogdet``'s at singular matrices, against torch 2.13 and exact cofactors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import xad

F64 = xad.float64


def _cofactor(a: np.ndarray) -> np.ndarray:
    """The cofactor matrix by minors, in float64 (exact on small integer matrices)."""
    n = a.shape[-1]
    c = np.empty_like(a)
    for i, j in itertools.product(range(n), range(n)):
        minor = np.delete(np.delete(a, i, axis=0), j, axis=1)
        c[i, j] = (-1) ** (i + j) * (np.linalg.det(minor) if n > 1 else 1.0)
    return np.round(c) if np.all(a == np.round(a)) else c


def _det_grad(a, dtype=F64):
    x = xad.tensor(a, dtype=dtype, requires_grad=True)
    xad.linalg.det(x).sum().backward()
    return x.grad.numpy()


@pytest.mark.parametrize("a", [[[2.0, 1.0], [1.0, 3.0]],
                               [[2.0, -1.0, 0.0], [1.0, 3.0, 2.0], [0.0, 1.0, 4.0]],
                               [[7.0, 2.0, 1.0], [0.0, 3.0, -1.0], [-3.0, 4.0, 2.0]]])
def test_small_integer_matrices_give_the_exact_cofactors_in_float32(a, xb):
    """The SVD-based rule gave 1-3 float32 ulp off these integers (the doctest rounded)."""
    np.testing.assert_array_equal(_det_grad(a, xad.float32), _cofactor(np.array(a)))


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_invertible_matrices_match_torch(n, xb):
    import torch
    a = np.random.default_rng(n).standard_normal((5 if n == 4 else 3, n, n))
    t = torch.tensor(a, requires_grad=True)
    torch.linalg.det(t).sum().backward()
    np.testing.assert_allclose(_det_grad(a), t.grad.numpy(), rtol=1e-12, atol=1e-13)


SINGULAR = [
    np.array([[1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0], [0, 1, 0, 1], [1, 0, 0, 3]]),  # rank 3
    np.diag([0.0, 1.0, 1.0, 1.0]),  # rank 3, the zero pivot first: JAX gives 0
    np.array([[0.0, 2.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 1.0],
              [0.0, 3.0, 1.0, 2.0]]),  # rank 3, a zero column first
    np.arange(16.0).reshape(4, 4),  # rank 2: zeros
    np.zeros((4, 4)),
]


def test_singular_matrices_give_the_cofactor_matrix(xb):
    """(One batch: JAX compiles each new shape.)"""
    a = np.stack(SINGULAR)
    np.testing.assert_allclose(_det_grad(a), np.stack([_cofactor(m) for m in a]), atol=1e-12)


def test_a_batch_mixing_singular_and_invertible_matrices(xb):
    a = np.stack([SINGULAR[0], SINGULAR[1], np.eye(4) * 2.0, np.arange(16.0).reshape(4, 4),
                  np.ones((4, 4)) + np.eye(4)])
    want = np.stack([_cofactor(m) for m in a])
    np.testing.assert_allclose(_det_grad(a), want, atol=1e-12)
    _, t = xad.jvp(lambda x: xad.linalg.det(x).sum(), (xad.tensor(a, dtype=F64),),
                   (xad.ones(a.shape, dtype=F64),))
    assert t.item() == pytest.approx(float(want.sum()), abs=1e-10)


@pytest.mark.parametrize("a", [[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 1.0]],
                               [[1.0, 2.0, 3.0], [2.0, 4.0, 5.0], [3.0, 6.0, 7.0]]])
def test_slogdet_gradient_at_a_singular_matrix_is_not_finite_as_torch(a, xb):
    """It raised on NumPy, torch and array_api_strict (their ``inv`` refuses); torch 2.13
    gives inf/NaN, and xad's is not finite, or of the size of one over rounding, at least
    where torch's is infinite (where the rest is NaN or finite is each library's order of
    operations in its solve)."""
    import torch
    t = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    torch.linalg.slogdet(t)[1].backward()
    x = xad.tensor(a, dtype=F64, requires_grad=True)
    with np.errstate(all="ignore"):
        xad.linalg.slogdet(x).logabsdet.backward()
    bad = np.isinf(t.grad.numpy())
    g = x.grad.numpy()[bad]
    # a pole: inf/NaN, or (where the elimination's rounding left a pivot of ~1e-16 rather
    # than 0, which varies with the machine's LAPACK kernels) beyond any real gradient
    assert bad.any() and (~np.isfinite(g) | (np.abs(g) > 1e12)).all(), g


def test_slogdet_gradient_of_an_invertible_matrix_matches_torch(xb):
    import torch
    a = np.random.default_rng(1).standard_normal((2, 5, 5))
    t = torch.tensor(a, requires_grad=True)
    torch.linalg.slogdet(t)[1].sum().backward()
    x = xad.tensor(a, dtype=F64, requires_grad=True)
    xad.linalg.slogdet(x).logabsdet.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-13)


def test_native_lu_and_triangular_solves_match_the_generic_ones(xb):
    """Each backend's lu_factor/solve_triangular (SciPy, torch, JAX) against the standard-only
    fallbacks (a column loop; solve), including singular matrices and NumPy's long-batch
    path (over 8192 pivots)."""
    from xad.lu_fallback import lu_factor_generic

    b = xad.get_backend()
    rng = np.random.default_rng(5)
    a = np.concatenate([np.stack(SINGULAR), rng.standard_normal((2100, 4, 4))])  # one shape
    arr = xad.tensor(a, dtype=F64)._array
    rhs = xad.tensor(rng.standard_normal(a.shape[:-1] + (2,)), dtype=F64)._array
    with b.on_device():
        lu, perm, odd = b.lu_factor(arr)
        glu, gperm, godd = lu_factor_generic(b.xp, arr, b.device)
        u = b.xp.triu(glu) + b.xp.eye(a.shape[-1], dtype=arr.dtype, device=b.device) * 3.0
        pairs = [(lu, glu), (perm, gperm), (odd, godd),
                 (b.solve_triangular(u, rhs, upper=True), b.xp.linalg.solve(u, rhs))]
    n = len(SINGULAR)  # (below a pivot that rounding left at ~1e-16 instead of 0, L's entry
    for got, want in pairs:  # is that noise over noise: it varies with the LAPACK kernels)
        got, want = b.to_numpy(got), b.to_numpy(want)
        np.testing.assert_allclose(got[n:], want[n:], rtol=1e-10, atol=1e-12)
    for f, p in ((lu, perm), (glu, gperm)):  # the singular ones: x[perm] == L @ U
        f, p = b.to_numpy(f)[:n], b.to_numpy(p)[:n]
        low = np.tril(f, -1) + np.eye(f.shape[-1])
        np.testing.assert_allclose(low @ np.triu(f), np.take_along_axis(a[:n], p[..., None], 1),
                                   atol=1e-12)
