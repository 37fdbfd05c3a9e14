"""xad as an Array API namespace: code written only against ``x.__array_namespace__()`` runs
on xad tensors and is differentiable; the data-type functions, the inspection object and
the new functions against NumPy (values) and finite differences (gradients)."""

from __future__ import annotations

import numpy as np
import pytest

import xad


def _t(a, requires_grad=False):
    return xad.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def _standard_only(x):
    """A function that knows nothing of xad: only the standard's namespace."""
    xp = x.__array_namespace__()
    idx = xp.asarray([2, 0, 1, 1])
    y = xp.take(x, idx, axis=0)
    y = xp.cumulative_sum(xp.exp(y) * xp.sin(y), axis=0, include_initial=True)
    z = xp.take_along_axis(x, xp.argsort(x, axis=-1), axis=-1)
    w = xp.logaddexp(xp.sort(x, axis=0, descending=True), xp.atan2(x, xp.hypot(x, 1.0)))
    return xp.sum(y) + xp.sum(z * z) + xp.sum(xp.diff(w, axis=1)) \
        + xp.sum(xp.cumulative_prod(xp.moveaxis(x, 0, 1), axis=1))


def test_namespace_and_version(xb):
    x = xad.ones(2)
    assert x.__array_namespace__() is xad
    assert x.__array_namespace__(api_version="2023.12") is xad
    assert xad.__array_api_version__ == "2024.12"
    with pytest.raises(ValueError, match="2024.12"):
        x.__array_namespace__(api_version="2099.01")


