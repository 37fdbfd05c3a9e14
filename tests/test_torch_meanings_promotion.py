"""PyTorch meanings of promotion, creation, integer arithmetic and complex numbers that a
probe of ``xad.as_torch`` against torch 2.13 (every dtype pair by every operator, the
factories' dtype rules, complex functions and their gradients) found giving other numbers
or dtypes without an error; each on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import xad
from xad import as_torch

torch = pytest.importorskip("torch")
from torch_reference import OLDER  # noqa: E402

T = as_torch.namespace()["torch"]


def _same(ours, theirs):
    assert str(ours.tolist()) == str(theirs.tolist())  # NaN and -0.0 too
    assert str(ours.dtype).rsplit(".")[-1] == str(theirs.dtype).rsplit(".")[-1]


def test_float_power_of_complex_keeps_the_imaginary_part(xb):
    """``float_power`` cast every tensor to float64: a complex base or exponent lost its
    imaginary part (``float_power(2.5+1j, 1+2j)`` was ``2.5 ** (1+2j)``); PyTorch computes
    in complex128 there."""
    cases = [([2.5 + 1j, -1.5 - 0.5j], 1 + 2j), ([5, 3], [2 + 0.5j, 1j]), ([2.0, 3.0], 2),
             ([2.0, 0.5], [1j, -1.0])]
    for base, exp in cases:
        ours = T.float_power(T.tensor(base), T.tensor(exp) if isinstance(exp, list) else exp)
        theirs = torch.float_power(torch.tensor(base),
                                   torch.tensor(exp) if isinstance(exp, list) else exp)
        assert ours.dtype == (xad.complex128 if theirs.is_complex() else xad.float64)
        assert ours.tolist() == pytest.approx(theirs.tolist(), rel=1e-12)


def test_linspace_of_complex_ends_and_integer_dtypes_as_torch(xb):
    """Complex ends gave a float32 tensor of their real parts (``linspace(0, 1j, 3)`` was
    zeros), and an integer dtype rounded the float values down where PyTorch truncates the
    ends and each value towards 0 (``linspace(-1, 1, 5, dtype=long)``: ``[-1, 0, 0, 0,
    1]``); ``logspace`` with an integer dtype takes the truncated ends' powers."""
    for args in ((0, 1j, 3), (1 + 1j, 2 + 3j, 4), (-1j, 2, 5)):
        ours, theirs = T.linspace(*args), torch.linspace(*args)
        assert ours.dtype == xad.complex64
        assert ours.tolist() == pytest.approx(theirs.tolist(), rel=1e-6)
    for args in ((-1, 1, 5), (0.5, 7.3, 6), (-2.7, 3.9, 9), (3, -4, 8), (0, 1, 1), (2, 9, 0)):
        for dt in ("int64", "int32", "int8"):
            _same(T.linspace(*args, dtype=getattr(T, dt)),
                  torch.linspace(*args, dtype=getattr(torch, dt)))
    for args, base in (((0.5, 2.5, 3), 10.0), ((0.5, 2.5, 3), 2.0), ((-1.5, 3.7, 4), 3.0)):
        _same(T.logspace(*args, base=base, dtype=T.int64),
              torch.logspace(*args, base=base, dtype=torch.int64))
    with pytest.raises(TypeError, match="complex dtype"):
        T.linspace(0, 1j, 3, dtype=T.float32)


def test_linspace_of_complex_ends_part_by_part_as_numpy(xb):
    """``xad.linspace`` with complex ends or a complex dtype spaces each part (CuPy's
    linspace raised for complex ends: it calls ``float(stop - start)``); complex ends give
    the default complex dtype, and refuse a real one rather than drop the imaginary parts."""
    for args, kw in (((1 + 1j, 2 + 3j, 4), {}), ((-1j, 2, 5), {"endpoint": False}),
                     ((0.5j, 1, 1), {}), ((0, 1j, 0), {}), ((-2, 3, 6), {"dtype": "complex128"}),
                     ((1 - 2j, -3 + 0.25j, 7), {"dtype": "complex128"})):
        ours = xad.linspace(*args, **kw)
        dt = kw.get("dtype", "complex64")
        assert ours.dtype == getattr(xad, dt)
        want = np.linspace(*args, endpoint=kw.get("endpoint", True)).astype(dt)
        np.testing.assert_allclose(np.array(ours.tolist(), dtype=dt), want, rtol=1e-6,
                                   atol=1e-12)  # (JAX: -2 + 2 * 1.0 is 2e-16)
    with pytest.raises(TypeError, match="complex dtype"):
        xad.linspace(0, 1j, 3, dtype=xad.float32)


