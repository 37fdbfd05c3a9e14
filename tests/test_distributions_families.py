"""The ``torch.distributions`` families beyond the first ones (Exponential, Laplace, Cauchy,
StudentT, Chi2, FisherSnedecor, Poisson, Binomial, Geometric, NegativeBinomial,
Multinomial, OneHotCategorical(StraightThrough), ContinuousBernoulli, VonMises,
GeneralizedPareto, LowRankMultivariateNormal, MixtureSameFamily) and their KL pairs,
under ``xad.as_torch`` against PyTorch in float64.

Each case draws parameters (by ``probs`` and by ``logits`` where PyTorch has both; Python
numbers and tensors) and values on a grid with the support's edges (0, boundaries, large
values); it compares ``log_prob``/``cdf``/``icdf``/``entropy``/``mean``/``mode``/
``variance``/``stddev``/``enumerate_support`` and the parameters' gradients of all of
them; ``rsample``'s gradients (PyTorch given xad's noise, or the implicit derivative
``-dF/dtheta / f`` for quantile samplers); sample moments (seeded, loose); shapes; errors.
``XAD_FUZZ_N`` sets the cases per family (default 3 on NumPy, 1 elsewhere);
``XAD_FUZZ_SEED`` the first seed.
"""

from __future__ import annotations

import contextlib
import math
import os
from unittest import mock

import numpy as np
import pytest

import xad
from xad import as_torch
from xad.distributions import gamma as xgamma

torch = pytest.importorskip("torch")
from test_distributions_torch import _GivenGamma  # noqa: E402  (PyTorch's gradient, given draws)

TD = torch.distributions
T = as_torch.namespace()["torch"]
N = int(os.environ.get("XAD_FUZZ_N", "0")) or None
SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return t.detach().numpy() if isinstance(t, xad.Tensor) else np.asarray(t)


def _pos(g, shape, lo=0.3, hi=3.0):
    return g.uniform(lo, hi, shape)


def _binary(g, shape, name="probs"):
    """``probs`` (some 0 and 1 when ``name`` says so) or ``logits``."""
    if g.random() < 0.5:
        return {"logits": 2 * g.standard_normal(shape)}
    return {"probs": g.uniform(0.05, 0.95, shape)}


def _simplex(g, shape):
    if g.random() < 0.5:
        return {"logits": 2 * g.standard_normal(shape)}
    p = g.uniform(0.0, 1.0, shape)
    p = np.where(g.random(shape) < 0.2, 0.0, p)
    p[..., 0] += 0.1
    return {"probs": p}


# family -> (params(g, batch), values(g, params, shape), quantities)
LOC_SCALE = ("log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance", "stddev")


def _real_values(g, p, shape, edges):
    v = 3 * g.standard_normal(shape)
    if not edges:
        return v
    loc = np.broadcast_to(p["loc"], shape)
    v = np.where(g.random(shape) < 0.2, loc, v)  # the kink of Laplace
    return np.where(g.random(shape) < 0.1, 1e6, v)


def _half_line(g, p, shape, edges):
    v = g.uniform(0.05, 4.0, shape)
    if not edges:
        return v
    v = np.where(g.random(shape) < 0.2, 0.0, v)
    return np.where(g.random(shape) < 0.1, 1e4, v)


def _counts(g, p, shape, edges, high=12):
    v = g.integers(0, high, shape).astype(np.float64)
    return np.where(g.random(shape) < 0.1, 1e4, v) if edges else v


def _gpd_params(g, b):
    c = g.uniform(-0.4, 0.8, b)
    c = np.where(g.random(b) < 0.3, 0.0, c)
    return {"loc": g.standard_normal(b), "scale": _pos(g, b), "concentration": c}


def _gpd_values(g, p, shape, edges):
    loc, scale, c = np.broadcast_arrays(p["loc"], p["scale"], p["concentration"])
    top = np.where(c < 0, -scale / np.where(c < 0, c, -1.0), 5 * scale)
    v = loc + g.uniform(0.05, 0.95, shape) * top
    return np.where(g.random(shape) < 0.2, loc, v) if edges else v


def _binomial_params(g, b):
    out = _binary(g, b)
    out["total_count"] = 8 if g.random() < 0.5 else g.integers(1, 30, b).astype(np.float64)
    return out


def _multinomial_values(g, p, shape, edges):
    n, k = p["total_count"], shape[-1]
    picks = g.integers(0, k, shape[:-1] + (n,))
    return (picks[..., None] == np.arange(k)).sum(-2).astype(np.float64)


def _one_hot_values(g, p, shape, edges):
    return np.eye(shape[-1])[g.integers(0, shape[-1], shape[:-1])]


def _cb_params(g, b):
    if g.random() < 0.4:
        return {"logits": 3 * g.standard_normal(b)}
    p = g.uniform(0.02, 0.98, b)
    return {"probs": np.where(g.random(b) < 0.4, g.choice([0.4995, 0.5, 0.5008]), p)}


