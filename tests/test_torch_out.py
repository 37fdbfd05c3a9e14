"""PyTorch's ``out=`` under ``xad.as_torch`` (xad/torch_out.py) against torch 2.13: the
value written, the object returned, the resizing of an empty or mis-shaped ``out`` (with
PyTorch's warning), a view of a larger buffer as ``out``, functions of several results,
factories taking ``out``'s dtype, and the refusals (a gradient to record, a dtype other
than the result's). Also ``Tensor.resize_``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from torch_compare import T, norm, same, torch

_RNG = np.random.default_rng(0)
A = _RNG.standard_normal((3, 4))
B = _RNG.standard_normal((3, 4))
SQUARE = _RNG.standard_normal((3, 3)) + 3 * np.eye(3)

CASES = {
    "exp": lambda m, a, b, **o: m.exp(a, **o),
    "abs": lambda m, a, b, **o: m.abs(a, **o),
    "tanh": lambda m, a, b, **o: m.tanh(a, **o),
    "add": lambda m, a, b, **o: m.add(a, b, **o),
    "add_alpha": lambda m, a, b, **o: m.add(a, b, alpha=2, **o),
    "sub": lambda m, a, b, **o: m.sub(a, b, **o),
    "mul_scalar": lambda m, a, b, **o: m.mul(a, 0.5, **o),
    "div": lambda m, a, b, **o: m.div(a, b, **o),
    "pow": lambda m, a, b, **o: m.pow(a, 2, **o),
    "maximum": lambda m, a, b, **o: m.maximum(a, b, **o),
    "atan2": lambda m, a, b, **o: m.atan2(a, b, **o),
    "remainder": lambda m, a, b, **o: m.remainder(a, b, **o),
    "gt": lambda m, a, b, **o: m.gt(a, b, **o),
    "where": lambda m, a, b, **o: m.where(a > 0, a, b, **o),
    "clamp": lambda m, a, b, **o: m.clamp(a, -0.5, 0.5, **o),
    "sum_dim": lambda m, a, b, **o: m.sum(a, 1, **o),
    "mean_dim": lambda m, a, b, **o: m.mean(a, 0, **o),
    "prod_dim": lambda m, a, b, **o: m.prod(a, 1, **o),
    "amax": lambda m, a, b, **o: m.amax(a, 1, **o),
    "argmax": lambda m, a, b, **o: m.argmax(a, 1, **o),
    "logsumexp": lambda m, a, b, **o: m.logsumexp(a, 1, **o),
    "cumsum": lambda m, a, b, **o: m.cumsum(a, 1, **o),
    "std": lambda m, a, b, **o: m.std(a, 1, **o),
    "max_dim": lambda m, a, b, **o: m.max(a, 1, **o),
    "min_dim": lambda m, a, b, **o: m.min(a, 0, **o),
    "sort": lambda m, a, b, **o: m.sort(a, 1, **o),
    "topk": lambda m, a, b, **o: m.topk(a, 2, **o),
    "cat": lambda m, a, b, **o: m.cat([a, b], 0, **o),
    "stack": lambda m, a, b, **o: m.stack([a, b], **o),
    "matmul": lambda m, a, b, **o: m.matmul(a, b.T, **o),
    "mm": lambda m, a, b, **o: m.mm(a.T, b, **o),
    "zeros": lambda m, a, b, **o: m.zeros(2, 3, **o),
    "arange": lambda m, a, b, **o: m.arange(5, **o),
    "linspace": lambda m, a, b, **o: m.linspace(0, 1, 5, **o),
    "full": lambda m, a, b, **o: m.full((2, 3), 1.5, **o),
    "eye": lambda m, a, b, **o: m.eye(3, **o),
    "vector_norm": lambda m, a, b, **o: m.linalg.vector_norm(a, dim=1, **o),
    "inv": lambda m, a, b, **o: m.linalg.inv(m.tensor(SQUARE), **o),
    "erf": lambda m, a, b, **o: m.special.erf(a, **o),
}
LAYOUTS = ("exact", "empty", "resized", "view")


def _outs(m, like, layout: str):
    """``out`` for a result like ``like`` (a tensor or a tuple of them), and the buffers to
    compare afterwards."""
    if isinstance(like, (tuple, list)):
        pairs = [_outs(m, r, layout) for r in like]
        return tuple(p[0] for p in pairs), [b for p in pairs for b in p[1]]
    shape, dtype = tuple(like.shape), like.dtype
    if layout == "exact":
        o = m.ones(shape, dtype=dtype)
        return o, [o]
    if layout == "empty":
        o = m.empty(0, dtype=dtype)
        return o, [o]
    if layout == "resized":
        o = m.zeros(7, dtype=dtype)
        return o, [o]
    buf = m.zeros((2, *shape), dtype=dtype)
    return buf[1], [buf]


def _run(m, name: str, layout: str):
    a, b = m.tensor(A), m.tensor(B)
    f = CASES[name]
    out, bufs = _outs(m, f(m, a, b), layout)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ret = f(m, a, b, out=out)
    rets = tuple(ret) if isinstance(ret, (tuple, list)) else (ret,)
    outs = out if isinstance(out, tuple) else (out,)
    identical = all(r is o for r, o in zip(rets, outs))
    resized = any("resized" in str(w.message) for w in caught)
    return identical, resized, norm(list(bufs))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_out_writes_what_pytorch_writes(xb, name, layout):
    want = _run(torch, name, layout)
    got = _run(T, name, layout)
    assert got[:2] == want[:2], (name, layout, got[:2], want[:2])
    assert same(got[2], want[2], {"float64": 1e-12, "float32": 1e-6}), (name, layout)


def test_out_may_be_an_input(xb):
    want, got = torch.tensor(A), T.tensor(A)
    for m, a in ((torch, want), (T, got)):
        m.add(a, a, out=a)
        m.mul(a, a[0].clone(), out=a)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_out_refuses_a_gradient_to_record_as_pytorch(xb):
    for m in (torch, T):
        x = m.tensor(A, requires_grad=True)
        for kw in ({"out": m.empty(3, 4, dtype=m.float64)},):
            with pytest.raises(RuntimeError, match="out=.*automatic differentiation"):
                m.mul(x, 2, **kw)
        leaf = m.zeros(3, 4, dtype=m.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match="out=.*automatic differentiation"):
            m.mul(m.tensor(A), 2, out=leaf)
        with m.no_grad():  # allowed there, as PyTorch's
            m.mul(x, 2, out=leaf)
        np.testing.assert_array_equal(leaf.detach().numpy(), 2 * A)


def test_out_of_another_dtype_is_refused_naming_both(xb):
    with pytest.raises(TypeError, match="result is float64 and out= is float32"):
        T.abs(T.tensor(A), out=T.empty(3, 4, dtype=T.float32))
    with pytest.raises(TypeError, match="out= takes a tensor"):
        T.abs(T.tensor(A), out=np.empty((3, 4)))
    with pytest.raises(TypeError, match="2 tensor"):
        T.max(T.tensor(A), 1, out=T.empty(3, dtype=T.float64))


def test_a_factory_takes_the_dtype_of_out(xb):
    for m in (torch, T):
        o = m.empty(3, dtype=m.int64)
        assert m.arange(3, out=o) is o and o.tolist() == [0, 1, 2]


def test_resize_keeps_the_elements_in_order_as_pytorch(xb):
    for shape in ((2, 2), (3,), (12,), (2, 3, 2)):
        t, x = torch.arange(6.0), T.arange(6.0)
        t.resize_(shape)
        x.resize_(*shape)
        n = min(6, int(np.prod(shape)))  # PyTorch leaves the new elements uninitialised
        assert tuple(x.shape) == shape
        np.testing.assert_array_equal(x.numpy().ravel()[:n], t.numpy().ravel()[:n])
        assert not x.numpy().ravel()[n:].any()


def test_resize_refuses_what_would_lose_sharing(xb):
    with pytest.raises(RuntimeError, match="requires grad"):
        T.zeros(3, requires_grad=True).resize_(2)
    x = T.zeros(4)
    v = x[1:]
    with pytest.raises(RuntimeError, match="view"):
        x.resize_(2)
    with pytest.raises(RuntimeError, match="view"):
        v.resize_(2)
    assert x.resize_(4) is x  # the same shape: nothing to do