@pytest.mark.parametrize("expr", [
    "z < w", "z <= 1", "(1+2j) > w", "z >= w.real", "t.gt(z, w)", "t.maximum(z, w)",
    "t.minimum(w, z)", "t.fmax(z, w)", "t.clamp(w.real, min=z)", "z.clamp(0, 1)",
    "w.real.clamp(max=z)", "t.tensor([True, False]) < (1+2j)",
])
def test_complex_numbers_have_no_order(xb, expr):
    """NumPy, CuPy and JAX order complex numbers by real then imaginary part, so ``z < w``,
    ``maximum``, ``fmax`` and ``clamp`` of complex tensors gave numbers there (PyTorch and
    array_api_strict raise, and so did xad on those backends)."""
    env = {"z": T.tensor([1 + 2j, -1j]), "w": T.tensor([1 + 1j, 2 + 0j]), "t": T}
    with pytest.raises(TypeError, match="no order"):
        eval(expr, env)
    with pytest.raises((RuntimeError, NotImplementedError, TypeError)):
        eval(expr, {"z": torch.tensor([1 + 2j, -1j]), "w": torch.tensor([1 + 1j, 2 + 0j]),
                    "t": torch})


def test_complex_order_refused_where_the_functions_take_their_arguments(xb):
    """The refusal sits in the functions (xad's dtypes), not in the kernels: a NumPy complex
    array or scalar, ``vmap`` and ``compile`` still meet it (a guard for moving it)."""
    x = T.tensor([1.0, 2.0])
    for f in (lambda: x < np.array([1j, 2j]), lambda: xad.maximum(x, np.complex128(1j)),
              lambda: x.clamp(max=np.array(1j)), lambda: xad.vmap(lambda r: r >= 1j)(x),
              lambda: xad.compile(lambda a: xad.minimum(a, 1j))(x),
              lambda: xad.clip(T.tensor([1j]), -1.0, 1.0)):
        with pytest.raises(TypeError, match="no order"):
            f()


@pytest.mark.parametrize("fill,dtype", [
    (2**40, "int8"), (300, "uint8"), (1e10, "int32"), (float("nan"), "int64"),
    (float("inf"), "int32"), (2**63, "int64"), (1e39, "float32"), (7e4, "float16"),
    (1 + 2j, "float64"), (1j, "int64"),
])
def test_full_refuses_a_fill_value_its_dtype_cannot_hold(xb, fill, dtype):
    """Each backend had its own number: NumPy INT_MIN for NaN into int64 and 0 for ``1j``
    into float32, JAX 44 for 300 into uint8, ``inf`` for ``7e4`` into float16; PyTorch
    refuses (``value cannot be converted ... without overflow``)."""
    if dtype == "float16" and xb.name == "array_api_strict":
        dtype = "float32"  # (no float16 there: the same check at float32's top)
        fill = 1e39
    with pytest.raises((OverflowError, TypeError), match="full"):
        T.full((2,), fill, dtype=getattr(T, dtype))
    with pytest.raises((OverflowError, TypeError), match="full"):
        T.full_like(T.zeros(2, dtype=getattr(T, dtype)), fill)
    with pytest.raises(RuntimeError):
        torch.full((2,), fill, dtype=getattr(torch, dtype))


def test_full_of_a_0d_tensor_and_requires_grad_of_the_like_factories(xb):
    """``full((2,), tensor(3))`` was float32 (PyTorch: the number's dtype, int64; bool for
    ``tensor(True)``); ``full_like``/``empty_like`` refused ``requires_grad=``."""
    for v in (3, True, 2.5, -1):
        _same(T.full((2,), T.tensor(v)), torch.full((2,), torch.tensor(v)))
    x, xt = T.tensor([1.0, 2.0], dtype=T.float64), torch.tensor([1.0, 2.0], dtype=torch.float64)
    for f in ("full_like", "empty_like"):
        args = (7,) if f == "full_like" else ()
        ours, theirs = getattr(T, f)(x, *args, requires_grad=True), \
            getattr(torch, f)(xt, *args, requires_grad=True)
        assert (ours.requires_grad, ours.dtype, ours.shape) == (True, xad.float64, (2,))
        assert theirs.requires_grad
    _same(T.full_like(x, 7, requires_grad=True).detach(),
          torch.full_like(xt, 7, requires_grad=True).detach())


