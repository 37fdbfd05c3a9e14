"""``torch.linalg``'s own names under ``xad.as_torch`` (xad/torch_linalg.py) against torch
2.13 in float64: values and the gradients of a weighted sum of the result, every backend."""

from __future__ import annotations

import numpy as np
import pytest
from torch_compare import T, torch

import xad

_RNG = np.random.default_rng(1)
SQ = _RNG.standard_normal((2, 3, 3)) + 2 * np.eye(3)
RECT = _RNG.standard_normal((3, 4))
B = _RNG.standard_normal((2, 3, 2))
V = _RNG.standard_normal((2, 4))
TI = _RNG.standard_normal((6, 2, 3))
TS = _RNG.standard_normal((2, 3, 6))
SPD = SQ @ SQ.transpose(0, 2, 1) + np.eye(3)
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
    # the LU family (rows swapped in SQ's factorisations) and the _ex forms
    "lu_factor": (lambda L, a: L.lu_factor(a).LU, (SQ,)),
    "lu_factor_ex": (lambda L, a: L.lu_factor_ex(a).LU, (SQ,)),
    "lu_P": (lambda L, a: (lambda r: r.P * 3.0 + r.U)(L.lu(a)), (SQ,)),
    "lu_L": (lambda L, a: L.lu(a).L, (SQ,)),
    "lu_U": (lambda L, a: L.lu(a).U, (SQ,)),
    "lu_LU": (lambda L, a: L.lu(a).L * 2.0 + L.lu(a).U, (SQ[0],)),
    "lu_factor_tall": (lambda L, a: L.lu_factor(a.mT).LU, (TS[:, :, :4],)),
    "lu_factor_wide": (lambda L, a: L.lu_factor(a).LU, (TS[:, :, :4],)),
    "lu_tall": (lambda L, a: (lambda r: r.L * r.L.sum(-1, keepdim=True)
                              + r.U.sum(-2, keepdim=True))(L.lu(a.mT)), (TS[:, :, :4],)),
    "lu_wide": (lambda L, a: (lambda r: r.U * r.U.sum(-1, keepdim=True)
                              + r.L.sum(-2, keepdim=True).mT)(L.lu(a)), (TS[:, :, :4],)),
    "lu_solve": (lambda L, a, b: L.lu_solve(*L.lu_factor(a), b), (SQ, B)),
    "lu_solve_adjoint": (lambda L, a, b: L.lu_solve(*L.lu_factor(a), b, adjoint=True),
                         (SQ, B)),
    "lu_solve_right": (lambda L, a, b: L.lu_solve(*L.lu_factor(a), b.mT, left=False),
                       (SQ, B)),
    "lu_solve_right_adjoint": (lambda L, a, b: L.lu_solve(
        *L.lu_factor(a), b.mT, left=False, adjoint=True), (SQ, B)),
    "inv_ex": (lambda L, a: L.inv_ex(a).inverse, (SQ,)),
    "solve_ex": (lambda L, a, b: L.solve_ex(a, b).result, (SQ, B)),
    "solve_ex_vector": (lambda L, a, b: L.solve_ex(a, b).result, (SQ, B[0, :, 0])),
    "solve_ex_right": (lambda L, a, b: L.solve_ex(a, b.mT, left=False).result, (SQ, B)),
    "cholesky_ex": (lambda L, a: L.cholesky_ex(a).L, (SPD,)),
    "cholesky_ex_upper": (lambda L, a: L.cholesky_ex(a, upper=True).L, (SPD,)),
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


