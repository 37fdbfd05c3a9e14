"""TransformedDistribution and the families PyTorch defines through it, and
``Distribution.expand`` on every family, against torch.distributions in float64 on every
backend: log_prob/cdf/icdf/entropy/moments and their gradients, shapes, supports,
``rsample`` gradients (against PyTorch's with the same base noise, or finite differences)."""

from __future__ import annotations

import math
from unittest import mock

import numpy as np
import pytest
import torch
import torch.distributions as TD
from test_distributions import _both, _check_grads, _np
from test_distributions_families import _torch_fixes
from test_distributions_torch import _GivenGamma

import xad
import xad.distributions as XD

R = np.random.default_rng(2)


def _pos(*shape, lo=0.5, hi=3.0):
    return R.uniform(lo, hi, shape)


def _unit(*shape):
    return R.uniform(0.1, 0.9, shape)


def _simplex(*shape):
    x = R.uniform(0.1, 1.0, shape)
    return x / x.sum(-1, keepdims=True)


def _sac(D, m, s, lo):
    T = D.transforms
    return D.TransformedDistribution(D.Normal(m, s), [T.TanhTransform(),
                                                      T.AffineTransform(lo, 2.0)])


# name: (make(D, *params), params, value, probabilities for icdf or None)
FAMILIES = {
    "log_normal": (lambda D, m, s: D.LogNormal(m, s), [R.normal(size=3), _pos(3)], _pos(2, 3),
                   _unit(3)),
    "half_normal": (lambda D, s: D.HalfNormal(s), [_pos(3)], _pos(3), _unit(3)),
    "half_cauchy": (lambda D, s: D.HalfCauchy(s), [_pos(3)], _pos(3), _unit(3)),
    "gumbel": (lambda D, m, s: D.Gumbel(m, s), [R.normal(size=3), _pos(3)], R.normal(size=3),
               _unit(3)),
    "weibull": (lambda D, s, k: D.Weibull(s, k), [_pos(3), _pos(3)], _pos(3), _unit(3)),
    "pareto": (lambda D, s, a: D.Pareto(s, a), [_pos(3), _pos(3, lo=2.5, hi=4.0)],
               _pos(3, lo=3.0, hi=4.0), _unit(3)),
    "inverse_gamma": (lambda D, a, b: D.InverseGamma(a, b), [_pos(3, hi=4.0), _pos(3)],
                      _pos(3), None),
    "kumaraswamy": (lambda D, a, b: D.Kumaraswamy(a, b), [_pos(3), _pos(3)], _unit(3),
                    _unit(3)),
    "logistic_normal": (lambda D, m, s: D.LogisticNormal(m, s), [R.normal(size=(2, 3)),
                                                                 _pos(2, 3)],
                        _simplex(2, 4), None),
    "logistic_normal-0d": (lambda D, m, s: D.LogisticNormal(m, s), [R.normal(size=3),
                                                                    _pos(3)],
                           _simplex(4), None),
    "relaxed_bernoulli": (lambda D, t, p: D.RelaxedBernoulli(t, probs=p), [_pos(3), _unit(3)],
                          _unit(3), None),
    "relaxed_bernoulli-logits": (lambda D, t, lg: D.RelaxedBernoulli(t, logits=lg),
                                 [_pos(), R.normal(size=3)], _unit(2, 3), None),
    "relaxed_one_hot": (lambda D, t, lg: D.RelaxedOneHotCategorical(t, logits=lg),
                        [_pos(), R.normal(size=(2, 3))], _simplex(2, 3), None),
    "relaxed_one_hot-probs": (lambda D, t, p: D.RelaxedOneHotCategorical(t, probs=p),
                              [_pos(), _simplex(2, 3)], _simplex(2, 3), None),
    "sac-tanh-normal": (_sac, [R.normal(size=3), _pos(3), R.normal(size=3)],
                        R.uniform(-0.9, 0.9, 3), _unit(3)),
    "independent-exp": (lambda D, m, s: D.TransformedDistribution(
        D.Normal(m, s), D.transforms.IndependentTransform(D.transforms.ExpTransform(), 1)),
        [R.normal(size=(2, 3)), _pos(2, 3)], _pos(2, 3), None),
    "reshape": (lambda D, m, s: D.TransformedDistribution(
        D.Normal(m, s), D.transforms.ReshapeTransform((4,), (2, 2))),
        [R.normal(size=(3, 4)), _pos(3, 4)], R.normal(size=(3, 2, 2)), None),
}


