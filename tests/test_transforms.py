"""The function transforms (xad.transforms) on every backend: closed forms, finite differences,
nested structures, composition, errors, and that higher order leaks nothing."""

import collections
import gc
import math

import numpy as np
import pytest

import xad
from xad.autograd import Node

F64 = xad.float64


def host(t):
    return t.numpy() if isinstance(t, xad.Tensor) else np.asarray(t, dtype=np.float64)


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(host(a), host(b), rtol=tol, atol=tol)


def vec(*vals):
    return xad.tensor(list(vals), dtype=F64)


def fd_grad(f, x, eps=1e-6):
    """Central differences of a scalar f, one coordinate at a time (host values)."""
    basis = xad.eye(x.size, dtype=F64)
    out = []
    with xad.no_grad():
        for i in range(x.size):
            e = basis[i, :].reshape(x.shape)
            out.append((f(x + eps * e) - f(x - eps * e)).item() / (2 * eps))
    return np.array(out).reshape(x.shape)


def elementwise(f):
    """x -> f'(x) elementwise, through grad of the sum."""
    return xad.grad(lambda y: f(y).sum())


# ----- grad and value_and_grad ----------------------------------------------------------------
@pytest.mark.parametrize("name", ["sin", "exp", "tanh", "cube"])
def test_grad_closed_form_and_third_derivative(xb, name):
    x = vec(-1.3, -0.2, 0.4, 1.1)
    f, d1, d3 = {
        "sin": (xad.sin, lambda x: xad.cos(x), lambda x: -xad.cos(x)),
        "exp": (xad.exp, xad.exp, xad.exp),
        "tanh": (xad.tanh, lambda x: 1 - xad.tanh(x) ** 2,
                 lambda x: -2 * (1 - xad.tanh(x) ** 2) * (1 - 3 * xad.tanh(x) ** 2)),
        "cube": (lambda x: x ** 3, lambda x: 3 * x ** 2, lambda x: xad.full_like(x, 6.0)),
    }[name]
    close(elementwise(f)(x), d1(x), 1e-13)
    third = elementwise(lambda y: elementwise(lambda z: elementwise(f)(z))(y))
    close(third(x), d3(x), 1e-12)
    # scalar composition: grad(grad(grad(f)))
    x0 = xad.tensor(0.7, dtype=F64)
    close(xad.grad(xad.grad(xad.grad(f)))(x0), d3(x0), 1e-12)


def test_grad_matches_finite_differences(xb):
    A = xad.tensor([[1.0, 0.5, -0.2], [0.3, -1.0, 0.8]], dtype=F64)

    def f(x):
        return (xad.tanh(A @ x) ** 2).sum() + xad.exp(x).prod()

    x = vec(0.3, -0.4, 0.9)
    close(xad.grad(f)(x), fd_grad(f, x), 1e-7)


def test_value_and_grad_aux_and_argnums(xb):
    x, y = vec(1.0, 2.0), vec(3.0, -1.0)

    def f(a, b, scale):
        return scale * (a * b).sum(), {"prod": a * b}

    (v, aux), (ga, gb) = xad.value_and_grad(f, argnums=(0, 1), has_aux=True)(x, y, 2.0)
    close(v, 2.0)
    close(ga, 2 * host(y))
    close(gb, 2 * host(x))
    close(aux["prod"], host(x) * host(y))
    assert not v.requires_grad and not aux["prod"].requires_grad
    g, aux = xad.grad(f, argnums=-2, has_aux=True)(x, y, 2.0)
    close(g, 2 * host(x))
    assert x.grad is None


def test_nested_structures_preserved(xb):
    Point = collections.namedtuple("Point", "u v")
    params = {"layer": [vec(1.0, 2.0), (vec(3.0),)], "p": Point(vec(0.5), vec(-1.0)),
              "none": None}

    def f(p):
        a, (b,) = p["layer"]
        return (a * a).sum() + (b ** 3).sum() + (p["p"].u * p["p"].v).sum()

    g = xad.grad(f)(params)
    assert set(g) == {"layer", "p", "none"} and g["none"] is None
    assert isinstance(g["layer"], list) and isinstance(g["layer"][1], tuple)
    assert isinstance(g["p"], Point)
    close(g["layer"][0], [2.0, 4.0])
    close(g["layer"][1][0], [27.0])
    close(g["p"].u, [-1.0])
    close(g["p"].v, [0.5])


