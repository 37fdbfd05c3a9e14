"""Defects found by SciPy's own array-API suites run on xad (ci/scipy_suite.sh), one test each.

Each failed on xad while the same SciPy test passed on array_api_strict.
"""

from __future__ import annotations

import numpy as np
import pytest

import xad


def test_iter_of_0d_refused_at_iter(xb):
    # np.iterable (matplotlib, via scipy.cluster's dendrogram) asks iter() and catches TypeError
    with pytest.raises(TypeError):
        iter(xad.asarray(1.0))
    assert not np.iterable(xad.asarray(1.0))
    assert [float(v) for v in xad.asarray([1.0, 2.0])] == [1.0, 2.0]


@pytest.mark.parametrize("index", [np.int64(2), np.int32(2), np.intp(2), np.array(2)])
def test_numpy_integer_index(xb, index):
    # scipy.cluster.vq's kmeans2 indexes with a NumPy integer from a host random generator
    x = xad.reshape(xad.arange(12.0), (3, 4))
    np.testing.assert_array_equal(x[index, :].numpy(), [8.0, 9.0, 10.0, 11.0])
    np.testing.assert_array_equal(x[index].numpy(), [8.0, 9.0, 10.0, 11.0])
    assert x[1, index].shape == ()


def test_broadcast_error_in_numpys_words(xb):
    # scipy.stats.power matches NumPy's "cannot be broadcast" (JAX: "Incompatible shapes")
    with pytest.raises(ValueError, match=r"broadcast_arrays: .*cannot be broadcast.*axis -1"):
        xad.broadcast_arrays(xad.zeros(2), xad.zeros(3))


def test_python_true_index_is_a_new_axis(xb):
    # scipy.ndimage.vectorized_filter indexes a 0-d input with footprint=True
    x = xad.reshape(xad.arange(6.0), (2, 3))
    assert x[True].shape == (1, 2, 3) and x[True, 1].shape == (1, 3)
    assert x[..., True].shape == (2, 3, 1) and xad.asarray(1.0)[True].shape == (1,)
    np.testing.assert_array_equal(x[True].numpy(), x[None].numpy())
    assert x[False].shape == (0, 2, 3) and xad.asarray(1.0)[False].shape == (0,)
    with pytest.raises(TypeError, match="indexing: a Python bool False"):
        x[False, 1]


def test_string_asarray_names_unsupported_dtype(xb):
    # scipy.ndimage matches "Unsupported" (SciPy runs xad on NumPy; the other backends refuse
    # strings in their own words first)
    numpy = xb.name == "numpy"
    with pytest.raises(TypeError if numpy else (TypeError, ValueError),
                       match="Unsupported dtype" if numpy else ""):
        xad.asarray("a duck")


def test_numpy_ufuncs_on_tensors_as_on_pytorchs_cpu_tensors(xb):
    # matplotlib's np.isfinite(limit) (scipy.cluster's dendrogram) and np.abs(t).max() in
    # SciPy's filtfilt tests: a ufunc runs in NumPy on a host tensor without grad and gives
    # tensors, as PyTorch's CPU tensors do; an ndarray on an operator's left stays in the graph
    t = xad.asarray([-1.0, 2.0])
    if not xb.is_host:  # a device: the implicit copy np.asarray refuses
        with pytest.raises(TypeError, match="implicit conversion"):
            np.abs(t)
        return
    for got, want in [(np.abs(t), [1.0, 2.0]), (np.isfinite(t), [True, True]),
                      (np.maximum(t, 0.5), [0.5, 2.0]), (np.exp(t[:0]), [])]:
        assert isinstance(got, xad.Tensor) and got.tolist() == want
    assert bool(np.isfinite(xad.asarray(1.0))) and np.add.reduce(t).tolist() == 1.0
    w = xad.tensor([1.0, 2.0], requires_grad=True)
    y = np.asarray([3.0, 4.0]) * w + np.float64(1.0) - (np.ones(2) < w)
    y.sum().backward()
    assert isinstance(y, xad.Tensor) and w.grad.tolist() == [3.0, 4.0]
    with pytest.raises(RuntimeError, match="requires grad"):
        np.exp(w)
    a = np.zeros(2)
    a += t  # into an ndarray: NumPy's, as with np.asarray(t)
    assert a.tolist() == [-1.0, 2.0]
    with pytest.raises(TypeError, match="out= cannot be a tensor"):
        np.add(a, a, out=(t,))