def _close(xb, x, t, rtol=1e-10):
    assert tuple(x.shape) == tuple(t.shape), (x.shape, t.shape)
    np.testing.assert_allclose(_np(xb, x), t.detach().numpy(), rtol=rtol, atol=1e-12)


def _outputs(xd, td, value, probs):
    """(name, xad output, torch output) for each of log_prob/cdf/icdf/entropy/moments that
    torch defines for ``td``."""
    xv, tv = xad.tensor(value, dtype=xad.float64), torch.tensor(value, dtype=torch.float64)
    calls = {"log_prob": lambda d, v, p: d.log_prob(v), "cdf": lambda d, v, p: d.cdf(v),
             "entropy": lambda d, v, p: d.entropy(), "mean": lambda d, v, p: d.mean,
             "variance": lambda d, v, p: d.variance, "stddev": lambda d, v, p: d.stddev,
             "mode": lambda d, v, p: d.mode}
    if probs is not None:
        calls["icdf"] = lambda d, v, p: d.icdf(p)
    xp = None if probs is None else xad.tensor(probs, dtype=xad.float64)
    tp = None if probs is None else torch.tensor(probs, dtype=torch.float64)
    out = []
    for what, f in calls.items():
        if what == "mode" and isinstance(td, TD.Kumaraswamy):
            continue  # torch's is NaN wherever b > 1 (docs/PORTING.md)
        try:
            t = f(td, tv, tp)
        except NotImplementedError:
            continue
        out.append((what, f(xd, xv, xp), t))
    return out


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_values_and_gradients_match_torch(xb, name):
    make, params, value, probs = FAMILIES[name]
    xs, ts = _both(xb, params)
    xd, td = make(XD, *xs), make(TD, *ts)
    assert (xd.batch_shape, xd.event_shape) == (tuple(td.batch_shape), tuple(td.event_shape))
    x_total, t_total = 0, 0
    g = np.random.default_rng(0)  # the same weights whatever ran before (xdist's order)
    for what, x, t in _outputs(xd, td, value, probs):
        _close(xb, x, t)
        if what == "cdf" and name == "inverse_gamma":
            continue  # gammainc has no gradient in a (PyTorch's neither)
        w = g.normal(size=tuple(t.shape))
        x_total = x_total + (x * xad.tensor(w, dtype=xad.float64)).sum()
        t_total = t_total + (t * torch.tensor(w)).sum()
    x_total.backward()
    t_total.backward()
    for a, b in zip(xs, ts):
        _close(xb, a.grad, b.grad, rtol=1e-8)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_shapes_and_support(xb, name):
    make, params, value, _ = FAMILIES[name]
    xs, ts = _both(xb, params)
    xd, td = make(XD, *xs), make(TD, *ts)
    full = (2, 1) + tuple(td.batch_shape) + tuple(td.event_shape)
    assert xd.sample((2, 1)).shape == full and xd.rsample((2, 1)).shape == full
    assert xd.has_rsample == td.has_rsample
    assert type(xd.support).__name__ == type(td.support).__name__
    if not isinstance(td, TD.Pareto):  # (its support shows a tensor)
        assert repr(xd.support) == repr(td.support)
    assert bool(xad.all(xd.support.check(xd.sample((3,)))).item())
    assert sorted(xd.arg_constraints) == sorted(td.arg_constraints)
    for k, c in xd.arg_constraints.items():
        assert repr(c) == repr(td.arg_constraints[k])


