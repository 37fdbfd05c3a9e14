"""The sync budget of a training step on (emulated) CuPy, for each example model.

One step (DataLoader batch, forward, loss, backward, ``clip_grad_norm_``, optimiser step,
scheduler step, ``zero_grad``) makes no device-to-host transfer beyond the known ones in
``KNOWN``, ``loss.item()`` exactly one; from the third step on, no step allocates anything
new from the memory pool; on device 1 every kernel runs with device 1 current (the emulator
raises otherwise). Measured (mallocs per step, steps 1-6): fit_nonlinear 86, 34, 0, 0, 0, 0;
digits 24, 0, 0, 0, 0, 0 (the first steps make Adam's state and the kernels' scratch).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import cupy_sim
import numpy as np
import pytest

import xad
from xad import nn

# explicit reads the library makes on purpose, per step: cross_entropy checks that every
# target is a class index (xad/nn/functional/layers.py, _check_in_range: one reduction and
# one read), because CuPy's indexing wraps an out-of-range index around silently
KNOWN = {"fit_nonlinear": [], "digits": [("item", True)]}
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _fit_model() -> nn.Module:
    sys.path.insert(0, str(EXAMPLES))  # the example imports its _common helpers
    try:
        spec = importlib.util.spec_from_file_location("xad_example_fit_nonlinear_budget",
                                                      EXAMPLES / "fit_nonlinear.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(EXAMPLES))
    return mod.make_model()


def _digits_model() -> nn.Module:  # examples/digits.py's network, written out there inline
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.1),
                         nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


def _setup(name: str, device: str):
    b = xad.resolve_backend("cupy-sim", device)
    rng = np.random.default_rng(0)
    if name == "fit_nonlinear":
        model, loss_fn = _fit_model(), nn.MSELoss()
        x = rng.uniform(-1, 1, (256, 1)).astype("float32")
        y = np.sin(3 * x).astype("float32")
    else:
        model, loss_fn = _digits_model(), nn.CrossEntropyLoss()
        x = rng.random((256, 64), dtype="float32")
        y = rng.integers(0, 10, 256)
    model.to(b)
    data = xad.data.TensorDataset(xad.tensor(x, backend=b), xad.tensor(y, backend=b))
    loader = xad.data.DataLoader(data, batch_size=32, shuffle=True, seed=0)
    opt = xad.optim.Adam(model.parameters(), lr=1e-3)
    sched = xad.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    return b, model, loss_fn, opt, sched, loader


def _step(model, loss_fn, opt, sched, batches):
    xb, yb = next(batches)
    loss = loss_fn(model(xb), yb)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    opt.zero_grad()
    return loss


@pytest.mark.parametrize("device", ["cuda:0", "cuda:1"])
@pytest.mark.parametrize("name", ["fit_nonlinear", "digits"])
def test_training_step_sync_and_allocation_budget(name, device):
    state, pool = cupy_sim.STATE, cupy_sim.POOL
    b, model, loss_fn, opt, sched, loader = _setup(name, device)
    batches = iter(loader)
    state.reset()
    state.strict = True
    try:
        mallocs = []
        for i in range(6):
            before, m0 = len(state.transfers), pool.mallocs
            loss = _step(model, loss_fn, opt, sched, batches)
            assert state.transfers[before:] == KNOWN[name], f"step {i} synchronised"
            mallocs.append(pool.mallocs - m0)
            n = len(state.transfers)
            value = loss.item()
            assert state.transfers[n:] == [("item", True)] and np.isfinite(value)
    finally:
        state.strict = False
    assert mallocs[2:] == [0, 0, 0, 0], f"new pool allocations per step: {mallocs}"
    want = b.device.id
    assert all(p._array._dev == want for p in model.parameters())
    assert all(v._array._dev == want for st in opt.state.values() for v in st.values()
               if isinstance(v, xad.Tensor))
