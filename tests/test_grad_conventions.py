"""Gradients at ties, bounds and zeros, where libraries choose a convention: tensor methods
and ``nn.functional`` against PyTorch, the standard's functions (``xad.f``) against JAX
(DESIGN.md, "Two meanings, one rule"; docs/PORTING.md tables the differences)."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import xad
import xad.nn.functional as F
from xad import as_torch

T = as_torch.namespace()["torch"]

jax.config.update("jax_enable_x64", True)

TIES = [[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]]
RELU_OUT = [[[[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 2.0, 0.5]],
             [[0.0, 0.0, 0.0, 0.0], [3.0, 3.0, 0.0, 0.0]]]]  # (1, 2, 2, 4): ties after ReLU
BOUNDS = ([-2.0, -1.0, 0.0, 1.0, 2.0], [-1.0] * 5, [1.0] * 5)
CONST_ROW = [[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]]
ZERO_ROW = [[0.0, 0.0, 0.0], [3.0, 0.0, -4.0]]
ORIGIN = ([0.0, 1.0, 0.0], [0.0, 0.0, -1.0])

# (name, xad function, PyTorch function, inputs): the tensor methods are PyTorch's
TORCH_CASES: list[tuple[str, Callable, Callable, tuple]] = [
    ("max(dim)", lambda x: x.max(1).values, lambda x: x.max(1).values, (TIES,)),
    ("min(dim)", lambda x: x.min(dim=1, keepdim=True)[0],
     lambda x: x.min(dim=1, keepdim=True)[0], (TIES,)),
    ("max()", lambda x: x.max(), lambda x: x.max(), (TIES,)),
    ("max_pool2d", lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), (RELU_OUT,)),
    ("max_pool2d:stride1", lambda x: F.max_pool2d(x, 2, 1), lambda x: TF.max_pool2d(x, 2, 1),
     (RELU_OUT,)),
    ("clamp:numbers", lambda x: x.clamp(-1.0, 1.0), lambda x: x.clamp(-1.0, 1.0),
     (BOUNDS[0],)),
    ("clamp:tensors", lambda x, lo, hi: x.clamp(lo, hi), lambda x, lo, hi: x.clamp(lo, hi),
     BOUNDS),
    ("clip:min_tensor", lambda x, lo: x.clip(lo), lambda x, lo: x.clip(lo), BOUNDS[:2]),
    ("std", lambda x: x.std(), lambda x: x.std(), ([2.0, 2.0, 2.0],)),
    ("std(dim)", lambda x: x.std(dim=1), lambda x: x.std(dim=1), (CONST_ROW,)),
    ("norm", lambda x: x.norm(), lambda x: x.norm(), ([0.0, 0.0],)),
    ("norm(dim)", lambda x: x.norm(dim=1), lambda x: x.norm(dim=1), (ZERO_ROW,)),
    ("norm(p=3)", lambda x: x.norm(p=3, dim=1), lambda x: x.norm(p=3, dim=1), (ZERO_ROW,)),
    ("atan2", lambda y, x: y.atan2(x), lambda y, x: y.atan2(x), ORIGIN),
    ("maximum", lambda x, y: x.max(y), lambda x, y: x.maximum(y), (TIES[0], TIES[1])),
] + [(f"linalg.vector_norm(ord={p})", lambda x, p=p: T.linalg.vector_norm(x, p, dim=1),
      lambda x, p=p: torch.linalg.vector_norm(x, p, dim=1), (ZERO_ROW,))
     for p in (2, 1, 3, 0.5, 0, math.inf, -math.inf)]

# (name, xad function, JAX function, inputs): the standard's functions keep JAX's
JAX_CASES: list[tuple[str, Callable, Callable, tuple]] = [
    ("max", lambda x: xad.max(x, axis=1), lambda x: jnp.max(x, axis=1), (TIES,)),
    ("min", lambda x: xad.min(x, axis=0), lambda x: jnp.min(x, axis=0), (TIES,)),
    ("clip:numbers", lambda x: xad.clip(x, -1.0, 1.0), lambda x: jnp.clip(x, -1.0, 1.0),
     (BOUNDS[0],)),
    ("clip:tensors", lambda x, lo, hi: xad.clip(x, lo, hi),
     lambda x, lo, hi: jnp.clip(x, lo, hi), BOUNDS),
    ("std", lambda x: xad.std(x, axis=1), lambda x: jnp.std(x, axis=1), (CONST_ROW,)),
    ("vector_norm", lambda x: xad.linalg.vector_norm(x, axis=1),
     lambda x: jnp.linalg.vector_norm(x, axis=1), (ZERO_ROW,)),
    ("vector_norm(ord=3)", lambda x: xad.linalg.vector_norm(x, axis=1, ord=3),
     lambda x: jnp.linalg.vector_norm(x, axis=1, ord=3), (ZERO_ROW,)),
    ("vector_norm(ord=0.5)", lambda x: xad.linalg.vector_norm(x, axis=1, ord=0.5),
     lambda x: jnp.linalg.vector_norm(x, axis=1, ord=0.5), ([[1.0, 2.0, 0.5]],)),
    ("atan2", xad.atan2, jnp.atan2, ORIGIN),
    ("maximum", xad.maximum, jnp.maximum, (TIES[0], TIES[1])),
    ("relu", xad.relu, jax.nn.relu, ([-1.0, 0.0, 1.0],)),
]  # abs at 0: 0 everywhere in xad (sign(0), PyTorch's); JAX gives 1 (docs/PORTING.md)


def _xad_grads(f: Callable, inputs: tuple) -> list:
    xs = [xad.tensor(a, dtype=xad.float64, requires_grad=True) for a in inputs]
    f(*xs).sum().backward()
    return [x.grad.numpy() for x in xs]


@pytest.mark.parametrize("case", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_tensor_methods_follow_pytorch(xb, case):
    name, xf, tf, inputs = case
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in inputs]
    tf(*ts).sum().backward()
    for i, (g, t) in enumerate(zip(_xad_grads(xf, inputs), ts)):
        want = np.zeros(t.shape) if t.grad is None else t.grad.numpy()  # norm(ord=0): None
        np.testing.assert_allclose(g, want, 1e-12, 1e-12, err_msg=f"{name}: {i}")


@pytest.mark.parametrize("case", JAX_CASES, ids=[c[0] for c in JAX_CASES])
def test_standard_functions_follow_jax(xb, case):
    name, xf, jf, inputs = case
    args = [jnp.asarray(a, dtype=jnp.float64) for a in inputs]
    ref = jax.grad(lambda *a: jf(*a).sum(), argnums=tuple(range(len(args))))(*args)
    for i, (g, r) in enumerate(zip(_xad_grads(xf, inputs), ref)):
        np.testing.assert_allclose(g, np.asarray(r), 1e-12, 1e-12, err_msg=f"{name}: {i}")


def test_max_dim_gradient_goes_to_the_returned_index(xb):
    x = xad.tensor([[5.0, 5.0, 1.0], [0.0, 7.0, 7.0]], requires_grad=True)
    v, i = x.max(dim=1)
    (v * xad.tensor([1.0, 2.0])).sum().backward()
    hit = np.zeros((2, 3))
    hit[[0, 1], i.numpy()] = [1.0, 2.0]
    assert x.grad.numpy().tolist() == hit.tolist()


def test_max_dim_second_order_and_nan(xb):
    x = xad.tensor([[1.0, 4.0, 4.0]], requires_grad=True)
    (g,) = xad.autograd.grad((x.max(1).values ** 2).sum(), [x], create_graph=True)
    assert g.tolist() == [[0.0, 8.0, 0.0]]
    (h,) = xad.autograd.grad(g.sum(), [x])
    assert h.tolist() == [[0.0, 2.0, 0.0]]
    v, i = xad.tensor([[1.0, math.nan, 2.0]]).max(1)
    assert math.isnan(v.item()) and i.item() == 1  # NaN wins, as in PyTorch