def _same_normal_noise(xd, sample_shape):
    """The standard normal draws xad's Normal base used (same seed, same shape), for
    torch's ``_standard_normal``."""
    base = xd.base_dist
    while not isinstance(base, XD.Normal):
        base = base.base_dist
    xad.manual_seed(5)
    x = xd.rsample(sample_shape)
    xad.manual_seed(5)
    eps = xad.randn(sample_shape + base.batch_shape, dtype=xad.float64)
    return x, torch.tensor(xb_numpy(eps))


def xb_numpy(t):
    return xad.get_backend().to_numpy(t.detach()._array)


@pytest.mark.parametrize("name", ["log_normal", "half_normal", "logistic_normal",
                                  "sac-tanh-normal", "independent-exp", "reshape"])
def test_rsample_matches_torch_with_the_same_noise(xb, name):
    """Normal-based families: the draw and its gradients are torch's, given xad's noise."""
    make, params, *_ = FAMILIES[name]
    xs, ts = _both(xb, params)
    xd, td = make(XD, *xs), make(TD, *ts)
    x, eps = _same_normal_noise(xd, (2,))
    with mock.patch.object(TD.normal, "_standard_normal", lambda *a, **k: eps):
        t = td.rsample((2,))
    _close(xb, x, t)
    w = R.normal(size=tuple(t.shape))
    (x * xad.tensor(w, dtype=xad.float64)).sum().backward()
    (t * torch.tensor(w)).sum().backward()
    for a, b in zip(xs, ts):
        _close(xb, a.grad, b.grad, rtol=1e-8)


def test_inverse_gamma_rsample_matches_torch_with_the_same_noise(xb):
    """The Gamma draw under xad's, given to PyTorch's sampler: the same draw and gradients
    (the implicit Gamma gradient is PyTorch's approximation, so not a finite difference)."""
    make, params, *_ = FAMILIES["inverse_gamma"]
    xs, ts = _both(xb, params)
    xd, td = make(XD, *xs), make(TD, *ts)
    x = xd.rsample((2,))
    z = torch.tensor(_np(xb, xs[1]) / _np(xb, x))  # Gamma(a, 1) = rate / x
    with mock.patch.object(TD.gamma, "_standard_gamma", lambda a: _GivenGamma.apply(a, z)):
        t = td.rsample((2,))
    _close(xb, x, t)
    x.sum().backward()
    t.sum().backward()
    for a, b in zip(xs, ts):
        _close(xb, a.grad, b.grad, rtol=1e-8)


@pytest.mark.parametrize("name", ["half_cauchy", "gumbel", "weibull", "pareto",
                                  "kumaraswamy", "relaxed_bernoulli",
                                  "relaxed_one_hot"])
def test_rsample_gradient_is_the_finite_difference(xb, name):
    """Uniform-, exponential- and Gamma-based families: ``d rsample / d params`` with the
    noise held (the same seed) is the central difference of draws."""
    make, params, *_ = FAMILIES[name]
    xs, _ = _both(xb, params)
    w = xad.tensor(R.normal(size=(3,) + make(XD, *xs).batch_shape
                            + make(XD, *xs).event_shape), dtype=xad.float64)

    def draw(ps):
        xad.manual_seed(7)
        return (make(XD, *ps).rsample((3,)) * w).sum()

    draw(xs).backward()
    h = 1e-6
    for i, p in enumerate(params):
        fd = np.zeros(np.shape(p))
        for j in np.ndindex(fd.shape):
            up, down = np.array(p, dtype=float), np.array(p, dtype=float)
            up[j] += h
            down[j] -= h
            at = [xad.tensor(q, dtype=xad.float64) for q in params]
            at_down = list(at)
            at[i], at_down[i] = xad.tensor(up), xad.tensor(down)
            fd[j] = (draw(at).item() - draw(at_down).item()) / (2 * h)
        np.testing.assert_allclose(_np(xb, xs[i].grad), fd, rtol=1e-5, atol=1e-7)


