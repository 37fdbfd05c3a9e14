"""Engine defects that once gave wrong numbers or unclear errors (the issue "No silent wrong
answers": hooks, integer leaves, None operands, gradients given as numbers, checkpoint
cycles), the one context's thread rule, and hook handles."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import xad
from xad import nn


def test_leaf_hook_returning_a_wrong_shape_raises(xb):
    x = xad.ones(2, requires_grad=True)
    x.register_hook(lambda g: xad.ones(5))
    with pytest.raises(ValueError, match=r"shape \(5,\).*gradient has shape \(2,\)"):
        (x * 2).sum().backward()
    assert x.grad is None


def test_non_leaf_hook_returning_a_wrong_shape_raises(xb):
    x = xad.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: xad.ones((3, 2)))
    with pytest.raises(ValueError, match=r"shape \(3, 2\)"):
        y.sum().backward()


def test_parameter_hook_returning_a_slice_raises_before_adam_broadcasts_it(xb):
    w = nn.Parameter(xad.ones((200, 100)))
    w.register_hook(lambda g: g[:1])
    with pytest.raises(ValueError, match=r"shape \(1, 100\)"):
        (w * 3).sum().backward()


def test_hook_returning_a_float_or_another_dtype_raises(xb):
    x = xad.ones(2, requires_grad=True)
    h = x.register_hook(lambda g: 1.0)
    with pytest.raises(TypeError, match="returned float"):
        x.sum().backward()
    h.remove()
    x.register_hook(lambda g: g.astype(xad.float64))
    with pytest.raises(ValueError, match="float64"):
        x.sum().backward()


def test_integer_tensor_cannot_require_grad(xb):
    with pytest.raises(TypeError, match="only floating tensors"):
        xad.tensor([1, 2]).requires_grad_()
    with pytest.raises(TypeError, match="only floating tensors"):
        xad.Tensor(xad.tensor([1, 2])._array, requires_grad=True)


def test_none_operand_is_a_type_error_not_a_recursion(xb):
    x = xad.ones(2)
    for f in (lambda: x * None, lambda: None * x, lambda: x + None, lambda: x / None):
        with pytest.raises(TypeError, match="unsupported operand"):
            f()


def test_backward_with_a_number_or_an_array_names_the_fix(xb):
    y = (xad.ones(3, requires_grad=True) * 2).sum()
    with pytest.raises(TypeError, match="must be a tensor.*got float"):
        y.backward(2.0)
    with pytest.raises(TypeError, match="must be a tensor.*got ndarray"):
        y.backward(np.ones(3))


def test_checkpoint_is_freed_by_reference_counting(xb):
    w = xad.randn(16, 16, requires_grad=True)
    x = xad.randn(4, 16)
    gc.collect()
    gc.disable()
    try:
        before = sum(isinstance(o, xad.autograd.Node) for o in gc.get_objects())
        for _ in range(20):
            loss = xad.checkpoint(lambda h: xad.tanh(h @ w), x).sum()
            loss.backward()
        del loss
        after = sum(isinstance(o, xad.autograd.Node) for o in gc.get_objects())
    finally:
        gc.enable()
    assert after == before, f"{after - before} nodes kept alive by a reference cycle"


def test_tensor_hook_handle_removes_the_hook(xb):
    x = xad.ones(2, requires_grad=True)
    with x.register_hook(lambda g: g * 10):
        x.sum().backward()
    assert x.grad.tolist() == [10.0, 10.0]
    x.grad = None
    x.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_grad_mode_and_use_backend_are_per_thread_and_new_threads_start_fresh():
    seen = {}

    def worker():
        seen["grad"] = xad.is_grad_enabled()
        seen["backend"] = xad.get_backend().name

    with xad.no_grad(), xad.use_backend("array_api_strict"):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not xad.is_grad_enabled() and xad.get_backend().name == "array_api_strict"
    assert seen == {"grad": True, "backend": "numpy"}


def test_set_backend_and_default_dtype_are_process_defaults():
    seen = {}
    try:
        xad.set_backend("array_api_strict")
        xad.set_default_dtype(xad.float64)
        t = threading.Thread(target=lambda: seen.update(b=xad.get_backend().name,
                                                        d=xad.tensor(1.0).dtype))
        t.start()
        t.join()
    finally:
        xad.set_backend("numpy")
        xad.set_default_dtype(xad.float32)
    assert seen == {"b": "array_api_strict", "d": xad.float64}


def test_resolve_backend_is_shared_and_explains_unknown_names():
    assert xad.resolve_backend("numpy") is xad.resolve_backend("numpy")
    b = xad.get_backend()
    assert xad.resolve_backend(b) is b
    with pytest.raises(xad.BackendError, match="unknown backend 'nope'"):
        xad.resolve_backend("nope")


def test_grad_assignment_must_match_the_tensor(xb):
    w = xad.ones((200, 100), requires_grad=True)
    with pytest.raises(TypeError, match="xad tensor or None, got ndarray"):
        w.grad = np.ones((200, 100), dtype=np.float32)
    with pytest.raises(ValueError, match=r"shape \(1, 100\)"):
        w.grad = xad.ones((1, 100))
    w.grad = xad.ones((200, 100))
    assert w.grad.shape == (200, 100)
