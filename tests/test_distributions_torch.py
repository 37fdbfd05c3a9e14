"""A differential fuzzer of ``torch.distributions`` under ``xad.as_torch`` against PyTorch.

Each case draws a distribution xad has (Normal, Uniform, Bernoulli and Categorical by probs
or logits, Gamma, Beta, Dirichlet, MultivariateNormal by covariance, precision or
``scale_tril``, Independent over Normal or Gamma), a batch shape its parameters broadcast
to (some of them of size 1 or fewer dims), and values of ``sample_shape + batch_shape``
with the support's boundaries among them (0 and 1 of Beta, 0 of Gamma with concentration 1,
zero probabilities, Uniform's ``low``/``high``). Checked against PyTorch with
``validate_args=False`` (which computes where PyTorch's default raises; xad never checks
values, see docs/PORTING.md): shapes, ``log_prob`` (boundaries included), ``entropy``,
``mean``/``variance``/``stddev``, ``cdf``/``icdf``, MultivariateNormal's matrices, KL
divergence to a second draw of the same family (zero probabilities included), and in
float64 the gradients of all of them at interior values, plus ``rsample``'s gradients with
PyTorch given xad's noise (Normal, Uniform, MultivariateNormal, Gamma).

``XAD_FUZZ_N`` sets the cases (default 40 on NumPy, 6 on the other backends; the long run:
3000). A failure names its seed: replay it with ``XAD_FUZZ_SEED=<seed> XAD_FUZZ_N=1``.
"""

from __future__ import annotations

import math
import os
import random
from unittest import mock

import numpy as np
import pytest

import xad
from xad import as_torch

torch = pytest.importorskip("torch")
TD = torch.distributions
T = as_torch.namespace()["torch"]

N = int(os.environ.get("XAD_FUZZ_N", "0")) or None
SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))


def _sub(rng, batch):
    """A shape that broadcasts to ``batch``: some leading dims dropped, some sizes 1."""
    shape = list(batch)
    if batch and rng.random() < 0.4:
        shape = shape[rng.randint(0, len(batch)):]
    return tuple(1 if rng.random() < 0.25 else s for s in shape)


def _params(rng, g, name, batch):
    """Constructor keyword -> numpy array, for family ``name``."""
    pos = lambda shape, lo=0.3, hi=3.0: g.uniform(lo, hi, shape)  # noqa: E731
    if name in ("Normal", "Uniform"):
        a, b = g.standard_normal(_sub(rng, batch)), pos(_sub(rng, batch))
        return {"loc": a, "scale": b} if name == "Normal" else {"low": a, "high": a + b}
    if name in ("Gamma", "Beta"):
        a, b = pos(_sub(rng, batch)), pos(_sub(rng, batch))
        if rng.random() < 0.5:  # concentration 1: the log-density is finite at 0
            a = np.where(g.random(a.shape) < 0.5, 1.0, a)
        keys = ("concentration", "rate") if name == "Gamma" else ("concentration1",
                                                                 "concentration0")
        return dict(zip(keys, (a, b)))
    k = rng.randint(1, 4)
    if name == "Dirichlet":
        return {"concentration": pos(batch + (k,))}
    if name in ("Bernoulli", "Categorical"):
        shape = batch + ((k,) if name == "Categorical" else ())
        if rng.random() < 0.5:
            return {"logits": 2 * g.standard_normal(shape)}
        p = g.uniform(0.0, 1.0, shape)
        p = np.where(g.random(shape) < 0.25, np.round(p), p)  # zeros (and ones)
        if name == "Categorical":
            p[..., 0] += 0.1  # not all zero
        return {"probs": p}
    m = g.standard_normal((k, k)) * 0.4 + np.diag(g.uniform(1.0, 2.0, k))
    tril = np.tril(m)
    which = rng.choice(["covariance_matrix", "precision_matrix", "scale_tril"])
    mat = tril if which == "scale_tril" else tril @ tril.T
    mat = np.broadcast_to(mat, _sub(rng, batch) + (k, k)).copy()
    return {"loc": g.standard_normal(_sub(rng, batch) + (k,)), which: mat}


FAMILIES = ["Normal", "Uniform", "Bernoulli", "Categorical", "Gamma", "Beta", "Dirichlet",
            "MultivariateNormal", "Independent"]


