"""Every operation in the table: forward against NumPy, gradcheck and gradgradcheck in
float64, on every backend; and the table covers every differentiable primitive."""

from __future__ import annotations

import numpy as np
import pytest
from op_table import CASES, Case, N, X, make_inputs

import xad
from xad import autograd as ag


def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_forward_gradcheck_gradgradcheck(case: Case, xb):
    host = make_inputs(case)
    ts = [xad.tensor(a, dtype=xad.float64, requires_grad=True) for a in host]
    outs = _as_list(case.fn(X, *ts))
    expected = _as_list(case.fn(N, *[a.copy() for a in host]))
    assert len(outs) == len(expected)
    for o, e in zip(outs, expected):
        assert isinstance(o, xad.Tensor) and o.backend is xb
        assert isinstance(o._array, xb.array_type), f"result is {type(o._array)}, not an array"
        assert o.dtype == xad.float64, f"{case.name}: float64 became {o.dtype}"
        assert o.shape == np.shape(e), f"{case.name}: shape {o.shape}, numpy {np.shape(e)}"
        np.testing.assert_allclose(o.numpy(), e, rtol=1e-7, atol=1e-9, err_msg=case.name)

    def f(*xs):
        return case.fn(X, *xs)

    assert xad.gradcheck(f, ts, **case.tol)
    if case.order >= 2:
        assert xad.gradgradcheck(f, ts, **case.tol)


def _graph_names(outs) -> set[str]:
    """Names of every node reachable from ``outs``."""
    seen, stack = set(), [o._node for o in outs if o._node is not None]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(e[0] for e in n.edges if type(e) is tuple)
    return {n.name for n in seen}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_exercises_its_primitives(case: Case):
    """The primitives a case names really are in its graph or its gradient's graph."""
    with xad.use_backend("numpy"):
        ts = [xad.tensor(a, dtype=xad.float64, requires_grad=True) for a in make_inputs(case)]
        outs = [o for o in _as_list(case.fn(X, *ts)) if o.requires_grad]
        names = _graph_names(outs)
        s = sum((o * o).sum() for o in outs)
        gs = ag.grad(s, ts, create_graph=True, allow_unused=True)
        names |= _graph_names([g for g in gs if g is not None and g._node is not None])
    missing = set(case.primitives) - names
    assert not missing, f"{case.name}: {sorted(missing)} not found in its graph ({names})"


def test_every_differentiable_primitive_has_a_case():
    covered = {p for c in CASES for p in c.primitives}
    missing = sorted(n for n, op in xad.ops.REGISTRY.items()
                     if op.differentiable and n not in covered)
    assert not missing, f"primitives without an entry in tests/op_table.py: {missing}"


def test_case_names_are_unique():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))


# ----- behaviour at the points the table stays away from ------------------------------------
def test_max_ties_share_the_gradient(xb):
    x = xad.tensor([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]], requires_grad=True)
    x.max(axis=1).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.5, 0.5], [0.5, 0.0, 0.5]]
    y = xad.tensor([2.0, 2.0, 2.0, 2.0], requires_grad=True)
    y.min().backward()
    assert y.grad.tolist() == [0.25] * 4


def test_maximum_ties_and_kinks(xb):
    x = xad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = xad.tensor([2.0, 2.0, 2.0], requires_grad=True)
    xad.maximum(x, y).sum().backward()
    assert x.grad.tolist() == [0.0, 0.5, 1.0] and y.grad.tolist() == [1.0, 0.5, 0.0]
    z = xad.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    (xad.relu(z) + xad.abs(z)).sum().backward()
    assert z.grad.tolist() == [-1.0, 0.0, 2.0]  # relu' = 0 and sign = 0 at 0


def test_repeated_indices_accumulate(xb):
    x = xad.arange(4.0, requires_grad=True)
    x[[0, 0, 3]].sum().backward()
    assert x.grad.tolist() == [2.0, 0.0, 0.0, 1.0]
    w = xad.zeros(3, 2, requires_grad=True)
    idx = xad.tensor([2, 2, 2, 0])
    (w[idx] * 1.0).sum().backward()
    assert w.grad.tolist() == [[1.0, 1.0], [0.0, 0.0], [3.0, 3.0]]


def test_clip_gradient_at_bounds(xb):
    """``xad.clip`` shares the gradient at a bound as JAX's ``clip``; ``x.clamp`` passes it
    all, as PyTorch's (tests/test_grad_conventions.py checks both against the libraries)."""
    x = xad.tensor([-2.0, -1.0, 0.0, 1.0, 2.0], requires_grad=True)
    xad.clip(x, -1.0, 1.0).sum().backward()
    assert x.grad.tolist() == [0.0, 0.5, 1.0, 0.5, 0.0]
    x.grad = None
    x.clamp(-1.0, 1.0).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]


def test_comparisons_carry_no_gradient(xb):
    x = xad.tensor([1.0, -1.0], requires_grad=True)
    for r in (x > 0, x == 1.0, x != x, x <= 0.5, xad.sign(x), xad.isfinite(x)):
        assert not r.requires_grad and r._node is None
    assert (x > 0).dtype == xad.bool