def test_lu_unpack_agrees_with_pytorch(xb):
    """``torch.lu_unpack`` of ``lu_factor``'s factors: values, and the gradient to ``LU``."""
    res = []
    for m in (torch, T):
        a = m.tensor(SQ, requires_grad=True)
        lu, piv = m.linalg.lu_factor(a)
        p, low, up = m.lu_unpack(lu, piv)
        w = m.tensor(np.linspace(0.5, 1.5, 9).reshape(3, 3))
        (low * w + up * w * w).sum().backward()
        res.append((p.numpy(), low.detach().numpy(), up.detach().numpy(), a.grad.numpy()))
    for got, want in zip(res[1], res[0]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    for a in (RECT, RECT.T):  # wide and tall
        want = torch.lu_unpack(*torch.linalg.lu_factor(torch.tensor(a)))
        got = T.lu_unpack(*T.linalg.lu_factor(T.tensor(a)))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)
    p, low, up = T.lu_unpack(*T.linalg.lu_factor(T.tensor(SQ)), unpack_data=False)
    assert tuple(low.shape) == tuple(up.shape) == (0,) and tuple(p.shape) == (2, 3, 3)


# singular matrices (a zero pivot at 1, 2 or 3; a zero column first; all zero), and
# symmetric ones that are not positive definite at the leading minor of order 1, 2 or 3
SINGULAR = np.stack([np.array([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]]),
                     np.array([[0.0, 1, 2], [0, 3, 4], [0, 5, 7]]),
                     np.array([[1.0, 1, 1], [2, 2, 3], [1, 1, 5]]),
                     np.zeros((3, 3)), np.array([[2.0, 1, 0], [1, 3, 1], [0, 1, 4]]),
                     np.array([[1.0, 1, 0], [1, 1, 0], [0, 0, 0]])])
NOT_PD = np.stack([np.array([[-1.0, 0, 0], [0, 2, 0], [0, 0, 3]]),
                   np.array([[4.0, 2, 0], [2, 1, 0], [0, 0, 1]]),
                   np.array([[4.0, 2, 0], [2, 5, 0], [0, 0, -1]]),
                   np.array([[1.0, 2, 3], [2, 1, 0], [3, 0, 1]]),
                   np.array([[2.0, 1, 0], [1, 3, 1], [0, 1, 4]]),
                   np.array([[0.0, 0, 0], [0, 1, 0], [0, 0, 1]])])


@pytest.mark.parametrize("name", ["inv_ex", "lu_factor_ex", "solve_ex", "cholesky_ex",
                                  "cholesky_ex_upper"])
def test_ex_info_agrees_with_pytorch(xb, name):
    """``info`` (int32) as PyTorch's on singular and not positive-definite matrices, batched
    and one by one; the result where ``info`` is 0 as PyTorch's."""
    mats = NOT_PD if name.startswith("cholesky") else SINGULAR
    if name == "cholesky_ex_upper":
        mats = mats.copy()
        mats[3] = np.triu(mats[3]) + np.triu(mats[3], 1).T * 7  # only the upper one is read
    def call(m, a):
        f = getattr(m.linalg, name.replace("_upper", ""))
        if name == "solve_ex":
            return f(a, m.ones(a.shape[:-1] + (2,), dtype=a.dtype))
        return f(a, upper=True) if name.endswith("upper") else f(a)
    for batch in (mats, *mats):
        want = call(torch, torch.tensor(batch))
        got = call(T, T.tensor(batch))
        assert got[-1].dtype == T.int32 and tuple(got[-1].shape) == tuple(want[-1].shape)
        np.testing.assert_array_equal(got[-1].numpy(), want[-1].numpy())
        ok = want[-1].numpy() == 0
        np.testing.assert_allclose(got[0].numpy()[ok], want[0].numpy()[ok], atol=1e-12)
        if name == "lu_factor_ex":
            np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())


