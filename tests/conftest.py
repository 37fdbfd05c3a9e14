"""The one backend fixture every numerical test uses, and a per-backend summary.

``xb`` runs a test once per backend that can run here: numpy, array_api_strict (its
default device, and ``device1``, where any host read of a device array fails), torch and
jax when installed, cupy when a GPU is present (skipped with the reason otherwise), and
``cupy-sim``: the CuPy backend over the strict emulator in tests/cupy_sim, where any
implicit device-to-host read fails the test, on emulated device 0 and on device 1 (where a
kernel given an array while another device is current fails, as in CuPy without peer
access).
"""

from __future__ import annotations

import collections
import contextlib
import os

# SciPy decides at import whether its functions accept array-API objects (xad tensors): set
# it before anything imports SciPy (xad's NumPy backend does, for erf), once per process and
# xdist worker. NumPy inputs behave as before; tests/test_third_party.py relies on it.
os.environ["SCIPY_ARRAY_API"] = "1"
# JAX is a backend and a reference here, on the CPU (as torch): on a GPU machine it would
# otherwise take 75% of the GPU's memory in every xdist worker at its first array, and
# CuPy's tests would run out of memory beside it.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# Under xdist each worker gets its share of the cores for OpenMP/BLAS/numexpr pools (set
# before those libraries load): with every library's default (a thread per core in every
# worker) the workers' threads spin against each other, and on 2 cores a torch-heavy test
# took twice the CPU time. test_numexpr_paths.py checks xad.set_num_threads still moves them.
_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
if _workers:
    _share = str(max(1, (os.cpu_count() or 1) // _workers))
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                 "NUMEXPR_NUM_THREADS"):
        os.environ.setdefault(_var, _share)

# ci/test.sh sets XAD_TEST_JAX_CACHE: JAX's persistent compilation cache, a folder per worker
# (one writer each: JAX writes its entries without a lock, so a worker could read another's
# half-written one), kept between runs; read by JAX at its import, which comes later
if os.environ.get("XAD_TEST_JAX_CACHE"):
    os.environ["JAX_COMPILATION_CACHE_DIR"] = os.path.join(  # (not inherited: per process)
        os.environ["XAD_TEST_JAX_CACHE"], os.environ.get("PYTEST_XDIST_WORKER", "main"))
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
    # (XLA's own caches live under the folder and put its path in every key: none)
    os.environ.setdefault("JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES", "none")

import cupy_sim  # noqa: E402
import pytest  # noqa: E402

import xad  # noqa: E402
from xad.backend import BackendError  # noqa: E402

cupy_sim.register()
# tests/typing/ holds programs for mypy (ci/typecheck.sh), tests/torch_programs/ PyTorch
# programs test_as_torch.py runs as subprocesses: not tests, never imported here (under
# --doctest-modules an xdist worker, whose sys.argv is ['-c'], ran all four at import)
collect_ignore = ["typing", "torch_programs"]
PARAMS = ["numpy", "array_api_strict", "array_api_strict:device1", "torch", "jax", "cupy",
          "cupy-sim", "cupy-sim:cuda:1"]


@contextlib.contextmanager
def _no_host_reads():
    """array_api_strict lets float()/bool()/int() of a device1 array pass; make them fail."""
    import array_api_strict as xps
    cls = type(xps.asarray(0))
    cpu = xps.Device("CPU_DEVICE")
    saved = {n: getattr(cls, n) for n in ("__float__", "__bool__", "__int__", "__index__",
                                          "__complex__", "__array__") if hasattr(cls, n)}

    def guard(name, orig):
        def f(self, *a, **k):
            if self.device != cpu:
                raise AssertionError(f"implicit host read ({name}) of an array on "
                                     f"{self.device}")
            return orig(self, *a, **k)
        return f

    for n, orig in saved.items():
        setattr(cls, n, guard(n, orig))
    try:
        yield
    finally:
        for n, orig in saved.items():
            setattr(cls, n, orig)


@contextlib.contextmanager
def _sim_strict():
    """On cupy-sim an implicit device-to-host transfer raises (see tests/cupy_sim/core.py)."""
    cupy_sim.STATE.reset()
    cupy_sim.STATE.strict = True
    try:
        yield
    finally:
        cupy_sim.STATE.strict = False


def _backend(param: str) -> xad.Backend:
    name, _, device = param.partition(":")
    try:
        return xad.resolve_backend(name, device or None)
    except BackendError as e:
        pytest.skip(f"{param} cannot run here: {str(e).splitlines()[0]}")


@pytest.fixture(params=PARAMS)
def xb(request):
    """The backend under test; new tensors are made on it for the test's duration."""
    b = _backend(request.param)
    guard = (_no_host_reads() if request.param.endswith("device1") else
             _sim_strict() if request.param.startswith("cupy-sim") else contextlib.nullcontext())
    xad.manual_seed(0)
    with guard, xad.use_backend(b):
        yield b
    if request.param.startswith("cupy"):  # a failed index check never outlives its test
        b.synchronize()


_counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    callspec = getattr(item, "callspec", None)
    param = callspec.params.get("xb") if callspec else None
    outcome.get_result().user_properties.append(("xb", param or "backend-free"))


def pytest_runtest_logreport(report):  # runs in the main process, also under xdist
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        param = dict(report.user_properties).get("xb", "backend-free")
        _counts[param][report.outcome] += 1


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_sep("=", "tests per backend")
    for name in [*PARAMS, "backend-free"]:
        c = _counts.get(name)
        if c:
            terminalreporter.write_line(f"{name:28s} passed {c['passed']:5d}   failed "
                                        f"{c['failed']:4d}   skipped {c['skipped']:4d}")
