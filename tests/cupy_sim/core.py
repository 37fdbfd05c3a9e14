"""The emulated device: arrays, devices, the memory pool and the host-transfer counter.

An :class:`ndarray` holds a NumPy array and the id of the device it lives on. Every call
through the emulated modules (and every array operator) checks that its array arguments
live on the *current* device, as a CuPy kernel launch does, and tags its results with that
device. NumPy scalars that come back (reductions) become 0-d device arrays. An out-of-range
integer-array index wraps around (:func:`wrap_indices`), as in CuPy, where NumPy raises.

Host transfers: ``.get()``, ``cupy.asnumpy``, ``.item()``, ``float()``, ``int()``,
``bool()``, ``complex()``, ``tolist()`` and printing all count in :data:`STATE`. A transfer
is *explicit* when it happens inside :func:`explicit` (the emulated backend's ``to_numpy``
and ``item``, xad's only documented reads); any other one is *implicit*, and raises
``AssertionError`` while ``STATE.strict`` is set. ``np.asarray(x)``/``x.__array__()`` raise
``TypeError`` like CuPy's, and there is no buffer protocol. Operations whose output size
depends on the data (boolean-mask indexing, ``nonzero``, ``unique``, ...) sync on a real
GPU; they count as implicit transfers but never raise (the user asked for them).

Kernels are counted as CuPy launches them (:func:`launch`); joins (``concatenate``,
``stack``, ...) as CuPy 14's ``_concatenate`` runs them (:func:`_join`): one kernel and one
or three uploads for more than 8 arrays of one dtype averaging under 2 MiB, else one copy
kernel per array; inside a capture, the one-kernel join's upload is refused. A kernel's new
result is laid out as CuPy lays it out (row-major for elementwise kernels, reductions, gathers
and joins, where NumPy keeps its input's layout: "output layouts" below).
"""

from __future__ import annotations

import contextlib
import operator
import weakref
from operator import attrgetter
from typing import Any

import numpy as np

from . import loops, streams
from .streams import capturing, current_pool, refuse_in_capture


class _State:
    """Counters of one emulator (reset per test)."""

    def __init__(self) -> None:
        self.strict = False
        self.explicit_depth = 0
        self.reset()

    def reset(self) -> None:
        self.transfers: list[tuple[str, bool]] = []  # (kind, explicit)
        self.calls: set[tuple[str, str, int, tuple[str, ...]]] = set()
        self.record = False

    def implicit(self) -> list[str]:
        return [k for k, e in self.transfers if not e]

    def explicit_count(self) -> int:
        return sum(1 for _, e in self.transfers if e)


STATE = _State()
_local = streams._local  # the current device and stream, per thread
N_DEVICES = 2


def current_device() -> int:
    return _local.dev


@contextlib.contextmanager
def explicit():
    """Mark the transfers inside as explicit (the backend's documented reads)."""
    STATE.explicit_depth += 1
    try:
        yield
    finally:
        STATE.explicit_depth -= 1


def transfer(kind: str, inherent: bool = False) -> None:
    """Count a device-to-host transfer; raise for an implicit one while strict. An
    ``inherent`` one (an operation whose output size depends on the data, such as a boolean
    mask the user indexes with) is the operation's own cost, as on a real GPU: counted as
    implicit, never raised."""
    refuse_in_capture(f"a device-to-host transfer: {kind}")
    ok = STATE.explicit_depth > 0
    STATE.transfers.append((kind, ok))
    if STATE.strict and not ok and not inherent:
        raise AssertionError(f"implicit device-to-host transfer ({kind}) of a CuPy array; "
                             f"read through the backend's to_numpy/item instead")


def record(ns: str, name: str, args: tuple, kwargs: dict) -> None:
    if STATE.record:
        STATE.calls.add((ns, name, len(args), tuple(sorted(kwargs))))


# ----- memory pool ------------------------------------------------------------------------
class _Block(weakref.ref):
    """A block of ``pool`` held by a root array (``key``: its id), a weak reference to that
    array: when the array dies, :func:`_released` gives the block back to its pool."""

    __slots__ = ("key", "pool", "size")


def _released(block: _Block) -> None:
    OWNER.pop(block.key, None)
    pool, size = block.pool, block.size
    pool._used -= size
    pool._free[size] = pool._free.get(size, 0) + 1


