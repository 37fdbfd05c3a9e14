"""Native forward mode: every primitive's JVP rule against finite differences on every backend
(references computed once, on NumPy), against its VJP rule (<J v, u> = <v, J^T u>) and to
second order (NumPy: the rules are backend-free code); the transforms built on it (jvp,
linearize, jacfwd, hessian, hvp) against JAX."""

from __future__ import annotations

import numpy as np
import pytest
from op_table import CASES, Case, X, make_inputs

import xad
from xad.forward_mode import MissingRuleError


def _flat(out) -> list:
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o for o in outs if isinstance(o, xad.Tensor) and o.dtype.is_floating]


def _dot(a, b) -> float:
    return sum(float(np.vdot(x.numpy(), y.numpy()).real) for x, y in zip(a, b))


def _jvp(f, xs, vs):
    return xad.jvp(f, tuple(xs), tuple(vs))


def _fd(f, xs, vs, eps):
    """Central differences of ``f`` at ``xs`` along ``vs`` (float64 host arrays)."""
    hi = _flat(f(*[x + v * eps for x, v in zip(xs, vs)]))
    lo = _flat(f(*[x - v * eps for x, v in zip(xs, vs)]))
    return [(h.numpy() - lo_.numpy()) / (2 * eps) for h, lo_ in zip(hi, lo)]


def _problem(case: Case) -> tuple:
    """The case's host inputs, tangents and cotangent seed, and its tolerances."""
    host = make_inputs(case)
    rng = np.random.default_rng(7)
    tans = [rng.standard_normal(a.shape) for a in host]
    tol = (case.tol.get("rtol", 1e-5), case.tol.get("atol", 1e-6), case.tol.get("eps", 1e-6))
    return host, tans, rng, tol


_REFERENCE: dict = {}


def _reference(case: Case) -> list:
    """Central differences of the case along its tangents, computed once, on NumPy: every
    backend's JVP is held against the same numbers (the forwards agree: tests/
    test_ops_gradients.py), so the backends compile no reference of their own."""
    if case.name not in _REFERENCE:
        host, tans, _, (_, _, eps) = _problem(case)
        with xad.use_backend("numpy"):
            xs = [xad.tensor(a, dtype=xad.float64) for a in host]
            vs = [xad.tensor(v, dtype=xad.float64) for v in tans]
            _REFERENCE[case.name] = _fd(lambda *a: case.fn(X, *a), xs, vs, eps)
    return _REFERENCE[case.name]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_jvp_rule(case: Case, xb):
    """Every primitive's tangent on every backend against finite differences."""
    host, tans, _, (rtol, atol, _) = _problem(case)
    xs = [xad.tensor(a, dtype=xad.float64) for a in host]
    vs = [xad.tensor(v, dtype=xad.float64) for v in tans]
    out, tan = _jvp(lambda *a: case.fn(X, *a), xs, vs)
    outs, got = _flat(out), _flat(tan)
    assert len(outs) == len(got)
    for t, e in zip(got, _reference(case)):
        np.testing.assert_allclose(t.numpy(), e, rtol=rtol, atol=atol, err_msg=case.name)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_jvp_rule_against_vjp_rule(case: Case):
    """<J v, u> == <v, J^T u>: each tangent rule against its gradient rule (xad operations,
    the same on every backend: checked on NumPy)."""
    host, tans, rng, (rtol, _, _) = _problem(case)
    with xad.use_backend("numpy"):
        xs = [xad.tensor(a, dtype=xad.float64) for a in host]
        vs = [xad.tensor(v, dtype=xad.float64) for v in tans]
        f = lambda *a: _flat(case.fn(X, *a))  # noqa: E731
        outs, got = _jvp(f, xs, vs)
        us = [xad.tensor(rng.standard_normal(o.shape), dtype=xad.float64) for o in outs]
        _, vjp_fn = xad.vjp(f, *xs)
        lhs, rhs = _dot(got, us), _dot(vs, vjp_fn(us))
    assert abs(lhs - rhs) <= max(1e-8, rtol) * (1 + abs(lhs)), f"{case.name}: {lhs} != {rhs}"