def test_grad_unused_input_is_zero_and_inputs_untouched(xb):
    x = xad.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    g = xad.grad(lambda a, b: (a * 2).sum(), argnums=1)(x, vec(5.0))
    close(g, [0.0])
    g = xad.grad(lambda a: (a * a).sum())(x)
    assert x.grad is None
    close(g, [2.0, 4.0])
    # x requires grad and recording is on: the gradient stays connected to x
    assert g.requires_grad
    close(xad.autograd.grad(g.sum(), [x])[0], [2.0, 2.0])
    g = xad.grad(lambda a: (a * a).sum())(x.detach())
    assert not g.requires_grad and g.grad_fn is None


def test_grad_under_no_grad(xb):
    with xad.no_grad():
        g = xad.grad(lambda a: (a ** 3).sum())(vec(2.0))
    close(g, [12.0])
    assert not g.requires_grad


def test_closed_over_parameter_stays_differentiable(xb):
    w = xad.tensor([2.0, -1.0], dtype=F64, requires_grad=True)
    x = vec(0.5, 3.0)
    g = xad.grad(lambda a: (w * a ** 2).sum())(x)  # 2 w x
    assert g.requires_grad
    close(g, 2 * host(w) * host(x))
    gw, = xad.autograd.grad(g.sum(), [w])
    close(gw, 2 * host(x))


def test_no_perturbation_confusion(xb):
    # d/dx [x * (d/dy x*y at y=x)] = d/dx x^2 = 2x  (a naive tape gives 4x... or 3x)
    f = xad.grad(lambda x: x * xad.grad(lambda y: x * y)(x))
    close(f(xad.tensor(3.0, dtype=F64)), 6.0)


def test_grad_of_grad_and_jacobian_of_grad(xb):
    A = xad.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=F64)

    def f(x):
        return 0.5 * (x * (A @ x)).sum() + (x ** 3).sum()

    x = vec(0.4, -0.7)
    H = host(A) + np.diag(6 * host(x))
    close(xad.jacobian(xad.grad(f))(x), H, 1e-12)
    close(xad.jacobian(xad.grad(f), mode="fwd")(x), H, 1e-12)
    close(xad.hessian(f)(x), H, 1e-12)
    # grad(grad(.)) of a scalar function of a scalar
    t0 = xad.tensor(0.3, dtype=F64)
    c = float(host(t0))  # the value actually held
    close(xad.grad(xad.grad(lambda t: t * xad.sin(t)))(t0),
          2 * math.cos(c) - c * math.sin(c), 1e-12)


# ----- vjp, jvp ---------------------------------------------------------------------------------
def test_vjp_linear_and_reusable(xb):
    A = xad.tensor([[1.0, 2.0, 0.0], [0.0, -1.0, 3.0]], dtype=F64)
    x = vec(1.0, 1.0, 2.0)
    y, vjp_fn = xad.vjp(lambda v: A @ v, x)
    close(y, host(A) @ host(x))
    for u in ([1.0, 0.0], [0.5, -2.0]):
        res = vjp_fn(vec(*u))
        assert isinstance(res, tuple) and len(res) == 1
        close(res[0], host(A).T @ np.array(u))


def test_vjp_structures_and_aux(xb):
    def f(p, s):
        return {"a": p[0] * s, "b": (p[1] ** 2).sum()}, "aux"

    p = [vec(1.0, 2.0), vec(3.0)]
    out, vjp_fn, aux = xad.vjp(f, p, vec(2.0, 2.0), has_aux=True)
    assert aux == "aux" and set(out) == {"a", "b"}
    gp, gs = vjp_fn({"a": vec(1.0, 1.0), "b": xad.tensor(1.0, dtype=F64)})
    assert isinstance(gp, list)
    close(gp[0], [2.0, 2.0])
    close(gp[1], [6.0])
    close(gs, [1.0, 2.0])


