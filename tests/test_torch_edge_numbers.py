"""Edge numbers against PyTorch 2.13 (values and gradients, float64) where xad gave other
numbers without an error: ``var``/``std`` with ``correction >= N``, ``nextafter`` of
integers, ties in ``topk``/``kthvalue``, and what the linear-algebra, FFT and reduction hunt
found. Expected values are torch's (written out, so the test runs without torch)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import xad

F64 = xad.float64
NAN, INF = math.nan, math.inf
X2 = [[1.0, 2.0], [3.0, 3.0]]  # a row with spread, a row without


def _same(got, want):
    np.testing.assert_array_equal(np.asarray(got, dtype=float), np.asarray(want, dtype=float))


# ----- var / std with correction >= N ---------------------------------------------------------
@pytest.mark.parametrize("name,c,value,grad", [
    ("var", 2, [INF, NAN], [[-INF, INF], [NAN, NAN]]),   # N - correction == 0
    ("var", 3, [INF, NAN], [[1.0, -1.0], [0.0, 0.0]]),   # < 0: torch's rule, 2(x-m)/(N-c)
    ("std", 2, [INF, NAN], [[NAN, NAN], [NAN, NAN]]),
    ("std", 3, [INF, NAN], [[0.0, 0.0], [NAN, NAN]])])
def test_method_var_std_past_the_sample_size_as_torch(name, c, value, grad, xb):
    x = xad.tensor(X2, dtype=F64, requires_grad=True)
    with np.errstate(all="ignore"):
        y = getattr(x, name)(dim=1, correction=c)
        y.sum().backward()
    _same(y.tolist(), value)  # xad gave [nan, nan]: NaN where torch gives inf
    _same(x.grad.tolist(), grad)


@pytest.mark.parametrize("name", ["var", "std"])
def test_function_var_std_past_the_sample_size_is_nan(name, xb):
    """The standard: "If N - correction is less than or equal to 0, the variance is NaN"."""
    x = xad.tensor(X2, dtype=F64)
    with np.errstate(all="ignore"):
        for c in (2, 3):
            _same(getattr(xad, name)(x, axis=1, correction=c).tolist(), [NAN, NAN])


# ----- nextafter of integers ------------------------------------------------------------------
@pytest.mark.parametrize("args", [("t", "t"), (2, "t"), ("t", 2), ("b", "b")])
def test_nextafter_of_integers_raises(args, xb):
    """torch: NotImplementedError ("not implemented for 'Long'"); xad gave float64."""
    t = xad.tensor([1, 2])
    vals = {"t": t, "b": t > 1}
    with pytest.raises(TypeError, match="nextafter: integer operands"):
        xad.nextafter(*(vals.get(a, a) for a in args))


def test_nextafter_of_an_integer_and_a_float_promotes(xb):
    t = xad.tensor([1, 2])
    y = xad.nextafter(t, xad.tensor([0.0, 3.0], dtype=xad.float32))
    assert y.dtype == xad.float32  # torch's
    assert y.tolist() == np.nextafter(np.float32([1, 2]), np.float32([0, 3])).tolist()


def test_copysign_gradient_to_other_is_zeros(xb):
    """torch 2.13 gives ``other`` a zero gradient; xad gave none, so ``autograd.grad`` to it
    raised ("not used") and ``other.grad`` stayed None."""
    x = xad.tensor([1.0, -2.0, 3.0], dtype=F64, requires_grad=True)
    y = xad.tensor([-1.0], dtype=F64, requires_grad=True)  # broadcast over x
    gx, gy = xad.autograd.grad(xad.copysign(x, y).sum(), (x, y))
    _same(gx.tolist(), [-1.0, 1.0, -1.0])
    _same(gy.tolist(), [0.0])
    xad.copysign(x, y).sum().backward()
    _same(y.grad.tolist(), [0.0])


def test_nextafter_gradient_is_torchs(xb):
    """torch 2.13: gradient 1 to ``self`` (0 where ``self == other``, NaN included as
    unequal) and 0 to ``other``; the double backward is ``where``'s. xad recorded nothing
    (the result did not require grad); ``nextafter_`` in a graph raised."""
    a = [1.0, 2.0, 3.0, NAN, 1.0, INF, 0.0, -0.0]
    b = [0.0, 5.0, 3.0, 1.0, NAN, 0.0, -0.0, 0.0]
    want_a = [1.0, 2.0, 0.0, 4.0, 5.0, 6.0, 0.0, 0.0]  # torch's, for the weights 1..8
    w = xad.arange(1.0, 9.0, dtype=F64)
    for inplace in (False, True):
        x, y = (xad.tensor(v, dtype=F64, requires_grad=True) for v in (a, b))
        out = (x * 1).nextafter_(y) if inplace else xad.nextafter(x, y)
        assert out.requires_grad
        _same(out.tolist(), np.nextafter(a, b))
        v = xad.tensor(w.tolist(), dtype=F64, requires_grad=True)
        gx, gy = xad.autograd.grad(out, (x, y), v, create_graph=True)
        _same(gx.tolist(), want_a)
        _same(gy.tolist(), [0.0] * 8)
        (gv,) = xad.autograd.grad(gx.sum(), (v,))
        _same(gv.tolist(), [1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    y = xad.tensor([2.0, 2.0], dtype=F64, requires_grad=True)  # only other requires grad
    (gy,) = xad.autograd.grad(xad.nextafter(xad.tensor([1.0, 3.0], dtype=F64), y).sum(), (y,))
    _same(gy.tolist(), [0.0, 0.0])
    x = xad.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    _, t = xad.jvp(lambda u: xad.nextafter(u, 2.0), (x.detach(),), (xad.ones(2, dtype=F64),))
    _same(t.tolist(), [1.0, 0.0])  # torch.func.jvp's


# ----- topk / kthvalue at ties ----------------------------------------------------------------
def test_topk_and_kthvalue_ties_in_ascending_index_order(xb):
    """torch 2.13 CPU is deterministic at ties but in its introselect's order (topk smallest 3
    of this row: [2, 4, 1]; kthvalue(2): 4), which PyTorch leaves unspecified; xad's order is
    the stable one (docs/PORTING.md) on every backend; the values agree with torch's."""
    x = xad.tensor([[3.0, 1.0, 1.0, 2.0, 1.0, 3.0]], dtype=F64)
    v, i = x.topk(3, largest=False)
    assert (v.tolist(), i.tolist()) == ([[1.0, 1.0, 1.0]], [[1, 2, 4]])
    v, i = x.topk(3)
    assert (v.tolist(), i.tolist()) == ([[3.0, 3.0, 2.0]], [[0, 5, 3]])
    v, i = x.kthvalue(2)
    assert (v.tolist(), i.tolist()) == ([1.0], [2])
    v, i = x.kthvalue(5, dim=1)
    assert (v.tolist(), i.tolist()) == ([3.0], [0])