def test_random_samples_refuse_an_integer_dtype(xb):
    """``rand``/``randn`` (and ``rand_like`` of an integer tensor) of an integer dtype were
    all zeros; PyTorch refuses."""
    for f in (lambda t: t.rand(3, dtype=t.int64), lambda t: t.randn(2, dtype=t.int32),
              lambda t: t.rand_like(t.tensor([1, 2])), lambda t: t.randn_like(t.tensor([True]))):
        with pytest.raises(TypeError, match="floating"):
            f(T)
        with pytest.raises((RuntimeError, NotImplementedError)):
            f(torch)


def test_arange_as_torch_for_every_dtype(xb):
    """With int32/int16/int8 PyTorch counts the length in floats and steps by the truncated
    step (``arange(2.5, dtype=int32)`` is ``[0, 1, 2]``, ``arange(0, 1, 0.25, dtype=int8)``
    four zeros): xad used int64's rule (``[0, 1]``, an error); float16 values were counted
    in float16 (``arange(0, 1, 0.1, dtype=half)[3]`` an ulp low); a 0-d integer tensor gave
    float32; ``arange(1, 0)`` was empty where PyTorch raises."""
    cases = [(2.5,), (0, 5, 1.5), (-5, 5, 1.5), (10, 0, -1.5), (0, 1, 0.25), (1, 2.6, 0.5),
             (-3.7, 4.2, 0.9), (0.5, 3.7, 1), (3, 3)]
    dts = ["int64", "int32", "int16", "int8", "float32", "float64", "float16", "bfloat16"]
    for args in cases:
        for dt in [d for d in dts if xb._dtypes.get(getattr(xad, d)) is not None]:
            try:
                if OLDER and dt == "int64" and len(args) == 3 and int(args[-1]) == 0:
                    raise RuntimeError("torch 2.11 dies of SIGFPE here; 2.13 raises")
                theirs = torch.arange(*args, dtype=getattr(torch, dt))
            except (RuntimeError, ValueError):  # (int64's step truncated to 0)
                with pytest.raises(ValueError, match="nonzero"):
                    T.arange(*args, dtype=getattr(T, dt))
                continue
            ours = T.arange(*args, dtype=getattr(T, dt))
            if dt == "float64":  # (torch's float64 lanes count from each vector's start)
                assert ours.tolist() == pytest.approx(theirs.tolist(), rel=1e-15, abs=1e-15)
            else:
                _same(ours, theirs)
    for args in ((T.tensor(5),), (0, T.tensor(3), 1), (T.tensor(4.5),)):
        theirs = [torch.tensor(a.item()) if isinstance(a, xad.Tensor) else a for a in args]
        _same(T.arange(*args), torch.arange(*theirs))
    for args in ((1, 0), (0, 3, -1), (0, 1, 0)):
        with pytest.raises(ValueError, match="arange"):
            T.arange(*args)
        with pytest.raises((RuntimeError, ValueError)):
            torch.arange(*args)


def test_complex_methods_angle_and_conj(xb):
    """``z.angle()``, ``z.conj()``, ``z.conj_physical()``, ``z.resolve_conj()`` were missing
    (AttributeError) though ``torch.angle``/``torch.conj`` ran; ``angle``'s gradient is
    PyTorch's (checked against it in float64)."""
    data = [0.5 + 1j, -1.5 + 0.25j, 2 - 0.5j, -1 + 0j]
    z, zt = T.tensor(data, dtype=T.complex128), torch.tensor(data, dtype=torch.complex128)
    for m in ("angle", "conj", "conj_physical", "resolve_conj", "resolve_neg"):
        if m == "angle" and xb.name == "cupy":  # CUDA's atan2 is within an ulp, not exact
            np.testing.assert_allclose(z.angle().numpy(), zt.angle().numpy(), rtol=4e-16)
            continue
        _same(getattr(z, m)(), getattr(zt, m)())
    _same(T.tensor([-1.0, 0.0, 2.0]).angle(), torch.tensor([-1.0, 0.0, 2.0]).angle())
    z.requires_grad_()
    zt.requires_grad_()
    w = [1.0, -2.0, 3.0, 0.5]
    (z.angle() * T.tensor(w, dtype=T.float64)).sum().backward()
    (zt.angle() * torch.tensor(w, dtype=torch.float64)).sum().backward()
    assert z.grad.tolist() == pytest.approx(zt.grad.tolist(), rel=1e-12)


