"""A compiled training step as one CUDA graph on ``cupy-sim`` (issue 25, item 4): the
optimiser's numbers on the device (xad/optim/capturable.py) and the matrix products by
xad's own cuBLAS handle (backends/cupy_blas.py) are captured with the rest of the step."""

from __future__ import annotations

import cupy_sim
import numpy as np
import pytest
from cupy_sim.streams import COUNTS

import xad
from xad import nn


def _run(compiled: bool, lr_change: str, steps: int = 8):
    cupy_sim.register()
    with xad.use_backend("cupy-sim"):
        xad.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))
        opt = xad.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1,
                              capturable=True)
        sched = xad.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
        x, y = xad.randn(4, 6), xad.randn(4, 2)

        def body(x, y):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            if lr_change == "scheduler":
                sched.step()
            return loss.detach()

        fn = xad.compile(body, cuda_graphs=True) if compiled else body
        losses = []
        for i in range(steps):
            if lr_change == "by hand":
                opt.param_groups[0]["lr"] = 0.05 / (i + 1)
            COUNTS.reset()
            losses.append(fn(x, y).numpy())
        last = (COUNTS.kernels, COUNTS.launches, COUNTS.uploads)
        return losses, [p.numpy() for p in model.parameters()], last, fn


@pytest.mark.parametrize("lr_change", ["scheduler", "by hand"])
def test_a_new_learning_rate_reaches_the_replayed_graph(lr_change):
    """The graph reads the learning rate from device memory, which a host-to-device copy
    (no kernel) rewrites before the launch whenever ``group["lr"]`` changed: the replayed
    step gives the eager step's numbers as the rate halves at every step."""
    eager = _run(False, lr_change)
    graph = _run(True, lr_change)
    for a, b in zip(eager[0] + eager[1], graph[0] + graph[1]):
        np.testing.assert_array_equal(a, b)
    kernels, launches, uploads = graph[2]
    assert graph[3].graphs == 1 and (kernels, launches, uploads) == (0, 1, 1)
    frozen = _run(True, "none")  # the rate left alone: the same trajectory as eager's
    assert frozen[2][2] == 0 and not all(
        np.array_equal(a, b) for a, b in zip(frozen[1], graph[1]))


def test_device_numbers_equal_the_functional_rule():
    """Adam's bias corrections computed on the device, from the same formula
    (``_adam_scalars``), give the host rule's numbers (within an ulp: NumPy's and CUDA's
    ``pow`` are not CPython's)."""
    rng = np.random.default_rng(0)
    start = rng.standard_normal((5, 3))
    grads = [rng.standard_normal((5, 3)) for _ in range(30)]
    out = []
    cupy_sim.register()
    for capturable in (False, True):
        with xad.use_backend("cupy-sim"):
            w = xad.tensor(start, dtype=xad.float64, requires_grad=True)
            opt = xad.optim.Adam([w], lr=0.01, amsgrad=True, weight_decay=0.1,
                                 capturable=capturable)
            for g in grads:
                w.grad = xad.tensor(g, dtype=xad.float64)
                opt.step()
            out.append(w.numpy())
            step = opt.state[w]["step"]
    np.testing.assert_allclose(out[0], out[1], rtol=1e-14, atol=0)
    assert isinstance(step, xad.Tensor) and step.item() == 30.0


def test_a_changed_beta_records_the_step_again():
    """Betas, eps and weight decay are kernel constants of the captured step: a change is
    a guard that fails, and the step is recorded again (never replayed stale)."""
    cupy_sim.register()
    with xad.use_backend("cupy-sim"):
        w = xad.ones(3, requires_grad=True)
        opt = xad.optim.Adam([w], lr=0.1)

        @xad.compile(cuda_graphs=True)
        def step(x):
            opt.zero_grad()
            (w * x).sum().backward()
            opt.step()
            return w.detach()

        x = xad.ones(3)
        for _ in range(4):
            step(x)
        n = step.recordings
        opt.param_groups[0]["betas"] = (0.5, 0.9)
        step(x)
        assert step.recordings == n + 1


def test_an_index_check_inside_the_graph_reports_a_bad_step_at_the_next_read():
    """cross_entropy's target check runs inside the graph (a running maximum per site that
    each launch updates, queued after it, reset once read): a bad step followed by a good
    one is still reported at the next host read, and only once."""
    cupy_sim.register()
    with xad.use_backend("cupy-sim") as b:
        xad.manual_seed(0)
        model = nn.Linear(4, 3)
        opt = xad.optim.Adam(model.parameters(), lr=0.1)

        @xad.compile(cuda_graphs=True)
        def step(x, y):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()

        x, good, bad = xad.randn(5, 4), xad.tensor([0, 1, 2, 1, 0]), xad.tensor([0, 1, 7, 1, 0])
        for _ in range(4):
            step(x, good).item()
        assert step.graphs == 1
        COUNTS.reset()
        step(x, bad)
        step(x, good)
        assert COUNTS.kernels == 0 and COUNTS.launches == 2
        with pytest.raises(IndexError, match="target 7 is out of bounds"):
            b.synchronize()
        step(x, good).item()  # read and reset: nothing to report
