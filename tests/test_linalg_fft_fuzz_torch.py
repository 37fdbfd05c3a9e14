"""A differential fuzzer of ``torch.linalg`` under ``xad.as_torch`` against PyTorch (the
oracle), over batches (broadcast where PyTorch broadcasts), sizes 1 to 4, float64 (values
and gradients, tight) and float32 (values and gradients, loose), real and complex.

Each case draws a function (``solve inv det slogdet eigh eigvalsh svd svdvals qr cholesky
lstsq pinv matrix_norm`` in every ``ord``, ``vector_norm``, ``matrix_power``, ``cross``,
``vecdot``, ``matmul``, ``trace``, ``diagonal``, and compositions), inputs where PyTorch
defines the number (well-conditioned matrices, positive definite ones for ``cholesky``,
gauge-invariant losses for ``eigh``/``svd``/``qr``: eigenvalues, projectors, ``U S Vh``)
and a real loss of the result. Complex inputs are two real leaves; the decompositions,
inverses and ``det`` have no complex gradients in xad (a ``NotImplementedError`` names them:
docs/PORTING.md), so their complex cases compare values only. ``torch.fft`` is fuzzed by
tests/test_fft_torch.py and, inside complex chains, tests/test_complex_fuzz_torch.py; the
FFT cases here are the single-precision gradients and the real transforms' Hermitian bins.

``XAD_FUZZ_N`` sets the cases (default 40 on NumPy, 8 on the other backends; the long run:
5000). A failure names its seed: replay it with ``XAD_FUZZ_SEED=<seed> XAD_FUZZ_N=1``.
"""

from __future__ import annotations

import math
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


def _mT(L, x):
    return x.transpose(-2, -1)


def _mH(L, x):
    return L.conj(x.transpose(-2, -1))


def _eye(L, x, n):
    return L.eye(n, dtype=L.real(x).dtype)


def _well(L, x):
    """``x`` plus ``n I``: well conditioned (random entries of size 1)."""
    return x + 2.0 * x.shape[-1] * _eye(L, x, x.shape[-1])


def _spd(L, x):
    n = x.shape[-1]
    return x @ _mH(L, x) + n * _eye(L, x, n)


def _herm(L, x):
    return x + _mH(L, x)


def _eigh(L, x):
    w, v = L.linalg.eigh(_herm(L, x))
    return w, L.abs(v) ** 2, (v * L.exp(w * 0.1)[..., None, :]) @ _mH(L, v)  # gauge-free


def _svd(L, x):
    u, s, vh = L.linalg.svd(x, full_matrices=False)
    return s, (u * s[..., None, :]) @ vh, L.abs(u) ** 2


def _eigh_upper(L, x):
    """``eigh`` reading the upper triangle of a non-symmetric ``x``: PyTorch's gauge-free
    parts, as :func:`_eigh`."""
    w, v = L.linalg.eigh(x, UPLO="U")
    return w, L.abs(v) ** 2, (v * L.exp(w * 0.1)[..., None, :]) @ _mH(L, v)


def _qr(L, x, mode):
    q, r = L.linalg.qr(x, mode=mode)
    return q @ r, r


