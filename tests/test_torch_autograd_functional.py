"""``torch.autograd.functional`` (jacobian, hessian, vjp, jvp, hvp, vhp) and
``torch.autograd.Function`` (both forms, ``once_differentiable``) under ``xad.as_torch``,
against torch 2.13 in float64 on every backend (they were missing: a PyTorch program using
them stopped at an AttributeError)."""

from __future__ import annotations

import numpy as np
import pytest
from torch_compare import T, norm, same, torch

X = [1.0, 2.0, -0.5]
Y = [[0.5, 3.0], [1.0, -1.0]]
V3, V22 = [1.0, -2.0, 0.5], [[1.0, 0.0], [2.0, -1.0]]
TOLS = {"float64": 1e-12}

CASES = {
    "jacobian": "A.jacobian(lambda a: a.exp().cumsum(0), x)",
    "jacobian-tuples": "A.jacobian(lambda a, b: (a[:2] @ b, b.T.sum()), (x, y))",
    "jacobian-unused": "A.jacobian(lambda a, b: a * 2, (x, y))",  # zeros for b
    "jacobian-constant": "A.jacobian(lambda a: t.ones(2, dtype=t.float64), x)",
    "jacobian-scalar": "A.jacobian(lambda a: a * 2, s)",
    "vjp": "A.vjp(lambda a: t.stack([a.sum(), a.prod()]), x, t.tensor([1., 3.], dtype=t.float64))",
    "vjp-scalar-no-v": "A.vjp(lambda a: (a ** 3).sum(), x)",
    "jvp": "A.jvp(lambda a, b: (a[:2] * b.sum(0), b.det()), (x, y), (v3, v22))",
    "hessian": "A.hessian(lambda a: (a * a.flip(0)).sum() + a.exp().prod(), x)",
    "hessian-tuples": "A.hessian(lambda a, b: (a[:2] * b[0]).sum() * b.sum(), (x, y))",
    "hessian-linear": "A.hessian(lambda a: a.sum() * 0 + 2, x)",  # zeros: no second graph
    "hvp": "A.hvp(lambda a: a.norm() * a.sum(), x, v3)",
    "vhp-tuples": "A.vhp(lambda a, b: (a ** 2).sum() * b.sum(), (x, y), (v3, v22))",
}


def _run(t, expr):
    env = {"t": t, "A": t.autograd.functional,
           "x": t.tensor(X, dtype=t.float64), "y": t.tensor(Y, dtype=t.float64),
           "s": t.tensor(0.7, dtype=t.float64), "v3": t.tensor(V3, dtype=t.float64),
           "v22": t.tensor(V22, dtype=t.float64)}
    return norm(eval(expr, env))


@pytest.mark.parametrize("name", list(CASES))
def test_autograd_functional_matches_torch(xb, name):
    ours, theirs = _run(T, CASES[name]), _run(torch, CASES[name])
    assert same(ours, theirs, TOLS), (ours, theirs)


def test_autograd_functional_graph_and_errors(xb):
    w = {t: t.tensor(2.0, dtype=t.float64, requires_grad=True) for t in (T, torch)}
    out = {}
    for t in (T, torch):
        A, x = t.autograd.functional, t.tensor(X, dtype=t.float64, requires_grad=True)
        _, h = A.hvp(lambda a, w=w[t]: (a ** 3 * w).sum(), x, t.tensor(V3, dtype=t.float64),
                     create_graph=True)
        j = A.jacobian(lambda a: a * 2, x)
        out[t] = (t.autograd.grad(h.sum(), w[t])[0].item(), j.requires_grad, h.requires_grad)
    assert out[T] == pytest.approx(out[torch]) and out[T][1:] == (False, True)
    A, x = T.autograd.functional, T.tensor(X, dtype=T.float64)
    with pytest.raises(RuntimeError, match="jacobian: the output is independent of input 1"):
        A.jacobian(lambda a, b: a * 2, (x, x), strict=True)
    with pytest.raises(RuntimeError, match="vjp: v can be None only"):
        A.vjp(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match=r"jvp: entry 0 in v has invalid size: should be "
                                           r"\(3,\) but got \(2,\)"):
        A.jvp(lambda a: a * 2, x, T.ones(2, dtype=T.float64))
    with pytest.raises(RuntimeError, match="hessian: the function must return a single"):
        A.hessian(lambda a: a * 2, x)


