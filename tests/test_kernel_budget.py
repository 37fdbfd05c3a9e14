"""Kernel budgets of a training step on ``cupy-sim`` (bench/bench_kernels.py counts them).

At GPU sizes a step is bound by kernel launches, and the emulator's counts are exact, so a
test can hold them: kernels launched one by one per step (eager, and compiled with CUDA
graphs: kernels outside the graphs), graph launches, and no host transfer and no new
pool block once the step is warm. A budget is today's count; lower it when a change lowers
the count (bench/README.md keeps the table, before and after).
"""

from __future__ import annotations

import os
import sys

import cupy_sim
import numpy as np
import pytest
from same_numbers import assert_same_numbers

import xad

sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "bench"))
from bench_kernels import WORKLOADS, measure  # noqa: E402

# workload: (eager kernels, compiled kernels outside graphs, compiled graph launches)
# (the optimisers' fused kernels count since the emulator counts a fused kernel that only
# writes into its arguments: eager counts rose by one per parameter; a join of at most 8
# arrays counts one copy kernel per array, as CuPy's; a run of more than 8 parameters is
# updated by a gradient concat and one fused kernel: bench/README.md; cnn_digits stays 188
# under CuPy's row-major layouts: im2col's strided view reads the batch-last transpose of a
# row-major activation as it is, without copying it first)
BUDGETS = {
    "mlp": (40, 0, 1),
    "attention": (215, 0, 1),
    "digits": (57, 0, 1),
    "cnn_digits": (188, 0, 1),
    "fit_nonlinear": (63, 0, 1),
    "linear_regression": (6, 0, 1),
    "transformer": (180, 0, 1),
}


@pytest.mark.parametrize("device", [0, 1])
@pytest.mark.parametrize("name", list(BUDGETS))
def test_eager_step_within_its_kernel_budget(name, device):
    c = measure(name, device=device)
    assert c.kernels <= BUDGETS[name][0], f"{name}: {c}"
    assert c.graphs == 0 and c.transfers == 0 and c.blocks == 0, f"{name}: {c}"


# the compat layer's Python wrappers around CuPy's own functions, which a step calls most
# (host time a GPU step pays per call, kernel or view)
_WRAPPED = ("reshape", "matmul", "matrix_transpose", "permute_dims")


@pytest.mark.parametrize("name", ["mlp", "attention", "transformer"])
def test_eager_step_calls_cupy_past_the_compat_wrappers(name):
    """An eager step reshapes, transposes and multiplies matrices with CuPy's own
    functions and methods (an attention step made 505 CuPy calls, 371 of them through
    these wrappers and a trial reshape per reshape; now 465; bench/README.md)."""
    cupy_sim.register()
    with xad.use_backend("cupy-sim"):
        xad.manual_seed(0)
        step = WORKLOADS[name](False)
        step()
        cupy_sim.STATE.reset()
        cupy_sim.STATE.record = True
        try:
            step()
        finally:
            cupy_sim.STATE.record = False
    # (a reshape asked to copy may use the wrapper: a kernel's cost is larger)
    through = sorted({n for ns, n, _, kw in cupy_sim.STATE.calls if ns == "compat"
                      and n in _WRAPPED and "copy" not in kw})
    assert not through, through
    assert ("ndarray", "reshape") in {(ns, n) for ns, n, *_ in cupy_sim.STATE.calls}


def test_the_mlp_adam_step_budget_is_at_most_60_kernels():
    """bench_gpu.py's MLP (784-1024-1024-10, batch 512): PyTorch's CUDA step is ~45
    kernels; xad's was 852, the optimiser run over cache-sized chunks of each parameter
    (the eager test above holds the count to the budget)."""
    assert BUDGETS["mlp"][0] <= 60


@pytest.mark.parametrize("name", list(BUDGETS))
def test_compiled_step_within_its_budget(name):
    c = measure(name, compiled=True)
    kernels, graphs = BUDGETS[name][1:]
    assert c.kernels <= kernels and c.graphs <= graphs, f"{name}: {c}"
    assert c.transfers == 0, f"{name}: {c}"


@pytest.mark.parametrize("name", ["mlp", "attention", "transformer"])
def test_a_replayed_step_launches_no_kernel_outside_its_graphs(name):
    """Issue 25's target for a compiled step on cupy-sim: 0 kernels outside graphs and at
    most 2 graph launches (the optimiser's numbers on the device, the matrix products by
    xad's own cuBLAS handle, the index checks' maxima inside the graph; arguments in and
    results out by memcpy)."""
    c = measure(name, compiled=True)
    assert c.kernels == 0 and 1 <= c.graphs <= 2, f"{name}: {c}"


