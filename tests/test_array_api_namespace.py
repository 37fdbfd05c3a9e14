"""xad as an Array API namespace: code written only against ``x.__array_namespace__()`` runs
on xad tensors and is differentiable; the data-type functions, the inspection object and
the new functions against NumPy (values) and finite differences (gradients)."""

from __future__ import annotations

import inspect
import math

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


def _needs_dlpack(xb):
    if not hasattr(xb.zeros((1,), xb.dtype(xad.float32)), "__dlpack_device__"):
        pytest.skip(f"{xb.label}: the CuPy emulator has no DLPack exchange")


def test_dlpack_exchange(xb):
    _needs_dlpack(xb)
    x = xad.asarray([1.0, 2.0, 3.0])
    kind, dev_id = x.__dlpack_device__()
    assert int(kind) in (1, 2) and isinstance(dev_id, int)  # CPU or CUDA
    assert type(x.__dlpack__(max_version=(1, 0))).__name__ == "PyCapsule"
    y = xad.from_dlpack(x)
    c = xad.from_dlpack(x, copy=True, device=xb.device)
    assert y.backend is xb and y.tolist() == c.tolist() == [1.0, 2.0, 3.0]
    x[0] = 5.0
    assert c.tolist()[0] == 1.0
    if xb.mutable:  # y shares x's memory and counts its in-place changes
        assert y.tolist()[0] == 5.0 and y._version == x._version == 1
    if int(kind) == 1:  # another library reads a CPU tensor without a copy
        assert np.from_dlpack(x).tolist() == [5.0, 2.0, 3.0]
        assert xad.from_dlpack(np.arange(2.0)).tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="from_dlpack: device"):
        xad.from_dlpack(x, device="elsewhere")


def test_no_silent_escape_from_the_graph(xb):
    x = _t([1.0, 2.0], requires_grad=True)
    for t in (x, x * 2):
        with pytest.raises(RuntimeError, match=r"__dlpack__.*requires grad.*\.detach\(\)"):
            t.__dlpack__()
        with pytest.raises(RuntimeError, match="from_dlpack.*requires grad"):
            xad.from_dlpack(t)
        if xb.is_host:  # a device backend refuses any implicit host copy first
            with pytest.raises(RuntimeError, match=r"np\.asarray.*requires grad.*\.detach"):
                np.asarray(t)
    with pytest.raises(ValueError, match="only a one-element tensor"):
        float(_t([1.0, 2.0]))
    assert float(x[1]) == 2.0  # one element: an explicit read, as in PyTorch
    _needs_dlpack(xb)
    assert xad.from_dlpack(x.detach()).tolist() == [1.0, 2.0]


def test_sum_and_prod_accumulate_in_dtype(xb):
    s = xad.sum(xad.asarray([200, 100], dtype=xad.uint8), dtype=xad.uint8)
    assert s.dtype is xad.uint8 and s.tolist() == 44  # accumulated in uint8: wraps
    p = xad.prod(xad.asarray([[2, 3]], dtype=xad.int8), axis=1, dtype=xad.int64)
    assert p.dtype is xad.int64 and p.tolist() == [6]
    x = xad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)  # float32
    y = xad.sum(x * x, axis=0, dtype=xad.float64)
    assert y.dtype is xad.float64 and y.tolist() == [10.0, 20.0]
    y.sum().backward()
    assert x.grad.dtype is xad.float32 and x.grad.tolist() == [[2.0, 4.0], [6.0, 8.0]]
    z = _t([[1.5, -2.0], [0.5, 3.0]], requires_grad=True)
    assert xad.gradcheck(lambda t: xad.prod(t, axis=1, dtype=xad.float64), [z])


def test_astype_and_reshape_copy_keywords(xb):
    x = _t([1.0, 2.0, 3.0, 4.0])
    c = xad.astype(x, xad.float64)
    assert c is not x and c.tolist() == x.tolist()
    assert xad.astype(x, xad.float64, copy=False) is x and x.astype(xad.float64) is x
    with pytest.raises(ValueError, match="astype: device 'elsewhere'"):
        xad.astype(x, xad.float32, device="elsewhere")
    view, copy = xad.reshape(x, (2, 2), copy=False), xad.reshape(x, (2, 2), copy=True)
    assert xad.reshape(x, (4,), copy=False) is x
    x[1] = 7.0
    assert view.tolist() == [[1.0, 7.0], [3.0, 4.0]] and copy.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    t = xad.permute_dims(view, (1, 0))
    if xb.name != "jax":  # JAX never refuses: its arrays are immutable values
        with pytest.raises(ValueError, match=r"reshape: .*\(2, 2\) cannot become \(4,\)"):
            xad.reshape(t, (4,), copy=False)
    g = _t([0.5, -1.0, 2.0, 1.5], requires_grad=True)
    assert xad.gradcheck(lambda a: xad.reshape(xad.astype(a, xad.float64), (2, 2), copy=True)
                         ** 2, [g])