def test_ldexp_in_the_result_dtype(xb):
    """``ldexp(float16, uint8)`` was float32 (``2**other`` made in the default dtype first) and
    a float16 exponent beside float64 was raised in float16 (``7.0703`` for PyTorch's
    ``7.0711``)."""
    cases = [("float16", [2, 3, -1], "int8"), ("float64", 1.5, "float16"),
             ("float32", [1, 2, 3], "int64"), ("int64", [1, 2, 3], "int32"),
             ("complex64", [2, 0, 1], "int32")]
    for xd, e, ed in cases:
        if xb._dtypes.get(xad.float16) is None and "float16" in (xd, ed):
            continue
        ours = T.ldexp(T.tensor([2.5, -1.5, 3.0], dtype=getattr(T, xd)) if xd != "int64" else
                       T.tensor([5, -3, 7]), T.tensor(e, dtype=getattr(T, ed)))
        theirs = torch.ldexp(torch.tensor([2.5, -1.5, 3.0], dtype=getattr(torch, xd))
                             if xd != "int64" else torch.tensor([5, -3, 7]),
                             torch.tensor(e, dtype=getattr(torch, ed)))
        _same(ours, theirs)


def test_clamp_of_bools_with_number_bounds_is_int64(xb):
    """``clamp(mask, min=2)`` was all True (the bound cast to bool); PyTorch promotes bools
    with a number to int64, as ``mask + 2``."""
    m = [True, False, True]
    for kw in ({"min": 2}, {"max": 2}, {"min": 0, "max": 1}, {"min": -1, "max": 0}):
        _same(T.clamp(T.tensor(m), **kw), torch.clamp(torch.tensor(m), **kw))
        _same(T.tensor(m).clamp(**kw), torch.tensor(m).clamp(**kw))


def test_complex_fill_of_masked_fill_and_where(xb):
    """A complex Python fill beside a complex tensor (``z.masked_fill(mask, 1j)``,
    ``where(mask, 1j, z)``) raised AttributeError from inside the kernel."""
    for t in (T, torch):
        z = t.tensor([1 + 2j, 3j, -1.0 + 0j])
        m = t.tensor([True, False, True])
        got = (z.masked_fill(m, 1j), t.where(m, 1j, z), t.where(m, z, 2 - 1j))
        if t is T:
            ours = got
        else:
            theirs = got
    for a, b in zip(ours, theirs):
        _same(a, b)


def test_tensor_of_a_list_holding_tensors_takes_their_dtype(xb):
    """``torch.tensor([x.sum(), 3])`` of a float64 ``x`` is float64 in PyTorch (its
    dtype and the Python numbers' promoted together); xad made every such list float32,
    rounding the float64 values (1.1 read back as 1.100000023841858)."""
    def cases(t):
        f64, i32 = t.tensor(1.1, dtype=t.float64), t.tensor(2, dtype=t.int32)
        return [[f64, 3], [i32, 3], [i32, True], [f64, 1j], [t.tensor(True), False],
                [i32, t.tensor(3, dtype=t.uint8)], [[f64], [2]], ((i32, 1.5), (2, 3))]
    for ours, theirs in zip(cases(T), cases(torch)):
        _same(T.tensor(ours), torch.tensor(theirs))


_INF, _NAN = float("inf"), float("nan")
_DIVIDENDS = [-4.0, 4.0, -0.0, 0.0, 3.0, -3.0, _INF, -_INF, _NAN, 5.5, -5.5]
_DIVISORS = [2.0, -2.0, _INF, -_INF, 0.0, -0.0, 1.5, -1.5]


def _floats(xb):
    return [d for d in ("float16", "bfloat16", "float32", "float64")
            if xb._dtypes.get(getattr(xad, d)) is not None]


