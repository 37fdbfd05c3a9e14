"""xad.compile(cuda_graphs=True): replays launch captured CUDA graphs on CuPy and give what
eager mode gives. Run against the CuPy emulator (cupy-sim), whose stream capture records
kernels and whose graphs re-run them on the same buffers (tests/cupy_sim/streams.py), and on
a GPU when one is present (docs/GPU.md). On other backends the flag changes nothing."""

from __future__ import annotations

import contextlib

import cupy_sim
import numpy as np
import pytest
from check_mode import CHECK_MODE, skip_in_check_mode
from cupy_sim.streams import COUNTS
from test_compile import _data, _state

import xad
from xad import nn, optim

pytestmark = pytest.mark.filterwarnings("error:xad.compile:RuntimeWarning")

STEPS = 20


def _mlp_step(opt_name: str, kw: dict):
    xad.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))
    model = model.to(xad.float64)
    opt = getattr(optim, opt_name)(model.parameters(), **kw)
    loss_fn = nn.CrossEntropyLoss()

    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    return model, step


def _is_cupy(b: xad.Backend) -> bool:
    return b.name.startswith("cupy")


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.05, momentum=0.9)),
                                     ("Adam", dict(lr=0.01, capturable=True))],
                         ids=["SGD-momentum", "Adam"])
def test_captured_replay_matches_eager(xb, name, kw):
    runs = []
    for graphs in (None, True):
        model, step = _mlp_step(name, kw)
        fn = step if graphs is None else xad.compile(step, cuda_graphs=True)
        COUNTS.reset()
        x, y = _data()
        losses = [fn(x, y).numpy() for _ in range(STEPS)]
        runs.append((losses, _state(model)))
    for a, b in zip(runs[0][0] + runs[0][1], runs[1][0] + runs[1][1]):
        if xb.name == "cupy":  # a GPU's reductions need not repeat bit for bit
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)
        else:
            np.testing.assert_array_equal(a, b)  # the same kernels in the same order
    if CHECK_MODE:  # each call runs eagerly beside its replay: no graph is captured
        return
    if xb.name == "cupy":
        assert fn.graphs == 1
    elif _is_cupy(xb):  # call 1 records, call 2 warms up, call 3 captures; 3..20 launch
        # 1 graph (zero_grad runs before its first kernel): dropout's draw (its counter
        # offset written before each launch), cross-entropy's index check (its running
        # maximum kept by the graph), the matrix products (xad's own cuBLAS handle) and the
        # optimiser's step (its numbers on the device) are all captured; the masks are
        # eager mode's, bit for bit (above)
        assert fn.graphs == 1 and COUNTS.graphs == 1
        # SGD's first step makes its momentum buffers (b = g, a kernel of its own), so its
        # second call records again and captures one call later
        again = 1 if name == "SGD" else 0
        assert COUNTS.launches == fn.graphs * (STEPS - 2 - again)
    else:
        assert fn.graphs == 0


def test_inputs_changing_between_calls_are_seen(xb):
    lin = nn.Linear(4, 3)
    f = xad.compile(lambda v: xad.tanh(lin(v)) * 2, cuda_graphs=True)
    with xad.no_grad():
        for k in range(5):
            x = xad.randn(6, 4) * (k + 1)
            np.testing.assert_array_equal(f(x).numpy(), (xad.tanh(lin(x)) * 2).numpy())
        lin.weight.mul_(-1.0)  # a parameter changed in place is read by the graph
        np.testing.assert_array_equal(f(x).numpy(), (xad.tanh(lin(x)) * 2).numpy())
    assert f.graphs == (1 if _is_cupy(xb) else 0)


def test_library_calls_run_between_graphs(xb):
    """CuPy refuses cuBLAS and cuSOLVER calls inside a capture (so does the emulator): the
    matrix products and ``eigh`` (two results) run between the graphs, on each call's
    values."""
    def fn(a, v):
        t = xad.tanh(a)
        return xad.tanh(xad.linalg.eigh(t @ t.mT)[1] @ v) * 2.0

    f = xad.compile(fn, cuda_graphs=True)
    for k in range(5):
        a, v = xad.randn(3, 4, dtype=xad.float64), xad.randn(3, 2, dtype=xad.float64) * k
        np.testing.assert_array_equal(f(a, v).numpy(), fn(a, v).numpy())
    assert f.graphs == (2 if _is_cupy(xb) else 0)  # tanh | @ eigh @ | tanh, * 2.0