def _functions(t):
    """A custom Function in each of PyTorch's forms, and one with a once-differentiable
    backward."""
    once = t.autograd.function.once_differentiable

    class Cube(t.autograd.Function):  # forward(ctx, ...)
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.k = k
            return x ** 3 * k

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * ctx.k * g, None

    class Sin(t.autograd.Function):  # forward without ctx, setup_context
        @staticmethod
        def forward(x):
            return x.sin()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            return ctx.saved_tensors[0].cos() * g

    class Square(t.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once
        def backward(ctx, g):
            return 2 * ctx.saved_tensors[0] * g
    return Cube, Sin, Square


def test_autograd_function_both_forms_match_torch(xb):
    got = {}
    for t in (T, torch):
        Cube, Sin, Square = _functions(t)
        x = t.tensor(X, dtype=t.float64, requires_grad=True)
        y = (Cube.apply(x, 2.0) * Sin.apply(x)).sum() + Square.apply(x).sum()
        (g,) = t.autograd.grad(y, x, create_graph=True)
        (h,) = t.autograd.grad((g * t.tensor(V3, dtype=t.float64)).sum(),
                               x, retain_graph=True)  # Square's backward saw no graph
        _, jv = t.autograd.functional.jvp(lambda a, C=Cube, S=Sin: C.apply(a, 2.0) + S.apply(a), x,
                                          t.tensor(V3, dtype=t.float64))
        got[t] = [np.asarray(r.detach().numpy()) for r in (g, h, jv)]
    for a, b in zip(got[T], got[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_once_differentiable_raises_where_torch_drops_a_term(xb):
    """A second derivative through a ``once_differentiable`` backward whose incoming
    gradient depends on the input: torch 2.13 returns the other terms only (here 6, not
    the 18 of d/dx (3 x^2)), as the error node sits off the path to ``x``; xad raises."""
    _, _, Square = _functions(T)
    x = T.tensor([3.0], dtype=T.float64, requires_grad=True)
    (g,) = T.autograd.grad((Square.apply(x) * x).sum(), x, create_graph=True)
    assert g.item() == 27.0
    with pytest.raises(RuntimeError, match="Square.backward: trying to differentiate twice"):
        T.autograd.grad(g.sum(), x)


def test_gradcheck_and_gradgradcheck_take_torch_keywords(xb):
    """``torch.autograd.gradcheck``/``gradgradcheck`` (they were missing under as_torch):
    the same verdicts as torch's, ``raise_exception=False`` as ``False``, the failure a
    ``RuntimeError`` (torch's ``GradcheckError`` is one)."""
    verdicts = {}
    for t in (T, torch):
        class Off(t.autograd.Function):  # a backward 10% off
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sin()

            @staticmethod
            def backward(ctx, g):
                return g * 1.1 * ctx.saved_tensors[0].cos()
        x = t.tensor([0.3, -1.2], dtype=t.float64, requires_grad=True)
        A = t.autograd
        verdicts[t] = (A.gradcheck(t.sin, (x,), fast_mode=True, check_forward_ad=False),
                       A.gradcheck(Off.apply, (x,), raise_exception=False),
                       A.gradgradcheck(lambda a: a.sin() * a, (x,)),
                       A.gradgradcheck(Off.apply, (x,), raise_exception=False))
        with pytest.raises(RuntimeError):
            A.gradcheck(Off.apply, (x,))
    # the second derivative of a wrong first is consistent with it: both pass that one
    assert verdicts[T] == verdicts[torch] == (True, False, True, True)
    with pytest.raises(TypeError, match="gradcheck.*'check_everything'"):
        T.autograd.gradcheck(T.sin, (T.ones(2, dtype=T.float64, requires_grad=True),),
                             check_everything=True)
