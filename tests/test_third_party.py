"""Third-party code written for the Python Array API standard, differentiated through xad.

SciPy's array-API-aware functions (``SCIPY_ARRAY_API=1``, set by tests/conftest.py before
anything imports SciPy), einops' ``einops.array_api`` and a Gaussian-process likelihood
written only against ``x.__array_namespace__()``: each takes xad tensors unchanged, on every
backend, in float64. Values match the same code on NumPy arrays; gradients match central
finite differences and ``jax.grad`` of the same code on JAX arrays (when JAX is installed).
docs/ARRAY_API.md ("Third-party array-API code") lists what runs and what does not, and why.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.cluster.vq
import scipy.integrate
import scipy.special
import scipy.stats
from test_examples import _load

import xad
from xad import autograd as ag

try:
    import jax
    import jax.numpy as jnp
    try:
        from jax import enable_x64  # scoped: the process-wide setting stays as it was
    except ImportError:  # older JAX
        from jax.experimental import enable_x64
except ImportError:  # the JAX comparisons are left out; finite differences still run
    jax = None
try:
    import einops.array_api as ea
except ImportError:  # the `arrayapi` extra installs it
    ea = None

nll = _load("array_api_generic").neg_log_marginal_likelihood  # the example's GP likelihood

_sp, _st = scipy.special, scipy.stats

# name: (function of one array, input shape); the same callable runs on NumPy, xad and JAX
SCIPY = {
    "special.softmax": (lambda x: _sp.softmax(x, axis=-1), (3, 5)),
    "special.log_softmax": (lambda x: _sp.log_softmax(x, axis=0), (3, 5)),
    "special.xlogy": (lambda x: _sp.xlogy(x, x + 1.0), (3, 5)),
    "special.rel_entr": (lambda x: _sp.rel_entr(x, 2.0 - 0.5 * x), (3, 5)),
    "stats.zscore": (lambda x: _st.zscore(x, axis=-1), (3, 5)),
    "stats.moment": (lambda x: _st.moment(x, order=3, axis=-1), (3, 5)),
    "stats.skew": (lambda x: _st.skew(x, axis=-1), (3, 5)),
    "stats.kurtosis": (lambda x: _st.kurtosis(x, axis=0), (6, 2)),
    "stats.gmean": (lambda x: _st.gmean(x, axis=-1), (3, 5)),
    "stats.hmean": (lambda x: _st.hmean(x, axis=-1), (3, 5)),
    "stats.pmean": (lambda x: _st.pmean(x, 2.5, axis=-1), (3, 5)),
    "stats.sem": (lambda x: _st.sem(x, axis=-1), (3, 5)),
    "stats.tvar": (lambda x: _st.tvar(x), (7,)),
    "stats.tstd": (lambda x: _st.tstd(x, ddof=0), (7,)),
    "stats.describe": (lambda x: _st.describe(x, axis=-1).variance, (3, 5)),
    "stats.differential_entropy": (lambda x: _st.differential_entropy(x, axis=-1), (2, 8)),
    "stats.ttest_1samp": (lambda x: _st.ttest_1samp(x, 1.0, axis=-1).statistic, (3, 5)),
    "stats.trim_mean": (lambda x: _st.trim_mean(x, 0.2, axis=-1), (3, 6)),
    "stats.circmean": (lambda x: _st.circmean(x, axis=-1), (3, 5)),
    "stats.circvar": (lambda x: _st.circvar(x, axis=-1), (3, 5)),
    "stats.circstd": (lambda x: _st.circstd(x, axis=-1), (3, 5)),
    "stats.quantile": (lambda x: _st.quantile(x, 0.3, axis=-1), (3, 5)),
    "stats.yeojohnson_llf": (lambda x: _st.yeojohnson_llf(0.5, x, axis=-1), (3, 5)),
    "stats.directional_stats": (lambda x: _st.directional_stats(x).mean_direction, (5, 3)),
    "cluster.vq.whiten": (lambda x: scipy.cluster.vq.whiten(x), (5, 3)),
    "integrate.cumulative_trapezoid": (
        lambda x: scipy.integrate.cumulative_trapezoid(x, dx=0.5, axis=-1), (3, 5)),
}
# the p-value beside the statistic comes from a SciPy ufunc on a NumPy copy: refused (below)
THROUGH_NUMPY_TOO = {"stats.ttest_1samp", "stats.pearsonr"}
# these change a result that its operation saved, in place (log_softmax: max's result where
# it is not finite; whiten: std's where it is 0): backward raises, naming the operation and
# the versions, as PyTorch's does for the same program (docs/PORTING.md, Views and storage)
CHANGES_A_SAVED_RESULT = {"special.log_softmax", "cluster.vq.whiten"}
# these pass xad.sum(dtype=) / astype(copy=)
SCIPY |= {
    "special.logsumexp": (lambda x: _sp.logsumexp(x, axis=-1), (3, 5)),
    "stats.tmean": (lambda x: _st.tmean(x), (7,)),
    "stats.variation": (lambda x: _st.variation(x, axis=-1), (3, 5)),
    "stats.pearsonr": (lambda x: _st.pearsonr(x[0], x[1]).statistic, (2, 6)),
    "integrate.trapezoid": (lambda x: scipy.integrate.trapezoid(x, axis=-1), (3, 5)),
}
# einops' array-API entry points (its top-level functions know only the libraries they list)
EINOPS = {
    "rearrange": (lambda x: ea.rearrange(x, "b h (w c) -> (b w) h c", c=2), (2, 3, 4)),
    "reduce_mean": (lambda x: ea.reduce(x, "b (h h2) w -> b h w", "mean", h2=2), (2, 4, 3)),
    "reduce_max": (lambda x: ea.reduce(x, "b h w -> b w", "max"), (2, 3, 4)),
    "reduce_min": (lambda x: ea.reduce(x, "b h w -> h", "min"), (2, 3, 4)),
    "reduce_prod": (lambda x: ea.reduce(x, "b h w -> h", "prod"), (2, 3, 4)),
    "reduce_sum": (lambda x: ea.reduce(x, "b h w -> w b", "sum"), (2, 3, 4)),
    "repeat": (lambda x: ea.repeat(x, "b h w -> (r b) h (w s)", r=2, s=3), (2, 3, 4)),
    "pack": (lambda x: ea.pack([x, x[:, :1] ** 2], "b * w")[0], (2, 3, 4)),
    "unpack": (lambda x: ea.unpack(x * x, [(2,), (1,)], "b * w")[0], (2, 3, 4)),
}
CASES = SCIPY | {f"einops.{k}": v for k, v in EINOPS.items()}
# compiled kernels (ufuncs, C/Fortran) that SciPy runs on a NumPy copy of the input
THROUGH_NUMPY = {
    "special.entr": lambda x: _sp.entr(x),
    "special.expit": lambda x: _sp.expit(x),
    "special.ndtr": lambda x: _sp.ndtr(x),
    "special.gammaln": lambda x: _sp.gammaln(x),
    "stats.entropy": lambda x: _st.entropy(x, axis=-1),
}


def _data(shape):
    """Positive inputs away from kinks (gmean, hmean, logs)."""
    return np.random.default_rng(0).uniform(0.5, 2.0, shape)


def _weights(shape):
    """Fixed weights making an output a scalar loss (a plain sum of softmax is constant)."""
    return np.random.default_rng(1).standard_normal(shape)


def _loss_np(f, a):
    y = np.asarray(f(a))
    return float(np.sum(y * _weights(y.shape)))


@functools.cache
def _finite_differences(name):
    f, shape = CASES[name]
    a = _data(shape)
    g, h = np.zeros_like(a), 1e-6
    for i in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[i] = h
        g[i] = (_loss_np(f, a + e) - _loss_np(f, a - e)) / (2 * h)
    return g


@functools.cache
def _jax_grad(name):
    f, shape = CASES[name]
    with enable_x64(True):
        def loss(x):
            y = f(x)
            return jnp.sum(y * jnp.asarray(_weights(y.shape)))
        return np.asarray(jax.grad(loss)(jnp.asarray(_data(shape))))


def _xad_value_and_grad(f, a):
    x = xad.tensor(a, requires_grad=True)
    y = f(x)
    assert isinstance(y, xad.Tensor) and y.requires_grad, type(y)
    (g,) = ag.grad((y * xad.tensor(_weights(y.shape))).sum(), x)
    return y.numpy(), g.numpy()


def test_scipy_reads_array_api_mode():
    from scipy._lib import _array_api
    assert _array_api.SCIPY_ARRAY_API, "SCIPY_ARRAY_API=1 must be set before SciPy is imported"


def _check(name):
    """Value against SciPy on NumPy; gradient against finite differences and JAX's."""
    f, shape = CASES[name]
    a = _data(shape)
    value, grad = _xad_value_and_grad(f, a)
    np.testing.assert_allclose(value, np.asarray(f(a)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad, _finite_differences(name), rtol=1e-6, atol=1e-7)
    if jax is not None:
        np.testing.assert_allclose(grad, _jax_grad(name), rtol=1e-10, atol=1e-12)


# leaving the graph through NumPy is refused: a tensor that requires grad (host backends) or
# an implicit copy to the host (device backends)
REFUSED = (TypeError, RuntimeError)
REFUSAL = "implicit conversion|requires grad"


def _run(xb, name):
    f, shape = CASES[name]
    if name in THROUGH_NUMPY_TOO:
        with pytest.raises(REFUSED, match=REFUSAL):
            f(xad.tensor(_data(shape), requires_grad=True))
        assert np.isfinite(np.asarray(f(xad.tensor(_data(shape)).numpy()))).all()
        return
    if name in CHANGES_A_SAVED_RESULT:
        with pytest.raises(RuntimeError, match="saved for backward, was changed by an in-place"):
            _xad_value_and_grad(f, _data(shape))
        return
    _check(name)


@pytest.mark.parametrize("name", sorted(SCIPY))
def test_scipy_function_on_xad_is_differentiable(xb, name):
    _run(xb, name)


@pytest.mark.parametrize("name", sorted(EINOPS))
def test_einops_on_xad_is_differentiable(xb, name):
    if ea is None:
        pytest.skip("einops is not installed (pip install -e .[arrayapi])")
    _check(f"einops.{name}")


@pytest.mark.parametrize("name", sorted(THROUGH_NUMPY))
def test_scipy_function_through_numpy_is_refused(xb, name):
    """Not a wrong (or silently missing) gradient: SciPy's ``np.asarray`` of a tensor that
    requires grad raises, as PyTorch's does; ``.detach()`` first runs it outside the graph."""
    x = xad.tensor(_data((2, 3)), requires_grad=True)
    with pytest.raises(REFUSED, match=REFUSAL):
        THROUGH_NUMPY[name](x)
    if xb.is_host:
        y = THROUGH_NUMPY[name](x.detach())
        assert not (isinstance(y, xad.Tensor) and y.requires_grad)


def test_scipy_lmoment_refuses_its_in_place_update(xb):
    """``lmoment`` divides rows of an array in place by another row of it (array-api-extra's
    ``at(...).divide``): the saved divisor changed, so backward raises, as PyTorch does. On a
    device backend it stops earlier: ``binom`` of its weights runs on a NumPy copy."""
    x = xad.tensor(_data((2, 6)), requires_grad=True)
    if not xb.is_host:
        with pytest.raises(TypeError, match="implicit conversion"):
            _st.lmoment(x, axis=-1)
        return
    y = _st.lmoment(x, axis=-1)
    with pytest.raises(RuntimeError, match="in-place"):
        y.sum().backward()


def _gp_problem():
    """12 noisy points and log hyperparameters away from the optimum."""
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(-2.0, 2.0, 12))
    return np.log([0.8, 1.2, 0.1]), x, np.sin(2 * x) + 0.1 * rng.standard_normal(12)