def _values(g, name, params, shape, boundary):
    """Values of ``shape`` in the support (the boundaries too when ``boundary``)."""
    if name == "Normal" or name == "MultivariateNormal":
        return g.standard_normal(shape)
    if name == "Uniform":
        lo, hi = np.broadcast_arrays(params["low"], params["high"])
        v = lo + g.uniform(0.05, 0.95, lo.shape) * (hi - lo)
        v = np.broadcast_to(v, shape).copy()
        if boundary:
            pick = g.integers(0, 4, shape)
            v = np.select([pick == 0, pick == 1], [np.broadcast_to(lo, shape),
                                                    np.broadcast_to(hi, shape)], v)
        return v
    if name == "Bernoulli":
        return (g.random(shape) < 0.5).astype(np.float64)
    if name == "Categorical":
        k = (params.get("probs", params.get("logits"))).shape[-1]
        return g.integers(-1 if boundary else 0, k + 1 if boundary else k, shape)
    if name == "Gamma":
        v = g.uniform(0.1, 4.0, shape)
        return np.where(g.random(shape) < 0.3, 0.0, v) if boundary else v
    if name == "Beta":
        v = g.uniform(0.05, 0.95, shape)
        return np.where(g.random(shape) < 0.3, np.round(v), v) if boundary else v
    v = g.uniform(0.05, 1.0, shape)  # Dirichlet: a point of the simplex, a vertex at times
    if boundary:
        v = np.where(g.random(shape[:-1] + (1,)) < 0.3, np.eye(shape[-1])[0], v)
    return v / v.sum(-1, keepdims=True)


def _make(lib, name, params, inner=None, n=0):
    D = TD if lib is torch else T.distributions
    ts = {k: lib.tensor(v, dtype=lib.float64, requires_grad=True) for k, v in params.items()}
    kw = {"validate_args": False} if lib is torch else {}
    if name == "Independent":
        return D.Independent(getattr(D, inner)(**ts, **kw), n, **kw), ts
    return getattr(D, name)(**ts, **kw), ts


def _draw(rng: random.Random, g: np.random.Generator):
    name = rng.choice(FAMILIES)
    batch = tuple(rng.randint(1, 3) for _ in range(rng.randint(0, 2)))
    inner, n = None, 0
    if name == "Independent":
        inner = rng.choice(["Normal", "Gamma"])
        batch = batch or (2,)
        params = _params(rng, g, inner, batch)
        n = rng.randint(0, len(np.broadcast_shapes(*(v.shape for v in params.values()))))
        return name, inner, n, params, batch
    params = _params(rng, g, name, batch)
    return name, inner, n, params, batch


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return t.detach().numpy() if isinstance(t, xad.Tensor) else np.asarray(t)


def _quantities(lib, d, name, value):
    """Name -> tensor of the distribution's quantities at ``value``."""
    out = {"log_prob": d.log_prob(lib.tensor(value)), "entropy": d.entropy(),
           "perplexity": d.perplexity(), "mode": d.mode}
    if name != "Categorical":
        out.update(mean=d.mean, variance=d.variance, stddev=d.stddev)
    if name in ("Bernoulli", "Categorical"):
        out.update(probs=d.probs, logits=d.logits)
    if name in ("Normal", "Uniform"):
        out["cdf"] = d.cdf(lib.tensor(value))
    if name in ("Normal", "Uniform"):
        out["icdf"] = d.icdf(lib.tensor(np.clip(value * 0 + 0.3, 0, 1)))
    if name == "MultivariateNormal":
        out.update(scale_tril=d.scale_tril, covariance_matrix=d.covariance_matrix,
                   precision_matrix=d.precision_matrix)
    return out


def _compare(what, got, want, rtol=1e-9):
    g, w = _np(got), _np(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape}, PyTorch {w.shape}"
    atol = 1e-10 if rtol < 1e-8 else rtol * max(1.0, float(np.abs(w[np.isfinite(w)]).max(
        initial=0.0)))  # gradients: sums that cancel
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=what)


