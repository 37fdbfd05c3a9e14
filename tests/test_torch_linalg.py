"""``torch.linalg``'s own names under ``xad.as_torch`` (xad/torch_linalg.py) against torch
2.13 in float64: values and the gradients of a weighted sum of the result, every backend."""

from __future__ import annotations

import numpy as np
import pytest
from torch_compare import T, torch

_RNG = np.random.default_rng(1)
SQ = _RNG.standard_normal((2, 3, 3)) + 2 * np.eye(3)
RECT = _RNG.standard_normal((3, 4))
B = _RNG.standard_normal((2, 3, 2))
V = _RNG.standard_normal((2, 4))
TI = _RNG.standard_normal((6, 2, 3))
TS = _RNG.standard_normal((2, 3, 6))
CUBE = _RNG.standard_normal((3, 3, 3)) + 2 * np.eye(3)  # (3, 3) right-hand sides: vectors
RHS = _RNG.standard_normal((3, 3))

CASES = {
    "norm": (lambda L, a: L.norm(a), (RECT,)),
    "norm_keepdim": (lambda L, a: L.norm(a, keepdim=True), (RECT,)),
    "norm_dim": (lambda L, a: L.norm(a, dim=1), (RECT,)),
    "norm_ord1_dim0": (lambda L, a: L.norm(a, 1, dim=0, keepdim=True), (RECT,)),
    "norm_inf_vector": (lambda L, a: L.norm(a[0], float("inf")), (RECT,)),
    "norm_matrix_2": (lambda L, a: L.norm(a, 2), (RECT,)),
    "norm_matrix_nuc": (lambda L, a: L.norm(a, "nuc"), (RECT,)),
    "norm_matrix_inf": (lambda L, a: L.norm(a, float("inf")), (RECT,)),
    "norm_dims_keepdim": (lambda L, a: L.norm(a, -1, dim=(2, 1), keepdim=True), (SQ,)),
    "norm_3d_flat": (lambda L, a: L.norm(a), (SQ,)),
    "cond": (lambda L, a: L.cond(a), (SQ,)),
    "cond_rect": (lambda L, a: L.cond(a), (RECT,)),
    "cond_-2": (lambda L, a: L.cond(a, -2), (SQ,)),
    "cond_fro": (lambda L, a: L.cond(a, "fro"), (SQ,)),
    "cond_1": (lambda L, a: L.cond(a, 1), (SQ,)),
    "solve_triangular_upper": (lambda L, a, b: L.solve_triangular(a, b, upper=True), (SQ, B)),
    "solve_triangular_lower": (lambda L, a, b: L.solve_triangular(a, b, upper=False), (SQ, B)),
    "solve_triangular_unit": (lambda L, a, b: L.solve_triangular(
        a, b, upper=False, unitriangular=True), (SQ, B)),
    "solve_triangular_right": (lambda L, a, b: L.solve_triangular(
        a, b.mT, upper=True, left=False), (SQ, B)),
    # B a (batch of) vectors where B.ndim == A.ndim - 1 and B.shape == A.shape[:-1]
    "solve_vector": (lambda L, a, b: L.solve(a[0], b[0]), (SQ, RHS)),
    "solve_vector_batch": (lambda L, a, b: L.solve(a, b[:2]), (SQ, RHS)),
    "solve_vector_broadcast": (lambda L, a, b: L.solve(a, b[0]), (SQ, RHS)),
    "solve_vectors_of_a_cube": (lambda L, a, b: L.solve(a, b), (CUBE, RHS)),
    "solve_matrix_broadcast": (lambda L, a, b: L.solve(a, b), (SQ, RHS)),
    "solve_right_matrix": (lambda L, a, b: L.solve(a, b, left=False), (SQ, RHS)),
    "solve_triangular_cube": (lambda L, a, b: L.solve_triangular(a, b, upper=True),
                              (CUBE, RHS)),  # matrices, where solve reads vectors
    "tensorinv": (lambda L, a: L.tensorinv(a, ind=1), (TI,)),
    "tensorsolve": (lambda L, a, b: L.tensorsolve(a, b), (TS, TS[:, :, 0])),
    "tensorsolve_dims": (lambda L, a, b: L.tensorsolve(a, b, dims=(0,)), (TI, TI[0])),
    "vander": (lambda L, x: L.vander(x), (V,)),
    "vander_N": (lambda L, x: L.vander(x, N=6), (V,)),
}


# torch 2.13's cond in a norm other than 2 changes its inverse in place and cannot give a
# gradient: xad's is checked against central differences there
_NO_TORCH_GRAD = ("cond_fro", "cond_1")


def _run(m, name, arrays=None):
    fn, default = CASES[name]
    xs = [m.tensor(a, requires_grad=True) for a in (arrays or default)]
    out = fn(m.linalg, *xs)
    w = m.tensor(np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape)))
    loss = (out * w).sum()
    if m is torch and name in _NO_TORCH_GRAD:
        return out.detach().numpy(), None, loss.item()
    grads = m.autograd.grad(loss, xs, allow_unused=True)
    return out.detach().numpy(), [None if g is None else g.numpy() for g in grads], loss.item()