def test_jvp_closed_form_and_finite_differences(xb):
    A = xad.tensor([[1.0, 0.5, -0.2], [0.3, -1.0, 0.8]], dtype=F64)

    def f(x):
        return xad.tanh(A @ x) * xad.sin(x[:2])

    x, t = vec(0.3, -0.4, 0.9), vec(1.0, -2.0, 0.5)
    y, ty = xad.jvp(f, (x,), (t,))
    close(y, f(x))
    eps = 1e-6
    with xad.no_grad():
        fd = (f(x + eps * t) - f(x - eps * t)) / (2 * eps)
    close(ty, fd, 1e-7)
    y, ty = xad.jvp(xad.sin, x, t)  # a lone tensor is a 1-tuple
    close(ty, np.cos(host(x)) * host(t))


def test_jvp_nested_primals(xb):
    def f(p):
        return p["w"] * p["b"][0]

    p = {"w": vec(1.0, 2.0), "b": (vec(3.0),)}
    t = {"w": vec(1.0, 0.0), "b": (vec(1.0),)}
    _, ty = xad.jvp(f, (p,), (t,))
    close(ty, [3.0 + 1.0, 0.0 + 2.0])


def test_jvp_of_constant_output(xb):
    y, ty = xad.jvp(lambda x: xad.ones(2, dtype=F64), (vec(1.0),), (vec(1.0),))
    close(ty, [0.0, 0.0])


# ----- jacobian, hessian, hvp -------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_jacobian_shapes_and_values(xb, mode):
    W = xad.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]], dtype=F64)

    def f(M, v):
        return xad.tanh(M @ v)

    v = vec(0.1, 0.2, -0.3)
    JM, Jv = xad.jacobian(f, argnums=(0, 1), mode=mode)(W, v)
    assert JM.shape == (2, 2, 3) and Jv.shape == (2, 3)
    s = 1 - np.tanh(host(W) @ host(v)) ** 2
    close(Jv, s[:, None] * host(W))
    expect = np.zeros((2, 2, 3))
    for i in range(2):
        expect[i, i, :] = s[i] * host(v)
    close(JM, expect)
    J = xad.jacobian(lambda M: (M * M).sum(axis=0), mode=mode)(W)  # (3,) from (2, 3)
    assert J.shape == (3, 2, 3)


def test_jacobian_pytree_output_and_modes_agree(xb):
    def f(x):
        return {"sq": x * x, "s": xad.sin(x).sum()}

    x = vec(0.2, -0.5, 1.0)
    Jr = xad.jacobian(f)(x)
    Jf = xad.jacobian(f, mode="fwd")(x)
    close(Jr["sq"], np.diag(2 * host(x)))
    close(Jr["s"], np.cos(host(x)))
    close(Jf["sq"], Jr["sq"])
    close(Jf["s"], Jr["s"])


def test_hessian_matches_finite_differences(xb):
    def f(x):
        return xad.exp(x[0] * x[1]) + (x ** 4).sum() * 0.1

    x = vec(0.3, -0.6)
    H = xad.hessian(f)(x)
    gf = xad.grad(f)
    fd = np.stack([fd_grad(lambda y, i=i: gf(y)[i], x) for i in range(2)])
    close(H, fd, 1e-6)
    assert H.shape == (2, 2)


def test_hessian_tuple_argnums(xb):
    def f(a, b):
        return (a * a * b).sum()

    a, b = vec(1.0, 2.0), vec(3.0, 4.0)
    H = xad.hessian(f, argnums=(0, 1))(a, b)
    close(H[0][0], np.diag(2 * host(b)))
    close(H[0][1], np.diag(2 * host(a)))
    close(H[1][0], np.diag(2 * host(a)))
    close(H[1][1], np.zeros((2, 2)))


