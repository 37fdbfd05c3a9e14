"""Operators and dtype promotion: the listed cases of issue 26, then a differential fuzzer.

The fuzzer draws an operation (every binary operator and elementwise function), a dtype
pair (or a Python bool/int/float/complex on either side), shapes (0-d included) and values,
and checks xad's result, dtype and values, on every backend, against array_api_strict where
the standard defines the case and against NumPy 2 computing in xad's documented dtype where
the standard leaves it to the library (a bool or integer with a floating or complex dtype,
floating functions of integers: PyTorch's and JAX's rule, the default floating dtype for a
Python float or an integer input). A seeded small run by default; ``XAD_FUZZ_N=10000`` for
the long run.
"""

from __future__ import annotations

import operator
import os
import warnings

import array_api_strict as xps
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import xad

# ----- the listed cases -----------------------------------------------------------------


def test_bitwise_operators_on_integers(xb):
    x = xad.tensor([1, 2, 3, 6])
    assert (x & 1).tolist() == [1, 0, 1, 0] and (x & 1).dtype is xad.int64
    assert (1 & x).tolist() == [1, 0, 1, 0]
    assert (x | 4).tolist() == (4 | x).tolist() == [5, 6, 7, 6]
    assert (x ^ 3).tolist() == (3 ^ x).tolist() == [2, 1, 0, 5]
    assert (~x).tolist() == [-2, -3, -4, -7] and (~x).dtype is xad.int64
    assert (x << 1).tolist() == [2, 4, 6, 12] and (1 << x).tolist() == [2, 4, 8, 64]
    assert (x >> 1).tolist() == [0, 1, 1, 3] and (64 >> x).tolist() == [32, 16, 8, 1]
    assert (x & xad.tensor([3, 3, 3, 3])).tolist() == [1, 2, 3, 2]


def test_logical_operators_on_booleans(xb):
    a, b = xad.tensor([True, True, False]), xad.tensor([True, False, False])
    assert (a & b).tolist() == [True, False, False] and (a & b).dtype is xad.bool
    assert (a | b).tolist() == [True, True, False] and (a ^ b).tolist() == [False, True, False]
    assert (~a).tolist() == [False, False, True] and (~a).dtype is xad.bool
    assert (True & a).tolist() == [True, True, False] and (a | False).dtype is xad.bool


