"""A differential fuzzer of ``torch.fft`` under ``xad.as_torch`` against PyTorch (the oracle).

Each case draws a transform (``fft``/``ifft``/``rfft``/``irfft``/``hfft``/``ihfft``, their
``2`` and ``n`` forms, the shifts), an input of one to three dims with odd and even sizes
(real, or complex made of two real leaves), ``n``/``s`` that pad or crop (``-1`` at times),
``dim`` (positive, negative, a subset, reordered) and ``norm``; the value, its dtype and, in
float64, the gradients of a random real linear function of the result with respect to both
leaves must agree: the Hermitian bins of the real transforms' gradients are where such
rules go wrong. A float32 case checks result dtypes (complex64) and values. ``fftfreq``/``rfftfreq``
against PyTorch's values and dtypes.

``XAD_FUZZ_N`` sets the cases (default 40 on NumPy, 8 on the other backends; the long run:
5000). A failure names its seed: replay it with ``XAD_FUZZ_SEED=<seed> XAD_FUZZ_N=1``.
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

import xad
from xad import as_torch

torch = pytest.importorskip("torch")
T = as_torch.namespace()["torch"]

N = int(os.environ.get("XAD_FUZZ_N", "0")) or None
SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))

ONE = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
REAL_IN = {"rfft", "ihfft"}  # PyTorch refuses a complex input to these (all forms)


def _dims(rng, ndim, k):
    dims = rng.sample(range(ndim), k)
    return [d - ndim if rng.random() < 0.5 else d for d in dims]


def _sizes(rng, k):
    return [rng.choice([-1, 1, 2, 3, 4, 5, 7, 8]) if rng.random() < 0.8 else -1
            for _ in range(k)]


def _case(rng: random.Random) -> tuple[str, tuple, dict, bool]:
    """(function name, input shape, keyword arguments, complex input)."""
    base = rng.choice(ONE)
    form = rng.choice(["1", "1", "2", "n", "shift"])
    ndim = rng.randint(2 if form == "2" else 1, 3)
    shape = tuple(rng.randint(1, 6) for _ in range(ndim))
    cplx = base not in REAL_IN and rng.random() < 0.6
    if form == "shift":
        name = rng.choice(["fftshift", "ifftshift"])
        dim = rng.choice([None, rng.randrange(-ndim, ndim), _dims(rng, ndim, rng.randint(1, ndim))])
        return name, shape, {} if dim is None else {"dim": dim}, False
    kw: dict = {}
    if rng.random() < 0.6:
        kw["norm"] = rng.choice([None, "backward", "ortho", "forward"])
    if form == "1":
        if rng.random() < 0.5:
            kw["dim"] = rng.randrange(-ndim, ndim)
        if rng.random() < 0.6:
            kw["n"] = rng.choice([1, 2, 3, 4, 5, 7, 8])
        return base, shape, kw, cplx
    k = 2 if form == "2" else rng.randint(1, ndim)
    if form == "2" and rng.random() < 0.5:
        kw["dim"] = _dims(rng, ndim, 2)
    elif form == "n" and rng.random() < 0.6:
        kw["dim"] = _dims(rng, ndim, k)
    if rng.random() < 0.5:
        kw["s"] = _sizes(rng, k if "dim" in kw or form == "2" else rng.randint(1, ndim))
    return base + form, shape, kw, cplx


def _valid(name, shape, kw):
    """Whether PyTorch accepts the case (inverse real transforms need an output length >= 1)."""
    try:
        _run(torch, name, shape, kw, False, np.zeros(shape), np.zeros(shape), torch.float64)
    except RuntimeError:
        return False
    return True


def _run(lib, name, shape, kw, cplx, a0, b0, dtype, grad=False, view=False):
    """Leaves ``a``, ``b`` and the transform of ``a`` (``a + ib`` when ``cplx``); with
    ``view``, ``a`` is stored transposed and the input is its permuted view."""
    rev = tuple(reversed(range(len(shape))))
    a = lib.tensor(a0.transpose() if view else a0, dtype=dtype, requires_grad=grad)
    b = lib.tensor(b0, dtype=dtype, requires_grad=grad)
    x = a.permute(*rev) if view else a
    if cplx:
        x = torch.complex(x, b) if lib is torch else xad.complex_from_parts(x, b)
    return a, b, getattr(lib.fft, name)(x, **kw)


def _grads(lib, a, b, cplx, loss, second, v):
    """First-order gradients of ``loss``, or with ``second`` the gradient of
    ``sum(grad_a * v[0] + grad_b * v[1])`` (the gradient rules differentiated again)."""
    leaves = [a, b] if cplx else [a]
    gs = lib.autograd.grad(loss, leaves, create_graph=second)
    if second:
        gs = lib.autograd.grad(sum((g * lib.tensor(u)).sum() for g, u in zip(gs, v)), leaves,
                               allow_unused=True)
    return [None if g is None else _numpy(g) for g in gs]


def _parts(lib, y):
    if str(y.dtype).split(".")[-1].startswith("complex"):
        return [lib.real(y), lib.imag(y)]
    return [y]


def _numpy(t):
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().resolve_neg().numpy()
    return t.numpy()


def _check(seed: int) -> None:
    rng = random.Random(seed)
    name, shape, kw, cplx = _case(rng)
    if not _valid(name, shape, kw):
        return
    g = np.random.default_rng(seed)
    a0, b0 = g.standard_normal(shape), g.standard_normal(shape)
    view, second = rng.random() < 0.3, rng.random() < 0.25
    what = (f"seed {seed}: torch.fft.{name}(shape {shape}, complex={cplx}, {kw}), view="
            f"{view}, second order={second}")
    out, ws, v = {}, [], g.standard_normal(shape)
    for lib in (torch, T):
        a, b, y = _run(lib, name, shape, kw, cplx, a0, b0, lib.float64, grad=True, view=view)
        parts = _parts(lib, y)
        ws = [g.standard_normal(tuple(p.shape)) for p in parts] if lib is torch else ws
        loss = sum((p * lib.tensor(w) + p * p).sum() for p, w in zip(parts, ws))
        out[lib] = ([_numpy(p) for p in parts], str(y.dtype).split(".")[-1],
                    _grads(lib, a, b, cplx, loss, second, [v.transpose() if view else v, v]))
    (tv, tdt, tg), (xv, xdt, xg) = out[torch], out[T]
    assert xdt == tdt, f"{what}: dtype {xdt}, PyTorch {tdt}"
    for want, got in zip(tv, xv):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, err_msg=what)
    for want, got, part in zip(tg, xg, ("re", "im")):
        if want is None or got is None:
            assert got is None or not np.any(got), f"{what}: gradient {part}"
            continue
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, err_msg=f"{what}: {part}")
    if name.endswith("shift"):
        return
    _, _, y32 = _run(T, name, shape, kw, cplx, a0, b0, T.float32)
    _, _, t32 = _run(torch, name, shape, kw, cplx, a0, b0, torch.float32)
    assert str(y32.dtype).split(".")[-1] == str(t32.dtype).split(".")[-1], f"{what}: float32"
    for want, got in zip(_parts(torch, t32), _parts(T, y32)):
        want = _numpy(want)
        np.testing.assert_allclose(_numpy(got), want, rtol=1e-5, atol=1e-5 * max(
            1.0, float(np.abs(want).max(initial=0.0))), err_msg=f"{what}: float32")


def test_fft_agrees_with_pytorch(xb):
    n = N or (40 if xb.name == "numpy" else 8)
    for seed in range(SEED, SEED + n):
        _check(seed)


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("n, d", [(1, 1.0), (4, 1.0), (7, 0.5), (10, 0.1), (9, 3.0)])
def test_frequencies_agree_with_pytorch(name, n, d, xb):
    for dtype in (None, "float64"):
        kw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
        want = getattr(torch.fft, name)(n, d, **kw)
        got = getattr(T.fft, name)(n, d, **({} if dtype is None else {"dtype": T.float64}))
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_roll_pairs_each_shift_with_its_axis(xb):
    """``roll`` with axes out of order shifted each axis by another's shift (fftshift with
    ``dim=[1, 0]`` gave wrong numbers); a repeated axis adds its shifts, as NumPy's and
    PyTorch's; shifts and axes of different lengths raise."""
    a = np.arange(30.0).reshape(2, 3, 5)
    x = xad.tensor(a)
    for shift, axis in [([2, 1], [2, 0]), ((1, -2, 4), (1, 2, 0)), ((1, 1), (0, -3))]:
        np.testing.assert_array_equal(xad.roll(x, shift, axis=axis).numpy(),
                                      np.roll(a, shift, axis=axis))
    np.testing.assert_array_equal(xad.fft.fftshift(x, axes=(2, 0)).numpy(),
                                  np.fft.fftshift(a, axes=(2, 0)))
    with pytest.raises(ValueError, match="roll: shifts"):
        xad.roll(x, (1, 2), axis=(0,))


@pytest.mark.parametrize("call", ["fftn(x, dim=(0, -2))", "rfftn(x, dim=(1, 1))",
                                  "fft(x, dim=2)", "fft(x, dim=-3)", "fftn(x, s=(2, 3, 4))",
                                  "ifft2(x, dim=(0, 2))"])
def test_bad_dims_raise_as_pytorch(call):
    """A repeated, out-of-range or surplus dim was wrapped (``dim % ndim``) and computed a
    transform PyTorch refuses; both raise now (``xad.fft``'s ``axes`` too)."""
    with pytest.raises((RuntimeError, IndexError)):
        eval("torch.fft." + call, {"torch": torch, "x": torch.ones(2, 3)})
    with pytest.raises((ValueError, IndexError), match="fft"):
        eval("T.fft." + call, {"T": T, "x": T.ones(2, 3)})
    with pytest.raises(ValueError, match="fft.fftn: axes"):
        xad.fft.fftn(xad.ones((2, 3)), axes=(0, 2))
