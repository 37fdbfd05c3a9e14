"""A differential fuzzer of complex arithmetic under ``xad.as_torch`` against PyTorch (the
oracle): random chains of elementwise functions, powers (integer, real, complex, tensor
exponents; Python-number bases), mixed real/complex promotion with Python complex scalars,
reductions (``sum mean prod cumsum cumprod var``, ``linalg.vector_norm``), ``matmul``/
``einsum``/``F.linear``, ``addcmul addcdiv add(alpha) masked_fill where``, ``angle sgn polar
complex`` and the ``torch.fft`` transforms (every ``norm``; the real ones' Hermitian
gradients) over complex tensors made of real leaves. The result's values and dtype, and the
gradients of a real loss of it (``backward()`` of real and imaginary parts and ``|y|^2``:
PyTorch's convention, the conjugate Wirtinger derivative) and their dtypes must agree, in
complex128 tightly and in complex64 loosely. Regression cases below pin each divergence the
fuzzer found, and PyTorch's choices at ``0`` (``abs``, ``angle``, ``sgn``: subgradient 0).
``view_as_real``/``view_as_complex`` are not in xad (their views share memory, which xad's
``real``/``imag`` copies do not).

``XAD_FUZZ_N`` sets the chains (default 40 on NumPy, 8 on the other backends; the long run:
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
SIZE = 3  # every tensor is (SIZE, SIZE): products, transposes and keepdim sums compose


def _complex(L, re, im):
    return torch.complex(re, im) if L is torch else xad.complex_from_parts(re, im)


def _vnorm(L, x, ord):  # noqa: A002
    return L.linalg.vector_norm(x, ord, dim=1, keepdim=True)


# name -> f(L, x): complex in; a real result goes on as ``r * (1 + 0.5j)`` (promotion)
UNARY = {
    "exp": lambda L, x: L.exp(x * 0.5), "log": lambda L, x: L.log(x),
    "sqrt": lambda L, x: L.sqrt(x), "sin": lambda L, x: L.sin(x),
    "cos": lambda L, x: L.cos(x), "tanh": lambda L, x: L.tanh(x),
    "sigmoid": lambda L, x: L.sigmoid(x), "reciprocal": lambda L, x: L.reciprocal(x),
    "rsqrt": lambda L, x: L.rsqrt(x), "square": lambda L, x: L.square(x),
    "abs": lambda L, x: L.abs(x), "real": lambda L, x: L.real(x),
    "imag": lambda L, x: L.imag(x), "conj": lambda L, x: L.conj(x), "neg": lambda L, x: -x,
    "angle": lambda L, x: L.angle(x), "sgn": lambda L, x: L.sgn(x),
    "polar": lambda L, x: L.polar(L.abs(x), L.real(x)),
    "complex": lambda L, x: L.complex(L.imag(x), L.real(x) * 2.0),
    "pow2": lambda L, x: x ** 2, "pow3": lambda L, x: x ** 3, "pow-1": lambda L, x: x ** -1,
    "pow0.5": lambda L, x: x ** 0.5, "pow1.5": lambda L, x: x ** 1.5,
    "powc": lambda L, x: x ** (0.5 + 0.75j), "rpow": lambda L, x: 2.0 ** x,
    "rpowc": lambda L, x: (1 + 1j) ** x, "mulc": lambda L, x: x * (2 - 1j),
    "addc": lambda L, x: x + 1j, "divc": lambda L, x: x / (1 + 2j),
    "rdivc": lambda L, x: (1 - 1j) / x, "rsubc": lambda L, x: (0.5 + 1j) - x,
    "sum": lambda L, x: L.sum(x, 1, keepdim=True),
    "mean": lambda L, x: L.mean(x, 0, keepdim=True),
    "sum_all": lambda L, x: L.sum(x, (0, 1), keepdim=True),
    "prod": lambda L, x: L.prod(x, 1, keepdim=True),
    "cumsum": lambda L, x: L.cumsum(x, 0), "cumprod": lambda L, x: L.cumprod(x, 1),
    "var": lambda L, x: L.var(x, 0, keepdim=True),
    "std": lambda L, x: L.std(x, 1, keepdim=True),
    "norm2": lambda L, x: _vnorm(L, x, 2), "norm1": lambda L, x: _vnorm(L, x, 1),
    "norm3": lambda L, x: _vnorm(L, x, 3), "norminf": lambda L, x: _vnorm(L, x, float("inf")),
    "transpose": lambda L, x: x.transpose(0, 1), "flip": lambda L, x: L.flip(x, [1]),
    "index": lambda L, x: x[[2, 0, 0]], "matmul_self": lambda L, x: x @ x,
    "fft": lambda L, x: L.fft.fft(x, dim=1, norm="ortho"),
    "ifft": lambda L, x: L.fft.ifft(x, dim=0),
    "fft2": lambda L, x: L.fft.fft2(x, norm="forward"), "ifftn": lambda L, x: L.fft.ifftn(x),
    "rfft": lambda L, x: L.fft.rfft(L.real(x), n=2 * SIZE - 2, dim=1),
    "irfft": lambda L, x: L.fft.irfft(x, n=SIZE, dim=0),
    "hfft": lambda L, x: L.fft.hfft(x, n=SIZE, norm="ortho"),
    "irfftn": lambda L, x: L.fft.irfftn(x, s=(SIZE, SIZE), norm="forward"),
    "rfft2": lambda L, x: L.fft.rfft2(L.imag(x), s=(SIZE, 2 * SIZE - 1)),
    "fftshift": lambda L, x: L.fft.fftshift(x, dim=1),
    "masked_fill": lambda L, x: x.masked_fill(L.tensor([[True, False, True]] * SIZE), 0.5),
}
KINKED = {"abs", "angle", "sgn", "polar", "sqrt", "rsqrt", "log", "pow0.5", "pow1.5", "powc",
          "std", "var", "norm1", "norm2", "norm3", "norminf"}  # a derivative that jumps at 0
BINARY = {
    "add": lambda L, x, y: x + y, "sub": lambda L, x, y: x - y,
    "mul": lambda L, x, y: x * y, "div": lambda L, x, y: x / y,
    "pow": lambda L, x, y: x ** (y * 0.5), "matmul": lambda L, x, y: x @ y,
    "einsum": lambda L, x, y: L.einsum("ij,kj->ik", x, y),
    "where": lambda L, x, y: L.where(L.abs(x) > 1.0, x, y),
    "mul_real": lambda L, x, y: x * L.real(y), "div_real": lambda L, x, y: L.imag(y) / x,
    "linear": lambda L, x, y: L.nn.functional.linear(x, y, y[0]),
    "addcmul": lambda L, x, y: L.addcmul(x, x, y, value=0.5),
    "addcdiv": lambda L, x, y: L.addcdiv(y, x, y, value=-1.5),
    "add_alpha": lambda L, x, y: L.add(x, y, alpha=0.5),
}


def _is_complex(t) -> bool:
    return str(t.dtype).split(".")[-1].startswith("complex")


def _chain(rng: random.Random) -> list[tuple[str, int]]:
    """Steps ``(op name, operand)``: a unary op on the running value, or a binary op of it
    and a leaf (operand 0 or 1, at random on either side)."""
    steps = []
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.35:
            steps.append((rng.choice(sorted(BINARY)), rng.choice([-2, -1, 1, 2])))
        else:
            steps.append((rng.choice(sorted(UNARY)), 0))
    return steps


def _rounded_zero(x) -> bool:
    """Whether ``x`` holds a nonzero within rounding of 0, where an op with a kink at 0
    (``abs``, a norm, ``sqrt``) has a direction that rounding chose (the libraries differ)."""
    a = np.abs(_numpy(x))
    return bool(np.any((a > 0) & (a < 1e-9 * max(1.0, float(a.max(initial=0.0))))))


def _on_cut(x) -> bool:
    """Whether ``x`` holds a negative real number with a zero imaginary part: on the
    branch cut of ``log``, ``sqrt`` and powers, where the sign of that zero (which an FFT's
    DC bin or a negation leaves as rounding and each library chooses) picks the side."""
    z = _numpy(x)
    return bool(np.any((np.imag(z) == 0) & (np.real(z) < 0)))


def _run(L, steps, parts, dtype, rounded=None):
    """The leaves (real, imaginary of two complex inputs) and the chain's result; appends
    to ``rounded`` whether a kinked op met a rounded zero or a cut."""
    leaves = [L.tensor(p, dtype=dtype, requires_grad=True) for p in parts]
    zs = [_complex(L, leaves[0], leaves[1]), _complex(L, leaves[2], leaves[3])]
    y = zs[0]
    for name, k in steps:
        if k == 0:
            if rounded is not None and name in KINKED:
                rounded.append(_rounded_zero(y) or _on_cut(y))
            y = UNARY[name](L, y)
        else:
            other = zs[abs(k) - 1]
            if rounded is not None and name == "pow":
                rounded.append(_on_cut(y if k > 0 else other))
            y = BINARY[name](L, y, other) if k > 0 else BINARY[name](L, other, y)
        if not _is_complex(y):
            y = y * (1 + 0.5j)
        y = L.broadcast_to(y, (SIZE, SIZE))  # a keepdim reduction's (1, SIZE) goes on
    return leaves, y


def _numpy(t):
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().resolve_neg().numpy()
    return t.numpy()


def _result(L, steps, parts, dtype, w, rounded):
    leaves, y = _run(L, steps, parts, dtype, rounded)
    re, im = L.real(y), L.imag(y)
    loss = (re * L.tensor(w[0], dtype=dtype)).sum() + (im * L.tensor(w[1], dtype=dtype)).sum()
    loss = loss + (L.abs(y) ** 2).sum() * 0.25
    grads = L.autograd.grad(loss, leaves, allow_unused=True)
    return (_numpy(y), str(y.dtype).split(".")[-1],
            [np.zeros(p.shape) if g is None else _numpy(g) for g, p in zip(grads, parts)])


def _close(got, want, tol, what, scale=1.0):
    """Agreement relative to the largest finite magnitude (of ``want`` or ``scale``); NaN
    and inf where PyTorch's are."""
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isfinite(got), finite, err_msg=f"{what}: nonfinite")
    scale = max(scale, float(np.abs(want[finite]).max(initial=0.0)))
    np.testing.assert_allclose(got[finite], want[finite], rtol=tol, atol=tol * scale,
                               err_msg=what)


