"""CuPy backend: CUDA arrays on one GPU, through array_api_compat.

:meth:`CupyBackend.check_available` says why CuPy cannot run and how to fix it: not
installed, installed without a usable GPU or driver, or unable to compile kernels. The
checks take the module object (:func:`_probe`), so tests run them against a stand-in.

Random numbers: CuPy's generators expose no state to save, so the backend keeps
``(seed, draws)`` and makes each draw from a counter-based Philox generator seeded with that
pair; ``get_rng_state``/``set_rng_state`` save and restore the pair exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from xad.backend import Backend, BackendError

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
    """The unbuffered add: ``cupyx.scatter_add``, else ``cupy.add.at`` (newer CuPy)."""
    fn = getattr(cupyx, "scatter_add", None) if cupyx is not None else None
    if fn is not None:
        return fn
    fn = getattr(getattr(cupy, "add", None), "at", None)
    if fn is not None:
        return fn
    raise BackendError("this CuPy has neither cupyx.scatter_add nor cupy.add.at; "
                       "upgrade it with `pip install -U 'xad[cupy]'`")


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

    def __init__(self, device: Any = None) -> None:
        cp = _import_cupy()
        import array_api_compat.cupy as ccp
        import cupyx

        self._cp = cp
        self._scatter_add = _scatter_add_fn(cp, cupyx)
        self.array_type = cp.ndarray
        super().__init__(ccp, cp.cuda.Device(_device_id(device)))
        self.manual_seed(0)

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

    def zeros(self, shape: tuple[int, ...], dtype: Any) -> Any:
        with self.device:
            return self._cp.zeros(shape, dtype=dtype)

    def full(self, shape: tuple[int, ...], value: Any, dtype: Any) -> Any:
        with self.device:
            return self._cp.full(shape, value, dtype=dtype)

    # ----- host copies -------------------------------------------------------------------
    def to_numpy(self, x: Any) -> Any:
        return self._cp.asnumpy(x)

    def from_numpy(self, a: Any) -> Any:
        with self.device:
            return self._cp.array(np.asarray(a), copy=True)

    def item(self, x: Any) -> Any:
        if x.size != 1:
            return super().item(x)
        return x.item()

    def nccl_transport(self) -> Any:
        """CuPy's NCCL binding and streams, for ``xad.distributed.init("nccl")``."""
        with self.device:
            return _NcclTransport(self._cp)

    def synchronize(self) -> None:
        self.device.synchronize()

    # ----- what the standard lacks -------------------------------------------------------
    def index_add(self, x: Any, key: Any, values: Any) -> Any:
        cp = self._cp
        with x.device:
            n = math.prod(x.shape)
            pos = cp.arange(n, dtype=cp.int64).reshape(x.shape)[key]
            vals = cp.broadcast_to(cp.asarray(values, dtype=x.dtype), pos.shape)
            target = x if x.flags.c_contiguous else cp.ascontiguousarray(x)
            self._scatter_add(target.reshape(-1), pos.reshape(-1), vals.reshape(-1))
        return target

    def einsum(self, subscripts: str, *operands: Any) -> Any:
        return self._cp.einsum(subscripts, *operands)

    def erf(self, x: Any) -> Any:
        import cupyx.scipy.special as csp

        return csp.erf(x)

    # ----- random numbers ----------------------------------------------------------------
    def manual_seed(self, seed: int) -> None:
        self._state = (int(seed), 0)

    def _rng(self) -> Any:
        seed, draws = self._state
        self._state = (seed, draws + 1)
        cp = self._cp
        return cp.random.Generator(cp.random.Philox4x3210([seed, draws]))

    def _draw(self, method: str, shape: tuple[int, ...], dtype: Any) -> Any:
        cp = self._cp
        native = dtype in (cp.float32, cp.float64)
        with self.device:
            r = getattr(self._rng(), method)(tuple(shape),
                                             dtype=dtype if native else cp.float64)
            return r if native or dtype is None else r.astype(dtype)

    def randn(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self._draw("standard_normal", shape, dtype)

    def rand(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self._draw("random", shape, dtype)

    def permutation(self, n: int) -> Any:
        return self._cp.argsort(self.rand((int(n),), self._cp.float64))

    def get_rng_state(self) -> Any:
        return self._state

    def set_rng_state(self, state: Any) -> None:
        seed, draws = state
        self._state = (int(seed), int(draws))


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
