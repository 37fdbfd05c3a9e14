"""The emulated modules: ``cupy``, ``cupyx`` and ``array_api_compat.cupy``.

Each is a namespace whose functions are NumPy's (``array_api_compat.numpy``'s for the
compat module) run through :func:`core.call`: arguments must live on the current device,
results are device arrays on it. What CuPy does differently is written out here: the
``cuda`` and ``random`` submodules, ``asnumpy``, ``fuse`` (:mod:`.fusion`),
``cupyx.scatter_add``, and the compat module's ``device=`` handling (honoured by
``asarray`` and ``astype`` only: the real ``array_api_compat.cupy`` ignores it in ``zeros``,
``arange``, ``full``, ...; a CuPy array is made on the current device).
"""

from __future__ import annotations

import operator
import types
import warnings
from typing import Any

import array_api_compat.numpy as cnp
import numpy as np

from . import core, fusion, loops, streams
from .core import Device, ndarray


class _Namespace(types.SimpleNamespace):
    """NumPy-backed functions, resolved on first use and cached."""

    def __init__(self, label: str, source: Any, **own: Any) -> None:
        super().__init__(**own)
        object.__setattr__(self, "_label", label)
        object.__setattr__(self, "_source", source)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self._source, name)
        if callable(value) and not isinstance(value, type):
            fn, label = value, self._label
            value = (lambda f: lambda *a, **k: core.call(label, name, f, a, k))(fn)
        setattr(self, name, value)
        return value


# ----- cupy.random -------------------------------------------------------------------------
class BitGenerator:
    """CuPy's bit generators: ``seed`` an int, a sequence of ints or a SeedSequence."""

    def __init__(self, seed: Any = None, *, size: int = -1) -> None:
        core.record("random", type(self).__name__, (seed,), {"size": size})
        self._seed_seq = (seed if isinstance(seed, np.random.SeedSequence)
                          else np.random.SeedSequence(seed))
        self._np = np.random.Philox(self._seed_seq)
        self._device = core.current_device()
        # the curand states it allocates
        core.POOLS[self._device]._alloc(np.zeros(1 << 20, np.int8))


class Philox4x3210(BitGenerator):
    pass


class XORWOW(BitGenerator):
    pass


class MRG32k3a(BitGenerator):
    pass


class Generator:
    """``cupy.random.Generator(bit_generator)``: ``random``/``standard_normal`` draw
    float32 or float64 only, like CuPy's."""

    def __init__(self, bit_generator: BitGenerator) -> None:
        self.bit_generator = bit_generator
        self._rng = np.random.Generator(bit_generator._np)

    def _draw(self, name: str, size: Any, dtype: Any, out: Any) -> ndarray:
        core.record("Generator", name, (size,), {"dtype": dtype, "out": out})
        if core.current_device() != self.bit_generator._device:
            raise RuntimeError("This Generator state is allocated in a different device")
        if np.dtype(dtype) not in (np.float32, np.float64):
            raise TypeError(f"Unsupported dtype {np.dtype(dtype).name} for {name}")
        return core.wrap(getattr(self._rng, name)(size, dtype=dtype), core.current_device())

    def random(self, size: Any = None, dtype: Any = np.float64, out: Any = None) -> ndarray:
        return self._draw("random", size, dtype, out)

    def standard_normal(self, size: Any = None, dtype: Any = np.float64,
                        out: Any = None) -> ndarray:
        return self._draw("standard_normal", size, dtype, out)


random = types.SimpleNamespace(Generator=Generator, BitGenerator=BitGenerator,
                               Philox4x3210=Philox4x3210, XORWOW=XORWOW, MRG32k3a=MRG32k3a)


# ----- cupy.cuda ----------------------------------------------------------------------------
def _get_device_count() -> int:
    return core.N_DEVICES


def _get_device_properties(device_id: int) -> dict[str, Any]:
    """``cupy.cuda.runtime.getDeviceProperties``: a few of CUDA's fields (the name as bytes)."""
    if not 0 <= device_id < core.N_DEVICES:
        raise RuntimeError("cudaErrorInvalidDevice: invalid device ordinal")
    return {"name": b"cupy-sim emulated GPU", "totalGlobalMem": 80 << 30, "major": 9,
            "minor": 0, "multiProcessorCount": 132}


