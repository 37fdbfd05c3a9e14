"""The sync budget of a training step on (emulated) CuPy, for each example model.

One step (DataLoader batch, forward, loss, backward, ``clip_grad_norm_``, optimiser step,
scheduler step, ``zero_grad``) makes no device-to-host transfer (``GradScaler.step`` one,
whether a gradient overflowed), ``loss.item()`` exactly one (the loss and the step's index
range checks in the same transfer); on device 1 every kernel runs with device 1 current
(the emulator raises otherwise). Allocation budget, measured on the device's pool emptied of
free blocks before step 1 (new blocks per step, steps 1-6; the same on device 0 and 1):

    fit_nonlinear 75, 22, 0, 0, 0, 0       digits 37, 8, 0, 0, 0, 0
    cnn_digits 57, 13, 0, ...              cnn_digits + autocast + GradScaler 67, 13, 0, ...
    transformer_addition 144, 46, 0, ...

(Each optimiser update is one fused kernel with no scratch arrays since issue 25.) Step 1
makes the optimiser's state (Adam's moments: the pool's used bytes grow once); step 2 is
the first to run with that state alive throughout, so its peak of live temporaries is
higher and needs a few more blocks. From step 3 on, no step
allocates a new block, and the bytes in use stay the same (nothing accumulates, the queued
index checks included).
"""

from __future__ import annotations

import gc

import cupy_sim
import numpy as np
import pytest
from test_examples import _load as _example

import xad
from xad import nn

# explicit reads per training step: none, but GradScaler.step's one read of whether a
# gradient overflowed (as PyTorch's). The index range checks of cross_entropy and embedding
# stay on the device and come back with the next read (CupyBackend.check_bounds).
STEP_READS = {"fit_nonlinear": 0, "digits": 0, "cnn_digits": 0, "cnn_digits-amp": 1,
              "transformer_addition": 0}


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
@pytest.mark.parametrize("name", list(STEP_READS))
def test_training_step_sync_and_allocation_budget(name, device):
    state = cupy_sim.STATE
    b, model, loss_of, opt, sched, scaler, loader = _setup(name, device)
    pool = cupy_sim.POOLS[b.device.id]
    pool.free_all_blocks()  # each model from a cold pool, whatever ran before
    batches = iter(loader)
    state.reset()
    state.strict = True
    gc.disable()  # freed by reference counts alone, at the same point whatever ran before
    try:
        mallocs, used = [], []
        for i in range(6):
            before, m0 = len(state.transfers), pool.mallocs
            loss = _step(b, model, loss_of, opt, sched, scaler, batches)
            reads = state.transfers[before:]
            assert len(reads) == STEP_READS[name] and all(e for _, e in reads), \
                f"step {i} synchronised: {reads}"
            mallocs.append(pool.mallocs - m0)
            n = len(state.transfers)
            value = loss.item()  # the value and the step's queued index checks, in one read
            assert len(state.transfers[n:]) == 1 and state.transfers[n][1], state.transfers[n:]
            assert np.isfinite(value)
            used.append(pool.used_bytes())
    finally:
        state.strict = False
        gc.enable()
    assert mallocs[2:] == [0, 0, 0, 0], f"new pool allocations per step: {mallocs}"
    assert len(set(used[1:])) == 1, f"bytes in use after each step: {used}"
    want = b.device.id
    assert all(p._array._dev == want for p in model.parameters())
    assert all(v._array._dev == want for st in opt.state.values() for v in st.values()
               if isinstance(v, xad.Tensor))


@pytest.mark.parametrize("device", ["cuda:0", "cuda:1"])
def test_out_of_range_index_is_raised_at_the_next_read_not_at_the_call(device):
    b = xad.resolve_backend("cupy-sim", device)
    state = cupy_sim.STATE
    with xad.use_backend(b):
        emb, x = nn.Embedding(4, 3), xad.randn(2, 3)
        state.reset()
        state.strict = True
        try:
            out = emb(xad.tensor([[1, 7]]))  # CuPy wraps 7 around to row 3: no read here
            loss = nn.functional.cross_entropy(x, xad.tensor([0, -2]))
            assert state.transfers == []
            with pytest.raises(IndexError) as e:
                loss.item()
        finally:
            state.strict = False
        assert len(state.transfers) == 1
        assert str(e.value) == ("embedding: index 7 is out of bounds for num_embeddings = 4; "
                                "valid values are 0 to 3")
        assert "backend.synchronize()" in e.value.__notes__[0]
        assert out.shape == (1, 2, 3) and loss.item() == loss.item()  # reported once
        nn.functional.cross_entropy(x, xad.tensor([3, 0]))
        with pytest.raises(IndexError, match="nll_loss: target 3 is out of bounds for the "
                                             "number of classes = 3 .ignore_index is -100."):
            b.synchronize()
        for value in (7, True, 2.5, -3):  # a value read with a queued (passing) check
            nn.functional.cross_entropy(x, xad.tensor([0, 2]))
            assert xad.tensor([value]).item() == value
        emb(xad.tensor([3]))
        b.synchronize()
        out = emb(xad.tensor([9]))  # printing is a read: the failed check is raised, not shown
        with pytest.raises(IndexError, match="embedding: index 9 is out of bounds"):
            repr(out)


