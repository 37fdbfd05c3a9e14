"""Gradients at the points the op table's random inputs avoid, against PyTorch's values:
``prod`` at zeros, ``pow`` at a zero or negative base, ``where`` and ``pow`` keeping only
what their rules need, item assignment with extra leading 1-dims."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import xad

F64 = xad.float64


def _t(values, grad=True):
    return xad.tensor(values, dtype=F64, requires_grad=grad)


# ----- prod --------------------------------------------------------------------------------
@pytest.mark.parametrize("values,expected", [
    ([0.0, 2.0, 3.0], [6.0, 0.0, 0.0]),
    ([0.0, 0.0, 3.0], [0.0, 0.0, 0.0]),
    ([1.0, 2.0, 3.0], [6.0, 3.0, 2.0]),
    ([0.0], [1.0])])
def test_prod_gradient_at_zeros(values, expected, xb):
    x = _t(values)
    xad.prod(x).backward()
    assert x.grad.tolist() == expected  # torch.prod gives the same


def test_prod_gradient_at_zeros_along_an_axis(xb):
    x = _t([[0.0, 2.0, 3.0], [1.0, 0.0, 0.0], [1.0, 2.0, 4.0]])
    y = xad.prod(x, axis=1, keepdims=True)
    assert y.tolist() == [[0.0], [0.0], [8.0]]
    y.backward(xad.tensor([[1.0], [1.0], [2.0]], dtype=F64))
    assert x.grad.tolist() == [[6.0, 0.0, 0.0], [0.0, 0.0, 0.0], [16.0, 8.0, 4.0]]
    # second derivatives at a zero: d2 prod / dx0 dx1 = x2 (= 3), not 0 or NaN
    x = _t([0.0, 2.0, 3.0])
    (g,) = xad.autograd.grad(xad.prod(x), [x], create_graph=True)
    g[1].backward()
    assert x.grad.tolist() == [3.0, 0.0, 0.0]


# ----- pow ---------------------------------------------------------------------------------
def test_pow_zero_base_exponent_gradient_is_zero(xb):
    x = _t([0.0, 0.0, 2.0])
    y = _t([1.0, 2.0, 3.0])
    (x ** y).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 12.0]
    assert y.grad.numpy()[:2].tolist() == [0.0, 0.0]  # not NaN (PyTorch masks it too)
    assert y.grad.numpy()[2] == pytest.approx(8 * math.log(2.0))


def test_pow_python_number_base(xb):
    t = _t([0.0, 1.0, 2.0, -1.0])
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 ** -1 (NumPy warns)
        (0.0 ** t).sum().backward()  # PyTorch: [0, 0, 0, -inf]
    assert t.grad.tolist() == [0.0, 0.0, 0.0, -math.inf]
    t = _t([1.0, 2.0, 0.5])
    with np.errstate(invalid="ignore"):  # (-2) ** 0.5
        (xad.pow(-2.0, t)).sum().backward()  # no ValueError from math.log: NaN, as PyTorch
    assert np.isnan(t.grad.numpy()).all()
    t = _t([1.0, 2.0])
    (3.0 ** t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), [3 * math.log(3.0), 9 * math.log(3.0)])


def test_pow_by_a_number_saves_only_its_input(xb):
    x = _t([1.0, -2.0, 3.0])
    y = xad.pow(x, 2)
    assert y._node.name == "pow_scalar" and y._node.out is None
    d = y.detach()
    d += 1.0  # changes y's memory (and version) where arrays are mutable
    y.sum().backward()
    assert x.grad.tolist() == [2.0, -4.0, 6.0]
    assert xad.pow(xad.tensor([2.0]), 3).dtype == xad.float32  # a Python number stays weak


def test_pow_by_a_number_through_an_operator(xb):
    x = _t([1.0, -2.0, 3.0])
    (x ** 3).sum().backward()
    assert x.grad.tolist() == [3.0, 12.0, 27.0]


_INF, _NAN = math.inf, math.nan
_SQRT_POINTS = [-_INF, -0.0, 0.0, 4.0, _INF, -1.0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("exponent,values,grads", [  # torch 2.13's (CPU and CUDA)
    (0.5, [_NAN, -0.0, 0.0, 2.0, _INF, _NAN], [_NAN, -_INF, _INF, 0.25, 0.0, _NAN]),
    (-0.5, [_NAN, -_INF, _INF, 0.5, 0.0, _NAN], [-0.0, -_INF, -_INF, -0.0625, -0.0, _NAN])])
def test_pow_by_a_half_is_pytorchs_square_root(exponent, values, grads, dtype, xb):
    # found by the semantics fuzzer (x.pow_(y), seed 991821): (-0.0) ** -0.5 was inf (C's
    # pow), where PyTorch takes 1 / sqrt(-0.0) = -inf; (-inf) ** -0.5 was 0 (NaN there)
    x = xad.tensor(_SQRT_POINTS, dtype=getattr(xad, dtype), requires_grad=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = x ** exponent
        y.backward(xad.ones_like(y))
    for got, want in ((y, values), (x.grad, grads)):
        got = got.numpy().astype(np.float64)
        np.testing.assert_array_equal(got, want)
        signed = ~np.isnan(want)  # -0.0 and -inf (a NaN's sign bit is the machine's)
        assert (np.signbit(got) == np.signbit(want))[signed].all(), (got, want)


# ----- where -------------------------------------------------------------------------------
def test_where_keeps_only_the_condition(xb):
    x = _t([1.0, -2.0, 3.0])
    h = x * 1.0
    y = xad.where(h > 0, h, 0.0)
    h += 1.0  # PyTorch allows this: where's rule needs the condition only
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]
    a, b = _t([1.0, 2.0]), _t([3.0, 4.0])
    c = xad.tensor([True, False])
    out = xad.where(c, a, b)
    a._array = (a * 0.0)._array  # the inputs' values are not needed either
    (out * xad.tensor([2.0, 5.0], dtype=F64)).sum().backward()
    assert a.grad.tolist() == [2.0, 0.0] and b.grad.tolist() == [0.0, 5.0]


def test_where_operands(xb):
    c = xad.tensor([True, False])
    assert xad.where(c, 1.0, 2.0).tolist() == [1.0, 2.0]
    assert xad.where(c, 1.0, 2.0).backend is xb
    assert xad.where([True, False], xad.tensor([1.0, 2.0], dtype=F64), [5.0, 6.0]).tolist() \
        == [1.0, 6.0]
    r = xad.where(c, xad.tensor([1.0, 2.0]), 0.0)
    assert r.dtype == xad.float32 and not r.requires_grad


def test_where_on_mixed_backends_raises(xb):
    other = "numpy" if xb.name != "numpy" else "array_api_strict"
    c = xad.tensor([True, False])
    x = xad.tensor([1.0, 2.0]).to(other)
    with pytest.raises(RuntimeError, match=r"where: condition \(shape \(2,\)\) is on .* but x"):
        xad.where(c, x, 0.0)
    with pytest.raises(RuntimeError, match="where: condition .* but y is on"):
        xad.where(c.to(other), 0.0, xad.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="where: y .* but x is on"):
        xad.where(c, xad.tensor([1.0, 2.0]), x)


# ----- item assignment with extra leading 1-dims -------------------------------------------
def test_setitem_value_with_extra_leading_ones(xb):
    x = _t(np.ones((2, 3)).tolist())
    v = _t([[1.0, 2.0, 3.0]])
    z = x * 1.0
    z[0] = v  # v is (1, 3), the slot (3,): NumPy's rule drops the extra 1
    assert z.tolist() == [[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]]
    w = xad.reshape(xad.arange(6.0, dtype=F64), (2, 3))
    (z * w).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0, 0.0], [3.0, 4.0, 5.0]]
    assert v.grad.shape == (1, 3) and v.grad.tolist() == [[0.0, 1.0, 2.0]]
    # extra 1-dims and broadcasting together: (1, 1, 1) into a (2, 3) slot
    x = _t(np.ones((3, 3)).tolist())
    s = _t([[[2.0]]])
    z = x * 1.0
    z[1:] = s
    (z * xad.reshape(xad.arange(9.0, dtype=F64), (3, 3))).sum().backward()
    assert s.grad.shape == (1, 1, 1) and s.grad.tolist() == [[[33.0]]]
    assert x.grad.tolist() == [[0.0, 1.0, 2.0], [0.0] * 3, [0.0] * 3]
    assert xad.gradcheck(lambda a, b: _put_row(a, b), [_t([[1.0, 2.0], [3.0, 4.0]]),
                                                      _t([[5.0, 6.0]])])


def _put_row(a, b):
    z = a * 1.0
    z[1] = b * b
    return z * z


def test_setitem_value_that_cannot_broadcast(xb):
    z = xad.zeros(2, 3)
    z[0] = xad.ones(1, 1, 3)  # no gradient: the direct path drops extra 1-dims too
    assert z.tolist() == [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    for bad in ((2, 3), (2,), (2, 1, 3)):
        with pytest.raises(ValueError, match=r"setitem: .*shape " + re.escape(str(bad))
                           + r".* of shape \(3,\)"):
            z[0] = xad.ones(*bad)
    x = _t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with pytest.raises(ValueError, match="setitem"):
        y = x * 1.0
        y[0] = _t([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