def test_remainder_zero_takes_the_dividends_sign_as_torch(xb):
    """A zero ``remainder`` is ``-0.0`` for a negative dividend in PyTorch (C's ``fmod``'s
    zero: ``torch.remainder(tensor([-4.]), 2)`` and ``remainder(4., -2)`` are ``-0.``,
    ``0.``); ``torch.remainder``/``x.remainder``/``remainder_`` gave the divisor's sign
    on NumPy, array_api_strict and CuPy. ``%`` is the standard's and Python's (the
    divisor's sign): it was the dividend's on the torch and JAX backends. ``fmod`` agreed."""
    for dt in _floats(xb):
        a, at = T.tensor(_DIVIDENDS, dtype=getattr(T, dt)), \
            torch.tensor(_DIVIDENDS, dtype=getattr(torch, dt))
        for d in _DIVISORS:
            dd, ddt = T.full_like(a, d), torch.full_like(at, d)
            _same(T.remainder(a, d), torch.remainder(at, d))
            _same(a.remainder(dd), at.remainder(ddt))
            _same(a.clone().remainder_(d), at.clone().remainder_(d))
            _same(T.fmod(a, dd), torch.fmod(at, ddt))
            if dt != "bfloat16":  # (NumPy has none)
                with np.errstate(invalid="ignore"):
                    want = np.remainder(np.array(_DIVIDENDS, dtype=dt), np.array(d, dtype=dt))
                assert str((a % d).tolist()) == str(want.tolist())
                assert str((a % dd).tolist()) == str(want.tolist())
        for v in (-4.0, 4.0, -0.0, 0.0):
            _same(T.remainder(v, T.tensor(_DIVISORS, dtype=getattr(T, dt))),
                  torch.remainder(v, torch.tensor(_DIVISORS, dtype=getattr(torch, dt))))


def test_remainder_gradients_as_torch_at_its_zeros(xb):
    """The sign change leaves ``torch.remainder``'s gradients PyTorch's (1 and
    ``-floor(x / y)``, at exact multiples too)."""
    data, div = [-4.0, 4.0, -0.0, 3.0, -5.5, 2.5], [2.0, -2.0, 1.5, 1.5, 2.0, -1.0]
    grads = []
    for t in (T, torch):
        x = t.tensor(data, dtype=t.float64, requires_grad=True)
        y = t.tensor(div, dtype=t.float64, requires_grad=True)
        (t.remainder(x, y) * t.arange(1, 7, dtype=t.float64)).sum().backward()
        grads.append((x.grad.tolist(), y.grad.tolist()))
    assert grads[0] == grads[1]