def _kumaraswamy_density_peak(a, b):
    x = np.linspace(1e-4, 1 - 1e-4, 200001)
    return x[np.argmax(np.log(a * b) + (a - 1) * np.log(x) + (b - 1) * np.log1p(-x ** a))]


def test_kumaraswamy_mode_is_the_density_peak(xb):
    """PyTorch's formula gives NaN wherever ``concentration0 > 1`` (a wrong number); xad's is
    the density's maximum, NaN where there is none inside (a or b below 1)."""
    a, b = np.array([2.0, 3.0, 0.5, 1.5]), np.array([2.0, 1.5, 2.0, 0.8])
    mode = XD.Kumaraswamy(xad.tensor(a, dtype=xad.float64),
                          xad.tensor(b, dtype=xad.float64)).mode
    got = _np(xb, mode)
    for i in range(2):
        assert got[i] == pytest.approx(_kumaraswamy_density_peak(a[i], b[i]), abs=1e-4)
    assert np.isnan(got[2:]).all()
    assert math.isnan(TD.Kumaraswamy(torch.tensor(2.0), torch.tensor(2.0)).mode.item())


# family: (make(D, *params), params); each is expanded to (4,) + its batch shape, sizes 1
# made 5
EXPANDED = {
    "normal": (lambda D, m, s: D.Normal(m, s), [R.normal(size=(1, 3)), _pos(1, 3)]),
    "uniform": (lambda D, lo: D.Uniform(lo, lo + 2.0), [R.normal(size=3)]),
    "bernoulli": (lambda D, p: D.Bernoulli(probs=p), [_unit(3)]),
    "categorical": (lambda D, lg: D.Categorical(logits=lg), [R.normal(size=(1, 4))]),
    "gamma": (lambda D, a, r: D.Gamma(a, r), [_pos(3), _pos(3)]),
    "beta": (lambda D, a, b: D.Beta(a, b), [_pos(3), _pos(3)]),
    "dirichlet": (lambda D, a: D.Dirichlet(a), [_pos(1, 3)]),
    "mvn": (lambda D, m, c: D.MultivariateNormal(m, c), [R.normal(size=(1, 2)),
                                                         np.array([[2.0, 0.5], [0.5, 1.0]])]),
    "independent": (lambda D, m: D.Independent(D.Normal(m, 1.0), 1), [R.normal(size=(1, 3))]),
    **{k: v[:2] for k, v in FAMILIES.items()},
    "exponential": (lambda D, r: D.Exponential(r), [_pos(1, 3)]),
    "laplace": (lambda D, m, s: D.Laplace(m, s), [R.normal(size=(1, 3)), _pos(3)]),
    "cauchy": (lambda D, m, s: D.Cauchy(m, s), [R.normal(size=3), _pos(1, 3)]),
    "student_t": (lambda D, df, m, s: D.StudentT(df, m, s),
                  [_pos(1, 3, lo=2.5, hi=5.0), R.normal(size=3), _pos(3)]),
    "chi2": (lambda D, df: D.Chi2(df), [_pos(1, 3, lo=1.0)]),
    "fisher_snedecor": (lambda D, a, b: D.FisherSnedecor(a, b),
                        [_pos(3, lo=1.0, hi=6.0), _pos(1, 3, lo=5.0, hi=8.0)]),
    "poisson": (lambda D, r: D.Poisson(r), [_pos(1, 3)]),
    "binomial": (lambda D, p: D.Binomial(5, probs=p), [_unit(1, 3)]),
    "binomial_tensor_count": (lambda D, n, lg: D.Binomial(n, logits=lg),
                              [np.array([[2.0, 4.0, 7.0]]), R.normal(size=3)]),
    "geometric": (lambda D, lg: D.Geometric(logits=lg), [R.normal(size=(1, 3))]),
    "negative_binomial": (lambda D, n, p: D.NegativeBinomial(n, probs=p),
                          [_pos(1, 3), _unit(3)]),
    "multinomial": (lambda D, p: D.Multinomial(3, probs=p), [_simplex(1, 4)]),
    "one_hot_categorical": (lambda D, lg: D.OneHotCategorical(logits=lg),
                            [R.normal(size=(1, 4))]),
    "one_hot_straight_through": (lambda D, p: D.OneHotCategoricalStraightThrough(probs=p),
                                 [_simplex(3, 4)]),
    "continuous_bernoulli": (lambda D, p: D.ContinuousBernoulli(probs=p), [_unit(1, 3)]),
    "von_mises": (lambda D, m, k: D.VonMises(m, k), [R.normal(size=3), _pos(1, 3)]),
    "generalized_pareto": (lambda D, m, s, c: D.GeneralizedPareto(m, s, c),
                           [R.normal(size=(1, 3)), _pos(3), np.array([-0.3, 0.0, 0.4])]),
    "lowrank_mvn": (lambda D, m, w, d: D.LowRankMultivariateNormal(m, w, d),
                    [R.normal(size=(1, 2)), R.normal(size=(2, 1)), _pos(2)]),
    "mixture_same_family": (lambda D, lg, m, s: D.MixtureSameFamily(
        D.Categorical(logits=lg), D.Normal(m, s)), [R.normal(size=(1, 3)),
                                                    R.normal(size=(1, 3)), _pos(3)]),
    "mixture_of_vectors": (lambda D, lg, m: D.MixtureSameFamily(
        D.Categorical(logits=lg), D.Independent(D.Normal(m, 1.0), 1)),
        [R.normal(size=2), R.normal(size=(1, 2, 3))]),
}
# VonMises: PyTorch's log I0 is a polynomial fit good to about 1e-7; Multinomial's entropy:
# PyTorch takes lgamma of a float32 count (tests/test_distributions_families.py)
EXPAND_RTOL = {"von_mises": 2e-7, "multinomial": 1e-7}


