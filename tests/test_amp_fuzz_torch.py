"""A differential fuzzer of mixed precision under ``xad.as_torch`` against PyTorch's CPU
autocast (the oracle): random small programs run under ``torch.autocast("cpu", dtype)``
(float16 where the backend has it, bfloat16 where it has that) with the same float32 inputs.

A program starts from one of the float32 leaves through an operation on autocast's
lower-precision list (``@``, ``matmul``, ``mm``, ``bmm``, ``F.linear``, ``einsum``,
``conv1d``) or an explicit cast (``.half()``/``.to(low)``, ``.float()``), then applies a
chain of steps: activations, ``softmax``/``log_softmax``, ``layer_norm``, reductions kept as
a column, elementwise mixes with a float32 tensor and Python numbers, a product with a
float32 matrix, a product inside a nested ``autocast(enabled=False)`` (with and without a
``.float()`` first: PyTorch refuses mixed dtypes there), in-place ops on the running value
(``add_`` of a float32 tensor, ``mul_``, ``relu_``, ``clamp_``: PyTorch's refusals, after an
op that saved its output, must be xad's), and losses (their float32 result scales a float32
tensor). The result's dtype must be PyTorch's exactly, its value agree within the low
dtype's rounding, and the gradients of the float32 leaves (a ``.float()`` loss, at times
scaled by ``GradScaler.scale``: a low gradient that overflows is inf where PyTorch's is) too,
with ``.grad`` in float32 and ``None`` where PyTorch's is.

Where xad's autocast lists differ from PyTorch's CPU lists on purpose (docs/PORTING.md, the
``torch.autocast("cpu")`` rows), the step is in ``FLOAT32_HERE`` (PyTorch's step gets its
input in float32, as xad computes it) or ``LOW_HERE`` (PyTorch's result is cast to the low
dtype), and the chain goes on.

``XAD_FUZZ_N`` sets the programs (default 30 on NumPy and torch, 8 on the other backends;
the long run: 3000). A failure names its seed: replay it with ``XAD_FUZZ_SEED=<seed>
XAD_FUZZ_N=1``.
"""

from __future__ import annotations

import collections
import os
import random
import warnings

import numpy as np
import pytest
from test_amp_torch import _off, _on  # autocast off / on again around fn()

import xad
from xad import as_torch

torch = pytest.importorskip("torch")
T = as_torch.namespace()["torch"]

N = int(os.environ.get("XAD_FUZZ_N", "0")) or None
SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))

SHAPES = {"a": (4, 6), "b": (6, 5), "w": (5, 6), "c": (5,), "p": (5, 5), "f": (4, 5)}
TARGET = [0, 2, 1, 4]

# name -> f(M, F, L, lo): the program's first value, shape (4, 5); L the leaves by name
SOURCES = {
    "@": lambda M, F, L, lo: L["a"] @ L["b"],
    "matmul": lambda M, F, L, lo: M.matmul(L["a"], L["b"]),
    "mm": lambda M, F, L, lo: M.mm(L["a"], L["b"]),
    "bmm": lambda M, F, L, lo: M.bmm(L["a"][None], L["b"][None])[0],
    "linear": lambda M, F, L, lo: F.linear(L["a"], L["w"], L["c"]),
    "linear, no bias": lambda M, F, L, lo: F.linear(L["a"], L["w"]),
    "einsum": lambda M, F, L, lo: M.einsum("ij,jk->ik", L["a"], L["b"]),
    "conv1d": lambda M, F, L, lo: F.conv1d(L["a"][None], L["w"][:, :4, None],
                                           L["c"])[0, :, :4].T,
    "addmm": lambda M, F, L, lo: M.addmm(L["c"], L["a"], L["w"].T),
    "vecdot": lambda M, F, L, lo: M.linalg.vecdot(L["a"][:, None, :], L["w"][None]),
    "dot": lambda M, F, L, lo: M.dot(L["c"], L["f"][0]) * L["f"],
    "mv": lambda M, F, L, lo: M.stack([M.mv(L["w"], L["a"][i]) for i in range(4)]),
    "low cast": lambda M, F, L, lo: L["f"].to(lo),
    "float32": lambda M, F, L, lo: L["f"] * 1.0,
}

