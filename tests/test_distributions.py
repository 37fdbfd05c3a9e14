"""xad.distributions against torch.distributions: log_prob, entropy, moments and KL values
and gradients in float64 on every backend; samplers checked by their moments."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributions as TD

import xad
import xad.distributions as XD

R = np.random.default_rng(0)


def _pos(*shape):
    return R.uniform(0.5, 3.0, shape)


def _simplex(*shape):
    x = R.uniform(0.1, 1.0, shape)
    return x / x.sum(-1, keepdims=True)


def _tril(k):
    a = np.tril(R.normal(size=(k, k)) * 0.3)
    return a + np.diag(R.uniform(0.8, 1.5, k))


# name: (make(D, *params), params, value); D is xad.distributions or torch.distributions
CASES = {
    "normal": (lambda D, m, s: D.Normal(m, s), [R.normal(size=3), _pos(3)], R.normal(size=3)),
    "uniform": (lambda D, lo, w: D.Uniform(lo, lo + w), [R.normal(size=3), _pos(3)], None),
    "categorical-logits": (lambda D, lg: D.Categorical(logits=lg), [R.normal(size=(2, 4))],
                           np.array([3, 0])),
    "categorical-probs": (lambda D, p: D.Categorical(probs=p), [_pos(2, 4)],
                          np.array([[1, 2], [0, 3]])),
    "bernoulli-probs": (lambda D, p: D.Bernoulli(probs=p), [_simplex(3, 2)[:, 0]],
                        np.array([1.0, 0.0, 1.0])),
    "bernoulli-logits": (lambda D, lg: D.Bernoulli(logits=lg), [R.normal(size=3)],
                         np.array([0.0, 1.0, 1.0])),
    "gamma": (lambda D, a, r: D.Gamma(a, r), [R.uniform(0.2, 3, 4), _pos(4)], _pos(4)),
    "beta": (lambda D, a, b: D.Beta(a, b), [R.uniform(0.2, 3, 3), _pos(3)], _simplex(3, 2)[:, 0]),
    "dirichlet": (lambda D, a: D.Dirichlet(a), [R.uniform(0.3, 3, (2, 3))], _simplex(2, 3)),
    "mvn-tril": (lambda D, m, lt: D.MultivariateNormal(m, scale_tril=lt),
                 [R.normal(size=(2, 3)), _tril(3)], R.normal(size=(4, 2, 3))),
    "independent": (lambda D, m, s: D.Independent(D.Normal(m, s), 1),
                    [R.normal(size=(3, 2)), _pos(3, 2)], R.normal(size=(3, 2))),
}


def _both(xb, params):
    xs = [xad.tensor(p, dtype=xad.float64, requires_grad=True) for p in params]
    ts = [torch.tensor(p, dtype=torch.float64, requires_grad=True) for p in params]
    return xs, ts


def _np(xb, t):
    return xb.to_numpy(t.detach()._array)


def _close(xb, x, t, rtol=1e-10):
    np.testing.assert_allclose(_np(xb, x), t.detach().numpy(), rtol=rtol, atol=1e-12)


def _check_grads(xb, x_out, t_out, xs, ts):
    x_out.sum().backward()
    t_out.sum().backward()
    for x, t in zip(xs, ts):
        _close(xb, x.grad, t.grad, rtol=1e-8)


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_prob_entropy_moments_match_torch(xb, name):
    make, params, value = CASES[name]
    xs, ts = _both(xb, params)
    xd, td = make(XD, *xs), make(TD, *ts)
    assert (xd.batch_shape, xd.event_shape) == (tuple(td.batch_shape), tuple(td.event_shape))
    if value is None:  # Uniform: a point inside
        value = params[0] + 0.5 * params[1]
    vt = torch.tensor(value)
    vx = xad.tensor(value)
    _close(xb, xd.log_prob(vx), td.log_prob(vt))
    _close(xb, xd.entropy(), td.entropy())
    if not name.startswith("categorical"):
        _close(xb, xd.mean, td.mean)
        _close(xb, xd.variance, td.variance)
    _check_grads(xb, xd.log_prob(vx).sum() + xd.entropy().sum(),
                 td.log_prob(vt).sum() + td.entropy().sum(), xs, ts)


KL_CASES = {  # name: (make, p's parameters, q's parameters)
    "normal": (lambda D, m, s: D.Normal(m, s), [R.normal(size=3), _pos(3)],
               [R.normal(size=3), _pos(3)]),
    "categorical": (lambda D, lg: D.Categorical(logits=lg), [R.normal(size=(2, 4))],
                    [R.normal(size=(2, 4))]),
    "bernoulli": (lambda D, p: D.Bernoulli(probs=p), [_simplex(3, 2)[:, 0]],
                  [_simplex(3, 2)[:, 0]]),
    "beta": (lambda D, a, b: D.Beta(a, b), [_pos(3), _pos(3)], [_pos(3), _pos(3)]),
    "gamma": (lambda D, a, r: D.Gamma(a, r), [_pos(3), _pos(3)], [_pos(3), _pos(3)]),
    "dirichlet": (lambda D, a: D.Dirichlet(a), [_pos(2, 3)], [_pos(2, 3)]),
    "mvn": (lambda D, m, lt: D.MultivariateNormal(m, scale_tril=lt),
            [R.normal(size=(2, 3)), _tril(3)], [R.normal(size=3), _tril(3)]),
    "independent": (lambda D, m, s: D.Independent(D.Normal(m, s), 1),
                    [R.normal(size=(3, 2)), _pos(3, 2)], [R.normal(size=(3, 2)), _pos(3, 2)]),
}


@pytest.mark.parametrize("name", sorted(KL_CASES))
def test_kl_divergence_matches_torch(xb, name):
    make, pp, qp = KL_CASES[name]
    xs, ts = _both(xb, pp + qp)
    n = len(pp)
    xk = XD.kl_divergence(make(XD, *xs[:n]), make(XD, *xs[n:]))
    tk = TD.kl_divergence(make(TD, *ts[:n]), make(TD, *ts[n:]))
    _close(xb, xk, tk)
    _check_grads(xb, xk, tk, xs, ts)


def test_mvn_by_covariance_and_precision(xb):
    lt = _tril(3)
    cov = lt @ lt.T
    loc = R.normal(size=3)
    value = R.normal(size=(5, 3))
    ref = TD.MultivariateNormal(torch.tensor(loc), torch.tensor(cov)).log_prob(
        torch.tensor(value)).numpy()
    x64 = lambda a: xad.tensor(a, dtype=xad.float64)  # noqa: E731
    for kw in ({"covariance_matrix": x64(cov)}, {"precision_matrix": x64(np.linalg.inv(cov))}):
        d = XD.MultivariateNormal(x64(loc), **kw)
        np.testing.assert_allclose(_np(xb, d.log_prob(x64(value))), ref, rtol=1e-10)
        np.testing.assert_allclose(_np(xb, d.covariance_matrix), cov, rtol=1e-10, atol=1e-12)


def test_rsample_is_reparameterised(xb):
    loc = xad.tensor([0.5, -1.0], dtype=xad.float64, requires_grad=True)
    scale = xad.tensor([2.0, 0.5], dtype=xad.float64, requires_grad=True)
    x = XD.Normal(loc, scale).rsample((7,))
    assert x.shape == (7, 2)
    x.sum().backward()
    np.testing.assert_allclose(_np(xb, loc.grad), [7.0, 7.0])
    eps = (_np(xb, x) - _np(xb, loc)) / _np(xb, scale)
    np.testing.assert_allclose(_np(xb, scale.grad), eps.sum(0), rtol=1e-12)
    low = xad.tensor(1.0, dtype=xad.float64, requires_grad=True)
    u = XD.Uniform(low, 3.0).rsample((4,))
    u.sum().backward()  # d/dlow (low + v (high - low)) = 1 - v
    v = (_np(xb, u) - 1.0) / 2.0
    assert float(_np(xb, low.grad)) == pytest.approx(float((1 - v).sum()), rel=1e-12)
    assert not XD.Normal(loc, scale).sample().requires_grad


def test_gamma_rsample_gradient_is_torchs(xb):
    # every branch of the approximation, repeated to the shape of every Gamma draw in this
    # file, (N, 3): JAX compiles the sampler and this gradient once for all of them
    a = np.resize([0.1, 0.5, 1, 2, 5, 7.9, 8.5, 20, 100, 100, 100, 3, 3, 0.4, 12], (N, 3))
    x = np.resize([0.05, 0.3, 0.9, 2.5, 1, 12, 8.6, 25, 95, 60, 150, 0.79, 0.81, 2, 3], (N, 3))
    ref = torch._standard_gamma_grad(torch.tensor(a), torch.tensor(x)).numpy()
    got = XD.gamma.standard_gamma_grad(xad.tensor(a), xad.tensor(x))
    np.testing.assert_allclose(_np(xb, got), ref, rtol=1e-12)
    conc = xad.tensor([0.4, 3.0, 12.0], dtype=xad.float64, requires_grad=True)
    rate = xad.tensor([2.0, 1.0, 0.5], dtype=xad.float64, requires_grad=True)
    s = XD.Gamma(conc, rate).rsample((N,))
    s.sum().backward()
    z = torch.tensor(_np(xb, s) * [2.0, 1.0, 0.5])  # the standard Gamma draws
    dz = torch._standard_gamma_grad(torch.tensor([0.4, 3.0, 12.0], dtype=z.dtype).expand(N, 3),
                                    z).numpy()
    np.testing.assert_allclose(_np(xb, conc.grad), (dz / [2.0, 1.0, 0.5]).sum(0), rtol=1e-10)
    np.testing.assert_allclose(_np(xb, rate.grad), -(_np(xb, s) / [2.0, 1.0, 0.5]).sum(0),
                               rtol=1e-10)


@pytest.mark.parametrize("name", ["gamma", "beta", "dirichlet"])
def test_rsample_gradients_are_unbiased(xb, name):
    """The mean of d(sample)/d(parameter) over draws is the derivative of the mean."""
    xad.manual_seed(2)
    a = xad.tensor([0.5, 2.0, 6.0], dtype=xad.float64, requires_grad=True)
    b = np.array([1.5, 1.0, 3.0])
    if name == "gamma":
        d, want = XD.Gamma(a, 1.0), np.ones(3)
    elif name == "beta":
        d, want = XD.Beta(a, xad.tensor(b)), b / (np.array([0.5, 2, 6]) + b) ** 2
    else:
        d, want = XD.Dirichlet(a), None
    s = d.rsample((N,))
    if want is None:  # d E[x_0] / d a = (a0 - a_0) / a0^2, for a_0; -a_0 / a0^2 for the others
        s[:, 0].sum().backward()
        want = np.array([7.5, -0.5, -0.5]) / 8.5 ** 2
    else:
        s.sum().backward()
    np.testing.assert_allclose(_np(xb, a.grad) / N, want, rtol=0.1, atol=0.01)


N = 4000


def _moments(xb, d, mean, var, tol):
    s = _np(xb, d.sample((N,)))
    assert s.shape == (N,) + tuple(d.batch_shape) + tuple(d.event_shape)
    np.testing.assert_allclose(s.mean(0), mean, rtol=tol, atol=tol)
    np.testing.assert_allclose(s.var(0), var, rtol=3 * tol, atol=tol)
    return s


@pytest.mark.parametrize("name", ["normal", "uniform", "bernoulli", "gamma", "beta",
                                  "dirichlet", "mvn", "categorical"])
def test_samples_have_the_right_moments(xb, name):
    xad.manual_seed(1)
    t = lambda a: xad.tensor(np.asarray(a, dtype=np.float64))  # noqa: E731
    a = np.array([0.3, 1.0, 4.0])
    if name == "normal":
        _moments(xb, XD.Normal(t([1.0, -2.0]), t([0.5, 2.0])), [1, -2], [0.25, 4], 0.1)
    elif name == "uniform":
        _moments(xb, XD.Uniform(t([0.0, 2.0]), t([1.0, 5.0])), [0.5, 3.5], [1 / 12, 0.75], 0.05)
    elif name == "bernoulli":
        p = np.array([0.1, 0.5, 0.8])
        s = _moments(xb, XD.Bernoulli(t(p)), p, p * (1 - p), 0.05)
        assert set(np.unique(s)) <= {0.0, 1.0}
    elif name == "gamma":
        _moments(xb, XD.Gamma(t(a), t([2.0, 1.0, 0.5])), a / [2, 1, 0.5],
                 a / np.array([4, 1, 0.25]), 0.08)
    elif name == "beta":
        b = np.array([2.0, 1.0, 0.5])
        _moments(xb, XD.Beta(t(a), t(b)), a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1)), 0.05)
    elif name == "dirichlet":
        s = _moments(xb, XD.Dirichlet(t(a)), a / a.sum(),
                     a * (a.sum() - a) / (a.sum() ** 2 * (a.sum() + 1)), 0.05)
        np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-12)
    elif name == "mvn":
        lt = _tril(3)
        s = _moments(xb, XD.MultivariateNormal(t([1.0, 0.0, -1.0]), scale_tril=t(lt)),
                     [1, 0, -1], (lt ** 2).sum(1), 0.1)
        np.testing.assert_allclose(np.cov(s.T), lt @ lt.T, atol=0.15)
    else:
        p = np.array([[0.2, 0.3, 0.5], [0.7, 0.1, 0.2]])
        s = _np(xb, XD.Categorical(probs=t(p)).sample((N,)))
        assert s.shape == (N, 2)
        freq = np.stack([np.bincount(s[:, i].astype(int), minlength=3) / N for i in range(2)])
        np.testing.assert_allclose(freq, p, atol=0.04)


def test_errors_and_as_torch():
    with pytest.raises(ValueError, match="exactly one of probs and logits"):
        XD.Categorical()
    with pytest.raises(NotImplementedError, match="Normal || Bernoulli"):  # PyTorch has none
        XD.kl_divergence(XD.Normal(0.0, 1.0), XD.Bernoulli(probs=0.5))
    from xad import as_torch
    assert as_torch.namespace()["torch"].distributions.Normal is XD.Normal
    assert as_torch.namespace()["torch.distributions"].kl_divergence is XD.kl_divergence
