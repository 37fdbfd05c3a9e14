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


@pytest.mark.parametrize("view", ["reshape", "permute_dims", "reshape-of-index"])
def test_inplace_through_a_whole_view_reaches_the_base_and_the_graph(xb, view):
    """As PyTorch: a reshape, permutation or flip of a tensor in a graph covers each of its
    elements once, so an in-place change through it is the base's (SciPy 1.18's ``_var``
    multiplies a reshape view in place)."""
    torch = pytest.importorskip("torch")
    make = {"reshape": lambda t: t.reshape((3, 2)),
            "permute_dims": lambda t: t.permute((1, 0)) if isinstance(t, torch.Tensor)
            else xad.permute_dims(t, (1, 0)),
            "reshape-of-index": lambda t: t[1:].reshape((3,))}[view]
    start = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    results = []
    for lib, tensor in ((xad, lambda a: xad.tensor(a, dtype=F64, requires_grad=True)),
                        (torch, lambda a: torch.tensor(a, dtype=torch.float64,
                                                       requires_grad=True))):
        w = tensor(start)
        y = w * 1.5
        v = make(y)
        v *= tensor(v.detach().tolist()) if lib is xad else torch.tensor(
            v.detach().tolist(), dtype=torch.float64, requires_grad=True)
        ((y * y).sum() + (v * 3.0).sum()).backward()
        results.append((y.tolist(), v.tolist(), w.grad.tolist()))
    assert results[0] == results[1]


def test_inplace_through_a_flip_view_reaches_the_base(xb):
    """``flip`` is a view in xad (as NumPy's; PyTorch's copies): a change through it is the
    base's, reversed back."""
    import numpy as np
    w0 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    c = np.array([[0.5, -1.0, 2.0], [3.0, 1.5, -2.0]])
    w = xad.tensor(w0, dtype=F64, requires_grad=True)
    y = w * 1.5
    v = xad.flip(y, axis=(0,))
    v *= xad.tensor(c, dtype=F64)
    fc = c[::-1]
    np.testing.assert_allclose(y.numpy(), 1.5 * w0 * fc)
    ((y * y).sum() + (v * 3.0).sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * (1.5 * w0 * fc) * 1.5 * fc + 4.5 * fc)


def test_inplace_through_a_broadcast_view_in_a_graph_raises(xb):
    y = xad.tensor([1.0, 2.0], requires_grad=True) * 2
    r = xad.broadcast_to(y, (3, 2))
    with pytest.raises(RuntimeError, match="broadcast_to view.*elements repeat"):
        r += 1
