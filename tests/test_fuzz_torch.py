"""A differential fuzzer: random programs of xad operations against PyTorch (the oracle), in
float64, comparing values, first derivatives and second derivatives (an HVP: the gradient
of <grad, v>), on every backend. Default: a small fixed-seed budget (40 programs on NumPy,
8 elsewhere); ``XAD_FUZZ_PROGRAMS=5000`` runs more, from the seed ``XAD_FUZZ_SEED``.
A failure prints the seed and the program, so it can be replayed."""

from __future__ import annotations

import os

import numpy as np
import pytest

import xad

torch = pytest.importorskip("torch")  # the oracle (a test dependency)

PROGRAMS = int(os.environ.get("XAD_FUZZ_PROGRAMS", "0")) or None
SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))  # the first program's seed
SHAPE = (3, 4)

# name -> (arity, xad version, torch version); every op maps (3, 4) values to (3, 4), so any
# two values can meet. Inputs stay where each op is smooth: no ties, no kinks at sampled
# points (relu, abs, clip and maximum see values away from their kinks almost surely).
_PERM = [2, 0, 1]
OPS = {
    "tanh": (1, xad.tanh, torch.tanh),
    "sin": (1, xad.sin, torch.sin),
    "sigmoid": (1, xad.sigmoid, torch.sigmoid),
    "softplus": (1, xad.softplus, torch.nn.functional.softplus),
    "exp_tanh": (1, lambda x: xad.exp(xad.tanh(x)), lambda x: torch.exp(torch.tanh(x))),
    "log1p_sq": (1, lambda x: xad.log1p(x * x), lambda x: torch.log1p(x * x)),
    "sqrt_1p_sq": (1, lambda x: xad.sqrt(1 + x * x), lambda x: torch.sqrt(1 + x * x)),
    "relu": (1, xad.relu, torch.relu),
    "abs": (1, xad.abs, torch.abs),
    "clip": (1, lambda x: xad.clip(x, -0.7, 0.7), lambda x: torch.clamp(x, -0.7, 0.7)),
    "gelu": (1, xad.gelu, torch.nn.functional.gelu),
    "pow3": (1, lambda x: x ** 3, lambda x: x ** 3),
    "softmax1": (1, lambda x: xad.softmax(x, axis=1), lambda x: torch.softmax(x, 1)),
    "log_softmax0": (1, lambda x: xad.log_softmax(x, axis=0),
                     lambda x: torch.log_softmax(x, 0)),
    "cumsum1": (1, lambda x: xad.cumsum(x, axis=1), lambda x: torch.cumsum(x, 1)),
    "flip0": (1, lambda x: xad.flip(x, axis=0), lambda x: torch.flip(x, (0,))),
    "center": (1, lambda x: x - xad.mean(x, axis=1, keepdims=True),
               lambda x: x - x.mean(1, keepdim=True)),
    "scale_by_norm": (1, lambda x: x / xad.sqrt(xad.sum(x * x, axis=0, keepdims=True) + 1),
                      lambda x: x / torch.sqrt((x * x).sum(0, keepdim=True) + 1)),
    "lse_shift": (1, lambda x: x - xad.logsumexp(x, axis=1, keepdims=True),
                  lambda x: x - torch.logsumexp(x, 1, keepdim=True)),
    "permute_rows": (1, lambda x: x[xad.tensor(_PERM)], lambda x: x[torch.tensor(_PERM)]),
    "roll_rows": (1, lambda x: xad.concat([x[1:], x[:1]], axis=0),
                  lambda x: torch.cat([x[1:], x[:1]], 0)),
    "reshape_t": (1, lambda x: xad.reshape(xad.matrix_transpose(xad.reshape(x, (4, 3))),
                                           SHAPE),
                  lambda x: x.reshape(4, 3).T.reshape(SHAPE)),
    "matmul": (1, lambda x: x @ xad.reshape(xad.linspace(-1.0, 1.0, 16, dtype=x.dtype),
                                            (4, 4)),
               lambda x: x @ torch.linspace(-1.0, 1.0, 16, dtype=x.dtype).reshape(4, 4)),
    "add": (2, lambda x, y: x + y, lambda x, y: x + y),
    "sub": (2, lambda x, y: x - y, lambda x, y: x - y),
    "mul": (2, lambda x, y: x * y, lambda x, y: x * y),
    "div": (2, lambda x, y: x / (1 + y * y), lambda x, y: x / (1 + y * y)),
    "maximum": (2, xad.maximum, torch.maximum),
    "where": (2, lambda x, y: xad.where(x > y, x, 0.5 * y),
              lambda x, y: torch.where(x > y, x, 0.5 * y)),
}


