"""``torch.special``'s other names for functions ``torch`` has (``softmax``, ``log_softmax``,
``round``, ``sinc``) under ``as_torch``: values and dtypes against torch 2.13, and the
signatures (``dim`` positional, ``dtype`` and ``decimals`` keywords)."""

from __future__ import annotations

import numpy as np
import pytest

import xad

torch = pytest.importorskip("torch")


def _special():
    from xad import as_torch

    return as_torch.namespace()["torch.special"]


def test_softmax_and_log_softmax_match_torch(xb):
    special = _special()
    a = np.array([[0.5, -2.0, 3.0], [1e3, 0.0, -1e3]])
    # CUDA's exp and log are within an ulp or two, not correctly rounded (an H200: log_softmax
    # -0.08509724636430994 for torch's ...1015, a sum's rounding carried through the log)
    tol = dict(rtol=1e-15, atol=1e-300) if xb.name != "cupy" else dict(rtol=1e-14, atol=1e-15)
    for name in ("softmax", "log_softmax"):
        for dim in (0, 1, -1):
            got = getattr(special, name)(xad.tensor(a, dtype=xad.float64), dim)
            want = getattr(torch.special, name)(torch.tensor(a), dim)
            np.testing.assert_allclose(got.numpy(), want.numpy(), **tol)
        got = getattr(special, name)(xad.tensor(a, dtype=xad.float32), 1, dtype=xad.float64)
        want = getattr(torch.special, name)(torch.tensor(a, dtype=torch.float32), 1,
                                            dtype=torch.float64)
        assert got.dtype is xad.float64
        np.testing.assert_allclose(got.numpy(), want.numpy(), **tol)


def test_round_and_sinc_match_torch(xb):
    special = _special()
    a = np.array([2.5, -0.5, 1.25, 0.0, 3.14159, np.inf, np.nan])
    got = special.round(xad.tensor(a, dtype=xad.float64))
    np.testing.assert_array_equal(got.numpy(), torch.special.round(torch.tensor(a)).numpy())
    got = special.round(xad.tensor(a, dtype=xad.float64), decimals=2)
    np.testing.assert_allclose(got.numpy(), torch.special.round(torch.tensor(a), decimals=2)
                               .numpy(), rtol=1e-15)
    b = np.array([0.0, 0.5, -1.0, 1e-9, 2.5, 100.25])
    for dt in ("float64", "float32"):
        got = special.sinc(xad.tensor(b, dtype=getattr(xad, dt)))
        want = torch.special.sinc(torch.tensor(b, dtype=getattr(torch, dt)))
        assert got.numpy().dtype == want.numpy().dtype
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=3e-6 if dt == "float32"
                                   else 1e-14, atol=1e-16)


def test_every_torch_special_function_is_under_as_torch():
    # torch 2.13's torch.special, every function: xad's module lacks none (Tensor is a type)
    special = _special()
    names = [n for n in dir(torch.special) if not n.startswith("_") and n != "Tensor"
             and callable(getattr(torch.special, n))]
    assert [n for n in names if n not in vars(special)] == []
