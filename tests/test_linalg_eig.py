"""``linalg.eig``, ``linalg.eigvals`` (xad/ops/eig.py) and ``torch.linalg.householder_product``
(``torch.orgqr``, xad/torch_linalg.py) against torch 2.13 in float64, on every backend:
values (eigenvalues as sets, eigenvectors up to a phase), gradients of losses free of the
eigenvalues' order and the eigenvectors' phases against torch's autograd and finite
differences, tangents against ``torch.func.jvp``, ``vmap``, the phase check, and the errors.
(tests/op_table.py checks ``eig`` to second order in both modes.)"""

from __future__ import annotations

import os

import numpy as np
import pytest
from torch_compare import T, torch

import xad

_RNG = np.random.default_rng(7)
REAL = _RNG.standard_normal((2, 3, 3))  # the first has a complex pair, the second does not
REAL[1] = np.array([[2.0, 1.0, 0.0], [0.5, -1.0, 0.3], [0.0, 0.2, 0.5]])
CPLX = _RNG.standard_normal((2, 3, 3)) + 1j * _RNG.standard_normal((2, 3, 3))


def _leaves(L, a):
    """``a`` as real leaves of ``L`` (torch or xad's ``torch``) and the matrix made of them
    (complex leaves are two real ones, as xad keeps gradients of real tensors)."""
    parts = [a.real.copy()] + ([a.imag.copy()] if np.iscomplexobj(a) else [])
    leaves = [L.tensor(p, dtype=L.float64, requires_grad=True) for p in parts]
    return leaves, leaves[0] if len(leaves) == 1 else L.complex(*leaves)


def _free(L, w, v):
    """A real loss free of the order of ``w`` and of the phases of ``v``'s columns: sums of
    functions of the eigenvalues, ``|V|^2`` weighted by them and by its rows,
    ``V diag(e^(w/2)) V^-1``."""
    f = v @ (L.exp(w * 0.5)[..., None] * L.linalg.inv(v))
    rows = L.tensor([1.0, -2.0, 0.5, 1.5][:v.shape[-1]], dtype=L.float64)[:, None]
    return ((L.real(w) ** 2).sum() + (L.imag(w) ** 2 * 0.7).sum()
            + (L.abs(v) ** 2 * L.real(w)[..., None, :] * rows).sum()
            + (L.real(f) * 0.3 + L.imag(f) ** 2).sum())


def _grads(L, a, loss):
    leaves, m = _leaves(L, a)
    (loss(L, m)).backward()
    return [t.grad.numpy() for t in leaves]


def _matched(w, wt):
    """For each of torch's eigenvalues ``wt`` (a 1-d array), the index of ours ``w`` nearest
    to it; a permutation, else the sets differ."""
    idx = np.abs(w[:, None] - wt[None, :]).argmin(axis=0)
    assert sorted(idx) == list(range(len(w))), (w, wt)
    return idx


@pytest.mark.parametrize("a", [REAL, CPLX], ids=["real", "complex"])
def test_eig_values_are_torchs(a, xb):
    """The eigenvalues as sets, each eigenvector up to a phase (both of norm 1), dtypes
    complex128, and ``A V = V diag(w)``."""
    w, v = T.linalg.eig(T.tensor(a))
    wt, vt = torch.linalg.eig(torch.tensor(a))
    assert w.dtype == xad.complex128 and v.dtype == xad.complex128
    w, v, wt, vt = w.numpy(), v.numpy(), wt.numpy(), vt.numpy()
    for k in range(a.shape[0]):
        idx = _matched(w[k], wt[k])
        np.testing.assert_allclose(w[k][idx], wt[k], rtol=1e-12, atol=1e-12)
        overlap = np.abs((v[k][:, idx].conj() * vt[k]).sum(axis=0))
        np.testing.assert_allclose(overlap, 1.0, rtol=1e-10)
    np.testing.assert_allclose(a @ v, v * w[..., None, :], atol=1e-12)
    e = T.linalg.eigvals(T.tensor(a)).numpy()
    for k in range(a.shape[0]):
        np.testing.assert_allclose(e[k][_matched(e[k], wt[k])], wt[k], rtol=1e-12, atol=1e-12)


