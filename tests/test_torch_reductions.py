"""PyTorch's reductions that the standard lacks, against torch 2.13 (values, indices and
gradients, float64, every backend): ``cumprod`` (zeros), ``amax``/``amin`` (ties),
``median``/``nanmedian``, ``quantile``/``nanquantile`` (every interpolation), ``mode``,
``nansum``/``nanmean``, and ``linalg.lstsq``; each also as ``torch.*`` under ``as_torch``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import xad
from xad import as_torch

F64 = xad.float64
NAN = float("nan")
T = as_torch.namespace()["torch"]


def _pair(a, fx, ft, outputs=1):
    """``fx`` on an xad tensor of ``a`` and ``ft`` on a torch tensor: the values (and
    integer outputs) equal, and the gradients of a weighted sum of the first output."""
    x = xad.tensor(a, dtype=F64, requires_grad=True)
    t = torch.tensor(a, dtype=torch.float64, requires_grad=True)
    with np.errstate(all="ignore"):
        ox, ot = fx(x), ft(t)
    ox = ox if isinstance(ox, tuple) else (ox,)
    ot = ot if isinstance(ot, tuple) else (ot,)
    for u, v in zip(ox[:outputs], ot[:outputs]):
        np.testing.assert_allclose(u.numpy(), v.detach().numpy(), rtol=1e-12, atol=1e-12)
        assert tuple(u.shape) == tuple(v.shape)
    w = np.random.default_rng(0).standard_normal(tuple(ot[0].shape))
    (ox[0] * xad.tensor(w, dtype=F64)).sum().backward()
    (ot[0] * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


A = np.array([[0.5, 0.0, 2.0, -3.0, 0.0], [1.5, -2.0, 0.7, 4.0, 0.3],
              [0.0, 1.0, 2.0, 3.0, 4.0], [2.0, 1.0, 3.0, 0.5, 0.0]])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumprod_with_zeros(dim, xb):
    _pair(A, lambda x: x.cumprod(dim), lambda t: t.cumprod(dim))
    _pair(A, lambda x: T.cumprod(x, dim=dim), lambda t: torch.cumprod(t, dim=dim))


def test_cumprod_second_order_at_zeros(xb):
    """Under create_graph the rule is one whose own derivatives are exact at zeros."""
    for a in (A, A[:, ::-1].copy()):
        x = xad.tensor(a, dtype=F64, requires_grad=True)
        t = torch.tensor(a, requires_grad=True)
        (gx,) = xad.autograd.grad(x.cumprod(1).sum(), [x], create_graph=True)
        (gt,) = torch.autograd.grad(t.cumprod(1).sum(), [t], create_graph=True)
        np.testing.assert_allclose(gx.detach().numpy(), gt.detach().numpy())
        w = np.random.default_rng(1).standard_normal(a.shape)
        (hx,) = xad.autograd.grad((gx * xad.tensor(w, dtype=F64)).sum(), [x])
        (ht,) = torch.autograd.grad((gt * torch.tensor(w)).sum(), [t])
        np.testing.assert_allclose(hx.numpy(), ht.numpy(), rtol=1e-12, atol=1e-12)


def test_cumprod_of_integers_is_int64_and_of_a_scalar(xb):
    x = xad.tensor([[1, 2], [3, 4]], dtype=xad.int32)
    assert x.cumprod(0).dtype == xad.int64 and x.cumprod(0).tolist() == [[1, 2], [3, 8]]
    assert xad.cumprod(xad.tensor(3.0)).item() == 3.0


TIES = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 2.0, 0.0], [-5.0, 4.0, -5.0, 4.0]])


@pytest.mark.parametrize("name", ["amax", "amin"])
@pytest.mark.parametrize("dim,keepdim", [((), False), (1, False), (0, True), ((0, 1), True)])
def test_amax_amin_split_ties_evenly(name, dim, keepdim, xb):
    _pair(TIES, lambda x: getattr(x, name)(dim, keepdim),
          lambda t: getattr(t, name)(dim, keepdim))
    _pair(TIES, lambda x: getattr(T, name)(x, dim=dim, keepdim=keepdim),
          lambda t: getattr(torch, name)(t, dim=dim, keepdim=keepdim))


MED = np.array([[4.0, 1.0, 3.0, 2.0, 7.0], [2.0, 2.0, 1.0, 1.0, 5.0],
                [NAN, 1.0, NAN, 0.0, 3.0], [3.0, 1.0, 3.0, 1.0, 2.0]])


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize("dim,keepdim", [(1, False), (1, True), (0, False), (-1, True)])
def test_median_values_and_indices(name, dim, keepdim, xb):
    a = MED if name == "nanmedian" or dim != 0 else MED[[0, 1, 3]]
    _pair(a, lambda x: tuple(getattr(x, name)(dim, keepdim)),
          lambda t: tuple(getattr(t, name)(dim, keepdim)), outputs=2)
    _pair(a, lambda x: tuple(getattr(T, name)(x, dim)),
          lambda t: tuple(getattr(torch, name)(t, dim)), outputs=2)


@pytest.mark.parametrize("a", [[3.0, 1.0, 3.0, 1.0, 2.0, 2.0], [[4.0, 1.0], [3.0, 2.0]],
                               [1.0, NAN, NAN, 2.0], [-np.inf, -np.inf, 2.0, -np.inf]])
@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_full_median_splits_its_gradient_among_equal_elements(a, name, xb):
    _pair(np.array(a), lambda x: getattr(x, name)(), lambda t: getattr(t, name)())


Q = np.array([[0.3, -1.2, 2.5, 0.9, 1.7, -0.4], [1.1, 0.2, NAN, -2.0, 0.6, 3.3],
              [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]])


@pytest.mark.parametrize("how", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantile_interpolations(how, name, xb):
    qs = [0.0, 0.1, 0.25, 0.5, 0.7, 1.0]
    combos = ((qs, 1, False), (0.5, None, True), (qs, 0, True), (0.3, 1, False))
    for q, dim, keepdim in combos:
        qt = q if isinstance(q, float) else torch.tensor(q, dtype=torch.float64)
        _pair(Q, lambda x, q=q, d=dim, k=keepdim: getattr(x, name)(q, d, k, interpolation=how),
              lambda t, q=qt, d=dim, k=keepdim: getattr(t, name)(q, d, k, interpolation=how))
    if xb.name == "jax":
        return
    _pair(Q, lambda x: getattr(T, name)(x, xad.tensor([0.2, 0.9], dtype=F64), dim=1),
          lambda t: getattr(torch, name)(t, torch.tensor([0.2, 0.9], dtype=torch.float64),
                                         dim=1))


def test_quantile_errors(xb):
    x = xad.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match=r"quantile: q values must be in \[0, 1\]"):
        x.quantile(1.5)
    with pytest.raises(ValueError, match="interpolation must be one of"):
        x.quantile(0.5, interpolation="cubic")
    with pytest.raises(TypeError, match="quantile: needs a floating tensor"):
        xad.tensor([1, 2]).quantile(0.5)


MODE = np.array([[1.0, 2.0, 2.0, 3.0], [2.0, 2.0, 1.0, 1.0], [3.0, 1.0, 3.0, 1.0],
                 [1.0, 5.0, 4.0, 0.5]])


@pytest.mark.parametrize("dim,keepdim", [(-1, False), (1, True), (0, False)])
def test_mode_values_and_indices(dim, keepdim, xb):
    _pair(MODE, lambda x: tuple(x.mode(dim, keepdim)), lambda t: tuple(t.mode(dim, keepdim)),
          outputs=2)
    _pair(MODE, lambda x: tuple(T.mode(x, dim)), lambda t: tuple(torch.mode(t, dim)), outputs=2)


NANS = np.array([[1.0, NAN, 2.0], [NAN, NAN, NAN], [0.5, -1.0, 4.0]])


@pytest.mark.parametrize("name", ["nansum", "nanmean"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), (0, True), ((0, 1), False)])
def test_nansum_nanmean(name, dim, keepdim, xb):
    _pair(NANS, lambda x: getattr(x, name)(dim, keepdim), lambda t: getattr(t, name)(dim, keepdim))
    _pair(NANS, lambda x: getattr(T, name)(x, dim=dim), lambda t: getattr(torch, name)(t, dim=dim))


def test_nansum_of_integers_and_nanmean_refuses_them(xb):
    assert xad.tensor([1, 2], dtype=xad.int32).nansum().dtype == xad.int64
    with pytest.raises(TypeError, match="nanmean: needs a floating tensor"):
        xad.tensor([1, 2]).nanmean()


@pytest.mark.parametrize("m,n,k,driver", [(5, 3, 2, "gelsd"), (3, 5, 2, "gelsy"),
                                          (4, 4, 1, "gels"), (6, 2, 0, "gelsd"),
                                          (5, 2, 1, "gels"), (5, 3, 1, "gelsy")])
def test_lstsq_full_rank_as_torch(m, n, k, driver, xb):
    rng = np.random.default_rng(m * 10 + n)
    a = rng.standard_normal((m, n))
    b = rng.standard_normal((m, k) if k else (m,))
    bx = xad.tensor(b, dtype=F64, requires_grad=True)
    bt = torch.tensor(b, requires_grad=True)

    def fx(x):
        r = T.linalg.lstsq(x, bx, driver=driver)
        return (r.solution, r.residuals, r.rank, r.singular_values)

    def ft(t):
        r = torch.linalg.lstsq(t, bt, driver=driver)
        return (r.solution, r.residuals, r.rank, r.singular_values)

    _pair(a, fx, ft, outputs=4)
    np.testing.assert_allclose(bx.grad.numpy(), bt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_lstsq_batched_and_numpy_default(xb):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 6, 3)), rng.standard_normal((2, 6, 2))
    r = xad.linalg.lstsq(xad.tensor(a, dtype=F64), xad.tensor(b, dtype=F64))
    for i in range(2):
        want = np.linalg.lstsq(a[i], b[i], rcond=None)
        np.testing.assert_allclose(r.solution.numpy()[i], want[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(r.residuals.numpy()[i], want[1], rtol=1e-10)
        np.testing.assert_allclose(r.singular_values.numpy()[i], want[3], rtol=1e-10)
        assert r.rank.tolist()[i] == want[2]


def test_lstsq_under_as_torch_defaults_to_torchs_cpu_driver(xb):
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    got = T.linalg.lstsq(xad.tensor(a, dtype=F64), xad.tensor(b, dtype=F64))
    want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-12)
        assert tuple(g.shape) == tuple(w.shape)
