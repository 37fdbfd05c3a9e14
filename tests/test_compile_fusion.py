"""xad.compile(fuse=True): chains of elementwise operations run as one ``cupy.fuse`` kernel
each on CuPy and give what eager mode gives. Run against the CuPy emulator (cupy-sim), whose
``cupy.fuse`` traces the function with the same NumPy ufuncs in the same order and counts one
kernel launch per call (tests/cupy_sim/fusion.py), and on a GPU when one is present
(docs/GPU.md). On other backends the flag changes nothing (no backend but CuPy fuses)."""

from __future__ import annotations

import cupy_sim
import numpy as np
import pytest
from check_mode import CHECK_MODE
from cupy_sim.streams import COUNTS
from test_compile import _data, _state
from test_compile_cuda_graphs import _mlp_step, sim  # noqa: F401 - the fixture

import xad
from xad import nn, optim

pytestmark = pytest.mark.filterwarnings("error:xad.compile:RuntimeWarning")


def _same(xb: xad.Backend, a: list, b: list) -> None:
    for u, v in zip(a, b):
        if xb.name == "cupy":  # a GPU's fused kernel contracts a * b + c into an FMA
            # (NVRTC's default, which cupy.fuse cannot turn off): float32 results differ by
            # a few ulp, up to 5.6e-6 relative on an H200 (docs/GPU.md)
            np.testing.assert_allclose(u, v, rtol=2e-5, atol=1e-8)
        else:  # the emulator: the same ufuncs in the same order; elsewhere: no fusion
            np.testing.assert_array_equal(u, v)


def _launches(xb: xad.Backend, make, args: tuple, calls: int = 4) -> dict:
    """Per ``fuse`` flag: the results of ``calls`` calls, and the kernels the last one
    launched and the fused kernels it called."""
    out = {}
    for fuse in (False, True):
        f = xad.compile(make(), fuse=fuse, cuda_graphs=False)  # it counts launches
        results = []
        for _ in range(calls):
            COUNTS.reset()
            r = f(*args)
            results += [t.numpy() for t in (r if isinstance(r, tuple) else (r,))]
        out[fuse] = (results, COUNTS.kernels, f.fused, f)
    _same(xb, out[False][0], out[True][0])
    return out


def _overhead(rounds: int):
    """bench/bench_ops.py's ``overhead`` chain: y <- tanh(y * w + x) * 0.9, then backward."""
    xad.manual_seed(0)
    x, w = xad.randn(8, requires_grad=True), xad.randn(8, requires_grad=True)

    def run():
        x.grad = None
        w.grad = None
        y = x
        for _ in range(rounds):
            y = xad.tanh(y * w + x) * 0.9
        s = y.sum()
        s.backward()
        return s.detach(), x.grad.detach(), w.grad.detach()
    return run


def test_a_chain_is_one_kernel(xb):
    with xad.no_grad():
        r = _launches(xb, lambda: lambda v: xad.tanh(v * 2.0 + 1.0) * 0.5 - v,
                      (xad.randn(4, 3),))
    if CHECK_MODE:  # each call also runs eagerly: its launches count too
        return
    if xb.name == "cupy-sim":  # multiply, add, tanh, multiply, subtract: 5 launches -> 1
        assert (r[False][1], r[True][1], r[True][2]) == (5, 1, 1)
        assert "one kernel, 5 operations" in r[True][3].program()
    elif xb.name != "cupy":
        assert r[True][2] == 0  # only CuPy fuses: a no-op elsewhere


def test_the_overhead_chain(xb):
    r = _launches(xb, lambda: _overhead(5), ())
    if CHECK_MODE:  # each call also runs eagerly: its launches count too
        return
    if xb.name == "cupy-sim":
        # forward: 20 operations -> 1 kernel; backward: its elementwise runs between the
        # in-place gradient accumulations (+=) -> 6 kernels; 49 launches (tanh's gradient
        # one kernel eagerly: xad/ops/fused.py) -> 15
        assert (r[False][1], r[True][1], r[True][2]) == (49, 15, 7)
    elif xb.name != "cupy":
        assert r[True][2] == 0


def _mlp_adam():
    xad.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 3)).to(xad.float64)
    opt = optim.Adam(model.parameters(), lr=0.01)

    def step(x, t):
        opt.zero_grad()
        loss = ((model(x) - t) ** 2).mean()
        loss.backward()
        opt.step()
        return loss.detach()
    return model, step


