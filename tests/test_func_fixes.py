"""Defects the ``torch.func`` fuzzer (tests/test_func_torch_fuzz.py) found, each pinned
against ``torch.func`` (torch 2.13) in float64."""

from __future__ import annotations

import numpy as np
import pytest

import xad

torch = pytest.importorskip("torch")
tfunc = pytest.importorskip("torch.func")

XS = np.arange(12.0).reshape(3, 4) / 7 - 0.5
W = np.array([[0.3, -0.2, 0.5, 1.0], [0.1, 0.4, -0.6, 0.2], [-0.3, 0.8, 0.2, -0.1],
              [0.5, 0.1, 0.1, 0.7]])


def _np(t):
    return np.asarray(t.tolist()) if isinstance(t, xad.Tensor) else t.detach().numpy()


def _both(f, *arrays):
    return ([xad.tensor(a, dtype=xad.float64) for a in arrays],
            [torch.tensor(a, dtype=torch.float64) for a in arrays])


def test_detach_inside_vmap_keeps_the_logical_shape(xb):
    """``x.detach()`` of a batched tensor had the physical shape (batch axis included), so
    ``len``/``shape`` of it gave wrong numbers without an error."""
    def f(x):
        d = x.detach()
        return x * len(d) + d.reshape(d.shape[0], 1).sum(1)
    (x,), (t,) = _both(f, XS)
    np.testing.assert_allclose(_np(xad.vmap(f)(x)), tfunc.vmap(f)(t).numpy(), rtol=1e-12)


def test_linear_of_an_unbatched_input_with_a_batched_bias(xb):
    """The batch rule of ``linear`` took the product of an unbatched ``x`` as batched: with
    as many examples as rows of ``x`` it added example ``i``'s bias to row ``i``."""
    f = lambda b, x, w: xad.nn.functional.linear(x, w, b)  # noqa: E731
    g = lambda b, x, w: torch.nn.functional.linear(x, w, b)  # noqa: E731
    (b, x, w), (tb, tx, tw) = _both(None, XS[:, :4] * 2, XS, W)
    got = xad.vmap(f, in_axes=(0, None, None))(b, x, w)
    np.testing.assert_allclose(_np(got), tfunc.vmap(g, in_dims=(0, None, None))(tb, tx, tw)
                               .numpy(), rtol=1e-12)


def test_vmap_of_jacrev_and_of_vjp(xb):
    """``vmap(jacrev(f))`` raised: the unbatched cotangent rows did not match the batched
    output, and ``vjp``'s detached output lost its logical shape."""
    def f(lib):
        return lambda x, w: (w * x).sin().sum(1)
    (x, w), (tx, tw) = _both(None, XS, W[:3])
    got = xad.vmap(xad.jacrev(f(xad), argnums=1), in_axes=(0, None))(x, w)
    want = tfunc.vmap(tfunc.jacrev(f(torch), argnums=1), in_dims=(0, None))(tx, tw)
    np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-12)
    got = xad.vmap(lambda x: xad.vjp(xad.sin, x)[1](xad.ones(4, dtype=xad.float64))[0])(x)
    np.testing.assert_allclose(_np(got), np.cos(XS), rtol=1e-12)


def test_vmap_in_axes_per_leaf_of_a_nested_argument(xb):
    """``in_axes=(0, (None, {"b": 0}))`` (a prefix of the arguments, as ``torch.func``'s
    ``in_dims``) raised a TypeError."""
    def f(x, p):
        return x * p[1]["b"] + p[0].sum()
    (x, w, b), (tx, tw, tb) = _both(None, XS, W, XS.T[:, :3].T)
    got = xad.vmap(f, in_axes=(0, (None, {"b": 0})))(x, (w, {"b": b}))
    want = tfunc.vmap(f, in_dims=(0, (None, {"b": 0})))(tx, (tw, {"b": tb}))
    np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="do not match its structure"):
        xad.vmap(f, in_axes=(0, (None,)))(x, (w, {"b": b}))


def _tied_net(T):
    class Net(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = T.nn.Linear(3, 3), T.nn.Linear(3, 3)
            self.b.weight = self.a.weight
            self.register_buffer("scale", T.ones(3) * 2)

        def forward(self, x):
            return self.b(self.a(x)) * self.scale
    net = Net().double()
    with T.no_grad():
        for p in net.parameters():
            p[...] = 0.1
    return net


@pytest.mark.parametrize("name", ["a.weight", "b.weight"])
def test_functional_call_replaces_a_tied_weight_under_all_its_names(xb, name):
    """``functional_call`` replaced a tied weight under the given name only, so the other
    layer kept the old weight: a wrong number without an error (torch's ``tie_weights``)."""
    w, x = np.arange(9.0).reshape(3, 3) / 10, np.array([1.0, 2.0, 3.0])
    got = xad.nn.functional_call(_tied_net(xad), ({name: xad.tensor(w)}, {}),
                                 (xad.tensor(x),))
    want = tfunc.functional_call(_tied_net(torch), ({name: torch.tensor(w)}, {}),
                                 (torch.tensor(x),))
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)
    net, tnet = _tied_net(xad), _tied_net(torch)
    g = xad.grad(lambda p: xad.nn.functional_call(net, p, xad.tensor(x)).sum())(
        {name: xad.tensor(w)})
    tg = tfunc.grad(lambda p: tfunc.functional_call(tnet, p, torch.tensor(x)).sum())(
        {name: torch.tensor(w)})
    np.testing.assert_allclose(_np(g[name]), _np(tg[name]), rtol=1e-12)