# name -> (f(L, *xs), shapes(rng, batch, n), complex gradient in xad)
CASES = {
    "solve": (lambda L, a, b: L.linalg.solve(_well(L, a), b),
              lambda r, bt, n: [bt + (n, n), bt + (n, r.randint(1, 3))], False),
    "solve_broadcast": (lambda L, a, b: L.linalg.solve(_well(L, a), b),
                        lambda r, bt, n: [(2, 1, n, n), (3, n, 2)], False),
    "inv": (lambda L, a: L.linalg.inv(_well(L, a)), lambda r, bt, n: [bt + (n, n)], False),
    "det": (lambda L, a: L.linalg.det(a), lambda r, bt, n: [bt + (n, n)], False),
    "slogdet": (lambda L, a: tuple(L.linalg.slogdet(_well(L, a))),
                lambda r, bt, n: [bt + (n, n)], False),
    "eigh": (_eigh, lambda r, bt, n: [bt + (n, n)], False),
    "eigvalsh": (lambda L, a: L.linalg.eigvalsh(_herm(L, a)), lambda r, bt, n: [bt + (n, n)],
                 False),
    "svd": (_svd, lambda r, bt, n: [bt + (n, r.randint(1, 4))], False),
    "svdvals": (lambda L, a: L.linalg.svdvals(a), lambda r, bt, n: [bt + (r.randint(1, 4), n)],
                False),
    "qr": (lambda L, a: _qr(L, a, "reduced"), lambda r, bt, n: [bt + (n + 1, n)], False),
    "qr_complete": (lambda L, a: _qr(L, a, "complete"), lambda r, bt, n: [bt + (n, n)], False),
    "solve_left_false": (lambda L, a, b: L.linalg.solve(_well(L, a), b, left=False),
                         lambda r, bt, n: [bt + (n, n), bt + (r.randint(1, 3), n)], False),
    "eigh_upper": (_eigh_upper, lambda r, bt, n: [bt + (n, n)], False),
    "cholesky_upper_triangle": (
        lambda L, a, b: L.linalg.cholesky(_spd(L, a) + L.triu(b, 1) * 0.3, upper=True),
        lambda r, bt, n: [bt + (n, n), bt + (n, n)], False),
    "eigvalsh_upper": (lambda L, a: L.linalg.eigvalsh(a, UPLO="U"),
                       lambda r, bt, n: [bt + (n, n)], False),
    "matrix_exp": (lambda L, a: L.linalg.matrix_exp(a * 0.7), lambda r, bt, n: [bt + (n, n)],
                   False),
    "multi_dot": (lambda L, a, b, c: L.linalg.multi_dot([a, b, c]),
                  lambda r, bt, n: [(n,), (n, n + 1), (n + 1, r.randint(1, 3))], True),
    "cholesky": (lambda L, a: L.linalg.cholesky(_spd(L, a)), lambda r, bt, n: [bt + (n, n)],
                 False),
    "cholesky_upper": (lambda L, a: L.linalg.cholesky(_spd(L, a), upper=True),
                       lambda r, bt, n: [bt + (n, n)], False),
    "lstsq": (lambda L, a, b: L.linalg.lstsq(a, b).solution,
              lambda r, bt, n: [bt + (n + 2, n), bt + (n + 2, 2)], False),
    "pinv": (lambda L, a: L.linalg.pinv(a), lambda r, bt, n: [bt + (n + 1, n)], False),
    "matrix_power_neg": (lambda L, a: L.linalg.matrix_power(_well(L, a), -2),
                         lambda r, bt, n: [bt + (n, n)], False),
    "matrix_norm_nuc": (lambda L, a: L.linalg.matrix_norm(a, "nuc"),
                        lambda r, bt, n: [bt + (n, n + 1)], False),
    "matrix_norm_2": (lambda L, a: L.linalg.matrix_norm(a, 2, dim=(0, -1)),
                      lambda r, bt, n: [(n + 1,) + bt + (n,)], False),
    "matrix_norm_-2": (lambda L, a: L.linalg.matrix_norm(a, -2, keepdim=True),
                       lambda r, bt, n: [bt + (n, n)], False),
    "matrix_norm": (lambda L, a, o: L.linalg.matrix_norm(a, o, dim=(-1, 0), keepdim=True),
                    lambda r, bt, n: [(n,) + bt + (n + 1,)], True),
    "vector_norm": (lambda L, a, o: L.linalg.vector_norm(a, o, dim=-1),
                    lambda r, bt, n: [bt + (n, n + 1)], True),
    "matrix_power": (lambda L, a, k: L.linalg.matrix_power(a, k), lambda r, bt, n: [bt + (n, n)],
                     True),
    "cross": (lambda L, a, b: L.linalg.cross(a, b, dim=-2),
              lambda r, bt, n: [bt + (3, n), (1,) * len(bt) + (3, n)], True),
    "vecdot": (lambda L, a, b: L.linalg.vecdot(a, b), lambda r, bt, n: [bt + (n,), (n,)], True),
    "matmul": (lambda L, a, b: a @ b, lambda r, bt, n: [bt + (2, n), (n, 3)], True),
    "trace_diag": (lambda L, a: (L.trace(a.reshape(-1, a.shape[-1])[:a.shape[-1]]),
                                 L.linalg.diagonal(a, offset=-1)),
                   lambda r, bt, n: [bt + (n, n)], True),
    "irfft": (lambda L, a, k, norm: L.fft.irfft(a, n=k, dim=-2, norm=norm),
              lambda r, bt, n: [bt + (n, 2)], True),
    "hfft2": (lambda L, a, k, norm: L.fft.hfft2(a, s=(2, k), norm=norm),
              lambda r, bt, n: [bt + (2, n)], True),
    "irfftn": (lambda L, a, k, norm: L.fft.irfftn(a, s=(k, 3), dim=(-1, 0), norm=norm),
               lambda r, bt, n: [(2,) + bt + (n,)], True),
    "rfftn": (lambda L, a, k, norm: L.fft.rfftn(a, s=(k,), norm=norm),
              lambda r, bt, n: [bt + (n,)], True),
    "ihfft": (lambda L, a, k, norm: L.fft.ihfft(a, n=k, dim=0, norm=norm),
              lambda r, bt, n: [(n,) + bt], True),
}
REAL_IN = {"rfftn", "ihfft"}  # PyTorch refuses complex input
ORDS = ["fro", 1, -1, math.inf, -math.inf]
VORDS = [2, 1, 3, 0.5, math.inf, -math.inf, 0]