def test_results_are_new_arrays_each_call(xb):
    f = xad.compile(lambda v: v * 3, cuda_graphs=True)
    outs = [f(xad.full((2,), float(k))) for k in range(5)]
    assert [o.tolist() for o in outs] == [[3.0 * k] * 2 for k in range(5)]
    assert len({id(o._array) for o in outs}) == 5


def test_a_grad_zeroed_inside_the_step_keeps_the_new_gradient(xb):
    """``w.grad.zero_()`` at the start of a captured step, then ``backward``: the replay
    bound ``w.grad`` to the graph's sum, whose buffer the next replay's copy-back of the
    zeroed ``.grad`` (written in place: its old array) overwrote, so ``w.grad`` read 0 from
    the fifth call on (``w`` itself right)."""
    def make():
        w = xad.tensor([[0.0, 0.2, 0.4], [0.6, 0.8, 1.0]], dtype=xad.float64,
                       requires_grad=True)

        def step(x):
            if w.grad is not None:
                w.grad.zero_()
            loss = ((w * x) ** 2).sum()
            loss.backward()
            with xad.no_grad():
                w.sub_(0.1 * w.grad)
            return loss.detach()
        return w, step

    (we, eager), (wc, step) = make(), make()
    step = xad.compile(step, cuda_graphs=True)
    for k in range(6):
        x = xad.randn(2, 3, dtype=xad.float64)
        np.testing.assert_array_equal(step(x).numpy(), eager(x).numpy())
        np.testing.assert_array_equal(wc.grad.numpy(), we.grad.numpy(), err_msg=f"call {k}")
        np.testing.assert_array_equal(wc.numpy(), we.numpy())
    assert step.graphs == (1 if _is_cupy(xb) else 0)


@pytest.mark.parametrize("how", ["zero_grad", "clip", "replace"])
def test_gradients_kept_from_earlier_steps_keep_their_values(xb, how):
    """A caller keeping each step's ``weight.grad``, a new tensor each step (``zero_grad``
    sets it to None; ``p.grad = p.grad * c`` replaces the .grad of a weight frozen since;
    ``clip_grad_norm_`` scales it in place): the
    replays gave every kept one the graph's buffer, which each later call overwrote, so all
    read the last step's gradient. An unkept one costs no copy (``zero_grad``)."""
    def run(graphs):
        xad.manual_seed(0)
        model = nn.Linear(3, 2).to(xad.float64)
        opt = optim.SGD(model.parameters(), lr=0.1)
        if how != "zero_grad":  # a .grad that only the clipping changes from here on
            (model(xad.ones(4, 3, dtype=xad.float64)) ** 2).sum().backward()
            model.weight.requires_grad_(False)

        def step(x):
            if how == "zero_grad":
                opt.zero_grad()
            (model(x) ** 2).sum().backward()
            if how == "clip":
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            elif how == "replace":
                model.weight.grad = model.weight.grad * 0.5
            opt.step()
        f = xad.compile(step, cuda_graphs=True) if graphs else step
        kept = []
        for k in range(6):
            f(xad.full((4, 3), k + 1.0, dtype=xad.float64))
            kept.append(model.weight.grad)
        COUNTS.reset()
        for _ in range(3):
            f(xad.ones(4, 3, dtype=xad.float64))
        return [g.numpy() for g in kept], COUNTS.copies
    (eager, _), (graphs, copies) = run(False), run(True)
    for k, (g, e) in enumerate(zip(graphs, eager)):
        np.testing.assert_array_equal(g, e, err_msg=f"step {k}")
    if xb.name == "cupy-sim" and how == "zero_grad":  # each argument in, and the last kept
        assert copies == 3 + 1  # gradient once


