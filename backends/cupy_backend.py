"""CuPy backend: CUDA arrays on one GPU, through array_api_compat.

:meth:`CupyBackend.check_available` says why CuPy cannot run and how to fix it: not
installed, installed without a usable GPU or driver, or unable to compile kernels. The
checks take the module object (:func:`_probe`), so tests run them against a stand-in.

Random numbers are counter-based: the state is ``(seed, offset)``, two Python ints, and a
draw of ``n`` words hashes the counters ``offset + 1 .. offset + n`` with splitmix64 in a
few elementwise kernels. ``get_rng_state``/``set_rng_state`` save and restore it exactly
without touching the device. (``cupy.random.Generator`` exposes no state to save, and each
new ``Philox4x3210`` allocates and initialises tens of thousands of curand states.)

Index range checks (embedding, cross-entropy targets) do not read the device: CuPy wraps an
out-of-range index around silently, and a read per check would stall every training step.
:meth:`CupyBackend.check_bounds` keeps each check's worst value on the device and reports
it at the next host read (``item``, in the same transfer as the value; ``to_numpy``;
``synchronize``), much as CUDA reports a device-side assert at the next synchronising call.

CUDA graphs (``xad.compile(fn, cuda_graphs=True)``, ``xad/compile/cuda_graph.py``):
:meth:`CupyBackend.graph_capture` makes a side stream current with a program's private
memory pool, :meth:`CupyBackend.begin_graph`/:meth:`CupyBackend.end_graph` capture the
kernels run between them, :meth:`CupyBackend.launch_graph` launches one on the current
stream. Inside a capture, matrix products use a cuBLAS handle of xad's own
(backends/cupy_blas.py), an index check keeps its running maximum in the graph
(:meth:`CupyBackend.captures_checks`), and ``rand``/``randn`` read their counter offset
from device memory written before each launch (:meth:`CupyBackend.captures_draws`).

Fusion (``xad.compile(fn, fuse=True)``, ``xad/compile/fusion.py``): :meth:`CupyBackend.fuse`
hands a generated chain of ufunc calls to ``cupy.fuse``.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from xad.backend import Backend, BackendError, Site

_COMPILE_HINTS = ("nvrtc", "compil", "cuda_path", "cuda_home", "include", ".h:", "header")


def _import_cupy() -> Any:
    """Import cupy, or raise :class:`BackendError` saying how to install it."""
    try:
        import cupy
    except ImportError as e:
        raise BackendError(
            f"the cupy backend needs CuPy, which is not installed ({e}). Install it with "
            f"`pip install 'xad[cupy]'` (CUDA 12), or use the default numpy backend: "
            f"xad.set_backend('numpy')") from e
    except Exception as e:  # a broken install: missing CUDA libraries at import time
        raise BackendError(
            f"CuPy is installed but failed to import ({type(e).__name__}: {e}). Reinstall "
            f"it with `pip install 'xad[cupy]'`, or use xad.set_backend('numpy')") from e
    return cupy


def _probe(cupy: Any) -> None:
    """Raise :class:`BackendError` unless ``cupy`` sees a GPU and can compile a kernel."""
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as e:
        raise BackendError(
            f"CuPy is installed but no usable GPU was found: asking the CUDA runtime for "
            f"devices failed ({type(e).__name__}: {e}). Check that this machine has an "
            f"NVIDIA GPU and a recent driver (`nvidia-smi`), or use the numpy backend: "
            f"xad.set_backend('numpy')") from e
    if count == 0:
        raise BackendError(
            "CuPy is installed but no usable GPU was found: the CUDA runtime reports 0 "
            "devices (is CUDA_VISIBLE_DEVICES empty?). Use the numpy backend: "
            "xad.set_backend('numpy')")
    try:
        int((cupy.arange(2) + 1).sum())
    except Exception as e:
        text = f"{type(e).__name__}: {e}"
        if any(h in text.lower() for h in _COMPILE_HINTS):
            raise BackendError(
                f"CuPy found a GPU but cannot compile kernels ({text}). CuPy needs the CUDA "
                f"compiler libraries (NVRTC) and headers: install them with "
                f"`pip install 'xad[ctk]'`, or set CUDA_PATH to a CUDA toolkit") from e
        raise BackendError(f"CuPy found a GPU but a test computation failed ({text}). Use "
                           f"the numpy backend: xad.set_backend('numpy')") from e


def _scatter_add_fn(cupy: Any, cupyx: Any) -> Callable[[Any, Any, Any], None]:
    """The unbuffered add: ``cupy.add.at``, else ``cupyx.scatter_add`` (older CuPy; CuPy 14
    warns that the ``ndarray.scatter_add`` it calls is deprecated)."""
    fn = getattr(getattr(cupy, "add", None), "at", None)
    if fn is not None:
        return fn
    fn = getattr(cupyx, "scatter_add", None) if cupyx is not None else None
    if fn is not None:
        return fn
    raise BackendError("this CuPy has neither cupyx.scatter_add nor cupy.add.at; "
                       "upgrade it with `pip install -U 'xad[cupy]'`")


# the dtypes CuPy's atomic add lacks (``cupy.add.at`` raises: ``_scatter_op_single`` in
# cupy/_core/_routines_indexing.pyx) and the one CupyBackend.index_add accumulates them in
_WIDER = {"?": "int32", "b": "int32", "h": "int32", "B": "uint32", "H": "uint32"}


def _fmod_remainder(cp: Any) -> Callable:
    """NumPy's ``npy_divmod`` remainder: ``fmod``'s, moved by ``x2`` where their signs
    differ (a zero keeps ``fmod``'s sign: ``_remainder`` sets it after)."""
    def remainder(x1: Any, x2: Any) -> Any:
        m = cp.fmod(x1, x2)
        return cp.where((m != 0) & ((m < 0) != (x2 < 0)), m + x2, m)
    return remainder


def _fmod_floor_divide(cp: Any) -> Callable:
    """NumPy's ``npy_divmod`` quotient: ``(x1 - fmod) / x2``, one less where the remainder
    moved, rounded to the nearest integer; a zero takes ``x1 / x2``'s sign, and a zero
    divisor gives ``x1 / x2``."""
    def floor_divide(x1: Any, x2: Any) -> Any:
        m = cp.fmod(x1, x2)
        q = x1 / x2
        div = (x1 - m) / x2
        div = cp.where((m != 0) & ((m < 0) != (x2 < 0)), div - 1, div)
        low = cp.floor(div)
        low = cp.where(div - low > 0.5, low + 1, low)
        low = cp.where(div == 0, q * 0, low)  # (|q| < 1 there: q * 0 is q's signed zero)
        return cp.where(x2 == 0, q, low)
    return floor_divide


class _OnDevice:
    """``array_api_compat.cupy`` with every function run under ``device`` (a CuPy kernel and
    a new array go to the *current* device; the compat layer ignores ``device=`` everywhere
    but ``asarray``/``astype``). Functions are wrapped on first use.

    ``sign`` and ``clip`` are CuPy's own kernels here: the compat layer's write through
    boolean masks (``out[isnan(x)] = nan``; ``out[out < lo] = lo[...]``), and CuPy reads a
    mask's count back to the host, a sync per call (abs's gradient, L1 and Huber losses,
    ``clip_grad_value_``). ``remainder`` and ``floor_divide`` are computed from ``fmod`` on
    floats: CuPy's own loops round otherwise than NumPy's and PyTorch's."""

    def __init__(self, xp: Any, device: Any, cupy: Any = None) -> None:
        self._xp = xp
        self._wraps = device is not None  # None: one GPU, always current (no wrapper)
        self._device = device if device is not None else contextlib.nullcontext()
        self._cp = cupy
        self._blas: Any = None  # xad's own cuBLAS handle while a graph captures
        self._fused: dict[str, Any] = {}  # remainder, floor_divide: one kernel each

    def matmul(self, x1: Any, x2: Any, /) -> Any:
        """``matmul`` (CuPy's own, past the compat layer's wrapper); while a CUDA graph
        captures, by xad's own cuBLAS handle, which captures (CuPy refuses its own then:
        backends/cupy_blas.py)."""
        with self._device:
            blas = self._blas
            if blas is not None and blas.takes(x1, x2):
                return blas.matmul(x1, x2)
            return self._cp.matmul(x1, x2)

    def sign(self, x: Any, /) -> Any:
        """CuPy's ``sign``, one kernel: the standard's (since CuPy 13 NaN stays NaN and a
        complex ``x`` gives ``x / |x|``, 0 at 0: the compat layer's fix-ups are for older
        CuPy)."""
        with self._device:
            return self._cp.sign(x)

    def clip(self, x: Any, /, min: Any = None, max: Any = None) -> Any:
        """The standard's ``clip``: ``x``'s dtype, the broadcast shape, a NaN bound gives
        NaN (as the compat layer's); a Python bound beyond an integer dtype is no bound."""
        cp = self._cp
        with self._device:
            out = x
            for bound, fn in ((min, cp.maximum), (max, cp.minimum)):
                if bound is None or _beyond(bound, x.dtype, cp, fn is cp.maximum):
                    continue
                if isinstance(bound, (int, float)):
                    if x.dtype.kind != "f":
                        bound = cp.full((), bound, dtype=x.dtype)
                elif bound.dtype != x.dtype:
                    bound = bound.astype(x.dtype)
                out = fn(out, bound)
            return x.copy() if out is x else out

    def remainder(self, x1: Any, x2: Any, /) -> Any:
        """``remainder`` from ``fmod`` on floats, as NumPy's, PyTorch's and JAX's, one fused
        kernel: CuPy's float loop is ``x1 - floor(x1 / x2) * x2``, NaN for an infinite
        ``x2`` (``inf * 0``) and off for a large quotient (``remainder(1e17, 3.0)`` is 1)."""
        return self._floats("remainder", _fmod_remainder, x1, x2)

    def floor_divide(self, x1: Any, x2: Any, /) -> Any:
        """``floor_divide`` from ``fmod`` on floats, NumPy's and PyTorch's algorithm (the
        quotient whose :meth:`remainder` is the one above), one fused kernel: CuPy's float
        loop is ``floor(x1 / x2)``, ``10.0`` for ``1.0 // 0.1`` where they give ``9.0``."""
        return self._floats("floor_divide", _fmod_floor_divide, x1, x2)

    def _floats(self, name: str, rule: Callable, x1: Any, x2: Any) -> Any:
        """CuPy's ``name`` on integers; on floats ``rule`` as one ``cupy.fuse`` kernel."""
        cp = self._cp
        with self._device:
            dtype = cp.result_type(x1, x2)
            if dtype.kind != "f":
                return getattr(cp, name)(x1, x2)
            fn = self._fused.get(name)
            if fn is None:
                fn = self._fused[name] = cp.fuse(kernel_name=f"xad_{name}")(rule(cp))
            if dtype != cp.float16:
                return fn(x1, x2)
            wide = cp.float32  # NumPy's half loops compute in float and round once
            return fn(x1.astype(wide), x2.astype(wide)).astype(dtype)

    def reshape(self, x: Any, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Any:
        """``reshape``: the array's own method where no ``copy`` is asked (the compat
        layer's wrapper adds Python frames to a call that is most often a view)."""
        with self._device:
            if copy is None:
                return x.reshape(shape)
            return self._xp.reshape(x, shape, copy=copy)

    def permute_dims(self, x: Any, /, axes: tuple[int, ...]) -> Any:
        """``permute_dims``: the array's ``transpose`` (a view, no kernel)."""
        return x.transpose(axes)

    def matrix_transpose(self, x: Any, /) -> Any:
        """``matrix_transpose``: the array's ``swapaxes`` (a view, no kernel)."""
        if x.ndim < 2:
            return self._xp.matrix_transpose(x)  # (its error)
        return x.swapaxes(-1, -2)

    def sum(self, x: Any, /, *, axis: Any = None, dtype: Any = None,
            keepdims: bool = False) -> Any:
        """``sum``: the array's own method for a floating array in its own dtype (the
        compat layer's wrapper is for integer promotion)."""
        with self._device:
            if dtype is None and x.dtype.kind == "f":
                return x.sum(axis=axis, keepdims=keepdims)
            return self._xp.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)

    def astype(self, x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
        """``astype``, with floats cast to 8- and 16-bit integers through int64, as PyTorch's
        CUDA casts (``-2.5`` to ``uint8`` is 254 and ``300.0`` is 44, as on NumPy): CUDA's
        own conversion saturates (0 and 255)."""
        with self._device:
            if x.dtype.kind == "f" and np.dtype(dtype).kind in "iu" and \
                    np.dtype(dtype).itemsize < 4:
                x = x.astype(np.int64)
            return self._xp.astype(x, dtype, copy=copy, device=device)

    def asarray(self, obj: Any, /, *, dtype: Any = None, device: Any = None,
                copy: Any = None) -> Any:
        """``asarray``; a Python scalar becomes a 0-d array by a fill kernel (its value a
        kernel argument), not by a host-to-device copy, which a CUDA graph capture forbids."""
        with self._device:
            if type(obj) in (int, float, bool, complex):
                return self._xp.full((), obj, dtype=np.asarray(obj, dtype=dtype).dtype)
            return self._xp.asarray(obj, dtype=dtype, device=device, copy=copy)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._xp, name)
        if self._wraps and callable(value) and not isinstance(value, type):
            fn, device = value, self._device

            def on_device(*args: Any, **kwargs: Any) -> Any:
                with device:
                    return fn(*args, **kwargs)

            on_device.__name__ = name
            on_device.__wrapped__ = fn  # type: ignore[attr-defined]
            value = on_device
        setattr(self, name, value)
        return value


def _beyond(bound: Any, dtype: Any, cp: Any, lower: bool) -> bool:
    """Whether Python int ``bound`` is at or beyond integer ``dtype``'s range (no bound)."""
    if type(bound) is not int or dtype.kind not in "iu":
        return False
    info = cp.iinfo(dtype)
    return bound <= info.min if lower else bound >= info.max


class CupyBackend(Backend):
    """CuPy arrays on one GPU (``device`` an id, ``"cuda:1"`` or a ``cupy.cuda.Device``).

    Example:
        >>> import xad
        >>> b = xad.set_backend("cupy")  # doctest: +SKIP
        >>> b.device  # doctest: +SKIP
        <CUDA Device 0>
    """

    name = "cupy"
    mutable = True
    is_host = False
    _checked: BackendError | bool = False
    _state: tuple[int, int]  # (seed, offset): the RNG position, set by set_rng_state

    def __init__(self, device: Any = None) -> None:
        cp, cupyx, ccp = self._modules()
        self._cp = cp
        self._scatter_add = _scatter_add_fn(cp, cupyx)
        self._erf = cupyx.scipy.special.erf
        self._scipy_special = cupyx.scipy.special
        self.array_type = cp.ndarray
        dev = cp.cuda.Device(_device_id(device))
        # xad runs each operation with its device made current; with one visible GPU it
        # always is, so neither the operations nor the namespace's functions enter it
        # (host time a step spends on every call otherwise)
        alone = int(cp.cuda.runtime.getDeviceCount()) == 1
        super().__init__(_OnDevice(ccp, None if alone else dev, cp), dev)
        self.scope = None if alone else dev
        self._pending: dict[Hashable, tuple[Any, Callable]] = {}  # see check_bounds
        # a check's running maximum inside CUDA graphs (per site), the checks the graph
        # being captured updates, and the accumulators to reset once read
        self._accumulators: dict[Hashable, Any] = {}
        self._graph_checks: list[tuple[Hashable, Any, Callable]] = []
        self._read_resets: dict[int, Any] = {}
        self._graph_draws: list[tuple[Any, int]] = []  # (offset word, n) of a capture
        self._stream: Any = None  # the side stream CUDA graphs are captured on
        self._blas: Any = None  # its own cuBLAS handle, on that stream (False: none)
        self._capturing = False
        self._program_pool: Any = None  # graph_capture's pool, while it captures
        self._segment_pool = contextlib.ExitStack()  # begin_graph's allocator
        self._elementwise: dict[str, Callable] = {}  # see elementwise
        with self.device:  # the hash constants, made once on the device
            self._k = tuple(cp.asarray(k, dtype=cp.uint64) for k in _SPLITMIX)
        self.manual_seed(0)

    @staticmethod
    def _modules() -> tuple[Any, Any, Any]:
        """``cupy``, ``cupyx`` and ``array_api_compat.cupy`` (the tests' emulator swaps them)."""
        cp = _import_cupy()
        import array_api_compat.cupy as ccp
        import cupyx
        import cupyx.scipy.special  # noqa: F401 - erf

        return cp, cupyx, ccp

    @staticmethod
    def _blas_modules(cp: Any) -> tuple[Any, Any]:
        """CuPy's cuBLAS binding and the cuBLAS library (the tests' emulator swaps them)."""
        from .cupy_blas import load

        return load(cp)

    @classmethod
    def check_available(cls) -> None:
        if isinstance(cls._checked, BackendError):
            raise cls._checked
        if cls._checked:
            return
        try:
            _probe(_import_cupy())
        except BackendError as e:
            cls._checked = e
            raise
        cls._checked = True

    # ----- creation ----------------------------------------------------------------------
    def asarray(self, obj: Any, dtype: Any = None) -> Any:
        with self.device:
            return self._cp.asarray(obj, dtype=dtype)

    def reshapes_in_place(self, a: Any, shape: tuple[int, ...]) -> bool:
        """A row-major array reshapes to any shape as a view (no trial reshape)."""
        return a.flags.c_contiguous or super().reshapes_in_place(a, shape)

    def zeros(self, shape: tuple[int, ...], dtype: Any) -> Any:
        with self.device:
            return self._cp.zeros(shape, dtype=dtype)

    def full(self, shape: tuple[int, ...], value: Any, dtype: Any) -> Any:
        with self.device:
            return self._cp.full(shape, value, dtype=dtype)

    def from_dlpack(self, x: Any, copy: bool | None = None) -> Any:
        """CuPy's ``from_dlpack`` with this device current (its ``device=`` is a DLPack
        tuple, and CuPy 12 has neither it nor ``copy=``). CuPy 14's ``__dlpack__`` copies
        only to the CPU: ``copy=True`` of a GPU array is a view, then a copy."""
        with self.device:
            if copy is None:
                return self._cp.from_dlpack(x)
            try:
                return self._cp.from_dlpack(x, copy=copy)
            except BufferError:
                if not copy:
                    raise
                return self._cp.from_dlpack(x).copy()

    # ----- host copies: where queued checks are reported ---------------------------------
    def to_numpy(self, x: Any) -> Any:
        if self._pending:  # one read of the checks, then the copy
            self._report(*self._take_pending(None))
        return self._cp.asnumpy(x)

    def from_numpy(self, a: Any) -> Any:
        with self.device:
            return self._cp.array(np.asarray(a), copy=True)

    def item(self, x: Any) -> Any:
        """``x``'s one value; queued checks come back in the same transfer (one sync)."""
        if x.size != 1:
            return super().item(x)
        if not self._pending:
            return x.item()
        taken, raw = self._take_pending(x)
        n = raw.size - x.itemsize  # the checks' int64 words first, then x's bytes
        self._report(taken, raw[:n])
        return raw[n:].view(x.dtype)[0].item()

    @property
    def cupy(self) -> Any:
        """The CuPy module, for ``torch.cuda``'s device queries (xad/torch_cuda.py): its
        memory pool, events and runtime."""
        return self._cp

    def synchronize(self) -> None:
        self.device.synchronize()
        if self._pending:
            self._report(*self._take_pending(None))

    # ----- checks kept on the device -----------------------------------------------------
    def check_bounds(self, site: Site, worst: Any,
                     error: Callable[[Site, Any], Exception | None]) -> None:
        """Keep ``worst`` on the device as the running maximum per ``site`` (one kernel, no
        read); :meth:`item`, :meth:`to_numpy` and :meth:`synchronize` report it, as CUDA
        reports a device-side assert at the next synchronising call."""
        acc = self._accumulators.get(site)
        if self._capturing:  # the graph keeps the maximum: graph_checks says where
            if acc is None or acc.shape != worst.shape:
                raise BackendError("an index range check ran inside a CUDA graph capture "
                                   "before it ran outside one; compile without cuda_graphs")
            self._cp.maximum(acc, worst, out=acc)
            self._graph_checks.append((site, acc, error))
            return
        if acc is None or acc.shape != worst.shape:  # made once per site, for the graphs
            with self.device:
                self._accumulators[site] = self._cp.full(worst.shape, _NONE, worst.dtype)
        self._queue(site, worst, error)

    def _queue(self, site: Hashable, worst: Any, error: Callable) -> None:
        old = self._pending.get(site)
        if old is not None and old[0] is not worst:
            with self.device:
                worst = self._cp.maximum(old[0], worst)
        self._pending[site] = (worst, error)

    @property
    def captures_checks(self) -> bool:
        """Index range checks run inside a graph capture: each keeps its running maximum in
        a device array of its site's (made when it first ran outside a capture), which every
        launch updates; :meth:`take_graph_checks` hands the captured ones to the replay,
        which queues them after each launch (no kernel; reset once read)."""
        return True

    def take_graph_checks(self) -> list:
        """The checks the graph just captured updates (for :meth:`queue_graph_checks`)."""
        checks, self._graph_checks = self._graph_checks, []
        return checks

    def queue_graph_checks(self, checks: list) -> None:
        """Queue the accumulators a graph launch updated, as :meth:`check_bounds` queues a
        check (read at the next host read, then reset)."""
        for site, acc, error in checks:
            old = self._pending.get(site)
            if old is not None and old[0] is not acc:  # an eager check's, once
                with self.device:
                    self._cp.maximum(acc, old[0], out=acc)
            self._pending[site] = (acc, error)
            self._read_resets[id(acc)] = acc

    def _take_pending(self, x: Any) -> tuple[list, Any]:
        """Empty the queue: its checks, and one host copy of their words followed by ``x``'s
        bytes (if given), as uint8."""
        taken, self._pending = list(self._pending.items()), {}
        cp = self._cp
        with self.device:
            parts = [w.reshape(-1).view(cp.uint8) for _, (w, _) in taken]  # (vmap's: 2-d)
            if x is not None:
                parts.append(x.reshape(1).view(cp.uint8))
            raw = cp.concatenate(parts).get()
            for acc in self._read_resets.values():  # a graph's running maxima: read, restart
                acc.fill(_NONE)
            self._read_resets = {}
            return taken, raw

    def _report(self, taken: list, raw: Any) -> None:
        """Raise the first failed check of ``taken`` from its host words ``raw``."""
        words = raw.view(np.int64)
        for site, (w, error) in taken:
            exc = error(site, words[:w.size].reshape(w.shape))  # (vmap's: a row each)
            words = words[w.size:]
            if exc is not None:
                exc.add_note(f"(found by a check that {self.label} ran on the device and "
                             f"read at this host read, the first after the failing call, "
                             f"so that a training step never waits for the GPU; to stop at "
                             f"the call itself, call backend.synchronize() right after it)")
                raise exc

    def nccl_transport(self) -> Any:
        """CuPy's NCCL binding and streams, for ``xad.distributed.init("nccl")``."""
        with self.device:
            return _NcclTransport(self._cp)

    # ----- CUDA graphs --------------------------------------------------------------------
    def graph_pool(self) -> Any:
        """A private memory pool for one program's graphs: the blocks their kernels use stay
        theirs while the pool lives (no other allocation, and no ``free_all_blocks`` of the
        default pool, can take them)."""
        with self.device:
            return self._cp.cuda.MemoryPool()

    def _side_stream(self) -> Any:
        if self._stream is None:
            with self.device:
                self._stream = self._cp.cuda.Stream(non_blocking=True)
        return self._stream

    def captures_matmul(self, dtype: Any) -> bool:
        """Whether a matrix product of ``dtype`` can run inside a graph capture: float16,
        float32 and float64, by xad's own cuBLAS handle on the capture stream (made here,
        before any capture, with its workspace: backends/cupy_blas.py)."""
        if self._blas is None:
            from .cupy_blas import OwnBlas

            try:
                with self.device:
                    cublas, lib = self._blas_modules(self._cp)
                    self._blas = OwnBlas(self._cp, cublas, lib, self._side_stream())
            except Exception:  # no usable cuBLAS library: products split the graphs
                self._blas = False
        return bool(self._blas) and dtype in (self._cp.float16, self._cp.float32,
                                              self._cp.float64)

    @contextlib.contextmanager
    def graph_capture(self, pool: Any) -> Any:
        """A side stream made current (CUDA captures only on a non-default stream), new
        arrays drawn from ``pool``; :meth:`begin_graph`/:meth:`end_graph` inside."""
        cp = self._cp
        with self.device:
            self._side_stream()
            pending = [(k, id(v[0])) for k, v in self._pending.items()]
            self._program_pool = pool
            with cp.cuda.using_allocator(pool.malloc), self._stream:
                try:
                    yield
                finally:
                    self._program_pool = None
                    if self._capturing:  # an error inside: abandon the capture
                        self._capturing = False
                        self.xp._blas = None
                        self._segment_pool.close()
                        with contextlib.suppress(Exception):
                            self._stream.end_capture()
            if [(k, id(v[0])) for k, v in self._pending.items()] != pending:
                raise BackendError("an index range check ran inside a CUDA graph capture (a "
                                   "graph would never report it); compile without "
                                   "cuda_graphs")

    def begin_graph(self, pool: Any) -> None:
        """Start capturing the kernels run on the side stream (inside :meth:`graph_capture`),
        their new arrays drawn from ``pool``, this graph's own: a block that one graph's
        temporary frees is never another graph's. (With one pool for all, a value a later
        graph makes and keeps for the next call, a tensor rebound to it, could share its
        block with an earlier graph's temporary, which the next call writes first: seen on
        an H200, BatchNorm's ``num_batches_tracked`` overwritten by a boolean mask.)"""
        self._segment_pool = contextlib.ExitStack()
        self._segment_pool.enter_context(self._cp.cuda.using_allocator(pool.malloc))
        self._stream.begin_capture()
        self._capturing = True
        self.xp._blas = self._blas or None

    def end_graph(self) -> Any:
        """The ``cupy.cuda.Graph`` of the kernels captured since :meth:`begin_graph` (they have
        not run)."""
        self._capturing = False
        self.xp._blas = None
        graph = self._stream.end_capture()
        self._segment_pool.close()
        return graph

    def copy_into(self, dst: Any, src: Any) -> None:
        """``dst[...] = src`` as a device-to-device memcpy (no kernel) where both are
        contiguous alike (a graph's argument buffers, its results copied out)."""
        with self.device:
            if dst.dtype == src.dtype and dst.shape == src.shape and dst.flags.c_contiguous \
                    and src.flags.c_contiguous:
                if src.nbytes:
                    dst.data.copy_from_device_async(src.data, src.nbytes)
            else:
                dst[...] = src

    def launch_graph(self, graph: Any) -> None:
        """Run ``graph`` on this device's current stream (after what is queued there)."""
        with self.device:
            graph.launch()

    def upload(self, a: Any, value: float) -> None:
        """Write the number ``value`` into the 0-d device array ``a`` by a host-to-device copy
        (``ndarray.set``: no kernel, queued on the current stream), where a graph reads it
        (an optimiser's learning rate: :mod:`xad.optim.capturable`)."""
        with self.device:
            a.set(np.asarray(value, dtype=a.dtype))

    def scalar(self, value: float, dtype: Any) -> Any:
        """A NumPy scalar of ``dtype``: a kernel argument of that type (no fill kernel, no
        copy), where a Python float would be a float64 argument of ``cupy.fuse``."""
        return np.dtype(dtype).type(value)

    def elementwise(self, make: Callable[[Any], Callable], name: str) -> Callable:
        """``make(cupy)`` as one ``cupy.fuse`` kernel, made at the first call for ``name``
        (xad's eager fused paths: activation gradients, dropout's mask)."""
        fn = self._elementwise.get(name)
        if fn is None:
            fn = self._elementwise[name] = self._cp.fuse(kernel_name=name)(make(self._cp))
        return fn

    def reduction(self, make: Callable[[Any], Callable], name: str) -> Callable:
        """``make(cupy)`` as one ``cupy.fuse`` kernel, made at the first call for ``name``:
        with its one reduction, CuPy's fusion makes a ``ReductionKernel`` (pre-map, reduce,
        post-map on the reduced value; tests/cupy_sim/fusion.py cites the source)."""
        return self.elementwise(make, name)

    def fuse(self, make: Callable[[Any], Callable], name: str) -> Callable:
        """``cupy.fuse`` of the function ``make(cupy)`` (``xad.compile(fn, fuse=True)``,
        ``xad/compile/fusion.py``): its ufunc calls and operators become one elementwise
        kernel named ``name``, compiled at its first call."""
        return self._cp.fuse(kernel_name=name)(make(self._cp))

    # ----- what the standard lacks -------------------------------------------------------
    def im2col(self, x: Any, kernel: tuple[int, int], stride: tuple[int, int],
               dilation: tuple[int, int], pads: tuple[int, int, int, int],
               value: float) -> Any:
        """The windows as one strided view of the batch-last (padded) image, whatever its
        layout, and one copy, as NumPy's. The reference path's ``stack`` of more than 8
        slices is one CuPy kernel reading a table of their pointers, uploaded first: a
        host-to-device copy, which a CUDA-graph capture refuses (seen on an H200)."""
        cp = self._cp
        n, c, h, w = x.shape
        top, bottom, left, right = pads
        (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
        with self.device:
            xt = cp.transpose(x, (1, 2, 3, 0))
            if any(pads):
                padded = cp.full((c, h + top + bottom, w + left + right, n), value, x.dtype)
                padded[:, top:top + h, left:left + w] = xt
                xt = padded
            elif any(s < 0 for s in xt.strides):  # (a flipped view: its strides as they are
                xt = cp.ascontiguousarray(xt)  # otherwise, no copy before the one below)
            ho = (xt.shape[1] - dh * (kh - 1) - 1) // sh + 1
            wo = (xt.shape[2] - dw * (kw - 1) - 1) // sw + 1
            sc, sy, sx, sn = xt.strides
            view = cp.lib.stride_tricks.as_strided(
                xt, (c, kh, kw, ho, wo, n), (sc, sy * dh, sx * dw, sy * sh, sx * sw, sn))
            return view.copy()

    def index_add(self, x: Any, key: Any, values: Any) -> Any:
        """``x[key] += values`` with repeats accumulating, in place and in ``x``'s own layout
        (``cupy.add.at`` takes any key ``__setitem__`` takes): no flat-position array, no
        contiguous copy. CuPy's atomic add has no bool, 8- or 16-bit integer or complex
        type (it raises): those accumulate into zeros of a type it has, added to ``x`` after
        (32-bit integers, whose low bits are the narrow sum wrapped, as PyTorch's; a
        complex's real and imaginary parts)."""
        cp = self._cp
        with x.device:
            v = cp.asarray(values, dtype=x.dtype)
            if x.dtype.kind == "c":
                part = x.dtype.type(0).real.dtype
                re, im = cp.zeros(x.shape, dtype=part), cp.zeros(x.shape, dtype=part)
                self._scatter_add(re, key, cp.real(v))
                self._scatter_add(im, key, cp.imag(v))
                x += re + 1j * im
            elif x.dtype.char in _WIDER:
                acc = cp.zeros(x.shape, dtype=_WIDER[x.dtype.char])
                self._scatter_add(acc, key, v.astype(acc.dtype))
                if x.dtype.kind == "b":
                    x |= acc != 0  # (PyTorch's bool sum: any True)
                else:
                    x += acc.astype(x.dtype)
            else:
                self._scatter_add(x, key, v)
        return x

    def einsum(self, subscripts: str, *operands: Any) -> Any:
        return self._cp.einsum(subscripts, *operands)

    def erf(self, x: Any) -> Any:
        """``cupyx.scipy.special.erf``, cast back to ``x``'s dtype (its float16 loop gives
        float64, as its ``types`` say: ``e->d``)."""
        r = self._erf(x)
        return r if r.dtype == x.dtype else r.astype(x.dtype)

    def _special(self, name: str, x: Any) -> Any:
        """``cupyx.scipy.special``'s function, cast back to ``x``'s dtype as :meth:`erf`."""
        r = getattr(self._scipy_special, name)(x)
        return r if r.dtype == x.dtype else r.astype(x.dtype)

    def erfc(self, x: Any) -> Any:
        return self._special("erfc", x)

    def erfinv(self, x: Any) -> Any:
        return self._special("erfinv", x)

    def lgamma(self, x: Any) -> Any:
        r = self._special("gammaln", x)
        return self._cp.where(r == -self._cp.inf, self._cp.inf, r)  # scipy's -inf at -inf

    def digamma(self, x: Any) -> Any:
        return self._special("digamma", x)

    def bitcast(self, x: Any, dtype: Any) -> Any:
        return x.view(dtype)

    def as_strided(self, x: Any, size: tuple[int, ...], stride: tuple[int, ...],
                   offset: int) -> Any:
        if not x.flags.c_contiguous:  # a copy would not share x's memory
            raise ValueError(f"as_strided of an array of shape {x.shape} not in row-major "
                             f"order")
        flat = x.reshape(-1)
        return self._cp.lib.stride_tricks.as_strided(
            flat[offset:], size, tuple(s * flat.itemsize for s in stride))

    def fmod(self, x: Any, y: Any) -> Any:
        return self._cp.fmod(x, y)

    # ----- random numbers ----------------------------------------------------------------
    def manual_seed(self, seed: int) -> None:
        self.set_rng_state((seed, 0))

    def _bits(self, n: int) -> Any:
        """``n`` random uint64 words: splitmix64 of the counters ``offset .. offset + n``."""
        cp = self._cp
        gamma, m1, m2, s30, s27, s31 = self._k[:6]
        with self.device:
            if self._capturing:  # the offset from device memory, written before each launch:
                # a word of the program's pool, never a block this graph's temporaries freed
                # (their kernels would overwrite the offset at each launch: seen on an H100)
                with cp.cuda.using_allocator(self._program_pool.malloc):
                    slot = cp.empty((), dtype=cp.uint64)
                self._graph_draws.append((slot, n))
                z = (cp.arange(1, n + 1, dtype=cp.uint64) + slot) * gamma + self._seed_k
            else:
                seed, offset = self._state
                self._state = (seed, offset + n)
                z = cp.arange(offset + 1, offset + n + 1, dtype=cp.uint64) * gamma \
                    + self._seed_k
            z = (z ^ (z >> s30)) * m1
            z = (z ^ (z >> s27)) * m2
            return z ^ (z >> s31)

    def _uniform(self, n: int, dtype: Any) -> Any:
        """``n`` uniforms in [0, 1): the top 53 (float64) or 24 (float32) bits, exact."""
        cp = self._cp
        bits = self._bits(n)
        with self.device:
            if dtype == cp.float64:
                return (bits >> self._k[6]).astype(cp.float64) * 2.0 ** -53
            return (bits >> self._k[7]).astype(cp.float32) * 2.0 ** -24

    def rand(self, shape: tuple[int, ...], dtype: Any) -> Any:
        cp = self._cp
        work = dtype if dtype in (cp.float32, cp.float64) else cp.float32
        with self.device:
            r = self._uniform(math.prod(shape), work).reshape(tuple(shape))
            return r if work == dtype else r.astype(dtype)

    def randn(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """Box-Muller on pairs of uniforms (both the cosine and the sine half are used)."""
        cp = self._cp
        work = dtype if dtype in (cp.float32, cp.float64) else cp.float32
        n = math.prod(shape)
        half = (n + 1) // 2
        with self.device:
            u = self._uniform(2 * half, work)
            r = cp.sqrt(-2.0 * cp.log1p(-u[:half]))  # 1 - u in (0, 1]: log is finite
            t = (2.0 * math.pi) * u[half:]
            z = cp.concatenate((r * cp.cos(t), r * cp.sin(t)))[:n].reshape(tuple(shape))
            return z if work == dtype else z.astype(dtype)

    def permutation(self, n: int) -> Any:
        """A uniform permutation: the argsort of ``n`` random 64-bit keys (a tie, which
        would favour the lower index, has probability below n**2 / 2**65)."""
        with self.device:
            return self._cp.argsort(self._bits(int(n)))

    def get_rng_state(self) -> Any:
        return self._state

    def set_rng_state(self, state: Any) -> None:
        seed, offset = int(state[0]) % 2**64, int(state[1])
        if getattr(self, "_state", (None,))[0] != seed:  # one host-to-device copy per seed
            with self.device:
                if getattr(self, "_seed_k", None) is None:
                    self._seed_k = self._cp.asarray(seed, dtype=self._cp.uint64)
                else:  # in place: captured graphs read this array
                    self._seed_k.set(np.asarray(seed, dtype=np.uint64))
        self._state = (seed, offset)

    @property
    def captures_draws(self) -> bool:
        """``rand``/``randn`` run inside a graph capture: each draw's counter offset is read
        from a device word of its own, which :meth:`before_graph_draws` writes (a
        host-to-device copy, no kernel) before each launch from the host state, advancing
        it as eager draws would: the same numbers as eager mode, in the same order."""
        return True

    def take_graph_draws(self) -> list:
        """The draws the graph just captured (for :meth:`before_graph_draws`)."""
        draws, self._graph_draws = self._graph_draws, []
        return draws

    def before_graph_draws(self, draws: list) -> None:
        """Write each captured draw's offset and advance the host state past it."""
        seed, offset = self._state
        for slot, n in draws:
            with self.device:
                slot.set(np.asarray(offset % 2**64, dtype=np.uint64))
            offset += n
        self._state = (seed, offset)


_NONE = -(2 ** 63)  # an accumulator's start: below every int64 a check reports

# splitmix64's increment and multipliers, its three shifts, and the shifts to 53 and 24 bits
_SPLITMIX = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 30, 27, 31, 11, 40)


def _device_id(device: Any) -> int:
    if device is None:
        return 0
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        kind, _, index = device.partition(":")
        if kind not in ("cuda", "gpu"):
            raise ValueError(f"cupy backend: device must be 'cuda[:N]' or an id, "
                             f"got {device!r}")
        return int(index or 0)
    return int(device.id)


class _NcclTransport:
    """What ``xad.distributed``'s NCCL communicator needs from CuPy (see
    ``xad/distributed/nccl_comm.py``): the ``cupy.cuda.nccl`` module, device pointers, the
    current stream, one side stream for overlapped all-reduces, and event-based ordering."""

    def __init__(self, cupy: Any) -> None:
        from cupy.cuda import nccl
        self.nccl, self._cp = nccl, cupy
        self._side = cupy.cuda.Stream(non_blocking=True)

    @staticmethod
    def pointer(a: Any) -> int:
        return a.data.ptr

    def current_stream(self) -> Any:
        return self._cp.cuda.get_current_stream()

    def side_stream(self) -> Any:
        return self._side

    def after(self, waiter: Any, producer: Any) -> None:
        """``waiter`` runs what is queued next only after what ``producer`` has queued."""
        event = self._cp.cuda.Event(disable_timing=True)
        event.record(producer)
        waiter.wait_event(event)