def test_functional_call_strict_and_tie_errors(xb):
    net, w = _tied_net(xad), xad.tensor(np.eye(3))
    x = xad.tensor([1.0, 2.0, 3.0], dtype=xad.float64)
    with pytest.raises(RuntimeError, match=r"missing value\(s\) for \['a.bias', 'b.bias'"):
        xad.nn.functional_call(net, {"a.weight": w}, (x,), strict=True)
    with pytest.raises(ValueError, match="tied"):
        xad.nn.functional_call(net, {"a.weight": w, "b.weight": w * 2}, (x,))
    untied = xad.nn.functional_call(net, {"a.weight": w}, (x,), tie_weights=False)
    want = ((np.array([1.0, 2.0, 3.0]) + 0.1) @ np.full((3, 3), 0.1) + 0.1) * 2  # b kept 0.1
    np.testing.assert_allclose(_np(untied), want, rtol=1e-12)


def test_vmap_of_hessian_hvp_and_jvp_of_grad_match_torch(xb):
    """``vmap(hessian(f))`` (forward over reverse inside vmap) raised a reshape error;
    ``vmap`` of ``jvp(grad(f))`` gave an output with the batch axis twice, then raised
    NotImplementedError: the jvp's level now goes below the vmap levels."""
    f = lambda a, b: (a.sin() * b).sum() * a.sum()  # noqa: E731
    (x, y), (tx, ty) = _both(None, XS, XS * 2)
    got = xad.vmap(xad.hessian(f, argnums=(0, 1)))(x, y)
    want = tfunc.vmap(tfunc.hessian(f, argnums=(0, 1)))(tx, ty)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(_np(got[i][j]), _np(want[i][j]), rtol=1e-12)
    g = lambda a: (a.sin() * a.sum()).sum()  # noqa: E731
    got = xad.vmap(lambda v: xad.hvp(g, v, v.cos()))(x)
    want = tfunc.vmap(lambda v: tfunc.jvp(tfunc.grad(g), (v,), (v.cos(),))[1])(tx)
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)
    got, want = _jvp_between_vmaps(xad, xad.stack([x, y])), \
        _jvp_between_vmaps(tfunc, torch.stack([tx, ty]))
    for a, b in zip(got, want):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12)


def _jvp_between_vmaps(fn, m):
    inner = fn.vmap(fn.grad(lambda r: (r.sin() * r.sum()).sum()))  # a vmap between them
    return fn.vmap(lambda m: fn.jvp(inner, (m,), (m.cos(),)))(m)


def test_vmap_chunk_size_kwargs_and_out_axes_per_output(xb):
    """``chunk_size=``, keyword arguments (not mapped) and ``out_axes`` per output, as
    ``torch.func.vmap``'s; each raised a TypeError."""
    def f(x, k=1.0):
        return x.sin() * k, {"s": x.sum(0)}
    xs = np.arange(24.0).reshape(2, 3, 4) / 10
    (x,), (t,) = _both(None, xs)
    for chunk in (None, 1, 2, 5):
        got = xad.vmap(f, in_axes=-1, out_axes=(1, {"s": -1}), chunk_size=chunk)(x, k=2.0)
        want = tfunc.vmap(f, in_dims=-1, out_dims=(1, {"s": -1}), chunk_size=chunk)(t, k=2.0)
        np.testing.assert_allclose(_np(got[0]), _np(want[0]), rtol=1e-12)
        np.testing.assert_allclose(_np(got[1]["s"]), _np(want[1]["s"]), rtol=1e-12)
    with pytest.raises(ValueError, match="chunk_size must be a positive int"):
        xad.vmap(f, chunk_size=0)
    got = xad.jacrev(xad.sin, chunk_size=2)(x[0, 0])
    np.testing.assert_allclose(_np(got), np.diag(np.cos(xs[0, 0])), rtol=1e-12)


def test_torch_func_under_as_torch():
    """``import torch.func`` under ``xad.as_torch`` gives xad's transforms with PyTorch's
    signatures (it was missing)."""
    from xad import as_torch
    func = as_torch.namespace()["torch.func"]
    x = xad.tensor([1.0, 2.0], dtype=xad.float64)
    g, v = func.grad_and_value(lambda x: (x ** 3).sum())(x)
    assert g.tolist() == [3.0, 12.0] and v.item() == 9.0
    out, tan, aux = func.jvp(lambda x: (x.sin(), x.sum()), (x,), (x,), has_aux=True)
    np.testing.assert_allclose(_np(tan), np.cos([1.0, 2.0]) * [1.0, 2.0], rtol=1e-12)
    assert func.vmap(lambda r: r.sum(), in_dims=1)(xad.ones((2, 3))).tolist() == [2.0] * 3