@pytest.mark.parametrize("view", ["slice", "data"])
def test_a_change_through_a_view_of_an_argument_reaches_the_argument(xb, view):
    """``a[None].mul_(2)``: eager mode writes the caller's ``a``; a captured replay wrote the
    graph's copy of it only (no bind is recorded: the view shares ``a``'s memory), so ``a``
    kept its values from the capture on (the views fuzzer under graphs, seeds 6 and 7000074)."""
    def fn(a, b):
        with xad.no_grad():
            (a[None] if view == "slice" else a.data).mul_(2.0)
            b.mul_(3.0)
        return a * 1.0 + b

    f = xad.compile(fn, cuda_graphs=True)
    for k in range(5):
        a, b = xad.full((2, 3), float(k), dtype=xad.float64), xad.ones(2, 3, dtype=xad.float64)
        out = f(a, b)
        np.testing.assert_array_equal(a.numpy(), np.full((2, 3), 2.0 * k), err_msg=f"call {k}")
        np.testing.assert_array_equal(b.numpy(), np.full((2, 3), 3.0))
        np.testing.assert_array_equal(out.numpy(), np.full((2, 3), 2.0 * k + 3))
        assert (a._version, b._version) == (1 if view == "slice" else 0, 1)  # (.data: its own)
    assert f.graphs == (1 if _is_cupy(xb) else 0)

@pytest.fixture
def sim():
    b = xad.resolve_backend("cupy-sim")
    with xad.use_backend(b):
        COUNTS.reset()
        yield b


def test_a_host_read_falls_back_to_eager_without_graphs(sim):
    _, step = _mlp_step("SGD", dict(lr=0.1))

    def logging_step(x, y):
        loss = step(x, y)
        return loss if loss.item() > -1 else loss

    f = xad.compile(logging_step, cuda_graphs=True)
    x, y = _data()
    with pytest.warns(RuntimeWarning, match=r"item\(\)") as seen:
        for _ in range(4):
            f(x, y)
    assert len(seen) == 1 and f.graphs == 0 and COUNTS.graphs == COUNTS.launches == 0


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_the_flag_turns_graphs_off(sim, monkeypatch, how):
    if how == "environment":
        monkeypatch.setenv("XAD_CUDA_GRAPHS", "0")
    _, step = _mlp_step("Adam", dict(lr=0.01))
    f = xad.compile(step, cuda_graphs=how == "environment")
    x, y = _data()
    for _ in range(5):
        f(x, y)
    assert f.recordings == 1 and f.graphs == 0 and COUNTS.graphs == COUNTS.launches == 0


def test_graphs_are_off_by_default_and_on_with_the_environment(sim, monkeypatch):
    g = xad.compile(lambda v: v + 1)
    for _ in range(3):
        g(xad.ones(2))
    assert g.graphs == 0
    monkeypatch.setenv("XAD_CUDA_GRAPHS", "1")
    f = xad.compile(lambda v: v + 1)
    for _ in range(3):
        f(xad.ones(2))
    assert f.graphs == 1


@skip_in_check_mode("each call runs eagerly beside its replay: no graph, no private pools")
def test_memory_does_not_grow_across_replays(sim):
    _, step = _mlp_step("Adam", dict(lr=0.01))
    f = xad.compile(step, cuda_graphs=True)
    x, y = _data(64)
    pool = cupy_sim.POOLS[sim.device.id]
    for _ in range(4):  # record, warm up, capture, first launch
        f(x, y)
    private = f._last.graphs.plan.pools  # the program's, then one per graph
    seen = []
    for _ in range(6):
        f(x, y)
        seen.append((pool.mallocs, pool.used_bytes(),
                     [(p.mallocs, p.used_bytes()) for p in private]))
    assert seen[1:] == seen[:-1], seen
    assert len(private) == 1 + f.graphs  # each graph's temporaries in a pool of its own
    assert all(p.mallocs > 0 for p in private[1:])  # the graphs' buffers live there


def test_a_capture_that_fails_replays_without_graphs(sim, monkeypatch):
    from xad.ops import elementwise

    forward = elementwise.Exp.forward

    def exp_with_a_host_copy(b, x):  # a host-to-device copy: CUDA capture refuses it
        return forward(b, x) * b.asarray(np.ones(1))

    monkeypatch.setattr(elementwise.Exp, "forward", staticmethod(exp_with_a_host_copy))
    f = xad.compile(lambda v: xad.exp(v) + 1, cuda_graphs=True)
    with pytest.warns(RuntimeWarning, match="H2D transfers are disallowed") as seen:
        outs = [f(xad.full((3,), float(k))).numpy() for k in range(5)]
    assert len(seen) == 1 and f.graphs == 0 and COUNTS.launches == 0
    np.testing.assert_allclose(outs, [np.exp([float(k)] * 3) + 1 for k in range(5)])