def _expected(td, fam, value, boundary):
    """PyTorch's quantities at ``value``; a Categorical value out of range has
    log-probability -inf in xad (PyTorch raises)."""
    if fam != "Categorical" or not boundary:
        return _quantities(torch, td, fam, value)
    k = td.logits.shape[-1]
    q = _quantities(torch, td, fam, np.clip(value, 0, k - 1))
    q["log_prob"] = torch.where(torch.tensor((value < 0) | (value >= k)), -math.inf,
                                q["log_prob"])
    return q


def _check(seed: int) -> None:
    rng, g = random.Random(seed), np.random.default_rng(seed)
    name, inner, n, params, batch = _draw(rng, g)
    what = f"seed {seed}: {name} {inner or ''} {n} {dict((k, v.shape) for k, v in params.items())}"
    td, tts = _make(torch, name, params, inner, n)
    xd, xts = _make(T, name, params, inner, n)
    assert (xd.batch_shape, xd.event_shape) == (tuple(td.batch_shape), tuple(td.event_shape))
    shape = tuple(rng.randint(1, 2) for _ in range(rng.randint(0, 1)))
    shape += tuple(td.batch_shape) + tuple(td.event_shape)
    fam = inner or name
    for boundary in (True, False):  # the last: interior values, for the gradients
        value = _values(g, fam, params, shape, boundary)
        tq = _expected(td, "" if inner else fam, value, boundary)
        xq = _quantities(T, xd, "" if inner else fam, value)
        for k in tq:
            _compare(f"{what} {k} (boundary={boundary})", xq[k], tq[k])
    ws = {k: g.standard_normal(tuple(v.shape)) for k, v in tq.items()}
    for lib, q in ((torch, tq), (T, xq)):
        sum((q[k] * lib.tensor(w)).sum() for k, w in ws.items()).backward()
    for k in tts:
        _compare(f"{what} d/d{k}", xts[k].grad, tts[k].grad, rtol=1e-7)


def _check_kl(seed: int) -> None:
    """``kl_divergence(p, q)`` for ``q`` a second draw of ``p``'s family and event shape
    (its batch broadcast against ``p``'s), values (inf included) and finite entries'
    gradients."""
    rng, g = random.Random(seed), np.random.default_rng(seed + 10 ** 6)
    name, inner, n, pp, batch = _draw(rng, g)
    def k(params):  # the event size of the families that draw one
        if name not in ("Categorical", "Dirichlet", "MultivariateNormal"):
            return None
        return next(params[c].shape[-1] for c in ("probs", "logits", "concentration", "loc")
                    if c in params)

    for _ in range(20):
        qp = _params(rng, g, inner or name, batch)
        if k(qp) == k(pp) and (name != "Independent" or len(
                np.broadcast_shapes(*(v.shape for v in qp.values()))) >= n):
            break
    else:
        return
    what = f"seed {seed}: KL {name} {inner or ''} {n}"
    out = {}
    for lib in (torch, T):
        dp, tp = _make(lib, name, pp, inner, n)
        dq, tq = _make(lib, name, qp, inner, n)
        kl = (TD if lib is torch else T.distributions).kl_divergence(dp, dq)
        finite = lib.tensor(np.isfinite(_np(kl)))
        w = lib.tensor(np.random.default_rng(seed).standard_normal(tuple(kl.shape)))
        lib.where(finite, kl * w, 0.0).sum().backward()
        out[lib] = kl, {**{"p." + k: v for k, v in tp.items()},
                        **{"q." + k: v for k, v in tq.items()}}
    _compare(what, out[T][0], out[torch][0])
    for k, t in out[torch][1].items():
        _compare(f"{what} d/d{k}", out[T][1][k].grad, t.grad, rtol=1e-7)


class _GivenGamma(torch.autograd.Function):
    """Gamma(a, 1) "draws" that are given, with PyTorch's gradient of ``_standard_gamma``."""

    @staticmethod
    def forward(ctx, a, z):
        ctx.save_for_backward(a, z)
        return z.clone()

    @staticmethod
    def backward(ctx, grad):
        a, z = ctx.saved_tensors
        return grad * torch._standard_gamma_grad(a, z), None