def test_deliberate_differences_from_torch_func(xb):
    """docs/PORTING.md's rows: an unbatched output at ``out_axes=1`` is broadcast (as JAX;
    torch.func raises), an unknown ``functional_call`` name raises (torch ignores it)."""
    x, y = xad.tensor(XS[0, :3], dtype=xad.float64), xad.tensor(XS[:2], dtype=xad.float64)
    got = xad.vmap(lambda x, y: x * 2, in_axes=(None, 0), out_axes=1)(x, y)
    np.testing.assert_allclose(_np(got), np.repeat(XS[0, :3, None] * 2, 2, axis=1))
    with pytest.raises(RuntimeError):
        tfunc.vmap(lambda x, y: x * 2, in_dims=(None, 0), out_dims=1)(
            torch.tensor(XS[0, :3]), torch.tensor(XS[:2]))
    with pytest.raises(KeyError, match="no parameter or buffer named 'no_such'"):
        xad.nn.functional_call(xad.nn.Linear(2, 1), {"no_such": x}, (xad.ones(2),))


def test_vmap_chunks_share_the_draw_of_randomness_same(xb):
    """With ``randomness="same"`` every chunk draws what one unchunked call draws."""
    x = xad.ones((5, 4), dtype=xad.float64)
    f = lambda r: xad.nn.functional.dropout(r, 0.5, training=True) + xad.rand(4)  # noqa: E731
    xad.manual_seed(3)
    whole = _np(xad.vmap(f, randomness="same")(x))
    xad.manual_seed(3)
    chunked = _np(xad.vmap(f, randomness="same", chunk_size=2)(x))
    np.testing.assert_array_equal(chunked, whole)
    assert (whole == whole[0]).all()


@pytest.mark.parametrize("axes", [((0, 0), (0, 0)), ((0, None), (0, 0)), ((0, None), (None, 0)),
                                  ((None, 0), (None, 0))])
def test_vmap_of_vmap_of_grad(xb, axes):
    """``vmap(vmap(grad(f)))`` raised: the reverse pass ran one level down, not below both
    levels where the graph is recorded; per-example gradients of a shared argument are now
    per example at both levels."""
    inner, outer = axes
    g = lambda a, b: ((a * b).tanh() * b).sum()  # noqa: E731
    A, B = XS[:2, :3], np.arange(24.0).reshape(2, 3, 4)[..., 0] / 9 - 0.5
    args = [A[0, 0] if inner[0] is None and outer[0] is None else
            A[0] if outer[0] is None else A if inner[0] is not None else A[:, 0], B]
    (a, b), (ta, tb) = _both(None, *args)
    got = xad.vmap(xad.vmap(xad.grad(g, argnums=(0, 1)), in_axes=inner), in_axes=outer)(a, b)
    want = tfunc.vmap(tfunc.vmap(tfunc.grad(g, argnums=(0, 1)), in_dims=inner),
                      in_dims=outer)(ta, tb)
    for x, y in zip(got, want):
        np.testing.assert_allclose(_np(x), _np(y), rtol=1e-12)


@pytest.mark.parametrize("axis", [0, 2])
def test_argmax_argmin_any_all_inside_vmap(xb, axis):
    """``x.max(dim)`` (its indices), ``argmax``/``argmin``/``any``/``all`` had no batching
    rule (a MissingRuleError inside vmap)."""
    a = np.random.default_rng(0).uniform(-1, 1, (3, 4, 5))
    f = lambda r: (r.argmax(), r.argmin(dim=1), r.max(dim=-1).indices,  # noqa: E731
                   (r > 0.5).any(dim=1), (r > -0.9).all())
    got = xad.vmap(f, in_axes=axis)(xad.tensor(a))
    want = tfunc.vmap(f, in_dims=axis)(torch.tensor(a))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(_np(g), _np(w))


def test_gather_and_take_along_axis_inside_vmap(xb):
    """Their index range check read the per-example bounds as one pair: inside vmap it got
    a row per example and raised TypeError; an index out of range still raises there."""
    a = np.random.default_rng(1).uniform(-1, 1, (3, 4, 5))
    f = lambda r: (r.gather(1, r.argmax(dim=1, keepdim=True)),  # noqa: E731
                   r.gather(0, r.argmin(dim=0, keepdim=True)))
    for g, w in zip(xad.vmap(f)(xad.tensor(a)), tfunc.vmap(f)(torch.tensor(a))):
        np.testing.assert_array_equal(_np(g), _np(w))
    got = xad.vmap(lambda r: xad.take_along_axis(r, xad.argmax(r, axis=1, keepdims=True),
                                                 axis=1))(xad.tensor(a))
    np.testing.assert_array_equal(_np(got), a.max(axis=2, keepdims=True))
    bad = xad.tensor([[[0], [1]], [[0], [5]], [[1], [0]]])
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        xad.vmap(lambda r, i: r.gather(1, i))(xad.tensor(a[:, :2]), bad).tolist()  # (CuPy
        # reports a check at the next host read)