def _check(seed: int) -> None:
    rng = random.Random(seed)
    steps = _chain(rng)
    g = np.random.default_rng(seed)
    parts = [g.standard_normal((SIZE, SIZE)) * 0.8 for _ in range(4)]
    if rng.random() < 0.3:  # exact zeros (abs, sgn, norms at 0: PyTorch's subgradients);
        row, k = g.integers(SIZE), 2 * g.integers(2)  # not zero imaginary parts alone: on a
        parts[k][row, :] = parts[k + 1][row, :] = 0.0  # cut, PyTorch's signed zeros vary
    w = [g.standard_normal((SIZE, SIZE)) for _ in range(2)]
    what = f"seed {seed}: {steps}"
    with np.errstate(all="ignore"):
        rounded: list[bool] = []
        want = _result(torch, steps, parts, torch.float64, w, rounded)
        got = _result(T, steps, parts, T.float64, w, rounded)
        if (not np.all(np.isfinite(want[0])) or np.abs(want[0]).max() > 1e6
                or any(not np.all(np.isfinite(t)) for t in want[2]) or any(rounded)):
            return  # a pole or a branch point hit (the libraries' conventions), or near one
        assert got[1] == want[1], f"{what}: dtype {got[1]}, PyTorch {want[1]}"
        _close(got[0], want[0], 1e-9, f"{what}: value")
        scale = max(1.0, *(float(np.abs(t).max()) for t in want[2]))
        for i, (a, b) in enumerate(zip(got[2], want[2])):
            _close(a, b, 1e-8, f"{what}: gradient of leaf {i}", scale)
        if np.abs(want[0]).max() > 1e4:
            return  # ill-conditioned for single precision
        want = _result(torch, steps, parts, torch.float32, w, [])
        got = _result(T, steps, parts, T.float32, w, [])
        assert got[1] == want[1], f"{what}: complex64 dtype {got[1]}, PyTorch {want[1]}"
        _close(got[0], want[0], 2e-3, f"{what}: complex64 value")
        scale = max(1.0, *(float(np.abs(t).max()) for t in want[2]))
        for i, (a, b) in enumerate(zip(got[2], want[2])):
            assert a.dtype == b.dtype, f"{what}: float32 gradient's dtype {a.dtype}"
            _close(a, b, 1e-2, f"{what}: float32 gradient of leaf {i}", scale)