def test_lu_pivots_agree_with_pytorch(xb):
    """LAPACK's 1-based int32 interchanges, singular matrices included."""
    for a in (SQ, SINGULAR, SPD, np.eye(4)[[2, 0, 3, 1]], TS, TS.transpose(0, 2, 1),
              SINGULAR[:, :2], SINGULAR[..., :2]):
        want = torch.linalg.lu_factor_ex(torch.tensor(a)).pivots
        got = T.linalg.lu_factor(T.tensor(a)).pivots
        assert got.dtype == T.int32
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_lu_refusals_name_the_problem(xb):
    with pytest.raises(RuntimeError, match="without pivoting"):
        T.linalg.lu_factor(T.tensor(SQ), pivot=False)
    with pytest.raises(RuntimeError, match="without pivoting"):
        T.linalg.lu(T.tensor(SQ), pivot=False)
    with pytest.raises(RuntimeError, match=r"a \(batch of\) matrices, got shape \(3,\)"):
        T.linalg.lu(T.ones(3))
    with pytest.raises(RuntimeError, match="floating point or complex.*int64"):
        T.linalg.lu_factor(T.ones(3, 3, dtype=T.int64))
    z = T.complex(T.tensor(SQ), T.tensor(SQ))
    with pytest.raises(NotImplementedError, match="lu_factor's tangent of complex"):
        xad.jvp(lambda a: T.linalg.lu_factor(a).LU, (z,), (z,))
    with pytest.raises(RuntimeError, match=r"singular \(info = \[3, 1, 2, 1, 0, 2\]"):
        T.linalg.inv_ex(T.tensor(SINGULAR), check_errors=True)
    with pytest.raises(RuntimeError, match="not positive definite"):
        T.linalg.cholesky_ex(T.tensor(NOT_PD[1]), check_errors=True)
    assert T.linalg.solve_ex(T.tensor(SQ), T.tensor(B), check_errors=True).info.tolist() == [0, 0]


COMPLEX_LU = {  # the LU family of a complex matrix made from two real ones
    "lu_factor": lambda L, m, z, b: L.linalg.lu_factor(z).LU,
    "lu": lambda L, m, z, b: (lambda r: r.P + r.L * 2.0 + r.U)(L.linalg.lu(z)),
    "lu_solve": lambda L, m, z, b: L.linalg.lu_solve(*L.linalg.lu_factor(z), b),
    "lu_solve_adjoint_right": lambda L, m, z, b: L.linalg.lu_solve(
        *L.linalg.lu_factor(z), b.mT, left=False, adjoint=True),
    "pivots": lambda L, m, z, b: L.linalg.lu_factor_ex(z).pivots,
    "info": lambda L, m, z, b: L.linalg.lu_factor_ex(z * m.tensor([1.0, 1.0, 0.0])).info,
}


@pytest.mark.parametrize("name", sorted(COMPLEX_LU))
def test_complex_lu_agrees_with_pytorch(xb, name):
    """Complex matrices: pivots chosen by ``|Re| + |Im|`` as LAPACK's, values and the
    gradients (to the real and imaginary parts) as PyTorch's."""
    g = np.random.default_rng(7)
    re, im = g.standard_normal((2, 2, 3, 3)), g.standard_normal((2, 2, 3, 3))
    b = g.standard_normal((2, 3, 2)) + 1j * g.standard_normal((2, 3, 2))
    res = []
    for m in (torch, T):
        x, y = m.tensor(re, requires_grad=True), m.tensor(im, requires_grad=True)
        out = COMPLEX_LU[name](m, m, m.complex(x, y), m.tensor(b))
        if out.dtype in (m.int32, m.int64):
            res.append((out.numpy(),))
            continue
        w = m.tensor(np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape)))
        loss = (m.real(out) * w + m.imag(out) * w * w).sum()
        out = out.detach().resolve_conj() if m is torch else out.detach()
        res.append((out.numpy(), *(v.numpy() for v in m.autograd.grad(loss, (x, y)))))
    for got, want in zip(res[1], res[0]):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


def test_complex_pivot_is_lapacks(xb):
    """The pivot is the largest ``|Re| + |Im|`` (LAPACK's ``izamax``), not the largest
    ``|z|``: ``2 + 1.9j`` (3.9, ``|z|`` 2.76) before ``3`` (3, ``|z|`` 3)."""
    z = np.array([[3.0, 1, 2], [2 + 1.9j, 4, 1], [1, 2, 5j]])
    want = torch.linalg.lu_factor(torch.tensor(z))
    got = T.linalg.lu_factor(T.tensor(z))
    np.testing.assert_array_equal(got.pivots.numpy(), want.pivots.numpy())
    np.testing.assert_allclose(got.LU.numpy(), want.LU.numpy(), rtol=1e-12, atol=1e-14)
    assert want.pivots.tolist()[0] == 2
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
