"""PyTorch's numerical functions under ``xad.as_torch`` (xad/torch_calculus.py,
torch_sequences.py, torch_legacy_linalg.py) against torch 2.13 in float64 on every backend:
values, shapes and dtypes of every result, and the gradients of a weighted sum of the
floating results to every floating input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from torch_compare import T, torch

_RNG = np.random.default_rng(7)
V = _RNG.standard_normal(4)
M = _RNG.standard_normal((3, 5))
SQ = _RNG.standard_normal((2, 3, 3)) + 2 * np.eye(3)
B = _RNG.standard_normal((2, 3, 2))
XS = np.array([0.0, 0.5, 1.75, 2.0, 3.5])
IDX = np.array([[-1, 7, 25], [0, 3, 11]])
NZ = np.array([[0.0, 1.5, 0.0], [np.nan, 0.0, -2.0]])
SEG = np.array([1.5, -2.0, 0.25, 3.0, -0.75, 2.5])  # no ties within a segment
H = np.array([1.0, 2.0, 1.0, 4.0, 2.5, np.nan, 7.0, 0.0])  # ties, an edge, NaN
P = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [0.5, 0.5], [np.nan, 1.0], [1.5, 9.0]])


def _dd(r) -> list:
    return [r.hist, *r.bin_edges]


def _grid(m, x):
    return (m.tensor(XS[:3]), m.tensor(XS))


CASES = {
    "combinations": (lambda m, v: m.combinations(v), (V,)),
    "combinations_r3": (lambda m, v: m.combinations(v, r=3), (V,)),
    "combinations_replacement": (lambda m, v: m.combinations(v, 2, with_replacement=True), (V,)),
    "combinations_r0": (lambda m, v: m.combinations(v, r=0), (V,)),
    "combinations_r_past_n": (lambda m, v: m.combinations(v, r=5), (V,)),
    "combinations_empty": (lambda m, v: m.combinations(v[:0]), (V,)),
    "vander": (lambda m, v: m.vander(v), (V,)),
    "vander_N_increasing": (lambda m, v: m.vander(v, N=6, increasing=True), (V,)),
    "vander_N0_N1": (lambda m, v: [m.vander(v, N=0), m.vander(v, N=1)], (V,)),
    "vander_int": (lambda m, i: m.vander(i[0], N=3), (IDX,)),
    "unravel_index": (lambda m, i: m.unravel_index(i, (3, 4)), (IDX,)),
    "unravel_index_0d_int_shape": (lambda m, i: [m.unravel_index(i[0, 1], (2, 2, 2)),
                                                 m.unravel_index(i, 5)], (IDX,)),
    "nonzero_static": (lambda m, x: m.nonzero_static(x, size=5), (NZ,)),
    "nonzero_static_short": (lambda m, x: x.nonzero_static(size=2, fill_value=9), (NZ,)),
    "nonzero_static_0d_empty": (lambda m, x: [m.nonzero_static(x[0, 1], size=2),
                                              m.nonzero_static(x[:0], size=2)], (NZ,)),
    "range": (lambda m, x: [m.range(1, 4), m.range(0, 1, 0.3), m.range(3, 0, -0.5),
                            m.range(1, 4, dtype=m.int64),
                            m.range(-2, 5, 3, dtype=m.float64)], (V,)),
    "trapz_x": (lambda m, y, x: m.trapz(y, x), (M, XS)),
    "trapz_dx_dim": (lambda m, y: m.trapz(y, dx=0.5, dim=0), (M,)),
    "cumulative_trapezoid": (lambda m, y: m.cumulative_trapezoid(y), (M,)),
    "cumulative_trapezoid_dx_dim": (lambda m, y: m.cumulative_trapezoid(y, dx=0.25, dim=0),
                                    (M,)),
    "cumulative_trapezoid_x": (lambda m, y, x: m.cumulative_trapezoid(y, x), (M, XS)),
    "cumulative_trapezoid_empty": (lambda m, y: [m.cumulative_trapezoid(y[:, :1]),
                                                 m.cumulative_trapezoid(y[:, :0])], (M,)),
    "gradient": (lambda m, y: m.gradient(y), (M,)),
    "gradient_dim_spacing": (lambda m, y: m.gradient(y, spacing=2.0, dim=1), (M,)),
    "gradient_spacing_list": (lambda m, y: m.gradient(y, spacing=[0.5, 3.0]), (M,)),
    "gradient_edge2": (lambda m, y: m.gradient(y, edge_order=2), (M,)),
    "gradient_coordinates": (lambda m, y: m.gradient(y, spacing=_grid(m, y)), (M,)),
    "gradient_coordinates_edge2": (lambda m, y: m.gradient(
        y, spacing=_grid(m, y)[1:], dim=[1], edge_order=2), (M,)),
    "lu": (lambda m, a: list(m.lu(a)), (SQ,)),
    "lu_get_infos": (lambda m, a: list(a.lu(get_infos=True)), (SQ,)),
    "lu_solve": (lambda m, a, b: m.lu_solve(b, *m.lu(a)), (SQ, B)),
    "lu_solve_method": (lambda m, a, b: b.lu_solve(*m.linalg.lu_factor(a)), (SQ, B)),
    "triangular_solve": (lambda m, a, b: list(m.triangular_solve(b, a)), (SQ, B)),
    "triangular_solve_lower_transpose_unit": (lambda m, a, b: list(b.triangular_solve(
        a, upper=False, transpose=True, unitriangular=True)), (SQ, B)),
    "triangular_solve_transpose": (lambda m, a, b: list(m.triangular_solve(
        b, a, transpose=True)), (SQ, B)),
    "chain_matmul": (lambda m, a, b: m.chain_matmul(a[0], a[1], b[0]), (SQ, B)),
    "chain_matmul_one": (lambda m, a: m.chain_matmul(a[0]), (SQ,)),
    "nuclear_norm": (lambda m, a: m.nuclear_norm(a), (M,)),
    "nuclear_norm_dim": (lambda m, a: m.nuclear_norm(a, dim=(0, 2), keepdim=True), (SQ,)),
    "frobenius_norm": (lambda m, a: m.frobenius_norm(a, dim=(1, 2)), (SQ,)),
    "frobenius_norm_one_dim": (lambda m, a: m.frobenius_norm(a, 0, keepdim=True), (M,)),
    # Householder reflectors: LAPACK's numbers (geqrf is not differentiable, as PyTorch's)
    "geqrf_tall_wide_batch": (lambda m, a, r: [*m.geqrf(r.detach()), *m.geqrf(r.detach().mT),
                                               *a.detach().geqrf()], (SQ, M)),
    "geqrf_zero_column": (lambda m, a: list(m.geqrf(a.detach() * m.tensor([
        [1.0, 1.0, 1.0], [0.0, 1.0, 1.0], [0.0, 1.0, 1.0]], dtype=m.float64))), (SQ,)),
    "geqrf_complex": (lambda m, a: list(m.geqrf(m.complex(a.detach(), a.detach().mT))),
                      (SQ,)),
    "ormqr": (lambda m, a, b: m.ormqr(*m.geqrf(a.detach()), b), (SQ, B)),
    "ormqr_transpose": (lambda m, a, b: m.ormqr(*m.geqrf(a.detach()), b, transpose=True),
                        (SQ, B)),
    "ormqr_right": (lambda m, a, b: a.detach().geqrf()[0].ormqr(
        a.detach().geqrf()[1], b.mT, left=False), (SQ, B)),
    "ormqr_right_transpose": (lambda m, a, b: m.ormqr(
        *m.geqrf(a.detach()), b.mT, left=False, transpose=True), (SQ, B)),
    "ormqr_grad_reflectors": (lambda m, r, c: m.ormqr(r[:, :2], r[:2, 0], c, transpose=True),
                              (M.T, M.T[:, ::-1].copy())),
    "orgqr_method": (lambda m, r: r[:, :2].orgqr(r[:2, 1]), (M.T,)),
    # segments: lengths with an empty one, offsets, initial, along axis 1
    **{f"segment_reduce_{r}": (lambda m, d, r=r: [
        m.segment_reduce(d, r, lengths=m.tensor([2, 0, 3, 1])),
        m.segment_reduce(d, r, offsets=m.tensor([0, 1, 1, 6]), initial=0.5),
        m.segment_reduce(d.reshape(3, 2), r, lengths=m.tensor([0, 2, 1]))], (SEG,))
       for r in ("sum", "mean", "max", "min", "prod")},
    # histograms (not differentiable: inputs detached; PyTorch's raises at backward)
    "histogram_range_weight_density": (lambda m, h: list(m.histogram(
        h.detach(), 4, range=(0.0, 5.0), weight=h.detach() * 0 + 2, density=True)), (H,)),
    "histogram_data_extent": (lambda m, h: list(m.histogram(h.detach()[:5], 3)), (H,)),
    "histogram_edges": (lambda m, h: list(m.histogram(h.detach(), m.tensor(
        [0.0, 1.0, 2.5, 10.0], dtype=m.float64))), (H,)),
    "histogram_equal_empty_0d": (lambda m, h: [*m.histogram(h.detach()[1:2], 2),
                                               *m.histogram(h.detach()[:0], 2),
                                               *m.histogram(h.detach()[3], 3)], (H,)),
    "histogram_method_2d": (lambda m, a: list(a.detach().histogram(5)), (M,)),
    "histogramdd": (lambda m, p: _dd(m.histogramdd(p.detach()[[0, 1, 2, 3]], bins=[2, 3])),
                    (P,)),
    "histogramdd_edges_density": (lambda m, p: _dd(m.histogramdd(p.detach(), bins=[
        m.tensor([0.0, 1.0, 2.0], dtype=m.float64), m.tensor([0.0, 2.0], dtype=m.float64)],
        density=True)), (P,)),
    "histogramdd_range_weight": (lambda m, p: _dd(m.histogramdd(
        p.detach(), bins=2, range=[0.0, 1.0, 0.0, 1.0], weight=p.detach()[:, 1] + 1)), (P,)),
    "histogramdd_3d_input": (lambda m, a: _dd(m.histogramdd(a.detach(), bins=[2, 1, 3])),
                             (SQ,)),
}


# torch 2.13's vander cannot give a gradient (its cumulative product is changed in place):
# torch's gradient comes from torch.linalg.vander, the same powers
_TORCH_GRAD_TWINS = {"vander": lambda m, v: m.linalg.vander(v).flip(-1),
                     "vander_N_increasing": lambda m, v: m.linalg.vander(v, N=6)}


def _flat(out) -> list:
    return [t for o in out for t in _flat(o)] if isinstance(out, (tuple, list)) else [out]


def _run(m, name):
    fn, arrays = CASES[name]
    xs = [m.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if m is torch and name in _TORCH_GRAD_TWINS:
            values = _flat(fn(m, *[x.detach() for x in xs]))
            twin = _flat(_TORCH_GRAD_TWINS[name](torch, *xs))
            return _results(values), _grads(torch, xs, twin)
        outs = _flat(fn(m, *xs))
    return _results(outs), _grads(m, xs, outs)


def _results(outs: list) -> list:
    return [(tuple(o.shape), str(o.dtype).rsplit(".")[-1], o.detach().numpy()) for o in outs]


def _grads(m, xs: list, outs: list) -> list:
    floats = [o for o in outs if o.dtype in (m.float64, m.float32) and o.requires_grad]
    grads = []
    if floats:
        loss = sum((o * m.tensor(np.linspace(0.5, 1.5, o.numel()).reshape(tuple(o.shape)))).sum()
                   for o in floats)
        leaves = [x for x in xs if x.requires_grad]
        grads = [None if g is None else g.numpy()
                 for g in m.autograd.grad(loss, leaves, allow_unused=True)]
    return grads


@pytest.mark.parametrize("name", sorted(CASES))
def test_torch_numerics_agree_with_pytorch(xb, name):
    want, want_g = _run(torch, name)
    got, got_g = _run(T, name)
    assert [w[:2] for w in got] == [w[:2] for w in want]
    for (_, _, g), (_, _, w) in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    assert len(got_g) == len(want_g)
    for g, w in zip(got_g, want_g):
        if w is None or g is None:
            assert not np.any(w if g is None else g)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10)


def test_range_warns_as_pytorch(xb):
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        T.range(0, 2)


@pytest.mark.parametrize("name", ["solve", "lstsq", "eig", "symeig", "matrix_rank"])
def test_removed_functions_raise_pytorchs_error(xb, name):
    """The functions PyTorch removed raise its RuntimeError, word for word (the replacement
    named); so do the tensor methods PyTorch keeps for them."""
    msgs = []
    for m in (torch, T):
        a = m.tensor(SQ[0])
        with pytest.raises(RuntimeError, match="now removed") as e:
            getattr(m, name)(a, a)
        msgs.append(str(e.value))
        if name != "matrix_rank":
            with pytest.raises(RuntimeError, match="now removed"):
                getattr(a, name)(a) if name in ("solve", "lstsq") else getattr(a, name)()
    assert msgs[0] == msgs[1]


def test_refusals_as_pytorch(xb):
    for m in (torch, T):
        with pytest.raises(RuntimeError, match="at least edge_order"):
            m.gradient(m.tensor([1.0, 2.0]), edge_order=2)
        with pytest.raises(RuntimeError, match="Expected one or more"):
            m.chain_matmul()
        with pytest.raises(RuntimeError, match="1D"):
            m.combinations(m.ones(2, 2))
        with pytest.raises(TypeError):
            m.unravel_index(m.tensor([1.0]), (2,))


def _moments(draws, mean, var, n):
    """Sample mean within 5 standard errors of ``mean``; sample variance within 15%."""
    d = np.asarray(draws)
    assert np.all(np.abs(d.mean(-1) - mean) <= 5 * np.sqrt(var / n) + 1e-12)
    np.testing.assert_allclose(d.var(-1), var, rtol=0.15, atol=1e-12)


def test_poisson_moments_and_gradient(xb):
    """Draws through xad's generator: means and variances of the rates (0 to 1e4), counts
    (whole numbers), the seed replayed, and PyTorch's zero gradient."""
    rates = np.array([0.0, 0.3, 4.0, 60.0, 1e4])
    n = 3000
    T.manual_seed(3)
    lam = T.tensor(np.repeat(rates[:, None], n, 1), requires_grad=True)
    d = T.poisson(lam)
    assert d.dtype == T.float64 and tuple(d.shape) == (5, n)
    got = d.detach().numpy()
    assert np.all(got == np.round(got)) and np.all(got >= 0)
    _moments(got, rates[:, None][:, 0], rates, n)
    T.manual_seed(3)
    np.testing.assert_array_equal(T.poisson(lam.detach()).numpy(), got)
    d.sum().backward()
    assert not lam.grad.numpy().any()
    with pytest.raises(RuntimeError, match="non-negative"):
        T.poisson(T.tensor([-1.0]))