# name -> f(M, F, y, L, lo): one step on the running value y (shape (4, 5))
STEPS = {
    "relu": lambda M, F, y, L, lo: M.relu(y), "gelu": lambda M, F, y, L, lo: F.gelu(y),
    "gelu tanh": lambda M, F, y, L, lo: F.gelu(y, approximate="tanh"),
    "silu": lambda M, F, y, L, lo: F.silu(y), "tanh": lambda M, F, y, L, lo: M.tanh(y),
    "sigmoid": lambda M, F, y, L, lo: M.sigmoid(y),
    "hardtanh": lambda M, F, y, L, lo: F.hardtanh(y, -0.5, 0.75),
    "relu6": lambda M, F, y, L, lo: F.relu6(y * 4.0),
    "hardsigmoid": lambda M, F, y, L, lo: F.hardsigmoid(y),
    "hardswish": lambda M, F, y, L, lo: F.hardswish(y),
    "leaky_relu": lambda M, F, y, L, lo: F.leaky_relu(y, 0.1),
    "elu": lambda M, F, y, L, lo: F.elu(y), "mish": lambda M, F, y, L, lo: F.mish(y),
    "selu": lambda M, F, y, L, lo: F.selu(y), "celu": lambda M, F, y, L, lo: F.celu(y, 0.5),
    "logsigmoid": lambda M, F, y, L, lo: F.logsigmoid(y),
    "softsign": lambda M, F, y, L, lo: F.softsign(y),
    "prelu": lambda M, F, y, L, lo: F.prelu(y, L["c"][:1]),
    "abs": lambda M, F, y, L, lo: M.abs(y), "neg": lambda M, F, y, L, lo: -y,
    "clamp": lambda M, F, y, L, lo: M.clamp(y, -1.0, 0.5),
    "times a number": lambda M, F, y, L, lo: y * 0.3,
    "plus a number": lambda M, F, y, L, lo: y + 1.5,
    "number minus": lambda M, F, y, L, lo: 2.0 - y,
    "over a number": lambda M, F, y, L, lo: y / 3.0,
    "square": lambda M, F, y, L, lo: y * y,
    "sqrt": lambda M, F, y, L, lo: M.sqrt(M.abs(y) + 1.0),
    "float": lambda M, F, y, L, lo: y.float(),
    "to low": lambda M, F, y, L, lo: y.to(lo),
    "plus float32": lambda M, F, y, L, lo: y + L["f"],
    "times float32": lambda M, F, y, L, lo: y * L["f"],
    "float32 minus": lambda M, F, y, L, lo: L["f"] - y,
    "plus float32 row": lambda M, F, y, L, lo: y + L["c"],
    "where float32": lambda M, F, y, L, lo: M.where(L["f"] > 0, y, L["f"]),
    "maximum float32": lambda M, F, y, L, lo: M.maximum(y, L["f"]),
    "cat float32": lambda M, F, y, L, lo: M.cat([y, L["f"]])[2:6],
    "times 0-d float32": lambda M, F, y, L, lo: y * L["c"][1],
    "@ float32": lambda M, F, y, L, lo: y @ L["p"],
    "linear float32": lambda M, F, y, L, lo: F.linear(y, L["p"], L["c"]),
    "@ off, float": lambda M, F, y, L, lo: _off(M, lambda: y.float() @ L["p"]),
    "@ off": lambda M, F, y, L, lo: _off(M, lambda: y @ L["p"]),
    "off, on again": lambda M, F, y, L, lo: _off(M, lambda: _on(M, lo, lambda: y @ L["p"])),
    "relu off": lambda M, F, y, L, lo: _off(M, lambda: M.relu(y) + L["f"]),
    "add_ float32": lambda M, F, y, L, lo: y.add_(L["f"]),
    "mul_": lambda M, F, y, L, lo: y.mul_(0.5),
    "relu_": lambda M, F, y, L, lo: y.relu_(),
    "clamp_": lambda M, F, y, L, lo: y.clamp_(-1.0, 1.0),
    "float32 add_": lambda M, F, y, L, lo: (L["f"] * 1.0).add_(y),
    "max keepdim": lambda M, F, y, L, lo: y.amax(dim=-1, keepdim=True) + y,
    "max index": lambda M, F, y, L, lo: y.max(dim=0).values + y,
    "softmax": lambda M, F, y, L, lo: M.softmax(y, dim=-1),
    "log_softmax": lambda M, F, y, L, lo: F.log_softmax(y, dim=0),
    "layer_norm": lambda M, F, y, L, lo: F.layer_norm(y, (5,), L["c"], L["c"]),
    "sum keepdim": lambda M, F, y, L, lo: y.sum(dim=1, keepdim=True) * y,
    "mean": lambda M, F, y, L, lo: y - y.mean(),
    "exp": lambda M, F, y, L, lo: M.exp(y * 0.5),
    "pow": lambda M, F, y, L, lo: y ** 2,
    "cross_entropy": lambda M, F, y, L, lo: F.cross_entropy(y, M.tensor(TARGET)) * L["f"],
    "mse_loss": lambda M, F, y, L, lo: F.mse_loss(y, L["f"]) * L["f"],
    "l1_loss": lambda M, F, y, L, lo: F.l1_loss(y, L["f"] * 0.5) + y,
}
# xad's results are float32 where PyTorch's CPU autocast gives the low dtype, on purpose
# (docs/PORTING.md, the ``torch.autocast("cpu")`` rows): its float32 list is CUDA's on every
# device (softmax, log_softmax, layer_norm, sum, mean, exp, pow); a 0-d float32 tensor with a
# low one promotes by the standard's rule (the ``float16[3] * float32[]`` row of the dtype
# table; "l1_loss" adds its 0-d loss to the low value)
FLOAT32_HERE = {"softmax", "log_softmax", "layer_norm", "sum keepdim", "mean", "exp", "pow",
                "times 0-d float32", "l1_loss"}