@pytest.mark.parametrize("case", [c for c in CASES if c.order >= 2], ids=lambda c: c.name)
def test_jvp_rule_second_order(case: Case):
    """The tangent of the tangent (the rules' own rules, written in xad operations, so the
    same on every backend: checked on NumPy) against differences of the JVP."""
    with xad.use_backend("numpy"):
        _second_order(case)


def _second_order(case: Case):
    host = make_inputs(case)
    rng = np.random.default_rng(8)
    xs = [xad.tensor(a, dtype=xad.float64) for a in host]
    vs = [xad.tensor(rng.standard_normal(a.shape), dtype=xad.float64) for a in host]
    rtol, atol = case.tol.get("rtol", 1e-5), case.tol.get("atol", 1e-6)
    eps = case.tol.get("eps", 1e-6)

    def f(*a):
        return case.fn(X, *a)

    _jvp(f, xs, vs)
    ws = [xad.tensor(rng.standard_normal(tuple(x.shape)), dtype=xad.float64) for x in xs]

    def tangent(*a):
        return _flat(xad.jvp(f, a, tuple(vs))[1])

    _, tt = xad.jvp(tangent, tuple(xs), tuple(ws))
    for t, e in zip(_flat(tt), _fd(tangent, xs, ws, eps * 10)):
        np.testing.assert_allclose(t.numpy(), e, rtol=rtol * 100, atol=atol * 100,
                                   err_msg=f"{case.name} (second order)")


def test_every_differentiable_primitive_has_a_jvp_rule():
    """No differentiable primitive lacks a ``jvp`` method (forward mode would raise
    MissingRuleError where reverse mode works)."""
    missing = {n for n, op in xad.ops.REGISTRY.items()
               if op.differentiable and getattr(op, "jvp", None) is None}
    assert missing == set()


class _NoTangent(xad.ops.Op):
    """A primitive without a ``jvp`` method (named after the class body, so it stays out of
    ``xad.ops.REGISTRY``)."""

    @staticmethod
    def forward(b, x):
        return x * 2.0

    @staticmethod
    def backward(node, g):
        return g * 2.0


_NoTangent.name = "test_no_tangent"


def test_missing_rule_error_names_the_primitive(xb):
    a = xad.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=xad.float64)
    with pytest.raises(MissingRuleError, match="'test_no_tangent' has no forward-mode"):
        xad.jvp(lambda x: xad.ops.apply(_NoTangent, x), (a,), (xad.ones_like(a),))


def _spd_logdet(x):
    low = xad.linalg.cholesky(x @ x.mT + xad.eye(3, dtype=xad.float64))
    return xad.log(xad.linalg.diagonal(low)).sum() + xad.linalg.svdvals(x).sum() + (
        xad.linalg.eigvalsh(x + x.mT) ** 2).sum()


def test_hessian_forward_over_reverse_through_decompositions(xb):
    """The decompositions' tangent rules make ``hessian`` forward over reverse; it agrees
    with reverse over reverse."""
    x = xad.tensor(np.random.default_rng(3).standard_normal((3, 3)), dtype=xad.float64)
    np.testing.assert_allclose(xad.hessian(_spd_logdet)(x).numpy(),
                               xad.jacrev(xad.jacrev(_spd_logdet))(x).numpy(), rtol=1e-8,
                               atol=1e-10)


def test_closed_over_primal_is_a_constant(xb):
    """Only the argument carries the tangent, not a closed-over tensor sharing its value."""
    x = xad.tensor([1.0, 2.0], dtype=xad.float64)
    _, t = xad.jvp(lambda y: y * x, (x,), (xad.ones_like(x),))
    assert t.tolist() == [1.0, 2.0]


def test_detach_has_no_tangent(xb):
    x, t = xad.tensor([1.0, 2.0]), xad.tensor([1.0, 1.0])
    assert xad.jvp(lambda a: a.detach() * a, (x,), (t,))[1].tolist() == [1.0, 2.0]
    assert xad.jvp(lambda a: a.data * a, (x,), (t,))[1].tolist() == [1.0, 2.0]
    got = xad.vmap(lambda a: xad.jvp(lambda b: b.detach() * b, (a,), (a * 0 + 1,))[1])(x)
    assert got.tolist() == [1.0, 2.0]