def test_binomial_moments(xb):
    """Means n p and variances n p (1 - p), counts below 0 giving 0 and probabilities
    past 1 giving the count (PyTorch's), broadcasting, the dtype, a generator."""
    count = np.array([0.0, 1.0, 10.0, 200.0, 1000.0])
    prob = np.array([0.3, 0.5, 0.9, 0.02, 0.5])
    n = 3000
    g = T.Generator().manual_seed(5)
    d = T.binomial(T.tensor(np.repeat(count[:, None], n, 1)), T.tensor(prob[:, None]),
                   generator=g).numpy()
    assert d.shape == (5, n) and np.all(d == np.round(d)) and np.all(d <= count[:, None])
    _moments(d, count * prob, count * prob * (1 - prob), n)
    for m in (torch, T):
        edge = m.binomial(m.tensor([-1.0, 3.0, 4.0]), m.tensor([0.5, 1.5, 0.0]))
        np.testing.assert_array_equal(edge.numpy(), [0.0, 3.0, 0.0])
        assert tuple(m.binomial(m.tensor([3.0, 3.0]), m.tensor([0.5])).shape) == (2,)
        assert m.binomial(m.ones(2, dtype=m.float64), m.ones(2, dtype=m.float64)).dtype == \
            m.float64
        with pytest.raises(ValueError, match="floating"):
            m.binomial(m.tensor([3, 3]), m.tensor([0.5, 0.5]))