# ----- norms: PyTorch's Tensor.norm with a negative p at a zero element ------------------------
@pytest.mark.parametrize("p", [-1, -2, -0.5])
@pytest.mark.parametrize("values", [[0.0, 1.0, -2.0], [0.0, 0.0, 3.0]])
def test_method_norm_negative_p_with_a_zero_is_zero(p, values, xb):
    """torch: (sum |x|^p)^(1/p) with 0^p = inf gives 0, gradient 0; xad gave 0.667 and 3.0
    (the zeros left out of the sum) with nonzero gradients."""
    x = xad.tensor(values, dtype=F64, requires_grad=True)
    with np.errstate(all="ignore"):
        y = x.norm(p=p)
        y.backward()
    assert y.item() == 0.0
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    with np.errstate(all="ignore"):  # the standard's function has the same value
        assert xad.linalg.vector_norm(x.detach(), ord=p).item() == 0.0


# ----- eigh / svd: the values alone at repeated values -----------------------------------------
W3 = [1.0, 2.0, 3.0]


def test_eigh_eigenvalues_alone_at_repeated_eigenvalues(xb):
    """torch and JAX: V diag(g) V^T = [[3,0,0],[0,2,0],[0,0,1]]; xad gave all NaN."""
    a = xad.tensor([[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 1.0]], dtype=F64,
                   requires_grad=True)
    (xad.linalg.eigh(a).eigenvalues * xad.tensor(W3, dtype=F64)).sum().backward()
    assert a.grad.tolist() == [[3.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 1.0]]


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("shape", [(3, 3), (3, 2), (2, 3)])
def test_svd_singular_values_alone_at_repeated_values(shape, full, xb):
    """torch and JAX: U diag(g) Vh (the singular vectors returned; at repeated values any
    basis of their space), finite; xad gave NaN (and raised for full_matrices=True with a
    non-square matrix, which only the singular vectors need)."""
    k = min(shape)
    a = np.zeros(shape)
    a[range(k), range(k)] = [2.0, 2.0, 1.0][:k]
    x = xad.tensor(a, dtype=F64, requires_grad=True)
    u, s, vh = xad.linalg.svd(x, full_matrices=full)
    (s * xad.tensor(W3[:k], dtype=F64)).sum().backward()
    u, vh = u.numpy()[:, :k], vh.numpy()[:k]
    np.testing.assert_allclose(x.grad.numpy(), (u * W3[:k]) @ vh, atol=1e-12)


