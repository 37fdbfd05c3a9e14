"""xad.linalg against JAX, on every backend in float64: values, gradients (``jax.grad``) and
second derivatives (Hessian-vector products, ``jax.jvp`` of ``jax.grad``) of one function
written only against the Array API namespace; behaviour at degenerate inputs; errors.

(tests/op_table.py checks the primitives against finite differences to second order.)
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import xad
from xad import autograd as ag

jax.config.update("jax_enable_x64", True)


def _well(xp, a):
    return a + 3.0 * xp.eye(a.shape[-1], dtype=xp.float64)


def _spd(xp, a):
    return a @ a.mT + xp.eye(a.shape[-1], dtype=xp.float64)


def _svd_parts(xp, a):
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    return u * u, s, vh * vh  # free signs of singular vectors cancel


def _expm(xp, a):
    """``matrix_exp``: xad's, or JAX's ``jax.scipy.linalg.expm`` (not in ``jnp.linalg``)."""
    return jax.scipy.linalg.expm(a) if xp is jnp else xp.linalg.matrix_exp(a)


# name: (function of (xp, *inputs) returning arrays, input shapes)
CASES = {
    "matrix_exp": (lambda xp, a: _expm(xp, a * 0.5), [(2, 3, 3)]),
    "matrix_exp_squared": (lambda xp, a: _expm(xp, a * 4.0), [(3, 3)]),  # (s = 1 or 2)
    "multi_dot": (lambda xp, a, b, c: xp.linalg.multi_dot([a, b, c]), [(3,), (3, 4), (4, 2)]),
    "multi_dot_4": (lambda xp, a, b, c, d: xp.linalg.multi_dot([a, b, c, d]),
                    [(5, 2), (2, 6), (6, 3), (3,)]),
    "cholesky": (lambda xp, a: xp.linalg.cholesky(_spd(xp, a)), [(2, 3, 3)]),
    "cholesky_upper": (lambda xp, a: xp.linalg.cholesky(_spd(xp, a), upper=True), [(3, 3)]),
    "cross": (lambda xp, a, b: xp.linalg.cross(a, b), [(4, 3), (4, 3)]),
    "cross_axis0_bcast": (lambda xp, a, b: xp.linalg.cross(a, b, axis=0), [(3, 4), (3, 1)]),
    "det": (lambda xp, a: xp.linalg.det(a), [(2, 3, 3)]),
    "diagonal": (lambda xp, a: xp.linalg.diagonal(a, offset=1) ** 2, [(2, 3, 4)]),
    "diagonal_neg": (lambda xp, a: xp.linalg.diagonal(a, offset=-2) ** 2, [(4, 3)]),
    "eigh": (lambda xp, a: (lambda r: (r.eigenvalues, r.eigenvectors ** 2))(
        xp.linalg.eigh(a + a.mT)), [(2, 4, 4)]),
    "eigvalsh": (lambda xp, a: xp.linalg.eigvalsh(a + a.mT), [(3, 3)]),
    "inv": (lambda xp, a: xp.linalg.inv(_well(xp, a)), [(2, 3, 3)]),
    "matmul": (lambda xp, a, b: xp.linalg.matmul(a, b), [(2, 3, 4), (4, 2)]),
    "matrix_norm_fro": (lambda xp, a: xp.linalg.matrix_norm(a), [(2, 3, 4)]),
    "matrix_norm_nuc": (lambda xp, a: xp.linalg.matrix_norm(a, ord="nuc", keepdims=True),
                        [(3, 4)]),
    "matrix_norm_2": (lambda xp, a: xp.linalg.matrix_norm(a, ord=2), [(4, 3)]),
    "matrix_norm_-2": (lambda xp, a: xp.linalg.matrix_norm(a, ord=-2), [(3, 3)]),
    "matrix_norm_1": (lambda xp, a: xp.linalg.matrix_norm(a, ord=1), [(3, 4)]),
    "matrix_norm_-inf": (lambda xp, a: xp.linalg.matrix_norm(a, ord=-math.inf), [(3, 4)]),
    "matrix_power_3": (lambda xp, a: xp.linalg.matrix_power(a, 3), [(2, 3, 3)]),
    "matrix_power_-2": (lambda xp, a: xp.linalg.matrix_power(_well(xp, a), -2), [(3, 3)]),
    "matrix_power_0": (lambda xp, a: xp.linalg.matrix_power(a, 0) + a, [(3, 3)]),
    "matrix_transpose": (lambda xp, a: xp.linalg.matrix_transpose(a) ** 2, [(2, 3)]),
    "outer": (lambda xp, a, b: xp.linalg.outer(a, b), [(3,), (4,)]),
    "pinv": (lambda xp, a: xp.linalg.pinv(a), [(2, 4, 3)]),
    "qr": (lambda xp, a: (lambda r: (r.Q ** 2, r.R ** 2))(xp.linalg.qr(a)), [(4, 3)]),
    "slogdet": (lambda xp, a: xp.linalg.slogdet(_well(xp, a)).logabsdet, [(2, 3, 3)]),
    "solve": (lambda xp, a, b: xp.linalg.solve(_well(xp, a), b), [(2, 3, 3), (3, 2)]),
    "solve_vector": (lambda xp, a, b: xp.linalg.solve(_well(xp, a), b), [(3, 3), (3,)]),
    "svd": (_svd_parts, [(4, 3)]),
    "svd_wide": (_svd_parts, [(2, 3, 5)]),
    "svdvals": (lambda xp, a: xp.linalg.svdvals(a), [(3, 5)]),
    "tensordot": (lambda xp, a, b: xp.linalg.tensordot(a, b, axes=([0, 2], [1, 0])),
                  [(3, 2, 4), (4, 3)]),
    "trace": (lambda xp, a: xp.linalg.trace(a, offset=-1) ** 2, [(2, 3, 4)]),
    "vecdot": (lambda xp, a, b: xp.linalg.vecdot(a, b, axis=0), [(3, 4), (3, 1)]),
    "vector_norm": (lambda xp, a: xp.linalg.vector_norm(a), [(2, 3)]),
    "vector_norm_axis": (lambda xp, a: xp.linalg.vector_norm(a, axis=(0, 2), keepdims=True),
                         [(2, 3, 4)]),
    "vector_norm_1": (lambda xp, a: xp.linalg.vector_norm(a, ord=1, axis=1), [(2, 3)]),
    "vector_norm_3": (lambda xp, a: xp.linalg.vector_norm(a, ord=3, axis=-1), [(2, 3)]),
    "vector_norm_inf": (lambda xp, a: xp.linalg.vector_norm(a, ord=math.inf), [(2, 3)]),
    "vector_norm_-inf": (lambda xp, a: xp.linalg.vector_norm(a, ord=-math.inf, axis=0),
                         [(2, 3)]),
}


def _loss(fn, xp, weights):
    """A real scalar of ``fn``'s outputs: the sum of each output times fixed weights."""
    def f(*xs):
        outs = fn(xp, *xs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        return sum(xp.sum(o * xp.asarray(w)) for o, w in zip(outs, weights))
    return f


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def check_values(fn, xs, backend):
    """``fn(xad, ...)`` on ``backend`` equals ``fn(jax.numpy, ...)``."""
    got = _as_tuple(fn(xad, *[xad.tensor(a, dtype=xad.float64) for a in xs]))
    want = _as_tuple(fn(jnp, *map(jnp.asarray, xs)))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == xad.float64 and g.backend is backend
        np.testing.assert_allclose(g.numpy(), np.asarray(w), rtol=1e-9, atol=1e-10)


def check_derivatives(fn, xs):
    """The gradient of a weighted sum of ``fn``'s outputs, and its Hessian times a random
    direction, equal JAX's (``jax.grad``; ``jax.jvp`` of ``jax.grad``)."""
    rng = np.random.default_rng(7)
    ws = [rng.standard_normal(np.shape(o)) for o in _as_tuple(fn(jnp, *map(jnp.asarray, xs)))]
    vs = [rng.standard_normal(a.shape) for a in xs]
    argnums = tuple(range(len(xs)))
    jgrad = jax.grad(_loss(fn, jnp, ws), argnums=argnums)
    jx, jv = tuple(map(jnp.asarray, xs)), tuple(map(jnp.asarray, vs))
    jhvp = jax.jvp(jgrad, jx, jv)[1]
    ts = [xad.tensor(a, dtype=xad.float64, requires_grad=True) for a in xs]
    ws_x = [xad.tensor(w, dtype=xad.float64) for w in ws]
    grads = ag.grad(_loss(fn, xad, ws_x)(*ts), ts, create_graph=True)
    dot = sum((g * xad.tensor(v, dtype=xad.float64)).sum() for g, v in zip(grads, vs))
    # piecewise-linear cases (norms 1 and inf) have no second-order graph: a zero Hessian
    hvp = ag.grad(dot, ts, allow_unused=True) if dot.requires_grad else [None] * len(ts)
    for g, h, jg, jh, t in zip(grads, hvp, jgrad(*jx), jhvp, ts):
        np.testing.assert_allclose(g.numpy(), np.asarray(jg), rtol=1e-7, atol=1e-9)
        h = np.zeros(t.shape) if h is None else h.numpy()
        np.testing.assert_allclose(h, np.asarray(jh), rtol=1e-6, atol=1e-8)


def jax_tests(cases: dict) -> tuple:
    """The two tests of a table of cases ``name: (fn, input shapes)``: values, and first
    and second derivatives, against JAX on every backend."""
    def inputs(name):
        rng = np.random.default_rng(sum(map(ord, name)))
        return [rng.standard_normal(s) for s in cases[name][1]]

    @pytest.mark.parametrize("name", sorted(cases))
    def test_values_match_jax(name, xb):
        check_values(cases[name][0], inputs(name), xb)

    @pytest.mark.parametrize("name", sorted(cases))
    def test_first_and_second_derivatives_match_jax(name, xb):
        check_derivatives(cases[name][0], inputs(name))
    return test_values_match_jax, test_first_and_second_derivatives_match_jax


test_values_match_jax, test_first_and_second_derivatives_match_jax = jax_tests(CASES)

def _grad_of_weighted(f, a):
    x = xad.tensor(a, dtype=xad.float64, requires_grad=True)
    out = f(x)
    (g,) = ag.grad((out * xad.tensor(np.arange(out.size, dtype=float).reshape(out.shape) + 1,
                                     dtype=xad.float64)).sum(), [x])
    return g.numpy()


def test_repeated_eigenvalues_behave_as_jax(xb):
    """Eigenvector gradients at a repeated eigenvalue are non-finite (as JAX's); eigvalsh's
    and svdvals' stay finite and equal JAX's."""
    a = np.diag([1.0, 1.0, 2.0])
    w = np.arange(9.0).reshape(3, 3) + 1
    jv = jax.grad(lambda x: jnp.sum(jnp.linalg.eigh(x).eigenvectors ** 2 * w))(jnp.asarray(a))
    xv = _grad_of_weighted(lambda x: xad.linalg.eigh(x).eigenvectors ** 2, a)
    assert not np.isfinite(np.asarray(jv)).all() and not np.isfinite(xv).all()
    for name in ("eigvalsh", "svdvals"):
        want = jax.grad(lambda x: jnp.sum(getattr(jnp.linalg, name)(x)  # noqa: B023
                                          * (jnp.arange(3.0) + 1)))(jnp.asarray(a))
        got = _grad_of_weighted(getattr(xad.linalg, name), a)
        np.testing.assert_allclose(got, np.asarray(want), atol=1e-12)


def test_singular_matrix_raises_or_gives_inf_as_jax(xb):
    a = xad.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=xad.float64)
    if xb.name in ("jax", "cupy"):  # no error checking in these libraries: inf/NaN as JAX
        assert not np.isfinite(xad.linalg.inv(a).numpy()).all()
        return
    with pytest.raises(ValueError, match=r"linalg\.inv: .* shape\(s\) \(2, 2\)"):
        xad.linalg.inv(a)
    with pytest.raises(ValueError, match=r"linalg\.cholesky"):
        xad.linalg.cholesky(-a)


