"""The benchmark harness (bench/) cannot rot: every workload's implementations still agree at
tiny sizes, a disagreement is caught, and each runner's timed step still runs. No timings."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

_RUN = Path(__file__).resolve().parents[1] / "bench" / "run.py"


def _load_run():
    if "xad_bench_run" in sys.modules:
        return sys.modules["xad_bench_run"]
    spec = importlib.util.spec_from_file_location("xad_bench_run", _RUN)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["xad_bench_run"] = mod
    spec.loader.exec_module(mod)  # puts bench/ at the end of sys.path
    return mod


run = _load_run()
import bench_harness  # noqa: E402  (importable once run.py has set the path)
import bench_memory  # noqa: E402


@pytest.fixture(autouse=True)
def _numpy_backend():
    import xad
    prev = xad.get_backend()
    xad.set_backend("numpy")
    yield
    xad.set_backend(prev.name, device=prev.device)


@pytest.mark.parametrize("name", list(run.WORKLOADS))
def test_implementations_agree(name):
    errors = run.check_workload(name, "tiny")
    installed = {"torch": run.have_torch(), "jax-jit": run.have_jax()}
    expected = {i for i in run.WORKLOADS[name].impls if installed.get(i, True)}
    assert set(errors) == expected
    assert max(errors.values()) <= run.WORKLOADS[name].rtol


@pytest.mark.parametrize("name", list(run.WORKLOADS))
def test_timed_step_runs(name):
    w = run.WORKLOADS[name]
    for impl in run._impls(w):
        w.build(impl, "tiny").step()


def test_disagreement_is_caught():
    w = run.WORKLOADS["mlp-small"]
    results = {impl: w.build(impl, "tiny").check() for impl in ("xad", "numpy")}
    results["xad"]["grad/W1"] = results["xad"]["grad/W1"] * 1.01
    with pytest.raises(bench_harness.CheckError, match="grad/W1"):
        bench_harness.compare(results, w.rtol)
    results["xad"].pop("grad/W1")
    with pytest.raises(bench_harness.CheckError, match="missing"):
        bench_harness.compare(results, w.rtol)


@pytest.mark.parametrize("name", ["overhead", "hvp", "mlp-small", "seed-deep", "mlp"])
def test_new_implementations_run_there(name):
    impls = run.WORKLOADS[name].impls
    assert "xad-compiled" in impls and "jax-jit" in impls
    assert ("jax-jit" in run._impls(run.WORKLOADS[name])) == run.have_jax()


def test_compiled_runner_replays():
    runner = run.WORKLOADS["mlp-small"].build("xad-compiled", "tiny")
    for _ in range(3):
        runner.step()
    assert runner._step.recordings == 1
    vals = runner.check()
    assert vals["self/replay-vs-eager"] == 0.0  # numpy: replay is bit-identical to eager


def test_compiled_fallback_or_rerecording_is_caught():
    import xad
    w = xad.ones(2, requires_grad=True)

    def f(x):
        return (w.sum() * x).sum().detach()

    step = bench_harness.compile_replaying(xad, f, [(xad.ones(2),)])
    with pytest.raises(bench_harness.CheckError, match="1 programs recorded where 0"):
        with bench_harness.must_replay(step):
            step(xad.ones(3))  # a new shape: records again
    with pytest.raises(bench_harness.CheckError, match="runs eagerly"):
        bench_harness.compile_replaying(xad, lambda x: (w * x).sum().item(), [(xad.ones(2),)])


def test_bad_optimiser_step_is_caught():
    before = np.array([0.5, -0.25])
    grad = np.array([2.0, -1e-3])
    good = before - 1e-3 * np.sign(grad)
    assert bench_harness.adam_first_step_error(before, good, grad, 1e-3) < 1e-3
    assert bench_harness.adam_first_step_error(before, before, grad, 1e-3) > 0.5


def test_memory_child_reports_peak():
    out = bench_memory.measure("numpy", "tiny", steps=2, threads=1)
    assert out["peak_kib"] >= out["base_kib"] > 0
    assert out["mib"] >= 0


def test_table_shows_ratios_and_failures():
    rows = [{"name": "mlp", "unit": "ms/step", "target": "t", "errors": {"xad": 1e-6},
             "median": {"xad": 2.0, "numpy": 1.0, "torch": 4.0},
             "spread": {"xad": 0.1, "numpy": 0.0, "torch": 0.02}},
            {"name": "hvp", "unit": "ms", "target": "t", "failed": "xad vs numpy: hvp/W"}]
    text = run.table(rows)
    assert "| 2.00x | 0.50x |" in text and "±10%" in text
    assert "CHECK FAILED" in text
    assert "compiled" not in text and "jax" not in text  # columns only for present impls


def test_table_shows_compiled_and_jax_columns():
    rows = [{"name": "mlp", "unit": "ms/step", "target": "t", "errors": {"xad": 1e-6},
             "median": {"xad": 4.0, "xad-compiled": 2.0, "numpy": 1.0, "jax-jit": 1.6},
             "spread": {}}]
    head, _, line = run.table(rows).splitlines()
    assert "| xad | xad-compiled | numpy | jax-jit | xad/numpy |" in head
    assert "compiled/numpy | compiled/xad | compiled/jax |" in head
    assert "| 4.00x | 2.00x | 0.50x | 1.25x |" in line


def test_per_example_bench_agrees():
    import per_example  # bench/per_example.py (issue 28's per-example gradient rows)
    calls = per_example.build("mlp", (6, 4, 3), 5)
    assert per_example.agreement(calls) < 1e-5
    times = per_example.time_interleaved(calls, 2, per_example.time.perf_counter)
    assert all(len(ts) == 2 for ts in times.values())


def test_instruction_counter_runs_its_steps():
    """bench/instructions.py's counted process (what runs under callgrind) builds the
    workload as run.py does and runs its steps; the count needs valgrind, not this."""
    import instructions

    assert instructions.main(["overhead", "--size", "tiny", "--inner", "2"]) == 0
    with pytest.raises(SystemExit):
        instructions.main(["no-such-workload", "--inner", "1"])
