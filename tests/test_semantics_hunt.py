"""Silent wrong numbers found by a differential hunt against torch 2.13 (operators, dtype
promotion, in-place operators, half-precision reductions): each test failed before its fix.

``test_fuzz_inplace_operators`` draws ``x op= y`` over dtypes, Python scalars and graph
states and checks it against PyTorch's rule (the result in ``x``'s dtype, an error where
the result's kind cannot be cast back); ``XAD_FUZZ_N=5000`` for the long run.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import xad


def _has(xb, *names: str) -> bool:
    try:
        for n in names:
            xb.dtype(getattr(xad, n))
    except Exception:
        return False
    return True


@pytest.mark.parametrize("other", ["int8", "uint8", "int32", "int64", "bool"])
def test_integer_with_float16_tensor_divides_in_float16(xb, other):
    """``int / float16`` is float16 (PyTorch's and the promotion table's), not float32: the
    integer used to become the default float before meeting the float16."""
    if not _has(xb, "float16"):
        pytest.skip(f"{xb.name} has no float16")
    i = xad.tensor([1, 0, 1] if other == "bool" else [1, 2, 3], dtype=getattr(xad, other))
    h = xad.tensor([3.0, 7.0, 0.1], dtype=xad.float16)
    ti = torch.tensor(i.numpy())
    th = torch.tensor(h.numpy())
    for got, want in ((i / h, ti / th), (h / i, th / ti), (xad.atan2(i, h), torch.atan2(ti, th))):
        assert got.dtype is xad.float16
        np.testing.assert_array_equal(got.numpy(), want.numpy())
