"""A compiled training step as one CUDA graph on ``cupy-sim`` (issue 25, item 4): the
optimiser's numbers on the device (xad/optim/capturable.py) and the matrix products by
xad's own cuBLAS handle (backends/cupy_blas.py) are captured with the rest of the step."""

from __future__ import annotations

import warnings

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


@pytest.mark.parametrize("opt_name,uploads", [("Adam", 3), ("AdamW", 3), ("SGD", 2),
                                              ("RMSprop", 2)])
def test_cycled_betas_reach_the_replayed_graph_without_recording_again(opt_name, uploads):
    """``OneCycleLR`` (``cycle_momentum``) sets Adam's ``betas`` (SGD's and RMSprop's
    ``momentum``) at every step: they were kernel constants, guarded, so each call recorded
    the step again and the sixteenth ran eagerly (examples/transformer_addition.py
    --compile: 210 kernels a step, no graph). Now they are uploaded with the rate: one
    recording, one graph a step, eager's bits."""
    def run(compiled):
        cupy_sim.register()
        with xad.use_backend("cupy-sim"):
            xad.manual_seed(0)
            model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2)).double()
            extra = {"capturable": True} if opt_name != "SGD" else {}  # (PyTorch's SGD:
            if not opt_name.startswith("Adam"):  # no such flag; its numbers are exact)
                extra["momentum"] = 0.9
            opt = getattr(xad.optim, opt_name)(model.parameters(), lr=0.05, **extra)
            sched = xad.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=12)
            x, y = xad.randn(4, 6, dtype=xad.float64), xad.randn(4, 2, dtype=xad.float64)

            def body(x, y):
                opt.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                opt.step()

            fn = xad.compile(body, cuda_graphs=True) if compiled else body
            betas = set()
            for _ in range(10):
                COUNTS.reset()
                fn(x, y)
                sched.step()
                g = opt.param_groups[0]
                betas.add(g["betas"] if "betas" in g else g["momentum"])
            last = (COUNTS.kernels, COUNTS.launches, COUNTS.uploads)
            return [p.numpy() for p in model.parameters()], last, fn, len(betas)

    eager, graph = run(False), run(True)
    for a, b in zip(eager[0], graph[0]):
        np.testing.assert_array_equal(a, b)
    assert graph[3] == 10 and graph[2].recordings == 1, graph[2].recordings
    assert graph[1] == (0, 1, uploads), graph[1]  # the rate and betas or momentum uploaded


