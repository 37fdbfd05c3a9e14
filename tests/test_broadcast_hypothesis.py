"""Property tests: gradients of broadcasting binary operations reduce to each input's shape
and equal the NumPy values, for random broadcastable shape pairs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import xad

# op -> (xad function, numpy d(op)/da, numpy d(op)/db, domain of a, domain of b)
OPS = {
    "add": (lambda a, b: a + b, lambda a, b: np.ones_like(a * b),
            lambda a, b: np.ones_like(a * b)),
    "subtract": (lambda a, b: a - b, lambda a, b: np.ones_like(a * b),
                 lambda a, b: -np.ones_like(a * b)),
    "multiply": (lambda a, b: a * b, lambda a, b: b + 0 * a, lambda a, b: a + 0 * b),
    "divide": (lambda a, b: a / b, lambda a, b: 1 / b + 0 * a, lambda a, b: -a / b ** 2),
    "pow": (lambda a, b: a ** b, lambda a, b: b * a ** (b - 1), lambda a, b: a ** b * np.log(a)),
    "maximum": (xad.maximum, lambda a, b: (a > b) * 1.0, lambda a, b: (b > a) * 1.0),
    "minimum": (xad.minimum, lambda a, b: (a < b) * 1.0, lambda a, b: (b < a) * 1.0),
}


def _reduce_to(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True).reshape(shape)


def _values(rng: np.random.Generator, shape: tuple[int, ...], op: str, first: bool):
    if op == "pow" and first:
        return rng.uniform(0.5, 2.0, shape)
    if op == "divide" and not first:
        return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 2.0, shape)
    if op in ("maximum", "minimum"):  # integers against half-integers: never tied
        return rng.integers(-3, 4, shape) + (0.0 if first else 0.5)
    return rng.standard_normal(shape)


@pytest.mark.parametrize("backend", ["numpy", "array_api_strict"])
@pytest.mark.parametrize("op", sorted(OPS))
@settings(max_examples=25, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3,
                                                 max_side=3),
       seed=st.integers(0, 2 ** 16))
def test_broadcast_gradient(backend, op, shapes, seed):
    sa, sb = shapes.input_shapes
    rng = np.random.default_rng(seed)
    a_np, b_np = _values(rng, sa, op, True), _values(rng, sb, op, False)
    f, da, db = OPS[op]
    with xad.use_backend(backend):
        a = xad.tensor(a_np, dtype=xad.float64, requires_grad=True)
        b = xad.tensor(b_np, dtype=xad.float64, requires_grad=True)
        out = f(a, b)
        assert out.shape == shapes.result_shape
        ga, gb = xad.autograd.grad(out.sum(), [a, b])
    assert ga.shape == sa and gb.shape == sb
    assert ga.dtype == gb.dtype == xad.float64
    full = np.broadcast_to(a_np, shapes.result_shape), np.broadcast_to(b_np,
                                                                        shapes.result_shape)
    np.testing.assert_allclose(ga.numpy(), _reduce_to(da(*full), sa), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gb.numpy(), _reduce_to(db(*full), sb), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("backend", ["numpy", "array_api_strict"])
@settings(max_examples=25, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3,
                                                 max_side=3),
       seed=st.integers(0, 2 ** 16))
def test_where_broadcast_gradient(backend, shapes, seed):
    sc, sa, sb = shapes.input_shapes
    rng = np.random.default_rng(seed)
    c_np = rng.random(sc) < 0.5
    a_np, b_np = rng.standard_normal(sa), rng.standard_normal(sb)
    with xad.use_backend(backend):
        a = xad.tensor(a_np, dtype=xad.float64, requires_grad=True)
        b = xad.tensor(b_np, dtype=xad.float64, requires_grad=True)
        ga, gb = xad.autograd.grad(xad.where(xad.tensor(c_np), a, b).sum(), [a, b])
    c_full = np.broadcast_to(c_np, shapes.result_shape)
    np.testing.assert_array_equal(ga.numpy(), _reduce_to(c_full * 1.0, sa))
    np.testing.assert_array_equal(gb.numpy(), _reduce_to(~c_full * 1.0, sb))
