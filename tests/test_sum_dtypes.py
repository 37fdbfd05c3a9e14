"""The dtype of ``sum``, ``prod`` and ``cumulative_sum`` of bool and integer tensors, the same
on every backend: the functions ``xad.f`` follow the Array API standard (narrower signed
integers and bool to int64, unsigned integers to uint64; array_api_strict is the
reference), the tensor methods PyTorch (int64). PyTorch's namespace gave int64 for
``xad.sum(uint8)`` and array_api_strict refused ``xad.sum(bool)``."""

from __future__ import annotations

import array_api_strict as strict
import numpy as np
import pytest

import xad

torch = pytest.importorskip("torch")

DTYPES = ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "uint64"]
VALUES = [100, 20, 3]


def _tensor(name: str) -> xad.Tensor:
    if name == "bool":
        return xad.tensor([True, True, False])
    return xad.tensor(VALUES, dtype=getattr(xad, name))


def _standard(f: str, name: str) -> str:
    """What array_api_strict gives (bool: int64, as NumPy and PyTorch; strict refuses)."""
    if name == "bool":
        return "int64"
    a = strict.asarray(VALUES, dtype=getattr(strict, name))
    return str(getattr(strict, f)(a).dtype).removeprefix("array_api_strict.")


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("f", ["sum", "prod", "cumulative_sum"])
def test_functions_give_the_standards_dtype_on_every_backend(xb, f, name):
    x = _tensor(name)
    out = getattr(xad, f)(x)
    assert out.dtype.name == _standard(f, name), (f, name, out.dtype)
    want = getattr(np, {"cumulative_sum": "cumsum"}.get(f, f))(np.asarray(x.tolist(), np.int64))
    np.testing.assert_array_equal(np.asarray(out.tolist()), want)


@pytest.mark.parametrize("name", DTYPES)
@pytest.mark.parametrize("f", ["sum", "prod", "cumsum"])
def test_methods_give_pytorchs_int64(xb, f, name):
    x = _tensor(name)
    out = getattr(x, f)(0) if f == "cumsum" else getattr(x, f)()
    t = torch.tensor(x.tolist(), dtype=getattr(torch, name))
    if name != "uint64":  # (PyTorch has no uint64 sum or product on the CPU)
        assert str(getattr(t, f)(*([0] if f == "cumsum" else [])).dtype) == "torch.int64"
    assert out.dtype is xad.int64


def test_unsigned_sums_wrap_modulo_2_to_the_64(xb):
    big = xad.tensor([2**63 + 5, 2**63 + 7], dtype=xad.uint64)
    assert xad.sum(big).tolist() == 12 and xad.sum(big).dtype is xad.uint64