def test_eig_dtypes_follow_torch(xb):
    """complex64 from float32, complex128 from float64 (also where every eigenvalue is real:
    NumPy's own ``eig`` gives a real array there); integers are refused, as PyTorch's."""
    for dtype, want in ((xad.float32, xad.complex64), (xad.float64, xad.complex128)):
        x = xad.tensor(REAL[1], dtype=dtype)
        w, v = xad.linalg.eig(x)
        assert (w.dtype, v.dtype, xad.linalg.eigvals(x).dtype) == (want, want, want)
    with pytest.raises(TypeError, match=r"linalg.eig: needs a floating or complex matrix"):
        xad.linalg.eig(xad.tensor([[1, 2], [3, 4]]))


LOSSES = {
    "eig": lambda L, m: _free(L, *L.linalg.eig(m)),
    "eigenvalues": lambda L, m: (L.real(L.linalg.eig(m)[0]) ** 3 + L.imag(
        L.linalg.eig(m)[0]) ** 2).sum(),
    "eigvals": lambda L, m: (L.real(L.linalg.eigvals(m) ** 2) + L.abs(L.linalg.eigvals(m))).sum(),
    "vectors": lambda L, m: (L.abs(L.linalg.eig(m)[1]) ** 4).sum(),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("a", [REAL, CPLX], ids=["real", "complex"])
def test_eig_gradients_are_torchs(name, a, xb):
    """Gradients of order- and phase-free losses, against torch's autograd in float64
    (``eigvals`` and the eigenvalues alone: the rule's ``gV = None`` shortcut)."""
    got, want = (_grads(L, a, LOSSES[name]) for L in (T, torch))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-10)


def test_eig_gradients_against_finite_differences(xb):
    """``xad.gradcheck`` of a loss through both outputs, real and complex inputs."""
    x = xad.tensor(REAL[0], dtype=xad.float64, requires_grad=True)
    y = xad.tensor(CPLX[0].imag, dtype=xad.float64, requires_grad=True)
    assert xad.gradcheck(lambda x: _free(T, *xad.linalg.eig(x)), (x,))
    assert xad.gradcheck(lambda x, y: _free(T, *xad.linalg.eig(xad.complex_from_parts(x, y))),
                         (x, y))


@pytest.mark.parametrize("a", [REAL, CPLX], ids=["real", "complex"])
def test_eig_tangents_are_torchs(a, xb):
    """``xad.jvp`` against ``torch.func.jvp`` (PyTorch's ``linalg_eig_jvp``), of the
    eigenvalues' and ``|V|^2``'s sums (order- and phase-free)."""
    da = np.random.default_rng(3).standard_normal(a.shape) * (1 + 1j if np.iscomplexobj(a)
                                                              else 1)

    def f(L, m):
        w, v = L.linalg.eig(m)
        e = L.linalg.eigvals(m)
        return w.sum(-1), (L.abs(v) ** 2 * w[..., None, :]).sum(-1), (e ** 3).sum(-1)

    _, want = torch.func.jvp(lambda m: f(torch, m), (torch.tensor(a),), (torch.tensor(da),))
    _, got = xad.jvp(lambda m: f(T, m), (xad.tensor(a),), (xad.tensor(da),))
    for g, w in zip(got, want):
        assert g.dtype == xad.complex128
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-9, atol=1e-10)


N = int(os.environ.get("XAD_FUZZ_N", "0")) or None
SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))