def _elapsed_time(start: Any, end: Any) -> float:
    """``cupy.cuda.get_elapsed_time``: milliseconds between two recorded events (the
    emulator runs each kernel when queued, so host time)."""
    if not (start.recorded and end.recorded):
        raise RuntimeError("cudaErrorInvalidResourceHandle: an event was not recorded")
    return (end.time - start.time) * 1000.0


cuda = types.SimpleNamespace(
    Device=Device, runtime=types.SimpleNamespace(
        getDeviceCount=_get_device_count, getDeviceProperties=_get_device_properties,
        runtimeGetVersion=lambda: 12040),
    get_elapsed_time=_elapsed_time,
    get_device_id=core.current_device, MemoryPool=core.MemoryPool, Stream=streams.Stream,
    Event=streams.Event, Graph=streams.Graph, get_current_stream=streams.get_current_stream,
    using_allocator=streams.using_allocator)


# ----- cupy -------------------------------------------------------------------------------
def asnumpy(a: Any, stream: Any = None, order: str = "C", out: Any = None, *,
            blocking: bool = True) -> np.ndarray:
    core.record("cupy", "asnumpy", (a,), {})
    if type(a) is ndarray:
        core.transfer("asnumpy")
        return a._a.copy()
    return np.asarray(a)


def _array(obj: Any, dtype: Any = None, copy: bool = True, order: str = "K",
           subok: bool = False, ndmin: int = 0, *, blocking: bool = False) -> ndarray:
    """``cupy.array``: a host array or Python data is copied to the current device; a
    device array on another device is copied across (CuPy does a peer copy)."""
    core.record("cupy", "array", (obj,), {"dtype": dtype, "copy": copy})
    if type(obj) is ndarray:  # copy=False: copy only where needed (dtype, device)
        return core.launch("array", lambda a: np.array(a, dtype=dtype, copy=copy or None),
                           (obj._a,), {}, core.current_device())
    if streams.capturing() is not None:  # CuPy's own check, before cudaMemcpyAsync
        raise RuntimeError("the current stream is capturing, so H2D transfers are disallowed")
    return core.wrap(np.array(obj, dtype=dtype, copy=True), core.current_device())


def _asarray(a: Any, dtype: Any = None, order: Any = None, *, blocking: bool = False) -> Any:
    core.record("cupy", "asarray", (a,), {"dtype": dtype})
    if type(a) is ndarray and (dtype is None or np.dtype(dtype) == a.dtype):
        return a
    return _array(a, dtype=dtype, copy=False)


# CuPy 14's atomic add: ``_scatter_op_single`` (cupy/_core/_routines_indexing.pyx)
_ATOMIC_ADD = tuple(map(np.dtype, ("int32", "int64", "float16", "float32", "float64", "uint32",
                                     "uint64")))


def _atomic(key: Any) -> bool:
    """Whether CuPy adds at ``key`` by its atomic kernel: an index array but a boolean mask
    alone (that, and basic indices, are plain kernels: ``_scatter_op``)."""
    keys = key if type(key) is tuple else (key,)
    arrays = [k for k in keys if type(k) in (ndarray, list)]
    return bool(arrays) and not (len(arrays) == 1 and type(arrays[0]) is ndarray
                                 and arrays[0].dtype == np.bool_)


def _add_at(a: ndarray, indices: Any, b: Any = None, *, ns: str = "cupy.add",
            name: str = "at") -> None:
    """``cupy.add.at``: an index array adds by CUDA's atomicAdd, which takes only
    :data:`_ATOMIC_ADD` (CuPy raises for any other dtype of ``a``)."""
    if a.dtype not in _ATOMIC_ADD and _atomic(indices):
        raise TypeError("cupy.add.at only supports int32, int64, float16, float32, float64, "
                        "uint32, uint64 as data type")
    core.call(ns, name, lambda x, i, v: np.add.at(x, core.wrap_indices(i, x.shape), v),
              (a, indices, b), {})


def _scatter_add(a: ndarray, slices: Any, value: Any) -> None:
    """``cupyx.scatter_add``: CuPy 14's calls the deprecated ``ndarray.scatter_add``, which
    warns, then adds as :func:`_add_at`."""
    warnings.warn("`ndarray.scatter_add` is deprecated. Please use `cupy.add.at` instead.",
                  DeprecationWarning, stacklevel=2)
    _add_at(a, slices, value, ns="cupyx", name="scatter_add")


