"""Silent wrong numbers found by a differential hunt against torch 2.13 (operators, dtype
promotion, in-place operators, half-precision reductions): each test failed before its fix.

``test_fuzz_inplace_operators`` draws ``x op= y`` over dtypes, Python scalars and graph
states and checks it against PyTorch's rule (the result in ``x``'s dtype, an error where
the result's kind cannot be cast back); ``XAD_FUZZ_N=5000`` for the long run.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import xad


def _has(xb, *names: str) -> bool:
    try:
        for n in names:
            xb.dtype(getattr(xad, n))
    except Exception:
        return False
    return True


@pytest.mark.parametrize("other", ["int8", "uint8", "int32", "int64", "bool"])
def test_integer_with_float16_tensor_divides_in_float16(xb, other):
    """``int / float16`` is float16 (PyTorch's and the promotion table's), not float32: the
    integer used to become the default float before meeting the float16."""
    if not _has(xb, "float16"):
        pytest.skip(f"{xb.name} has no float16")
    i = xad.tensor([1, 0, 1] if other == "bool" else [1, 2, 3], dtype=getattr(xad, other))
    h = xad.tensor([3.0, 7.0, 0.1], dtype=xad.float16)
    ti = torch.tensor(i.numpy())
    th = torch.tensor(h.numpy())
    for got, want in ((i / h, ti / th), (h / i, th / ti), (xad.atan2(i, h), torch.atan2(ti, th))):
        assert got.dtype is xad.float16
        np.testing.assert_array_equal(got.numpy(), want.numpy())


# ----- in-place operators ----------------------------------------------------------------
_IOPS = {"+=": "__iadd__", "-=": "__isub__", "*=": "__imul__", "/=": "__itruediv__",
         "//=": "__ifloordiv__", "%=": "__imod__", "**=": "__ipow__", "&=": "__iand__",
         "|=": "__ior__", "^=": "__ixor__", "<<=": "__ilshift__", ">>=": "__irshift__"}
_IDT = ["bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64"]


def _outcome(fn):
    try:
        alias, whole = fn()
    except Exception:
        return "raises"
    return [(str(t.dtype).rsplit(".", 1)[-1], np.asarray(t.detach().cpu().numpy()
                                                         if isinstance(t, torch.Tensor)
                                                         else t.numpy()))
            for t in (alias, whole)]


def _inplace_case(rng, xb, n_case: int) -> str | None:
    sym = list(_IOPS)[rng.integers(len(_IOPS))]
    dts = [d for d in _IDT if d != "float16" or _has(xb, "float16")]
    a = dts[rng.integers(len(dts))]
    mode = ["leaf", "view", "non-leaf"][rng.integers(3)]
    if mode == "non-leaf" and not a.startswith("float"):
        mode = "leaf"
    xv = rng.integers(0 if a in ("uint8", "bool") else -5, 2 if a == "bool" else 7, 4)
    if rng.random() < 0.5:  # a tensor operand (positive: no zero divisors, shifts in range)
        b = dts[rng.integers(len(dts))]
        ov = rng.integers(1, 2 if b == "bool" else 4, 4)
        other = lambda m: m.tensor(ov.astype(b), dtype=getattr(m, b))  # noqa: E731
    else:
        b = [True, 2, 1.5][rng.integers(3)]
        other = lambda m: b  # noqa: E731
    if (sym == "-=" and (a == "bool" or b is True or b == "bool")) or (
            a == "bool" and sym in ("**=", "<<=", ">>=", "//=", "%=")):
        return None  # PyTorch refuses bool subtraction and arithmetic; xad computes them
    if a == "bool" and xb.name == "array_api_strict" and sym in ("+=", "*=", "/="):
        return None  # the standard has no arithmetic on bools (out of place neither)

    def run(m):
        x = m.tensor(xv.astype(a), dtype=getattr(m, a))
        if mode == "non-leaf":
            w = m.tensor(xv.astype(a), dtype=getattr(m, a), requires_grad=True)
            x = w * 1
        alias = x[1:]
        with m.no_grad():
            out = getattr(x, _IOPS[sym])(other(m))
        assert out is x
        return alias, x

    want, got = _outcome(lambda: run(torch)), _outcome(lambda: run(xad))
    what = f"case {n_case}: {mode} {a}[4] {sym} {b!r} on {xb.name}: xad {got}, torch {want}"
    if want == "raises" or got == "raises":
        assert want == got, what
        return sym
    for (dg, vg), (dw, vw) in zip(got, want):
        assert dg == dw, what
        np.testing.assert_allclose(vg.astype(float), vw.astype(float), rtol=2e-3, err_msg=what)
    return sym


def test_fuzz_inplace_operators(xb):
    """``x op= y`` keeps ``x``'s dtype and memory (its views see the change) or raises, as
    PyTorch's; seeded, ``XAD_FUZZ_N`` cases (40 by default) per backend."""
    n = int(os.environ.get("XAD_FUZZ_N", "40"))
    rng = np.random.default_rng(7)
    done = sum(_inplace_case(rng, xb, k) is not None for k in range(n))
    assert done > n // 2