def test_matrix_rank_has_no_gradient(xb):
    x = xad.tensor([[1.0, 2.0], [2.0, 4.0]], requires_grad=True)
    r = xad.linalg.matrix_rank(x)
    assert r.item() == 1 and not r.requires_grad and not r.dtype.is_floating
    with pytest.raises(RuntimeError, match="does not require grad"):
        r.backward()


def test_unsupported_gradients_are_clear_errors(xb):
    x = xad.tensor(np.arange(6.0).reshape(3, 2) ** 2, requires_grad=True)
    u = xad.linalg.svd(x).U  # full_matrices=True on a 3x2 matrix
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        u.sum().backward()
    q = xad.linalg.qr(x, mode="complete").Q
    with pytest.raises(NotImplementedError, match="linalg.qr backward"):
        q.sum().backward()
    z = xad.complex_from_parts(x[:2], x[:2] * 0.5).detach()  # a complex tangent: refused
    with pytest.raises(NotImplementedError, match="linalg.qr's tangent of complex"):
        xad.jvp(lambda a: xad.linalg.qr(a).R, (z,), (z,))
    with pytest.raises(ValueError, match=r"linalg\.det: needs .* got shape \(3, 2\)"):
        xad.linalg.det(x)


def test_namespace_reaches_linalg(xb):
    x = xad.tensor([[2.0, 0.0], [0.0, 4.0]])
    xp = x.__array_namespace__()
    assert xp.linalg is xad.linalg
    assert xp.linalg.solve(x, xad.tensor([2.0, 2.0])).tolist() == [1.0, 0.5]


