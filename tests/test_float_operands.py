"""A Python float beside a floating tensor in ``+ - * /`` (``Op.float_as_0d``): the backend
may pass it as a cached 0-d array of the tensor's dtype (NumPy's does: 2.5x faster per
call). Every result must keep the bits of the backend's own arithmetic with the float (the
standard's rule, the float cast to the dtype; PyTorch keeps float16's scalar in float32),
for every sign of zero, NaN,
infinities, values that overflow or underflow the dtype, both operand orders, and results
the caller then changes in place."""

from __future__ import annotations

import math
import operator

import numpy as np

import xad

VALUES = [0.9, -2.5, 0.0, -0.0, math.nan, math.inf, -math.inf, 1e300, -1e300, 1e-50,
          -1e-320, 3.0, 65504.5, 1 / 3]
OPS = [operator.add, operator.sub, operator.mul, operator.truediv]
ROW = [0.0, -0.0, 1.5, -3.25, math.inf, -math.inf, math.nan, 1e-30, 60000.0]


def _bits(t: xad.Tensor) -> np.ndarray:
    a = t.numpy()
    return a.view(f"u{a.dtype.itemsize}")


def _reference(op, x: xad.Tensor, s: float, scalar_first: bool) -> xad.Tensor:
    """``op`` on the backend's own array and the Python float, as xad called it before."""
    a, b = x._array, x._backend
    with b.on_device():  # CuPy runs a kernel on the current device
        return xad.tensor(op(s, a) if scalar_first else op(a, s), backend=b)


def _floating(b: xad.Backend) -> list:
    """The real floating dtypes ``b`` has (array_api_strict has no float16)."""
    return [d for d in (xad.float16, xad.float32, xad.float64) if b._dtypes.get(d) is not None]


def test_a_float_operand_gives_the_bits_of_the_float_cast_to_the_dtype(xb):
    for dtype in _floating(xb):
        _same_bits(xad.tensor(ROW, dtype=xad.float64).astype(dtype))


def _beyond(dtype: xad.DType, s: float, op=None, first: bool = False) -> bool:
    """Computed in float32 instead, as PyTorch's: a finite nonzero float outside float16's
    normal range (tests/test_semantics_hunt.py), or one float16 does not hold in ``x * s``,
    ``s * x``, ``x / s`` (tests/test_half_scalars.py)."""
    if dtype is not xad.float16 or not 0 < abs(s) < math.inf:
        return False
    if not 2**-14 <= abs(s) <= 65504:
        return True
    opmath = op is operator.mul or (op is operator.truediv and not first)
    return opmath and float(np.float16(s)) != s


def _same_bits(x: xad.Tensor) -> None:
    with np.errstate(all="ignore"):
        for _ in range(2):  # the second round meets the backend's cached operands
            for s in [v for v in VALUES if not _beyond(x.dtype, v)]:
                for op in OPS:
                    for first in (False, True):
                        if _beyond(x.dtype, s, op, first):
                            continue
                        got = op(s, x) if first else op(x, s)
                        want = _reference(op, x, s, first)
                        assert got.dtype == x.dtype
                        np.testing.assert_array_equal(
                            _bits(got), _bits(want), err_msg=f"{op.__name__} {s!r} first={first}")


def test_results_changed_in_place_leave_later_operands_alone(xb):
    x = xad.tensor([1.0, 2.0])
    y = x * 0.25
    y.add_(1.0)
    z = xad.tensor(4.0) * 0.25  # a 0-d result: never the cached operand itself
    z.mul_(10.0)
    np.testing.assert_array_equal((x * 0.25).numpy(), [0.25, 0.5])
    assert float((xad.tensor(4.0) * 0.25).item()) == 1.0


def test_gradients_through_float_operands_match_the_tensor_form(xb):
    x = xad.tensor([0.5, -1.5, 2.0], dtype=xad.float64, requires_grad=True)
    ((0.3 - x * 1.7) / 0.9 + 2.5 * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), -1.7 / 0.9 + 2.5, rtol=1e-15)


def test_numpy_keeps_a_bounded_set_of_cached_operands():
    b = xad.resolve_backend("numpy")
    x = xad.tensor([1.0, 2.0], backend=b)
    for i in range(3000):  # a float that changes each step (a decaying scale)
        y = x * (1.0 + i * 1e-6)
        assert y.numpy()[1] == np.float32(2.0) * np.float32(1.0 + i * 1e-6)
    assert len(b._floats) <= 1024
