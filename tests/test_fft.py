"""xad.fft against JAX, on every backend in float64: values of real results of the
transforms, gradients (``jax.grad``) and Hessian-vector products of real losses of complex
transforms (tests/test_linalg.py's harness); frequencies and shifts; errors.

(tests/op_table.py checks the primitives against finite differences to second order.)
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from test_linalg import jax_tests

import xad


def _z(xp, a, b):
    """The complex tensor ``a + i b`` in either namespace."""
    return a + 1j * b if xp is jnp else xad.complex_from_parts(a, b)


def _power(xp, z):
    return xp.abs(z) ** 2


def _re_im(xp, z):
    return xp.real(z) * xp.imag(z) + xp.real(z)


N1, N2 = [(6,)], [(3, 4)]
ZN1, ZN2 = [(5,), (5,)], [(3, 4), (3, 4)]

# name: (function of (xp, *real inputs) returning real arrays, input shapes)
CASES = {
    "fft": (lambda xp, a: _power(xp, xp.fft.fft(a)), N1),
    "fft_n_pad_ortho": (lambda xp, a: _re_im(xp, xp.fft.fft(a, n=9, norm="ortho")), N1),
    "fft_n_crop_axis0": (lambda xp, a: _re_im(xp, xp.fft.fft(a, n=2, axis=0)), N2),
    "fft_complex": (lambda xp, a, b: _re_im(xp, xp.fft.fft(_z(xp, a, b))), ZN1),
    "ifft": (lambda xp, a, b: _re_im(xp, xp.fft.ifft(_z(xp, a, b), norm="forward")), ZN2),
    "fftn": (lambda xp, a: _re_im(xp, xp.fft.fftn(a)), N2),
    "fftn_s_axes": (lambda xp, a, b: _power(xp, xp.fft.fftn(_z(xp, a, b), s=(5, 2),
                                                            axes=(1, 0))), ZN2),
    "ifftn": (lambda xp, a, b: _re_im(xp, xp.fft.ifftn(_z(xp, a, b), norm="ortho")), ZN2),
    "rfft": (lambda xp, a: _re_im(xp, xp.fft.rfft(a)), N1),
    "rfft_odd_n": (lambda xp, a: _power(xp, xp.fft.rfft(a, n=7, norm="forward")), N1),
    "rfftn": (lambda xp, a: _re_im(xp, xp.fft.rfftn(a)), N2),
    "rfftn_s": (lambda xp, a: _re_im(xp, xp.fft.rfftn(a, s=(4, 3), norm="ortho")), N2),
    "irfft": (lambda xp, a, b: xp.fft.irfft(_z(xp, a, b)) ** 2, ZN1),
    "irfft_odd_n": (lambda xp, a, b: xp.fft.irfft(_z(xp, a, b), n=7, norm="ortho") ** 2, ZN1),
    "irfftn": (lambda xp, a, b: xp.fft.irfftn(_z(xp, a, b)) ** 2, ZN2),
    "irfftn_s": (lambda xp, a, b: xp.fft.irfftn(_z(xp, a, b), s=(2, 5), axes=(0, 1),
                                                norm="forward") ** 2, ZN2),
    "hfft": (lambda xp, a, b: xp.fft.hfft(_z(xp, a, b), n=6) ** 2, ZN1),
    "ihfft": (lambda xp, a: _re_im(xp, xp.fft.ihfft(a, norm="ortho")), N1),
    "fftshift": (lambda xp, a: xp.fft.fftshift(a) * a, N2),
    "ifftshift_axis": (lambda xp, a: xp.fft.ifftshift(a, axes=1) * a, N2),
}


test_values_match_jax, test_first_and_second_derivatives_match_jax = jax_tests(CASES)


def test_complex_results_match_jax(xb):
    a = np.random.default_rng(0).standard_normal((3, 4))
    got = xad.fft.rfftn(xad.tensor(a, dtype=xad.float64), s=(3, 6))
    assert got.dtype == xad.complex128 and not got.requires_grad
    want = np.asarray(jnp.fft.rfftn(jnp.asarray(a), s=(3, 6)))
    np.testing.assert_allclose(xad.real(got).numpy() + 1j * xad.imag(got).numpy(), want,
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies(name, xb):
    f = getattr(xad.fft, name)(7, d=0.5, dtype=xad.float64)
    assert f.backend is xb and f.dtype == xad.float64 and not f.requires_grad
    np.testing.assert_allclose(f.numpy(), getattr(np.fft, name)(7, d=0.5), rtol=1e-15)
    assert getattr(xad.fft, name)(4).dtype == xad.get_default_dtype()


def test_parseval_gradient_is_exact(xb):
    x = xad.tensor([1.0, 2.0, 3.0, 4.0], dtype=xad.float64, requires_grad=True)
    (xad.abs(xad.fft.fft(x)) ** 2).sum().backward()
    assert x.grad.dtype == xad.float64
    np.testing.assert_allclose(x.grad.numpy(), 8.0 * np.arange(1.0, 5.0), rtol=1e-12)


def test_errors_name_the_call(xb):
    x = xad.ones((2, 4))
    with pytest.raises(ValueError, match="fft.fft: norm must be"):
        xad.fft.fft(x, norm="unitary")
    with pytest.raises(ValueError, match=r"fft.fftn: s \(4,\) and axes \(0, 1\)"):
        xad.fft.fftn(x, s=(4,), axes=(0, 1))
    with pytest.raises(ValueError, match="at least 1, got 0"):
        xad.fft.rfft(x, n=0)
    with pytest.raises(TypeError, match="fft.rfftn: needs a real floating tensor"):
        xad.fft.rfftn(xad.fft.fft(x))


def test_namespace_reaches_fft(xb):
    x = xad.tensor([1.0, 1.0])
    assert x.__array_namespace__().fft is xad.fft