def test_multinomial_method_and_polygamma_in_place(xb):
    for m in (torch, T):
        w = m.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
        np.testing.assert_array_equal(w.multinomial(2, replacement=True).numpy(), [[1, 1], [2, 2]])
        assert w.multinomial(1).dtype == m.int64
    got, want = (m.tensor([0.5, 1.5, 4.0], dtype=m.float64) for m in (T, torch))
    assert got.polygamma_(2) is got and want.polygamma_(2) is want
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10)


LOW = _RNG.standard_normal((2, 7, 3)) @ _RNG.standard_normal((2, 3, 9))  # rank 3


@pytest.mark.parametrize("wide", [True, False])
def test_svd_lowrank_reconstructs_a_low_rank_matrix(xb, wide):
    """A rank-3 matrix from a rank-3 sketch: ``U diag(S) V^H`` is ``A``, ``S`` the top
    singular values, the shapes PyTorch's, ``U`` and ``V`` orthonormal, and the gradient of
    ``S.sum()`` PyTorch's (the same subspace, whatever the random draws)."""
    a = LOW if wide else LOW.transpose(0, 2, 1)
    res = []
    for m in (torch, T):
        x = m.tensor(a, requires_grad=True)
        u, s, v = m.svd_lowrank(x, q=3)
        s.sum().backward()
        res.append([t.detach().numpy() for t in (u, s, v)] + [x.grad.numpy()])
    (tu, ts, tv, tg), (u, s, v, g) = res
    assert (u.shape, s.shape, v.shape) == (tu.shape, ts.shape, tv.shape)
    np.testing.assert_allclose((u * s[..., None, :]) @ v.transpose(0, 2, 1), a, atol=1e-10)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False)[..., :3], rtol=1e-10)
    np.testing.assert_allclose(u.transpose(0, 2, 1) @ u, np.broadcast_to(np.eye(3), (2, 3, 3)),
                               atol=1e-12)
    np.testing.assert_allclose(g, tg, rtol=1e-8, atol=1e-10)


