"""The CuPy emulator lays out results as CuPy 14.2 does (tests/cupy_sim/core.py, "output
layouts"): elementwise kernels, reductions, gathers and joins write a row-major result
whatever their input's layout, where NumPy keeps the input's; ``astype``, ``copy``,
``array``, the ``*_like`` functions, ``roll`` and ``nan_to_num`` keep it, as NumPy's; views
keep their strides. The strides below were read on an H200 with CuPy 14.2 (2026-11-28) for
``a``, a permuted ``(2, 3, 4)`` float64 array; the table runs on real CuPy too where a GPU is.
"""

from __future__ import annotations

import pytest

ROW = (48, 24, 8)  # a (4, 2, 3) float64 result, row-major
KEPT = (8, 96, 32)  # the same in a's layout (NumPy's order='K')


def _fused(cp, a):
    return cp.fuse(kernel_name="twice_tanh")(lambda x: cp.tanh(x) * 2)(a)


CASES = {  # name: (the call of (cp, cupyx, a, m, i), its result's strides on CuPy)
    "exp": (lambda cp, cx, a, m, i: cp.exp(a), ROW),
    "a + a": (lambda cp, cx, a, m, i: a + a, ROW),
    "1.0 + a": (lambda cp, cx, a, m, i: 1.0 + a, ROW),
    "-a": (lambda cp, cx, a, m, i: -a, ROW),
    "maximum": (lambda cp, cx, a, m, i: cp.maximum(a, a), ROW),
    "where": (lambda cp, cx, a, m, i: cp.where(a > 0, a, 0.0), ROW),
    "clip": (lambda cp, cx, a, m, i: cp.clip(a, 0, 1), ROW),
    "a.clip": (lambda cp, cx, a, m, i: a.clip(0, 1), ROW),
    "round": (lambda cp, cx, a, m, i: cp.round(a), ROW),
    "isclose": (lambda cp, cx, a, m, i: cp.isclose(a, a), (6, 3, 1)),
    "ceil": (lambda cp, cx, a, m, i: cp.ceil(a), ROW),
    "sign": (lambda cp, cx, a, m, i: cp.sign(a), ROW),
    "erf": (lambda cp, cx, a, m, i: cx.scipy.special.erf(a), ROW),
    "fuse": (lambda cp, cx, a, m, i: _fused(cp, a), ROW),
    "tril": (lambda cp, cx, a, m, i: cp.tril(m), (24, 8)),
    "diff": (lambda cp, cx, a, m, i: cp.diff(a, axis=1), (24, 24, 8)),
    "sum": (lambda cp, cx, a, m, i: a.sum(axis=1), (24, 8)),
    "sum keepdims": (lambda cp, cx, a, m, i: a.sum(axis=1, keepdims=True), (24, 24, 8)),
    "max": (lambda cp, cx, a, m, i: cp.max(a, axis=1), (24, 8)),
    "var": (lambda cp, cx, a, m, i: a.var(axis=1), (24, 8)),
    "argmax": (lambda cp, cx, a, m, i: a.argmax(axis=1), (24, 8)),
    "any": (lambda cp, cx, a, m, i: a.any(axis=1), (3, 1)),
    "a[:, i]": (lambda cp, cx, a, m, i: a[:, i], ROW),
    "a[i, :, 1:]": (lambda cp, cx, a, m, i: a[i, :, 1:], (32, 16, 8)),
    "take": (lambda cp, cx, a, m, i: cp.take(a, i, axis=1), ROW),
    "concatenate": (lambda cp, cx, a, m, i: cp.concatenate([a, a], axis=1), (96, 24, 8)),
    "stack": (lambda cp, cx, a, m, i: cp.stack([a, a]), (192, 48, 24, 8)),
    "matmul": (lambda cp, cx, a, m, i: a @ a.transpose(0, 2, 1), (32, 16, 8)),
    "a.copy()": (lambda cp, cx, a, m, i: a.copy(), ROW),
    "astype": (lambda cp, cx, a, m, i: a.astype(cp.float32), (4, 48, 16)),
    "copy": (lambda cp, cx, a, m, i: cp.copy(a), KEPT),
    "empty_like": (lambda cp, cx, a, m, i: cp.empty_like(a), KEPT),
    "array": (lambda cp, cx, a, m, i: cp.array(a), KEPT),
    "roll": (lambda cp, cx, a, m, i: cp.roll(a, 1, axis=1), KEPT),
    "nan_to_num": (lambda cp, cx, a, m, i: cp.nan_to_num(a), KEPT),
    "a.T": (lambda cp, cx, a, m, i: a.T, (32, 96, 8)),
}


@pytest.fixture(params=["cupy-sim", "cupy"])
def modules(request):
    """``cupy`` and ``cupyx``: the emulator's, or the real ones where a GPU is."""
    if request.param == "cupy-sim":
        import cupy_sim
        return cupy_sim.cupy, cupy_sim.cupyx
    cupy = pytest.importorskip("cupy", reason="real CuPy is not installed")
    import cupyx.scipy.special  # noqa: F401
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # noqa: BLE001 - CuPy's CUDARuntimeError without a driver
        pytest.skip(f"no GPU: {e}")
    return cupy, cupyx


@pytest.mark.parametrize("name", CASES)
def test_a_result_is_laid_out_as_cupys(modules, name):
    cp, cx = modules
    a = cp.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1)
    m = cp.arange(12.0).reshape(3, 4).T
    call, strides = CASES[name]
    assert call(cp, cx, a, m, cp.array([0, 1])).strides == strides