def _numpy(t):
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().resolve_neg().numpy()
    return t.numpy()


def _parts(L, y):
    return [L.real(y), L.imag(y)] if str(y.dtype).split(".")[-1].startswith("complex") else [y]


def _run(L, name, arrays, cplx, grad, dtype, extra):
    f, _, _ = CASES[name]
    leaves = [L.tensor(a, dtype=dtype, requires_grad=grad) for a in arrays]
    xs = leaves
    if cplx:
        xs = [(torch.complex if L is torch else xad.complex_from_parts)(a, b)
              for a, b in zip(leaves[0::2], leaves[1::2])]
    ys = f(L, *xs, *extra)
    ys = ys if isinstance(ys, tuple) else (ys,)
    return leaves, [p for y in ys for p in _parts(L, y)], [str(y.dtype).split(".")[-1]
                                                            for y in ys]


def _result(L, case, dtype, grad):
    name, arrays, cplx, extra, ws = case
    leaves, parts, dtypes = _run(L, name, arrays, cplx, grad, dtype, extra)
    values = [_numpy(p) for p in parts]
    if not grad:
        return values, dtypes, []
    loss = sum((p * L.tensor(w, dtype=dtype)).sum() + (p * p).sum() * 0.1
               for p, w in zip(parts, ws))
    gs = L.autograd.grad(loss, leaves, allow_unused=True)
    return values, dtypes, [np.zeros(a.shape) if g is None else _numpy(g)
                            for g, a in zip(gs, arrays)]


