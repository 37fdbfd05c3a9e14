"""xad.compile guards the Python values a recording read (xad/compile/pyguards.py): a global,
a closure cell, a dict entry, a list item or an attribute of a plain object changed between
calls records again, as torch.compile's guards do; each of these gave the first call's
number before (a silent divergence)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from check_mode import CHECK_MODE

import xad
from xad import nn

SCALE = 2.0
STATE = {"step": 0, "scale": 2.0}


def _f64(*values):
    return xad.tensor(list(values), dtype=xad.float64)


def _same(f, fn, *args):
    """``f`` (compiled) gives eager ``fn``'s numbers, bit for bit."""
    np.testing.assert_array_equal(f(*args).numpy(), fn(*args).numpy())


def _scaled(x):
    return x * SCALE + 1


def test_a_global_rebound_between_calls(xb):
    global SCALE
    f = xad.compile(_scaled)
    try:
        for v in (2.0, 3.0, -0.0, 0.0, 1, True, float("nan")):
            SCALE = v
            _same(f, _scaled, _f64(1.0, 2.0))
    finally:
        SCALE = 2.0


def test_a_closure_cell_rebound_between_calls(xb):
    scale = 2.0

    def fn(x):
        return (x * scale).sum() * 1

    f = xad.compile(fn)
    for v in (2.0, 3.0, 3.0, 0.5):
        scale = v
        _same(f, fn, _f64(1.0, 2.0))
    if not CHECK_MODE:
        assert f.recordings == 3


@pytest.mark.parametrize("how", ["dict", "nested", "list", "append", "attr", "method",
                                 "module", "submodule", "class", "classmethod"])
def test_a_value_inside_a_container_or_object(xb, how):
    """``cfg["p"]``, ``cfg["opt"]["lr"]``, ``ws[1]``, a list iterated and grown,
    ``obj.alpha``, ``self.k`` read in a method, a Module's dict attribute (also of a
    module inside ``Sequential``), a class attribute read through an instance or in a
    classmethod: changed between calls, the next call records again."""
    class Obj:
        beta = 2.0

        @classmethod
        def get(cls):
            return cls.beta

        def __init__(self):
            self.alpha = 2.0

        def apply(self, x):
            return x * self.alpha

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.cfg = {"a": 2.0}

        def forward(self, x):
            return x * self.cfg["a"]

    cfg, ws, obj, net = {"p": 2.0, "opt": {"lr": 0.5}}, [1.0, 2.0], Obj(), Net()
    seq = nn.Sequential(Net())
    fns = {"dict": lambda x: x * cfg["p"], "nested": lambda x: x * cfg["opt"]["lr"],
           "list": lambda x: x * ws[1], "append": lambda x: x * sum(w for w in ws),
           "attr": lambda x: x * obj.alpha, "method": lambda x: obj.apply(x) * 1,
           "module": lambda x: net(x) * 1, "submodule": lambda x: seq(x) * 1,
           "class": lambda x: x * obj.beta, "classmethod": lambda x: x * Obj.get()}
    change = {"dict": lambda k: cfg.update(p=k), "nested": lambda k: cfg["opt"].update(lr=k),
              "list": lambda k: ws.__setitem__(1, k), "append": lambda k: ws.append(k),
              "attr": lambda k: setattr(obj, "alpha", k),
              "method": lambda k: setattr(obj, "alpha", k),
              "module": lambda k: net.cfg.update(a=k),
              "submodule": lambda k: seq[0].cfg.update(a=k),
              "class": lambda k: setattr(Obj, "beta", k),
              "classmethod": lambda k: setattr(Obj, "beta", k)}
    fn = fns[how]
    f = xad.compile(fn)
    for k in (3.0, 4.0, 4.0):
        _same(f, fn, _f64(1.0, 2.0))
        change[how](k)
    _same(f, fn, _f64(1.0, 2.0))


def test_a_helper_function_and_what_it_reads(xb):
    """A global function rebound, and a global the helper (another function) reads."""
    g = {"xad": xad, "k": 2.0}
    src = "def helper(x):\n    return x * k\n\ndef fn(x):\n    return helper(x) + 1\n"
    exec(compile(src, "helpers.py", "exec"), g)
    fn = g["fn"]
    f = xad.compile(fn)
    _same(f, fn, _f64(1.0))
    g["k"] = 5.0
    _same(f, fn, _f64(1.0))
    g["helper"] = lambda x: x * -1.0
    _same(f, fn, _f64(1.0))