@pytest.mark.parametrize("name, fn, expected", [
    ("//", lambda x: x // 1.5, [0.0, 1.0, 2.0]),
    ("r//", lambda x: 4.5 // x, [4.0, 2.0, 1.0]),
    ("%", lambda x: x % 1.5, [1.0, 0.5, 0.0]),
    ("r%", lambda x: 4.5 % x, [0.5, 0.5, 1.5]),
    ("floor_divide", lambda x: xad.floor_divide(x, 1.5), [0.0, 1.0, 2.0]),
    ("remainder", lambda x: xad.remainder(x, 1.5), [1.0, 0.5, 0.0]),
    ("where", lambda x: xad.where(x > 1, x, 1.5), [1.5, 2.0, 3.0]),
    ("where:x", lambda x: xad.where(x > 1, 0.5, x), [1.0, 0.5, 0.5]),
    ("maximum", lambda x: xad.maximum(x, 1.5), [1.5, 2.0, 3.0]),
    ("minimum", lambda x: xad.minimum(1.5, x), [1.0, 1.5, 1.5]),
    ("clip", lambda x: xad.clip(x, 1.5, 2.5), [1.5, 2.0, 2.5]),
    ("clip:max", lambda x: xad.clip(x, None, 2.5), [1.0, 2.0, 2.5]),
    ("clamp", lambda x: x.clamp(1.5, 2.5), [1.5, 2.0, 2.5]),
    ("clamp:tensor", lambda x: x.clamp(xad.tensor([1.5])), [1.5, 2.0, 3.0]),
    ("+", lambda x: x + 0.5, [1.5, 2.5, 3.5]),
    ("/", lambda x: x / x, [1.0, 1.0, 1.0]),
    ("exp", lambda x: xad.exp(x * 0), [1.0, 1.0, 1.0]),
    ("method exp", lambda x: (x * 0).exp(), [1.0, 1.0, 1.0]),
    ("atan2", lambda x: xad.atan2(x * 0, x), [0.0, 0.0, 0.0]),
    ("==", lambda x: xad.where(x == 2.0, 2.5, x), [1.0, 2.5, 3.0]),
])
def test_integer_with_python_float_is_float(xb, name, fn, expected):
    """Never the float cast to an integer first; the default floating dtype (PyTorch's)."""
    for default in (xad.float32, xad.float64):
        xad.set_default_dtype(default)
        try:
            y = fn(xad.tensor([1, 2, 3]))
        finally:
            xad.set_default_dtype(xad.float32)
        assert y.dtype is default, f"{name}: {y.dtype}"
        assert y.tolist() == expected, name


def test_integer_tensor_with_floating_tensor(xb):
    i, f = xad.tensor([1, 2], dtype=xad.int32), xad.tensor([0.5, 0.25])
    for y in (i + f, f * i, xad.where(i > 1, i, f), xad.maximum(i, f), i.clamp(f, None)):
        assert y.dtype is xad.float32
    assert (i + f).tolist() == [1.5, 2.25]
    if xb.name != "array_api_strict":  # it has no float16
        h = xad.tensor([0.5], dtype=xad.float16)
        assert (xad.tensor([1, 2]) + h).dtype is xad.float16
    assert (xad.tensor([True]) + xad.tensor([3], dtype=xad.int8)).dtype is xad.int8


def test_result_type_of_integer_with_floating():
    assert xad.result_type(xad.int32, xad.float32) is xad.float32
    assert xad.result_type(xad.int64, xad.float16) is xad.float16
    assert xad.result_type(xad.uint8, xad.float64) is xad.float64
    assert xad.result_type(xad.int8, xad.complex64) is xad.complex64
    assert xad.result_type(xad.bool, xad.int16) is xad.int16
    assert xad.result_type(xad.bool, 1) is xad.int64
    assert not xad.can_cast(xad.int32, xad.float32)  # the standard's table for casts


def test_python_complex_scalars(xb):
    x = xad.tensor([1.0, 2.0], requires_grad=True)
    for y in (x * 1j, 1j * x):
        assert y.dtype is xad.complex64 and y.tolist() == [1j, 2j]
    assert (x + 1j).tolist() == [1 + 1j, 2 + 1j] and (1j - x).tolist() == [-1 + 1j, -2 + 1j]
    assert (x / 1j).tolist() == [-1j, -2j]
    assert (xad.tensor([1.0], dtype=xad.float64) * 1j).dtype is xad.complex128
    assert (xad.tensor([2]) * 1j).dtype is xad.complex64
    xad.imag(x * (3 + 2j)).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]  # the gradient flows through the cast to complex
    z = xad.complex_from_parts(xad.tensor([1.0]), xad.tensor([1.0]))
    assert (z * 2j).tolist() == [-2 + 2j]
    assert xad.where(xad.tensor([True]), x[:1], 1j).dtype is xad.complex64


def test_take_along_axis_index_longer_than_the_axis(xb):
    x = xad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    i = xad.tensor([[1, 0, 1], [0, 0, 0]])
    y = xad.take_along_axis(x, i, axis=1)
    assert y.tolist() == [[2.0, 1.0, 2.0], [3.0, 3.0, 3.0]]
    y.sum().backward()
    assert x.grad.tolist() == [[1.0, 2.0], [3.0, 0.0]]
    # PyTorch's gather takes it too (only the other axes must not be longer)
    assert xad.gather(x, 1, i).tolist() == [[2.0, 1.0, 2.0], [3.0, 3.0, 3.0]]


# ----- the fuzzer -----------------------------------------------------------------------
_INT = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
_FLOAT, _COMPLEX = ["float32", "float64"], ["complex64", "complex128"]
_REAL = _INT + _FLOAT
_NUM = _REAL + _COMPLEX
# name: (xad function, NumPy function, dtypes each input may have, floating-only)
_BINARY = {
    "add": (xad.add, np.add, _NUM, False), "subtract": (xad.subtract, np.subtract, _NUM, False),
    "multiply": (xad.multiply, np.multiply, _NUM, False),
    "divide": (xad.divide, np.divide, _NUM, True),
    "floor_divide": (xad.floor_divide, np.floor_divide, _REAL, False),
    "remainder": (xad.remainder, np.remainder, _REAL, False),
    "pow": (xad.pow, np.power, _NUM, False),
    "maximum": (xad.maximum, np.maximum, _REAL, False),
    "minimum": (xad.minimum, np.minimum, _REAL, False),
    "atan2": (xad.atan2, np.arctan2, _REAL, True), "hypot": (xad.hypot, np.hypot, _REAL, True),
    "logaddexp": (xad.logaddexp, np.logaddexp, _REAL, True),
    "copysign": (xad.copysign, np.copysign, _REAL, True),
    "nextafter": (xad.nextafter, np.nextafter, _FLOAT, True),
    "equal": (xad.equal, np.equal, _NUM + ["bool"], False),
    "not_equal": (xad.not_equal, np.not_equal, _NUM + ["bool"], False),
    "less": (xad.less, np.less, _REAL, False), "greater": (xad.greater, np.greater, _REAL, False),
    "less_equal": (xad.less_equal, np.less_equal, _REAL, False),
    "greater_equal": (xad.greater_equal, np.greater_equal, _REAL, False),
    "logical_and": (xad.logical_and, np.logical_and, ["bool"], False),
    "logical_or": (xad.logical_or, np.logical_or, ["bool"], False),
    "logical_xor": (xad.logical_xor, np.logical_xor, ["bool"], False),
    "bitwise_and": (xad.bitwise_and, np.bitwise_and, _INT + ["bool"], False),
    "bitwise_or": (xad.bitwise_or, np.bitwise_or, _INT + ["bool"], False),
    "bitwise_xor": (xad.bitwise_xor, np.bitwise_xor, _INT + ["bool"], False),
    "bitwise_left_shift": (xad.bitwise_left_shift, np.left_shift, _INT, False),
    "bitwise_right_shift": (xad.bitwise_right_shift, np.right_shift, _INT, False),
}
_OPERATORS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
              "divide": operator.truediv, "floor_divide": operator.floordiv,
              "remainder": operator.mod, "pow": operator.pow, "equal": operator.eq,
              "not_equal": operator.ne, "less": operator.lt, "greater": operator.gt,
              "less_equal": operator.le, "greater_equal": operator.ge,
              "bitwise_and": operator.and_, "bitwise_or": operator.or_,
              "bitwise_xor": operator.xor, "bitwise_left_shift": operator.lshift,
              "bitwise_right_shift": operator.rshift}