def _program(rng: np.random.Generator, length: int) -> list[tuple[str, tuple[int, ...]]]:
    """Steps ``(op, operand indices)``; value k is input k (k < 2) or step k - 2's result."""
    names = sorted(OPS)
    steps = []
    for s in range(length):
        name = names[rng.integers(len(names))]
        steps.append((name, tuple(int(i) for i in rng.integers(0, s + 2, OPS[name][0]))))
    return steps


def _run(steps, inputs, weights, lib: int):
    vals = list(inputs)
    for name, args in steps:
        vals.append(OPS[name][1 + lib](*(vals[i] for i in args)))
    start = (vals[0] * vals[1]).sum() * 0.01  # both inputs always reach the output
    return sum(((v * w).sum() for v, w in zip(vals[2:], weights)), start=start)


def _derivatives(steps, arrays, weights, v, lib: int):
    if lib == 0:
        ins = [xad.tensor(a, dtype=xad.float64) for a in arrays]
        ws = [xad.tensor(w, dtype=xad.float64) for w in weights]
        _run(steps, ins, ws, 0)  # once without recording, as code under no_grad runs
        ins = [t.requires_grad_() for t in ins]
        out = _run(steps, ins, ws, 0)
        gs = xad.autograd.grad(out, ins, create_graph=True)
        dot = sum((g * xad.tensor(u, dtype=xad.float64)).sum() for g, u in zip(gs, v))
        hs = xad.autograd.grad(dot, ins, allow_unused=True)
        to_np = lambda t: np.zeros(SHAPE) if t is None else t.numpy()  # noqa: E731
    else:
        ins = [torch.tensor(a, requires_grad=True) for a in arrays]
        out = _run(steps, ins, [torch.tensor(w) for w in weights], 1)
        gs = torch.autograd.grad(out, ins, create_graph=True)
        dot = sum((g * torch.tensor(u)).sum() for g, u in zip(gs, v))
        hs = torch.autograd.grad(dot, ins, allow_unused=True)
        to_np = lambda t: np.zeros(SHAPE) if t is None else t.detach().numpy()  # noqa: E731
    return (float(out.item()), [to_np(g) for g in gs], [to_np(h) for h in hs])


def _check(seed: int, backend: xad.Backend) -> None:
    rng = np.random.default_rng(seed)
    steps = _program(rng, int(rng.integers(2, 7)))
    arrays = [rng.uniform(-1.5, 1.5, SHAPE) for _ in range(2)]
    weights = [rng.standard_normal(SHAPE) for _ in steps]
    v = [rng.standard_normal(SHAPE) for _ in range(2)]
    got = _derivatives(steps, arrays, weights, v, 0)  # on the backend under test
    want = _derivatives(steps, arrays, weights, v, 1)
    where = f"seed {seed} on {backend.name}: program {steps}"
    np.testing.assert_allclose(got[0], want[0], rtol=1e-9, atol=1e-10, err_msg=f"value, {where}")
    for order, (a, b) in ((1, (got[1], want[1])), (2, (got[2], want[2]))):
        for i, (x, y) in enumerate(zip(a, b)):
            np.testing.assert_allclose(x, y, rtol=1e-8, atol=1e-9,
                                       err_msg=f"order {order}, input {i}, {where}")


def test_random_programs_match_pytorch_to_second_order(xb):
    for seed in range(SEED, SEED + (PROGRAMS or (40 if xb.name == "numpy" else 8))):
        _check(seed, xb)