@pytest.mark.parametrize("name", sorted(EXPANDED))
def test_expand_matches_torch(xb, name):
    """Batch and event shapes, samples, and ``log_prob`` at a draw of the expanded one."""
    make, params = EXPANDED[name]
    xs, ts = _both(xb, params)
    xd0, td0 = make(XD, *xs), make(TD, *ts)
    shape = (4,) + tuple(5 if s == 1 else s for s in td0.batch_shape)
    xd, td = xd0.expand(shape), td0.expand(shape)
    if name == "multinomial":  # PyTorch's expand drops _binomial (entropy: AttributeError)
        td._binomial = td0._binomial.expand(shape + td0.event_shape)
    assert (xd.batch_shape, xd.event_shape) == (tuple(td.batch_shape), tuple(td.event_shape))
    value = _np(xb, xd.sample((2,)))
    assert value.shape == (2,) + shape + tuple(td.event_shape)
    rtol = EXPAND_RTOL.get(name, 1e-10)
    with _torch_fixes():
        outputs = _outputs(xd, td, value, None)
    for _, x, t in outputs:
        _close(xb, x, t, rtol)
    assert xd0.batch_shape == tuple(td0.batch_shape)  # the original is unchanged


def _same_constraint(x, t):
    assert type(x).__name__ == type(t).__name__, (x, t)
    assert (x.event_dim, x.is_discrete) == (t.event_dim, t.is_discrete), (x, t)