def test_perturbations_stay_apart(xb):
    """jvp of a function with an inner jvp: d/dx [x * d/dy (x * y)] = 2x."""
    x = xad.tensor(3.0, dtype=xad.float64)
    one = xad.ones_like(x)
    inner = lambda a: a * xad.jvp(lambda y: a * y, (a,), (one,))[1]  # noqa: E731
    assert xad.jvp(inner, (x,), (one,))[1].item() == 6.0


def _mlp(params, x):
    h = x
    for w, b in params:
        h = xad.tanh(xad.nn.functional.linear(h, w, b))
    return (h * h).sum()


def _jax_mlp(params, x):
    import jax.numpy as jnp
    h = x
    for w, b in params:
        h = jnp.tanh(h @ w.T + b)
    return (h * h).sum()


def test_mixed_modes_against_jax():
    """On NumPy (the transforms are backend-free code; the rules are checked per backend)."""
    with xad.use_backend("numpy"):
        _mixed_modes_against_jax()


def _mixed_modes_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jit = jax.jit  # one compilation per reference, not one per operation
    rng = np.random.default_rng(0)
    ps = [(rng.standard_normal((4, 3)), rng.standard_normal(4)),
          (rng.standard_normal((2, 4)), rng.standard_normal(2))]
    xh, vh = rng.standard_normal(3), rng.standard_normal(3)
    params = [(xad.tensor(w), xad.tensor(b)) for w, b in ps]
    x, v = xad.tensor(xh), xad.tensor(vh)
    f = lambda z: _mlp(params, z)  # noqa: E731
    jf = lambda z: _jax_mlp(ps, z)  # noqa: E731
    np.testing.assert_allclose(xad.hessian(f)(x).numpy(), jit(jax.hessian(jf))(xh), rtol=1e-10)
    np.testing.assert_allclose(xad.hvp(f, x, v).numpy(),
                               jit(lambda a: jax.jvp(jax.grad(jf), (a,), (vh,))[1])(xh),
                               rtol=1e-10)
    g = lambda z: xad.tanh(z) * z.sum()  # noqa: E731
    jg = lambda z: jax.numpy.tanh(z) * z.sum()  # noqa: E731
    np.testing.assert_allclose(xad.jacfwd(g)(x).numpy(), jit(jax.jacfwd(jg))(xh), rtol=1e-10)
    np.testing.assert_allclose(xad.jacfwd(xad.jacrev(g))(x).numpy(),
                               jit(jax.jacfwd(jax.jacrev(jg)))(xh), rtol=1e-10)
    np.testing.assert_allclose(xad.grad(lambda z: xad.jvp(f, (z,), (v,))[1])(x).numpy(),
                               jit(jax.grad(lambda z: jax.jvp(jf, (z,), (vh,))[1]))(xh),
                               rtol=1e-10)
    _, lin = xad.linearize(f, x)
    np.testing.assert_allclose(lin(v).item(),
                               jit(lambda a: jax.linearize(jf, a)[1](vh))(xh), rtol=1e-10)


class _RawCube(xad.Function):
    """A custom operation whose forward leaves xad's operations (here by ``detach()``; the
    same holds for work on ``.array``)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.detach() ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


def test_function_on_raw_arrays_refuses_a_transform_instead_of_a_zero_tangent(xb):
    x = xad.tensor([1.0, 2.0], dtype=xad.float64)
    assert _RawCube.apply(x).tolist() == [1.0, 8.0]  # eager: fine
    with pytest.raises(NotImplementedError, match="_RawCube.apply under JVPLevel"):
        xad.jvp(_RawCube.apply, (x,), (xad.ones_like(x),))


def test_decomposition_tangents_without_a_definition_are_clear_errors(xb):
    x = xad.tensor(np.arange(6.0).reshape(3, 2) ** 2)
    v = xad.ones_like(x)
    with pytest.raises(NotImplementedError, match="svd tangent.*full_matrices=False"):
        xad.jvp(lambda a: xad.linalg.svd(a).U, (x,), (v,))
    with pytest.raises(NotImplementedError, match="linalg.qr tangent"):
        xad.jvp(lambda a: xad.linalg.qr(a, mode="complete").Q, (x,), (v,))