def _losses(F):
    """Every loss function with its input and target (probabilities, classes, values)."""
    x = xad.randn(4, 3, requires_grad=True)
    t = xad.randn(4, 3)
    y = xad.tensor([0, 2, 1, 2])
    return {"mse_loss": lambda: F.mse_loss(x, t), "l1_loss": lambda: F.l1_loss(x, t),
            "huber_loss": lambda: F.huber_loss(x, t, delta=0.5),
            "cross_entropy": lambda: F.cross_entropy(x, y),
            "cross_entropy-smoothing": lambda: F.cross_entropy(x, y, label_smoothing=0.1),
            "nll_loss": lambda: F.nll_loss(F.log_softmax(x, axis=-1), y),
            "bce_with_logits": lambda: F.binary_cross_entropy_with_logits(x, xad.sigmoid(t))}


def _clippings():
    w = xad.randn(5, 3, requires_grad=True)
    v = xad.randn(3, requires_grad=True)

    def grads():
        (w * w * xad.tanh(w)).sum().backward()
        (v * xad.abs(v)).sum().backward()  # abs's backward: sign
        return [w, v]

    out = {f"clip_grad_norm_-{p}": (lambda p=p: nn.utils.clip_grad_norm_(grads(), 0.1, p))
           for p in (2.0, 1.0, 3.0, float("inf"))}
    out["clip_grad_value_"] = lambda: nn.utils.clip_grad_value_(grads(), 0.05)
    out["clip"] = lambda: xad.clip(w, -0.5, 0.5).sum().backward()
    out["sign"] = lambda: xad.sign(w)
    return out


@pytest.mark.parametrize("device", ["cuda:0", "cuda:1"])
def test_every_loss_and_clipping_function_makes_no_transfer(device):
    """No loss (forward and backward) and no clipping function reads the device: not even
    the syncs an operation makes by its nature (a boolean mask's count), which the
    emulator counts without raising; array_api_compat.cupy's ``sign`` and ``clip`` write
    through boolean masks, so CuPy's backend routes around them."""
    b = xad.resolve_backend("cupy-sim", device)
    state = cupy_sim.STATE
    with xad.use_backend(b):
        xad.manual_seed(0)
        cases = {**_losses(nn.functional), **_clippings()}
        for name, run in cases.items():
            state.reset()
            state.strict = True
            try:
                out = run()
                if isinstance(out, xad.Tensor) and out.requires_grad:
                    out.backward()
            finally:
                state.strict = False
            assert state.transfers == [], f"{name}: {state.transfers}"


@pytest.mark.parametrize("device", ["cuda:0", "cuda:1"])
def test_indexing_along_an_axis_makes_no_transfer(device):
    """gather, take_along_axis, scatter_add, scatter, index_add and index_fill check their
    index's range on the device (read at the next host read, as embedding's check), not by
    a read at each call; an index out of range is raised at that read."""
    b = xad.resolve_backend("cupy-sim", device)
    state = cupy_sim.STATE
    with xad.use_backend(b):
        x = xad.randn(3, 4, requires_grad=True)
        i = xad.tensor([[1, 0, 3], [2, 2, 0], [0, 1, 1]])
        runs = {"gather": lambda k: x.gather(1, k),
                "take_along_axis": lambda k: xad.take_along_axis(x, k, axis=1),
                "scatter_add": lambda k: x.scatter_add(1, k, xad.ones(3, 3)),
                "scatter": lambda k: x.scatter(1, k, 2.0),
                "index_add": lambda k: x.index_add(1, k[0], xad.ones(3, 3)),
                "index_fill": lambda k: x.index_fill(1, k[0], 0.0)}
        for name, run in runs.items():
            state.reset()
            state.strict = True
            try:
                run(i).sum().backward()
                bad = run(i + 2)  # index 5 out of range: found at the next read
            finally:
                state.strict = False
            assert state.transfers == [], f"{name}: {state.transfers}"
            with pytest.raises(IndexError, match=f"{name}: index 5 is out of bounds"):
                bad.tolist()


@pytest.mark.parametrize("device", ["cuda:0", "cuda:1"])
def test_data_dependent_sizes_read_the_device_once_explicitly(device):
    """unique, unique_consecutive and bincount make one explicit read each (the result's
    size: the number of groups, or the largest value), as PyTorch's CUDA versions
    synchronise; index_put one (its indices' range check, as ``x[i]``); isin and the
    cumulative, scatter and window functions read nothing."""
    b = xad.resolve_backend("cupy-sim", device)
    state = cupy_sim.STATE
    with xad.use_backend(b):
        x = xad.tensor([3, 1, 3, 2, 2])
        f = xad.randn(3, 4, requires_grad=True)
        one = {"unique": lambda: xad.unique(x, return_inverse=True, return_counts=True),
               "unique dim": lambda: xad.unique(x.reshape(5, 1), dim=0),
               "unique_consecutive": lambda: xad.unique_consecutive(x, return_counts=True),
               "bincount": lambda: xad.bincount(x, minlength=2),
               # the indices' range check of x[i] (xad's indexing reads it at once)
               "index_put": lambda: f.index_put((xad.tensor([0, 0]),), f[1:] * 2,
                                                accumulate=True).sum().backward()}
        none = {"isin": lambda: xad.isin(x, xad.tensor([2, 5])),
                "cummax": lambda: xad.cummax(f, 1).values.sum().backward(),
                "logcumsumexp": lambda: xad.logcumsumexp(f, 0).sum().backward(),
                "scatter_reduce": lambda: f.scatter_reduce(
                    0, xad.tensor([[0, 2, 0, 1]]), f[:1] * 2, "amax").sum().backward(),
                "unfold": lambda: f.unfold(1, 2, 1).sum().backward()}
        for name, run in {**one, **none}.items():
            state.reset()
            state.strict = True
            try:
                run()
            finally:
                state.strict = False
            want = 1 if name in one else 0
            assert len(state.transfers) == want and all(e for _, e in state.transfers), \
                (name, state.transfers)