@functools.cache
def _jax_gp():
    """``jax.grad`` and ``jax.hessian`` of the likelihood, jitted (eager JAX takes 15 s)."""
    p0, x, y = _gp_problem()
    with enable_x64(True):
        f = lambda q: nll(q, jnp.asarray(x), jnp.asarray(y))
        return tuple(np.asarray(jax.jit(d(f))(jnp.asarray(p0))) for d in (jax.grad, jax.hessian))


def _central(f, p, h):
    return np.array([(f(p + h * e) - f(p - h * e)) / (2 * h) for e in np.eye(p.size)])


def test_gp_likelihood_written_for_the_standard(xb):
    """The example's likelihood (cholesky, solve, diagonal, vecdot, unstack): value against
    NumPy, gradient and Hessian against finite differences and against ``jax.grad`` and
    ``jax.hessian`` of the same function on JAX arrays."""
    p0, x, y = _gp_problem()
    xx, yy = xad.tensor(x), xad.tensor(y)
    p = xad.tensor(p0, requires_grad=True)
    value = nll(p, xx, yy)
    grad = xad.grad(lambda q: nll(q, xx, yy))(p).numpy()
    hess = xad.hessian(lambda q: nll(q, xx, yy))(p).numpy()
    assert value.requires_grad
    assert value.numpy() == pytest.approx(nll(p0, x, y), rel=1e-12)
    f_np = lambda q: nll(q, x, y)
    np.testing.assert_allclose(grad, _central(f_np, p0, 1e-6), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(hess, _central(lambda q: _central(f_np, q, 1e-4), p0, 1e-4),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(hess, hess.T, rtol=1e-12, atol=1e-12)
    if jax is not None:
        jax_grad, jax_hess = _jax_gp()
        np.testing.assert_allclose(grad, jax_grad, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(hess, jax_hess, rtol=1e-9, atol=1e-11)