def test_complex_chains_agree_with_pytorch(xb):
    n = N or (40 if xb.name == "numpy" else 8)
    for seed in range(SEED, SEED + n):
        _check(seed)


# (name, f(L, z, w)): each diverged from PyTorch before its fix (a regression case)
REGRESSIONS = {
    "abs at 0 (gradient 0, was NaN)": lambda L, z, w: L.abs(z * L.real(w) * 0.0 + z),
    "vector_norm through 0": lambda L, z, w: L.linalg.vector_norm(z - z[0:1], dim=0),
    "matmul (gradients were unconjugated)": lambda L, z, w: z @ w,
    "dot of 1-D": lambda L, z, w: z[0] @ w[1],
    "einsum": lambda L, z, w: L.einsum("ij,jk->ik", z, w),
    "tensordot": lambda L, z, w: L.tensordot(z, w, dims=1),
    "prod": lambda L, z, w: L.prod(z, 1) * w[0],
    "cumprod": lambda L, z, w: L.cumprod(z, 0) + w,
    "var (real, was complex)": lambda L, z, w: L.var(z, 0) * w[0],
    "std": lambda L, z, w: L.std(z * w),
    "rsqrt (was the real part's)": lambda L, z, w: L.rsqrt(z),
    "exp2": lambda L, z, w: L.exp2(z),
    "negative integer power (raised)": lambda L, z, w: z ** -2 + w,
    "complex Python base (was complex64)": lambda L, z, w: (1 + 1j) ** z,
    "repeated index (CuPy's scatter_add refused complex)": lambda L, z, w: z[[0, 0, 2]] * w,
    "F.linear (unconjugated gradients)": lambda L, z, w: L.nn.functional.linear(z, w, w[1]),
    "addcmul float value (was truncated to 0)": lambda L, z, w: L.addcmul(z, z, w, value=0.5),
    "addcdiv (raised: 'integer division')": lambda L, z, w: L.addcdiv(z, z, w + 3, value=0.5),
    "add float alpha (raised)": lambda L, z, w: L.add(z, w, alpha=0.5),
    "masked_fill float (filled 0)": lambda L, z, w: z.masked_fill(L.real(w) > 0, 0.5),
    "angle at 0 (new)": lambda L, z, w: L.angle(z) * L.real(w),
    "sgn at 0 (new)": lambda L, z, w: L.sgn(z) * w,
    "angle of real (new)": lambda L, z, w: L.angle(L.real(z) - 0.5),
    "polar, complex (new)": lambda L, z, w: L.polar(L.abs(w), L.imag(z)) * L.complex(
        L.real(z), L.imag(w)),
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_complex_regressions(name, xb):
    g = np.random.default_rng(7)
    parts = [g.standard_normal((SIZE, SIZE)) for _ in range(4)]
    parts[0][1] = parts[1][1] = 0.0  # z's row 1 is 0
    w = [g.standard_normal((SIZE, SIZE)) for _ in range(2)]
    out = []
    for L in (torch, T):
        leaves = [L.tensor(p, dtype=L.float64, requires_grad=True) for p in parts]
        z, v = _complex(L, leaves[0], leaves[1]), _complex(L, leaves[2], leaves[3])
        y = REGRESSIONS[name](L, z, v)
        c = _is_complex(y)
        u0, u1 = (L.tensor(np.resize(u, tuple(y.shape))) for u in w)
        loss = ((L.real(y) * u0).sum() + (L.imag(y) * u1).sum()) if c else (y * y).sum()
        out.append((_numpy(y), str(y.dtype).split(".")[-1],
                    [_numpy(t) for t in L.autograd.grad(loss, leaves, allow_unused=True)
                     if t is not None]))
    (want, wdt, wg), (got, gdt, gg) = out
    assert gdt == wdt, f"{name}: dtype {gdt}, PyTorch {wdt}"
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)
    assert len(gg) == len(wg), name
    for a, b in zip(gg, wg):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10, err_msg=f"{name}: gradient")


