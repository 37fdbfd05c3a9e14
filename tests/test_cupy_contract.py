"""The CuPy emulator cannot invent an API: what xad calls through it exists in the real CuPy.

A workload (every operation of tests/op_table.py forward and backward, a training step of
each example model, the random draws, the transfers) runs on ``cupy-sim`` with call
recording on. Each recorded call (namespace, name, number of positional arguments, keyword
names) must name a function, class or method of the installed CuPy (``cupy``, ``cupyx``,
``array_api_compat.cupy``, ``cupy.ndarray``, ``cupy.random``) and bind to its signature.
Where CuPy exposes no signature (ufuncs; Cython methods of ``ndarray``) the name's existence
is checked, a ufunc's argument count against ``nargs``, and the name is listed with the
reason in :data:`UNCHECKED_REASONS`. (A compat function that takes ``**kwargs``, such as
``zeros`` or ``asarray``, binds any keyword: there the check is CuPy's own, at run time on a
GPU.) The names used in backends/cupy_backend.py's source and
the emulator's hand-written parts are checked the same way.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import cupy_sim
import numpy as np
import pytest
from cupy_sim import core
from op_table import CASES, X, make_inputs

import xad

cupy = pytest.importorskip("cupy", reason="the contract is checked against the real CuPy")
import array_api_compat.cupy as real_compat  # noqa: E402
import cupyx  # noqa: E402
import cupyx.scipy.special  # noqa: E402, F401

UNCHECKED_REASONS = {
    "ufunc": "a CuPy ufunc (and its at) has no Python signature: its existence and nargs "
             "are checked",
    "cython": "a Cython method of cupy.ndarray has no signature: its existence is checked",
}
_UFUNC_KW = {"out", "dtype", "casting"}


def _workload(b: xad.Backend) -> None:
    with xad.use_backend(b):
        for case in CASES:
            ins = [xad.tensor(a, requires_grad=a.dtype.kind == "f") for a in make_inputs(case)]
            out = case.fn(X, *ins)
            outs = out if isinstance(out, (tuple, list)) else (out,)
            sums = [o.sum() for o in outs if o.dtype.is_floating and o.requires_grad]
            if sums:
                sum(sums[1:], sums[0]).backward()
        for dtype in (xad.float16, xad.float32, xad.float64):
            xad.randn(3, 2, dtype=dtype).numpy()
            xad.rand(5, dtype=dtype).numpy()
        b.permutation(7)
        x = xad.zeros(4, 3)
        b.index_add(x._array.mT, (b.asarray([0, 2, 0]),), b.asarray(1.0))
        b.einsum("ij,jk->ik", x._array, x._array.mT)
        b.erf(x._array)
        b.item(b.asarray([2.5]))
        xad.linalg.eigvals(x[:3])  # (no gradient asked for: the eigenvalues-only call)
        for read in (b.to_numpy, b.item, lambda a: b.synchronize()):  # with a queued check
            xad.nn.functional.embedding(xad.tensor([1]), xad.eye(2))
            read(b.from_numpy(np.ones(1)))
        fused = xad.compile(lambda v: xad.tanh(v * 2.0 + 1.0) * 0.5 - v, fuse=True)
        with xad.no_grad():  # cupy.fuse, and the ufuncs a fused function calls
            for _ in range(2):
                fused(xad.ones(3))
        _optimisers()
    import test_sync_budget as sb

    for name in sb.STEP_READS:  # every example model's training step, also under autocast
        b, model, loss_of, opt, sched, scaler, loader = sb._setup(name, "cuda:0")
        it = iter(loader)
        for _ in range(2):
            sb._step(b, model, loss_of, opt, sched, scaler, it).item()


# every optimiser's fused rule (xad/optim/fused.py), each flag that changes its kernel
OPTIMISERS = [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1)),
              ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1)), ("SGD", dict(lr=0.1)),
              ("Adam", dict(lr=0.1, amsgrad=True, weight_decay=0.1)),
              ("AdamW", dict(lr=0.1)), ("AdamW", dict(lr=0.1, capturable=True)),
              ("RMSprop", dict(lr=0.1, centered=True,
                                                        momentum=0.9, weight_decay=0.1)),
              ("RMSprop", dict(lr=0.1)), ("Adagrad", dict(lr=0.1, weight_decay=0.1)),
              ("Adamax", dict(lr=0.1, weight_decay=0.1, capturable=True)),
              ("NAdam", dict(lr=0.1, weight_decay=0.1, decoupled_weight_decay=True,
                             capturable=True)),
              ("RAdam", dict(lr=0.1, weight_decay=0.1, capturable=True)),
              ("Adadelta", dict(weight_decay=0.1, capturable=True)),
              ("ASGD", dict(lr=0.1, t0=1, capturable=True)), ("Rprop", dict(capturable=True))]


def _optimisers() -> None:
    for name, kwargs in OPTIMISERS:
        w = xad.ones(3, 2, requires_grad=True)
        opt = getattr(xad.optim, name)([w], **kwargs)
        for _ in range(2):
            (w * w).sum().backward()
            opt.step()


def test_fused_writes_into_arguments_as_cupy_fusion_does():
    """The emulator's fused functions write into an argument by ``a[...] = v`` (the
    optimisers' fused rules) and by in-place operators: CuPy's fusion variables have both,
    and take NumPy scalars as arguments (:meth:`CupyBackend.scalar`)."""
    real = importlib.import_module("cupy._core.fusion")
    assert list(inspect.signature(real._FusionVarScalar.__setitem__).parameters) == [
        "self", "slices", "value"]
    ours = {n for n in vars(cupy_sim.fusion.FusionVar) if n.startswith("__i")} - {
        "__init__", "__invert__"}
    assert len(ours) == 12 and all(hasattr(real._FusionVarArray, n) for n in ours), ours
    assert not any(hasattr(real._FusionVarScalar, n) for n in ours)  # a value made inside
    b = xad.resolve_backend("cupy-sim")
    assert type(b.scalar(0.5, np.float32)) is np.float32


@pytest.fixture(scope="module")
def recorded():
    b = xad.resolve_backend("cupy-sim")
    core.STATE.reset()
    core.STATE.record = True
    try:
        _workload(b)
    finally:
        calls = set(core.STATE.calls)
        core.STATE.reset()
    return calls


def _real(ns: str, name: str):
    owner = {"cupy": cupy, "compat": real_compat, "cupyx": cupyx, "ndarray": cupy.ndarray,
             "random": cupy.random, "Generator": cupy.random.Generator,
             "cupyx.scipy.special": cupyx.scipy.special, "compat.linalg": real_compat.linalg,
             "compat.fft": real_compat.fft,
             "cupy.lib.stride_tricks": cupy.lib.stride_tricks, "cupy.add": cupy.add}[ns]
    return name, getattr(owner, name, None)


def _check(ns: str, name: str, nargs: int, kwargs: tuple[str, ...]) -> str | None:
    """``None`` when checked against a signature, else the reason it could not be."""
    _, obj = _real(ns, name)
    assert obj is not None, f"{ns}.{name} is called by xad through the emulator but does " \
                            f"not exist in CuPy {cupy.__version__}"
    if isinstance(obj, cupy.ufunc):
        assert nargs <= obj.nargs and set(kwargs) <= _UFUNC_KW, (ns, name, nargs, kwargs)
        return "ufunc"
    if name == "at" and isinstance(_real("cupy", ns.split(".")[1])[1], cupy.ufunc):
        assert 2 <= nargs <= 3 and not kwargs, (ns, name, nargs, kwargs)  # (a, indices, b)
        return "ufunc"
    if ns == "ndarray":
        return "cython" if name not in ("T", "mT", "device") else None
    if ns == "Generator" or isinstance(obj, type) and ns == "random":
        nargs += 1  # self
    sig = _signature(obj.__init__ if isinstance(obj, type) else obj)
    sig.bind(*([None] * nargs), **dict.fromkeys(kwargs))
    return None


def test_every_recorded_call_exists_in_cupy_and_binds(recorded):
    assert len(recorded) > 50  # the workload reached the emulator
    unchecked: dict[str, set[str]] = {}
    for ns, name, nargs, kwargs in sorted(recorded):
        reason = _check(ns, name, nargs, kwargs)
        if reason is not None:
            unchecked.setdefault(reason, set()).add(f"{ns}.{name}")
    # what could only be checked by name is listed (and printed with -s)
    print({k: sorted(v) for k, v in unchecked.items()})
    assert set(unchecked) <= set(UNCHECKED_REASONS)


def _submodule(module: object, name: str) -> object:
    """``module.name`` when it is a submodule CuPy does not import by itself (``cuda.nccl``;
    its contents need libnccl, absent here, so the NCCL calls are checked only against the
    stand-in in tests/nccl_standin.py)."""
    try:
        return importlib.import_module(f"{module.__name__}.{name}")
    except (ImportError, AttributeError):
        return None


def test_names_in_the_backend_source_exist_in_cupy():
    root = Path(__file__).resolve().parent.parent / "backends"
    src = "".join((root / f).read_text() for f in ("cupy_backend.py", "cupy_blas.py"))
    names = set(re.findall(r"\b(?:cp|self\._cp|cupy)\.([A-Za-z_][\w.]*)", src))
    names.discard("cuda.Device")  # checked below with the emulator's own names
    missing = []
    for path in names:
        obj = cupy
        for part in path.split("."):
            obj = getattr(obj, part, None) or _submodule(obj, part)
        if obj is None:
            missing.append(path)
    assert names and not missing, f"cupy_backend.py uses names CuPy lacks: {missing}"
    for path in re.findall(r"\bcupyx\.([A-Za-z_][\w.]*)", src):
        obj = cupyx
        for part in path.split("."):
            obj = getattr(obj, part)


def test_fusion_calls_cupy_fuse_and_ufuncs_that_compat_shares():
    """xad/compile/fusion.py: ``cupy.fuse(kernel_name=...)`` (a Cython function: its
    documented arguments), called positionally; every ufunc a fused function may call is a
    CuPy ufunc that ``array_api_compat.cupy`` re-exports as it is (eager mode calls it)."""
    from xad.compile.fusion import FUSABLE

    assert _signature(cupy.fuse).bind(kernel_name="xad_fused_0")
    assert "kernel_name (str)" in cupy.fuse.__doc__
    real = importlib.import_module("cupy._core.fusion").Fusion  # what cupy.fuse makes
    for n in ("__init__", "__call__"):
        sigs = [inspect.signature(getattr(c, n)).parameters.values()
                for c in (real, cupy_sim.fusion.Fusion)]
        assert [[(p.name, p.kind, p.default) for p in s] for s in sigs] == 2 * [
            [(p.name, p.kind, p.default) for p in sigs[0]]], n
    for name in sorted(FUSABLE):
        assert isinstance(getattr(cupy, name), cupy.ufunc), name
        assert getattr(real_compat, name) is getattr(cupy, name), name


def test_the_emulators_hand_written_names_exist_in_cupy():
    for path in ("cuda.Device", "cuda.runtime.getDeviceCount", "cuda.get_device_id",
                 "cuda.MemoryPool", "get_default_memory_pool", "asnumpy", "array", "asarray",
                 "random.Generator", "random.Philox4x3210", "random.XORWOW",
                 "random.MRG32k3a", "random.BitGenerator", "add.at"):
        obj = cupy
        for part in path.split("."):
            obj = getattr(obj, part)
    for name in ("use", "synchronize", "id", "__enter__", "__exit__"):
        assert hasattr(cupy.cuda.Device, name), name
    for name in ("used_bytes", "total_bytes", "free_bytes", "n_free_blocks",
                 "free_all_blocks", "malloc"):
        assert hasattr(cupy.cuda.MemoryPool, name), name
    own = {n for n, v in vars(core.ndarray).items() if not n.startswith("_")}
    own |= core._NDARRAY_METHODS | {"nonzero"}
    missing = sorted(n for n in own if not hasattr(cupy.ndarray, n))
    assert not missing, f"the emulator's ndarray has names cupy.ndarray lacks: {missing}"
    for cls in (cupy_sim.modules.Generator, cupy_sim.modules.Philox4x3210):
        real = getattr(cupy.random, cls.__name__)
        for n in (m for m in vars(cls) if not m.startswith("_")):
            assert hasattr(real, n), f"cupy.random.{cls.__name__}.{n}"
    assert inspect.signature(cupy.random.Philox4x3210.__init__).bind(None, [1, 2], size=-1)
    _check_streams_and_graphs()
    assert inspect.signature(cupyx.scatter_add).bind(None, None, None)


def _check_streams_and_graphs() -> None:
    """CUDA graphs (xad/compile/cuda_graph.py, the backend's graph_* methods): the stream,
    capture and graph API the emulator gives is CuPy's, names and signatures."""
    sim = cupy_sim.modules.cuda
    for name in ("Stream", "Event", "Graph", "get_current_stream", "using_allocator",
                 "get_elapsed_time"):  # (torch.cuda.Event's elapsed_time: xad/torch_cuda.py)
        assert getattr(cupy.cuda, name, None) is not None and hasattr(sim, name), name
    for name in ("getDeviceProperties", "runtimeGetVersion"):  # torch.cuda's device queries
        assert hasattr(cupy.cuda.runtime, name) and hasattr(sim.runtime, name), name
    for cls in (cupy_sim.streams.Stream, cupy_sim.streams.Event, cupy_sim.streams.Graph):
        real = getattr(cupy.cuda, cls.__name__)
        for n in (m for m in vars(cls) if not m.startswith("_")):
            assert hasattr(real, n), f"cupy.cuda.{cls.__name__}.{n}"
    for n in ("__enter__", "__exit__"):
        assert hasattr(cupy.cuda.Stream, n), n
    for n in ("ptr", "device_id"):  # Cython instance attributes: documented, not inspectable
        assert f"~Stream.{n} " in cupy.cuda.Stream.__doc__, n
    stream, graph = cupy.cuda.Stream, cupy.cuda.Graph
    for fn, args, kwargs in ((stream.__init__, (None,), {"non_blocking": True}),
                             (stream.begin_capture, (None,), {"mode": None}),
                             (stream.begin_capture, (None,), {}),
                             (stream.end_capture, (None,), {}),
                             (stream.is_capturing, (None,), {}),
                             (graph.launch, (None,), {"stream": None}),
                             (graph.launch, (None,), {}),
                             (graph.upload, (None,), {"stream": None}),
                             (stream.wait_event, (None, None), {}),  # NCCL's side stream
                             (cupy.cuda.Event, (), {"disable_timing": True}),
                             (cupy.cuda.Event.record, (None, None), {})):
        _signature(fn).bind(*args, **kwargs)
    inspect.signature(cupy.cuda.using_allocator).bind(None)


def _signature(fn) -> inspect.Signature:
    """``fn``'s signature; for a Cython ``cpdef`` method, the one its docstring's first line
    gives (``Graph.launch(self, stream=None)``)."""
    try:
        return inspect.signature(fn)
    except ValueError:
        params = re.match(r"[\w.]+(\(.*\))", fn.__doc__.strip()).group(1)
        ns: dict = {}
        exec(f"def f{params}: pass", ns)  # noqa: S102 - CuPy's own documented signature
        return inspect.signature(ns["f"])


def test_emulator_refuses_implicit_conversion_and_counts_reads():
    a = cupy_sim.cupy.ones(3)
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(a)
    with pytest.raises(TypeError):
        memoryview(a)
    assert type(cupy_sim.cupy.sum(a)) is cupy_sim.core.ndarray  # a 0-d device array
    core.STATE.reset()
    float(cupy_sim.cupy.sum(a)), a.tolist(), repr(a), a.get(), cupy_sim.cupy.asnumpy(a)
    assert [k for k, _ in core.STATE.transfers] == ["float", "tolist", "repr", "get",
                                                    "asnumpy"]
    core.STATE.strict = True
    try:
        with pytest.raises(AssertionError, match="implicit device-to-host"):
            bool(a[0])
    finally:
        core.STATE.strict = False
    with cupy_sim.cupy.cuda.Device(1):
        b = cupy_sim.cupy.ones(3)
        with pytest.raises(ValueError, match="different from the current device"):
            a + 1
    with pytest.raises(ValueError, match="different from the current device"):
        b * 2
    assert b.reshape(3, 1).device.id == 1  # a view needs no kernel, as in CuPy


def test_emulator_wraps_out_of_range_index_arrays_like_cupy():
    cp = cupy_sim.cupy
    a, i = cp.arange(3, dtype=cp.float32), cp.asarray([4, -4, 1])
    assert a[i].get().tolist() == a.take(i).get().tolist() == [1, 2, 1]
    assert cp.take(a, i).get().tolist() == cupy_sim.compat.take(a, i).get().tolist()
    a[cp.asarray([5])] = 9
    cp.add.at(a, cp.asarray([-1]), 1)
    assert a.get().tolist() == [0, 1, 9 + 1]
    with pytest.raises(IndexError):
        a[3]  # an int still raises, as in CuPy


def test_the_check_fails_on_an_invented_name_or_a_wrong_signature():
    with pytest.raises(AssertionError, match="does not exist in CuPy"):
        _check("cupy", "scatter_add_fast", 3, ())
    with pytest.raises(TypeError):
        _check("cupy", "zeros", 1, ("order_please",))
    with pytest.raises(TypeError):
        _check("Generator", "standard_normal", 1, ("seed",))
    assert _check("cupyx", "scatter_add", 3, ()) is None


def test_what_the_emulator_models_of_sign_clip_and_erf_is_cupys():
    """The emulator's ``array_api_compat.cupy.sign``/``clip`` write through boolean masks,
    and its ``erf`` of float16 gives float64, because the installed ones do."""
    from array_api_compat.common import _aliases

    assert "out[xp.isnan(x)] = xp.nan" in inspect.getsource(_aliases.sign)
    assert "out[ia] = a[ia]" in inspect.getsource(_aliases.clip)
    assert "e->d" in cupyx.scipy.special.erf.types and "e->e" not in cupyx.scipy.special.erf.types
    # CupyBackend's sign is CuPy's own: NaN in, NaN out; complex x / |x|
    doc = " ".join(cupy.sign.__doc__.split())
    assert "NaN is returned for NaN inputs" in doc and "x/abs(x)`` (and ``0 if x == 0" in doc
    # xad's fused kernels call cupy.where, which CuPy turns into its ufunc while fusing
    assert "fusion._is_fusing()" in inspect.getsource(cupy.where)
    # exact GELU's kernels call erf inside cupy.fuse: a CuPy ufunc, which fusion takes
    assert isinstance(cupyx.scipy.special.erf, cupy.ufunc)


def test_what_the_emulator_models_of_remainder_add_at_and_linspace_is_cupys():
    """The emulator's float ``remainder``/``floor_divide`` are CuPy's loops
    (tests/cupy_sim/loops.py); its ``add.at`` refuses the dtypes CuPy 14's atomic add
    lacks (its message names them; the check itself is in compiled Cython) for an index
    array, not for a boolean mask; its ``linspace`` of scalar ends calls ``float``."""
    from cupy._creation import ranges

    assert "step = float(stop - start) / div" in inspect.getsource(ranges._linspace_scalar)
    with pytest.raises(TypeError, match="float"):
        cupy_sim.compat.linspace(0, 1j, 3)
    for ufunc, code in ((cupy.remainder, "out0 = in0 - _floor_divide(in0, in1) * in1"),
                        (cupy.floor_divide, "out0 = _floor_divide(in0, in1)")):
        loops = {op.in_types[0].char: op.routine for op in ufunc._ops.ops}
        assert loops["f"] == loops["d"] == loops["e"] == code, ufunc
    cuh = Path(cupy.__file__).parent / "_core" / "include" / "cupy" / "carray.cuh"
    assert "double _floor_divide(double x, double y) {\n  return floor(x / y);" in \
        cuh.read_text()
    assert cupy.add._scatter_op == "add"
    cp = cupy_sim.cupy
    for dtype in ("bool", "int8", "uint8", "int16", "uint16", "complex64"):
        a = cp.zeros(3, dtype=dtype)
        with pytest.raises(TypeError, match="cupy.add.at only supports int32, int64, float16"):
            cp.add.at(a, cp.asarray([0, 0]), 1)
        cp.add.at(a, cp.asarray([True, False, True]), 1)  # a mask: a plain kernel
    a = cp.zeros(3, dtype="int64")
    cp.add.at(a, cp.asarray([0, 0, 2]), 1)
    assert a.get().tolist() == [2, 0, 1]


@pytest.mark.parametrize("device", ["cuda:0", "cuda:1"])
def test_cupy_sign_clip_and_erf_match_numpy(device):
    """CuPy's backend routes around the compat layer's masked ``sign``/``clip`` (no sync)
    and casts float16 ``erf`` back: the same values and dtypes as NumPy's backend."""
    sim, ref = xad.resolve_backend("cupy-sim", device), xad.resolve_backend("numpy")
    x = np.array([[-2.5, -0.0, 0.0, np.nan, 3.0, np.inf, -np.inf]])
    lo = np.array([[-1.0], [np.nan]])
    z = np.array([0j, 3 - 4j, -2j])
    cases = [("sign", (x,), {}), ("sign", (z,), {}), ("sign", (np.array([-3, 0, 4]),), {}),
             ("clip", (x, -1.0, 2.0), {}), ("clip", (x, None, 0.5), {}),
             ("clip", (x, lo), {}), ("clip", (x.astype(np.float32), -1.0, None), {}),
             ("clip", (np.array([-300, 5, 300], np.int16), -2**40, 7), {}),
             ("clip", (np.array([1, 200], np.uint8), 3, 100), {})]
    for name, args, kwargs in cases:
        outs = []
        for b in (sim, ref):
            arrays = [b.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args]
            outs.append(b.to_numpy(getattr(b.xp, name)(*arrays, **kwargs)))
        assert outs[0].dtype == outs[1].dtype, (name, args)
        np.testing.assert_array_equal(outs[0], outs[1], err_msg=f"{name}{args}")
    for dtype in (np.float16, np.float32, np.float64):
        a = np.linspace(-3, 3, 13).astype(dtype)
        with sim.on_device():
            got = sim.to_numpy(sim.erf(sim.from_numpy(a)))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, ref.erf(a))
    with xad.use_backend(sim):
        y = xad.gelu(xad.ones(3, dtype=xad.float16))
        assert y.dtype == xad.float16 and y._array.dtype == np.float16


