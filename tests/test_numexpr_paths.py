"""The NumPy backend's numexpr kernels (backends/numexpr_kernels.py, the optional ``fast``
extra) against the plain expressions they are traced from, and ``xad.set_num_threads``.

The ``numexpr`` fixture runs each test with the kernels forced on for every size
(``MIN_SIZE = 0``) and off (NumPy only; the default, ``XAD_NUMEXPR`` unset): one cheap way
to cover both paths, whether or not CI installs the extra (without it the "on" case
skips). Agreement is to float rounding of the same expression: a few ulp of the operands' scale
(the random operands are of order 1).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from xad_backends import numexpr_kernels as nk
from xad_backends.numpy_backend import NumpyBackend

import xad
import xad.nn.functional as F
from xad.ops import fused

ULP = {np.float32: 4 * np.finfo(np.float32).eps, np.float64: 4 * np.finfo(np.float64).eps}


@pytest.fixture(params=["numexpr", "numpy"])
def numexpr(request, monkeypatch):
    """True with the numexpr kernels on for every size, False with them off."""
    on = request.param == "numexpr"
    if on and not nk.available():
        pytest.skip("numexpr (the 'fast' extra) is not installed")
    monkeypatch.setattr(nk, "MIN_SIZE", 0 if on else None)
    return on


def _gelu_tanh(ns):
    return lambda x: x * 0.5 * (ns.tanh((x + x * x * x * 0.044715) * 0.7978845608) + 1)


def _adam(ns):  # the shape of an optimiser's update: state, gradient and 0-d scalars
    return lambda x, m, v, g, lr, b1, b2, eps: \
        x - lr * (b1 * m + (1 - b1) * g) / (ns.sqrt(b2 * v + (1 - b2) * g * g) + eps)


def _uses_maximum(ns):  # numexpr has no maximum with NumPy's NaN rule: runs as NumPy
    return lambda x, y: ns.maximum(x, y) * 2


def _uses_power(ns):  # an operator the tracer does not follow: runs as NumPy
    return lambda x, y: x ** 2 + abs(y)


def _args(name, rng, dtype):
    x = rng.standard_normal((6, 33)).astype(dtype)
    x[0, :3] = (np.inf, -np.inf, np.nan)
    s = [np.asarray(v, dtype) for v in (1e-3, 0.9, 0.999, 1e-8)]
    return {
        "exp_shifted": (x, x[:, :1] * 0.5),
        "centre": (x, x.sum(axis=-1, keepdims=True), np.asarray(1 / 33, dtype)),
        "inverse_sqrt": (np.abs(x[:, :1]), np.asarray(1 / 33, dtype), np.asarray(1e-5, dtype)),
        "gelu_tanh": (x,),
        "adam": (x, x * 0.1, x * x, x[::-1].copy(), *s),
        "uses_maximum": (x, x.T.copy().T[::-1]),
        "uses_power": (x, x[::-1]),
        "mixed": (x, x.astype(np.float32 if dtype == np.float64 else np.float64)),
    }[name]


MAKERS = {"exp_shifted": fused._exp_shifted, "centre": fused._centre,
          "inverse_sqrt": fused._inverse_sqrt, "gelu_tanh": _gelu_tanh, "adam": _adam,
          "uses_maximum": _uses_maximum, "uses_power": _uses_power,
          "mixed": lambda ns: lambda x, y: x * y + 1}
PLAIN = ("uses_maximum", "uses_power", "mixed")  # what numexpr cannot run as NumPy does


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NumPy's, at inf - inf
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(MAKERS))
def test_kernel_matches_plain_expression(numexpr, name, dtype):
    """Each kernel (xad/ops/fused.py's, and shapes of GELU and an optimiser update) gives the
    plain NumPy expression's numbers, dtype and shape, infinities and NaN included."""
    b = NumpyBackend()
    args = _args(name, np.random.default_rng(0), dtype)
    k = nk.kernel(MAKERS[name], b.xp)
    got, want = k(*args), MAKERS[name](b.xp)(*args)
    if numexpr:  # numexpr ran it (its results in the arrays' dtype), except where it cannot
        assert (list(k.programs.values())[0] is None) == (name in PLAIN)
    for g, w in zip(*(v if isinstance(v, tuple) else (v,) for v in (got, want))):
        assert g.dtype == w.dtype and g.shape == w.shape
        # atol: a 1-ulp difference in tanh near -1 is no smaller after ``tanh(.) + 1``
        np.testing.assert_allclose(g, w, rtol=ULP[dtype], atol=8 * ULP[dtype],
                                   equal_nan=True)


def test_kernel_untraceable_and_small_run_as_numpy(monkeypatch):
    """A function numexpr cannot run as NumPy does is compiled to nothing (NumPy runs it);
    arrays under the threshold never reach numexpr."""
    if not nk.available():
        pytest.skip("numexpr (the 'fast' extra) is not installed")
    b, x = NumpyBackend(), np.ones(8)
    monkeypatch.setattr(nk, "MIN_SIZE", 0)
    k = nk.kernel(_uses_maximum, b.xp)
    k(x, x)
    assert k.programs == {(x.dtype, x.dtype): None}
    monkeypatch.setattr(nk, "MIN_SIZE", 9)
    k = nk.kernel(fused._exp_shifted, b.xp)
    k(x, x)
    assert k.programs == {}


def test_threshold_from_environment():
    assert nk._min_size("") is None and nk._min_size("0") is None
    assert nk._min_size("65536") == (65536 if nk.available() else None)
    with pytest.raises(ValueError, match="XAD_NUMEXPR"):
        nk._min_size("fast")


def _layer_grads(xb, dtype):
    x = xad.tensor(np.random.default_rng(1).standard_normal((4, 5, 24)), dtype=dtype,
                   requires_grad=True)
    w = xad.tensor(np.linspace(0.5, 1.5, 24), dtype=dtype, requires_grad=True)
    y = F.softmax(x, axis=-1) * 2 + F.log_softmax(x * 0.5, axis=1) \
        + F.layer_norm(x, 24, weight=w) + xad.tanh(x) + xad.sigmoid(x) + xad.relu(x)
    y.backward(xad.ones_like(y))
    return [t.numpy() if hasattr(t, "numpy") else xb.to_numpy(t._array)
            for t in (y, x.grad, w.grad)]


def test_layers_agree_with_and_without_numexpr(xb, numexpr, monkeypatch):
    """softmax, log_softmax, layer norm and the activations' gradients, forward and
    backward, give the same numbers with the kernels on as off (every backend: only NumPy's
    kernels change)."""
    for dtype in (xad.float32, xad.float64):
        got = _layer_grads(xb, dtype)
        monkeypatch.setattr(nk, "MIN_SIZE", None)
        want = _layer_grads(xb, dtype)
        monkeypatch.setattr(nk, "MIN_SIZE", 0 if numexpr else None)
        if numexpr and xb.name == "numpy":  # the kernels did run (not NumPy's fallback)
            assert sum(bool(p) for k in xb._elementwise.values() for p in k.programs.values()) >= 4
        tol = 64 * np.finfo(np.float32 if dtype == xad.float32 else np.float64).eps
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def test_set_num_threads_sets_blas_and_numexpr():
    """``xad.set_num_threads`` sets BLAS's pools (threadpoolctl) and numexpr's together."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = threadpoolctl.threadpool_info()
    ne_before = nk._ne.get_num_threads() if nk.available() else None
    torch = sys.modules.get("torch")
    torch_before = torch.get_num_threads() if torch is not None else None
    # a change from where the pools start (one thread each under xdist: tests/conftest.py)
    n = 2 if all(p["num_threads"] == 1 for p in before) else 1
    try:
        xad.set_num_threads(n)
        assert all(p["num_threads"] == n for p in threadpoolctl.threadpool_info())
        if nk.available():
            assert nk._ne.get_num_threads() == n
        if torch is not None:
            assert torch.get_num_threads() == n
    finally:
        for p in before:
            threadpoolctl.threadpool_limits(p["num_threads"], user_api=p["user_api"])
        if ne_before is not None:
            nk._ne.set_num_threads(ne_before)
        if torch_before is not None:
            torch.set_num_threads(torch_before)
    with pytest.raises(ValueError, match="set_num_threads"):
        xad.set_num_threads(0)
