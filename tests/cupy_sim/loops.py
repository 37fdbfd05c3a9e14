"""CuPy 14's own arithmetic where its ufunc loops compute otherwise than NumPy's.

``cupy.floor_divide`` and ``cupy.remainder`` (``cupy.mod``, the ``//`` and ``%`` operators,
``array_api_compat.cupy``'s, which re-exports them) on floats are
``floor(in0 / in1)`` and ``in0 - floor(in0 / in1) * in1`` (cupy/_core/_routines_math.pyx,
``_floor_divide`` and ``_remainder``; the device function in cupy/_core/include/cupy/
carray.cuh), where NumPy, PyTorch and JAX compute from ``fmod``. So ``remainder(-4.0, inf)``
is NaN (``inf * 0``) where NumPy gives ``inf``, ``remainder(1e17, 3.0)`` is not NumPy's
``1.0`` and ``floor_divide(1.0, 0.1)`` is ``10.0`` (NumPy ``9.0``). The float16 loops
compute in float32 (CuPy's ``float16`` converts to ``float``), rounded once at the end. A
GPU's compiler may contract the multiply-subtract into one FMA: the emulator rounds twice in
float64, so a large quotient's remainder may differ from the GPU's in its last bits (both
are far from NumPy's). Integer loops are NumPy's (CuPy gives 0 for a zero divisor, as NumPy
does). Each is a ufunc to ``cupy.fuse`` (:mod:`.fusion`).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _floats(a: Any, b: Any, out: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """``a`` and ``b`` in the type the float loop computes in."""
    t = np.float32 if out == np.float16 else out
    return np.asarray(a).astype(t), np.asarray(b).astype(t)


def floor_divide(a: Any, b: Any) -> Any:
    """``cupy.floor_divide``: ``floor(a / b)`` on floats."""
    with np.errstate(all="ignore"):
        out = np.floor_divide(a, b)  # the result dtype; integers as CuPy's
        if out.dtype.kind != "f":
            return out
        x, y = _floats(a, b, out.dtype)
        return np.floor(x / y).astype(out.dtype)


def remainder(a: Any, b: Any) -> Any:
    """``cupy.remainder``: ``a - floor(a / b) * b`` on floats."""
    with np.errstate(all="ignore"):
        out = np.remainder(a, b)
        if out.dtype.kind != "f":
            return out
        x, y = _floats(a, b, out.dtype)
        return (x - np.floor(x / y) * y).astype(out.dtype)


floor_divide.ufunc = True  # type: ignore[attr-defined]
remainder.ufunc = True  # type: ignore[attr-defined]