# ----- det at singular matrices -----------------------------------------------------------------
@pytest.mark.parametrize("a,want", [
    ([[1.0, 2.0], [2.0, 4.0]], [[4.0, -2.0], [-2.0, 1.0]]),
    ([[0.0]], [[1.0]]),
    ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]],
     [[-3.0, 6.0, -3.0], [6.0, -12.0, 6.0], [-3.0, 6.0, -3.0]]),
    ([[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]])])
def test_det_gradient_at_a_singular_matrix_is_the_cofactor_matrix(a, want, xb):
    """JAX's (the cofactor matrix adj(a)^T); xad raised (inv failed) on NumPy, torch and
    array_api_strict and gave NaN on JAX; torch 2.13 gives zeros for the first and third."""
    x = xad.tensor(a, dtype=F64, requires_grad=True)
    xad.linalg.det(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), want, atol=1e-12)
    _, t = xad.jvp(xad.linalg.det, (x.detach(),), (xad.ones_like(x.detach()),))
    assert t.item() == pytest.approx(float(np.sum(want)), abs=1e-12)


def test_det_second_order_as_jax(xb):
    """The cofactor's own rule: d2 det at the identity (JAX: H[ij, kl] = d_ij d_kl - d_il d_kj)."""
    h = xad.hessian(xad.linalg.det)(xad.eye(2, dtype=F64)).numpy().reshape(4, 4)
    e = np.eye(2)
    want = (np.einsum("ij,kl->ijkl", e, e) - np.einsum("il,kj->ijkl", e, e)).reshape(4, 4)
    np.testing.assert_allclose(h, want, atol=1e-12)


# ----- torch.linalg.matrix_norm under as_torch ---------------------------------------------------
def test_as_torch_matrix_norm_fro_at_zero_and_torch_keywords(xb):
    """torch: gradient 0 at a zero matrix and ``(A, ord, dim, keepdim)``; under as_torch it
    was xad.linalg.matrix_norm: NaN there, and ``keepdim=``/a positional ``ord`` raised."""
    from xad import as_torch

    torch_ = as_torch.namespace()["torch"]
    x = xad.zeros((2, 2), dtype=F64, requires_grad=True)
    torch_.linalg.matrix_norm(x).backward()
    assert x.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    a = xad.tensor(np.arange(24.0).reshape(2, 3, 4), dtype=F64)
    y = torch_.linalg.matrix_norm(a, 1, dim=(0, 2), keepdim=True)
    assert y.shape == (1, 3, 1)  # torch: max over dim 2 of the sums over dim 0
    np.testing.assert_allclose(y.numpy().ravel(), [18.0, 26.0, 34.0])


# ----- max(dim)/min(dim) at a tie of 0.0 and -0.0 ------------------------------------------------
@pytest.mark.parametrize("largest", [True, False])
def test_max_dim_value_is_the_element_at_its_index(largest, xb):
    """torch 2.13: ``x.max(dim)``'s value is the element at its (first) index, so its sign
    at a tie of 0.0 and -0.0; xad's came from the library's max (NumPy's: the other sign)."""
    a = [[0.0, -0.0], [-0.0, 0.0], [-0.0, 0.0], [0.0, -0.0]]
    x = xad.tensor(a, requires_grad=True)
    v, i = x.max(1) if largest else x.min(1)
    assert str(v.tolist()) == "[0.0, -0.0, -0.0, 0.0]" and i.tolist() == [0, 0, 0, 0]
    v, i = x.max(0, keepdim=True) if largest else x.min(0, keepdim=True)
    assert str(v.tolist()) == "[[0.0, -0.0]]" and i.tolist() == [[0, 0]]
    v.sum().backward()
    assert x.grad.tolist() == [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]


def _kernels(fn, *args):
    """``fn``'s result and the kernels it launched on cupy-sim (from a synchronised start)."""
    from cupy_sim.streams import COUNTS

    xad.get_backend().synchronize()
    COUNTS.reset()
    out = fn(*args)
    return out, COUNTS.kernels


def test_max_dim_is_argmax_and_one_gather_on_cupy_sim():
    """``x.max(dim)`` of a floating tensor: the backend's ``argmax`` and a
    ``take_along_axis`` of the values there, 2 kernels (5 before: ``argmax``, ``arange``,
    ``==``, ``where``, ``max``); its backward 4 (``arange``, ``==``, the 0 and ``where``; 5
    before: the index again, and the mask's own ``where``)."""
    with xad.use_backend("cupy-sim"):
        x = xad.randn(8, 16, requires_grad=True)
        for f in (lambda t: t.max(1), lambda t: t.min(0, keepdim=True)):
            (v, i), n = _kernels(f, x)
            assert n == 2
            assert _kernels(xad.autograd.grad, v, [x], xad.ones_like(v))[1] == 4