_EDGES = [0.0, -0.0, 1.5, -2.0, float("inf"), -float("inf"), float("nan")]


def _bits(z):
    """Each part's value, with the sign of a zero and NaN as one value."""
    return [(p, np.signbit(p)) if p == p else "nan" for p in (z.real, z.imag)]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_complex_from_parts_keeps_each_part(dtype, xb):
    """``complex_from_parts``/``torch.complex`` (and ``torch.polar``, through it) keep each
    part as given, as PyTorch's: ``re + 1j * im`` made ``(0, inf)`` ``nan+infj`` (``0 *
    inf`` in the real part) and dropped the sign of a zero imaginary part (``angle`` of
    ``(-1, -0)`` is then ``pi``, not ``-pi``)."""
    re = np.array([r for r in _EDGES for _ in _EDGES])
    im = np.array([i for _ in _EDGES for i in _EDGES])
    td, xd = getattr(torch, dtype), getattr(xad, dtype)
    want = torch.complex(torch.tensor(re, dtype=td), torch.tensor(im, dtype=td)).numpy()
    for f in (xad.complex_from_parts, T.complex):
        got = f(xad.tensor(re, dtype=xd), xad.tensor(im, dtype=xd)).numpy()
        assert got.dtype == want.dtype
        assert [_bits(z) for z in got] == [_bits(z) for z in want], f
    with np.errstate(all="ignore"):
        want = torch.polar(torch.tensor(np.abs(re), dtype=td), torch.tensor(im, dtype=td))
        got = T.polar(xad.tensor(np.abs(re), dtype=xd), xad.tensor(im, dtype=xd))
    for part in (np.real, np.imag):  # (NaNs and infinities where PyTorch's; cos's ulp)
        np.testing.assert_allclose(part(got.numpy()), part(want.numpy()), rtol=1e-6)
    a = T.angle(T.complex(xad.tensor([-1.0], dtype=xd), xad.tensor([-0.0], dtype=xd)))
    assert a.item() == float(getattr(np, dtype)(-np.pi))