def _noise(fam, xd, x):
    """The noise under xad's draw ``x``, and a patch making PyTorch's sampler draw it."""
    p = {k: _np(v) for k, v in vars(xd).items() if isinstance(v, xad.Tensor)}
    if fam == "Normal":
        eps = torch.tensor((x - p["loc"]) / p["scale"])
        return mock.patch.object(TD.normal, "_standard_normal", lambda *a, **k: eps)
    if fam == "Uniform":
        u = torch.tensor((x - p["low"]) / (p["high"] - p["low"]))
        return mock.patch.object(torch, "rand", lambda *a, **k: u)
    if fam == "Gamma":
        z = torch.tensor(x * p["rate"])
        return mock.patch.object(TD.gamma, "_standard_gamma", lambda a: _GivenGamma.apply(a, z))
    lt = np.broadcast_to(p["_tril"], x.shape + x.shape[-1:])
    eps = torch.tensor(np.linalg.solve(lt, (x - p["loc"])[..., None])[..., 0])
    return mock.patch.object(TD.multivariate_normal, "_standard_normal", lambda *a, **k: eps)


def _check_rsample(seed: int) -> None:
    """xad's ``rsample`` and its gradients against PyTorch's given the same noise."""
    rng, g = random.Random(seed), np.random.default_rng(seed)
    name, inner, n, params, _ = _draw(rng, g)
    fam = inner or name
    if fam not in ("Normal", "Uniform", "Gamma", "MultivariateNormal"):
        return
    what = f"seed {seed}: {name} {inner or ''} rsample"
    sample_shape = tuple(rng.randint(1, 3) for _ in range(rng.randint(0, 2)))
    td, tts = _make(torch, name, params, inner, n)
    xd, xts = _make(T, name, params, inner, n)
    x = xd.rsample(sample_shape)
    w = g.standard_normal(x.shape)
    with _noise(fam, getattr(xd, "base_dist", xd), _np(x)):
        t = td.rsample(sample_shape)
    _compare(what, x, t, rtol=1e-12)
    (x * T.tensor(w)).sum().backward()
    (t * torch.tensor(w)).sum().backward()
    for k in tts:
        _compare(f"{what} d/d{k}", xts[k].grad, tts[k].grad, rtol=1e-8)


def test_distributions_agree_with_pytorch(xb):
    n = N or (40 if xb.name == "numpy" else 6)
    for seed in range(SEED, SEED + n):
        _check(seed)
        _check_rsample(seed)
        _check_kl(seed)


def test_boundary_values_are_pytorchs(xb):
    """Values the fuzzer found wrong: ``0 log 0`` terms at the support's edge gave NaN
    (Gamma at 0 with concentration 1, Beta at 0 and 1, a Dirichlet vertex); an index out of
    range took another category's log-probability (``-1`` wrapped to the last); KL between
    Bernoullis where ``q`` puts no mass on an outcome of ``p`` was finite, not inf."""
    D = T.distributions
    f64 = lambda v: T.tensor(v, dtype=T.float64)  # noqa: E731
    got = D.Gamma(f64([1.0, 2.0]), 2.0).log_prob(f64([0.0, 0.0]))
    np.testing.assert_allclose(got.numpy(), [math.log(2.0), -math.inf], rtol=1e-14)
    got = D.Beta(f64([1.0, 2.0]), f64([1.0, 1.0])).log_prob(f64([0.0, 1.0]))
    np.testing.assert_allclose(got.numpy(), [0.0, math.log(2.0)], rtol=1e-14, atol=1e-14)
    got = D.Dirichlet(f64([[1.0, 2.0], [1.0, 1.0]])).log_prob(f64([[0.0, 1.0], [1.0, 0.0]]))
    np.testing.assert_allclose(got.numpy(), [math.log(2.0), 0.0], rtol=1e-13, atol=1e-13)
    got = D.Categorical(logits=f64([1.0, 2.0, 3.0])).log_prob(T.tensor([-1, 2, 3]))
    assert got.tolist()[0] == -math.inf and got.tolist()[2] == -math.inf
    p, q = f64([0.3, 0.0, 1.0, 0.5]), f64([0.0, 0.2, 1.0, 1.0])
    got = D.kl_divergence(D.Bernoulli(probs=p), D.Bernoulli(probs=q)).tolist()
    assert got[0] == got[3] == math.inf and got[2] == 0.0
    assert got[1] == pytest.approx(-math.log(0.8), rel=1e-12)