def test_an_unread_entry_changed_keeps_the_program(xb):
    """``STATE["step"]`` changes every call; the function reads only ``STATE["scale"]``
    (a constant key): one recording serves every call, and a change of what it reads
    records again."""
    f = xad.compile(lambda x: x * STATE["scale"])
    try:
        for k in range(4):
            STATE["step"] = k
            assert f(_f64(1.0)).tolist() == [2.0]
        STATE["scale"] = 3.0
        assert f(_f64(1.0)).tolist() == [3.0]
    finally:
        STATE.update(step=0, scale=2.0)
    if not CHECK_MODE:
        assert f.recordings == 2


def test_a_value_the_call_changes_runs_eagerly(xb):
    """A counter the function increments and uses: a replay would not increment it, so the
    function runs eagerly (with one warning) and counts as eager mode does."""
    n = {"calls": 0}

    def fn(x):
        n["calls"] += 1
        return x * n["calls"]

    f = xad.compile(fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [f(_f64(1.0)).tolist() for _ in range(4)]
    assert got == [[1.0], [2.0], [3.0], [4.0]]
    assert any("changes a Python value it reads" in str(w.message) for w in caught)


def test_a_training_step_records_once(xb):
    """A whole training step (globals: a model, an optimiser, a loss) is one recording:
    the guards see no change where nothing changed (the optimiser's own state is not a
    value the step's code reads)."""
    xad.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)).to(xad.float64)
    opt = xad.optim.Adam(model.parameters(), lr=0.01)
    sched = xad.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)

    @xad.compile
    def step(x):
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        sched.step()
        return loss.detach()

    x = xad.ones(5, 3, dtype=xad.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(4):
            step(x)
    if not CHECK_MODE:
        assert step.recordings <= 2  # Adam's first step makes its state: recorded again


def test_a_value_a_host_call_changes_read_by_a_later_frame(xb):
    """A helper that starts after ``sched.step()`` (a host call) reads the learning rate
    the step just changed and uses it as a number: the recording saw it only after the
    change, so the next recording compares it with its value at the start of the call,
    and the function runs eagerly (a replay froze the first call's rate)."""
    def world():
        w = _f64(1.0).requires_grad_()
        opt = xad.optim.SGD([w], lr=1.0)
        sched = xad.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)

        def scaled(x):
            return x * opt.param_groups[0]["lr"]

        def fn(x):
            sched.step()
            return scaled(x)
        return fn

    f, e = xad.compile(world()), world()
    for _ in range(4):
        _same(f, e, _f64(1.0))


def test_an_object_whose_reads_raise_runs_eagerly(xb):
    """An object the function reads whose ``__dict__`` raises: its values cannot be
    guarded, so the function runs eagerly (with one warning), never a frozen value."""
    class Odd:
        def __getattribute__(self, name):
            if name == "__dict__":
                raise RuntimeError("no __dict__ here")
            return object.__getattribute__(self, name)

    odd = Odd()
    odd.k = 2.0
    fn = lambda x: x * odd.k  # noqa: E731
    f = xad.compile(fn)
    with pytest.warns(RuntimeWarning, match="could not be guarded"):
        _same(f, fn, _f64(1.0))
    odd.k = 3.0
    _same(f, fn, _f64(1.0))


def test_a_library_imported_through_a_path_with_dots_is_not_guarded(xb, tmp_path, monkeypatch):
    """A library directory registered with ``pyguards.library`` is skipped however its
    modules were imported: ``ci/graph_step_gpu.py`` imports the CuPy emulator through
    ``ci/../tests``, and the emulator's kernel counter (changed by every call) made every
    compiled step run eagerly there."""
    import importlib
    import sys

    from xad.compile import pyguards
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "counting_lib.py").write_text(
        "CALLS = {'n': 0}\n\ndef scaled(x):\n    CALLS['n'] += 1\n    return x * 2.0\n")
    (tmp_path / "other").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path / "other" / ".." / "lib"))
    monkeypatch.setattr(pyguards, "_LIBRARIES", list(pyguards._LIBRARIES))  # restored after
    monkeypatch.setattr(pyguards, "_SKIPPED", None)
    pyguards.library(str(lib))
    mod = importlib.import_module("counting_lib")
    try:
        f = xad.compile(lambda x: mod.scaled(x).sum())
        x = xad.tensor([1.0, 2.0], backend=xb)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # "runs eagerly ...": the library's state guarded
            got = [float(f(x).numpy()) for _ in range(3)]
        assert got == [6.0] * 3
    finally:
        sys.modules.pop("counting_lib", None)