def test_complex_parts_are_views_as_pytorchs(xb):
    """``z.real``, ``z.imag``, ``torch.real(z)`` and ``torch.imag(z)`` are views as PyTorch's:
    a write into one reaches ``z``, a later change of ``z`` is seen through it, and gradients
    through the writes are PyTorch's (they were copies: every such write was lost).
    ``view_as_real``/``view_as_complex``: tests/test_view_as_real.py."""
    g = np.random.default_rng(2)
    re0, im0, w0 = (g.standard_normal(3) for _ in range(3))
    writes = [lambda L, z, w: z.real.mul_(w), lambda L, z, w: z.imag.__setitem__(1, w[0] * 3),
              lambda L, z, w: L.real(z).zero_(), lambda L, z, w: L.imag(z).add_(w),
              lambda L, z, w: z.imag[::2].sub_(L.real(z)[::2] * 0 + w[:2])]
    for write in writes:
        got, want = ([m.numpy() for m in _through_a_part(L, write, re0, im0, w0)]
                     for L in (T, torch))
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    z = T.complex(T.tensor([1.0, 2.0]), T.tensor([3.0, 4.0]))
    r, i = z.real, T.imag(z)
    z.mul_(2.0)  # seen through the views
    assert r.tolist() == [2.0, 4.0] and i.tolist() == [6.0, 8.0]
    for m in (T, torch):  # a real tensor's imaginary part: no view to write into
        with pytest.raises(RuntimeError, match="imag"):
            m.ones(2).imag  # noqa: B018
        with pytest.raises(RuntimeError, match="imag"):
            m.imag(m.ones(2))


def _through_a_part(L, write, *arrays):
    """The values of ``z`` after ``write`` into a part of it, and the float64 gradients of
    a real loss of ``z`` by the leaves (``re``, ``im``, ``w``), with PyTorch's calls."""
    re, im, w = (L.tensor(a, dtype=L.float64, requires_grad=True) for a in arrays)
    z = L.complex(re, im) * 1
    write(L, z, w)
    out = L.abs(z) ** 2 + L.real(z) * 2 + L.imag(z) * 3
    gs = L.autograd.grad(out.sum(), (re, im, w), allow_unused=True)
    zero = L.zeros(3, dtype=L.float64)
    return [z.detach(), *(zero if v is None else v for v in gs)]