def test_inplace_operators_change_the_tensor_and_its_views(xb):
    """``x //= 2`` (and ``%=``, ``**=``, ``&=``, ...) change ``x`` itself, so a view sees it;
    without the in-place methods Python rebound ``x`` to a new tensor and the view kept the
    old values."""
    x = xad.tensor([7, -7, 9])
    v, same = x[1:], x
    x //= 2
    x %= 3
    x **= 2
    x <<= 1
    x |= 1
    x ^= 2
    x &= 7
    x >>= 1
    assert x is same and x.tolist() == [1, 1, 0] and v.tolist() == [1, 0]
    f = xad.tensor([7.5, -7.5])
    a = f[:1]
    f //= 2
    f %= 1.5
    assert f.tolist() == [0.0, 0.5] and a.tolist() == [0.0]


def test_inplace_result_keeps_the_dtype_or_raises(xb):
    """An unrecorded ``x op= y`` promoted by the backend's rules: on JAX an int tensor
    became float (``+= 1.5``), and under ``no_grad`` a float32 non-leaf became float64
    (``+= float64``) or complex; PyTorch keeps ``x``'s dtype or raises."""
    i = xad.tensor([1, 2])
    for bad in (lambda: i.__iadd__(1.5), lambda: i.__itruediv__(2),
                lambda: i.clamp_(0.5, 1.5), lambda: i.__imul__(xad.tensor([0.5, 0.5]))):
        with pytest.raises(TypeError, match="cannot be cast back"):
            bad()
    assert i.dtype is xad.int64 and i.tolist() == [1, 2]
    w = xad.tensor([1.0, 2.0], requires_grad=True)
    y = w * 1
    with xad.no_grad():
        y += xad.tensor([0.25, 0.5], dtype=xad.float64)
        y /= xad.tensor([2, 4])
        with pytest.raises(TypeError, match="cannot be cast back"):
            y *= 1j
    assert y.dtype is xad.float32 and y.tolist() == [0.625, 0.625]
    u = xad.tensor([250, 3], dtype=xad.uint8)
    u += xad.tensor([10, -5], dtype=xad.int8)  # computed in int16, wrapped into uint8
    assert u.dtype is xad.uint8 and u.tolist() == [4, 254]
    z = w * 1  # recorded: the cast back is part of the graph
    z += xad.tensor([1.0, 1.0], dtype=xad.float64) * w.astype(xad.float64)
    z.sum().backward()
    assert z.dtype is xad.float32 and w.grad.tolist() == [2.0, 2.0]


# ----- half precision: statistics accumulated in float32 ---------------------------------
@pytest.mark.parametrize("name", ["mean", "var", "std", "sum", "cumsum", "layer_norm",
                                  "group_norm", "batch_norm", "standardize", "mse_loss",
                                  "norm", "softmax", "log_softmax"])