def _fuzz_case(seed: int) -> None:
    """One draw: a (batch of) 1x1 to 4x4 real or complex matrices; the eigenvalues as sets,
    the gradient of :func:`_free` and the tangent of the eigenvalues' and ``|V|^2``'s sums
    against torch's, relative to their size (a close pair of eigenvalues magnifies the two
    LAPACKs' rounding by the inverse gap)."""
    g = np.random.default_rng(seed)
    shape = [(), (2,)][int(g.integers(2))] + (int(g.integers(1, 5)),) * 2
    a = g.standard_normal(shape) + (1j * g.standard_normal(shape) if g.random() < 0.5 else 0)
    da = g.standard_normal(shape) * (1 + 1j if np.iscomplexobj(a) else 1)
    what = f"seed {seed}: shape {shape}, complex={np.iscomplexobj(a)}"
    w, wt = (L.linalg.eigvals(L.tensor(a)).numpy().reshape(-1, shape[-1]) for L in (T, torch))
    for k in range(w.shape[0]):
        _close(w[k][_matched(w[k], wt[k])], wt[k], what)
    for got, want in zip(*(_grads(L, a, LOSSES["eig"]) for L in (T, torch))):
        _close(got, want, what + ", gradient")

    def f(L, m):
        w, v = L.linalg.eig(m)
        return w.sum(-1), (L.abs(v) ** 2 * w[..., None, :]).sum(-1)

    _, want = torch.func.jvp(lambda m: f(torch, m), (torch.tensor(a),), (torch.tensor(da),))
    _, got = xad.jvp(lambda m: f(T, m), (xad.tensor(a),), (xad.tensor(da),))
    for x, y in zip(got, want):
        _close(x.numpy(), y.numpy(), what + ", tangent")


def _close(got, want, what):
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-7 * scale, err_msg=what)


def test_eig_fuzz_against_torch(xb):
    """Seeded draws (default 6 on NumPy, 2 elsewhere; ``XAD_FUZZ_N``, ``XAD_FUZZ_SEED``)."""
    for seed in range(SEED, SEED + (N or (6 if xb.name == "numpy" else 2))):
        _fuzz_case(seed)


def test_eig_vmap(xb):
    """``vmap`` of the values and of the gradient equals the loop over the batch."""
    x = xad.tensor(REAL, dtype=xad.float64)
    got = xad.vmap(lambda m: _free(T, *xad.linalg.eig(m)))(x)
    loop = [_free(T, *xad.linalg.eig(x[k])).item() for k in range(2)]
    np.testing.assert_allclose(got.numpy(), loop, rtol=1e-12)
    grads = xad.vmap(xad.grad(lambda m: _free(T, *xad.linalg.eig(m))))(x)
    np.testing.assert_allclose(grads.numpy(), np.stack(_grads(torch, REAL, LOSSES["eig"])[0]),
                               rtol=1e-9, atol=1e-10)
    e = xad.vmap(xad.linalg.eigvals)(x).numpy()
    np.testing.assert_allclose(np.sort_complex(e), np.sort_complex(
        xad.linalg.eigvals(x).numpy()), rtol=1e-12)


@pytest.mark.parametrize("a", [REAL, CPLX], ids=["real", "complex"])
def test_loss_depending_on_the_phase_raises(a, xb):
    """A loss of ``Re V`` depends on each eigenvector's arbitrary phase: PyTorch raises, and
    so does xad (at once on the host, at the next host read on CuPy: no implicit read)."""
    leaves, m = _leaves(torch, a)
    with pytest.raises(RuntimeError, match="depends on this quantity"):
        torch.real(torch.linalg.eig(m)[1]).sum().backward()
    leaves, m = _leaves(T, a)
    with pytest.raises(RuntimeError, match=r"linalg.eig backward: .*depends on that phase"):
        T.real(T.linalg.eig(m)[1]).sum().backward()
        leaves[0].grad.numpy()


def test_eig_needs_a_backend_that_has_it(monkeypatch):
    """A backend whose namespace lacks ``eig`` (the standard has it from 2025.12), or refuses
    it (array_api_strict at API version 2024.12), gives an error naming the function, the
    backend and what to do, never a number."""
    import array_api_compat.numpy as compat
    import array_api_strict

    with xad.use_backend("numpy"):
        monkeypatch.delattr(compat.linalg, "eig")
        with pytest.raises(NotImplementedError, match=r"linalg.eig: the numpy backend's "
                                                      r"linalg has no eig .*x.to\('numpy'\)"):
            xad.linalg.eig(xad.eye(2))
    with xad.use_backend("array_api_strict"), \
            array_api_strict.ArrayAPIStrictFlags(api_version="2024.12"):
        with pytest.raises(ValueError, match=r"linalg.eigvals: the array_api_strict backend "
                                             r"failed .*2025.12.*x.to\('numpy'\)"):
            xad.linalg.eigvals(xad.eye(2))