def test_code_written_for_the_standard_is_differentiable(xb):
    x = _t(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    assert xad.gradcheck(_standard_only, [x])
    s = _standard_only(x)
    assert s.ndim == 0 and s.requires_grad


@pytest.mark.parametrize("name", ["take", "take_along_axis", "roll", "tril", "triu",
                                  "moveaxis", "unstack", "repeat", "broadcast_arrays",
                                  "meshgrid", "cumulative_sum", "cumulative_prod", "diff",
                                  "vecdot", "sort", "tile"])
def test_new_functions_match_numpy_and_finite_differences(xb, name):
    a = np.random.default_rng(1).standard_normal((3, 4))
    a[1, 2] = 0.0  # cumulative_prod through a zero
    idx = np.array([[2, 0, 1, 1], [0, 0, 2, 1], [1, 2, 0, 0]])
    cases = {
        "take": (lambda m, x: m.take(x, m.asarray([3, 0, 3]), axis=1),
                 lambda x: np.take(x, [3, 0, 3], axis=1)),
        "take_along_axis": (lambda m, x: m.take_along_axis(x, m.asarray(idx[:, :1]), axis=1),
                            lambda x: np.take_along_axis(x, idx[:, :1], axis=1)),
        "roll": (lambda m, x: m.roll(x, (1, -1), axis=(0, 1)),
                 lambda x: np.roll(x, (1, -1), axis=(0, 1))),
        "tril": (lambda m, x: m.tril(x, k=1), lambda x: np.tril(x, k=1)),
        "triu": (lambda m, x: m.triu(x, k=-1), lambda x: np.triu(x, k=-1)),
        "moveaxis": (lambda m, x: m.moveaxis(m.reshape(x, (3, 2, 2)), 0, -1),
                     lambda x: np.moveaxis(x.reshape(3, 2, 2), 0, -1)),
        "unstack": (lambda m, x: m.unstack(x, axis=1)[2], lambda x: x[:, 2]),
        "repeat": (lambda m, x: m.repeat(x, 2, axis=0), lambda x: np.repeat(x, 2, axis=0)),
        "broadcast_arrays": (lambda m, x: m.broadcast_arrays(x[:1], x)[0],
                             lambda x: np.broadcast_arrays(x[:1], x)[0]),
        "meshgrid": (lambda m, x: m.meshgrid(x[0], x[1][:3])[0] * m.meshgrid(x[0], x[1][:3])[1],
                     lambda x: np.prod(np.meshgrid(x[0], x[1][:3]), axis=0)),
        "cumulative_sum": (lambda m, x: m.cumulative_sum(x, axis=1),
                           lambda x: np.cumsum(x, axis=1)),
        "cumulative_prod": (lambda m, x: m.cumulative_prod(x, axis=1),
                            lambda x: np.cumprod(x, axis=1)),
        "diff": (lambda m, x: m.diff(x, axis=0, n=2), lambda x: np.diff(x, axis=0, n=2)),
        "vecdot": (lambda m, x: m.vecdot(x, x[:1], axis=1), lambda x: (x * x[:1]).sum(1)),
        "sort": (lambda m, x: m.sort(x, axis=0, descending=True),
                 lambda x: -np.sort(-x, axis=0)),
        "tile": (lambda m, x: m.tile(x, (2, 1, 2)), lambda x: np.tile(x, (2, 1, 2))),
    }
    f, ref = cases[name]
    x = _t(a, requires_grad=True)
    np.testing.assert_allclose(f(xad, x).numpy(), ref(a), rtol=1e-12, atol=1e-12)
    assert xad.gradcheck(lambda t: f(xad, t), [x])
    assert xad.gradgradcheck(lambda t: f(xad, t) ** 2, [x])


def test_take_gradient_adds_repeats(xb):
    x = _t([1.0, 2.0, 3.0], requires_grad=True)
    xad.take(x, xad.asarray([0, 2, 0])).sum().backward()
    assert x.grad.tolist() == [2.0, 0.0, 1.0]


def test_no_gradient_functions_give_plain_results(xb):
    x = _t([[-1.5, 0.5], [2.5, -0.0]], requires_grad=True)
    for r in (xad.floor(x), xad.trunc(x), xad.round(x), xad.signbit(x), xad.argsort(x),
              xad.floor_divide(x, 2.0), xad.count_nonzero(x), xad.unique_values(x)):
        assert not r.requires_grad
    assert xad.signbit(x).tolist() == [[True, False], [False, True]]
    assert xad.count_nonzero(x, axis=0).tolist() == [2, 1]
    assert xad.nonzero(x)[1].tolist() == [0, 1, 0]
    assert xad.searchsorted(_t([1.0, 2.0, 3.0]), _t([0.5, 2.0]), side="right").tolist() == [0, 2]
    u = xad.unique_all(_t([3.0, 1.0, 3.0]))
    assert (u.values.tolist(), u.counts.tolist(), u.inverse_indices.tolist()) == \
        ([1.0, 3.0], [1, 2], [1, 0, 1])


def test_bitwise_and_integer_functions(xb):
    a, b = xad.asarray([6, 5, -3]), xad.asarray([3, 3, 2])
    assert xad.bitwise_and(a, b).tolist() == [2, 1, 0]
    assert xad.bitwise_xor(a, b).tolist() == [5, 6, -1]
    assert xad.bitwise_left_shift(a, 1).tolist() == [12, 10, -6]
    assert xad.remainder(a, b).tolist() == [0, 2, 1]
    assert xad.floor_divide(a, b).tolist() == [2, 1, -2]
    assert xad.logical_xor(a > 5, b > 2).tolist() == [False, True, False]


def test_dtype_functions(xb):
    assert xad.result_type(xad.int8, xad.uint8) is xad.int16
    assert xad.result_type(xad.float32, xad.float64) is xad.float64
    assert xad.result_type(xad.ones(2, dtype=xad.int32), 1.5) is xad.get_default_dtype()
    assert xad.result_type(xad.float64, xad.complex64) is xad.complex128
    with pytest.raises(TypeError, match="result_type: .*uint64 with int64"):
        xad.result_type(xad.uint64, xad.int64)
    assert xad.can_cast(xad.int8, xad.int64) and not xad.can_cast(xad.float64, xad.float32)
    assert not xad.can_cast(xad.int32, xad.float32)
    assert xad.isdtype(xad.float32, "real floating") and not xad.isdtype(xad.int8, "bool")
    assert xad.isdtype(xad.uint8, ("signed integer", "unsigned integer"))
    assert xad.finfo(xad.float64).eps == np.finfo(np.float64).eps
    assert xad.iinfo(xad.int64).max == 2**63 - 1
    with pytest.raises(ValueError, match="isdtype: unknown kind"):
        xad.isdtype(xad.float32, "floating")


def test_namespace_info(xb):
    info = xad.__array_namespace_info__()
    assert info.default_device() == xb.device and info.devices() == [xb.device]
    assert info.default_dtypes()["indexing"] is xad.int64
    floats = info.dtypes(kind="real floating")
    assert set(floats) <= {"float32", "float64"} and "float32" in floats
    assert all(xad.isdtype(d, "integral") for d in info.dtypes(kind="integral").values())
    assert info.capabilities()["boolean indexing"] is True
    assert (xad.e, xad.pi, xad.newaxis) == (np.e, np.pi, None)


def test_asarray_keeps_or_copies(xb):
    x = xad.ones(2)
    assert xad.asarray(x) is x
    assert xad.asarray(x, copy=True) is not x
    assert xad.asarray(x, dtype=xad.float64).dtype is xad.float64
    with pytest.raises(ValueError, match="asarray: device"):
        xad.asarray([1.0], device="elsewhere")


def test_errors_name_the_function(xb):
    with pytest.raises(ValueError, match="cumulative_sum: axis is required"):
        xad.cumulative_sum(xad.ones((2, 2)))
    with pytest.raises(ValueError, match="take: axis=None needs a 1-d"):
        xad.take(xad.ones((2, 2)), xad.asarray([0]))
    with pytest.raises(ValueError, match="moveaxis: 2 source axes but 1"):
        xad.moveaxis(xad.ones((2, 2)), (0, 1), 0)


def test_tensor_repeat_is_pytorchs_and_function_repeat_is_the_standards(xb):
    x = xad.asarray([1, 2])
    assert x.repeat(2).tolist() == [1, 2, 1, 2]
    assert xad.repeat(x, 2).tolist() == [1, 1, 2, 2]
    assert xad.repeat(x, xad.asarray([0, 3])).tolist() == [2, 2, 2]


def test_creation_takes_the_standards_keywords(xb):
    assert xad.eye(3, k=1).tolist() == np.eye(3, k=1).tolist()
    assert xad.zeros((2,), device=xb.device).shape == (2,)
    assert xad.full_like(xad.ones(2), 3.0, device=xb.device).tolist() == [3.0, 3.0]
    assert xad.arange(3, device=xad.ones(1).device).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="ones: device 'elsewhere' is not the backend's"):
        xad.ones(2, device="elsewhere")