def test_half_precision_statistics_accumulate_in_float32(xb, name):
    """A float16 mean of 100,000 ones was inf and the layer norm of 3,000 values of 30 NaN
    (the sums overflowed at 65504, or stopped growing at 2048); PyTorch accumulates half
    precision in float32 and rounds the result once."""
    if not _has(xb, "float16"):
        pytest.skip(f"{xb.name} has no float16")
    base = np.full((2, 3000), 30.0, dtype=np.float16)
    base[:, 0] = 31.0
    ones = np.ones(70000, dtype=np.float16)
    F, tF = xad.nn.functional, torch.nn.functional
    cases = {
        "mean": (lambda m, t: t.mean(), ones), "var": (lambda m, t: t.var(dim=1), base),
        "std": (lambda m, t: t.std(), base), "sum": (lambda m, t: t[:40000].sum(), ones),
        "cumsum": (lambda m, t: t.cumsum(0)[2040:2060], ones),
        "layer_norm": (lambda m, t: (F if m is xad else tF).layer_norm(
            t, (3000,), m.ones(3000, dtype=m.float16), m.zeros(3000, dtype=m.float16)), base),
        "group_norm": (lambda m, t: (F if m is xad else tF).group_norm(t[None], 1), base),
        "batch_norm": (lambda m, t: (F if m is xad else tF).batch_norm(
            t.T, None, None, training=True), base),
        "standardize": (lambda m, t: xad.standardize(t, -1) if m is xad else
                        tF.layer_norm(t, (3000,)), base),
        "mse_loss": (lambda m, t: (F if m is xad else tF).mse_loss(t, t * 0 + 25.0), base),
        "norm": (lambda m, t: t.norm(), base),
        "softmax": (lambda m, t: (F if m is xad else tF).softmax(t * 0, 0)[:3], ones),
        "log_softmax": (lambda m, t: (F if m is xad else tF).log_softmax(t * 0, 0)[:3],
                        ones[:30000]),  # (PyTorch's own is -inf from 65504 on)
    }
    fn, data = cases[name]
    got = fn(xad, xad.tensor(data))
    want = fn(torch, torch.tensor(data))
    assert got.dtype is xad.float16
    np.testing.assert_allclose(got.numpy().astype(float), want.numpy().astype(float),
                               rtol=2e-3, atol=0 if "softmax" in name else 2e-3)


def test_half_precision_layer_norm_gradient(xb):
    """The gradient of a float16 layer norm flows through the float32 statistics and comes
    back in float16, with the values of float32 arithmetic."""
    if not _has(xb, "float16"):
        pytest.skip(f"{xb.name} has no float16")
    data = np.random.default_rng(0).normal(30.0, 0.5, (2, 3000)).astype(np.float16)
    x = xad.tensor(data, requires_grad=True)
    w = xad.ones(3000, dtype=xad.float16, requires_grad=True)
    y = xad.nn.functional.layer_norm(x, (3000,), w, xad.zeros(3000, dtype=xad.float16))
    (y[:, :5] * 3).sum().backward()
    r = torch.tensor(data.astype(np.float32), requires_grad=True)
    rw = torch.ones(3000, requires_grad=True)
    (torch.nn.functional.layer_norm(r, (3000,), rw)[:, :5] * 3).sum().backward()
    assert x.grad.dtype is xad.float16 and w.grad.dtype is xad.float16
    np.testing.assert_allclose(x.grad.numpy().astype(float), r.grad.numpy(), rtol=1e-2,
                               atol=2e-3)
    np.testing.assert_allclose(w.grad.numpy().astype(float), rw.grad.numpy(), rtol=1e-2,
                               atol=2e-3)