def test_hvp(xb):
    A = xad.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=F64)

    def f(x):
        return 0.5 * (x * (A @ x)).sum() + (x ** 3).sum()

    x, v = vec(0.4, -0.7), vec(1.0, 2.0)
    H = host(A) + np.diag(6 * host(x))
    hv = xad.hvp(f, x, v)
    assert isinstance(hv, xad.Tensor)
    close(hv, H @ host(v), 1e-12)
    (hv1,) = xad.hvp(f, (x,), (v,))
    close(hv1, hv)
    # structure of primals, two arguments
    hu, hw = xad.hvp(lambda u, w: (u * u * w).sum(), (vec(1.0), vec(3.0)),
                     (vec(1.0), vec(0.0)))
    close(hu, [6.0])
    close(hw, [2.0])
    close(xad.hvp(lambda x: x.sum(), x, v), [0.0, 0.0])  # linear: H = 0


# ----- errors -------------------------------------------------------------------------------------
def test_errors(xb):
    x = vec(1.0, 2.0)
    with pytest.raises(ValueError, match=r"scalar.*shape \(2,\)"):
        xad.grad(lambda a: a * 2)(x)
    with pytest.raises(TypeError, match="scalar tensor"):
        xad.grad(lambda a: 3.0)(x)
    with pytest.raises(ValueError, match="argnums=2.*2 positional"):
        xad.grad(lambda a, b: (a * b).sum(), argnums=2)(x, x)
    with pytest.raises(TypeError, match="argnums must be"):
        xad.grad(lambda a: a.sum(), argnums="0")(x)
    with pytest.raises(ValueError, match="twice"):
        xad.grad(lambda a: a.sum(), argnums=(0, -1))(x)
    with pytest.raises(TypeError, match="floating"):
        xad.grad(lambda a: a.sum())(xad.tensor([1, 2]))
    with pytest.raises(TypeError, match="str"):
        xad.grad(lambda a: a[0].sum())([x, "no"])
    with pytest.raises(ValueError, match=r"shape \(3,\).*shape \(2,\)"):
        xad.jvp(xad.sin, (x,), (vec(1.0, 2.0, 3.0),))
    with pytest.raises(ValueError, match="structure"):
        xad.jvp(lambda p: p[0], ([x],), ([x, x],))
    with pytest.raises(ValueError, match="one entry per primal"):
        xad.jvp(lambda a, b: a * b, (x, x), (x,))
    with pytest.raises(ValueError, match=r"shape \(1,\)"):
        xad.hvp(lambda a: a.sum(), x, vec(1.0))
    _, vjp_fn = xad.vjp(xad.sin, x)
    with pytest.raises(ValueError, match="cotangents"):
        vjp_fn(vec(1.0))
    with pytest.raises(ValueError, match="mode"):
        xad.jacobian(xad.sin, mode="forward")
    with pytest.raises(TypeError, match="pair"):
        xad.grad(lambda a: a.sum(), has_aux=True)(x)


# ----- memory -----------------------------------------------------------------------------------
def _live_nodes():
    return sum(1 for o in gc.get_objects() if type(o) is Node)


def test_grad_of_grad_in_a_loop_frees_everything():
    """The transforms make no reference cycle: with the cyclic collector off, repeated
    grad(grad(f)) leaves no node alive. The documented contrast: backward(create_graph=True)
    stores a gradient whose graph refers back to the leaf, a cycle that stays."""
    d2 = xad.grad(xad.grad(lambda t: xad.sin(t) * t ** 3))
    x = xad.tensor(0.5, dtype=F64)
    d2(x)
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        before = _live_nodes()
        for _ in range(30):
            r = d2(x)
        del r
        after = _live_nodes()
        assert after - before <= 0, f"{after - before} nodes leaked"
        w = xad.tensor(0.5, dtype=F64, requires_grad=True)
        for _ in range(5):
            (w ** 3).backward(create_graph=True)
        assert _live_nodes() - after >= 5  # the cycle: w.grad -> node -> w
        w.grad = None
    finally:
        if enabled:
            gc.enable()
        gc.collect()


def test_higher_order_example_runs():
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
    import higher_order
    r = higher_order.main([])
    assert r["n_params"] == 1000
    assert r["hessian_vs_jacobian_grad"] < 1e-12 and r["hessian_vs_fd"] < 1e-7
    assert r["hvp_vs_fd"] < 1e-6 and r["hvp_symmetry"] < 1e-10