def test_the_own_cublas_route_is_cupys_api():
    """backends/cupy_blas.py (matrix products inside a capture) calls CuPy's cuBLAS binding
    (``create``, ``setStream``: their signatures are embedded in the installed extension,
    which needs libcublas to import, absent here) and the cuBLAS functions CuPy itself binds
    (``cublas{S,D}gemmStridedBatched``), with the refusal the emulator models;
    ``cublasSetWorkspace_v2``, which CuPy does not bind, is proved on a GPU
    (ci/graph_step_gpu.py)."""
    import importlib.util

    from cupy_sim import blas

    so = Path(importlib.util.find_spec("cupy_backends.cuda.libs.cublas").origin).read_bytes()
    for text in (b"create() -> intptr_t", b"setStream(intptr_t handle, size_t stream)",
                 b"runtime_streamIsCapturing"):  # the refusal's test (cublas.pyx, setStream)
        assert text in so, text
    src = (Path(__file__).resolve().parent.parent / "backends" / "cupy_blas.py").read_text()
    binding = set(re.findall(r"\bcublas\.(\w+)\(", src))
    raw = set(re.findall(r"\blib\.(cublas\w+)", src)) | {"cublasDgemmStridedBatched"}
    assert binding == {"create", "setStream"} and hasattr(blas.cublas, "destroy")
    for name in binding:
        assert hasattr(blas.cublas, name) and f"{name}(".encode() in so, name
    for name in raw:
        assert hasattr(blas.lib, name), name
        if name != "cublasSetWorkspace_v2":
            assert name.encode() + b"\x00" in so, name
    assert "runtimeGetVersion() -> int" in cupy.cuda.runtime.runtimeGetVersion.__doc__
    doc = cupy.cuda.MemoryPointer.copy_from_device_async.__doc__.splitlines()[0]
    assert doc.endswith("(self, MemoryPointer src, size_t size, stream=None)"), doc
    _signature(cupy.ndarray.set).bind(None, np.zeros(1))
    real = importlib.import_module("cupy._core.fusion")
    assert inspect.signature(real._FusionVarScalar.astype).bind(None, np.float32)


