"""Matrix products inside a CUDA-graph capture: xad's own cuBLAS handle.

CuPy refuses every cuBLAS call while the current stream captures: each of its wrappers
(``cupy_backends/cuda/libs/cublas.pyx``) first calls ``setStream(handle, current stream)``,
which raises ``NotImplementedError`` when ``runtime.streamIsCapturing(stream)``. cuBLAS itself
captures (NVIDIA's "CUDA Graphs support": with host-pointer ``alpha``/``beta`` their values
are baked into the graph; a workspace set with ``cublasSetWorkspace`` keeps cuBLAS from
allocating during capture). So :class:`OwnBlas` holds a handle of its own, made with
CuPy's ``cublas.create()``, whose stream (the side stream xad captures on) and workspace
(a device buffer it keeps) are set *before* any capture, CuPy's ``setStream`` check passing
then; inside a capture it calls ``cublas{S,D}gemmStridedBatched`` from the cuBLAS library
CuPy loaded, through ``ctypes``, without touching the stream; float16 products (autocast's)
``cublasGemmStridedBatchedEx`` with CuPy's own choice for a float16 ``gemmEx``
(``_routines_linalg.pyx``): accumulation in float32 (``CUBLAS_COMPUTE_32F``), float
``alpha``/``beta``, ``CUBLAS_GEMM_DEFAULT_TENSOR_OP``.

Only float16, float32 and float64 products of arrays with at least one dimension go this way; the
backend calls it only while its side stream captures (``xad/compile/cuda_graph.py``) and
CuPy's ``matmul`` (CuPy's own handle) everywhere else.

The emulator (tests/cupy_sim/blas.py) models exactly this: ``setStream`` refused during
capture, a gemm on a handle whose stream is not the capturing one, or with no workspace
set, refused; the contract test checks the names against the installed CuPy.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

__all__ = ["OwnBlas", "load"]

WORKSPACE = 32 << 20  # bytes: NVIDIA's recommended size for Hopper
_OP_N, _OP_T = 0, 1
# cudaDataType CUDA_R_16F, cublasComputeType_t CUBLAS_COMPUTE_32F,
# cublasGemmAlgo_t CUBLAS_GEMM_DEFAULT_TENSOR_OP (library_types.h, cublas_api.h)
_R_16F, _COMPUTE_32F, _TENSOR_OP = 2, 68, 99


def load(cp: Any) -> tuple[Any, Any]:
    """CuPy's cuBLAS binding module and the cuBLAS library it loaded (``ctypes``)."""
    from cupy_backends.cuda.libs import cublas

    major = cp.cuda.runtime.runtimeGetVersion() // 1000
    try:  # already loaded by CuPy's binding: found by its soname
        lib = ctypes.CDLL(f"libcublas.so.{major}")
    except OSError:
        with open("/proc/self/maps") as maps:
            path = next(line.split()[-1] for line in maps if "libcublas.so" in line)
        lib = ctypes.CDLL(path)
    return cublas, lib


class OwnBlas:
    """A cuBLAS handle bound to ``stream`` with a workspace, for products during capture."""

    def __init__(self, cp: Any, cublas: Any, lib: Any, stream: Any) -> None:
        self._cp, self._lib = cp, lib
        self.handle = cublas.create()
        cublas.setStream(self.handle, stream.ptr)  # before any capture: CuPy allows it
        self.workspace = cp.empty((WORKSPACE,), dtype=cp.uint8)
        _check(lib.cublasSetWorkspace_v2(ctypes.c_void_p(self.handle),
                                         ctypes.c_void_p(self.workspace.data.ptr),
                                         ctypes.c_size_t(WORKSPACE)), "cublasSetWorkspace_v2")
        self._gemm = {cp.dtype(cp.float32): (lib.cublasSgemmStridedBatched, ctypes.c_float),
                      cp.dtype(cp.float64): (lib.cublasDgemmStridedBatched, ctypes.c_double),
                      cp.dtype(cp.float16): (self._half, ctypes.c_float)}
        self._gemm_ex = lib.cublasGemmStridedBatchedEx

    def _half(self, handle: Any, ta: int, tb: int, m: int, n: int, k: int, alpha: Any,
              a: Any, lda: int, sa: Any, b: Any, ldb: int, sb: Any, beta: Any, c: Any,
              ldc: int, sc: Any, count: int) -> int:
        """A float16 strided-batched gemm with the S/D functions' arguments (float32
        accumulation, as CuPy's float16 ``matmul``)."""
        return self._gemm_ex(handle, ta, tb, m, n, k, alpha, a, _R_16F, lda, sa, b, _R_16F,
                             ldb, sb, beta, c, _R_16F, ldc, sc, count, _COMPUTE_32F,
                             _TENSOR_OP)

    def takes(self, x: Any, y: Any) -> bool:
        """Whether :meth:`matmul` computes ``x @ y`` (float16/32/64, the same dtype)."""
        return x.dtype == y.dtype and x.dtype in self._gemm and x.ndim >= 1 and y.ndim >= 1

    def matmul(self, x: Any, y: Any) -> Any:
        """``x @ y`` (NumPy's broadcasting rules) by one strided-batched gemm: row-major
        ``Z = X Y`` is column-major ``Z^T = Y^T X^T``."""
        cp = self._cp
        vx, vy = x.ndim == 1, y.ndim == 1
        x = x.reshape(1, -1) if vx else x
        y = y.reshape(-1, 1) if vy else y
        (m, k), n = x.shape[-2:], y.shape[-1]
        if y.shape[-2] != k:
            raise ValueError(f"matmul: shapes {x.shape} and {y.shape} do not align")
        batch = tuple(np.broadcast_shapes(x.shape[:-2], y.shape[:-2]))
        count = 1
        for d in batch:
            count *= d
        out = cp.empty(batch + (m, n), dtype=x.dtype)
        if count and m and n:
            tx, ldx, sx, x = _operand(cp, x, batch)
            ty, ldy, sy, y = _operand(cp, y, batch)
            if k == 0:
                out[...] = 0
            else:
                fn, scalar = self._gemm[x.dtype]
                one, zero = scalar(1.0), scalar(0.0)
                _check(fn(ctypes.c_void_p(self.handle), ty, tx, n, m, k, ctypes.byref(one),
                          ctypes.c_void_p(y.data.ptr), ldy, ctypes.c_longlong(sy),
                          ctypes.c_void_p(x.data.ptr), ldx, ctypes.c_longlong(sx),
                          ctypes.byref(zero), ctypes.c_void_p(out.data.ptr), n,
                          ctypes.c_longlong(m * n), count), "gemmStridedBatched")
        if vx:
            out = out[..., 0, :]
        return out[..., 0] if vy else out


def _operand(cp: Any, a: Any, batch: tuple) -> tuple[int, int, int, Any]:
    """``(op, ld, batch stride, array)`` of a row-major operand as cuBLAS reads it
    (column-major): a C-contiguous matrix is its transpose, read as ``N``; a transposed one
    (``w.T``) is read as ``T`` with no copy; anything else is copied contiguous first."""
    r, c = a.shape[-2:]
    item = a.itemsize
    if a.ndim == 2:  # one matrix for the whole batch: batch stride 0
        if a.strides == (c * item, item):
            return _OP_N, c, 0, a
        if a.strides == (item, r * item):
            return _OP_T, r, 0, a
    a = cp.ascontiguousarray(cp.broadcast_to(a, batch + (r, c)))
    return _OP_N, c, r * c, a


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"cuBLAS {what} failed with status {status} (inside a CUDA graph "
                           f"capture); compile without cuda_graphs")