@pytest.mark.parametrize("name", sorted(EXPANDED))
def test_support_and_arg_constraints_match_torch(xb, name):
    """``arg_constraints``' keys and kinds, ``support``'s kind and ``check`` on draws, on
    draws moved off the support, and on NaN; the base distribution's type."""
    make, params = EXPANDED[name]
    xs, ts = _both(xb, params)
    xd, td = make(XD, *xs), make(TD, *ts)
    assert sorted(xd.arg_constraints) == sorted(td.arg_constraints)
    for k, c in td.arg_constraints.items():
        _same_constraint(xd.arg_constraints[k], c)
    _same_constraint(xd.support, td.support)
    if hasattr(td, "base_dist"):  # HalfCauchy's is a Cauchy, Weibull's an Exponential, ...
        assert type(xd.base_dist).__name__ == type(td.base_dist).__name__
    draw = _np(xb, xd.sample((2,)))
    for value in (draw, draw + 0.5, -draw - 0.5, 2 * draw, np.full_like(draw, np.nan)):
        got = xd.support.check(xad.tensor(value, dtype=xad.float64))
        want = td.support.check(torch.tensor(value, dtype=torch.float64))
        np.testing.assert_array_equal(_np(xb, got), want.numpy(), err_msg=str(value))


def test_expand_errors():
    with pytest.raises(ValueError, match=r"Normal.expand: batch shape \(3,\) cannot be "
                                         r"expanded to \(2,\)"):
        XD.Normal(xad.zeros(3), 1.0).expand((2,))
    with pytest.raises(ValueError, match="cannot be expanded"):
        XD.Normal(xad.zeros(2, 3), 1.0).expand((3,))


def test_transformed_distribution_errors_and_unvalidated_values():
    """Structural errors are PyTorch's; values are not checked against the support (a host
    read; docs/PORTING.md), as PyTorch's ``validate_args=False``."""
    T = XD.transforms
    with pytest.raises(ValueError, match="needs at least 1 dimensions"):
        XD.TransformedDistribution(XD.Normal(0.0, 1.0), T.StickBreakingTransform())
    with pytest.raises(ValueError, match="a Transform or a list of Transforms"):
        XD.TransformedDistribution(XD.Normal(0.0, 1.0), [lambda x: x])
    d = XD.LogNormal(0.0, 1.0, validate_args=True)
    assert d.log_prob(xad.tensor(-1.0)).item() != d.log_prob(xad.tensor(-1.0)).item()  # NaN
    t = TD.LogNormal(0.0, 1.0, validate_args=False).log_prob(torch.tensor(-1.0))
    assert math.isnan(t.item())


KL_PAIRS = {  # name: (make(D, *params), params of p, params of q)
    "log_normal": (lambda D, m, s: D.LogNormal(m, s), [R.normal(size=3), _pos(3)],
                   [R.normal(size=3), _pos(3)]),
    "half_normal": (lambda D, s: D.HalfNormal(s), [_pos(3)], [_pos(3)]),
    "gumbel": (lambda D, m, s: D.Gumbel(m, s), [R.normal(size=3), _pos(3)],
               [R.normal(size=3), _pos(3)]),
    "logistic_normal": (lambda D, m, s: D.LogisticNormal(m, s), [R.normal(size=(2, 3)),
                                                                 _pos(2, 3)],
                        [R.normal(size=(2, 3)), _pos(2, 3)]),
}


@pytest.mark.parametrize("name", sorted(KL_PAIRS))
def test_kl_divergence_matches_torch(xb, name):
    make, pp, qp = KL_PAIRS[name]
    xs, ts = _both(xb, pp + qp)
    n = len(pp)
    x = XD.kl_divergence(make(XD, *xs[:n]), make(XD, *xs[n:]))
    t = TD.kl_divergence(make(TD, *ts[:n]), make(TD, *ts[n:]))
    _close(xb, x, t)
    _check_grads(xb, x, t, xs, ts)


def test_kl_of_different_transforms_is_refused():
    T = XD.transforms
    p = XD.TransformedDistribution(XD.Normal(0.0, 1.0), T.ExpTransform())
    q = XD.TransformedDistribution(XD.Normal(0.0, 1.0), T.SigmoidTransform())
    with pytest.raises(NotImplementedError, match="different transforms"):
        XD.kl_divergence(p, q)