# where a Python scalar or a constant meets a tensor (the weak-scalar rule at work)
_F32_CASES = ["add:scalar", "subtract:rscalar", "multiply:int", "divide:rscalar",
              "pow:rscalar", "pow_scalar:half", "pow_scalar:square", "gelu", "gelu:tanh",
              "sigmoid", "softplus", "erf",
              "relu", "maximum:scalar", "where:scalar", "clip", "mean:axis=1,keepdims=False",
              "var:correction=1", "std:correction=0", "logsumexp:axis=None,keepdims=False",
              "softmax", "log_softmax", "einsum:ii->i", "getitem:int_list_repeats",
              "index_put:slice", "function:cube", "mlp"]


def test_float32_ops_stay_float32(xb):
    """float32 stays float32 through forward and backward, Python scalars included."""
    by_name = {c.name: c for c in CASES}
    for case in (by_name[n] for n in _F32_CASES):
        ts = [xad.tensor(a, dtype=xad.float32, requires_grad=True) for a in make_inputs(case)]
        outs = _as_list(case.fn(X, *ts))
        for o in outs:
            assert o.dtype == xad.float32, f"{case.name}: float32 became {o.dtype}"
        s = sum(o.sum() for o in outs)
        s.backward()
        for t in ts:
            assert t.grad.dtype == xad.float32, f"{case.name}: grad is {t.grad.dtype}"


# ----- gradcheck itself -------------------------------------------------------------------
class _WrongSquare(xad.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x  # should be 2 * g * x


def test_gradcheck_reports_where_gradients_differ(xb):
    x = xad.tensor([1.0, 2.0, 3.0], dtype=xad.float64, requires_grad=True)
    with pytest.raises(xad.GradcheckError) as e:
        xad.gradcheck(_WrongSquare.apply, [x])
    msg = str(e.value)
    assert "output 0" in msg and "input 0" in msg and "3 of 9 entries" in msg
    assert "analytic 2" in msg and "numerical 4" in msg  # d out[1] / d in[1]


def test_gradcheck_passes_integer_only_outputs_as_pytorch(xb):
    # no floating output: no derivative to compare (it raised a TypeError on None - None)
    x = xad.tensor([0.3, -1.2], dtype=xad.float64, requires_grad=True)
    assert xad.gradcheck(lambda t: xad.argmax(t), [x])


def test_gradgradcheck_names_a_function_without_floating_output(xb):
    # PyTorch's gradgradcheck raises a TypeError from its own wrapper here; xad says why
    # (it raised "'NoneType' object is not iterable")
    x = xad.tensor([0.3, -1.2], dtype=xad.float64, requires_grad=True)

    def positions(t):
        return xad.argmax(t), t > 0

    with pytest.raises(ValueError, match=r"gradgradcheck: positions has no floating-point "
                       r"output \(it returned int64 \(\), bool \(2,\)\)"):
        xad.gradgradcheck(positions, [x])
    assert xad.gradgradcheck(lambda t: (xad.argmax(t), t * t * t), [x])  # one floating: fine
    for check in (xad.gradcheck, xad.gradgradcheck):  # no tensor at all: IndexError before
        with pytest.raises(ValueError, match=rf"{check.__name__}: three returned no tensor"):
            check(three, [x])


def three(t):
    return 3.0


def test_gradcheck_warns_below_float64(xb):
    x = xad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="float64"):
        xad.gradcheck(lambda t: t * 2.0, [x], eps=1e-2, atol=1e-2)
    with pytest.raises(ValueError, match="requires grad"):
        xad.gradcheck(lambda t: t * 2.0, [xad.ones(2)])


@pytest.mark.parametrize("shape,key", [
    ((3, 4), (slice(None), [1, 1, 3])), ((3, 4), ([0, 2], slice(1, 3))),
    ((3, 4), (Ellipsis, [0, 0])), ((3, 4, 3), ([0, 2], None, [1, 3])),
    ((3, 4, 3), (1, slice(None), [0, 2])), ((3, 4), ([[0], [2]], [1, 3])),
    ((3, 4), (np.array([True, False, True]), 2)),
    ((3, 4), (slice(None), np.array([True, False, True, True]))),
    ((3, 4), (None, [2, 0])), ((3, 4), ([-1, 0], [-2, 1]))])
def test_mixed_advanced_keys_follow_numpy(shape, key, xb):
    """Keys beyond the standard's (array_api_strict goes by flat positions) as NumPy does."""
    a = np.arange(float(np.prod(shape))).reshape(shape)
    x = xad.tensor(a, dtype=xad.float64, requires_grad=True)
    y = x[key]
    np.testing.assert_array_equal(y.numpy(), a[key])
    g = np.random.default_rng(0).standard_normal(a[key].shape)
    y.backward(xad.tensor(g, dtype=xad.float64))
    expected = np.zeros_like(a)
    np.add.at(expected, key, g)
    np.testing.assert_allclose(x.grad.numpy(), expected)
    with xad.no_grad():
        z = xad.tensor(a, dtype=xad.float64)
        z[key] = 0.5
        e = a.copy()
        e[key] = 0.5
        np.testing.assert_array_equal(z.numpy(), e)