def _case(seed: int, name: str | None = None):
    rng = random.Random(seed)
    name = rng.choice(sorted(CASES)) if name is None else name
    _, shapes, cgrad = CASES[name]
    batch = rng.choice([(), (), (2,), (1, 2)])
    n = rng.randint(1, 4) if name not in ("cross",) else rng.randint(1, 3)
    cplx = rng.random() < 0.4 and name not in REAL_IN
    extra = {"matrix_norm": (rng.choice(ORDS),), "vector_norm": (rng.choice(VORDS),),
             "matrix_power": (rng.randint(0, 4),)}.get(name, ())
    if name in ("irfft", "hfft2", "irfftn", "rfftn", "ihfft"):
        extra = (rng.randint(1, 7), rng.choice([None, "backward", "ortho", "forward"]))
    g = np.random.default_rng(seed)
    arrays = [g.standard_normal(s) for s in shapes(rng, batch, n) for _ in range(1 + cplx)]
    return (name, arrays, cplx, extra, None), cplx and not cgrad, g


def _close(got, want, tol, what):
    assert got.shape == want.shape, f"{what}: shape {got.shape}, PyTorch {want.shape}"
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, err_msg=what)


def _check(seed: int, name: str | None = None) -> None:
    case, values_only, g = _case(seed, name)
    name, arrays, cplx, extra, _ = case
    what = f"seed {seed}: {name}{extra} of {[a.shape for a in arrays]}, complex={cplx}"
    want = _result(torch, case, torch.float64, False)
    case = case[:4] + ([g.standard_normal(v.shape) for v in want[0]],)
    for dtype, tol in ((torch.float64, 1e-8), (torch.float32, 2e-3)):
        grad = not values_only
        want = _result(torch, case, dtype, grad)
        got = _result(T, case, getattr(T, str(dtype).split(".")[-1]), grad)
        assert got[1] == want[1], f"{what}: dtypes {got[1]}, PyTorch {want[1]}"
        for i, (a, b) in enumerate(zip(got[0], want[0])):
            _close(a, b, tol, f"{what}, {dtype}: value {i}")
        for i, (a, b) in enumerate(zip(got[2], want[2])):
            _close(a, b, tol * 10, f"{what}, {dtype}: gradient of leaf {i}")


def test_linalg_agrees_with_pytorch(xb):
    n = N or (40 if xb.name == "numpy" else 8)
    for seed in range(SEED, SEED + n):
        _check(seed)


@pytest.mark.parametrize("name", ["solve_left_false", "eigh_upper", "eigvalsh_upper",
                                  "cholesky_upper_triangle", "matrix_exp", "multi_dot"])
def test_new_linalg_names_agree_with_pytorch(name, xb):
    """The names added beside the rest (``solve(left=False)``, ``UPLO="U"``,
    ``matrix_exp``, ``multi_dot``) and ``cholesky(upper=True)`` of a non-symmetric matrix
    (PyTorch's reads the upper triangle), each on every backend: eight draws apiece, real
    and complex, float64 and float32."""
    for seed in range(8):
        _check(seed, name)


@pytest.mark.parametrize("m, n", [(5, 3), (3, 3), (2, 4)])
def test_complex_lstsq_is_pytorchs(m, n, xb):
    """``lstsq`` of a complex ``x1`` used transposes where the solution needs conjugate
    transposes (a wrong solution, no error); now PyTorch's, tall, square and wide."""
    g = np.random.default_rng(m * 10 + n)
    a, b = (g.standard_normal((m, n)) + 1j * g.standard_normal((m, n)),
            g.standard_normal((m, 2)) + 1j * g.standard_normal((m, 2)))
    want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b),
                              driver="gelsd" if m < n else None).solution.numpy()
    got = xad.linalg.lstsq(xad.tensor(a), xad.tensor(b)).solution.numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_matrix_power_zero_has_a_zero_gradient(xb):
    """``matrix_power(x, 0)`` of an ``x`` requiring grad is in the graph with gradient 0
    (PyTorch's); backward raised that the result needed no gradient."""
    x = T.tensor([[1.0, 2.0], [3.0, math.inf]], requires_grad=True)
    y = T.linalg.matrix_power(x, 0)
    y.sum().backward()
    assert y.tolist() == [[1.0, 0.0], [0.0, 1.0]] and x.grad.tolist() == [[0.0, 0.0]] * 2