# ----- householder_product ------------------------------------------------------------------
def _hh_inputs(shape, k, cplx):
    g = np.random.default_rng(sum(shape) * 10 + k)
    a, tau = g.standard_normal(shape), g.standard_normal(shape[:-2] + (k,))
    if cplx:
        a, tau = a + 1j * g.standard_normal(a.shape), tau + 1j * g.standard_normal(tau.shape)
    return a, tau


HH = [((4, 3), 2, False), ((2, 4, 3), 3, False), ((3, 3), 0, False), ((2, 3, 3), 3, True),
      ((4, 2), 1, True)]


@pytest.mark.parametrize("shape, k, cplx", HH)
def test_householder_product_is_torchs(shape, k, cplx, xb):
    """Values and the gradients (to ``A`` and ``tau``, real and imaginary parts) of a
    weighted sum of ``|Q|^2`` and ``Re Q``, against torch in float64; ``torch.orgqr`` too."""
    a, tau = _hh_inputs(shape, k, cplx)
    w = np.random.default_rng(1).standard_normal(shape)

    def run(L):
        la, ma = _leaves(L, a)
        lt, mt = _leaves(L, tau)
        q = L.linalg.householder_product(ma, mt)
        (L.abs(q) ** 2 * L.tensor(w) + L.real(q)).sum().backward()
        return q.detach().numpy(), [0 if t.grad is None else t.grad.numpy() for t in la + lt]

    (q, g), (qt, gt) = run(T), run(torch)
    np.testing.assert_allclose(q, qt, rtol=1e-12, atol=1e-12)
    for x, y in zip(g, gt):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(T.orgqr(T.tensor(a), T.tensor(tau)).numpy(), qt, atol=1e-12)


BAD = {"wide": ((3, 4), (2,)), "k_over_n": ((4, 3), (4,)), "batch": ((2, 4, 3), (3, 2)),
       "vector": ((4,), (1,)), "unbatched_tau": ((2, 4, 3), (2,))}


@pytest.mark.parametrize("name", sorted(BAD))
def test_householder_product_refuses_what_torch_refuses(name):
    sa, st = BAD[name]
    with pytest.raises(RuntimeError):
        torch.linalg.householder_product(torch.zeros(sa), torch.zeros(st))
    with pytest.raises(RuntimeError, match="linalg.householder_product: "):
        T.linalg.householder_product(T.zeros(sa), T.zeros(st))
    with pytest.raises(RuntimeError, match="tau's dtype xad.float64 does not match"):
        T.linalg.householder_product(T.zeros(4, 3), T.zeros(2, dtype=T.float64))


def test_compiled_gradient_keeps_the_phase_check(xb):
    """Under ``xad.compile`` the gradient is eager's, and the phase check runs again at each
    replay on that call's values (a host check, as index range checks; with CUDA graphs on
    CuPy, ``eig`` runs between them and the check inside one): a matrix whose
    eigenvectors are real passes (the phase's first-order effect is 0 there), one with a
    complex pair raises."""
    good = xad.compile(xad.grad(lambda m: _free(T, *xad.linalg.eig(m))), cuda_graphs=True)
    bad = xad.compile(xad.grad(lambda m: xad.real(xad.linalg.eig(m)[1]).sum()),
                      cuda_graphs=True)
    x = xad.tensor(REAL[0], dtype=xad.float64)
    for _ in range(3):
        np.testing.assert_allclose(good(x).numpy(), _grads(torch, REAL[0], LOSSES["eig"])[0],
                                   rtol=1e-9, atol=1e-10)
        bad(xad.tensor(REAL[1], dtype=xad.float64)).numpy()
    with pytest.raises(RuntimeError, match="depends on that phase"):
        bad(x).numpy()
    assert (good.graphs > 0) == xb.name.startswith("cupy")
