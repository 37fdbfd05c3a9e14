"""A differential fuzzer of ``torch.linalg`` under ``xad.as_torch`` against PyTorch (the
oracle), over batches (broadcast where PyTorch broadcasts), sizes 1 to 4, float64 (values
and gradients, tight) and float32 (values and gradients, loose), real and complex.

Each case draws a function (``solve inv det slogdet eigh eigvalsh svd svdvals qr cholesky
lstsq pinv matrix_norm`` in every ``ord``, ``vector_norm``, ``matrix_power``, ``cross``,
``vecdot``, ``matmul``, ``trace``, ``diagonal``, and compositions), inputs where PyTorch
defines the number (well-conditioned matrices, positive definite ones for ``cholesky``,
gauge-invariant losses for ``eigh``/``svd``/``qr``: eigenvalues, projectors, ``U S Vh``,
``|U|^2``, and ``U Vh``, which reaches the term for the phases of ``U`` and ``V``) and a
real loss of the result. Complex inputs are two real leaves, whose gradients (PyTorch's
convention) are compared for every function, the decompositions included; forward mode
through a complex decomposition is PyTorch's or refuses (``test_complex_tangents_*``).
``torch.fft`` is fuzzed by tests/test_fft_torch.py and, inside complex chains,
tests/test_complex_fuzz_torch.py; the FFT cases here are the single-precision gradients and
the real transforms' Hermitian bins.

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
    return s, (u * s[..., None, :]) @ vh, L.abs(u) ** 2, u @ vh  # (the last: U's phases)


def _eigh_upper(L, x):
    """``eigh`` reading the upper triangle of a non-symmetric ``x``: PyTorch's gauge-free
    parts, as :func:`_eigh`."""
    w, v = L.linalg.eigh(x, UPLO="U")
    return w, L.abs(v) ** 2, (v * L.exp(w * 0.1)[..., None, :]) @ _mH(L, v)


def _qr(L, x, mode):
    q, r = L.linalg.qr(x, mode=mode)
    return q @ r, r


# name -> (f(L, *xs), shapes(rng, batch, n))
CASES = {
    "solve": (lambda L, a, b: L.linalg.solve(_well(L, a), b),
              lambda r, bt, n: [bt + (n, n), bt + (n, r.randint(1, 3))]),
    "solve_broadcast": (lambda L, a, b: L.linalg.solve(_well(L, a), b),
                        lambda r, bt, n: [(2, 1, n, n), (3, n, 2)]),
    "inv": (lambda L, a: L.linalg.inv(_well(L, a)), lambda r, bt, n: [bt + (n, n)]),
    "det": (lambda L, a: L.linalg.det(a), lambda r, bt, n: [bt + (n, n)]),
    "slogdet": (lambda L, a: tuple(L.linalg.slogdet(_well(L, a))),
                lambda r, bt, n: [bt + (n, n)]),
    "eigh": (_eigh, lambda r, bt, n: [bt + (n, n)]),
    "eigvalsh": (lambda L, a: L.linalg.eigvalsh(_herm(L, a)), lambda r, bt, n: [bt + (n, n)]),
    "svd": (_svd, lambda r, bt, n: [bt + (n, r.randint(1, 4))]),
    "svdvals": (lambda L, a: L.linalg.svdvals(a), lambda r, bt, n: [bt + (r.randint(1, 4), n)]),
    "qr": (lambda L, a: _qr(L, a, "reduced"), lambda r, bt, n: [bt + (n + 1, n)]),
    "qr_complete": (lambda L, a: _qr(L, a, "complete"), lambda r, bt, n: [bt + (n, n)]),
    "solve_left_false": (lambda L, a, b: L.linalg.solve(_well(L, a), b, left=False),
                         lambda r, bt, n: [bt + (n, n), bt + (r.randint(1, 3), n)]),
    "eigh_upper": (_eigh_upper, lambda r, bt, n: [bt + (n, n)]),
    "cholesky_upper_triangle": (
        lambda L, a, b: L.linalg.cholesky(_spd(L, a) + L.triu(b, 1) * 0.3, upper=True),
        lambda r, bt, n: [bt + (n, n), bt + (n, n)]),
    "eigvalsh_upper": (lambda L, a: L.linalg.eigvalsh(a, UPLO="U"),
                       lambda r, bt, n: [bt + (n, n)]),
    "matrix_exp": (lambda L, a: L.linalg.matrix_exp(a * 0.7), lambda r, bt, n: [bt + (n, n)]),
    "multi_dot": (lambda L, a, b, c: L.linalg.multi_dot([a, b, c]),
                  lambda r, bt, n: [(n,), (n, n + 1), (n + 1, r.randint(1, 3))]),
    "cholesky": (lambda L, a: L.linalg.cholesky(_spd(L, a)), lambda r, bt, n: [bt + (n, n)]),
    "cholesky_upper": (lambda L, a: L.linalg.cholesky(_spd(L, a), upper=True),
                       lambda r, bt, n: [bt + (n, n)]),
    "lstsq": (lambda L, a, b: L.linalg.lstsq(a, b).solution,
              lambda r, bt, n: [bt + (n + 2, n), bt + (n + 2, 2)]),
    "pinv": (lambda L, a: L.linalg.pinv(a), lambda r, bt, n: [bt + (n + 1, n)]),
    "matrix_power_neg": (lambda L, a: L.linalg.matrix_power(_well(L, a), -2),
                         lambda r, bt, n: [bt + (n, n)]),
    "matrix_norm_nuc": (lambda L, a: L.linalg.matrix_norm(a, "nuc"),
                        lambda r, bt, n: [bt + (n, n + 1)]),
    "matrix_norm_2": (lambda L, a: L.linalg.matrix_norm(a, 2, dim=(0, -1)),
                      lambda r, bt, n: [(n + 1,) + bt + (n,)]),
    "matrix_norm_-2": (lambda L, a: L.linalg.matrix_norm(a, -2, keepdim=True),
                       lambda r, bt, n: [bt + (n, n)]),
    "matrix_norm": (lambda L, a, o: L.linalg.matrix_norm(a, o, dim=(-1, 0), keepdim=True),
                    lambda r, bt, n: [(n,) + bt + (n + 1,)]),
    "vector_norm": (lambda L, a, o: L.linalg.vector_norm(a, o, dim=-1),
                    lambda r, bt, n: [bt + (n, n + 1)]),
    "matrix_power": (lambda L, a, k: L.linalg.matrix_power(a, k), lambda r, bt, n: [bt + (n, n)]),
    "cross": (lambda L, a, b: L.linalg.cross(a, b, dim=-2),
              lambda r, bt, n: [bt + (3, n), (1,) * len(bt) + (3, n)]),
    "vecdot": (lambda L, a, b: L.linalg.vecdot(a, b), lambda r, bt, n: [bt + (n,), (n,)]),
    "matmul": (lambda L, a, b: a @ b, lambda r, bt, n: [bt + (2, n), (n, 3)]),
    "trace_diag": (lambda L, a: (L.trace(a.reshape(-1, a.shape[-1])[:a.shape[-1]]),
                                 L.linalg.diagonal(a, offset=-1)),
                   lambda r, bt, n: [bt + (n, n)]),
    "irfft": (lambda L, a, k, norm: L.fft.irfft(a, n=k, dim=-2, norm=norm),
              lambda r, bt, n: [bt + (n, 2)]),
    "hfft2": (lambda L, a, k, norm: L.fft.hfft2(a, s=(2, k), norm=norm),
              lambda r, bt, n: [bt + (2, n)]),
    "irfftn": (lambda L, a, k, norm: L.fft.irfftn(a, s=(k, 3), dim=(-1, 0), norm=norm),
               lambda r, bt, n: [(2,) + bt + (n,)]),
    "rfftn": (lambda L, a, k, norm: L.fft.rfftn(a, s=(k,), norm=norm),
              lambda r, bt, n: [bt + (n,)]),
    "ihfft": (lambda L, a, k, norm: L.fft.ihfft(a, n=k, dim=0, norm=norm),
              lambda r, bt, n: [(n,) + bt]),
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
    f, _ = CASES[name]
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
    _, shapes = CASES[name]
    batch = rng.choice([(), (), (2,), (1, 2)])
    n = rng.randint(1, 4) if name not in ("cross",) else rng.randint(1, 3)
    cplx = rng.random() < 0.4 and name not in REAL_IN
    extra = {"matrix_norm": (rng.choice(ORDS),), "vector_norm": (rng.choice(VORDS),),
             "matrix_power": (rng.randint(0, 4),)}.get(name, ())
    if name in ("irfft", "hfft2", "irfftn", "rfftn", "ihfft"):
        extra = (rng.randint(1, 7), rng.choice([None, "backward", "ortho", "forward"]))
    g = np.random.default_rng(seed)
    arrays = [g.standard_normal(s) for s in shapes(rng, batch, n) for _ in range(1 + cplx)]
    return (name, arrays, cplx, extra, None), g


def _close(got, want, tol, what):
    assert got.shape == want.shape, f"{what}: shape {got.shape}, PyTorch {want.shape}"
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, err_msg=what)


def _check(seed: int, name: str | None = None) -> None:
    case, g = _case(seed, name)
    name, arrays, cplx, extra, _ = case
    what = f"seed {seed}: {name}{extra} of {[a.shape for a in arrays]}, complex={cplx}"
    want = _result(torch, case, torch.float64, False)
    case = case[:4] + ([g.standard_normal(v.shape) for v in want[0]],)
    for dtype, tol in ((torch.float64, 1e-8), (torch.float32, 2e-3)):
        want = _result(torch, case, dtype, True)
        got = _result(T, case, getattr(T, str(dtype).split(".")[-1]), True)
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


TANGENTS = {  # name -> (f(L, a), input made of a random complex a)
    "slogdet": (lambda L, a: tuple(L.linalg.slogdet(a)), lambda a: a + 4 * np.eye(3)),
    "eigvalsh": (lambda L, a: L.linalg.eigvalsh(a), lambda a: a + a.conj().T),
    "eigh": (lambda L, a: L.linalg.eigh(a)[0], lambda a: a + a.conj().T),
    "svdvals": (lambda L, a: L.linalg.svdvals(a), lambda a: a),
    "svd": (lambda L, a: L.linalg.svd(a)[1], lambda a: a),
    "cholesky": (lambda L, a: L.linalg.cholesky(a), lambda a: a @ a.conj().T + 3 * np.eye(3)),
    "qr": (lambda L, a: L.linalg.qr(a)[1], lambda a: a),
    "pinv": (lambda L, a: L.linalg.pinv(a), lambda a: a),
    "inv": (lambda L, a: L.linalg.inv(a), lambda a: a + 4 * np.eye(3)),
    "det": (lambda L, a: L.linalg.det(a), lambda a: a),
}


@pytest.mark.parametrize("name", sorted(TANGENTS))
def test_complex_tangents_are_pytorchs_or_refused(name, xb):
    """``xad.jvp`` through a decomposition of a complex matrix ran the real rule: wrong
    tangents without an error (``eigvalsh``'s complex where PyTorch's are real, ``slogdet``'s
    ``logabsdet`` tangent complex and its ``sign`` tangent 0). Now PyTorch's
    (``torch.func.jvp``), or ``NotImplementedError`` where the rule is the real one."""
    f, make = TANGENTS[name]
    g = np.random.default_rng(5)
    a = make(g.standard_normal((3, 3)) + 1j * g.standard_normal((3, 3)))
    t = g.standard_normal((3, 3)) + 1j * g.standard_normal((3, 3))
    t = t + t.conj().T if name in ("eigvalsh", "eigh", "cholesky") else t
    _, want = torch.func.jvp(lambda m: f(torch, m), (torch.tensor(a),), (torch.tensor(t),))
    try:
        _, got = xad.jvp(lambda m: f(T, m), (xad.tensor(a),), (xad.tensor(t),))
    except NotImplementedError as e:
        assert f"{name}" in str(e) and "tangent of complex" in str(e), e
        return
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    for w, v in zip(want, got):
        assert str(v.dtype).split(".")[-1] == str(w.dtype).split(".")[-1], (name, v.dtype)
        np.testing.assert_allclose(v.numpy(), w.numpy(), rtol=1e-9, atol=1e-9, err_msg=name)


def test_complex_det_has_no_second_derivative_yet(xb):
    """``det``'s first-order complex gradient is PyTorch's (the fuzzer above); its second
    derivative, a rule written for real matrices, refuses rather than give wrong numbers."""
    x = T.tensor([[1.0, 2.0], [3.0, 5.0]], dtype=T.float64, requires_grad=True)
    d = T.linalg.det(T.complex(x, x * 0.5))
    (g,) = T.autograd.grad(T.real(d), x, create_graph=True)
    with pytest.raises(NotImplementedError, match="det's second derivative of complex"):
        T.autograd.grad(g.sum(), x)