@pytest.mark.parametrize("how", ["disabled-scaler", "examples-step"])
def test_a_compiled_step_with_a_disabled_grad_scaler_is_one_graph(how, monkeypatch):
    """``GradScaler(enabled=False)``'s methods are pass-throughs, not host calls: its
    ``step`` ran the optimiser as Python at every replay (20 per-parameter Adam kernels
    outside the graph for fit_nonlinear's model), and the examples' step (``amp_step``,
    zero_grad between the forward and the backward) split the graph in two as well (21
    kernels, 2 graphs, 23 copies a step, where the same step without a scaler is 0, 1, 3)."""
    import _common
    import fit_nonlinear as ex
    from bench_kernels import _data, count_step

    cupy_sim.register()
    monkeypatch.setenv("XAD_CUDA_GRAPHS", "1")  # (training_step's compile reads it)
    with xad.use_backend("cupy-sim"):
        xad.manual_seed(0)
        (x, _), (y, _) = _data((32, 1)), _data((32, 1))
        model = ex.make_model()
        opt = xad.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = xad.nn.MSELoss()
        if how == "examples-step":
            step = _common.training_step(opt, lambda a, b: loss_fn(model(a), b), True)
        else:
            scaler = xad.amp.GradScaler(enabled=False)

            def body(a, b):
                opt.zero_grad()
                loss = loss_fn(model(a), b)
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
                return loss.detach()
            step = xad.compile(body, cuda_graphs=True)
        c = count_step(lambda: step(x, y), 4)
    assert c.kernels == 0 and c.graphs == 1 and c.copies == 3, c


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_paths_equal_the_composed_rules(xb, dtype):
    """The eager fused kernels (one kernel each on CuPy, plain operations elsewhere) give
    the bits of the operations they replace."""
    from xad.ops.fused import dropout_mask, relu_grad, sigmoid_grad, tanh_grad

    rng = np.random.default_rng(0)
    dt = getattr(xad, dtype)
    y, g, u = (xad.tensor(rng.standard_normal((4, 5)), dtype=dt) for _ in range(3))
    u = xad.tensor(rng.random((4, 5)), dtype=dt)
    pairs = [(relu_grad(y, g), xad.where(y > 0, g, 0.0)),
             (tanh_grad(y, g), g * (1 - y * y)), (sigmoid_grad(y, g), g * y * (1 - y)),
             (dropout_mask(u, 0.3), (u >= 0.3).astype(dt) * (1.0 / 0.7))]
    for fused, plain in pairs:
        assert fused.dtype is plain.dtype is dt
        assert_same_numbers(xb, fused.numpy(), plain.numpy())
    from xad.ops.fused import centre, exp_shifted, inverse_sqrt

    b, x, s = xb, y._array, xad.sum(y, axis=-1, keepdims=True)._array
    with b.on_device():
        arrays = [(centre(b, x, s, 0.2), (x - s * 0.2, (x - s * 0.2) * (x - s * 0.2))),
                  (inverse_sqrt(b, s * s, 0.2, 1e-5), 1.0 / b.xp.sqrt(s * s * 0.2 + 1e-5)),
                  (exp_shifted(b, x, s), b.xp.exp(x - s))]
        for fused, plain in arrays:
            for f, p in zip(*((fused, plain) if type(plain) is tuple else ((fused,), (plain,)))):
                assert f.dtype == p.dtype and f.shape == p.shape
                assert_same_numbers(xb, b.to_numpy(f), b.to_numpy(p))


def test_fused_paths_are_one_kernel_each_on_cupy_sim():
    from cupy_sim.streams import COUNTS

    with xad.use_backend("cupy-sim"):
        x = xad.randn(8, 4, requires_grad=True)
        for f in (xad.relu, xad.tanh, xad.sigmoid):
            y = f(x)
            g = xad.ones(8, 4)
            COUNTS.reset()
            (gx,) = xad.autograd.grad(y, [x], g)
            assert COUNTS.kernels == 1, f.__name__
        u = xad.rand(8, 4)
        COUNTS.reset()
        from xad.ops.fused import dropout_mask
        dropout_mask(u, 0.5)
        assert COUNTS.kernels == 1