def _add(*args: Any, **kwargs: Any) -> Any:
    """``cupy.add``, a ufunc with ``at`` (:func:`_add_at`)."""
    return core.call("cupy", "add", np.add, args, kwargs)


_add.at = _add_at  # type: ignore[attr-defined]


def _erf(x: Any) -> Any:
    """``cupyx.scipy.special.erf``, with CuPy 14's loops ``e->d f->f d->d``: float16 comes
    back as float64 (the contract test checks the table)."""
    from scipy.special import erf

    def f(a: np.ndarray) -> np.ndarray:
        return erf(a.astype(np.float64)) if a.dtype == np.float16 else erf(a)

    f.ufunc = True  # a CuPy ufunc (create_ufunc): cupy.fuse takes it, with the same loops
    return core.call("cupyx.scipy.special", "erf", f, (x,), {})


def _special(name: str) -> Any:
    """One of ``cupyx.scipy.special``'s ufuncs (``erfc erfinv gammaln digamma``), by SciPy's,
    with float16 computed in float64 as :func:`_erf`'s loops."""
    import scipy.special

    fn = getattr(scipy.special, {"digamma": "psi"}.get(name, name))

    def f(a: np.ndarray) -> np.ndarray:
        return fn(a.astype(np.float64)) if a.dtype == np.float16 else fn(a)

    f.ufunc = True
    return lambda x: core.call("cupyx.scipy.special", name, f, (x,), {})


def _np_sign(a: np.ndarray) -> np.ndarray:
    """CuPy 14's ``sign`` kernel: a complex ``x`` gives ``x / abs(x)`` (NumPy's own
    complex sign rounds differently), 0 at 0; NaN stays NaN."""
    if a.dtype.kind != "c":
        return np.sign(a)
    m = np.abs(a)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(m == 0, np.zeros_like(a), a / m)


def _sign(x: Any, /) -> Any:
    return core.call("cupy", "sign", _np_sign, (x,), {})


def _compat_sign(x: Any, /) -> Any:
    """``array_api_compat.cupy.sign`` as written (common/_aliases.py): CuPy's ``sign``, then
    NaNs put back through a boolean mask, which syncs (the contract test checks the
    source)."""
    out = cupy.sign(x)
    if out.dtype.kind == "f":
        out[cupy.isnan(x)] = np.nan
    return out


def _compat_clip(x: Any, /, min: Any = None, max: Any = None) -> Any:
    """``array_api_compat.cupy.clip`` as written: a copy of ``x``, then each bound written
    through a boolean mask (a sync each)."""
    shape = np.broadcast_shapes(x.shape, *(() if isinstance(v, (int, float)) or v is None
                                           else v.shape for v in (min, max)))
    out = cupy.empty(shape, dtype=x.dtype)
    out[()] = x
    for bound, cmp in ((min, operator.lt), (max, operator.gt)):
        if bound is not None:
            a = cupy.broadcast_to(_with_device("asarray")(bound, dtype=x.dtype), shape)
            mask = cmp(out, a) | cupy.isnan(a)
            out[mask] = a[mask]
    return out


def _take(ns: str) -> Any:
    """``take`` wraps an out-of-range index around, as CuPy's kernel does (NumPy raises)."""
    def take(x: Any, indices: Any, /, axis: Any = None, **kwargs: Any) -> Any:
        return core.call(ns, "take", lambda a, i, axis=None, **k: np.take(
            a, i, axis=axis, mode="wrap", **k), (x, indices), dict(kwargs, axis=axis))
    return take


def _linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
              retstep: bool = False, dtype: Any = None, axis: int = 0) -> Any:
    """``cupy.linspace``: of two scalar ends and a step to take, CuPy 14 computes the step
    as ``float(stop - start) / div`` (cupy/_creation/ranges.py, ``_linspace_scalar``), so
    complex ends raise its ``TypeError``; else NumPy's."""
    div = num - 1 if endpoint else num
    if np.isscalar(start) and np.isscalar(stop) and div > 0:
        float(stop - start)
    return core.call("cupy", "linspace", np.linspace, (start, stop, num),
                     {"endpoint": endpoint, "retstep": retstep, "dtype": dtype, "axis": axis})


def _compat_linspace(start: Any, stop: Any, /, num: int, *, dtype: Any = None,
                     device: Any = None, endpoint: bool = True) -> Any:
    """``array_api_compat.cupy.linspace``: CuPy's (:func:`_linspace`); ``device`` ignored."""
    core.record("compat", "linspace", (start, stop, num),
                {"dtype": dtype, "device": device, "endpoint": endpoint})
    return _linspace(start, stop, num, dtype=dtype, endpoint=endpoint)