@contextlib.contextmanager
def _side_capture():
    """The emulated CuPy, a side stream capturing (its caller ends the capture) and the
    memory pool its new arrays come from."""
    cp = cupy_sim.cupy
    s, pool = cp.cuda.Stream(non_blocking=True), cp.cuda.MemoryPool()
    with cp.cuda.using_allocator(pool.malloc), s:
        s.begin_capture()
        yield cp, s, pool


def test_emulated_capture_records_and_launch_reruns():
    a = cupy_sim.cupy.arange(4, dtype=cupy_sim.cupy.float32)
    with _side_capture() as (cp, s, pool):
        assert s.is_capturing()
        b = a * 2 + 1
        a += 1
        with pytest.raises(RuntimeError, match="StreamCaptureUnsupported"):
            b.get()
        with pytest.raises(RuntimeError, match="H2D"):
            cp.asarray([1.0])
        g = s.end_capture()
    assert np.isnan(b.get()).all() and a.get().tolist() == [0, 1, 2, 3]  # nothing ran
    assert pool.mallocs > 0 and not s.is_capturing()
    g.launch()
    g.launch(stream=s)
    assert b.get().tolist() == [3, 5, 7, 9] and a.get().tolist() == [2, 3, 4, 5]
    with pytest.raises(RuntimeError, match="default"):
        cp.cuda.Stream.null.begin_capture()
    with pytest.raises(NotImplementedError):
        cp.cuda.Graph()


def test_emulated_capture_reuses_a_block_its_temporaries_freed():
    # as CuPy's pool: a temporary's block is free once its last array is gone, and a later
    # allocation of the capture takes it; a word the host writes into it before a launch is
    # then overwritten by the launch (what froze dropout's masks on an H100)
    a = cupy_sim.cupy.arange(4, dtype=cupy_sim.cupy.float32)
    with _side_capture() as (cp, s, pool):
        t = a * 3  # a temporary, freed below
        b = t + 1
        del t
        word = cp.empty((), dtype=cp.float32)  # takes t's block
        c = a + word
        g = s.end_capture()
    assert pool.mallocs == 3  # b, c and t's block (shared by word)
    word.set(np.asarray(100.0, dtype=np.float32))
    g.launch()
    assert b.get().tolist() == [1, 4, 7, 10] and c.get().tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("amp", [False, True])
def test_dropout_after_gelu_under_autocast_draws_new_masks_each_replay(sim, amp):
    # the offset word of a captured draw sat in a block that gelu's float16 temporaries
    # freed earlier in the same graph: each launch overwrote the offset written before it,
    # so every replay drew the same mask (seen on an H100; the emulator now models the
    # block reuse: this failed before the word moved to the program's pool)
    def run(compiled):
        xad.manual_seed(5)
        block = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Dropout(0.3), nn.Linear(12, 2))
        opt = optim.SGD(block.parameters(), lr=0.0)

        def step(x):
            opt.zero_grad()
            with xad.amp.autocast(enabled=amp):
                loss = (block(x).float() ** 2).mean()
            loss.backward()
            opt.step()
            return loss.detach()

        fn = xad.compile(step, cuda_graphs=True) if compiled else step
        x = xad.randn(8, 6, generator=xad.Generator().manual_seed(1))
        return [fn(x).item() for _ in range(6)], fn

    (eager, _), (graphs, fn) = run(False), run(True)
    assert graphs == eager and len(set(graphs)) == 6  # lr 0: only the masks change
    assert CHECK_MODE or fn.graphs >= 1


@pytest.mark.parametrize("name", ["Adam", "NAdam", "SGD"])
def test_check_mode_passes_a_step_compiled_for_graphs(sim, name):
    # check mode traced the eager call without the program's cuda_graphs flag (the
    # optimiser's host path against the recording's device path) and compared the kernels'
    # NumPy-scalar arguments by identity: a correct step was reported as differing
    _, step = _mlp_step(name, dict(lr=0.05))
    fn = xad.compile(step, check=True, cuda_graphs=True)
    x, y = _data()
    for _ in range(4):
        fn(x, y)
    assert fn.recordings <= 2
