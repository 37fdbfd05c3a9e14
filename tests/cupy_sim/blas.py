"""Emulated cuBLAS for backends/cupy_blas.py: CuPy's binding module
(``cupy_backends.cuda.libs.cublas``: ``create``, ``setStream``, ``destroy``) and the raw
library calls xad makes through ``ctypes`` (``cublasSetWorkspace_v2``,
``cublas{S,D}gemmStridedBatched``, ``cublasGemmStridedBatchedEx`` for float16).

Refused as on a GPU: ``setStream`` while the stream it names captures (CuPy's own check,
``NotImplementedError``); a gemm while some stream captures on a handle whose stream is not
that one (its kernel would run outside the graph, unordered: refused here, silent on a
GPU), or on a handle with no workspace set (cuBLAS would allocate during capture). A gemm on
a capturing stream is recorded into the capture (it writes ``C`` only at a launch); outside
one it runs and counts one kernel. Memory is read through the emulated device addresses
(``ndarray.data.ptr``, :func:`core.memory_at`) with cuBLAS's column-major layout, ``lda``
and batch strides, so a wrong layout gives wrong numbers. A product is computed as the
row-major one it stands for, ``(op(B)^T @ op(A)^T)^T``, NumPy's ``matmul`` of the same
operands as eager mode's (the same bits on the emulator; cuBLAS's order of summation is
its own on a GPU).
"""

from __future__ import annotations

import itertools
import types
from typing import Any

import numpy as np

from . import core, streams

_handles = itertools.count(0x5100)
HANDLES: dict[int, dict[str, Any]] = {}


def create() -> int:
    h = next(_handles)
    HANDLES[h] = {"stream": 0, "workspace": None}
    return h


def setStream(handle: int, stream: int) -> None:  # noqa: N802 - CuPy's name
    s = streams.STREAMS.get(stream)
    if s is not None and s.is_capturing():
        raise NotImplementedError("calling cuBLAS API during stream capture is currently "
                                  "unsupported")
    HANDLES[handle]["stream"] = stream


def destroy(handle: int) -> None:
    HANDLES.pop(handle, None)


cublas = types.SimpleNamespace(create=create, setStream=setStream, destroy=destroy)


def _value(x: Any) -> Any:
    """A ``ctypes`` argument's value (``byref(c_float(1.0))`` -> 1.0)."""
    obj = getattr(x, "_obj", x)
    return getattr(obj, "value", obj)


def _set_workspace(handle: Any, ptr: Any, size: Any) -> int:
    HANDLES[_value(handle)]["workspace"] = (_value(ptr), _value(size))
    return 0


def _operand(ptr: int, dtype: Any, trans: int, rows: int, cols: int, ld: int, stride: int,
             batch: int) -> np.ndarray:
    """``op(M)`` (rows x cols) of each batch entry, a view of column-major memory."""
    flat, start = core.memory_at(ptr, dtype)
    item = flat.itemsize
    strides = (stride * item, item, ld * item) if trans == 0 else \
        (stride * item, ld * item, item)
    return np.lib.stride_tricks.as_strided(flat[start:], (batch, rows, cols), strides)


def _gemm(dtype: Any) -> Any:
    def gemm(handle: Any, transa: int, transb: int, m: int, n: int, k: int, alpha: Any,
             a: Any, lda: int, stride_a: Any, b: Any, ldb: int, stride_b: Any, beta: Any,
             c: Any, ldc: int, stride_c: Any, batch: int) -> int:
        h = HANDLES[_value(handle)]
        cap = streams.capturing()
        own = streams.STREAMS.get(h["stream"])
        if cap is not None and (own is None or own._capture is not cap):
            raise RuntimeError("a cuBLAS call on a handle whose stream is not the capturing "
                               "stream, during capture: its kernel would run outside the "
                               "graph")
        if cap is not None and h["workspace"] is None:
            raise RuntimeError("cuBLAS would allocate its workspace during stream capture: "
                               "set one with cublasSetWorkspace before capturing")
        op_a = _operand(_value(a), dtype, transa, m, k, lda, _value(stride_a), batch)
        op_b = _operand(_value(b), dtype, transb, k, n, ldb, _value(stride_b), batch)
        flat, start = core.memory_at(_value(c), dtype)
        item = flat.itemsize
        out = np.lib.stride_tricks.as_strided(
            flat[start:], (batch, m, n), (_value(stride_c) * item, item, ldc * item))
        al, be = _value(alpha), _value(beta)

        def kernel() -> None:
            r = np.matmul(op_b.transpose(0, 2, 1), op_a.transpose(0, 2, 1)).transpose(0, 2, 1)
            if al != 1:
                r = r * dtype.type(al)
            out[...] = r if be == 0 else r + dtype.type(be) * out

        if cap is not None:
            cap.kernels.append(kernel)
        else:
            kernel()
            streams.COUNTS.kernels += 1
        return 0

    return gemm


def _gemm_ex(handle: Any, transa: int, transb: int, m: int, n: int, k: int, alpha: Any,
             a: Any, atype: int, lda: int, stride_a: Any, b: Any, btype: int, ldb: int,
             stride_b: Any, beta: Any, c: Any, ctype: int, ldc: int, stride_c: Any,
             batch: int, compute: int, algo: int) -> int:
    """``cublasGemmStridedBatchedEx`` for float16 operands and result (``CUDA_R_16F``, 2)
    with float32 accumulation (``CUBLAS_COMPUTE_32F``, 68), as xad calls it; other types
    are refused (xad makes no other call)."""
    if (atype, btype, ctype, compute) != (2, 2, 2, 68):
        raise NotImplementedError(f"emulated cublasGemmStridedBatchedEx: types {atype}, "
                                  f"{btype}, {ctype}, compute {compute}")
    return _HALF(handle, transa, transb, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b,
                 beta, c, ldc, stride_c, batch)


_HALF = _gemm(np.dtype(np.float16))
lib = types.SimpleNamespace(cublasSetWorkspace_v2=_set_workspace,
                            cublasSgemmStridedBatched=_gemm(np.dtype(np.float32)),
                            cublasDgemmStridedBatched=_gemm(np.dtype(np.float64)),
                            cublasGemmStridedBatchedEx=_gemm_ex)