@pytest.mark.parametrize("which", ["Adam", "dropout"])
def test_training_steps_match_eager(xb, which):
    x, y = _data()
    args = (x, xad.randn(12, 3, dtype=xad.float64)) if which == "Adam" else (x, y)
    models = []

    def make():
        model, step = _mlp_adam() if which == "Adam" else _mlp_step(
            "SGD", dict(lr=0.05, momentum=0.9))
        models.append(model)
        return step

    r = _launches(xb, make, args, calls=12)
    _same(xb, _state(models[0]), _state(models[1]))  # parameters after 12 steps
    if xb.name == "cupy-sim" and not CHECK_MODE:  # (check mode: eager's launches count)
        # Adam: the loss's backward (tanh's is one kernel eagerly already); the
        # optimiser's step (Python, run again) is one fused kernel per parameter (counted
        # since the emulator counts a fused kernel that only writes its arguments). Dropout
        # (SGD with momentum): short runs between matmuls, reductions, reshapes and
        # dropout's draw (cross-entropy's log_softmax and range check are fused eagerly
        # already: 64 -> 53 unfused; log_softmax's sum in one reduction kernel and the NLL's
        # rows and count as reduction kernels, xad/ops/nll.py: 48; cross-entropy as one
        # node, xad/ops/cross_entropy.py, leaves no run of two to fuse)
        want = {"Adam": (21, 20, 1), "dropout": (48, 48, 0)}[which]
        assert (r[False][1], r[True][1], r[True][2]) == want


def test_values_read_after_a_region_are_its_outputs(xb):
    def fn(v):
        a = v * 2.0
        b = xad.tanh(a) + 1.0   # b's tanh: read only inside the region
        col = a.sum(axis=0)     # a: read after the region
        return b, col * 3.0 + 1.0  # a (3,) chain: its own region (another shape)

    f = xad.compile(fn, fuse=True)
    v = xad.randn(4, 3)
    with xad.no_grad():
        want = fn(v)
        for _ in range(3):
            got = f(v)
    _same(xb, [t.numpy() for t in want], [t.numpy() for t in got])
    if xb.name.startswith("cupy"):
        assert f.fused == 2
        fused = {i.label: (i.refs, i.outs) for i in f._last.program.instrs if "fused" in i.params}
        # v1 = a and v3 = b leave the first kernel, v2 = tanh(a) does not; the column chain
        # (v4, the sum, is (3,)) is the second
        assert fused == {"fused_0": ((0,), (1, 3)), "fused_1": ((4,), (6,))}
        assert "v1, v3 = fused_0(v0)  # one kernel, 3 operations:" in f.program()
    else:
        assert f.fused == 0


@pytest.mark.usefixtures("sim")
@pytest.mark.parametrize("how", ["argument", "environment"])
def test_fusion_is_off_by_default_and_the_flag_turns_it_on(monkeypatch, how):
    chain = lambda v: xad.exp(v * 2.0) + 1.0  # noqa: E731
    off = xad.compile(chain)
    for _ in range(2):
        off(xad.ones(3))
    assert off.fused == 0
    if how == "environment":
        monkeypatch.setenv("XAD_FUSE", "1")
    on = xad.compile(chain, fuse=True if how == "argument" else None)
    for _ in range(2):
        on(xad.ones(3))
    assert on.fused == 1
    monkeypatch.setenv("XAD_FUSE", "0")  # off everywhere, whatever the argument says
    never = xad.compile(chain, fuse=True)
    for _ in range(2):
        never(xad.ones(3))
    assert never.fused == 0


@pytest.mark.usefixtures("sim")
def test_fused_kernels_are_captured_in_cuda_graphs():
    runs = []
    for fuse in (False, True):
        model, step = _mlp_adam()
        f = xad.compile(step, cuda_graphs=True, fuse=fuse)
        x, t = _data()[0], xad.randn(12, 3, dtype=xad.float64)
        runs.append(([f(x, t).numpy() for _ in range(8)], _state(model), f))
    _same(xad.get_backend(), runs[0][0] + runs[0][1], runs[1][0] + runs[1][1])
    # graphs: see test_compile_cuda_graphs (one); the activations' gradients and
    # cross-entropy are fused eagerly already (xad/ops/fused.py, cross_entropy.py): the
    # squared error's run is the region left
    if not CHECK_MODE:  # each call runs eagerly beside its replay: no graph is captured
        assert runs[1][2].graphs == 1 and runs[1][2].fused == 1


@pytest.mark.usefixtures("sim")
def test_emulated_fuse_is_one_launch_and_refuses_what_cupy_refuses():
    cp = cupy_sim.cupy
    a, m = cp.arange(3, dtype=cp.float32), cp.ones((2, 3), dtype=cp.float32)

    @cp.fuse(kernel_name="pair")
    def pair(x, y):
        return x * 2, cp.tanh(x + y)

    COUNTS.reset()
    small, big = pair(a, m)
    assert COUNTS.kernels == 1
    # every output takes the broadcast shape of the arguments, as CuPy's elementwise kernel
    assert small.shape == big.shape == (2, 3) and small.get()[1].tolist() == [0, 2, 4]
    assert cp.fuse(lambda x: x + 1)(2) == 3  # no device array: plain Python
    with pytest.raises(Exception, match="Can't cast to bool"):
        cp.fuse(lambda x: x if x > 0 else -x)(a)
    with pytest.raises(TypeError, match="Unsupported type"):
        cp.fuse(lambda x: x + m)(a)  # an array not passed as an argument
    with pytest.raises(TypeError, match="Invalid argument type"):
        pair(a, [1.0])
    with pytest.raises(TypeError):
        cp.fuse(lambda x: float(x))(a)  # no host read inside a kernel
