"""In-place changes through views and detach(), operands that are not tensors, and what a
leaf's .grad may alias: the holes a review found, each pinned by a test."""

import numpy as np
import pytest

import xad

F64 = xad.float64


def test_inplace_scale_of_a_non_leaf_keeps_its_gradient(xb):
    x = xad.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    y = x * 3
    y *= 2
    y /= 4
    y.sum().backward()
    assert x.grad.tolist() == [1.5, 1.5]


def test_inplace_on_a_saved_result_raises_at_backward_as_pytorchs(xb):
    """exp saved its result; changing it in place raises at backward, as PyTorch's (xad's
    node still holds the old values, but views follow PyTorch's storage semantics)."""
    x = xad.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    y = x.exp()
    y += 1
    with pytest.raises(RuntimeError, match="exp backward: its result"):
        y.sum().backward()
    z = x.exp() * 1  # a product's result is saved by nobody: changing it is fine
    z += 1
    z.sum().backward()
    assert np.allclose(x.grad.numpy(), np.exp([1.0, 2.0]))


def test_change_through_a_view_of_a_saved_tensor_raises(xb):
    w = xad.tensor([[1.0, 2.0]], requires_grad=True)
    x = xad.tensor([[3.0, 4.0]], requires_grad=True)
    loss = (x @ w.T).sum()
    with xad.no_grad():
        w -= 10.0  # changes the memory that w.T (saved by matmul) views
    with pytest.raises(RuntimeError, match="in-place"):
        loss.backward()


def test_change_through_detach_of_a_saved_result_raises(xb):
    x = xad.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    d = y.detach()
    d += 100.0
    with pytest.raises(RuntimeError, match="exp backward: its result"):
        y.sum().backward()


def test_array_like_operands_keep_the_tensor_in_the_graph(xb):
    x = xad.tensor([1.0, 2.0], requires_grad=True)
    for y in ([10.0, 20.0] - x, np.array([1.0, 2.0], np.float32) * x,
              xad.clip(x, [0.0, 0.0], 1.5)):
        assert y.requires_grad and y.dtype == xad.float32 and y.backend is xb


def test_numpy_scalars_act_as_python_scalars(xb):
    x = xad.ones(2)
    assert (x * np.sqrt(2.0)).dtype == xad.float32
    assert (np.float64(2.0) * x).dtype == xad.float32


def test_leaf_grad_is_writable_and_private(xb):
    x = xad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x.sum().backward()  # the sum's gradient is a read-only broadcast view
    x.grad.zero_()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    a = xad.ones(2, requires_grad=True)
    b = xad.ones(2, requires_grad=True)
    (a + b).sum().backward()  # add hands the same gradient to both
    a.grad.zero_()
    assert b.grad.tolist() == [1.0, 1.0]
    c = xad.ones(2, requires_grad=True)
    g = xad.ones(2)
    c.backward(g)
    assert c.grad is not g


def test_leaf_grad_has_the_leaf_dtype(xb):
    x = xad.ones(2, requires_grad=True)
    (x * xad.tensor([2.0, 3.0], dtype=F64)).sum().backward()
    assert x.grad.dtype == xad.float32


def test_set_grad_enabled_as_a_call_and_bare_no_grad_decorator():
    assert xad.is_grad_enabled()
    xad.set_grad_enabled(False)
    try:
        assert not xad.is_grad_enabled()
    finally:
        xad.set_grad_enabled(True)

    @xad.no_grad
    def f(t):
        return t * 2

    assert not f(xad.ones(2, requires_grad=True)).requires_grad and xad.is_grad_enabled()


def test_grad_with_respect_to_a_non_leaf_skips_its_producer(xb):
    x = xad.tensor([1.0, 2.0], requires_grad=True)
    h = x * x
    h.sum().backward()  # frees multiply's saved values
    (g,) = xad.autograd.grad((h * 3).sum(), [h])  # needs nothing behind h
    assert g.tolist() == [3.0, 3.0]


def test_backward_twice_through_nodes_that_saved_nothing(xb):
    x = xad.tensor([1.0, 2.0], requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()  # as in PyTorch: only freed saved values make this an error
    assert x.grad.tolist() == [2.0, 2.0]