def _as_strided(x: ndarray, shape: Any = None, strides: Any = None) -> ndarray:
    """``cupy.lib.stride_tricks.as_strided``: a view, no kernel."""
    core.record("cupy.lib.stride_tricks", "as_strided", (x, shape, strides), {})
    return core.view_of(np.lib.stride_tricks.as_strided(x._a, shape, strides), x._dev)


lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(as_strided=_as_strided))

def _loop(ns: str, name: str, fn: Any) -> Any:
    """A CuPy ufunc whose loops compute otherwise than NumPy's (:mod:`.loops`)."""
    def f(x1: Any, x2: Any, /) -> Any:
        return core.call(ns, name, fn, (x1, x2), {})
    return f


_LOOPS = {"floor_divide": loops.floor_divide, "remainder": loops.remainder,
          "mod": loops.remainder}

cupy = _Namespace("cupy", np, ndarray=ndarray, cuda=cuda, random=random, asnumpy=asnumpy, lib=lib,
                  array=_array, asarray=_asarray, take=_take("cupy"), fuse=fusion.fuse,
                  sign=_sign, add=_add, linspace=_linspace,
                  **{n: _loop("cupy", n, f) for n, f in _LOOPS.items()},
                  get_default_memory_pool=lambda: core.POOLS[core.current_device()])
cupy.__name__ = "cupy"

cupyx = _Namespace("cupyx", types.SimpleNamespace(), scatter_add=_scatter_add,
                   scipy=types.SimpleNamespace(special=types.SimpleNamespace(
                       erf=_erf, **{n: _special(n) for n in ("erfc", "erfinv", "gammaln",
                                                            "digamma")})))


# ----- array_api_compat.cupy ----------------------------------------------------------------
def _with_device(name: str) -> Any:
    fn = getattr(cnp, name)

    def f(*args: Any, device: Any = None, **kwargs: Any) -> Any:
        core.record("compat", name, args, dict(kwargs, device=device))
        with Device(device):
            if name == "asarray":
                a = args[0]
                copy = kwargs.pop("copy", None)
                if type(a) is ndarray and copy is not True and (
                        kwargs.get("dtype") is None or np.dtype(kwargs["dtype"]) == a.dtype):
                    return a
                return _array(a, dtype=kwargs.get("dtype"), copy=bool(copy))
            return core.call("compat", name, fn, args, kwargs)
    return f


def _ignoring_device(name: str) -> Any:
    fn = getattr(cnp, name)

    def f(*args: Any, device: Any = None, **kwargs: Any) -> Any:
        return core.call("compat", name, fn, args, dict(kwargs, device=None) if
                         device is not None else kwargs)
    return f


def _astype(x: ndarray, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    core.record("compat", "astype", (x, dtype), {"copy": copy, "device": device})
    if device is not None and Device(device).id != x._dev:
        with Device(device):
            return _array(x, dtype=dtype, copy=True)
    return x._k("astype", np.ndarray.astype, dtype, copy=copy)


def _solve(a: ndarray, b: ndarray, /) -> Any:
    """CuPy 14's solve (cupy/linalg/_solve.py) broadcasts no batch dimensions."""
    if b.ndim > 1 and a.shape[:-1] != b.shape[:-1]:
        raise ValueError("a must have (..., M, M) shape and b must have (..., M, K) for "
                         "multidimensional b")
    return core.call("compat.linalg", "solve", cnp.linalg.solve, (a, b), {})


_CREATION = ("arange", "empty", "empty_like", "eye", "full", "full_like", "ones",
             "ones_like", "zeros", "zeros_like")

compat = _Namespace("compat", cnp, asarray=_with_device("asarray"), astype=_astype,
                    sign=_compat_sign, clip=_compat_clip, linspace=_compat_linspace,
                    take=_take("compat"),
                    **{n: _loop("compat", n, f) for n, f in _LOOPS.items() if n != "mod"},
                    linalg=_Namespace("compat.linalg", cnp.linalg, solve=_solve),
                    fft=_Namespace("compat.fft", cnp.fft),
                    **{n: _ignoring_device(n) for n in _CREATION})
compat.__name__ = "array_api_compat.cupy"