def test_pca_lowrank_centers_and_defaults(xb):
    """``pca_lowrank``: ``q`` defaults to ``min(6, m, n)``; ``center`` subtracts the column
    means (the top singular values are those of the centred matrix); ``svd_lowrank``'s ``M``
    is subtracted; PyTorch's errors for ``q`` and ``niter``."""
    x = T.tensor(LOW[0] + 3.0)
    centred = LOW[0] + 3.0 - (LOW[0] + 3.0).mean(0)
    u, s, v = T.pca_lowrank(x)
    assert (tuple(u.shape), tuple(s.shape), tuple(v.shape)) == ((7, 6), (6,), (9, 6))
    np.testing.assert_allclose(s.numpy()[:3], np.linalg.svd(centred)[1][:3], rtol=1e-10)
    _, s, _ = T.pca_lowrank(x, q=4, center=False)
    np.testing.assert_allclose(s.numpy()[:4], np.linalg.svd(LOW[0] + 3.0)[1][:4], rtol=1e-10)
    _, s, _ = T.svd_lowrank(x, q=3, M=T.tensor((LOW[0] + 3.0).mean(0)))
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(centred)[1][:3], rtol=1e-10)
    for m in (torch, T):
        with pytest.raises(ValueError, match="not greater than min"):
            m.pca_lowrank(m.tensor(LOW[0]), q=8)
        with pytest.raises(ValueError, match="niter"):
            m.pca_lowrank(m.tensor(LOW[0]), niter=-1)


