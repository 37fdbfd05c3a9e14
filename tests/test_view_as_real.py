"""``view_as_real`` and ``view_as_complex`` against PyTorch: views of the same memory (writes
through either side seen by the other, on every layout PyTorch allows), gradients of complex
leaves through them, their checks and errors, ``xad.jvp``/``vmap`` through them, and
``LBFGS`` with complex parameters, which runs on them as PyTorch's does."""

from __future__ import annotations

import numpy as np
import pytest

import xad
from xad import as_torch

torch = pytest.importorskip("torch")
T = as_torch.namespace()["torch"]

_G = np.random.default_rng(11)
Z0 = _G.standard_normal((3, 4)) + 1j * _G.standard_normal((3, 4))

# name -> the complex tensor viewed, from a complex128 (3, 4) tensor
LAYOUTS = {
    "contiguous": lambda z: z,
    "transposed": lambda z: z.T,
    "stepped": lambda z: z[:, ::2],
    "offset": lambda z: z[1:, 1:],
    "row": lambda z: z[2],
    "empty": lambda z: z[:, :0],
}


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return t.numpy()


def _same(got, want, tol=0.0):
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(_np(got), _np(want), rtol=tol, atol=tol)


def _writes(L, layout):
    """Both directions: a write through the real view, then a change of the base, then a
    write through a view of the view; every state read from both sides."""
    z = L.tensor(Z0, dtype=L.complex128)
    v = LAYOUTS[layout](z)
    r = L.view_as_real(v)
    seen = [r.clone()]
    r.mul_(2.0)
    seen.append(z.clone())
    z.add_(1 - 1j)
    seen.append(r.clone())
    r[..., 1].sub_(3.0)
    seen += [z.clone(), L.view_as_complex(r).clone()]
    return seen


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_view_as_real_shares_memory_both_ways(layout, xb):
    for got, want in zip(_writes(T, layout), _writes(torch, layout), strict=True):
        _same(got, want)


def _complex_writes(L):
    x = L.arange(24.0, dtype=L.float64).reshape(3, 4, 2)
    c = L.view_as_complex(x[:, 1:])
    seen = [c.clone()]
    c[0].mul_(1j)
    seen.append(x.clone())
    x[..., 0].neg_()
    seen.append(c.clone())
    return seen


def test_view_as_complex_shares_memory_both_ways(xb):
    for got, want in zip(_complex_writes(T), _complex_writes(torch), strict=True):
        _same(got, want)


LOSSES = {
    "sum of squares": lambda L, z: (L.view_as_real(z) ** 2 * L.arange(2.0)).sum(),
    "transposed": lambda L, z: (L.view_as_real(z.T)[..., 1] * L.view_as_real(z.T)[..., 0]).sum(),
    "round trip": lambda L, z: L.abs(L.view_as_complex(L.view_as_real(z) * 1.5) ** 2).sum(),
    "complex of real": lambda L, z: L.angle(L.view_as_complex(L.stack(
        [L.real(z) ** 2, L.imag(z) - 1.0], -1))).sum(),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_gradients_of_complex_leaves_are_pytorchs(name, xb):
    z = T.tensor(Z0, dtype=T.complex128, requires_grad=True)
    zt = torch.tensor(Z0, dtype=torch.complex128, requires_grad=True)
    LOSSES[name](T, z).backward()
    LOSSES[name](torch, zt).backward()
    _same(z.grad, zt.grad, 1e-12)


def test_view_as_complex_gradient_is_finite_differences(xb):
    x0 = np.random.default_rng(5).standard_normal((2, 3, 2))

    def f(x):
        return xad.real(xad.view_as_complex(x) ** 3).sum()

    assert xad.gradcheck(f, (xad.tensor(x0, dtype=xad.float64, requires_grad=True),))


def test_an_in_place_change_after_a_save_is_caught(xb):
    z = T.tensor(Z0, dtype=T.complex128, requires_grad=True) * 1
    r = T.view_as_real(z)
    s = r * r  # saves r
    z.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation|version"):
        s.sum().backward()


BAD_COMPLEX = [
    (lambda L, x: x.reshape(4, 3), "last dimension of size 2"),
    (lambda L, x: x.reshape(2, 6).T[:2], "stride 1"),
    (lambda L, x: x.reshape(2, 6)[:, :4].reshape(2, 2, 2).transpose(1, 2), "stride 1"),
    (lambda L, x: x[1:9].reshape(4, 2), "storage offset"),
    (lambda L, x: x.reshape(3, 4)[:, 1:3], "storage offset"),
    (lambda L, x: x.reshape(4, 3)[:, :2], "stride divisible by 2"),
    (lambda L, x: x[0], "last dimension of size 2"),
    (lambda L, x: x.int().reshape(6, 2), "float32 and float64"),
]


@pytest.mark.parametrize("i", range(len(BAD_COMPLEX)))
def test_view_as_complex_refuses_what_pytorch_refuses(i, xb):
    make, words = BAD_COMPLEX[i]
    with pytest.raises(RuntimeError, match=words):
        T.view_as_complex(make(T, T.arange(12.0, dtype=T.float64)))
    with pytest.raises(RuntimeError):
        torch.view_as_complex(make(torch, torch.arange(12.0, dtype=torch.float64)))


def test_view_as_real_refuses_a_real_tensor(xb):
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex"):
        T.view_as_real(T.arange(4.0))


def test_jvp_and_vmap_go_through(xb):
    z = xad.tensor(Z0, dtype=xad.complex128)
    t = xad.tensor(Z0 * 1j, dtype=xad.complex128)
    out, tangent = xad.jvp(lambda a: xad.view_as_real(a) * 2.0, (z,), (t,))
    _same(tangent, torch.view_as_real(torch.tensor(Z0 * 1j)) * 2.0, 1e-14)
    back = xad.vmap(lambda a: xad.view_as_complex(xad.view_as_real(a) + 1.0))(z)
    _same(back, torch.tensor(Z0 + 1 + 1j), 1e-14)


def _lbfgs(L, line_search):
    z = L.tensor(Z0[0], dtype=L.complex128, requires_grad=True)
    x = L.tensor(Z0[1].real, dtype=L.float64, requires_grad=True)
    opt = L.optim.LBFGS([z, x], lr=1.0, max_iter=6, history_size=3,
                        line_search_fn=line_search)

    def closure():
        opt.zero_grad()
        loss = (L.abs(z - 1j * x) ** 2).sum() + (L.abs(z) ** 4).sum() * 0.1 + \
            L.cos(L.real(z) * 3).sum()
        loss.backward()
        return loss

    losses = [opt.step(closure).item() for _ in range(3)]
    st = opt.state[z]
    return [z, x, st["d"], st["prev_flat_grad"]], losses + [st["func_evals"]]


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_with_complex_parameters_is_pytorchs(line_search, xb):
    (got, gl), (want, wl) = _lbfgs(T, line_search), _lbfgs(torch, line_search)
    np.testing.assert_allclose(gl, wl, rtol=1e-10)
    for a, b in zip(got, want, strict=True):
        _same(a, b, 1e-9)


def test_as_strided_through_a_complex_view_is_refused(xb):
    """Strided positions are not tracked across element types (as through view(dtype))."""
    z = T.tensor(Z0, dtype=T.complex128)
    for v in (T.view_as_real(z), T.view_as_complex(T.view_as_real(z))):
        with pytest.raises(NotImplementedError, match="view_as_(real|complex)"):
            v.as_strided((2,), (1,))
