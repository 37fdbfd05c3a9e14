"""Compare an xad function with its PyTorch twin in float64: the values, the first
derivatives (``autograd.grad`` with ``create_graph``) and second derivatives (the gradient of
a random projection of the first), on the current backend."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch_reference import lacks

import xad

__all__ = ["check_against_torch"]


def _close(x: xad.Tensor, t: torch.Tensor, what: str, tol: float) -> None:
    a, b = x.numpy(), t.detach().numpy()
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch's {b.shape}"
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=what)


def _second(st: torch.Tensor, ts: list) -> tuple | None:
    """torch's second derivatives (``None`` each for a linear function), or ``None`` where
    the reference torch is older than CI's and lacks them."""
    if not st.requires_grad:
        return (None,) * len(ts)
    try:
        return torch.autograd.grad(st, ts, allow_unused=True)
    except RuntimeError as e:
        if lacks(e):
            return None
        raise


def check_against_torch(xf: Callable, tf: Callable, shapes: Sequence[tuple[int, ...]],
                        name: str, transposed: Sequence[bool] = (), tol: float = 1e-9) -> None:
    """``xf(*tensors)`` against ``tf(*torch_tensors)`` on inputs of ``shapes``; an input
    marked in ``transposed`` reaches both functions as a transposed (strided) view."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    arrs = [rng.standard_normal(s) for s in shapes]
    flags = list(transposed) + [False] * (len(shapes) - len(transposed))
    store = [np.ascontiguousarray(np.swapaxes(a, -1, -2)) if f else a
             for a, f in zip(arrs, flags)]
    xs = [xad.tensor(a, dtype=xad.float64, requires_grad=True) for a in store]
    ts = [torch.tensor(a, requires_grad=True) for a in store]
    xin = [xad.matrix_transpose(x) if f else x for x, f in zip(xs, flags)]
    tin = [t.transpose(-1, -2) if f else t for t, f in zip(ts, flags)]
    y, t = xf(*xin), tf(*tin)
    _close(y, t, f"{name}: forward", tol)
    seed = rng.standard_normal(tuple(t.shape))
    gx = xad.autograd.grad(y, xs, grad_outputs=xad.tensor(seed, dtype=xad.float64),
                           create_graph=True)
    gt = torch.autograd.grad(t, ts, grad_outputs=torch.tensor(seed), create_graph=True)
    for i, (a, b) in enumerate(zip(gx, gt)):
        _close(a, b, f"{name}: gradient of input {i}", tol)
    vs = [rng.standard_normal(s.shape) for s in store]
    sx = sum((g * xad.tensor(v, dtype=xad.float64)).sum() for g, v in zip(gx, vs))
    st = sum((g * torch.tensor(v)).sum() for g, v in zip(gt, vs))
    ht = _second(st, ts)
    if ht is None:  # an older torch lacks this second derivative (tests/torch_reference.py)
        return
    if not isinstance(sx, xad.Tensor) or not sx.requires_grad:  # a linear function
        for i, b in enumerate(ht):
            assert b is None or not b.any(), f"{name}: second derivative {i} is not 0"
        return
    hx = xad.autograd.grad(sx, xs, allow_unused=True)
    for i, (a, b) in enumerate(zip(hx, ht)):
        if b is None:
            assert a is None or not np.any(a.numpy()), f"{name}: second derivative {i}"
        else:
            assert a is not None, f"{name}: second derivative of input {i} missing"
            _close(a, b, f"{name}: second derivative of input {i}", tol)