def test_float_remainder_and_floor_divide_are_one_kernel_each_on_cupy_sim():
    """CuPy's own float loops are wrong at an infinite divisor and a large quotient, so the
    backend computes them from fmod (NumPy's algorithm), fused: they were 8 and 15 kernels;
    float16 goes through float32 (two casts in, one out)."""
    from cupy_sim.streams import COUNTS

    with xad.use_backend("cupy-sim") as b:
        for dtype, kernels in ((np.float32, 1), (np.float64, 1), (np.float16, 4)):
            x = b.from_numpy(np.array([-4.0, 5.5, 1.0], dtype=dtype))
            y = b.from_numpy(np.array([np.inf, -1.5, 0.1], dtype=dtype))
            for f in (b.xp.remainder, b.xp.floor_divide):
                COUNTS.reset()
                f(x, y)
                assert COUNTS.kernels == kernels, (f, dtype)


def test_clip_grad_norm_reads_nothing_and_reduces_each_gradient_once():
    """``clip_grad_norm_`` of six gradients on cupy-sim: a product and a reduction per
    gradient, the stack (one copy kernel per array, as CuPy joins at most 8) and its sum,
    the norm and the factor (4 kernels: ``**``, ``+``, ``/``, ``minimum``), one product per
    gradient (was 31: ``abs``, ``**`` and a sum per gradient, the stack counted as one
    kernel; 28 while the emulator missed ``minimum`` of a 0-d array and a NumPy scalar);
    no host read."""
    import cupy_sim
    from cupy_sim.streams import COUNTS

    with xad.use_backend("cupy-sim"):
        ps = [xad.randn(5, 4, requires_grad=True) for _ in range(6)]
        for p in ps:
            p.grad = xad.randn(5, 4)
        COUNTS.reset()
        cupy_sim.STATE.reset()
        xad.nn.utils.clip_grad_norm_(ps, 0.1)
        assert COUNTS.kernels <= 29 and cupy_sim.STATE.transfers == []


@pytest.mark.parametrize("n,nbytes,dtypes,kernels,uploads", [
    (8, 40, 1, 8, 0), (9, 40, 1, 1, 1), (9, 40, 2, 9, 0), (12, 3 * 2 ** 20, 1, 12, 0)],
    ids=["8-copies", "9-one-kernel", "9-two-dtypes", "12-large-copies"])
def test_concatenate_counts_as_cupy_14(n, nbytes, dtypes, kernels, uploads):
    """cupy/_core/_routines_manipulation.pyx ``_concatenate`` (CuPy 14): more than 8 arrays
    of the output's dtype averaging under 2 MiB are joined by one kernel after uploading a
    table of their pointers (three tables where they differ in length); otherwise one copy
    kernel per array. Inside a capture the one-kernel join's upload is refused."""
    import cupy_sim
    from cupy_sim.streams import COUNTS

    cupy_sim.register()
    cp = cupy_sim.cupy
    arrays = [cp.zeros(nbytes // 4, dtype=np.float32 if i % dtypes == 0 else np.float64)
              for i in range(n)]
    COUNTS.reset()
    cp.concatenate(arrays)
    assert (COUNTS.kernels, COUNTS.uploads) == (kernels, uploads)
    COUNTS.reset()
    cp.concatenate(arrays[:1] * 4 + [cp.zeros(3, dtype=arrays[0].dtype)] * (n - 4))
    if kernels == 1:
        assert COUNTS.uploads == 3
    if kernels == 1:
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            stream.begin_capture()
            with pytest.raises(RuntimeError, match="host-to-device"):
                cp.concatenate(arrays)
            stream.end_capture()


def test_a_kernel_with_a_numpy_scalar_argument_and_a_scalar_result_counts():
    """A 0-d device array times a NumPy scalar is one kernel (NumPy gives a scalar, which
    the emulator makes a 0-d device array). The emulator once counted none: it told a
    fresh result from a view of an argument by ``id``, and the scalar argument's temporary
    array, freed before the result's was made, lent it the same ``id``."""
    import cupy_sim
    from cupy_sim.streams import COUNTS

    cp = cupy_sim.cupy
    x = cp.asarray(np.float32(2))
    for other in (3.0, np.float32(3), np.float64(3)):
        COUNTS.reset()
        y = x * other
        z = cp.multiply(x, other)
        assert COUNTS.kernels == 2, type(other)
        assert float(y) == float(z) == 6