def _symmetric_cases() -> list:
    """Symmetric matrices that take each of Bunch-Kaufman's branches: 2x2 blocks, row
    interchanges, zero columns (``info``), tiny diagonals, and random ones."""
    rng = np.random.default_rng(11)
    mats = [np.array([[0.0, 1, 2], [1, 0, 3], [2, 3, 1]]), np.array([[4.0, 1, 0], [1, 3, 1],
                                                                        [0, 1, 2]]),
            np.zeros((3, 3)), np.array([[0.0, 0, 1], [0, 0, 0], [1, 0, 0]])]
    for n in (1, 2, 5, 7):
        for k in range(6):
            a = rng.standard_normal((n, n))
            a = a + a.T
            if k % 3 == 1:
                np.fill_diagonal(a, 1e-3 * rng.standard_normal(n))
            if k % 3 == 2:
                a[n // 2, :], a[:, n // 2] = 0, 0
            mats.append(a)
    return mats


def test_ldl_factor_is_lapacks(xb):
    """``LD``, ``pivots`` and ``info`` equal torch's (LAPACK's ``sytrf``) on every branch of
    the pivoting; where ``info`` is 0, ``ldl_solve`` equals torch's and solves ``A X = B``."""
    rng = np.random.default_rng(12)
    for a in _symmetric_cases():
        want = torch.linalg.ldl_factor_ex(torch.tensor(a))
        got = T.linalg.ldl_factor_ex(T.tensor(a))
        np.testing.assert_array_equal(got.pivots.numpy(), want.pivots.numpy())
        assert got.pivots.dtype == T.int32 and got.info.dtype == T.int32
        assert int(got.info.item()) == int(want.info.item())
        np.testing.assert_allclose(got.LD.numpy(), want.LD.numpy(), rtol=1e-10, atol=1e-12)
        if int(want.info.item()) == 0:
            b = rng.standard_normal((a.shape[0], 2))
            x = T.linalg.ldl_solve(got.LD, got.pivots, T.tensor(b)).numpy()
            w = torch.linalg.ldl_solve(want.LD, want.pivots, torch.tensor(b)).numpy()
            np.testing.assert_allclose(x, w, rtol=1e-8, atol=1e-10)
            np.testing.assert_allclose(a @ x, b, atol=1e-8)


def test_ldl_batches_and_refusals(xb):
    """Batched factors as one by one; ``ldl_solve`` broadcasts the batch (torch 2.13's CPU
    kernel crashes there: checked against one solve at a time); float32 stays float32;
    a zero block raises in ``ldl_factor``; complex matrices are refused."""
    rng = np.random.default_rng(13)
    a = rng.standard_normal((2, 4, 4))
    a = a + a.transpose(0, 2, 1)
    ld, piv = T.linalg.ldl_factor(T.tensor(a))
    for i in range(2):
        w = torch.linalg.ldl_factor(torch.tensor(a[i]))
        np.testing.assert_allclose(ld.numpy()[i], w.LD.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(piv.numpy()[i], w.pivots.numpy())
    b = rng.standard_normal((3, 1, 4, 2))
    x = T.linalg.ldl_solve(ld, piv, T.tensor(b)).numpy()
    assert x.shape == (3, 2, 4, 2)
    for i in range(3):
        for j in range(2):
            np.testing.assert_allclose(a[j] @ x[i, j], b[i, 0], atol=1e-9)
    ld32 = T.linalg.ldl_factor(T.tensor(a.astype(np.float32))).LD
    assert ld32.dtype == T.float32
    with pytest.raises(RuntimeError, match="zero block"):
        T.linalg.ldl_factor(T.zeros(2, 2))
    with pytest.raises(RuntimeError, match="real floating"):
        T.linalg.ldl_factor(T.tensor(a).to(T.complex128))
