"""In-place changes through views reach their base, and a changed base reaches its views
(the issue "No silent wrong answers", item 7), with gradients checked against PyTorch's
values worked out by hand."""

from __future__ import annotations

import pytest

import xad

F64 = xad.float64


def test_inplace_through_a_slice_of_a_non_leaf_reaches_the_base(xb):
    x = xad.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    y = x * 2
    v = y[1:]
    v *= 10
    assert y.tolist() == [2.0, 40.0, 60.0]          # torch: [2, 40, 60]
    assert v.tolist() == [40.0, 60.0]
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 20.0, 20.0]      # d/dx of 2x, 20x, 20x


def test_setitem_on_a_base_shows_in_an_earlier_view(xb):
    x = xad.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    y = x * 2
    v = y[1:]
    y[1] = 100.0
    assert v.tolist() == [100.0, 6.0]
    (v * xad.tensor([1.0, 10.0], dtype=F64)).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 20.0]       # y[1] no longer depends on x


def test_inplace_on_a_view_of_a_leaf_that_requires_grad_raises(xb):
    leaf = xad.tensor([1.0, 2.0], requires_grad=True)
    v = leaf[0:1]
    with pytest.raises(RuntimeError, match="leaf that requires grad"):
        v += 1
    assert leaf.tolist() == [1.0, 2.0]


def test_inplace_on_a_view_of_a_plain_tensor_changes_the_base(xb):
    x = xad.tensor([1.0, 2.0, 3.0])
    v = x[1:]
    v += 1
    v[0] = 7.0
    assert x.tolist() == [1.0, 7.0, 4.0]


def test_a_recorded_value_written_into_a_view_of_a_plain_tensor(xb):
    x = xad.zeros(3, dtype=F64)
    w = xad.tensor([2.0, 3.0], dtype=F64, requires_grad=True)
    v = x[1:]
    v += w
    assert x.tolist() == [0.0, 2.0, 3.0]
    (x * x).sum().backward()
    assert w.grad.tolist() == [4.0, 6.0]


def test_view_of_a_view_follows_both_ways(xb):
    x = xad.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64, requires_grad=True)
    y = x * 1
    v = y[1:]
    u = v[1:]
    u *= 3
    assert y.tolist() == [1.0, 2.0, 9.0, 12.0]
    assert v.tolist() == [2.0, 9.0, 12.0]
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 3.0, 3.0]


def test_inplace_through_a_reshape_view_in_a_graph_raises(xb):
    x = xad.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x * 2
    r = xad.reshape(y, (2, 2))
    with pytest.raises(RuntimeError, match="reshape view"):
        r += 1