def test_the_emulated_fused_reduction_is_cupys_old_fusion():
    """tests/cupy_sim/fusion.py models one reduction inside ``cupy.fuse`` as CuPy 14's old
    fusion makes it (``_FusionHistory``: a pre-map, one reduction, a post-map on the reduced
    value; ``_call_reduction``; a ``ReductionKernel``), the reductions it fuses are CuPy's
    (``max`` is ``amax``), with their signatures, and CuPy refuses ``keepdims`` in fusion
    with the emulator's very message."""
    real = importlib.import_module("cupy._core.fusion")
    history = real._FusionHistory
    assert "Only when fusing the reduction" in history.__doc__
    assert "postmap_param" in history.__doc__ and "premap_ret" in history.__doc__
    for n in ("set_reduce_op", "_get_fusion_var", "_emit_premap_code", "_emit_postmap_code"):
        assert hasattr(history, n), n
    assert callable(real._call_reduction) and isinstance(cupy.ReductionKernel, type)
    assert "elementwise or reduction kernel" in " ".join(cupy.fuse.__doc__.split())
    assert importlib.import_module("cupy._core.new_fusion").Fusion  # its fallback
    assert cupy.max is cupy.amax and cupy.min is cupy.amin
    for name, shown in cupy_sim.fusion._REDUCTIONS.items():
        fn = getattr(cupy, name)
        assert _signature(fn).bind(None, axis=-1, keepdims=False), name
        src = inspect.getsource(fn)
        assert "_fusion_thread_local.call_reduction(" in src, name
        ours = getattr(cupy_sim.cupy, name)
        with xad.use_backend("cupy-sim"):
            a = cupy_sim.cupy.ones((2, 3))
            with pytest.raises(NotImplementedError) as e:
                cupy_sim.cupy.fuse(lambda v: ours(v, axis=1, keepdims=True))(a)  # noqa: B023
        assert str(e.value) == f"cupy.{shown} does not support `keepdims` in fusion yet."
        assert f"'{e.value}'" in src, name  # CuPy raises that very message