def test_the_standards_other_operators(xb):
    a = xad.asarray([7, -3])
    assert ((a // 2).tolist(), (a % 3).tolist(), (a ^ 1).tolist()) == ([3, -2], [1, 0], [6, -4])
    assert ((a << 1).tolist(), (a >> 1).tolist()) == ([14, -6], [3, -2])
    assert (7.5 % xad.asarray([2.0])).tolist() == [1.5] and (7 // xad.asarray([2])).tolist() == [3]
    x = _t([2.5, -1.25], requires_grad=True)
    assert xad.gradcheck(lambda t: t % 0.75, [x])
    assert complex(xad.asarray(1.5)) == 1.5 + 0j
    assert x.to_device(x.device) is x


def test_edge_shapes_and_integer_dtypes(xb):
    assert xad.moveaxis(xad.zeros((0, 1)), (0, 1), (1, 0)).shape == (1, 0)
    empty = xad.asarray([], dtype=xad.int32)
    assert xad.cumulative_sum(empty, include_initial=True).tolist() == [0]
    x = _t([2.0, 3.0], requires_grad=True)
    assert xad.cumulative_prod(x, include_initial=True).tolist() == [1.0, 2.0, 6.0]
    assert xad.gradcheck(lambda t: xad.cumulative_prod(t, include_initial=True), [x])
    u = xad.asarray([1, 2], dtype=xad.int32)
    assert xad.vecdot(u, u).dtype is xad.int32
