"""xad.distributions' transforms, constraints and ``biject_to``/``transform_to`` against
torch.distributions in float64 on every backend: forward values, inverses,
``log_abs_det_jacobian`` and their gradients, shapes, ``sign``/``bijective``/``event_dim``,
caching, and the errors for bad shapes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributions as TD
import torch.distributions.transforms as TT
from test_distributions import _both, _np

import xad
import xad.distributions as XD
from xad.distributions import constraints
from xad.distributions import transforms as XT

R = np.random.default_rng(1)


def _pos(*shape):
    return R.uniform(0.5, 2.0, shape)


def _corr_cholesky(k):
    a = R.normal(size=(k, k))
    c = a @ a.T + k * np.eye(k)
    d = np.sqrt(np.diag(c))
    return np.linalg.cholesky(c / d[:, None] / d[None, :])


# name: (make(T, D, *params), params, x, inverse checked, log-det defined); T is the
# transforms module and D the distributions module (xad's or torch's)
CASES = {
    "exp": (lambda T, D: T.ExpTransform(), [], R.normal(size=(2, 3)), True, True),
    "exp-inv": (lambda T, D: T.ExpTransform().inv, [], _pos(3), True, True),
    "affine": (lambda T, D, m, s: T.AffineTransform(m, s), [R.normal(size=3), -_pos(3)],
               R.normal(size=(2, 3)), True, True),
    "affine-event": (lambda T, D, m, s: T.AffineTransform(m, s, event_dim=1),
                     [R.normal(size=3), _pos(3)], R.normal(size=(2, 3)), True, True),
    "affine-number": (lambda T, D: T.AffineTransform(1.5, -2.0), [], R.normal(size=3),
                      True, True),
    "sigmoid": (lambda T, D: T.SigmoidTransform(), [], R.normal(size=4) * 3, True, True),
    "tanh": (lambda T, D: T.TanhTransform(), [], np.array([-3.0, -0.5, 0.1, 2.0]), True,
             True),
    "softplus": (lambda T, D: T.SoftplusTransform(), [], R.normal(size=4) * 3, True, True),
    "power": (lambda T, D, e: T.PowerTransform(e), [np.array([0.5, -1.5, 2.0])], _pos(2, 3),
              True, True),
    "abs": (lambda T, D: T.AbsTransform(), [], R.normal(size=4), False, False),
    "softmax": (lambda T, D: T.SoftmaxTransform(), [], R.normal(size=(2, 4)), False, False),
    "stick-breaking": (lambda T, D: T.StickBreakingTransform(), [], R.normal(size=(2, 3)),
                       True, True),
    "lower-cholesky": (lambda T, D: T.LowerCholeskyTransform(), [], R.normal(size=(2, 3, 3)),
                       False, False),
    "positive-definite": (lambda T, D: T.PositiveDefiniteTransform(), [],
                          R.normal(size=(3, 3)), False, False),
    "corr-cholesky": (lambda T, D: T.CorrCholeskyTransform(), [], R.normal(size=(2, 6)),
                      True, True),
    "corr-cholesky-2": (lambda T, D: T.CorrCholeskyTransform(), [], R.normal(size=(1,)),
                        True, True),
    "compose": (lambda T, D, m, s: T.ComposeTransform([T.ExpTransform(),
                                                       T.AffineTransform(m, s)]),
                [R.normal(size=3), _pos(3)], R.normal(size=(2, 3)), True, True),
    "compose-events": (lambda T, D: T.ComposeTransform([
        T.AffineTransform(0.5, 2.0), T.StickBreakingTransform(), T.ExpTransform().inv]),
        [], R.normal(size=(2, 3)) * 0.3, True, True),
    "independent": (lambda T, D: T.IndependentTransform(T.ExpTransform(), 1), [],
                    R.normal(size=(2, 3)), True, True),
    "reshape": (lambda T, D: T.ReshapeTransform((2, 3), (6,)), [], R.normal(size=(4, 2, 3)),
                True, True),
    "cat": (lambda T, D: T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)],
                                        dim=-1, lengths=[2, 1]), [], R.normal(size=(2, 3)),
            True, True),
    "cat-events": (lambda T, D: T.CatTransform([
        T.IndependentTransform(T.ExpTransform(), 1), T.StickBreakingTransform()], dim=-1,
        lengths=[2, 2]), [], R.normal(size=(2, 4)), False, False),
    "stack": (lambda T, D: T.StackTransform([T.ExpTransform(), T.TanhTransform()], dim=1),
              [], R.normal(size=(3, 2)), True, True),
    "cdf": (lambda T, D, m, s: T.CumulativeDistributionTransform(D.Normal(m, s)),
            [R.normal(size=3), _pos(3)], R.normal(size=(2, 3)), True, True),
}


def _close(xb, x, t, rtol=1e-10):
    assert tuple(x.shape) == tuple(t.shape)
    np.testing.assert_allclose(_np(xb, x), t.detach().numpy(), rtol=rtol, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_transform_matches_torch(xb, name):
    """Values, inverse, log-determinant, shapes and attributes; the gradients of all of
    them in x and in the parameters."""
    make, params, x, invertible, has_ladj = CASES[name]
    (xx, *xs), (tx, *ts) = _both(xb, [x, *params])
    xt, tt = make(XT, XD, *xs), make(TT, TD, *ts)
    y, ty = xt(xx), tt(tx)
    _close(xb, y, ty)
    assert xt.bijective == tt.bijective
    assert xt.forward_shape(x.shape) == tuple(tt.forward_shape(x.shape))
    assert xt.inverse_shape(y.shape) == tuple(tt.inverse_shape(ty.shape))
    assert (xt.domain.event_dim, xt.codomain.event_dim) == (tt.domain.event_dim,
                                                            tt.codomain.event_dim)
    total, t_total = y.sum(), ty.sum()
    yd = xad.tensor(_np(xb, y), dtype=xad.float64)  # a fresh y: the inverse is computed
    if invertible:
        _close(xb, xt.inv(yd), tx, rtol=1e-8)
        total, t_total = total + (xt.inv(y) ** 2).sum(), t_total + (tt.inv(ty) ** 2).sum()
    if has_ladj:
        ladj, t_ladj = xt.log_abs_det_jacobian(xx, y), tt.log_abs_det_jacobian(tx, ty)
        _close(xb, ladj, t_ladj)
        total, t_total = total + ladj.sum(), t_total + t_ladj.sum()
    total.backward()
    t_total.backward()
    for a, b in zip([xx, *xs], [tx, *ts]):
        _close(xb, a.grad, b.grad, rtol=1e-8)


@pytest.mark.parametrize("name", ["exp", "affine", "sigmoid", "tanh", "softplus", "power",
                                  "compose", "cdf", "exp-inv"])
def test_sign_matches_torch(xb, name):
    make, params, *_ = CASES[name]
    xs, ts = _both(xb, params)
    xsign, tsign = make(XT, XD, *xs).sign, make(TT, TD, *ts).sign
    if isinstance(tsign, torch.Tensor):
        _close(xb, xsign, tsign)
    else:
        assert xsign == tsign


def test_tanh_log_det_is_finite_where_tanh_saturates(xb):
    """SAC's squashed Gaussian: ``log(1 - tanh(x)^2)`` is -inf at |x| = 20 in float64; the
    stable form is torch's value, and ``TransformedDistribution.log_prob`` inverts through
    the cache."""
    x = xad.tensor([-40.0, 20.0, 40.0], dtype=xad.float64)
    t = torch.tensor([-40.0, 20.0, 40.0], dtype=torch.float64)
    _close(xb, XT.TanhTransform().log_abs_det_jacobian(x, None),
           TT.TanhTransform().log_abs_det_jacobian(t, None))
    loc = xad.tensor([0.0, 1.0], dtype=xad.float64, requires_grad=True)
    d = XD.TransformedDistribution(XD.Normal(loc, 1.0), [XT.TanhTransform(cache_size=1)])
    a = d.rsample()
    assert bool(xad.all(xad.isfinite(d.log_prob(a))).item())


def test_caching_returns_the_same_tensors(xb):
    """``cache_size=1``: the inverse of the last output is its input, exactly (no
    recomputation), and ``with_cache`` keeps the kind of transform; 2 is refused."""
    t = XT.ExpTransform(cache_size=1)
    x = xad.tensor([0.5, 1.0], dtype=xad.float64)
    y = t(x)
    assert t.inv(y) is x and t(x) is y
    c = XT.ComposeTransform([XT.AffineTransform(1.0, 2.0), XT.SigmoidTransform()], cache_size=1)
    assert c.inv(c(x)) is x
    assert isinstance(XT.TanhTransform().with_cache(), XT.TanhTransform)
    assert t.inv.inv is t and t.inv == XT.ExpTransform().inv
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        XT.ExpTransform(cache_size=2)


def test_tril_vector_round_trip(xb):
    from torch.distributions.utils import tril_matrix_to_vec as t_to_vec
    from torch.distributions.utils import vec_to_tril_matrix as t_to_mat

    from xad.distributions.matrix_transforms import tril_matrix_to_vec, vec_to_tril_matrix
    for diag in (0, -1, -2):
        m = R.normal(size=(2, 4, 4))
        xv, tv = tril_matrix_to_vec(xad.tensor(m), diag), t_to_vec(torch.tensor(m), diag)
        _close(xb, xv, tv)
        _close(xb, vec_to_tril_matrix(xv, diag), t_to_mat(tv, diag))
    with pytest.raises(ValueError, match="no triangle"):
        vec_to_tril_matrix(xad.zeros(4))


VALUES = {  # constraint name: (make(C), value)
    "real": (lambda C: C.real, np.array([1.0, np.nan, -np.inf])),
    "positive": (lambda C: C.positive, np.array([-1.0, 0.0, 2.0])),
    "nonnegative": (lambda C: C.nonnegative, np.array([-1.0, 0.0, 2.0])),
    "unit_interval": (lambda C: C.unit_interval, np.array([-0.1, 0.0, 0.5, 1.0, 1.1])),
    "interval": (lambda C: C.interval(-1.0, 2.0), np.array([-1.5, -1.0, 2.0, 2.5])),
    "half_open_interval": (lambda C: C.half_open_interval(-1.0, 2.0),
                           np.array([-1.0, 2.0, 1.0])),
    "greater_than": (lambda C: C.greater_than(1.0), np.array([0.0, 1.0, 2.0])),
    "greater_than_eq": (lambda C: C.greater_than_eq(1.0), np.array([0.0, 1.0, 2.0])),
    "less_than": (lambda C: C.less_than(1.0), np.array([0.0, 1.0, 2.0])),
    "boolean": (lambda C: C.boolean, np.array([0.0, 1.0, 0.5])),
    "integer_interval": (lambda C: C.integer_interval(0, 3), np.array([-1.0, 0.0, 2.5, 3.0])),
    "nonnegative_integer": (lambda C: C.nonnegative_integer, np.array([-1.0, 0.0, 2.5, 3.0])),
    "positive_integer": (lambda C: C.positive_integer, np.array([0.0, 1.0, 2.5])),
    "simplex": (lambda C: C.simplex, np.array([[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1]])),
    "one_hot": (lambda C: C.one_hot, np.array([[0.0, 1.0], [1.0, 1.0], [0.5, 0.5]])),
    "multinomial": (lambda C: C.multinomial(3), np.array([[1.0, 2.0], [2.0, 2.0]])),
    "lower_triangular": (lambda C: C.lower_triangular, np.array([np.tril(R.normal(size=(3, 3))),
                                                                 R.normal(size=(3, 3))])),
    "lower_cholesky": (lambda C: C.lower_cholesky, np.array([[[1.0, 0.0], [2.0, 1.0]],
                                                             [[1.0, 0.0], [2.0, -1.0]]])),
    "corr_cholesky": (lambda C: C.corr_cholesky, np.array([_corr_cholesky(3),
                                                           2 * _corr_cholesky(3)])),
    "square": (lambda C: C.square, R.normal(size=(2, 3, 3))),
    "symmetric": (lambda C: C.symmetric, np.array([[[1.0, 2.0], [2.0, 1.0]],
                                                   [[1.0, 2.0], [0.0, 1.0]]])),
    "positive_definite": (lambda C: C.positive_definite,
                          np.array([[[2.0, 1.0], [1.0, 2.0]], [[1.0, 2.0], [2.0, 1.0]],
                                    [[0.0, 0.0], [0.0, 0.0]]])),
    "positive_semidefinite": (lambda C: C.positive_semidefinite,
                              np.array([[[2.0, 1.0], [1.0, 2.0]], [[1.0, 2.0], [2.0, 1.0]],
                                        [[0.0, 0.0], [0.0, 0.0]]])),
    "independent": (lambda C: C.independent(C.positive, 1), np.array([[1.0, 2.0],
                                                                      [1.0, -2.0]])),
    "real_vector": (lambda C: C.real_vector, np.array([[1.0, 2.0], [1.0, np.nan]])),
    "cat": (lambda C: C.cat([C.positive, C.real], dim=-1, lengths=[1, 2]),
            np.array([[1.0, -1.0, 0.0], [-1.0, 0.0, 0.0]])),
    "stack": (lambda C: C.stack([C.positive, C.unit_interval], dim=1),
              np.array([[1.0, 0.5], [1.0, 2.0], [-1.0, 0.5]])),
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_constraint_check_matches_torch(xb, name):
    make, value = VALUES[name]
    xc, tc = make(constraints), make(TD.constraints)
    got = xc.check(xad.tensor(value, dtype=xad.float64))
    want = tc.check(torch.tensor(value, dtype=torch.float64))
    np.testing.assert_array_equal(_np(xb, got), want.numpy())
    assert (xc.event_dim, xc.is_discrete) == (tc.event_dim, tc.is_discrete)
    assert repr(xc) == repr(tc)


REGISTERED = ["real", "positive", "nonnegative", "unit_interval", "interval",
              "half_open_interval", "greater_than", "greater_than_eq", "less_than", "simplex",
              "lower_cholesky", "positive_definite", "positive_semidefinite", "corr_cholesky",
              "independent", "real_vector", "cat", "stack"]


@pytest.mark.parametrize("name", REGISTERED)
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_registry_matches_torch(xb, registry, name):
    """The same transform as torch's for each constraint, giving the same values (and a
    value inside the constraint)."""
    make, value = VALUES[name]
    xc, tc = make(constraints), make(TD.constraints)
    x_reg = getattr(XD.constraint_registry, registry)
    t_reg = getattr(TD.constraint_registry, registry)
    try:
        tt = t_reg(tc)
    except NotImplementedError:
        with pytest.raises(NotImplementedError, match="Cannot transform"):
            x_reg(xc)
        return
    xt = x_reg(xc)
    assert repr(xt) == repr(tt)
    n = R.normal(size=tt.inverse_shape(value.shape))
    y, ty = xt(xad.tensor(n, dtype=xad.float64)), tt(torch.tensor(n, dtype=torch.float64))
    _close(xb, y, ty)
    assert bool(xad.all(xc.check(y)).item())


def test_registry_register_and_errors():
    reg = XD.constraint_registry.ConstraintRegistry()

    @reg.register(constraints.positive)
    def _f(c):
        return XT.SoftplusTransform()

    assert isinstance(reg(constraints.positive), XT.SoftplusTransform)
    with pytest.raises(NotImplementedError, match="Cannot transform _Real constraints"):
        reg(constraints.real)
    with pytest.raises(TypeError, match="Constraint subclass or instance"):
        reg.register(int, _f)
    with pytest.raises(ValueError, match="dependent constraint"):
        constraints.dependent.check(xad.zeros(1))
    with pytest.raises(NotImplementedError, match="cannot be determined statically"):
        constraints.dependent.event_dim  # noqa: B018
    assert constraints.is_dependent(XD.Uniform.support)


def test_shape_errors_are_torchs():
    with pytest.raises(ValueError, match="different numbers of elements"):
        XT.ReshapeTransform((2, 3), (5,))
    with pytest.raises(ValueError, match="shape mismatch"):
        XT.ReshapeTransform((2, 3), (6,)).forward_shape((4, 3, 2))
    with pytest.raises(ValueError, match="not the size of a matrix's strict lower triangle"):
        XT.CorrCholeskyTransform().forward_shape((4,))
    with pytest.raises(ValueError, match="needs 3 entries along dim=-1"):
        XT.CatTransform([XT.ExpTransform()] * 2, dim=-1, lengths=[1, 2])(xad.zeros(2))
    with pytest.raises(ValueError, match="CatTransform: 2 parts but 1 lengths"):
        XT.CatTransform([XT.ExpTransform()] * 2, lengths=[1])
    with pytest.raises(ValueError, match="too few dimensions"):
        XT.IndependentTransform(XT.ExpTransform(), 2)(xad.zeros(3))
    with pytest.raises(ValueError, match=r"\.domain\.event_dim"):
        XT.CorrCholeskyTransform().event_dim  # noqa: B018


def test_under_as_torch():
    """``torch.distributions.transforms``, ``.constraints``, ``.constraint_registry`` and
    the transformed families' modules, as users import them."""
    from xad import as_torch
    ns = as_torch.namespace()
    assert ns["torch.distributions.transforms"].TanhTransform is XT.TanhTransform
    assert ns["torch.distributions.constraints"].positive is constraints.positive
    assert ns["torch.distributions"].constraints.simplex is constraints.simplex
    assert ns["torch.distributions.constraint_registry"].biject_to is XD.biject_to
    assert ns["torch.distributions"].biject_to is XD.biject_to
    assert ns["torch.distributions.transformed_distribution"].TransformedDistribution is (
        XD.TransformedDistribution)
    for mod, name in [("log_normal", "LogNormal"), ("half_normal", "HalfNormal"),
                      ("half_cauchy", "HalfCauchy"), ("gumbel", "Gumbel"),
                      ("weibull", "Weibull"), ("pareto", "Pareto"),
                      ("inverse_gamma", "InverseGamma"), ("kumaraswamy", "Kumaraswamy"),
                      ("logistic_normal", "LogisticNormal"),
                      ("relaxed_bernoulli", "RelaxedBernoulli"),
                      ("relaxed_categorical", "RelaxedOneHotCategorical")]:
        assert getattr(ns[f"torch.distributions.{mod}"], name) is getattr(XD, name)
        assert getattr(ns["torch.distributions"], mod) is ns[f"torch.distributions.{mod}"]