@pytest.mark.parametrize("name, f, shapes", [
    ("matrix_exp", lambda a: xad.linalg.matrix_exp(a * 3.0), [(2, 3, 3)]),
    ("Tensor.matrix_exp", lambda a: (a * 0.2).matrix_exp(), [(4, 4)]),
    ("multi_dot", lambda a, b, c: xad.linalg.multi_dot([a, b, c]), [(3,), (3, 2), (2, 4)]),
])
def test_new_linalg_gradients_match_finite_differences(name, f, shapes, xb):
    """``matrix_exp`` (through its Padé approximant and squarings) and ``multi_dot``:
    first and second derivatives against central differences in float64."""
    rng = np.random.default_rng(3)
    xs = [xad.tensor(rng.standard_normal(s), dtype=xad.float64, requires_grad=True)
          for s in shapes]
    assert xad.gradcheck(f, xs) and xad.gradgradcheck(f, xs)


@pytest.mark.parametrize("scale", [1e-3, 0.5, 3.0, 40.0])
def test_matrix_exp_values_match_pytorch(scale, xb):
    """Against ``torch.linalg.matrix_exp`` in float64 and float32 (norms that need 0 to 7
    squarings), a nilpotent matrix (its finite series), a rotation generator, and an empty
    batch."""
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(int(scale * 10)).standard_normal((2, 4, 4)) * scale
    for dt, tol in ((xad.float64, 1e-12), (xad.float32, 2e-5)):
        want = torch.linalg.matrix_exp(torch.tensor(a, dtype=getattr(torch, dt.name)))
        got = xad.linalg.matrix_exp(xad.tensor(a, dtype=dt))
        assert got.dtype is dt
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol,
                                   atol=tol * float(np.abs(want.numpy()).max()))
    n = xad.tensor([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]], dtype=xad.float64)
    np.testing.assert_allclose(xad.linalg.matrix_exp(n).numpy(),
                               [[1.0, 1.0, 3.5], [0.0, 1.0, 3.0], [0.0, 0.0, 1.0]], atol=1e-15)
    r = xad.linalg.matrix_exp(xad.tensor([[0.0, -np.pi], [np.pi, 0.0]], dtype=xad.float64))
    np.testing.assert_allclose(r.numpy(), -np.eye(2), atol=1e-14)
    assert xad.linalg.matrix_exp(xad.zeros((0, 3, 3), dtype=xad.float64)).shape == (0, 3, 3)