def test_gamma_log_prob_gradient_at_concentration_one(xb):
    """``d/da (a - 1) log x`` is ``log x`` at ``a = 1`` too (PyTorch's ``xlogy`` rule)."""
    a = T.tensor([1.0, 2.5], dtype=T.float64, requires_grad=True)
    T.distributions.Gamma(a, 2.0).log_prob(T.tensor([0.5, 0.7], dtype=T.float64)).sum(
    ).backward()
    ta = torch.tensor([1.0, 2.5], dtype=torch.float64, requires_grad=True)
    TD.Gamma(ta, 2.0).log_prob(torch.tensor([0.5, 0.7], dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-12)


def test_log_prob_at_infinity_is_pytorchs(xb):
    """A Gamma's ``log_prob`` at ``inf`` with concentration 1 is ``-inf``: its ``0 log inf``
    term is 0 (PyTorch's ``xlogy``); it was ``0 * inf = NaN``."""
    got = T.distributions.Gamma(T.tensor([1.0, 2.0], dtype=T.float64), 2.0).log_prob(
        T.tensor([math.inf, math.inf], dtype=T.float64))
    want = TD.Gamma(torch.tensor([1.0, 2.0], dtype=torch.float64), 2.0).log_prob(
        torch.tensor([math.inf, math.inf], dtype=torch.float64))
    assert got.tolist()[0] == want.tolist()[0] == -math.inf


def test_normal_icdf_matches_torch(xb):
    """``Normal.icdf``: ``loc + scale * sqrt(2) * erfinv(2 p - 1)``, and its gradients."""
    args = ([0.3, -1.0, 2.0], [0.5, 1.0, 2.5], [0.1, 0.5, 0.975])
    xs = [T.tensor(a, dtype=T.float64, requires_grad=True) for a in args]
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args]
    got, want = T.distributions.Normal(*xs[:2]).icdf(xs[2]), TD.Normal(*ts[:2]).icdf(ts[2])
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-13)
    (got * T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).sum().backward()
    (want * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    for x, t in zip(xs, ts, strict=True):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_mvn_matrices_broadcast_and_are_returned_as_given(xb):
    """``scale_tril`` and the covariance are of ``batch_shape + (k, k)``; a covariance or
    precision given is returned as given (its gradient is not symmetrised: PyTorch's)."""
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    loc = np.zeros((3, 2))
    for kw in ("covariance_matrix", "precision_matrix"):
        x = T.tensor(cov, dtype=T.float64, requires_grad=True)
        t = torch.tensor(cov, dtype=torch.float64, requires_grad=True)
        xd = T.distributions.MultivariateNormal(T.tensor(loc), **{kw: x})
        td = TD.MultivariateNormal(torch.tensor(loc), **{kw: t})
        for name in ("scale_tril", "covariance_matrix", "precision_matrix"):
            assert getattr(xd, name).shape == tuple(getattr(td, name).shape) == (3, 2, 2)
        w = np.array([[1.0, 2.0], [-1.0, 0.5]])
        (getattr(xd, kw) * T.tensor(w)).sum().backward()
        (getattr(td, kw) * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_values_are_not_validated():
    """PyTorch checks parameters and values against their support by default and raises;
    xad never does (a host read of device data): it computes, as PyTorch's
    ``validate_args=False`` (docs/PORTING.md)."""
    with pytest.raises(ValueError):
        TD.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        TD.Uniform(0.0, 1.0).log_prob(torch.tensor(2.0))
    D = T.distributions
    assert math.isnan(D.Normal(0.0, -1.0, validate_args=True).log_prob(T.tensor(0.0)).item())
    assert D.Uniform(0.0, 1.0).log_prob(T.tensor(2.0)).item() == -math.inf
    assert D.Bernoulli(probs=T.tensor(0.5)).log_prob(T.tensor(0.25)).item() == pytest.approx(
        TD.Bernoulli(probs=torch.tensor(0.5), validate_args=False).log_prob(
            torch.tensor(0.25)).item())


def test_submodules_under_as_torch():
    """``from torch.distributions.normal import Normal``, ``torch.distributions.kl``."""
    ns = as_torch.namespace()
    assert ns["torch.distributions.normal"].Normal is xad.distributions.Normal
    assert ns["torch.distributions"].kl.kl_divergence is xad.distributions.kl_divergence
    assert ns["torch.distributions.multivariate_normal"].MultivariateNormal is (
        xad.distributions.MultivariateNormal)