def _differences(name) -> list:
    """Central differences of the weighted sum by each element of the first input."""
    arrays = [a.copy() for a in CASES[name][1]]
    g = np.zeros_like(arrays[0])
    def at(i, h):
        moved = [arrays[0].copy(), *arrays[1:]]
        moved[0][i] += h
        return _run(T, name, moved)[2]
    for i in np.ndindex(g.shape):
        g[i] = (at(i, 1e-6) - at(i, -1e-6)) / 2e-6
    return [g]


@pytest.mark.parametrize("name", sorted(CASES))
def test_torch_linalg_agrees_with_pytorch(xb, name):
    want, want_g, _ = _run(torch, name)
    got, got_g, _ = _run(T, name)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    if want_g is None:
        np.testing.assert_allclose(got_g[0], _differences(name)[0], rtol=1e-5, atol=1e-7)
        return
    for g, h in zip(got_g, want_g):
        assert (g is None) == (h is None) or not np.any(h if g is None else g)
        if g is not None and h is not None:
            np.testing.assert_allclose(g, h, rtol=1e-8, atol=1e-10)


def test_norm_at_zero_has_gradient_zero_as_pytorch(xb):
    x = T.zeros(2, 3, dtype=T.float64, requires_grad=True)
    T.linalg.norm(x).backward()
    assert not x.grad.numpy().any()


def test_refusals_name_the_shapes(xb):
    with pytest.raises(RuntimeError, match="1-d or 2-d"):
        T.linalg.norm(T.ones(2, 2, 2), ord=2)
    with pytest.raises(RuntimeError, match="not square"):
        T.linalg.tensorinv(T.ones(2, 3, 4), ind=1)
    with pytest.raises(RuntimeError, match="does not start"):
        T.linalg.tensorsolve(T.ones(2, 3, 6), T.ones(3, 2))
    for m in (torch, T):  # PyTorch's own refusal
        with pytest.raises(RuntimeError, match="N must be greater than 1"):
            m.linalg.vander(m.ones(3), N=1)


@pytest.mark.parametrize("a, b", [(SQ, RHS[:2]), (CUBE, RHS), (SQ[0], RHS[0])])
def test_solve_refuses_vectors_on_the_right_as_pytorch(xb, a, b):
    """``left=False`` with ``B`` a (batch of) vectors: PyTorch raises; xad solved ``B`` as
    one matrix (``A`` (3, 3, 3), ``B`` (3, 3)): a number where PyTorch has none."""
    for m in (torch, T):
        with pytest.raises(RuntimeError, match="linalg.solve"):
            m.linalg.solve(m.tensor(a), m.tensor(b), left=False)
    for b1 in (RHS[:1], RHS[:2, :2]):  # (1, 3), (2, 2): neither vectors nor fitting matrices
        for m in (torch, T):
            with pytest.raises((RuntimeError, ValueError)):
                m.linalg.solve(m.tensor(SQ), m.tensor(b1))
    for m in (torch, T):  # solve_triangular: matrices only, always
        with pytest.raises(RuntimeError, match="solve_triangular"):
            m.linalg.solve_triangular(m.tensor(SQ[0]), m.tensor(RHS[0]), upper=True)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("cplx", [False, True])
def test_cholesky_tangent_is_pytorchs(xb, upper, cplx):
    """``torch.func.jvp`` of ``cholesky`` takes the whole tangent ``dA`` (its
    ``cholesky_jvp``), not its symmetric part as :func:`xad.linalg.cholesky`'s; a tangent
    that is not symmetric gave other numbers without an error, and a complex one raised."""
    g = np.random.default_rng(3)
    a = g.standard_normal((2, 3, 3)) + (1j * g.standard_normal((2, 3, 3)) if cplx else 0)
    a = a @ a.conj().swapaxes(-1, -2) + 3 * np.eye(3) + np.triu(a, 1)
    t = g.standard_normal((2, 3, 3)) + (1j * g.standard_normal((2, 3, 3)) if cplx else 0)
    _, want = torch.func.jvp(lambda m: torch.linalg.cholesky(m, upper=upper),
                             (torch.tensor(a),), (torch.tensor(t),))
    _, got = T.func.jvp(lambda m: T.linalg.cholesky(m, upper=upper), (T.tensor(a),),
                        (T.tensor(t),))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("upper", [False, True])
def test_old_cholesky_reads_the_triangle_it_returns(xb, upper):
    """``torch.cholesky(A, upper=True)`` and ``A.cholesky(upper=True)`` read ``A``'s upper
    triangle, as ``torch.linalg.cholesky``: xad read the lower one (a positive-definite lower
    triangle gave another factor without an error)."""
    a = np.array([[4.0, 2.0], [1.0, 2.0]])
    got, want = [], []
    for m, out in ((T, got), (torch, want)):
        for method in (False, True):
            x = m.tensor(a, requires_grad=True)
            y = x.cholesky(upper=upper) if method else m.cholesky(x, upper=upper)
            (g,) = m.autograd.grad((y * m.tensor([[1.0, 2.0], [3.0, 4.0]])).sum(), (x,))
            out += [y.detach().numpy(), g.numpy()]
    for u, v in zip(got, want):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)
