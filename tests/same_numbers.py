"""What "the same numbers" means for a fused kernel held against the operations it replaces:
the same bits on every backend but a real GPU. There NVRTC contracts ``a * b + c`` into one
FMA (its default, which ``cupy.fuse`` cannot turn off) and a fused reduction sums in the
reduction kernel's order, so the two differ by rounding alone: a few ulp per step (seen on
an H100, 2026-11-26: 1-2 ulp of the largest value per kernel; an optimiser's trajectory
carries it through its steps)."""

from __future__ import annotations

from typing import Any

import numpy as np


def assert_same_numbers(xb: Any, got: Any, want: Any, ulps: int = 64, msg: str = "") -> None:
    """Bit for bit, except on real CuPy: within ``ulps`` units in the last place of the
    largest magnitude of ``want`` (cancellation leaves small values no relative accuracy)."""
    got, want = np.asarray(got), np.asarray(want)
    if xb.name != "cupy" or not np.issubdtype(want.dtype, np.inexact):
        np.testing.assert_array_equal(got, want, err_msg=msg)
        return
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    scale = float(np.max(np.abs(want), initial=0.0))
    eps = float(np.finfo(want.dtype).eps)
    np.testing.assert_allclose(got, want, rtol=ulps * eps, atol=ulps * eps * scale,
                               err_msg=msg)