def test_integer_floor_division_by_the_number_zero_raises(xb):
    """``int_tensor // 0`` and ``% 0`` raise ZeroDivisionError as Python's and PyTorch's
    (the libraries answered 0); floats keep IEEE's inf and NaN."""
    t = xad.tensor([3, -3])
    for bad in (lambda: t // 0, lambda: t % 0, lambda: t % False, lambda: xad.floor_divide(t, 0),
                lambda: xad.remainder(xad.tensor([True]), 0), lambda: t.__ifloordiv__(0)):
        with pytest.raises(ZeroDivisionError, match="integer division by zero"):
            bad()
    assert t.tolist() == [3, -3]
    with np.errstate(all="ignore"):
        f = xad.tensor([3.0, -3.0])
        assert (f // 0).tolist() == [np.inf, -np.inf] and np.isnan((f % 0).numpy()).all()
    assert (t // 2).tolist() == [1, -2] and (t % -2).tolist() == [-1, -1]


def test_power_base_gradient_at_zero_with_a_zero_exponent_tensor(xb):
    """``x ** y`` with a tensor exponent: the base's gradient is 0 where ``y == 0`` (PyTorch's,
    and xad's own for a number exponent), not ``0 * inf = NaN`` at ``x == 0``: polynomial
    features ``x[:, None] ** arange(4)`` of a zero gave NaN gradients."""
    x = xad.tensor([0.0, 1.5], dtype=xad.float64, requires_grad=True)
    w = xad.tensor([1.0, 2.0, 3.0, 4.0], dtype=xad.float64)
    ((x[:, None] ** xad.arange(4)) * w).sum().backward()
    r = torch.tensor([0.0, 1.5], dtype=torch.float64, requires_grad=True)
    ((r[:, None] ** torch.arange(4)) * torch.tensor([1.0, 2, 3, 4],
                                                   dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), r.grad.numpy())
    assert x.grad.tolist() == [2.0, 38.0]
    t = xad.tensor([0.0, 0.0], dtype=xad.float64, requires_grad=True)
    e = xad.tensor([0.0, 2.0], dtype=xad.float64, requires_grad=True)
    _, tangent = xad.jvp(lambda a: a ** e, (t,), (xad.ones(2, dtype=xad.float64),))
    assert tangent.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("form", ["cross_entropy", "nll_loss", "smoothing", "weight",
                                  "second_order"])
def test_every_target_ignored_gives_zero_gradients(xb, form):
    """A batch whose targets are all ``ignore_index`` (padding only): the mean loss is NaN
    (0 / 0) in both libraries, but PyTorch's gradient is 0 where xad's was NaN everywhere
    (``g / 0 = inf`` times the ignored rows' zeros), which ruined a whole model in one step."""
    F = xad.nn.functional
    x = xad.tensor([[1.0, 2.0, 0.5], [0.5, 0.1, -1.0]], requires_grad=True)
    t = xad.tensor([-100, -100])
    loss = {"cross_entropy": lambda: F.cross_entropy(x, t),
            "nll_loss": lambda: F.nll_loss(F.log_softmax(x, 1), t),
            "smoothing": lambda: F.cross_entropy(x, t, label_smoothing=0.1),
            "weight": lambda: F.nll_loss(x, t, weight=xad.tensor([1.0, 2.0, 3.0])),
            "second_order": lambda: F.cross_entropy(x, t)}[form]()
    assert np.isnan(loss.item())
    if form == "second_order":
        (g,) = xad.autograd.grad(loss, [x], create_graph=True)
    else:
        loss.backward()
        g = x.grad
    assert g.tolist() == [[0.0] * 3] * 2
    y = F.cross_entropy(x, xad.tensor([1, -100]))  # some targets counted: as before
    r = torch.nn.functional.cross_entropy(torch.tensor(x.numpy()), torch.tensor([1, -100]))
    assert abs(y.item() - r.item()) < 1e-6


def test_integer_tensor_meets_a_python_int_beyond_its_dtype(xb):
    """A Python int outside the tensor's integer range: comparisons answer as the numbers
    compare on every backend (PyTorch and JAX wrapped it into the dtype: ``int32_t < 2**31``
    was all False, ``t == 2**40`` true at 0); arithmetic raises, as NumPy's."""
    t = xad.tensor([-7, 0, 2147483647], dtype=xad.int32)
    assert (t < 2**31).tolist() == [True] * 3 and (2**31 <= t).tolist() == [False] * 3
    assert (t == 2**40).tolist() == [False] * 3 and (2**40 != t).tolist() == [True] * 3
    assert (t > -(2**70)).tolist() == [True] * 3 and (t >= 2**64).tolist() == [False] * 3
    u = xad.tensor([0, 255], dtype=xad.uint8)
    assert (u > -1).tolist() == [True, True] and (u == 256).tolist() == [False, False]
    assert (xad.tensor([5]) < 2**63).tolist() == [True]
    for bad in (lambda: t + 2**40, lambda: 2**40 * t, lambda: u - (-1), lambda: t & 2**33):
        with pytest.raises(OverflowError, match="outside the range"):
            bad()
    assert (t + 1).dtype is xad.int32 and (t < 5).dtype is xad.bool


def test_half_precision_with_a_number_beyond_its_range(xb):
    """A float16 tensor with a Python number outside float16's normal range is computed in
    float32 and rounded once, as PyTorch's: the attention-mask idiom ``s + (1 - mask) *
    -1e9`` gave NaN at every unmasked score (``0 * -inf``), ``x / 1e5`` gave 0."""
    if not _has(xb, "float16"):
        pytest.skip(f"{xb.name} has no float16")
    cases = [lambda m, s, k: s + (1 - k) * -1e9, lambda m, s, k: k * -1e9,
             lambda m, s, k: -1e9 * k, lambda m, s, k: s / 1e5, lambda m, s, k: s * 1e-8,
             lambda m, s, k: 1e5 / s, lambda m, s, k: s * 100000, lambda m, s, k: s - 70000.0,
             lambda m, s, k: s == 70000.0, lambda m, s, k: s + 1.0]
    for i, f in enumerate(cases):
        got = f(xad, xad.tensor([1.0, 2.0, 3.0], dtype=xad.float16),
                xad.tensor([0.0, 1.0, 0.0], dtype=xad.float16))
        want = f(torch, torch.tensor([1.0, 2.0, 3.0], dtype=torch.float16),
                 torch.tensor([0.0, 1.0, 0.0], dtype=torch.float16))
        assert str(got.dtype).rsplit(".")[-1] == str(want.dtype).rsplit(".")[-1], i
        np.testing.assert_allclose(got.numpy().astype(float), want.numpy().astype(float),
                                   rtol=1e-3, err_msg=f"case {i}")  # (1e5 / 3: PyTorch's
        # reciprocal-multiply is an ulp off where xad's division rounds correctly)


def test_softmax_of_integers_is_the_default_float(xb):
    """``softmax`` of an integer tensor is in the default floating dtype, as ``log_softmax``
    and ``exp`` (NumPy's exp of int32 made it float64)."""
    t = xad.tensor([[1, 2], [3, 4]], dtype=xad.int32)
    assert xad.softmax(t).dtype is xad.float32 and xad.log_softmax(t).dtype is xad.float32
    np.testing.assert_allclose(xad.softmax(t).numpy(),
                               torch.softmax(torch.tensor([[1.0, 2], [3, 4]]), -1).numpy(),
                               rtol=1e-6)


def test_masked_fill_keeps_the_tensor_dtype(xb):
    """``x.masked_fill(mask, number)`` is in ``x``'s dtype, as PyTorch's (an int tensor with
    0.5 became float32, with 0.5 in it)."""
    x = xad.tensor([1, 2, 3], dtype=xad.int32)
    k = xad.tensor([True, False, True])
    for v, want in ((0.5, [0, 2, 0]), (-2.7, [-2, 2, -2]), (9, [9, 2, 9])):
        y = x.masked_fill(k, v)
        assert y.dtype is xad.int32 and y.tolist() == want
    assert (x > 1).masked_fill(k, 2).dtype is xad.bool
    f = xad.tensor([1.0, 2.0], requires_grad=True)
    f.masked_fill(xad.tensor([True, False]), 5).sum().backward()
    assert f.grad.tolist() == [0.0, 1.0]
