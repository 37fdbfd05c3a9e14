"""The torch and jax adapters used directly, and the generic einsum and erf on the standard."""

from __future__ import annotations

import math

import numpy as np
import pytest

import xad.backend as B
from xad.einsum_fallback import einsum_generic
from xad.erf_fallback import erf_generic

B._ensure_xad_backends()


# ----- adapters ------------------------------------------------------------------------------
def _torch():
    pytest.importorskip("torch", reason="torch is not installed")
    from xad_backends.torch_backend import TorchBackend

    return TorchBackend()


def _jax():
    pytest.importorskip("jax", reason="jax is not installed")
    from xad_backends.jax_backend import JaxBackend

    return JaxBackend()


@pytest.fixture(params=["torch", "jax"])
def backend(request):
    return _torch() if request.param == "torch" else _jax()


def _zeros(b, shape):
    return b.zeros(shape, b.xp.float64)


def test_index_add_repeated_indices_accumulate(backend):
    out = backend.index_add(_zeros(backend, (3,)), [0, 0], 1.0)
    np.testing.assert_array_equal(backend.to_numpy(out), [2.0, 0.0, 0.0])
    idx = backend.asarray([2, 0, 2, 2])
    out = backend.index_add(_zeros(backend, (3,)), idx, backend.asarray([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(backend.to_numpy(out), [2.0, 0.0, 8.0])


def test_index_add_mixed_keys(backend):
    x = _zeros(backend, (3, 4))
    idx = backend.asarray([1, 1, 3])
    vals = backend.asarray(np.arange(9.0).reshape(3, 3))
    got = backend.to_numpy(backend.index_add(x, (slice(None), idx), vals))
    ref = np.zeros((3, 4))
    np.add.at(ref, (slice(None), np.array([1, 1, 3])), np.arange(9.0).reshape(3, 3))
    np.testing.assert_array_equal(got, ref)
    got = backend.to_numpy(backend.index_add(_zeros(backend, (3, 4)), (None, Ellipsis, 1),
                                             backend.asarray([1.0, 2.0, 3.0])))
    np.testing.assert_array_equal(got[:, 1], [1.0, 2.0, 3.0])
    got = backend.to_numpy(backend.index_add(_zeros(backend, (3, 4)), (0, [2, 2]), 1.5))
    assert got[0, 2] == 3.0 and got.sum() == 3.0


def test_index_add_bool_mask(backend):
    mask = np.array([[True, False, False, True]] * 3)
    got = backend.index_add(_zeros(backend, (3, 4)), backend.asarray(mask), 2.0)
    np.testing.assert_array_equal(backend.to_numpy(got), np.where(mask, 2.0, 0.0))


def test_rng_reproducible_and_state_round_trip(backend):
    f64 = backend.xp.float64
    backend.manual_seed(7)
    a = backend.to_numpy(backend.randn((5,), f64))
    backend.manual_seed(7)
    np.testing.assert_array_equal(backend.to_numpy(backend.randn((5,), f64)), a)
    state = backend.get_rng_state()
    u = backend.to_numpy(backend.rand((4,), backend.xp.float32))
    p = backend.to_numpy(backend.permutation(6))
    backend.set_rng_state(state)
    np.testing.assert_array_equal(backend.to_numpy(backend.rand((4,), backend.xp.float32)), u)
    np.testing.assert_array_equal(backend.to_numpy(backend.permutation(6)), p)
    assert sorted(p.tolist()) == list(range(6))
    assert ((u >= 0) & (u < 1)).all()


def test_numpy_round_trip_copies(backend):
    a = np.arange(6.0).reshape(2, 3)[:, ::-1]
    x = backend.from_numpy(a)
    assert x.dtype == backend.xp.float64
    back = backend.to_numpy(x)
    np.testing.assert_array_equal(back, a)
    back[0, 0] = 100.0  # the host copy is private
    assert backend.to_numpy(x)[0, 0] == a[0, 0]
    a2 = np.ones(3)
    y = backend.asarray(a2)
    a2[0] = 5.0  # so is the device copy
    assert backend.to_numpy(y)[0] == 1.0
    assert backend.item(backend.asarray([2.5])) == 2.5


def test_asarray_casts_a_0d_host_array(backend):
    # torch.asarray(0-d float64 ndarray, dtype=float16, copy=True) raised "can't alias"
    # (seen as xad.tensor(np.array(1.5), dtype=xad.float16) failing on the torch backend)
    for dtype in (backend.xp.float16, backend.xp.float32):
        a = np.array(1.5)
        x = backend.asarray(a, dtype=dtype)
        a[...] = 7.0  # still a copy
        assert x.dtype == dtype and x.shape == () and float(backend.to_numpy(x)) == 1.5


def test_float64_einsum_erf(backend):
    x = backend.asarray(np.linspace(-3, 3, 7), dtype=backend.xp.float64)
    assert x.dtype == backend.xp.float64
    np.testing.assert_allclose(backend.to_numpy(backend.erf(x)),
                               [math.erf(v) for v in np.linspace(-3, 3, 7)], atol=1e-15)
    m = backend.asarray(np.arange(6.0).reshape(2, 3))
    got = backend.einsum("ij,j->i", m, backend.asarray([1.0, 1.0, 1.0]))
    np.testing.assert_array_equal(backend.to_numpy(got), [3.0, 12.0])


def test_torch_global_state_untouched():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    before = torch.get_default_dtype()
    b = _torch()
    b.manual_seed(1)
    b.randn((2,), torch.float64)
    assert torch.get_default_dtype() == before
    assert b.device == torch.device("cpu") and b.mutable


def test_jax_immutable_and_x64():
    b = _jax()
    import jax.numpy as jnp

    assert not b.mutable
    x = b.zeros((2,), jnp.float64)
    y = b.index_add(x, [1], 1.0)
    assert x.dtype == jnp.float64 and float(x.sum()) == 0.0 and float(y[1]) == 1.0


# ----- generic einsum and erf on array_api_strict --------------------------------------------
EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii->", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]),
    ("...ij,...jk->...ik", [(5, 1, 2, 3), (6, 3, 4)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ij,j->i", [(2, 3), (3,)]),
    ("ijk->k", [(2, 3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ii", [(3, 3)]),
    ("iij,jkk->ik", [(2, 2, 3), (3, 4, 4)]),
    ("iii->i", [(3, 3, 3)]),
    ("bij,bjk->bki", [(4, 2, 3), (4, 3, 5)]),
    ("ij,kl->", [(2, 3), (4, 5)]),
    ("Ab,bA", [(2, 3), (3, 2)]),
    ("i...->...", [(2, 3, 4)]),
    (",->", [(), ()]),
]


@pytest.mark.parametrize(("subscripts", "shapes"), EINSUM_CASES)
def test_einsum_generic_matches_numpy(subscripts, shapes):
    xp = pytest.importorskip("array_api_strict", reason="array_api_strict is not installed")
    rng = np.random.default_rng(0)
    ops = [rng.standard_normal(s) for s in shapes]
    got = einsum_generic(xp, subscripts, *[xp.asarray(o) for o in ops])
    ref = np.einsum(subscripts, *ops)
    assert tuple(got.shape) == ref.shape
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-12, atol=1e-12)


def test_einsum_generic_errors():
    xp = pytest.importorskip("array_api_strict", reason="array_api_strict is not installed")
    a = xp.ones((2, 3))
    with pytest.raises(ValueError):
        einsum_generic(xp, "ijk->i", a)
    with pytest.raises(ValueError):
        einsum_generic(xp, "ij->k", a)
    with pytest.raises(ValueError):
        einsum_generic(xp, "ij,jk->ik", a)


def test_erf_generic_float64():
    xp = pytest.importorskip("array_api_strict", reason="array_api_strict is not installed")
    x = np.linspace(-6, 6, 2001)
    got = np.asarray(erf_generic(xp, xp.asarray(x)))
    ref = np.array([math.erf(v) for v in x])
    assert np.max(np.abs(got - ref)) <= 1e-14
    special = erf_generic(xp, xp.asarray([np.inf, -np.inf, np.nan, 0.0]))
    np.testing.assert_array_equal(np.asarray(special)[[0, 1, 3]], [1.0, -1.0, 0.0])
    assert np.isnan(np.asarray(special)[2])


def test_erf_generic_keeps_dtype_and_device():
    xp = pytest.importorskip("array_api_strict", reason="array_api_strict is not installed")
    dev = xp.Device("device1")
    x = xp.asarray([0.25, 2.5], dtype=xp.float32, device=dev)
    y = erf_generic(xp, x)
    assert y.dtype == xp.float32 and y.device == dev
    y = y.to_device(xp.Device("CPU_DEVICE"))
    np.testing.assert_allclose(np.asarray(y), [math.erf(0.25), math.erf(2.5)], rtol=1e-6)


# ----- the NumPy namespace's fast paths -------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("other", ["zero", "minus_zero", "array", "row", "int", "float",
                                   "float_minus_zero", "float_nan"])
def test_numpy_where_same_bits_as_np_where(dtype, other):
    from xad_backends.numpy_backend import NumpyBackend

    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 128)).astype(dtype)
    x[0, :4] = [np.inf, -np.inf, np.nan, -0.0]
    y = {"zero": np.asarray(0.0, dtype), "minus_zero": np.asarray(-0.0, dtype),
         "array": rng.standard_normal((64, 128)).astype(dtype),
         "row": rng.standard_normal(128).astype(dtype), "int": 0, "float": 2.5,
         "float_minus_zero": -0.0, "float_nan": math.nan}[other]
    cond = rng.standard_normal((64, 128)) > 0
    cond[0, :4] = False
    where = NumpyBackend().xp.where
    for got, want in [(where(cond, x, y), np.where(cond, x, y)),
                      (where(cond, y, x), np.where(cond, y, x))]:
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()  # inf, NaN and the sign of zero kept
