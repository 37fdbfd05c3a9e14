"""Integer results that overflow wrap in the result's dtype on every backend, as NumPy's and
PyTorch's: integer powers with large exponents, and floats cast to 8- and 16-bit integers
(through int64, as PyTorch's casts; JAX's and CUDA's own conversions saturate). Both found
by the semantics fuzzer on JAX (seeds 14858 and 119984, ``XAD_FUZZ_SEED=1127``)."""

from __future__ import annotations

import numpy as np
import pytest

import xad
from xad import as_torch

torch = as_torch.namespace()["torch"]


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_integer_power_uses_every_bit_of_the_exponent(dtype, xb):
    # JAX's power read an exponent's low six bits: 2 ** 70 was 64, 3 ** 127 was 3 ** 63
    base = np.array([3, 3, 2, 5, 7, 1, 0], dtype=dtype)
    exponent = np.array([127, 100, 70, 3, 64, 99, 5], dtype=dtype)
    want = base ** exponent
    got = xad.tensor(base) ** xad.tensor(exponent)
    assert got.dtype == getattr(xad, dtype)
    assert got.tolist() == want.tolist()


def test_unsigned_base_to_a_signed_power(xb):
    base, exponent = np.array([2, 0, 3, 5, 3], np.uint8), np.array([-1, -3, 127, 3, 6], np.int8)
    got = xad.tensor(base) ** xad.tensor(exponent)  # int16 (PyTorch's answers at -1, -3)
    assert got.dtype == xad.int16
    assert got.tolist() == [0, 0, 10411, 125, 729]


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16"])
def test_float_to_a_small_integer_wraps_as_pytorch(dtype, xb):
    values = np.array([-2.78, 2.5, -2.0, 300.0, -129.5, 70000.25])
    want = values.astype(np.int64).astype(dtype)  # PyTorch's cast: through int64
    assert xad.astype(xad.tensor(values), getattr(xad, dtype)).tolist() == want.tolist()
    x = torch.zeros(6, dtype=getattr(torch, dtype))
    x.copy_(torch.tensor(values))  # the fuzzer's case: copy_ casting a float source
    assert x.tolist() == want.tolist()
