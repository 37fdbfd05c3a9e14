"""float16/bfloat16 tensors with in-range Python numbers against PyTorch (torch 2.13, CPU),
bit for bit: PyTorch's ``*``, ``/`` and ``//`` read the number at float32 ("opmath") and
round once, where the arrays round the number to the half dtype first (an ulp off in a
quarter of the elements of ``x * 0.1``); its ``+ - ** %``, comparisons and ``clamp`` round it
first, as xad. ``s / x`` (PyTorch's ``x.reciprocal() * s``) and ``s // x`` (PyTorch rounds
each step of its floor division to the half dtype) are left out (docs/PORTING.md).
A seeded fuzz; ``XAD_FUZZ_N=2000`` for the long run."""

from __future__ import annotations

import os

import numpy as np
import pytest

import xad

torch = pytest.importorskip("torch")

N = int(os.environ.get("XAD_FUZZ_N", "8"))
SIZE = 256


def _inplace(name):
    def f(x, s):
        y = x.clone()
        getattr(y, name)(s)
        return y
    return f


OPS = {"x + s": lambda x, s: x + s, "s + x": lambda x, s: s + x, "x - s": lambda x, s: x - s,
       "s - x": lambda x, s: s - x, "x * s": lambda x, s: x * s, "s * x": lambda x, s: s * x,
       "x / s": lambda x, s: x / s, "x // s": lambda x, s: x // s,
       "abs(x) ** s": lambda x, s: abs(x) ** s,
       "x < s": lambda x, s: x < s, "x == s": lambda x, s: x == s,
       "x >= s": lambda x, s: x >= s, "clamp": lambda x, s: x.clamp(min=s),
       "x *= s": _inplace("__imul__"), "x /= s": _inplace("__itruediv__"),
       "x += s": _inplace("__iadd__"), "mul_": _inplace("mul_")}
NICE = (0.1, 1 / 3, 0.7, 2.5, 1e-3, 3.0, 0.5, 2049, 7)


def _scalar(rng: np.random.Generator, k: int) -> float | int:
    if k % 3 == 0:
        return NICE[k // 3 % len(NICE)]
    return float(rng.standard_normal() * 10 ** rng.uniform(-2, 2))


def _as_float32(t) -> np.ndarray:
    if isinstance(t, xad.Tensor):
        return (t if t.dtype is xad.bool else t.astype(xad.float32)).numpy()
    return (t if t.dtype is torch.bool else t.float()).numpy()


def _dtypes(xb):
    out = []
    for name in ("float16", "bfloat16"):
        try:
            xad.zeros(1, dtype=getattr(xad, name))
        except TypeError:
            continue
        out.append((getattr(xad, name), getattr(torch, name)))
    return out


def _mismatches(xb, xd, td, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    bad = []
    for k in range(N):
        a = (rng.standard_normal(SIZE) * 10 ** rng.uniform(-2, 2)).astype(np.float32)
        t = torch.tensor(a).to(td)
        x = xad.tensor(t.float().numpy()).astype(xd)
        s = _scalar(rng, k)
        for name, f in OPS.items():
            if xb.name == "jax" and "**" in name:  # JAX's integer_pow multiplies in half
                continue
            got, want = _as_float32(f(x, s)), _as_float32(f(t, s))
            if xb.name == "jax":  # XLA's CPU division and pow are not correctly rounded
                ok = np.isclose(got, want, rtol=2.0**-7, atol=0) | (got == want)
            else:
                ok = (got == want) | (np.isnan(got) & np.isnan(want))
            if not ok.all():
                i = int(np.argmin(ok))
                bad.append(f"{xd.name} {name} s={s!r} x={a[i]!r}: xad {got[i]!r} torch "
                           f"{want[i]!r} ({(~ok).sum()} of {ok.size})")
    return bad


def test_half_precision_with_python_numbers_matches_torch(xb):
    dts = _dtypes(xb)
    if not dts:
        pytest.skip(f"{xb.name} has no half-precision dtype")
    bad = [m for xd, td in dts for m in _mismatches(xb, xd, td, 0)]
    assert not bad, "\n".join(bad[:8]) + f"\n({len(bad)} op/scalar pairs differ)"


def test_exact_numbers_stay_in_half_precision(xb):
    """A number the dtype holds exactly (0.5, 3, 2048) needs no float32 round trip: the
    result is the same either way, and the half path keeps its one kernel."""
    from xad.ops._apply import _beyond_half
    assert not _beyond_half(xad.float16, 0.5, "multiply")
    assert not _beyond_half(xad.float16, 2048, "divide")
    assert _beyond_half(xad.float16, 2049, "multiply")
    assert _beyond_half(xad.float16, 0.1, "divide")
    assert not _beyond_half(xad.float16, 0.1, "add")  # PyTorch rounds the number here
    assert not _beyond_half(xad.bfloat16, 0.375, "multiply")
    assert _beyond_half(xad.bfloat16, 0.1, "floor_divide")
    assert not _beyond_half(xad.float32, 0.1, "multiply")
