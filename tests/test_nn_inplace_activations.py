"""``inplace=True`` on activation layers and functions, as PyTorch's: the input itself is
changed and returned, the gradient is the activation's, a leaf that requires grad refuses,
and without gradients the input's array is written (against torch 2.13, every backend).
``nn.ReLU(inplace=True)`` raised; the others returned a new tensor and left the input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import xad

LAYERS = [("ReLU", {}), ("LeakyReLU", {"negative_slope": 0.2}), ("ELU", {}),
          ("CELU", {"alpha": 0.5}), ("SELU", {}), ("SiLU", {}), ("Mish", {}), ("Hardtanh", {}),
          ("ReLU6", {}), ("Hardsigmoid", {}), ("Hardswish", {})]
A = np.array([-3.5, -1.0, -0.2, 0.0, 0.4, 2.0, 7.0])


def _through(lib, make):
    leaf = lib.tensor(A, dtype=lib.float64, requires_grad=True)
    x = leaf * 1.0
    y = make(lib)(x)
    assert y is x
    (y * lib.tensor(np.arange(7.0), dtype=lib.float64)).sum().backward()
    return x.detach().numpy(), leaf.grad.numpy()


@pytest.mark.parametrize("name,kw", LAYERS, ids=[n for n, _ in LAYERS])
def test_inplace_layers_change_their_input_as_torch(name, kw, xb):
    tol = 1e-7 if name == "Hardsigmoid" else 1e-12  # torch's kernel: 1/6 in float32
    for got, want in zip(_through(xad, lambda lib: getattr(lib.nn, name)(**kw, inplace=True)),
                         _through(torch, lambda lib: getattr(lib.nn, name)(**kw, inplace=True))):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert "inplace=True" in repr(getattr(xad.nn, name)(inplace=True))


@pytest.mark.parametrize("name", ["relu", "leaky_relu", "elu", "selu", "celu", "silu", "mish",
                                  "hardtanh", "relu6", "hardsigmoid", "hardswish"])
def test_inplace_functions_change_their_input_as_torch(name, xb):
    tol = 1e-7 if name == "hardsigmoid" else 1e-12
    f = lambda lib: lambda x: getattr(lib.nn.functional, name)(x, inplace=True)  # noqa: E731
    for got, want in zip(_through(xad, f), _through(torch, f)):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_inplace_on_a_leaf_that_requires_grad_raises_and_without_grad_writes(xb):
    x = xad.tensor([-1.0, 1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        xad.nn.ReLU(inplace=True)(x)
    with xad.no_grad():
        y = xad.nn.ReLU(inplace=True)(x)
    assert y is x and x.tolist() == [0.0, 1.0]
    z = xad.tensor([-2.0, 3.0])
    view = z[:]
    xad.nn.functional.relu(z, inplace=True)
    assert view.tolist() == [0.0, 3.0]  # views of the input see the change, as torch's


def test_a_saved_input_changed_in_place_is_caught_at_backward(xb):
    """torch: 'one of the variables needed for gradient computation has been modified'."""
    leaf = xad.tensor([-1.0, 2.0], requires_grad=True)
    x = leaf * 1.0
    y = x * x  # saves x
    xad.nn.ReLU(inplace=True)(x)
    with pytest.raises(RuntimeError, match="version|modified|in place|in-place"):
        y.sum().backward()


FUNCTIONS_ = [("relu_", ()), ("elu_", (0.7,)), ("leaky_relu_", (0.3,)),
              ("hardtanh_", (-0.5, 1.5)), ("selu_", ()), ("celu_", (0.5,)),
              ("rrelu_", (0.2, 0.4))]


@pytest.mark.parametrize("name,args", FUNCTIONS_, ids=[n for n, _ in FUNCTIONS_])
def test_in_place_functions_of_pytorch_are_its_own(name, args, xb):
    """``F.relu_`` and the like (AttributeError before): the input changed and returned,
    the function's gradient."""
    got = _through(xad, lambda lib: lambda x: getattr(lib.nn.functional, name)(x, *args))
    want = _through(torch, lambda lib: lambda x: getattr(lib.nn.functional, name)(x, *args))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