def test_device_numbers_equal_the_functional_rule():
    """Adam's bias corrections computed on the device, from the same formula
    (``_adam_numbers``), give the host rule's numbers (within an ulp: NumPy's and CUDA's
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


def test_a_changed_eps_records_the_step_again():
    """Eps and weight decay are kernel constants of the captured step (Adam's betas are
    uploaded, as the rate: the test above), and its groups' parameters are fixed in it: a
    change is a guard that fails, and the step is recorded again (never replayed stale)."""
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
        assert step.recordings == n
        opt.param_groups[0]["eps"] = 1e-3
        step(x)
        assert step.recordings == n + 1
        v = xad.ones(2, requires_grad=True)
        opt.add_param_group({"params": [v]})  # a new group: the step is recorded again
        step(x)
        assert step.recordings == n + 2


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


@pytest.mark.parametrize("name,kw", [("Adam", dict(amsgrad=True, maximize=True)),
                                     ("AdamW", dict(weight_decay=0.3)),
                                     ("RMSprop", dict(centered=True, momentum=0.5))])
def test_device_numbers_follow_groups_skipped_steps_dtypes_and_state_dicts(name, kw):
    """The device path against the host path (within an ulp) where the bookkeeping is
    hard: two groups with their own rates, a parameter without a gradient at some steps
    (its count must not advance), float32 beside float64 in one group, and a state dict
    saved and loaded halfway (counts restored from 0-d tensors)."""
    rng = np.random.default_rng(1)
    shapes = [(3, 2), (4,), (2, 2)]
    start = [rng.standard_normal(s) for s in shapes]
    grads = [[rng.standard_normal(s) for s in shapes] for _ in range(12)]
    cupy_sim.register()
    out = []
    for capturable in (False, True):
        with xad.use_backend("cupy-sim"):
            ps = [xad.tensor(a, dtype=dt, requires_grad=True)
                  for a, dt in zip(start, (xad.float64, xad.float32, xad.float64))]
            make = getattr(xad.optim, name)
            groups = [{"params": ps[:2], "lr": 0.05}, {"params": ps[2:], "lr": 0.01}]
            opt = make(groups, capturable=capturable, **kw)
            for i, gs in enumerate(grads):
                for j, (p, g) in enumerate(zip(ps, gs)):
                    p.grad = None if (j == 1 and i % 3 == 0) else xad.tensor(g, dtype=p.dtype)
                opt.step()
                if i == 5:
                    sd = opt.state_dict()
                    opt = make(groups, capturable=capturable, **kw)
                    opt.load_state_dict(sd)
            out.append([p.numpy() for p in ps] + [float(opt.state[p]["step"]) for p in ps])
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=2e-7 if np.asarray(a).dtype == np.float32
                                   else 1e-13, atol=0)
    assert out[1][3:] == [12.0, 8.0, 12.0]


def test_a_state_dict_with_device_counts_loads_on_the_host():
    """Counts saved as 0-d device tensors (the capturable path, as PyTorch's) load as ints
    on a host optimiser and as device counts on CuPy, and the steps go on alike."""
    cupy_sim.register()
    with xad.use_backend("cupy-sim"):
        w = xad.ones(3, requires_grad=True)
        opt = xad.optim.Adam([w], lr=0.1, capturable=True)
        for _ in range(3):
            w.grad = xad.ones(3)
            opt.step()
        sd = opt.state_dict()
    assert isinstance(sd["state"][0]["step"], xad.Tensor)
    host = xad.ones(3, requires_grad=True)
    opt_host = xad.optim.Adam([host], lr=0.1)
    opt_host.load_state_dict(sd)
    assert opt_host.state[host]["step"] == 3
    with xad.use_backend("cupy-sim"):
        dev = xad.ones(3, requires_grad=True)
        opt_dev = xad.optim.Adam([dev], lr=0.1)
        opt_dev.load_state_dict(sd)
        dev.grad = xad.ones(3)
        opt_dev.step()
        assert opt_dev._device is not None and opt_dev.state[dev]["step"].item() == 4
    host.grad = xad.ones(3)
    opt_host.step()
    assert opt_host.state[host]["step"] == 4
    np.testing.assert_allclose(host.numpy(), dev.numpy(), rtol=1e-6)


def _eager_and_graphed(make_opt, steps: int = 8):
    """``steps`` steps of a small model with ``make_opt(params)`` and a scheduler, eager and
    compiled with CUDA graphs, whose losses and parameters must agree bit for bit: the
    optimiser states of each run and the compiled function (``COUNTS`` holds its last
    step's counts)."""
    runs, states = [], []
    cupy_sim.register()
    for compiled in (False, True):
        with xad.use_backend("cupy-sim"):
            xad.manual_seed(0)
            model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))
            opt = make_opt(model.parameters())
            sched = xad.optim.lr_scheduler.ExponentialLR(opt, 0.8)
            x, y = xad.randn(4, 6), xad.randn(4, 2)

            def body(x, y, model=model, opt=opt, sched=sched):
                opt.zero_grad()
                loss = nn.functional.mse_loss(model(x), y)
                loss.backward()
                opt.step()
                sched.step()
                return loss.detach()

            fn = xad.compile(body, cuda_graphs=True) if compiled else body
            runs.append([fn(x, y).numpy() for _ in range(steps - 1)])
            COUNTS.reset()
            runs[-1] += [fn(x, y).numpy()] + [p.numpy() for p in model.parameters()]
            states.append(list(opt.state.values()))
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    return states, fn


@pytest.mark.parametrize("kw", [dict(momentum=0.9, nesterov=True, weight_decay=0.1),
                                dict(momentum=0.9, dampening=0.3, maximize=True),
                                dict()], ids=["nesterov", "dampening", "plain"])