class MemoryPool:
    """CuPy's pool of one device, counted: blocks of 512-byte-rounded sizes are reused after
    they are freed; ``mallocs`` counts the allocations that found no free block of their
    size."""

    def __init__(self) -> None:
        self._free: dict[int, int] = {}
        self.mallocs = 0
        self._used = 0
        self._total = 0

    def _alloc(self, root: np.ndarray) -> None:
        key = id(root)
        if key in OWNER or root.nbytes == 0:
            return
        size = -(-root.nbytes // 512) * 512
        free = self._free.get(size)
        if free:
            self._free[size] = free - 1
        else:
            self.mallocs += 1
            self._total += size
        self._used += size
        block = OWNER[key] = _Block(root, _released)
        block.key, block.pool, block.size = key, self, size

    def malloc(self, size: int) -> Any:
        """CuPy's allocator entry point: here only a handle for ``using_allocator``."""
        raise NotImplementedError("the emulator allocates through wrap(), not malloc")

    def used_bytes(self) -> int:
        return self._used

    def total_bytes(self) -> int:
        return self._total

    def free_bytes(self) -> int:
        return self._total - self._used

    def n_free_blocks(self) -> int:
        return sum(self._free.values())

    def free_all_blocks(self) -> None:
        self._total -= sum(s * n for s, n in self._free.items())
        self._free.clear()


POOLS = tuple(MemoryPool() for _ in range(N_DEVICES))  # one per device, as in CuPy
OWNER: dict[int, _Block] = {}  # id(root) -> the pool block it holds


# ----- wrapping -------------------------------------------------------------------------
def _device_error(dev: int) -> ValueError:
    return ValueError(f"The device where the array resides ({dev}) is different from the "
                      f"current device ({current_device()}). Peer access is unavailable "
                      f"between these devices.")


def unwrap(x: Any, dev: int) -> Any:
    """``x`` with its device arrays (in tuples and lists too) replaced by their NumPy data;
    each must live on device ``dev``."""
    t = type(x)
    if t is ndarray:
        if x._dev != dev:
            raise _device_error(x._dev)
        return x._a
    if t is tuple or t is list:
        return t(_unwrap_each(x, dev))
    if t is Device:
        raise TypeError("a cupy.cuda.Device is not an array argument")
    return x


def _unwrap_each(xs: Any, dev: int) -> list:
    """:func:`unwrap` of each of ``xs``, done in line for a device array on ``dev`` and for
    a value that is not a device array, a sequence or a device."""
    out = []
    for x in xs:
        t = type(x)
        if t is ndarray and x._dev == dev:
            out.append(x._a)
        elif t is ndarray or t is tuple or t is list or t is Device:
            out.append(unwrap(x, dev))
        else:
            out.append(x)
    return out


def wrap(r: Any, dev: int) -> Any:
    """A kernel's NumPy result ``r`` as device arrays on ``dev`` (a new block of its pool
    where ``r`` is not a view of another device array's)."""
    return _wrap(r, dev, capturing())


def _wrap(r: Any, dev: int, cap: Any) -> Any:
    """:func:`wrap` where the current stream's capture ``cap`` (or None) is known."""
    t = type(r)
    if t is np.ndarray:
        pool = current_pool(POOLS[dev])
        if cap is None:
            pool._alloc(r if r.base is None else _root(r))
            return ndarray(r, dev)
        cap.allocated(pool)
        return _captured(r, dev, pool, cap)
    if isinstance(r, np.generic):
        return _wrap(np.asarray(r), dev, cap)
    if t is tuple or t is list:
        return t([_wrap(v, dev, cap) for v in r])
    if isinstance(r, tuple):  # a named tuple (linalg's EighResult, SVDResult, ...)
        return t(*(_wrap(v, dev, cap) for v in r))
    return r


# functions that call cuBLAS or cuSOLVER, which CuPy 14 refuses while the stream captures
# (cupy_backends/cuda/libs/cublas.pyx, cusolver.pyx: ``setStream``)
LIBRARY = {**dict.fromkeys(("matmul", "__matmul__", "__rmatmul__", "dot", "vdot", "inner",
                            "tensordot", "einsum", "matrix_power"), "cuBLAS"),
           **dict.fromkeys(("inv", "solve", "det", "slogdet", "pinv", "matrix_rank",
                            "cholesky", "eigh", "eigvalsh", "eig", "eigvals", "svd", "svdvals",
                            "qr", "lstsq"), "cuSOLVER")}

_JOINS = frozenset(("concat", "concatenate", "stack", "hstack", "vstack", "dstack"))

# functions that only allocate (CuPy launches no kernel for them)
_NO_KERNEL = frozenset(("empty", "empty_like"))

# functions whose output size depends on the data: CuPy reads a count back to the host
SYNCING = frozenset(("nonzero", "unique", "unique_values", "unique_counts", "unique_inverse",
                     "unique_all", "argwhere", "flatnonzero", "extract", "compress"))


def _captured(r: np.ndarray, dev: int, pool: MemoryPool, cap: Any) -> ndarray:
    """``r`` as a device array made inside a capture: a new block takes one its temporaries
    freed where one fits (r's values copied into that memory; streams._Capture)."""
    root = _root(r)
    block = None
    if id(root) not in OWNER and root.nbytes:  # a new block (not a view of another's)
        size = -(-root.nbytes // 512) * 512
        old = cap.reuse(pool, size, r.nbytes) if r is root and r.flags.c_contiguous else None
        if old is not None:
            alias = old.reshape(-1).view(np.uint8)[:r.nbytes].view(r.dtype).reshape(r.shape)
            alias[...] = r
            r, root = alias, old
        block = (pool, size)
        pool._alloc(root)
    out = ndarray(r, dev)
    cap.made(out, root, block)
    return out


def view_of(r: np.ndarray, dev: int) -> ndarray:
    """A device array that is a view (no kernel, no new block), counted by a capture."""
    out = ndarray(r, dev)
    cap = capturing()
    if cap is not None:
        cap.made(out, _root(r), None)
    return out


def _root(a: np.ndarray) -> np.ndarray:
    while type(a.base) is np.ndarray:
        a = a.base
    return a


def call(ns: str, name: str, fn: Any, args: tuple, kwargs: dict) -> Any:
    """Run a NumPy function as a kernel on the current device (a view of a single array
    argument, which CuPy makes without a kernel, stays on that array's device); inside a
    ``cupy.fuse`` trace, hand it to the trace (:mod:`.fusion`)."""
    trace = _local.fusing
    if trace is not None:
        return trace(ns, name, fn, args, kwargs)
    if STATE.record:
        record(ns, name, args, kwargs)
    if name in SYNCING:
        transfer(f"{name}: data-dependent output size", inherent=True)
    dev = _local.dev
    if args and type(args[0]) is ndarray and args[0]._dev != dev:
        return args[0]._view_or_fail(fn, args[1:], kwargs)
    k = {n: unwrap(v, dev) for n, v in kwargs.items()} if kwargs else kwargs
    return launch(name, fn, tuple(_unwrap_each(args, dev)), k, dev)


def _flat(x: Any) -> list:
    """The NumPy arrays in a nest of tuples/lists/dicts (a kernel's arguments or result)."""
    if isinstance(x, np.ndarray):
        return [x]
    if isinstance(x, np.generic):
        return [np.asarray(x)]
    if isinstance(x, (tuple, list)):
        return [a for v in x for a in _flat(v)]
    if type(x) is dict:
        return [a for v in x.values() for a in _flat(v)]
    return []


def launch(name: str, fn: Any, a: tuple, k: dict, dev: int) -> Any:
    """Run kernel ``fn(*a, **k)`` (NumPy arrays) on the current stream, or, while it
    captures, record it to be run again by the graph's launches on the same buffers (an
    in-place kernel is not run now; a new output is allocated and filled at end_capture
    with garbage, see :mod:`.streams`). Outside a capture, a kernel that writes memory (a
    new array, or in place) counts one launch in ``COUNTS.kernels``; a view counts none."""
    if _local.fusing is not None:  # a cupy.ndarray inside cupy.fuse
        raise TypeError(f"Unsupported type {ndarray!r} inside a fused function ({name}): "
                        f"pass arrays to it as arguments")
    if name in _ROW_MAJOR or type(fn) is np.ufunc or getattr(fn, "ufunc", False):
        fn = _in_c_order(fn)
    cap = capturing()
    if name in _JOINS:
        return _join(name, fn, a, k, dev, cap)
    if cap is not None:
        return _record(name, fn, a, k, dev, cap)
    out = fn(*a, **k)
    if name not in _NO_KERNEL and (name in _INPLACE or name.startswith("fuse:")
                                   or k.get("out") is not None or _fresh(out, a, k)):
        streams.COUNTS.kernels += 1
    return _wrap(out, dev, None)


def _record(name: str, fn: Any, a: tuple, k: dict, dev: int, cap: Any) -> Any:
    """:func:`launch` while the current stream captures into ``cap``."""
    if name in _NO_KERNEL:  # an allocation: nothing a launch redoes
        return _wrap(fn(*a, **k), dev, cap)
    if name in LIBRARY:
        raise NotImplementedError(f"calling {LIBRARY[name]} API during stream capture is "
                                  f"currently unsupported")
    if name in _INPLACE or k.get("out") is not None:
        cap.kernels.append(lambda: fn(*a, **k))
        return None
    with np.errstate(all="ignore"):  # it reads buffers earlier captures left as garbage
        # a fused kernel may write into its arguments: here it runs on copies, so that
        # nothing it writes lands before a launch (its outputs are only shaped)
        now = tuple(x.copy() if type(x) is np.ndarray else x for x in a) \
            if name.startswith("fuse:") else a
        out = _wrap(fn(*now, **k), dev, cap)
    inputs = {id(_root(x)) for x in _flat((a, k))}
    bufs = [x._a for x in _flat_wrapped(out)]
    fresh = [i for i, x in enumerate(bufs) if id(_root(x)) not in inputs]
    cap.fresh += [bufs[i] for i in fresh]

    def again() -> None:
        values = _flat(fn(*a, **k))
        for i in fresh:
            np.copyto(bufs[i], values[i])

    cap.kernels.append(again)
    return out


_JOIN_BYTES = 2 * 1024 * 1024  # _concatenate's threshold_size


def _join(name: str, fn: Any, a: tuple, k: dict, dev: int, cap: Any) -> Any:
    """A join (``concatenate``, ``stack``, ...) as CuPy 14 runs it
    (cupy/_core/_routines_manipulation.pyx, ``_concatenate``): more than 8 arrays of the
    output's dtype whose bytes average under 2 MiB are copied by *one* kernel that reads a
    table of their pointers, uploaded first (``core.array(ptrs)``: one host-to-device copy;
    two more, their offsets and strides, unless all are C-contiguous and equally long along
    the axis); otherwise one copy kernel per array (none for an empty one). Outside a capture
    that counts ``COUNTS.kernels`` and ``COUNTS.uploads``; inside one, the single kernel's
    uploads are refused (a copy from pageable host memory cannot be captured) and the
    per-array copies are recorded like any kernel."""
    arrays = list(a[0])
    given = k.get("out") if k.get("out") is not None else k.get("dtype")
    dtype = np.dtype(getattr(given, "dtype", given)) if given is not None else \
        np.result_type(*arrays)
    one = len(arrays) > 8 and all(x.dtype == dtype for x in arrays) and \
        sum(x.nbytes for x in arrays) < _JOIN_BYTES * len(arrays)
    if cap is not None:
        if one:
            refuse_in_capture(f"a host-to-device copy: {name} of {len(arrays)} arrays")
        return launch(name + ":copies", fn, a, k, dev)
    out = fn(*a, **k)
    if one:
        streams.COUNTS.kernels += 1
        same = all(x.flags.c_contiguous and x.shape == arrays[0].shape for x in arrays)
        streams.COUNTS.uploads += 1 if same else 3
    else:
        streams.COUNTS.kernels += sum(1 for x in arrays if x.size)
    return wrap(out, dev)


def _fresh(out: Any, a: tuple, k: dict) -> bool:
    """Whether the result ``out`` of kernel ``fn(*a, **k)`` has memory of its own (is not a
    view of an argument). Walked in line for one array out of flat arguments."""
    if type(out) is not np.ndarray:  # a NumPy scalar is new memory (a 0-d array, wrapped)
        return isinstance(out, np.generic) or _fresh_nested(out, (a, k))
    root = out if out.base is None else _root(out)
    for x in (*a, *k.values()) if k else a:
        if type(x) is np.ndarray:
            if (x if x.base is None else _root(x)) is root:
                return False
        elif isinstance(x, _NESTED):  # a sequence, a dict or an ndarray subclass
            return _fresh_nested(out, (a, k))
    return True


_NESTED = (tuple, list, dict, np.ndarray)


def _fresh_nested(out: Any, inputs: Any) -> bool:
    """:func:`_fresh` for any nest of results and arguments. The arguments' arrays are held
    until the end: a NumPy scalar's is a temporary, whose ``id`` a result's could reuse."""
    arrays = _flat(inputs)
    roots = {id(_root(x)) for x in arrays}
    return any(id(_root(x)) not in roots for x in _flat(out))


def _flat_wrapped(x: Any) -> list:
    if type(x) is ndarray:
        return [x]
    if isinstance(x, (tuple, list)):
        return [a for v in x for a in _flat_wrapped(v)]
    return []


class Device:
    """``cupy.cuda.Device``: an id, a context manager making it current, ``synchronize``."""

    def __init__(self, device: Any = None) -> None:
        if device is None:
            device = current_device()
        elif isinstance(device, Device):
            device = device.id
        if not 0 <= int(device) < N_DEVICES:
            raise RuntimeError("CUDARuntimeError: cudaErrorInvalidDevice: invalid device "
                               "ordinal")
        self.id = int(device)
        self._prev: list[int] = []

    def __enter__(self) -> Device:
        self._prev.append(current_device())
        _local.dev = self.id
        return self

    def __exit__(self, *exc: Any) -> None:
        _local.dev = self._prev.pop()

    def use(self) -> None:
        _local.dev = self.id

    def synchronize(self) -> None:
        refuse_in_capture("cudaDeviceSynchronize")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return hash(("cuda", self.id))

    def __repr__(self) -> str:
        return f"<CUDA Device {self.id}>"


def _has_mask(key: Any) -> bool:
    keys = key if type(key) is tuple else (key,)
    return any(type(k) is ndarray and k._a.dtype == np.bool_ and k.ndim > 0 for k in keys)


def wrap_indices(key: Any, shape: tuple[int, ...]) -> Any:
    """``key`` with its integer arrays taken modulo their axis' size: CuPy wraps an
    out-of-range integer-array index around where NumPy raises (an ``int`` still raises)."""
    keys = key if type(key) is tuple else (key,)

    def width(k: Any) -> int:
        if k is None:
            return 0
        return k.ndim if isinstance(k, np.ndarray) and k.dtype == np.bool_ else 1

    axis, out = 0, []
    for k in keys:
        if k is Ellipsis:
            axis += len(shape) - sum(width(j) for j in keys if j is not Ellipsis)
        elif isinstance(k, np.ndarray) and k.dtype.kind in "iu" and shape[axis] > 0:
            k = k % shape[axis]
        axis += 0 if k is Ellipsis else width(k)
        out.append(k)
    return tuple(out) if type(key) is tuple else out[0]


_SPAN = 1 << 36  # each buffer's emulated device addresses: key * _SPAN + byte offset
_BUFFERS: dict[int, Any] = {}  # key -> weakref to the root buffer
_KEYS: dict[int, tuple[int, Any]] = {}  # id(root) -> (key, weakref to it)
_next_key = iter(range(1, 1 << 26))


class MemoryPointer:
    """``ndarray.data`` (``cupy.cuda.MemoryPointer``): ``ptr``, an emulated device address
    of the array's first element, which :func:`memory_at` turns back into memory (for
    the emulated library calls that take raw pointers: tests/cupy_sim/blas.py)."""

    def __init__(self, a: np.ndarray) -> None:
        root = _root(a)
        key, ref = _KEYS.get(id(root), (0, None))
        if ref is None or ref() is not root:
            key, ref = next(_next_key), weakref.ref(root)
            _KEYS[id(root)] = (key, ref)
            _BUFFERS[key] = ref
        offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        self.ptr = key * _SPAN + offset

    def copy_from_device_async(self, src: MemoryPointer, size: int, stream: Any = None) -> None:
        """``cudaMemcpyAsync`` device to device (a copy, not a kernel: ``COUNTS.copies``)."""
        refuse_in_capture("the emulator captures no memcpy")
        dst, i = memory_at(self.ptr, np.uint8)
        data, j = memory_at(src.ptr, np.uint8)
        dst[i:i + size] = data[j:j + size]
        streams.COUNTS.copies += 1


def memory_at(ptr: int, dtype: Any) -> tuple[np.ndarray, int]:
    """The root buffer at emulated address ``ptr`` as a flat ``dtype`` array, and the
    element index ``ptr`` points at."""
    ref = _BUFFERS.get(ptr // _SPAN)
    root = None if ref is None else ref()
    if root is None:
        raise RuntimeError("cudaErrorIllegalAddress: a pointer to freed or foreign memory")
    flat = root.ravel(order="K").view(np.uint8).view(dtype)
    return flat, (ptr % _SPAN) // np.dtype(dtype).itemsize


def _getitem(a: np.ndarray, key: Any) -> np.ndarray:
    """``a[key]``, where an integer for every axis gives a 0-d *view*, as in CuPy (NumPy
    gives a scalar, a copy)."""
    key = wrap_indices(key, a.shape)
    r = a[key]
    if isinstance(r, np.generic):
        r = a[(*key, Ellipsis) if type(key) is tuple else (key, Ellipsis)]
    return r


class _Flags:
    def __init__(self, a: np.ndarray) -> None:
        self.c_contiguous = a.flags.c_contiguous
        self.f_contiguous = a.flags.f_contiguous
        self.owndata = a.flags.owndata


_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and",
           "or", "xor", "lshift", "rshift", "lt", "le", "gt", "ge", "eq", "ne")
_UNARY = ("neg", "pos", "abs", "invert")


class ndarray:  # noqa: N801 - CuPy's name
    """A device array: NumPy data tagged with its device; no implicit host conversion."""

    __slots__ = ("_a", "_dev", "__weakref__")
    __array_priority__ = 100

    def __init__(self, a: np.ndarray, dev: int) -> None:
        self._a = a
        self._dev = dev

    # metadata: no kernel, no device check; read in C (attrgetter), as CuPy's Cython properties
    shape = property(attrgetter("_a.shape"))
    dtype = property(attrgetter("_a.dtype"))
    ndim = property(attrgetter("_a.ndim"))
    size = property(attrgetter("_a.size"))
    nbytes = property(attrgetter("_a.nbytes"))
    itemsize = property(attrgetter("_a.itemsize"))
    strides = property(attrgetter("_a.strides"))
    flags = property(lambda self: _Flags(self._a))
    device = property(lambda self: Device(self._dev))
    data = property(lambda self: MemoryPointer(self._a))

    def __len__(self) -> int:
        return len(self._a)

    def nonzero(self) -> Any:
        transfer("nonzero: data-dependent output size", inherent=True)
        return self._k("nonzero", np.nonzero)

    def _view_or_fail(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        """Off the current device only a view of this array (no kernel) may be made."""
        if any(type(v) is ndarray for v in (*args, *kwargs.values())) or (
                type(args[0]) is tuple if args else False) and any(
                type(v) is ndarray for v in args[0]):
            raise _device_error(self._dev)
        r = fn(self._a, *args, **kwargs)
        if type(r) is not np.ndarray or _root(r) is not _root(self._a):
            raise _device_error(self._dev)
        return view_of(r, self._dev)

    def _k(self, name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if STATE.record:
            record("ndarray", name, args, kwargs)
        dev = _local.dev
        if self._dev != dev:
            if name == "__setitem__" or name.startswith("__i"):
                raise _device_error(self._dev)
            return self._view_or_fail(fn, args, kwargs)
        k = {n: unwrap(v, dev) for n, v in kwargs.items()} if kwargs else kwargs
        return launch(name, fn, (self._a, *_unwrap_each(args, dev)), k, dev)

    def __getitem__(self, key: Any) -> Any:
        if _has_mask(key):
            transfer("boolean-mask indexing: data-dependent output size", inherent=True)
        return self._k("__getitem__", _getitem, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        if _has_mask(key):  # CuPy counts the mask's true entries on the host first
            transfer("boolean-mask assignment: reads the mask's count", inherent=True)
        self._k("__setitem__", lambda a, k, v: operator.setitem(a, wrap_indices(k, a.shape),
                                                                v), key, value)

    def take(self, indices: Any, axis: Any = None, out: Any = None) -> Any:
        return self._k("take", lambda a, i, axis=None: np.take(a, i, axis=axis, mode="wrap"),
                       indices, axis=axis)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    T = property(lambda self: self._k("T", np.transpose))
    mT = property(lambda self: self._k("mT", np.swapaxes, -1, -2))

    def __getattr__(self, name: str) -> Any:  # the other ndarray methods CuPy has
        if name.startswith("_") or name not in _NDARRAY_METHODS:
            raise AttributeError(f"'cupy.ndarray' object has no attribute {name!r}")
        method = getattr(np.ndarray, name)
        return lambda *a, **k: self._k(name, method, *a, **k)

    def set(self, arr: Any, stream: Any = None) -> None:
        """``ndarray.set``: a host-to-device copy (``cudaMemcpyAsync`` on the current stream,
        no kernel), counted in ``COUNTS.uploads``; refused while the stream captures (a copy
        from pageable host memory cannot be captured)."""
        record("ndarray", "set", (arr,), {} if stream is None else {"stream": stream})
        refuse_in_capture("a host-to-device copy: ndarray.set")
        if not isinstance(arr, np.ndarray):
            raise TypeError("Only numpy.ndarray can be set to cupy.ndarray")
        if self.dtype != arr.dtype:
            raise TypeError(f"{arr.dtype} array cannot be set to {self.dtype} array")
        if self.shape != arr.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: "
                             f"{arr.shape}")
        self._a[...] = arr
        streams.COUNTS.uploads += 1

    # host transfers
    def get(self, stream: Any = None, order: str = "C", out: Any = None, *,
            blocking: bool = True) -> np.ndarray:
        transfer("get")
        return self._a.copy()

    def item(self) -> Any:
        transfer("item")
        return self._a.item()

    def tolist(self) -> Any:
        transfer("tolist")
        return self._a.tolist()

    def __float__(self) -> float:
        transfer("float")
        return float(self._a)

    def __int__(self) -> int:
        transfer("int")
        return int(self._a)

    def __complex__(self) -> complex:
        transfer("complex")
        return complex(self._a)

    def __bool__(self) -> bool:
        transfer("bool")
        return bool(self._a)

    def __repr__(self) -> str:
        transfer("repr")
        return repr(self._a)

    def __str__(self) -> str:
        transfer("str")
        return str(self._a)

    def __array__(self, *a: Any, **k: Any) -> Any:
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use "
                        "`.get()` to construct a NumPy array explicitly.")

    def __dlpack__(self, *a: Any, **k: Any) -> Any:
        raise TypeError("the CuPy emulator has no DLPack exchange")

    __hash__ = None  # type: ignore[assignment]


# operators whose CuPy kernels compute otherwise than NumPy's (:mod:`.loops`)
_OWN = {"mod": loops.remainder, "floordiv": loops.floor_divide}


def _into(fn: Any) -> Any:
    """The in-place operator of binary kernel ``fn``: its result written into ``a``."""
    def ifn(a: np.ndarray, b: Any) -> np.ndarray:
        np.copyto(a, fn(a, b), casting="same_kind")
        return a
    return ifn


def _binary(name: str) -> None:
    fn = _OWN.get(name) or getattr(operator, name if name not in ("and", "or") else name + "_")
    dunder, rdunder, idunder = f"__{name}__", f"__r{name}__", f"__i{name}__"

    def rfn(a: Any, b: Any) -> Any:
        return fn(b, a)

    def op(self: ndarray, other: Any) -> Any:
        return self._k(dunder, fn, other)

    def rop(self: ndarray, other: Any) -> Any:
        return self._k(rdunder, rfn, other)

    def iop(self: ndarray, other: Any) -> Any:
        ifn = _into(fn) if name in _OWN else getattr(operator, f"i{name}")  # (iand: no _)
        self._k(idunder, ifn, other)
        return self

    setattr(ndarray, dunder, op)
    if name not in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(ndarray, rdunder, rop)
        setattr(ndarray, idunder, iop)


for _n in _BINARY:
    _binary(_n)
# kernels that write into their first argument (recorded, not run, while capturing)
_INPLACE = frozenset({"__setitem__", "fill", "scatter_add", "at", "copyto", "put"}
                     | {f"__i{n}__" for n in _BINARY})
for _n in _UNARY:
    setattr(ndarray, f"__{_n}__",
            (lambda f, n: lambda self: self._k(f"__{n}__", f))(getattr(operator, _n), _n))


# ----- output layouts -------------------------------------------------------------------
# CuPy allocates these kernels' outputs row-major (C-contiguous) whatever the layout of
# their inputs, where NumPy keeps the inputs' (order='K', as PyTorch). CuPy 14.2:
# - ufuncs (every NumPy ufunc here, the operators, cupyx.scipy.special's) and the functions
#   CuPy writes as ufuncs (where: cupy/_sorting/search.py ``_where_ufunc``; clip, round:
#   _core/_routines_math.pyx ``_clip``, ``_round_ufunc``; isclose, ceil, floor, trunc, fix,
#   sinc, i0, angle, sign; tril/triu: ``cupy.where``; diff: the ufunc of two slices):
#   ``ufunc.__call__`` allocates through ``_get_out_args_from_optionals``
#   (cupy/_core/_kernel.pyx l. 646-669, 1374), ``_ndarray_init`` -> ``_init_fast(shape,
#   dtype, True)``, C order (cupy/_core/core.pyx l. 3338-3342); an ElementwiseKernel
#   through ``_get_out_args_with_params`` (_kernel.pyx l. 686-697), the same;
# - reductions (sum, max, mean, var, argmax, all, ...): ``_get_out_args``
#   (cupy/_core/_reduction.pyx l. 346-347, 656-659, 851-854), the same;
# - gathers (advanced and boolean-mask indexing, take, take_along_axis, compress):
#   ``core.ndarray(out_shape, ...)`` (cupy/_core/_routines_indexing.pyx ``_take``
#   l. 843-882, ``_getitem_mask_single`` l. 830-837);
# - joins: ``core.ndarray(shape_t, ...)`` (cupy/_core/_routines_manipulation.pyx l. 724).
# NumPy's layout, as in CuPy: views; astype, copy(), cupy.array/asarray, *_like, roll,
# nan_to_num (order='K': cupy/_core/core.pyx ``_astype``; _math/misc.py ``nan_to_num``
# writes into ``empty_like(x)``); ndarray.copy, flatten, ravel, reshape (order='C'). Not
# modelled (NumPy's layout here): sort (row-major on CuPy: cupy/_sorting/sort.py
# ``a.copy()``), argsort and cumsum along an axis other than the last (views of a
# row-major result with that axis rolled to the end: _core/_routines_sorting.pyx
# ``_ndarray_argsort``, _routines_math.pyx ``scan_core``), linalg (cuSOLVER's column-major
# eigenvectors), einsum, fft. Seen on an H200 with CuPy 14.2 for a permuted 3-axis input: each
# row-major result above row-major, each NumPy-layout one kept, sort row-major, argsort
# and cumsum rolled, eigh's eigenvectors column-major.
_ROW_MAJOR = frozenset(
    {f"__{n}__" for n in (*_BINARY, *_UNARY)} | {f"__r{n}__" for n in _BINARY}
    | {"where", "clip", "round", "around", "isclose", "ceil", "floor", "trunc", "fix", "sinc",
       "i0", "angle", "sign", "tril", "triu", "diff"}
    | {"sum", "prod", "max", "min", "amax", "amin", "mean", "var", "std", "argmax", "argmin",
       "all", "any", "count_nonzero", "nansum", "nanprod", "nanmax", "nanmin", "nanmean",
       "nanvar", "nanstd", "nanargmax", "nanargmin", "ptp", "trace"}
    | {"__getitem__", "take", "take_along_axis", "compress"} | _JOINS)


def _in_c_order(fn: Any) -> Any:
    """Kernel ``fn`` with its new output arrays row-major, as CuPy allocates them (above); an
    output that is an argument or a view of one is left as it is."""
    def kernel(*a: Any, **k: Any) -> Any:
        out = fn(*a, **k)
        outs = out if type(out) is tuple else (out,)
        if all(type(o) is not np.ndarray or o.flags.c_contiguous for o in outs):
            return out
        c = tuple(o.copy() if type(o) is np.ndarray and not o.flags.c_contiguous
                  and _fresh(o, a, k) else o for o in outs)
        return c if type(out) is tuple else c[0]
    return kernel


# CuPy 14's public ndarray methods that the emulator forwards to NumPy (kept in step by
# tests/test_cupy_contract.py, which checks each against the installed CuPy).
_NDARRAY_METHODS = frozenset((
    "all", "any", "argmax", "argmin", "argsort", "astype", "clip", "conj", "copy", "cumprod",
    "cumsum", "diagonal", "dot", "fill", "flatten", "max", "mean", "min", "prod",
    "ravel", "repeat", "reshape", "round", "sort", "squeeze", "std", "sum", "swapaxes",
    "transpose", "var", "view",
))