def test_concat_axis_none_flattens(xb):
    a = _t([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = _t([5.0], requires_grad=True)
    assert xad.concat([a, b], axis=None).tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert xad.concat([xad.asarray(1), xad.asarray(2)], axis=None).tolist() == [1, 2]
    assert xad.gradcheck(lambda s, t: xad.concat([s * s, t], axis=None), [a, b])


def test_cumulative_functions_promote_small_integers(xb):
    i8 = xad.asarray([1, 2, 3], dtype=xad.int8)
    s = xad.cumulative_sum(i8)
    assert s.dtype is xad.int64 and s.tolist() == [1, 3, 6]
    assert xad.cumulative_prod(i8).dtype is xad.int64
    assert xad.cumulative_sum(xad.asarray([True, True])).tolist() == [1, 2]
    u8 = xad.asarray([1, 2], dtype=xad.uint8)
    # the standard's uint64 on every backend (torch's own cumsum and prod gave int64)
    want = xad.uint64
    assert xad.cumulative_sum(u8).dtype is want and xad.cumulative_prod(u8).dtype is want
    assert xad.cumulative_sum(xad.asarray([], dtype=xad.uint16), include_initial=True).tolist() \
        == [0]
    assert xad.cumulative_sum(_t([1.5, 2.0])).dtype is xad.float64


def test_vecdot_conjugates_and_checks_the_axis(xb):
    z1, z2 = xad.asarray([1j, 2j, 3j]), xad.asarray([1, 2j, 3])
    assert complex(xad.vecdot(z1, z2)) == complex(xad.linalg.vecdot(z1, z2)) == 4 - 10j
    rng = np.random.default_rng(3)
    an, bn = rng.standard_normal((2, 3, 4)), rng.standard_normal((3, 4))
    a, b = _t(an, requires_grad=True), _t(bn, requires_grad=True)
    np.testing.assert_allclose(xad.vecdot(a, b, axis=-2).detach().numpy(),
                               np.sum(an * bn, axis=-2), rtol=1e-12)
    assert xad.gradcheck(lambda s, t: xad.vecdot(s, t, axis=-2), [a, b])
    with pytest.raises(ValueError, match=r"vecdot: axis -1 .*shapes \(2, 3\) and \(2, 1\)"):
        xad.vecdot(xad.ones((2, 3)), xad.ones((2, 1)))
    with pytest.raises(ValueError, match="vecdot: axis -3"):
        xad.vecdot(a, b, axis=-3)


def test_complex_python_numbers_follow_the_default_dtype(xb):
    assert xad.asarray(1j).dtype is xad.complex64
    f = xad.full((2,), 1 + 2j)
    assert f.dtype is xad.complex64 and f.tolist() == [1 + 2j, 1 + 2j]
    assert xad.__array_namespace_info__().default_dtypes()["complex floating"] is xad.complex64
    xad.set_default_dtype(xad.float64)
    try:
        assert xad.asarray([1j]).dtype is xad.full((), 1j).dtype is xad.complex128
    finally:
        xad.set_default_dtype(xad.float32)


def test_floor_divide_and_expm1_special_cases_follow_the_standard(xb):
    inf = math.inf
    x, y = _t([inf, inf, -inf, 1.0, -1.0, 7.5, -7.5]), _t([2.0, -2.0, 2.0, -inf, inf, 2.0, 2.0])
    want = [inf, -inf, -inf, -0.0, -0.0, 3.0, -4.0]
    got = (x // y).tolist()
    assert got == want and [math.copysign(1, v) for v in got[3:5]] == [-1, -1]
    z = x.clone()
    z //= y
    assert z.tolist() == want and xad.floor_divide(x, 2.0).tolist()[:3] == [inf, inf, -inf]
    assert (xad.asarray([7, -7]) // 2).tolist() == [3, -4]
    e = xad.expm1(xad.asarray([complex(inf, 0.0), complex(-inf, 1.0), 1e-10 + 0j]))
    assert e.tolist()[:2] == [complex(inf, 0.0), complex(-1.0, 0.0)]
    assert e.tolist()[2].real == pytest.approx(1e-10, rel=1e-6)


def test_complex_tanh_at_infinity_keeps_the_sign_of_the_imaginary_part(xb):
    """tanh(+-inf + iy), y finite: +-1 with a zero of y's sign (the standard; NumPy's C99
    result takes sin(2y)'s sign: 1 - 0j for y = 2)."""
    inf = math.inf
    ys = [2.0, 1.0495983314821893e154, -2.0, 1.0, 0.0, -0.0]
    z = xad.asarray([complex(r, y) for r in (inf, -inf) for y in ys])
    got = xad.tanh(z).tolist()
    assert [v.real for v in got] == [1.0] * 6 + [-1.0] * 6
    assert [math.copysign(1, v.imag) for v in got] == [math.copysign(1, y) for y in ys] * 2
    assert all(v.imag == 0 for v in got)


def test_factories_take_one_shape_or_pytorchs_sizes(xb):
    for f in (xad.zeros, xad.ones, xad.empty):
        assert f((2, 3)).shape == f(2, 3).shape == f(shape=[2, 3]).shape == (2, 3)
        assert f(4).shape == (4,) and f(()).shape == ()
        assert next(iter(inspect.signature(f).parameters)) == "shape"


def test_asarray_of_tensors_stacks_them_on_their_backend(xb):
    a = xad.asarray([[1, 2], [3, 4]])
    t = xad.asarray([[a[i, j] for i in range(2)] for j in range(2)])
    assert t.backend is xb and t.tolist() == [[1, 3], [2, 4]]
    x = _t([1.0, 2.0], requires_grad=True)
    assert xad.gradcheck(lambda s: xad.asarray([s[1] * s[0], s[0]]), [x])
    assert xad.count_nonzero(xad.asarray([True, False, True])).tolist() == 2


def test_complex_sign_of_zero_and_tensor_rtol(xb):
    z = xad.sign(xad.asarray([complex(-0.0, -0.0), 3 + 4j]))
    assert [math.copysign(1, v.real) for v in z.tolist()] == [1, 1]
    assert z.tolist()[1] == pytest.approx(0.6 + 0.8j)
    a = _t([[2.0, 0.0], [0.0, 1e-9]])
    assert xad.linalg.matrix_rank(a, rtol=_t(1e-6)).tolist() == 1
    np.testing.assert_allclose(xad.linalg.pinv(a, rtol=_t(1e-6)).numpy(), [[0.5, 0], [0, 0]])