# and the reverse: xad's low list is CUDA's, which has mv (PyTorch's CPU one has not; the
# ``mv`` row)
LOW_HERE = {"mv"}
# PyTorch refuses a product of float16/bfloat16 and float32 outside autocast; xad promotes
# (the standard's rule; docs/PORTING.md, the row of ``@`` with float16 and float32)
MIXED_PRODUCT = "expected m1 and m2 to have the same dtype"
# PyTorch's relu_ keeps its result for backward, so a later in-place change raises there;
# xad's keeps what it reads and gives the exact gradient (docs/PORTING.md, the row of an
# in-place operation whose rule reads its own result)
OWN_RESULT = ("relu_", "one of the variables needed for gradient computation has been "
                       "modified by an inplace operation")
# the points where a step's derivative jumps (as functions of its input): a low-precision
# value an ulp from one rounds onto it in one library, not the other, and the gradients
# differ there by the jump; such programs compare values only
KINKS = {"relu": (0,), "relu_": (0,), "abs": (0,), "hardtanh": (-0.5, 0.75),
         "relu6": (0, 1.5), "hardsigmoid": (-3, 3), "hardswish": (-3, 3),
         "leaky_relu": (0,), "clamp": (-1, 0.5), "clamp_": (-1, 1), "prelu": (0,),
         "sqrt": (0,), "elu": (0,), "selu": (0,), "celu": (0,)}


def _name(t) -> str:
    return str(t.dtype).split(".")[-1]


def _program(rng: random.Random) -> tuple[list[str], float]:
    """The steps, and the ``GradScaler`` scale of the loss (1: no scaler)."""
    steps = [rng.choice(sorted(SOURCES))] + [rng.choice(sorted(STEPS))
                                             for _ in range(rng.randint(1, 4))]
    return steps, rng.choice([1.0, 1.0, 1024.0, 2.0 ** 16])


def _run(M, prog, data, low, weights, scale=1.0):
    """(result dtype, value, gradients, kinked) of ``prog`` on ``M``, or ``("raised",
    message)``; the loss scaled by a ``GradScaler`` unless ``scale`` is 1."""
    F, lo, kinked = M.nn.functional, getattr(M, low), False
    leaves = {k: M.tensor(v, dtype=M.float32, requires_grad=True) for k, v in data.items()}
    try:
        with M.autocast("cpu", dtype=lo):
            y = SOURCES[prog[0]](M, F, leaves, lo)
            if M is torch and prog[0] in LOW_HERE:
                y = y.to(lo)
            for name in prog[1:]:
                kinked = kinked or _near(y, KINKS.get(name, ()), low)
                if M is torch and name in FLOAT32_HERE and y.dtype == lo:
                    y = y.float()  # PyTorch computes it as xad does: from float32
                y = STEPS[name](M, F, y, leaves, lo)
        value = _float(y)
        loss = (y.float() * M.tensor(weights)).sum()
        if scale != 1.0:  # the gradients scaled (inf where a low one overflows), as PyTorch's
            loss = M.amp.GradScaler("cpu", init_scale=scale).scale(loss)
        loss.backward()
    except (RuntimeError, TypeError, ValueError) as e:
        return ("raised", type(e).__name__ + ": " + str(e)[:120])
    grads = {k: None if t.grad is None else (_name(t.grad), _numpy(t.grad) / scale)
             for k, t in leaves.items()}
    return _name(y), value, grads, kinked


