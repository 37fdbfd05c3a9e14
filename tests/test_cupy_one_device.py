"""CuPy with one visible GPU: that GPU is always the current device, so the backend enters
no device scope per operation and wraps no namespace function in one (host time every call
paid); the numbers are those of the NumPy backend and nothing reaches the host unasked. On
cupy-sim with its device count set to one."""

from __future__ import annotations

import numpy as np
import pytest

import xad
import xad.nn.functional as F

cupy_sim = pytest.importorskip("cupy_sim")


def _loss_and_grads(b: xad.Backend) -> list:
    rng = np.random.default_rng(0)
    x = xad.tensor(rng.standard_normal((4, 3)), backend=b, requires_grad=True)
    w = xad.tensor(rng.standard_normal((3, 5)), backend=b, requires_grad=True)
    y = xad.tensor(np.array([0, 4, 2, 1]), backend=b)
    loss = F.cross_entropy(xad.tanh(x @ w) * 2.0, y)
    loss.backward()
    return [b.to_numpy(t.array) for t in (loss, x.grad, w.grad)]


def test_one_gpu_runs_without_a_device_scope(monkeypatch):
    monkeypatch.setattr(cupy_sim.core, "N_DEVICES", 1)
    monkeypatch.setattr(cupy_sim.STATE, "strict", True)  # an implicit host read raises
    b = cupy_sim.SimCupyBackend("cuda:0")
    assert b.scope is None and not b.xp._wraps
    got = _loss_and_grads(b)
    want = _loss_and_grads(xad.resolve_backend("numpy"))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_two_gpus_keep_the_device_scope():
    b = cupy_sim.SimCupyBackend("cuda:1")
    assert b.scope is not None and b.xp._wraps