def test_sgd_in_the_graph_matches_eager(kw):
    """SGD's step inside the graph (its rate on the device; the momentum buffers' first
    step, ``b = g``, recorded apart), with a scheduler: eager's numbers, bit for bit."""
    states, fn = _eager_and_graphed(lambda ps: xad.optim.SGD(ps, lr=0.1, **kw))
    assert fn.graphs == 1
    assert all("step" not in st for st in states[1])  # SGD counts no steps


@pytest.mark.parametrize("name,kw", [
    ("RMSprop", dict(momentum=0.9, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(alpha=0.9, maximize=True)),
    ("Adagrad", dict(lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.2)),
], ids=["rmsprop-centred-momentum", "rmsprop-maximize", "adagrad-decay"])
def test_rmsprop_and_adagrad_in_the_graph_match_eager(name, kw):
    """RMSprop's and Adagrad's steps inside the graph (counts, rate and Adagrad's decayed
    rate on the device), with a scheduler: eager's numbers bit for bit, one graph launch
    and no kernel outside it per replayed step, and the counts where eager has them."""
    states, fn = _eager_and_graphed(lambda ps: getattr(xad.optim, name)(ps, lr=0.05, **kw))
    assert [[float(st["step"]) for st in sts] for sts in states] == [[8.0] * 4] * 2
    assert (fn.graphs, COUNTS.kernels, COUNTS.launches) == (1, 0, 1)


def test_draws_inside_the_graph_follow_the_host_stream():
    """Dropout's draw inside the graph takes its counter offset from the host state at each
    launch: eager draws between calls and a new seed halfway give eager mode's numbers."""
    cupy_sim.register()
    runs = []
    for compiled in (False, True):
        with xad.use_backend("cupy-sim"):
            xad.manual_seed(0)
            model = nn.Sequential(nn.Linear(6, 16), nn.Dropout(0.5), nn.Linear(16, 2))
            opt = xad.optim.Adam(model.parameters(), lr=0.01)
            x, y = xad.randn(8, 6), xad.randn(8, 2)

            def body(x, y, model=model, opt=opt):
                opt.zero_grad()
                loss = nn.functional.mse_loss(model(x), y)
                loss.backward()
                opt.step()
                return loss.detach()

            fn = xad.compile(body, cuda_graphs=True) if compiled else body
            out = []
            for i in range(8):
                out.append(fn(x, y).numpy())
                out.append(xad.rand(3).numpy())  # an eager draw between the calls
                if i == 4:
                    xad.manual_seed(7)
            runs.append(out + [p.numpy() for p in model.parameters()])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    assert fn.graphs == 1


def test_the_emulated_cublas_refuses_what_a_gpu_refuses():
    """The route of backends/cupy_blas.py, modelled: CuPy's ``setStream`` refused while the
    stream captures; a gemm during capture on a handle bound to another stream, or with no
    workspace, refused; the own handle's product captured and equal to ``matmul``."""
    import ctypes

    from cupy_sim import blas
    from xad_backends.cupy_blas import OwnBlas

    cp = cupy_sim.cupy
    s, other = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    h = blas.cublas.create()
    with s:
        s.begin_capture()
        with pytest.raises(NotImplementedError, match="during stream capture"):
            blas.cublas.setStream(h, s.ptr)
        with pytest.raises(NotImplementedError, match="during stream capture"):
            cp.matmul(cp.ones((2, 2)), cp.ones((2, 2)))  # CuPy's own handle
        s.end_capture()
    x, y = cp.asarray(np.arange(6.0).reshape(2, 3)), cp.asarray(np.arange(12.0).reshape(3, 4))
    for stream, workspace, match in ((other, True, "not the capturing"),
                                     (s, False, "workspace")):
        blas.cublas.setStream(h, stream.ptr)
        blas.HANDLES[h]["workspace"] = (1, 8) if workspace else None
        z = cp.empty((2, 4))
        with s:
            s.begin_capture()
            with pytest.raises(RuntimeError, match=match):
                blas.lib.cublasDgemmStridedBatched(
                    ctypes.c_void_p(h), 0, 0, 4, 2, 3, ctypes.byref(ctypes.c_double(1.0)),
                    ctypes.c_void_p(y.data.ptr), 4, ctypes.c_longlong(0),
                    ctypes.c_void_p(x.data.ptr), 3, ctypes.c_longlong(0),
                    ctypes.byref(ctypes.c_double(0.0)), ctypes.c_void_p(z.data.ptr), 4,
                    ctypes.c_longlong(0), 1)
            s.end_capture()
    own = OwnBlas(cp, blas.cublas, blas.lib, s)
    with s:
        s.begin_capture()
        z = own.matmul(x, y.T.copy().T)  # a transposed operand: read as T, no copy
        graph = s.end_capture()
    graph.launch()
    np.testing.assert_array_equal(z.get(), np.arange(6.0).reshape(2, 3)
                                  @ np.arange(12.0).reshape(3, 4))


def test_a_momentum_set_to_zero_records_the_step_again():
    """An uploaded momentum is not guarded, but whether it is 0 is (SGD keeps no buffer at
    0: with the old buffer, dampening would scale the step): the step is recorded again and
    gives eager's numbers."""
    def run(compiled):
        cupy_sim.register()
        with xad.use_backend("cupy-sim"):
            w = xad.tensor([1.0, -2.0, 3.0], dtype=xad.float64, requires_grad=True)
            opt = xad.optim.SGD([w], lr=0.1, momentum=0.9, dampening=0.5)

            def step(x):
                opt.zero_grad()
                (w * w * x).sum().backward()
                opt.step()

            fn = xad.compile(step, cuda_graphs=True) if compiled else step
            x = xad.ones(3, dtype=xad.float64)
            for i in range(6):
                if i == 3:
                    opt.param_groups[0]["momentum"] = 0.0
                fn(x)
            return w.numpy(), fn

    eager, graph = run(False), run(True)
    np.testing.assert_array_equal(eager[0], graph[0])
    assert graph[1].recordings == 2


@pytest.mark.parametrize("opt_name,options", [
    ("Adam", {"capturable": True}), ("AdamW", {"capturable": True, "amsgrad": True}),
    ("SGD", {"momentum": 0.9, "nesterov": True}), ("SGD", {"momentum": 0.9, "dampening": 0.5}),
    ("RMSprop", {"capturable": True, "momentum": 0.5, "centered": True}),
    ("Adagrad", {}), ("NAdam", {"capturable": True}), ("Rprop", {"capturable": True})],
    ids=["Adam", "AdamW-amsgrad", "SGD-nesterov", "SGD-dampening", "RMSprop", "Adagrad",
         "NAdam", "Rprop"])
def test_an_amp_step_with_skipped_steps_is_one_graph_and_eagers_numbers(opt_name, options):
    """A GradScaler step recorded with CUDA graphs decides on the device (its Inf/NaN flag
    keeps the optimiser's kernels from changing anything, its counts from advancing; the
    scale's backoff and growth as selections) and its float16 products are captured: one
    graph a step, no host read, and eager mode's parameters, scale and growth count
    through steps that overflow (a scale of 2**20 in float16) and are skipped. It was 66
    kernels and 9 graphs a step (cnn_digits --amp), every decision a host read. SGD with
    dampening keeps the host calls (a skipped first step would leave it a zero buffer)."""
    def run(compiled):
        with xad.use_backend("cupy-sim"):
            model, opt, scaler, body, x, y = _amp_world(True, opt_name, options)
            fn = xad.compile(body, cuda_graphs=True) if compiled else body
            scales, counts = [], []
            for _ in range(14):
                COUNTS.reset()
                fn(x, y)
                scales.append(scaler.get_scale())
                counts.append((COUNTS.kernels, COUNTS.launches, len(cupy_sim.STATE.transfers)))
            state = [np.asarray(v.numpy() if isinstance(v, xad.Tensor) else v)
                     for p in model.parameters() for v in opt.state[p].values()]
            versions = [np.asarray(p._version) for p in model.parameters()]
            return [p.numpy() for p in model.parameters()] + state + versions, scales, \
                counts, scaler.state_dict()

    eager, graph = run(False), run(True)
    assert len(eager[0]) == len(graph[0])
    for a, b in zip(eager[0], graph[0]):
        np.testing.assert_array_equal(a, b)
    assert eager[1] == graph[1] and eager[3] == graph[3]
    assert any(b < a for a, b in zip(eager[1], eager[1][1:]))  # skipped steps backed off
    assert any(b > a for a, b in zip(eager[1], eager[1][1:]))  # and finite ones grew
    if "dampening" not in options:
        assert all(c[:2] == (0, 1) for c in graph[2][4:]), graph[2]


def test_a_device_mode_scaler_with_a_host_optimiser_still_skips():
    """A scaler in device mode that steps a second optimiser on the host (NumPy) decides
    that one's skip on the host: the skipping flag only reaches device kernels, so the
    update of an overflowed step would have been applied."""
    cupy_sim.register()
    with xad.use_backend("cupy-sim"):
        w = xad.ones(3, requires_grad=True)
        opt = xad.optim.Adam([w], lr=0.1, capturable=True)
        scaler = xad.amp.GradScaler(init_scale=4.0)

        @xad.compile(cuda_graphs=True)
        def step(x):
            opt.zero_grad()
            scaler.scale((w * x).sum()).backward()
            scaler.step(opt)
            scaler.update()

        for _ in range(3):
            step(xad.ones(3))
        assert scaler._tracker is not None  # device mode
    with xad.use_backend("numpy"):
        v = xad.ones(2, requires_grad=True)
        host = xad.optim.SGD([v], lr=0.1)
        scaler._scale = xad.tensor(4.0)  # (the same scaler, its numbers on NumPy)
        scaler._tracker = xad.tensor(0, dtype=xad.int32)
        scaler.scale((v * float("inf")).sum()).backward()
        scaler.step(host)
        assert v.tolist() == [1.0, 1.0]


def _amp_world(update_inside: bool, opt_name: str = "Adam", options: dict | None = None):
    """A float16 autocast step of a small model whose first steps overflow (a scale of
    2**20): ``(model, optimiser, scaler, step, x, y)``."""
    cupy_sim.register()
    xad.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))
    opt = getattr(xad.optim, opt_name)(model.parameters(), lr=0.01,
                                       **({"capturable": True} if options is None else options))
    scaler = xad.amp.GradScaler(init_scale=2.0 ** 20, growth_interval=2)
    x, y = xad.randn(4, 6) * 100, xad.randn(4, 2)

    def body(x, y):
        opt.zero_grad()
        with xad.amp.autocast(xad.float16):
            loss = nn.functional.mse_loss(model(x).float(), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        if update_inside:
            scaler.update()
        return loss.detach()
    return model, opt, scaler, body, x, y


def test_a_device_mode_step_without_update_inside_runs_eagerly():
    """A replay does not redo the scaler's per-step Python state, so a step recorded in
    device mode that leaves ``update()`` to the caller would make the caller's update find
    no checks: the recording is refused (eager, one warning) and gives eager's numbers."""
    out = []
    for compiled in (False, True):
        with xad.use_backend("cupy-sim"):
            model, _, scaler, body, x, y = _amp_world(False)
            fn = xad.compile(body, cuda_graphs=True) if compiled else body
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for _ in range(6):
                    fn(x, y)
                    scaler.update()
            out.append(([p.numpy() for p in model.parameters()], scaler.get_scale(),
                        [str(w.message) for w in caught]))
    for a, b in zip(out[0][0], out[1][0]):
        np.testing.assert_array_equal(a, b)
    assert out[0][1] == out[1][1]
    assert any("without update()" in m for m in out[1][2]), out[1][2]


def test_a_device_mode_replay_after_an_unscale_outside_is_eagers():
    """The caller's ``unscale_`` before a device-mode step leaves the scaler's Python state
    "unscaled", so eager mode's step does not unscale the new gradients again; a replay,
    which does not run that Python, would. The guard on the pending state records the call
    again, and it gives eager mode's numbers."""
    out = []
    for compiled in (False, True):
        with xad.use_backend("cupy-sim"):
            model, opt, scaler, body, x, y = _amp_world(True)
            fn = xad.compile(body, cuda_graphs=True) if compiled else body
            for k in range(8):
                if k == 5:
                    scaler.unscale_(opt)
                fn(x, y)
            out.append(([p.numpy() for p in model.parameters()], scaler.get_scale()))
    for a, b in zip(out[0][0], out[1][0]):
        np.testing.assert_array_equal(a, b)
    assert out[0][1] == out[1][1]