def test_remainder_and_floor_divide_of_large_quotients_as_numpy_and_torch(xb):
    """CuPy's float ``remainder`` is ``x - floor(x / y) * y`` and its ``floor_divide``
    ``floor(x / y)`` (seen on an H200): ``remainder(1e17, 3.0)`` was 0 (NumPy, PyTorch and
    JAX: 1, from ``fmod``), float32 ``remainder(1e7, 0.1)`` 0 (0.0509...),
    ``1.0 // 0.1`` was 10 (9), so ``remainder``'s gradient in ``y``, ``-floor_divide``, was
    off too; ``remainder(x, inf)`` was NaN (see above)."""
    x = [1e17, 1e7, 1.0, -1.0, 7.5, -7.5, 1e30, 0.0, 3.0, 2.0]  # (JAX: -0.0 // 3.0 is 0.0)
    y = [3.0, 0.1, 0.1, 0.1, -2.0, 2.0, 7.0, 3.0, 0.0, _INF]
    for dt in ("float32", "float64"):
        a, at = T.tensor(x, dtype=getattr(T, dt)), torch.tensor(x, dtype=getattr(torch, dt))
        b, bt = T.tensor(y, dtype=getattr(T, dt)), torch.tensor(y, dtype=getattr(torch, dt))
        _same(T.remainder(a, b), torch.remainder(at, bt))
        _same(T.floor_divide(a, b), torch.floor_divide(at, bt))
        with np.errstate(all="ignore"):
            want = np.floor_divide(np.array(x, dt), np.array(y, dt))
        assert str((a // b).tolist()) == str(want.tolist())
    grads = []
    for t in (T, torch):
        a = t.tensor(x[:7], dtype=t.float64, requires_grad=True)
        b = t.tensor(y[:7], dtype=t.float64, requires_grad=True)
        t.remainder(a, b).sum().backward()
        grads.append((a.grad.tolist(), b.grad.tolist()))
    assert grads[0] == grads[1]


def test_square_and_pow_of_bools_as_torch(xb):
    """``mask.square()`` stayed bool (``mask & mask``; PyTorch: int64) and ``mask ** True``
    was int64 (PyTorch: bool); ``mask ** mask`` gave int8 on NumPy and CuPy, int32 on JAX
    and an error elsewhere (PyTorch refuses it)."""
    m, mt = T.tensor([True, False]), torch.tensor([True, False])
    for f in (lambda m, t: m.square(), lambda m, t: t.square(m), lambda m, t: m ** 2,
              lambda m, t: m.pow(3), lambda m, t: m ** True, lambda m, t: m ** False,
              lambda m, t: t.pow(m, False), lambda m, t: 2 ** m, lambda m, t: m ** 0.5):
        _same(f(m, T), f(mt, torch))
    for f in (lambda m, t: m ** m, lambda m, t: True ** m, lambda m, t: t.pow(m, m)):
        with pytest.raises(TypeError, match="bool"):
            f(m, T)
        with pytest.raises((RuntimeError, NotImplementedError)):
            f(mt, torch)


def test_sign_of_bools_and_of_complex_as_torch(xb):
    """``mask.sign()``/``sgn`` raised NumPy's ``UFuncTypeError`` (PyTorch: the bool
    itself); ``torch.sign``/``z.sign()`` of a complex tensor answered ``z / |z|`` where
    PyTorch refuses (its name for that is ``sgn``; ``xad.sign`` keeps the standard's)."""
    m, mt = T.tensor([True, False]), torch.tensor([True, False])
    for f in (lambda m, t: m.sign(), lambda m, t: t.sign(m), lambda m, t: t.sgn(m),
              lambda m, t: m.sgn(), lambda m, t: m.clone().sign_()):
        _same(f(m, T), f(mt, torch))
    z, zt = T.tensor([3 + 4j, 0j]), torch.tensor([3 + 4j, 0j])
    for f in (lambda z, t: z.sign(), lambda z, t: t.sign(z)):
        with pytest.raises(NotImplementedError, match="sgn"):
            f(z, T)
        with pytest.raises(NotImplementedError):
            f(zt, torch)
    _same(z.sgn(), zt.sgn())
    assert xad.sign(z).tolist() == pytest.approx([0.6 + 0.8j, 0j])
    assert xad.sign(T.tensor([True, False])).tolist() == [True, False]


def test_angle_of_signed_zeros_as_torch(xb):
    """``angle`` of a complex zero was 0 for every sign; PyTorch's is ``atan2(imag,
    real)``'s: ``-0.0``, ``pi``, ``-pi`` for ``0 - 0j``, ``-0 + 0j``, ``-0 - 0j``. Its
    gradient there stays 0; the real ``angle`` (``-0.0``, NaN, infinities) agreed."""
    parts = [(0.0, 0.0), (0.0, -0.0), (-0.0, 0.0), (-0.0, -0.0), (_NAN, 0.0), (-_INF, -0.0)]
    for rt in ("float32", "float64"):  # (complex64, complex128)
        got = []
        for t in (T, torch):
            re = t.tensor([p[0] for p in parts], dtype=getattr(t, rt))
            im = t.tensor([p[1] for p in parts], dtype=getattr(t, rt))
            z = t.complex(re, im).requires_grad_()
            a = z.angle()
            (a * t.arange(1, 7, dtype=getattr(t, rt))).sum().backward()
            got.append((str(a.tolist()), str(t.angle(z.detach()).tolist()),
                        str(z.grad[:4].tolist())))
        assert got[0] == got[1]
    for dt in _floats(xb):
        r = [0.0, -0.0, _NAN, 1.0, -1.0, _INF, -_INF]
        _same(T.tensor(r, dtype=getattr(T, dt)).angle(),
              torch.tensor(r, dtype=getattr(torch, dt)).angle())


def test_max_dim_does_not_keep_its_input(xb):
    """``max(dim)``'s gradient needs only its indices (PyTorch's): its input may change in
    place before backward (a guard for its primitive, which keeps only its results; the
    composition before it kept a masked copy)."""
    for t in (T, torch):
        x = t.tensor([[1.0, 3.0, 3.0], [-0.0, 0.0, -1.0]], requires_grad=True)
        y = x * 1
        v, i = y.max(1)
        w, _ = y.min(0, keepdim=True)
        y.add_(1)
        (v.sum() + w.sum()).backward()
        if t is T:
            ours = (str(v.tolist()), i.tolist(), x.grad.tolist())
    assert ours == (str(v.tolist()), i.tolist(), x.grad.tolist())