_FLOATING_UNARY = ["exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh",
                   "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2",
                   "log10"]
_SAME_UNARY = ["abs", "negative", "positive", "square", "sign", "floor", "ceil", "trunc",
               "round"]
_NP_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
             "acosh": "arccosh", "atanh": "arctanh", "round": "rint"}
_SHAPES = [((), ()), ((3,), ()), ((), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((3,), (3,))]


def _kind(d: str) -> int:
    return 0 if d == "bool" else 1 if d in _INT else 2 if d in _FLOAT else 3


def _common(a: str, b: str) -> str:
    """The dtype two inputs meet in: the standard's table, or the higher kind's dtype."""
    return xad.result_type(xad.dtypes.as_dtype(a), xad.dtypes.as_dtype(b)).name


def _values(rng: np.random.Generator, dtype: str, shape: tuple, op: str, right: bool) -> np.ndarray:
    """Values inside every input domain the fuzzer uses: small, nonzero divisors and
    exponents, shift counts within the width."""
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype in _INT:
        lo = 0 if dtype.startswith("u") or (right and op in ("pow", "bitwise_left_shift",
                                                            "bitwise_right_shift")) else -5
        hi = 4 if right and op == "pow" else 7
        v = rng.integers(lo, hi, shape)
        if (right and op in ("floor_divide", "remainder", "divide")) or (
                not right and op == "pow"):  # (0 ** complex differs between libraries)
            v = np.where(v == 0, 1, v)
        return np.asarray(v, dtype=dtype)
    v = np.asarray(rng.uniform(-3, 3, shape), dtype=dtype)
    if dtype in _COMPLEX:
        v = np.asarray(v + 1j * rng.uniform(-3, 3, shape), dtype=dtype)
    return v


def _scalar(rng: np.random.Generator, kind: type, op: str, right: bool, arr_dtype: str) -> object:
    if kind is bool:  # (never a zero divisor)
        return bool(rng.random() < 0.5) or op == "pow" or (right and op in ("floor_divide",
                                                                         "remainder"))
    if kind is int:
        lo = 0 if arr_dtype.startswith("u") or op in ("pow", "bitwise_left_shift",
                                                      "bitwise_right_shift") else -4
        v = int(rng.integers(lo, 4 if op == "pow" else 6))
        return v or 1 if op == "pow" or (right and op in ("floor_divide", "remainder")) else v
    v = round(float(rng.uniform(-3, 3)), 2) or 0.5
    return complex(v, round(float(rng.uniform(-2, 2)), 2)) if kind is complex else v


def _scalar_dtype(arr: str, s: object) -> str | None:
    """xad's dtype for a tensor of ``arr`` meeting the Python scalar ``s`` (None: invalid)."""
    k = type(s)
    if k is bool:
        return arr
    if k is int:
        return "int64" if arr == "bool" else arr
    if k is float:
        return arr if _kind(arr) >= 2 else xad.get_default_dtype().name
    if arr in _COMPLEX:
        return arr
    return "complex128" if arr == "float64" else "complex64"


def _reference(name: str, args: list, dtype: str, floating: bool) -> np.ndarray:
    """NumPy in the dtype xad's rules give (``dtype``; the default floating dtype for a
    floating function of integers); NEP 50 keeps Python scalars weak."""
    if floating and _kind(dtype) < 2:
        dtype = xad.get_default_dtype().name
    fn = _BINARY[name][1]
    cast = [a.astype(dtype) if isinstance(a, np.ndarray) else a for a in args]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return np.asarray(fn(*cast))


def _strict(name: str, args: list, use_operator: bool) -> np.ndarray | None:
    """array_api_strict's answer, or None where it refuses (the standard leaves it open)."""
    conv = [xps.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    fn = _OPERATORS[name] if use_operator else getattr(xps, name)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return np.asarray(fn(*conv))
    except (TypeError, ValueError):
        return None


def _close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    if got.dtype.kind in "fc":
        tol = 2e-5 if got.dtype in (np.float32, np.complex64) else 1e-10
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def _binary_case(rng: np.random.Generator, backend: xad.Backend) -> str | None:
    name = sorted(_BINARY)[rng.integers(len(_BINARY))]
    fn, _, dtypes, floating = _BINARY[name]
    use_op = name in _OPERATORS and rng.random() < 0.5
    sa, sb = _SHAPES[rng.integers(len(_SHAPES))]
    da = dtypes[rng.integers(len(dtypes))]
    scalar = rng.random() < 0.4
    if scalar:
        kinds = [bool, int, float, complex]
        kind = kinds[rng.integers(4)]
        right = rng.random() < 0.5
        a = _values(rng, da, sa, name, not right)
        s = _scalar(rng, kind, name, right, da)
        dt = _scalar_dtype(da, s)
        if dt not in dtypes or (kind is complex and name in ("pow",) and da in _INT):
            return None  # outside the operation's domain (checked below to raise)
        if name in ("bitwise_left_shift", "bitwise_right_shift") and not right:
            return None  # a Python int shifted by a tensor: the width is the tensor's
        args = [a, s] if right else [s, a]
        want_dtype = dt
    else:
        db = dtypes[rng.integers(len(dtypes))]
        if ({da, db} & set(_INT) and "bool" in (da, db)
                                                and name.startswith("bitwise_") is False
                                                and name not in ("equal", "not_equal")):
            return None
        args = [_values(rng, da, sa, name, False), _values(rng, db, sb, name, True)]
        try:
            want_dtype = _common(da, db)
        except TypeError:  # no promotion (uint64 with a signed integer): xad refuses too,
            if floating:   # except where each integer becomes the default floating dtype
                return None
            with pytest.raises(TypeError, match="no promotion"):
                fn(*(xad.tensor(a, backend=backend) for a in args))
            return name
    what = f"{name}{' (operator)' if use_op else ''} on {[_desc(a) for a in args]}"
    ts = [xad.tensor(a, backend=backend) if isinstance(a, np.ndarray) else a for a in args]
    f = _OPERATORS[name] if use_op else fn
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            got = f(*ts).numpy()
        except NotImplementedError:  # PyTorch has no kernel (shifts of uint64): it says so
            assert backend.name == "torch", what
            return None
    want = _reference(name, args, want_dtype, floating)
    _close(got, want, what)
    ref = _strict(name, args, use_op)
    if ref is not None:  # where the standard answers, xad answers the same
        _close(got, ref, what + " vs array_api_strict")
    return name


def _desc(a: object) -> str:
    return f"{a.dtype}{list(a.shape)}" if isinstance(a, np.ndarray) else repr(a)


def _unary_case(rng: np.random.Generator, backend: xad.Backend) -> str:
    names = _FLOATING_UNARY + _SAME_UNARY
    name = names[rng.integers(len(names))]
    d = (_REAL if name in _FLOATING_UNARY else _REAL + ["bool"] * 0)[rng.integers(len(_REAL))]
    shape = _SHAPES[rng.integers(len(_SHAPES))][0]
    a = _values(rng, d, shape, name, False)
    if name in _FLOATING_UNARY and d in _INT:
        want_dtype = xad.get_default_dtype().name
    else:
        want_dtype = d
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            got = getattr(xad, name)(xad.tensor(a, backend=backend)).numpy()
        except NotImplementedError:  # PyTorch has no kernel (negative of uint16)
            assert backend.name == "torch", name
            return name
        want = np.asarray(getattr(np, _NP_NAMES.get(name, name))(a.astype(want_dtype)))
        if want.dtype != np.dtype(want_dtype):  # NumPy's floor of an integer is a float
            want = want.astype(want_dtype)
    _close(got, want, f"{name} on {_desc(a)}")
    return name


def _supported(backend: xad.Backend) -> bool:
    try:
        for d in _NUM:
            backend.dtype(xad.dtypes.as_dtype(d))
    except Exception:
        return False
    return True


def test_fuzz_operators_and_promotion(xb):
    """Seeded: ``XAD_FUZZ_N`` cases (300 by default) per backend, ``XAD_FUZZ_SEED`` the seed."""
    n = int(os.environ.get("XAD_FUZZ_N", "300"))
    rng = np.random.default_rng(int(os.environ.get("XAD_FUZZ_SEED", "26")))
    if not _supported(xb):
        pytest.skip(f"{xb.name} lacks a dtype of the standard")
    done = 0
    for _ in range(n):
        if rng.random() < 0.75:
            done += _binary_case(rng, xb) is not None
        else:
            done += _unary_case(rng, xb) is not None
    assert done > n // 2


def test_fuzz_invalid_combinations_raise(xb):
    """Outside an operation's dtypes (bitwise on floats, logical on numbers...) xad raises;
    it never answers in a dtype of its own choosing."""
    f = xad.tensor([1.5, 2.5])
    i = xad.tensor([1, 2])
    for bad in (lambda: f & 1, lambda: f | f, lambda: ~f, lambda: f << 1, lambda: i << 1.5):
        with pytest.raises((TypeError, RuntimeError)):
            bad()


def test_promotion_table_against_the_libraries():
    """Every dtype pair: the standard's answer where array_api_strict gives one; the higher
    kind's dtype for bool/integer with floating/complex, as PyTorch and JAX."""
    names = ["bool"] + _NUM
    for a in names:
        for b in names:
            try:
                want = xps.result_type(getattr(xps, a), getattr(xps, b))
            except TypeError:
                want = None
            try:
                got = xad.result_type(xad.dtypes.as_dtype(a), xad.dtypes.as_dtype(b)).name
            except TypeError:
                got = None
            if want is not None:
                assert got == str(want).split(".")[-1], (a, b)
            elif min(_kind(a), _kind(b)) < 2 and _kind(a) != _kind(b):
                assert got == (a if _kind(a) > _kind(b) else b), (a, b)
                j = jnp.promote_types(a, b).name
                assert j == got, (a, b, j)
                if all(hasattr(torch, n) for n in (a, b)) and "uint" not in a + b:
                    t = torch.promote_types(getattr(torch, a), getattr(torch, b))
                    assert str(t).split(".")[-1] == got, (a, b, t)