def _lowrank_params(g, b):
    n, m = int(g.integers(1, 4)), int(g.integers(1, 3))
    return {"loc": g.standard_normal(b + (n,)), "cov_factor": g.standard_normal(b + (n, m)),
            "cov_diag": _pos(g, b + (n,))}


FAMILIES = {
    "Exponential": (lambda g, b: {"rate": _pos(g, b)}, _half_line, LOC_SCALE),
    "Laplace": (lambda g, b: {"loc": g.standard_normal(b), "scale": _pos(g, b)},
                _real_values, LOC_SCALE),
    "Cauchy": (lambda g, b: {"loc": g.standard_normal(b), "scale": _pos(g, b)},
               _real_values, LOC_SCALE),
    "StudentT": (lambda g, b: {"df": _pos(g, b, 0.5, 5.0), "loc": g.standard_normal(b),
                               "scale": _pos(g, b)}, _real_values,
                 ("log_prob", "entropy", "mean", "mode", "variance")),
    "Chi2": (lambda g, b: {"df": np.where(g.random(b) < 0.3, 2.0, _pos(g, b, 0.5, 6.0))},
             _half_line, ("log_prob", "entropy", "mean", "mode",
                                                      "variance")),
    "FisherSnedecor": (lambda g, b: {"df1": _pos(g, b, 0.5, 8.0), "df2": _pos(g, b, 0.5, 8.0)},
                       lambda g, p, s, e: g.uniform(0.05, 5.0, s),
                       ("log_prob", "mean", "mode", "variance")),
    "Poisson": (lambda g, b: {"rate": np.where(g.random(b) < 0.2, 0.0, _pos(g, b, 0.3, 20.0))},
                _counts, ("log_prob", "mean", "mode", "variance")),
    "Binomial": (_binomial_params, lambda g, p, s, e: np.minimum(
        _counts(g, p, s, False, 9), np.broadcast_to(p["total_count"], s)),
        ("log_prob", "mean", "mode", "variance", "probs", "logits")),
    "Geometric": (lambda g, b: _binary(g, b), _counts,
                  ("log_prob", "entropy", "mean", "mode", "variance", "probs", "logits")),
    "NegativeBinomial": (lambda g, b: {**_binary(g, b), "total_count": _pos(g, b, 0.5, 6.0)},
                         _counts, ("log_prob", "mean", "mode", "variance")),
    "Multinomial": (lambda g, b: {**_simplex(g, b + (int(g.integers(2, 4)),)),
                                  "total_count": int(g.integers(1, 6))},
                    _multinomial_values, ("log_prob", "entropy", "mean", "variance")),
    "OneHotCategorical": (lambda g, b: _simplex(g, b + (int(g.integers(1, 4)),)),
                          _one_hot_values, ("log_prob", "entropy", "mean", "mode", "variance",
                                            "probs", "logits")),
    "ContinuousBernoulli": (_cb_params, lambda g, p, s, e: np.where(
        g.random(s) < 0.3 * e, g.integers(0, 2, s), g.uniform(0, 1, s)).astype(np.float64),
        ("log_prob", "cdf", "icdf", "entropy", "mean", "variance", "stddev", "probs",
         "logits")),
    "VonMises": (lambda g, b: {"loc": g.standard_normal(b), "concentration": np.where(
        g.random(b) < 0.3, g.uniform(1e-3, 0.1, b), _pos(g, b, 0.3, 30.0))},
        lambda g, p, s, e: 4 * g.standard_normal(s), ("log_prob", "mean", "mode", "variance")),
    "GeneralizedPareto": (_gpd_params, _gpd_values, LOC_SCALE),
    "LowRankMultivariateNormal": (_lowrank_params, lambda g, p, s, e: g.standard_normal(s),
                                  ("log_prob", "entropy", "mean", "mode", "variance",
                                   "covariance_matrix", "precision_matrix", "scale_tril")),
}
# VonMises: PyTorch's log I0 is a polynomial fit good to about 1e-7; xad's is exact.
# Multinomial's entropy: PyTorch takes lgamma(n + 1) of an integer tensor (float32)
RTOL = {"VonMises": 2e-7, "Multinomial entropy": 1e-7}
GRAD_RTOL = {"VonMises": 2e-5}


def _torch_fixes():
    """PyTorch's ``GeneralizedPareto`` compares a float64 concentration with a float32
    zero in ``isclose``, which raises: the zero in the concentration's dtype."""
    isclose = torch.isclose
    return mock.patch.object(torch, "isclose", lambda a, b, *r, **k: isclose(
        a, b.to(a.dtype), *r, **k))


def _make(lib, name, params, numbers=False):
    """The distribution in ``lib`` (torch or xad's torch), its tensor parameters."""
    D = TD if lib is torch else T.distributions
    ts = {k: v if isinstance(v, int) else float(v) if numbers and np.ndim(v) == 0 else
          lib.tensor(v, dtype=lib.float64, requires_grad=True) for k, v in params.items()}
    kw = {"validate_args": False} if lib is torch else {}
    return getattr(D, name)(**ts, **kw), {k: v for k, v in ts.items()
                                          if not isinstance(v, (int, float))}


