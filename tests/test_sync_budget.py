"""The sync budget of a training step on (emulated) CuPy, for each example model.

One step (DataLoader batch, forward, loss, backward, ``clip_grad_norm_``, optimiser step,
scheduler step, ``zero_grad``) makes no device-to-host transfer beyond the known ones in
``KNOWN``, ``loss.item()`` exactly one; from the third step on, no step allocates anything
new from the memory pool; on device 1 every kernel runs with device 1 current (the emulator
raises otherwise). Measured (mallocs per step, steps 1-6, one process running the cases in
order): fit_nonlinear 84, 33, 0, 0, 0, 0; digits 24, 0, ...; cnn_digits 33, 0, ...;
cnn_digits with autocast and GradScaler 6, 0, ...; transformer_addition 84, 23, 0, 0, 0, 0
(the first steps make Adam's state and the kernels' scratch).
"""

from __future__ import annotations

import cupy_sim
import numpy as np
import pytest
from test_examples import _load as _example

import xad
from xad import nn

# explicit reads the library makes on purpose, per step: cross_entropy and embedding check
# that every index is in range (xad/nn/functional/layers.py, _check_in_range: one reduction
# and one read each), because CuPy's indexing wraps an out-of-range index around silently;
# GradScaler.step reads whether a gradient overflowed (one read, as PyTorch's)
_CHECK = ("item", True)
KNOWN = {"fit_nonlinear": [], "digits": [_CHECK], "cnn_digits": [_CHECK],
         "cnn_digits-amp": [_CHECK, _CHECK],
         "transformer_addition": [_CHECK, _CHECK, _CHECK]}  # token and position ids, targets


def _problem(name: str, rng: np.random.Generator):
    """``(model, loss of a batch, host arrays of the data set)`` for an example."""
    if name == "fit_nonlinear":
        x = rng.uniform(-1, 1, (256, 1)).astype("float32")
        model, mse = _example(name).make_model(), nn.MSELoss()
        return model, lambda xb, yb: mse(model(xb), yb), (x, np.sin(3 * x))
    if name == "transformer_addition":
        mod = _example(name)
        model = mod.Decoder()
        return model, lambda seqs: mod.answer_loss(model, seqs), (mod.dataset()[0][:256],)
    ce, y = nn.CrossEntropyLoss(), rng.integers(0, 10, 256)
    if name == "digits":
        model = _example("digits").make_model()
        return model, lambda xb, yb: ce(model(xb), yb), (rng.random((256, 64), "float32"), y)
    model = _example("cnn_digits").make_model()
    return model, lambda xb, yb: ce(model(xb), yb), (rng.random((256, 1, 8, 8), "float32"), y)


def _setup(name: str, device: str):
    b = xad.resolve_backend("cupy-sim", device)
    model, loss_of, arrays = _problem(name.removesuffix("-amp"), np.random.default_rng(0))
    model.to(b)
    data = xad.data.TensorDataset(*(xad.tensor(a, backend=b) for a in arrays))
    loader = xad.data.DataLoader(data, batch_size=32, shuffle=True, seed=0)
    opt = xad.optim.Adam(model.parameters(), lr=1e-3)
    sched = xad.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    scaler = xad.amp.GradScaler(enabled=name.endswith("-amp"))
    return b, model, loss_of, opt, sched, scaler, loader


def _step(b, model, loss_of, opt, sched, scaler, batches):
    amp = xad.amp.autocast(xad.float16, enabled=scaler.is_enabled())
    with xad.use_backend(b), amp:  # new tensors (the decoder's positions) on the model's
        loss = loss_of(*next(batches))
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
    sched.step()
    opt.zero_grad()
    return loss


@pytest.mark.parametrize("device", ["cuda:0", "cuda:1"])
@pytest.mark.parametrize("name", list(KNOWN))
def test_training_step_sync_and_allocation_budget(name, device):
    state, pool = cupy_sim.STATE, cupy_sim.POOL
    b, model, loss_of, opt, sched, scaler, loader = _setup(name, device)
    batches = iter(loader)
    state.reset()
    state.strict = True
    try:
        mallocs = []
        for i in range(6):
            before, m0 = len(state.transfers), pool.mallocs
            loss = _step(b, model, loss_of, opt, sched, scaler, batches)
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