def test_new_linalg_errors_name_the_call(xb):
    x = xad.ones((2, 3))
    with pytest.raises(ValueError, match=r"linalg\.matrix_exp: needs .* got shape \(2, 3\)"):
        xad.linalg.matrix_exp(x)
    with pytest.raises(TypeError, match=r"linalg\.matrix_exp: needs a floating"):
        xad.linalg.matrix_exp(xad.ones((2, 2), dtype=xad.int64))
    with pytest.raises(ValueError, match=r"multi_dot: needs at least 2 tensors, got 1"):
        xad.linalg.multi_dot([x])
    with pytest.raises(ValueError, match=r"multi_dot: tensor 1 must be 2-d, got shape \(3,\)"):
        xad.linalg.multi_dot([x, xad.ones(3), x])
    with pytest.raises(ValueError, match=r"tensors 0 and 1 of shapes \(2, 3\) and \(2, 3\)"):
        xad.linalg.multi_dot([x, x])
    with pytest.raises(TypeError, match=r"one dtype, got xad\.float32 .* xad\.float64"):
        xad.linalg.multi_dot([x, xad.ones((3, 2), dtype=xad.float64)])


def test_symmetric_decompositions_read_the_lower_triangle(xb):
    """``eigh``, ``eigvalsh`` and ``cholesky`` (``upper`` too) of a matrix whose upper
    triangle differs: LAPACK's numbers, from the lower triangle, on every backend (JAX's
    symmetrised the input, ``(x + x^T) / 2``: other eigenvalues and factors, no error)."""
    a = np.random.default_rng(5).standard_normal((2, 4, 4))
    s = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    s[..., 0, 2] += 0.9  # upper triangle only
    x = xad.tensor(s, dtype=xad.float64)
    np.testing.assert_allclose(xad.linalg.eigvalsh(x).numpy(), np.linalg.eigvalsh(s),
                               rtol=1e-12)
    w, v = xad.linalg.eigh(x)
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(s), rtol=1e-12)
    np.testing.assert_allclose(np.abs(v.numpy()), np.abs(np.linalg.eigh(s)[1]), atol=1e-12)
    low = np.linalg.cholesky(s)
    np.testing.assert_allclose(xad.linalg.cholesky(x).numpy(), low, atol=1e-12)
    np.testing.assert_allclose(xad.linalg.cholesky(x, upper=True).numpy(),
                               np.swapaxes(low, -1, -2), atol=1e-12)