def _float(t):
    """``t``'s values as a float32 NumPy array."""
    return t.detach().float().numpy() if isinstance(t, torch.Tensor) else _numpy(
        t.detach().astype(xad.float32))


def _near(y, points, low) -> bool:
    """Whether ``y`` holds a value within a few of ``low``'s ulps of one of ``points``,
    not on it."""
    if not points:
        return False
    d = np.abs(_float(y)[..., None] - np.asarray(points, dtype=np.float32))
    eps = 4 * (2.0 ** -7 if low == "bfloat16" else 2.0 ** -10) * np.maximum(
        1.0, np.abs(np.asarray(points, dtype=np.float32)))
    return bool(np.any((d > 0) & (d <= eps)))


def _numpy(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.numpy()


def _check(seed: int, low: str) -> None:
    rng = random.Random(seed)
    prog, scale = _program(rng)
    scale = 1.0 if prog[0] in LOW_HERE else scale  # (PyTorch's mv backward is float32)
    g = np.random.default_rng(seed)
    data = {k: g.standard_normal(s).astype(np.float32) for k, s in SHAPES.items()}
    weights = g.standard_normal((4, 5)).astype(np.float32)
    what = f"seed {seed}, {low}: {prog}, scale {scale}"
    want = _run(torch, prog, data, low, weights, scale)
    got = _run(T, prog, data, low, weights, scale)
    if want[0] == "raised" and (MIXED_PRODUCT in want[1] or (
            OWN_RESULT[0] in prog and OWN_RESULT[1] in want[1])):
        return
    assert (got[0] == "raised") == (want[0] == "raised"), f"{what}: xad {got}, PyTorch {want}"
    if want[0] == "raised":
        return
    assert got[0] == want[0], f"{what}: dtype {got[0]}, PyTorch {want[0]}"
    tol = 5e-2 if low == "bfloat16" else 1e-2
    _close(got[1], want[1], tol, f"{what}: value")
    if got[3] or want[3]:
        return  # a kink met an ulp away: the gradients differ by its jump
    if scale != 1.0:  # GradScaler's question: whether any gradient overflowed (where, and
        found = [not all(np.isfinite(t[1]).all() for t in r[2].values() if t is not None)
                 for r in (got, want)]  # inf or NaN, is each backward kernel's rounding)
        assert found[0] == found[1], f"{what}: an overflow {found[0]}, PyTorch's {found[1]}"
        if found[1]:
            return
    for k, w in want[2].items():
        gk = got[2][k]
        assert (gk is None) == (w is None), f"{what}: gradient of {k} {gk}, PyTorch {w}"
        if w is not None:
            assert gk[0] == w[0] == "float32", f"{what}: gradient of {k} in {gk[0]}"
            try:
                _close(gk[1], w[1], 3 * tol, f"{what}: gradient of {k}")
            except AssertionError:  # PyTorch's own rounding, or xad's error?
                if not _no_further(gk[1], w[1], _reference(prog, data, weights, scale)[k],
                                   tol, f"{what}: gradient of {k}"):
                    raise


def _reference(prog, data, weights, scale) -> dict:
    """The gradients of ``prog`` without autocast (PyTorch's, in float32, float64 where a
    step casts to the low dtype); every one ``None`` where that raises."""
    with warnings.catch_warnings():  # autocast of float64 ("off, on again"): disabled
        warnings.simplefilter("ignore")
        ref = _run(torch, prog, data, "float64", weights, scale)
    return collections.defaultdict(lambda: None) if ref[0] == "raised" else ref[2]


def _no_further(got, want, ref, tol, what) -> bool:
    """Whether PyTorch's gradient is off the reference ``ref`` by rounding alone (a gradient
    that cancels to about zero: seed 2477, bfloat16, of the long run, exactly 0 where
    PyTorch's is -2048 and xad's -3072, from values of 1e6); if so, xad's must be no
    further from ``ref`` than twice as far."""
    if ref is None or not np.isfinite(want).all():
        return False
    exact = ref[1].astype(np.float64)
    noise = float(np.abs(want - exact).max())
    np.testing.assert_allclose(got, exact, rtol=3 * tol, atol=2 * noise,
                               err_msg=f"{what}; PyTorch's {want}")
    return True


def _close(got, want, tol, what):
    assert got.shape == want.shape, f"{what}: shape {got.shape}, PyTorch {want.shape}"
    finite = np.isfinite(want)
    np.testing.assert_array_equal(np.isfinite(got), finite, err_msg=f"{what}: nonfinite")
    scale = max(1.0, float(np.abs(want[finite]).max(initial=0.0)))
    np.testing.assert_allclose(got[finite], want[finite], rtol=tol, atol=tol * scale,
                               err_msg=what)


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_autocast_programs_agree_with_pytorch(xb, low):
    if xb._dtypes.get(getattr(xad, low)) is None:
        with pytest.raises(TypeError, match=f"has no {low}"):
            with T.autocast("cpu", dtype=getattr(T, low)):
                pass
        return
    n = N or (30 if xb.name in ("numpy", "torch") else 8)
    for seed in range(SEED, SEED + n):
        _check(seed, low)


# name -> f(M, F, h, x, lo), h float16/bfloat16, x float32 (4, 5): each gave a dtype other
# than PyTorch's before its fix (values within rounding: no error to see)
REGRESSIONS = {
    "hardtanh (float32 outside autocast too)": lambda M, F, h, x, lo: F.hardtanh(h),
    "relu6 (float32)": lambda M, F, h, x, lo: F.relu6(h),
    "hardsigmoid (float32)": lambda M, F, h, x, lo: F.hardsigmoid(h),
    "elu (its expm1 in float32)": lambda M, F, h, x, lo: F.elu(h),
    "celu": lambda M, F, h, x, lo: F.celu(h), "selu": lambda M, F, h, x, lo: F.selu(h),
    "mish (its softplus in float32)": lambda M, F, h, x, lo: F.mish(h),
    "logsigmoid": lambda M, F, h, x, lo: F.logsigmoid(h),
    "prelu of a float32 weight (promoted)": lambda M, F, h, x, lo: F.prelu(h, x[0, :1]),
    "addmm (its float32 input promoted)": lambda M, F, h, x, lo: M.addmm(x[0, :4], x, x.T),
    "vecdot (its sum in float32)": lambda M, F, h, x, lo: M.linalg.vecdot(x, x),
    "dot (low; on neither list)": lambda M, F, h, x, lo: M.dot(x[0], x[1]),
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_autocast_regressions(xb, low, name):
    if xb._dtypes.get(getattr(xad, low)) is None:
        return  # (the fuzzer checks the refusal)
    g = np.random.default_rng(3)
    h0, x0 = g.standard_normal((4, 5)) * 3, g.standard_normal((4, 5))
    out = []
    for M in (torch, T):
        lo = getattr(M, low)
        h = M.tensor(h0, dtype=M.float32).to(lo).requires_grad_()
        x = M.tensor(x0, dtype=M.float32, requires_grad=True)
        with M.autocast("cpu", dtype=lo):
            y = REGRESSIONS[name](M, M.nn.functional, h, x, lo)
        y.float().sum().backward()
        out.append((_name(y), _float(y), [None if t.grad is None else (
            _name(t.grad), _float(t.grad)) for t in (h, x)]))
    (wd, wv, wg), (gd, gv, gg) = out
    assert gd == wd, f"{name}: {gd}, PyTorch {wd}"
    tol = 5e-2 if low == "bfloat16" else 1e-2
    _close(gv, wv, tol, name)
    for a, b in zip(gg, wg):
        assert (a is None) == (b is None) and (a is None or a[0] == b[0]), (name, a, b)
        if a is not None:
            _close(a[1], b[1], tol, f"{name}: gradient")