def _quantities(lib, d, names, value, icdf_at):
    out = {}
    for q in names:
        if q in ("log_prob", "cdf"):
            out[q] = getattr(d, q)(lib.tensor(value))
        elif q == "icdf":
            out[q] = d.icdf(lib.tensor(icdf_at))
        elif q == "entropy":
            out[q] = d.entropy()
        elif q == "enumerate_support":
            out[q], out[q + "(False)"] = d.enumerate_support(), d.enumerate_support(False)
        else:
            out[q] = getattr(d, q)
    return out


def _compare(what, got, want, rtol=1e-9):
    g, w = _np(got), _np(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape}, PyTorch {w.shape}"
    finite = np.isfinite(w)
    atol = rtol * max(1.0, float(np.abs(w[finite]).max(initial=0.0)))
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=what)


@contextlib.contextmanager
def _float64_default():
    """Python-number parameters take the default dtype: float64 in both libraries."""
    before = torch.get_default_dtype(), xad.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    xad.set_default_dtype(xad.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(before[0])
        xad.set_default_dtype(before[1])


def _check_family(name, seed):
    with _float64_default():
        _check_family_at(name, seed)


def _check_family_at(name, seed):
    g = np.random.default_rng(seed)
    make_params, make_values, names = FAMILIES[name]
    batch = tuple(int(s) for s in g.integers(1, 4, int(g.integers(0, 3))))
    params = make_params(g, batch)
    numbers = not batch and g.random() < 0.5
    if isinstance(params.get("total_count"), int) and name == "Binomial" or (
            name == "OneHotCategorical"):
        names = names + ("enumerate_support",) + (("entropy",) if name == "Binomial" else ())
    what = f"{name} seed {seed} {({k: np.shape(v) for k, v in params.items()})}"
    td, tts = _make(torch, name, params, numbers)
    xd, xts = _make(T, name, params, numbers)
    assert (xd.batch_shape, xd.event_shape) == (tuple(td.batch_shape), tuple(td.event_shape))
    shape = (2,) + tuple(td.batch_shape) + tuple(td.event_shape)
    for edges in (True, False):  # the last: interior values only, for the gradients
        value = make_values(g, params, shape, edges)
        icdf_at = g.uniform(0.01, 0.99, shape)
        icdf_at = np.where(g.random(shape) < 0.2, 0.0, icdf_at) if edges else icdf_at
        with _torch_fixes():
            tq = _quantities(torch, td, names, value, icdf_at)
        xq = _quantities(T, xd, names, value, icdf_at)
        assert sorted(tq) == sorted(xq)
        for k in tq:
            rtol = RTOL.get(f"{name} {k}", RTOL.get(name, 1e-9))
            _compare(f"{what} {k} (edges={edges})", xq[k], tq[k], rtol)
    ws = {k: g.standard_normal(tuple(v.shape)) for k, v in tq.items()}
    for lib, q in ((torch, tq), (T, xq)):
        total = sum((lib.where(lib.isfinite(q[k]), q[k], 0.0) * lib.tensor(w)).sum()
                    for k, w in ws.items() if q[k].dtype == lib.float64)
        if tts:
            total.backward()
    for k in tts:
        want = tts[k].grad if tts[k].grad is not None else torch.zeros_like(tts[k])
        got = xts[k].grad if xts[k].grad is not None else T.zeros_like(xts[k])
        _compare(f"{what} d/d{k}", got, want, GRAD_RTOL.get(name, 1e-7))


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_agrees_with_pytorch(xb, name):
    n = N or (3 if xb.name == "numpy" else 1)
    for seed in range(SEED, SEED + n):
        _check_family(name, seed)


def _kl_params(g, name, b):
    """Parameters of ``name`` for KL pairs: event sizes fixed (3) so that pairs agree;
    Uniform's interval and Binomial's count sometimes outside the other's support."""
    k = 3
    if name == "Uniform":
        low = np.where(g.random(b) < 0.3, g.uniform(-1.0, 0.0, b), g.uniform(0.05, 0.4, b))
        return {"low": low, "high": low + np.where(g.random(b) < 0.3, 2.0, g.uniform(0.1, 0.5, b))}
    if name in ("Normal", "Laplace", "Cauchy", "Gumbel"):
        return {"loc": g.standard_normal(b), "scale": _pos(g, b)}
    if name == "Pareto":  # alpha sometimes <= 1 or 2 (infinite moments); scale by Uniform's
        alpha = np.where(g.random(b) < 0.4, g.choice([0.7, 1.0, 1.6, 2.0], b),
                         g.uniform(2.5, 5.0, b))
        return {"scale": g.uniform(0.02, 0.3, b), "alpha": alpha}
    if name in ("Gamma", "Beta"):
        keys = ("concentration", "rate") if name == "Gamma" else ("concentration1",
                                                                 "concentration0")
        return dict(zip(keys, (_pos(g, b), _pos(g, b))))
    if name == "Bernoulli":
        return _binary(g, b)
    if name == "Binomial":
        return {**_binary(g, b), "total_count": g.integers(5, 8, b).astype(np.float64)}
    if name == "OneHotCategorical":
        return _simplex(g, b + (k,))
    if name == "MultivariateNormal":
        m = np.tril(g.standard_normal((k, k)) * 0.4) + np.diag(g.uniform(1.0, 2.0, k))
        return {"loc": g.standard_normal(b + (k,)), "scale_tril": np.broadcast_to(
            m, b + (k, k)).copy()}
    if name == "LowRankMultivariateNormal":
        return {"loc": g.standard_normal(b + (k,)), "cov_factor": g.standard_normal(
            b + (k, 2)), "cov_diag": _pos(g, b + (k,))}
    return FAMILIES[name][0](g, b)


UNREGISTERED = (("ContinuousBernoulli", "Beta"), ("ContinuousBernoulli", "Gamma"))
KL_PAIRS = [(a, a) for a in ("Exponential", "Laplace", "Cauchy", "Poisson", "Geometric",
                             "Binomial", "OneHotCategorical", "ContinuousBernoulli",
                             "LowRankMultivariateNormal")] + [
    ("MultivariateNormal", "LowRankMultivariateNormal"),
    ("LowRankMultivariateNormal", "MultivariateNormal"), ("Bernoulli", "Poisson"),
    ("Poisson", "Bernoulli"), ("Poisson", "Binomial"), ("Normal", "Laplace"),
    ("Laplace", "Normal"), ("Chi2", "Exponential")] + [
    (p, q) for p in ("Beta", "ContinuousBernoulli", "Exponential", "Gamma", "Laplace",
                     "Normal", "Uniform")
    for q in ("Beta", "ContinuousBernoulli", "Exponential", "Gamma", "Normal", "Uniform")
    if p != q and (p, q) not in UNREGISTERED] + [
    (p, "Pareto") for p in ("Beta", "ContinuousBernoulli", "Exponential", "Gamma", "Gumbel",
                            "Laplace", "Normal", "Pareto", "Uniform")] + [
    (p, "Gumbel") for p in ("Exponential", "Gamma", "Normal", "Uniform")] + [
    (p, q) for p in ("Gumbel", "Pareto")
    for q in ("Beta", "ContinuousBernoulli", "Exponential", "Gamma", "Normal", "Uniform")]


def _check_kl(p_name, q_name, seed):
    g = np.random.default_rng(seed)
    batch = tuple(int(s) for s in g.integers(1, 4, int(g.integers(0, 3))))
    pp, qp = _kl_params(g, p_name, batch), _kl_params(g, q_name, batch)
    if p_name == q_name == "Binomial":  # PyTorch raises where q's count is larger
        pp["total_count"] = np.maximum(pp["total_count"], qp["total_count"])
    what = f"seed {seed}: KL {p_name} || {q_name}"
    out = {}
    for lib in (torch, T):
        (dp, tp), (dq, tq) = _make(lib, p_name, pp), _make(lib, q_name, qp)
        kl = (TD if lib is torch else T.distributions).kl_divergence(dp, dq)
        w = lib.tensor(np.random.default_rng(seed).standard_normal(tuple(kl.shape)))
        if kl.requires_grad:  # not the pairs that are inf everywhere
            lib.where(lib.isfinite(kl), kl * w, 0.0).sum().backward()
        out[lib] = kl, {**{"p." + k: v for k, v in tp.items()},
                        **{"q." + k: v for k, v in tq.items()}}
    _compare(what, out[T][0], out[torch][0])
    for k, t in out[torch][1].items():
        got = out[T][1][k].grad
        want = t.grad if t.grad is not None else torch.zeros_like(t)
        _compare(f"{what} d/d{k}", got if got is not None else T.zeros_like(out[T][1][k]),
                 want, 1e-7)


@pytest.mark.parametrize("pair", KL_PAIRS, ids="-".join)
def test_kl_agrees_with_pytorch(xb, pair):
    n = N or (3 if xb.name == "numpy" else 1)
    with _float64_default():
        for seed in range(SEED, SEED + n):
            _check_kl(*pair, seed)


def _xad_kl_pair(p: type, q: type):
    """The registered pair ``kl_divergence`` dispatches ``p``, ``q`` to (their names)."""
    return next(((a.__name__, b.__name__) for a in p.__mro__ for b in q.__mro__
                 if (a, b) in xad.distributions.kl._KL), None)


def test_every_pytorch_kl_pair_among_xads_families_is_registered():
    """Each pair in PyTorch's KL registry whose two families xad has dispatches in xad to
    that same pair: not to the TransformedDistribution pair, which raises unless the two
    transforms agree (HalfNormal's always do)."""
    from torch.distributions.kl import _KL_REGISTRY

    D = xad.distributions
    via_bases = {("HalfNormal", "HalfNormal"): ("TransformedDistribution",) * 2}
    missing = [(p.__name__, q.__name__) for p, q in _KL_REGISTRY
               if hasattr(D, p.__name__) and hasattr(D, q.__name__)
               and _xad_kl_pair(getattr(D, p.__name__), getattr(D, q.__name__))
               not in ((p.__name__, q.__name__), via_bases.get((p.__name__, q.__name__)))]
    assert not missing


def test_pairs_pytorch_does_not_register_raise(xb):
    """PyTorch has no KL from a ContinuousBernoulli to a Beta or a Gamma (its Bregman
    fallback raises across families): neither has xad."""
    for p_name, q_name in UNREGISTERED:
        g = np.random.default_rng(0)
        p = _make(T, p_name, _kl_params(g, p_name, ()))[0]
        q = _make(T, q_name, _kl_params(g, q_name, ()))[0]
        with pytest.raises(NotImplementedError, match=f"{p_name} || {q_name}"):
            T.distributions.kl_divergence(p, q)


@contextlib.contextmanager
def _recording():
    """xad's normal draws and Gamma(a, 1) draws, in the order they are made."""
    normals, gammas = [], []
    randn, standard_gamma = xad.factories.randn, xgamma.standard_gamma

    def record_randn(*a, **k):
        normals.append(randn(*a, **k))
        return normals[-1]

    def record_gamma(*a, **k):
        gammas.append(standard_gamma(*a, **k))
        return gammas[-1]

    with mock.patch.object(xad.factories, "randn", record_randn), mock.patch.object(
            xgamma, "standard_gamma", record_gamma):
        yield normals, gammas


def _given_noise(name, normals, gammas):
    """A patch making PyTorch's ``rsample`` of ``name`` draw xad's noise."""
    ts = [torch.tensor(_np(t)) for t in normals]
    gs = iter([torch.tensor(_np(t)) for t in gammas])
    gamma = mock.patch.object(TD.gamma, "_standard_gamma",
                              lambda a: _GivenGamma.apply(a, next(gs)))
    if name == "StudentT":
        normal = mock.patch.object(TD.studentT, "_standard_normal", lambda *a, **k: ts[0])
    elif name == "LowRankMultivariateNormal":
        normal = mock.patch.object(TD.lowrank_multivariate_normal, "_standard_normal",
                                   side_effect=ts)
    else:
        normal = contextlib.nullcontext()
    stack = contextlib.ExitStack()
    stack.enter_context(gamma)
    stack.enter_context(normal)
    return stack


QUANTILE_SAMPLERS = ("Exponential", "Laplace", "Cauchy", "GeneralizedPareto",
                     "ContinuousBernoulli")


def _implicit_grads(td, tts, x, w):
    """``sum w dx/dtheta`` of a quantile sampler: ``-dF(x)/dtheta / f(x)`` at ``x``."""
    xt = torch.tensor(x)
    with _torch_fixes():
        cdf, density = td.cdf(xt), td.log_prob(xt).exp().detach()
    (-(cdf * torch.tensor(w) / density).sum()).backward()
    return {k: v.grad for k, v in tts.items()}


@pytest.mark.parametrize("name", QUANTILE_SAMPLERS + (
    "StudentT", "Chi2", "FisherSnedecor", "LowRankMultivariateNormal"))
def test_rsample_gradients_match_pytorch(xb, name):
    """``rsample``'s parameter gradients in float64: PyTorch's ``rsample`` given xad's
    noise, or (quantile samplers) the implicit derivative through PyTorch's ``cdf``."""
    g = np.random.default_rng(3)
    params = FAMILIES[name][0](g, (2,))
    with _float64_default():
        td, tts = _make(torch, name, params)
        xd, xts = _make(T, name, params)
        with _recording() as (normals, gammas):
            x = xd.rsample((3,))
        w = g.standard_normal(tuple(x.shape))
        (x * T.tensor(w)).sum().backward()
        if name in QUANTILE_SAMPLERS:
            want = _implicit_grads(td, tts, _np(x), w)
        else:
            with _given_noise(name, normals, gammas):
                t = td.rsample((3,))
            _compare(f"{name} rsample", x, t, 1e-12)
            (t * torch.tensor(w)).sum().backward()
            want = {k: v.grad for k, v in tts.items()}
    for k, v in want.items():
        _compare(f"{name} rsample d/d{k}", xts[k].grad, v, 1e-8)


def test_straight_through_rsample_is_pytorchs(xb):
    """``OneHotCategoricalStraightThrough.rsample``: a one-hot draw whose gradient to the
    probabilities is the identity's (PyTorch's ``samples + probs - probs.detach()``)."""
    logits = np.array([[0.3, -1.0, 2.0], [0.0, 0.5, -0.5]])
    w = np.random.default_rng(0).standard_normal((4, 2, 3))
    xl = T.tensor(logits, dtype=T.float64, requires_grad=True)
    x = T.distributions.OneHotCategoricalStraightThrough(logits=xl).rsample((4,))
    (x * T.tensor(w)).sum().backward()
    tl = torch.tensor(logits, requires_grad=True)
    sample = torch.tensor(np.round(_np(x)))
    with mock.patch.object(TD.OneHotCategorical, "sample", lambda self, s=(): sample):
        t = TD.OneHotCategoricalStraightThrough(logits=tl).rsample((4,))
    (t * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(_np(x), _np(t), atol=1e-15)
    assert set(np.unique(_np(x))) <= {0.0, 1.0} and (_np(x).sum(-1) == 1).all()
    np.testing.assert_allclose(_np(xl.grad), _np(tl.grad), rtol=1e-12, atol=1e-15)


SAMPLES = 6000


def _ks(what, x, cdf):
    """The largest gap between the empirical CDF of ``x`` (on axis 0) and ``cdf`` at the
    draws: below 2 / sqrt(n) (the Kolmogorov-Smirnov bound at about 1e-3)."""
    x = np.sort(x, axis=0)
    n = x.shape[0]
    gap = np.abs(cdf(x) - (np.arange(1, n + 1) - 0.5).reshape((n,) + (1,) * (x.ndim - 1)) / n)
    assert gap.max() < 2 / math.sqrt(n), f"{what}: KS distance {gap.max():.4f}"


CONTINUOUS = {  # family -> parameters whose draws are checked against PyTorch's cdf
    "Exponential": {"rate": [0.5, 3.0]},
    "Laplace": {"loc": [0.0, 2.0], "scale": [1.0, 0.3]},
    "Cauchy": {"loc": [0.0, -1.0], "scale": [1.0, 3.0]},
    "GeneralizedPareto": {"loc": [0.0, 1.0], "scale": [1.0, 2.0], "concentration": [0.3, 0.0]},
    "ContinuousBernoulli": {"probs": [0.2, 0.5]},
    "Chi2": {"df": [0.7, 5.0]},
    "MixtureSameFamily": None,
}
DISCRETE = {  # family -> parameters whose draws' frequencies are checked against the pmf
    "Poisson": {"rate": [0.0, 0.7, 6.0, 25.0, 400.0]},
    "Binomial": {"total_count": [0.0, 12.0, 200.0, 200.0, 30.0], "probs": [0.5, 0.3, 0.03,
                                                                           0.3, 0.97]},
    "Geometric": {"probs": [0.2, 0.9, 1.0]},
    "NegativeBinomial": {"total_count": [2.0, 0.5], "probs": [0.3, 0.8]},
}


def _mixture(lib):
    D = TD if lib is torch else T.distributions
    mix = D.Categorical(probs=lib.tensor([[0.3, 0.7], [0.5, 0.5]], dtype=lib.float64))
    comp = D.Normal(lib.tensor([[-2.0, 1.0], [0.0, 0.5]], dtype=lib.float64),
                    lib.tensor([[0.5, 1.0], [1.0, 2.0]], dtype=lib.float64))
    return D.MixtureSameFamily(mix, comp)


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_draws_follow_the_cdf(xb, name):
    """Seeded draws (xad's generator) against PyTorch's CDF: a KS bound."""
    if name == "MixtureSameFamily":
        xd, td = _mixture(T), _mixture(torch)
    else:
        params = {k: np.array(v) for k, v in CONTINUOUS[name].items()}
        xd, td = _make(T, name, params)[0], _make(torch, name, params)[0]
    x = xd.sample((SAMPLES,))
    assert tuple(x.shape) == (SAMPLES,) + tuple(td.batch_shape)
    with _torch_fixes():
        _ks(name, _np(x), lambda v: _np(td.cdf(torch.tensor(v))))


@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_draws_follow_the_pmf(xb, name):
    """Seeded draws against PyTorch's probabilities of ``0 .. 3 * mean``: each frequency
    within five standard errors (and three draws), the mean within six."""
    params = {k: np.array(v) for k, v in DISCRETE[name].items()}
    xd, td = _make(T, name, params)[0], _make(torch, name, params)[0]
    x = _np(xd.sample((SAMPLES,)))
    assert x.shape == (SAMPLES,) + tuple(td.batch_shape) and (x == np.round(x)).all()
    top = int(3 * _np(td.mean).max()) + 3
    k = np.arange(top + 1.0).reshape(-1, 1)
    p = np.exp(_np(td.log_prob(torch.tensor(np.broadcast_to(k, (top + 1,) + x.shape[1:])))))
    freq = (x[None] == k[..., None]).mean(1)
    tol = 5 * np.sqrt(p * (1 - p) / SAMPLES) + 3 / SAMPLES  # a few counts in a rare cell
    bad = np.argwhere(np.abs(freq - p) > tol)
    assert not len(bad), [(tuple(b), freq[tuple(b)], p[tuple(b)]) for b in bad[:4]]
    np.testing.assert_allclose(x.mean(0), _np(td.mean), atol=6 * math.sqrt(
        _np(td.variance).max() / SAMPLES))


def test_draws_of_the_other_families_have_their_moments(xb):
    """StudentT, FisherSnedecor, VonMises (circular), LowRankMultivariateNormal, Multinomial,
    OneHotCategorical: seeded sample means and variances near the distribution's."""
    D = T.distributions
    f64 = lambda v: T.tensor(v, dtype=T.float64)  # noqa: E731
    cases = [D.StudentT(f64([6.0, 9.0]), f64([1.0, -1.0]), f64([2.0, 0.5])),
             D.FisherSnedecor(f64([5.0, 10.0]), f64([12.0, 20.0])),
             D.LowRankMultivariateNormal(f64([1.0, 0.0, -1.0]), f64([[1.0], [0.5], [-1.0]]),
                                         f64([0.5, 1.0, 2.0])),
             D.Multinomial(5, probs=f64([0.2, 0.3, 0.5])),
             D.OneHotCategorical(logits=f64([0.0, 1.0, -1.0]))]
    for d in cases:
        x = _np(d.sample((SAMPLES,)))
        mean, var = _np(d.mean), _np(d.variance)
        assert x.shape == (SAMPLES,) + d.batch_shape + d.event_shape
        np.testing.assert_allclose(x.mean(0), mean, atol=6 * np.sqrt(var.max() / SAMPLES))
        np.testing.assert_allclose(x.var(0), var, rtol=0.15, err_msg=type(d).__name__)
    vm = D.VonMises(f64([0.5, -3.0, 2.0]), f64([0.01, 2.0, 40.0]))
    x = _np(vm.sample((SAMPLES,)))
    assert ((x >= -math.pi) & (x < math.pi)).all()
    d = x - _np(vm.loc)
    np.testing.assert_allclose(np.cos(d).mean(0), 1 - _np(vm.variance), atol=0.03)
    np.testing.assert_allclose(np.sin(d).mean(0), 0.0, atol=0.03)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_sample_shapes(xb, name):
    """``sample``/``rsample`` of ``sample_shape + batch_shape + event_shape``, in the
    parameters' dtype, on their backend."""
    g = np.random.default_rng(1)
    params = FAMILIES[name][0](g, (2,))
    if name == "Binomial":
        params["total_count"] = 4
    d = _make(T, name, params)[0]
    draws = [d.sample((3, 1)), d.sample()] + ([d.rsample((3, 1))] if d.has_rsample else [])
    for x, s in zip(draws, [(3, 1), (), (3, 1)]):
        assert tuple(x.shape) == s + d.batch_shape + d.event_shape, name
        assert x.dtype == T.float64 and x.device == xad.get_backend().device


def _mixtures(lib, g):
    """A mixture of Normals (batch 2, 3 components) and one of MultivariateNormals."""
    D = TD if lib is torch else T.distributions
    t = lambda v: lib.tensor(v, dtype=lib.float64, requires_grad=True)  # noqa: E731
    logits, loc, scale, vec_loc, tril = (t(v) for v in g)
    normal = D.MixtureSameFamily(D.Categorical(logits=logits), D.Normal(loc, scale))
    mvn = D.MixtureSameFamily(D.Categorical(logits=logits),
                              D.MultivariateNormal(vec_loc, scale_tril=tril))
    return (normal, mvn), [logits, loc, scale, vec_loc, tril]


def test_mixture_same_family_agrees_with_pytorch(xb):
    """``log_prob``, ``cdf``, ``mean``, ``variance`` of mixtures of univariate and of
    multivariate components, and their gradients."""
    g = np.random.default_rng(0)
    tril = np.tril(g.standard_normal((2, 3, 2, 2)) * 0.3) + np.eye(2) * 1.5
    params = [g.standard_normal((2, 3)), g.standard_normal((2, 3)), g.uniform(0.5, 2, (2, 3)),
              g.standard_normal((2, 3, 2)), tril]
    value, vec = g.standard_normal((4, 2)), g.standard_normal((4, 2, 2))
    out = {}
    for lib in (torch, T):
        (normal, mvn), leaves = _mixtures(lib, params)
        q = {"log_prob": normal.log_prob(lib.tensor(value)), "cdf": normal.cdf(
            lib.tensor(value)), "mean": normal.mean, "variance": normal.variance,
            "mvn log_prob": mvn.log_prob(lib.tensor(vec)), "mvn mean": mvn.mean,
            "mvn variance": mvn.variance}
        sum((v * (i + 1)).sum() for i, v in enumerate(q.values())).backward()
        out[lib] = q, [x.grad for x in leaves]
        assert (tuple(normal.batch_shape), tuple(mvn.event_shape)) == ((2,), (2,))
    for k in out[torch][0]:
        _compare(k, out[T][0][k], out[torch][0][k])
    for i, (x, t) in enumerate(zip(out[T][1], out[torch][1], strict=True)):
        _compare(f"d/dparam{i}", x, t, 1e-7)


def test_mixture_with_a_shorter_mixture_batch_samples_each_member(xb):
    """A mixture of batch ``()`` over components of batch ``(B, K)``: each of the ``B``
    members picks its own component (before, the sample axis was taken for the batch axis:
    a wrong shape, or, where the sizes agreed, one choice shared by all members)."""
    D = T.distributions
    T.manual_seed(0)
    f64 = lambda v: T.tensor(v, dtype=T.float64)  # noqa: E731
    for b in (3, 2000):
        d = D.MixtureSameFamily(D.Categorical(probs=f64([0.5, 0.5])),
                                D.Normal(f64([[-100.0, 100.0]] * b), 1e-3))
        x = _np(d.sample((2000,)))
        assert x.shape == (2000, b)
        same = ((x[:, 0] > 0) == (x[:, 1] > 0)).mean()
        assert abs(same - 0.5) < 0.05 and abs((x > 0).mean() - 0.5) < 0.05
    vec = D.MixtureSameFamily(D.Categorical(logits=f64([0.0, 0.0])),
                              D.Independent(D.Normal(f64(np.zeros((4, 2, 3))), 1.0), 1))
    assert tuple(vec.sample((5,)).shape) == (5, 4, 3)


def test_enumerate_support_of_bernoulli_and_categorical(xb):
    """PyTorch's values, shapes and dtypes, with and without ``expand``."""
    for name, kw in (("Bernoulli", {"probs": np.array([[0.2, 0.5, 0.9]] * 2)}),
                     ("Categorical", {"logits": np.zeros((2, 3, 4))})):
        td = getattr(TD, name)(**{k: torch.tensor(v) for k, v in kw.items()})
        xd = getattr(T.distributions, name)(**{k: T.tensor(v, dtype=T.float64)
                                               for k, v in kw.items()})
        assert xd.has_enumerate_support is td.has_enumerate_support is True
        for expand in (True, False):
            want, got = td.enumerate_support(expand), xd.enumerate_support(expand)
            assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
            np.testing.assert_array_equal(_np(got), _np(want))


def test_bad_arguments_raise_clear_errors(xb):
    D = T.distributions
    f64 = lambda v: T.tensor(v, dtype=T.float64)  # noqa: E731
    for cls in (D.Binomial, D.Geometric, D.NegativeBinomial, D.ContinuousBernoulli):
        args = (3.0,) if cls in (D.Binomial, D.NegativeBinomial) else ()
        with pytest.raises(ValueError, match="exactly one of probs and logits"):
            cls(*args, probs=f64(0.5), logits=f64(0.0))
        with pytest.raises(ValueError, match="exactly one of probs and logits"):
            cls(*args)
    with pytest.raises(NotImplementedError, match="Python int"):
        D.Multinomial(2.5, probs=f64([0.5, 0.5]))
    with pytest.raises(NotImplementedError, match="pass total_count as a Python int"):
        D.Binomial(f64([3.0]), probs=f64([0.5])).enumerate_support()
    with pytest.raises(NotImplementedError, match="pass total_count as a Python int"):
        D.Binomial(f64([3.0]), probs=f64([0.5])).entropy()
    with pytest.raises(ValueError, match=r"cov_factor of \(\.\.\., 2, m\)"):
        D.LowRankMultivariateNormal(f64([0.0, 0.0]), f64([[1.0], [1.0], [1.0]]), f64([1.0, 1.0]))
    with pytest.raises(ValueError, match="incompatible batch shapes"):
        D.LowRankMultivariateNormal(f64([[0.0, 0.0]] * 3), f64([[[1.0], [1.0]]] * 2),
                                    f64([1.0, 1.0]))
    normal = D.Normal(f64([[0.0, 1.0]]), 1.0)
    with pytest.raises(ValueError, match="must be a Categorical"):
        D.MixtureSameFamily(normal, normal)
    with pytest.raises(ValueError, match="3 components but"):
        D.MixtureSameFamily(D.Categorical(logits=f64([0.0, 0.0, 0.0])), normal)
    lr = D.LowRankMultivariateNormal(f64([0.0, 0.0]), f64([[1.0], [1.0]]), f64([1.0, 1.0]))
    mvn = D.MultivariateNormal(f64([0.0, 0.0, 0.0]), scale_tril=T.eye(3, dtype=T.float64))
    with pytest.raises(ValueError, match="event shapes must agree"):
        D.kl_divergence(lr, mvn)


def test_binomial_kl_with_a_larger_count_in_q_is_nan(xb):
    """PyTorch raises where ``q.total_count > p.total_count`` (it reads the counts on the
    host); xad gives NaN there (docs/PORTING.md), inf where ``p``'s count is larger."""
    D = T.distributions
    f64 = lambda v: T.tensor(v, dtype=T.float64)  # noqa: E731
    p = D.Binomial(f64([3.0, 5.0, 4.0]), probs=f64([0.5, 0.5, 0.5]))
    q = D.Binomial(f64([4.0, 4.0, 4.0]), probs=f64([0.3, 0.3, 0.3]))
    got = _np(D.kl_divergence(p, q))
    assert math.isnan(got[0]) and got[1] == math.inf and np.isfinite(got[2])


def test_submodules_of_the_families_under_as_torch():
    """``from torch.distributions.studentT import StudentT`` and the like."""
    ns = as_torch.namespace()
    for sub, name in (("exponential", "Exponential"), ("studentT", "StudentT"),
                      ("lowrank_multivariate_normal", "LowRankMultivariateNormal"),
                      ("one_hot_categorical", "OneHotCategoricalStraightThrough"),
                      ("mixture_same_family", "MixtureSameFamily"),
                      ("generalized_pareto", "GeneralizedPareto")):
        assert getattr(ns[f"torch.distributions.{sub}"], name) is getattr(
            xad.distributions, name)
