"""Autocast's float32 list for elementwise functions, PyTorch's CUDA one (the list xad's
autocast follows on every device): ``exp``, ``expm1``, ``log``, ``log1p``, ``log2``,
``log10``, ``tan``, ``asin``, ``acos``, ``sinh``, ``cosh``, ``softplus``, ``pow`` (``x ** 2``,
``2 ** x``, ``x ** y``) and ``2 / x`` (``reciprocal``) give float32 for float16/bfloat16
inputs inside ``xad.amp.autocast``, the same bits as on the input cast to float32, and the
input's gradient in its own dtype. Before, they stayed in float16: ``exp`` of 12 was inf
where PyTorch's CUDA autocast gives 162754.8."""

from __future__ import annotations

import numpy as np
import pytest

import xad
import xad.nn.functional as F

X = np.array([0.25, 0.5, 0.75, 0.125], dtype=np.float32)
FUNCS = {
    "exp": xad.exp, "expm1": xad.expm1, "log": xad.log, "log1p": xad.log1p,
    "log2": xad.log2, "log10": xad.log10, "tan": xad.tan, "asin": xad.asin,
    "acos": xad.acos, "sinh": xad.sinh, "cosh": xad.cosh, "softplus": F.softplus,
    "square by **": lambda x: x ** 2, "2 ** x": lambda x: 2.0 ** x,
    "x ** x": lambda x: x ** x, "2 / x": lambda x: 2.0 / x, "reciprocal": xad.reciprocal,
    "exp method": lambda x: x.exp(), "erfinv": xad.erfinv,
}


def _low(xb) -> list:
    return [d for d in (xad.float16, xad.bfloat16) if xb._dtypes.get(d) is not None]


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_listed_functions_run_in_float32_under_autocast(xb, name):
    fn = FUNCS[name]
    for low in _low(xb):
        h = xad.tensor(X, backend=xb).astype(low).requires_grad_()
        with xad.amp.autocast(low):
            y = fn(h)
        assert y.dtype is xad.float32, f"{name} of {low.name}: {y.dtype}"
        want = fn(h.detach().astype(xad.float32))
        np.testing.assert_array_equal(y.detach().numpy(), want.numpy(), err_msg=name)
        y.sum().backward()
        assert h.grad.dtype is low, f"{name}: gradient {h.grad.dtype}"
        assert fn(h.detach()).dtype is low, f"{name} outside autocast"  # unchanged there


def test_exp_no_longer_overflows_and_other_operations_stay_low(xb):
    for low in _low(xb):
        h = xad.tensor([12.0, 1.0], backend=xb).astype(low)
        with xad.amp.autocast(low):
            big = xad.exp(h)
            kept = (h / h, h * 2.0, h + 1.0, xad.tanh(h), h - h)
        assert np.isfinite(big.numpy()).all(), big.numpy()
        np.testing.assert_array_equal(big.numpy(), xad.exp(h.astype(xad.float32)).numpy())
        assert abs(float(big.numpy()[0]) / np.exp(12.0) - 1) < 1e-5, big.numpy()
        assert [t.dtype for t in kept] == [low] * len(kept), (low, [t.dtype for t in kept])


def test_float64_and_float32_inputs_are_not_cast(xb):
    for d in (xad.float32, xad.float64):
        x = xad.tensor(X, backend=xb).astype(d)
        with xad.amp.autocast(_low(xb)[0] if _low(xb) else xad.float16, enabled=bool(_low(xb))):
            assert xad.exp(x).dtype is d and (2.0 / x).dtype is d
