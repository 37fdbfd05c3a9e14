"""xad.compile: a recorded step replays exactly what eager mode does (bit for bit on NumPy,
within 1e-6 elsewhere) over 20 steps, for every optimiser; guards re-record; what cannot be
replayed runs eagerly with one warning; the program prints."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from check_mode import skip_in_check_mode

import xad
from xad import nn, optim

# a test that expects a replay fails if the function fell back to eager (which warns)
pytestmark = pytest.mark.filterwarnings("error:xad.compile:RuntimeWarning")

OPTIMISERS = [
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
    ("Adagrad", dict(lr=0.1)),
]


def _setup(seed: int, opt_name: str = "Adam", opt_kw: dict | None = None, dropout=0.2):
    xad.manual_seed(seed)
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 16),
                          nn.Tanh(), nn.BatchNorm1d(16), nn.Linear(16, 3))
    model = model.to(xad.float64)
    opt = getattr(optim, opt_name)(model.parameters(), **(opt_kw or dict(lr=0.01)))
    loss_fn = nn.CrossEntropyLoss()

    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.detach()

    return model, opt, step


def _data(n: int = 12, seed: int = 3):
    g = xad.Generator().manual_seed(seed)
    x = xad.randn(n, 5, generator=g, dtype=xad.float64)
    y = xad.randint(0, 3, (n,), generator=g)
    return x, y


def _state(model) -> list[np.ndarray]:
    return [v.numpy() for v in model.state_dict().values()]


def _same(a: list, b: list, exact: bool) -> None:
    for u, v in zip(a, b):
        if exact:
            np.testing.assert_array_equal(u, v)
        else:
            np.testing.assert_allclose(u, v, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name,kw", OPTIMISERS, ids=[n for n, _ in OPTIMISERS])
def test_compiled_training_matches_eager_for_every_optimiser(xb, name, kw):
    exact = xb.label.startswith("numpy")
    runs = []
    for compiled in (False, True):
        model, opt, step = _setup(0, name, kw)
        fn = xad.compile(step) if compiled else step
        x, y = _data()
        losses = [fn(x, y).numpy() for _ in range(20)]
        runs.append((losses, _state(model), fn))
    _same(runs[0][0], runs[1][0], exact)  # dropout masks and all
    _same(runs[0][1], runs[1][1], exact)  # parameters and BatchNorm running statistics
    assert runs[1][2].recordings == 1


def test_guards_record_again_and_stay_right(xb):
    model, opt, step = _setup(1, dropout=0.0)
    ref_model, ref_opt, ref_step = _setup(1, dropout=0.0)
    cstep = xad.compile(step)
    sched = optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    ref_sched = optim.lr_scheduler.StepLR(ref_opt, step_size=3, gamma=0.5)
    plan = [12, 12, 7, 12, 7, "eval", 12, "train", 12, 12]
    for what in plan:
        if what == "eval":
            model.eval(), ref_model.eval()
            continue
        if what == "train":
            model.train(), ref_model.train()
            continue
        x, y = _data(what)
        np.testing.assert_allclose(cstep(x, y).numpy(), ref_step(x, y).numpy(), rtol=1e-6)
        sched.step(), ref_sched.step()
    # batch 12 and 7, and batch 12 in eval mode: three recordings; the learning rate is read
    # by the optimiser's step, which runs again as Python, so the scheduler needs none
    assert cstep.recordings == 3
    _same(_state(ref_model), _state(model), xb.label.startswith("numpy"))


def test_new_dtype_records_again(xb):
    w = xad.ones(3)
    f = xad.compile(lambda x: xad.grad(lambda v: ((v * x).sum()) ** 2)(w))
    a = f(xad.ones(3)).numpy()
    b = f(xad.ones(3, dtype=xad.float64)).numpy()
    np.testing.assert_allclose(a, [6.0, 6.0, 6.0])
    np.testing.assert_allclose(b, [6.0, 6.0, 6.0])
    assert f.recordings == 2


def test_a_host_read_inside_warns_once_and_runs_eagerly(xb):
    model, opt, step = _setup(2, dropout=0.0)
    ref_model, _, ref_step = _setup(2, dropout=0.0)

    def logging_step(x, y):
        loss = step(x, y)
        return loss if loss.item() > -1 else loss  # a Python branch on a tensor's value

    f = xad.compile(logging_step)
    x, y = _data()
    with pytest.warns(RuntimeWarning, match=r"item\(\)") as seen:
        for _ in range(4):
            f(x, y)
    assert len(seen) == 1
    for _ in range(4):
        ref_step(x, y)
    _same(_state(ref_model), _state(model), xb.label.startswith("numpy"))


def test_a_result_that_needs_a_graph_runs_eagerly(xb):
    lin = nn.Linear(3, 2)
    f = xad.compile(lin)
    with pytest.warns(RuntimeWarning, match="requires grad"):
        out = f(xad.ones(1, 3))
    out.sum().backward()  # still a graph: the call ran eagerly
    assert lin.weight.grad is not None


def test_inference_under_no_grad_replays(xb):
    lin = nn.Linear(3, 2)
    f = xad.compile(lin)
    x = xad.randn(4, 3)
    with xad.no_grad():
        first, second = f(x), f(x * 2)
        expect = lin(x * 2)
    np.testing.assert_allclose(second.numpy(), expect.numpy(), rtol=1e-6)
    assert f.recordings == 1 and first.shape == (4, 2)
    with xad.no_grad():  # a parameter changed in place is read again
        lin.weight.mul_(0.0)
        np.testing.assert_allclose(f(x).numpy(), np.broadcast_to(lin.bias.numpy(), (4, 2)))


def test_compile_of_a_transform(xb):
    def f(v):
        return (xad.tanh(v) ** 2).sum()

    g = xad.compile(xad.grad(f))
    for k in range(3):
        v = xad.linspace(-1.0, 1.0, 5, dtype=xad.float64) * (k + 1)
        t = np.tanh(v.numpy())
        np.testing.assert_allclose(g(v).numpy(), 2 * t * (1 - t ** 2), rtol=1e-12)
    assert g.recordings == 1


def test_program_prints_one_line_per_array_call(xb):
    _, _, step = _setup(0, dropout=0.5)
    f = xad.compile(step)
    f(*_data())
    text = f.program()
    lines = text.splitlines()
    assert lines[0].startswith("Optimizer.zero_grad()")
    assert any(line.startswith("v") and "= linear(" in line for line in lines)
    assert any("= rand(" in line for line in lines)  # dropout's draw, made again each call
    # the step: a host call, or, captured in CUDA graphs on CuPy (XAD_CUDA_GRAPHS=1), its
    # kernels (the numbers on the device: xad/optim/capturable.py)
    assert lines[-1].startswith("Adam.step()") or (
        f.cuda_graphs and xb.name.startswith("cupy") and "= xad_adam_rule(" in lines[-1])
    assert sum(".grad =" in line for line in lines) == 16  # backward's, clip_grad_norm_'s


def test_inplace_update_without_optimiser(xb):
    w = xad.zeros(3, dtype=xad.float64, requires_grad=True)
    target = xad.tensor([1.0, -2.0, 3.0], dtype=xad.float64)

    @xad.compile
    def step(lr):
        loss = ((w - target) ** 2).sum()
        loss.backward()
        with xad.no_grad():
            w.sub_(lr * w.grad)
        w.grad = None
        return loss.detach()

    losses = [float(step(0.25).numpy()) for _ in range(5)]
    assert step.recordings == 1
    np.testing.assert_allclose(losses, [14.0 * 0.25 ** k for k in range(5)], rtol=1e-12)
    step(0.5)  # a new Python argument value records again
    assert step.recordings == 2


def test_a_factory_buffer_changed_in_place_runs_eagerly(xb):
    @xad.compile
    def f(x):
        acc = xad.zeros(3)
        acc += x  # written into a constant: a replay would keep adding
        return acc * 2

    with pytest.warns(RuntimeWarning, match="in-place"):
        f(xad.ones(3))
    np.testing.assert_allclose(f(xad.ones(3)).numpy(), [2.0, 2.0, 2.0])


@skip_in_check_mode("each call also runs eagerly and records: a replay's allocations are "
                    "not measured alone")
def test_replay_allocates_no_more_than_eager():
    import tracemalloc

    with xad.use_backend("numpy"):
        model, _, step = _setup(0)
        x, y = _data(64)
        f = xad.compile(step)
        f(x, y)
        peaks = []
        for fn in (step, f, step, f):
            fn(x, y)
            tracemalloc.start()
            fn(x, y)
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
    assert max(peaks[1], peaks[3]) <= max(peaks[0], peaks[2]) * 1.05, peaks


def test_nothing_recorded_outside(xb):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = xad.compile(lambda x: x + 1)
        f(xad.ones(2))
    assert xad.context.recorder is None


def _block_step(use_checkpoint: bool, amp: bool):
    xad.manual_seed(5)
    block = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Dropout(0.3), nn.Linear(12, 6))
    head = nn.Linear(6, 2)
    opt = optim.SGD([*block.parameters(), *head.parameters()], lr=0.1, momentum=0.9)

    def step(x):
        opt.zero_grad()
        with xad.amp.autocast(enabled=amp):
            h = xad.checkpoint(block, x) if use_checkpoint else block(x)
            loss = (head(h).float() ** 2).mean()
        loss.backward()
        opt.step()
        return loss.detach()

    return step, [*block.parameters(), *head.parameters()]


@pytest.mark.parametrize("use_checkpoint,amp", [(True, False), (False, True), (True, True)],
                         ids=["checkpoint", "autocast", "both"])
def test_compile_composes_with_checkpoint_and_autocast(xb, use_checkpoint, amp):
    if amp and xb.label.startswith("array_api_strict"):
        pytest.skip("array_api_strict has no float16")
    runs = []
    for compiled in (False, True):
        step, params = _block_step(use_checkpoint, amp)
        fn = xad.compile(step) if compiled else step
        x = xad.randn(8, 6, generator=xad.Generator().manual_seed(1))
        losses = [fn(x).numpy() for _ in range(6)]
        runs.append((losses, [p.numpy() for p in params]))
    _same(runs[0][0], runs[1][0], xb.label.startswith("numpy"))
    _same(runs[0][1], runs[1][1], xb.label.startswith("numpy"))


# ----- buffer reuse (out=): each function has a value a wrong reuse would overwrite --------
def _views_kept(x, w):
    y = x * 2.0
    v = y.reshape(-1)        # a view of y, read after y's last direct use
    z = y + 1.0
    return z, v * 1.0


def _transpose_kept(x, w):
    a = x * 3.0
    t = a.T                  # a transpose of a, read later
    b = a * a
    return b.sum() + (t * 2.0).sum(), t * 1.0


def _slice_kept(x, w):
    y = xad.tanh(x) * 0.5
    s = y[1:3]               # a basic-index view
    z = -y
    return z * w, s + 0.0


def _returned_kept(x, w):
    y = x + 1.0              # returned: never a buffer for a later result
    z = y * 2.0
    return y, -z


def _inputs_kept(x, w):
    z = x * 2.0              # x is an argument, w a live tensor: neither is written
    u = w * 3.0
    return z - u, x * 1.0


def _inplace_kept(x, w):
    acc = x * 1.0
    acc += x                 # an in-place kernel on an intermediate
    d = acc * acc
    return d, acc + 0.0


REUSE_CASES = [_views_kept, _transpose_kept, _slice_kept, _returned_kept, _inputs_kept,
               _inplace_kept]


@pytest.mark.parametrize("fn", REUSE_CASES, ids=[f.__name__[1:] for f in REUSE_CASES])
def test_buffer_reuse_never_overwrites_a_value_still_needed(xb, fn):
    w = xad.linspace(-1.0, 1.0, 12, dtype=xad.float64).reshape(4, 3)
    w0 = w.numpy().copy()
    f = xad.compile(lambda x: fn(x, w))
    for k in range(4):
        x = xad.linspace(-2.0, 2.0 + k, 12, dtype=xad.float64).reshape(4, 3)
        x0 = x.numpy().copy()
        got, want = [o.numpy() for o in f(x)], [o.numpy() for o in fn(x, w)]
        _same(want, got, xb.label.startswith("numpy"))
        np.testing.assert_array_equal(x.numpy(), x0)
    np.testing.assert_array_equal(w.numpy(), w0)
    assert f.recordings == 1


def test_buffer_reuse_keeps_gradients_and_happens_on_numpy():
    """A training step's ``.grad`` arrays are never reused; the step writes some results
    into dead buffers (``out=``) and stays bit-identical to eager mode."""
    with xad.use_backend("numpy"):
        runs = []
        for compiled in (False, True):
            model, opt, step = _setup(4, "SGD", dict(lr=0.1, momentum=0.9))
            fn = xad.compile(step) if compiled else step
            x, y = _data()
            losses = [fn(x, y).numpy() for _ in range(5)]
            grads = [p.grad.numpy() for p in model.parameters()]
            runs.append((losses, grads, _state(model)))
        for eager, replayed in zip(*runs):
            _same(eager, replayed, exact=True)
        assert "out=" in fn._last.program.source


def test_a_replay_leaves_earlier_results_alone(xb):
    """An in-place change of a tensor the call made is not replayed into the tensor the
    recording call returned (the caller may still hold it)."""
    @xad.compile
    def f(x):
        a = x * 2.0
        a += 1.0
        return a

    first = f(xad.ones(3, dtype=xad.float64))
    second = f(xad.full((3,), 5.0, dtype=xad.float64))
    third = f(xad.full((3,), 7.0, dtype=xad.float64))
    assert f.recordings == 1
    assert first.tolist() == [3.0] * 3 and second.tolist() == [11.0] * 3
    assert third.tolist() == [15.0] * 3


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint8"])
def test_integer_arithmetic_with_python_scalars_replays_exactly(xb, dtype):
    """Python ints next to integer arrays are passed as 0-d arrays of the array's dtype
    where that is what the operation computes with (never a value the dtype cannot hold)."""
    d = getattr(xad, dtype)

    def fn(i):
        return (i * 3 + 7, xad.where(i > 2, i, 0), i == 100, (i - 1) % 5)

    f = xad.compile(fn)
    for k in range(3):
        i = xad.arange(6, dtype=d) + k
        for got, want in zip(f(i), fn(i)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert f.recordings == 1
