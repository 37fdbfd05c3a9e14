"""Complex leaves that require grad, as PyTorch's: ``.grad`` is ``dL/dRe z + i dL/dIm z``
of a real loss ``L``, checked against torch's autograd in complex128 and against finite
differences of the real and imaginary parts; accumulation, hooks, ``retain_grad``,
``autograd.grad`` (second order), in-place writes through views, the errors, SGD's steps
and ``clip_grad_norm_`` with complex parameters, and ``capturable``, which refuses them."""

from __future__ import annotations

import numpy as np
import pytest

import xad
from xad import as_torch

torch = pytest.importorskip("torch")
T = as_torch.namespace()["torch"]

_G = np.random.default_rng(3)
Z0 = _G.standard_normal((3, 3)) + 1j * _G.standard_normal((3, 3))
W0 = _G.standard_normal((3, 3)) + 1j * _G.standard_normal((3, 3))

# name -> real loss f(L, z, w) of two complex leaves
LOSSES = {
    "mul": lambda L, z, w: L.real(z * w * (0.5 - 2j)).sum(),
    "exp": lambda L, z, w: L.imag(L.exp(z * 0.5) * w).sum(),
    "matmul": lambda L, z, w: L.abs(z @ w).sum(),
    "sin": lambda L, z, w: L.real(L.sin(z) + w * w).sum(),
    "abs": lambda L, z, w: (L.abs(z) * L.abs(w)).sum(),
    "real": lambda L, z, w: (L.real(z) * L.imag(w)).sum(),
    "imag": lambda L, z, w: (L.imag(z) ** 2).sum() + L.real(w).sum(),
    "conj": lambda L, z, w: L.imag(L.conj(z) * w).sum(),
    "angle": lambda L, z, w: (L.angle(z) * L.real(w)).sum(),
    "z*conj(z)": lambda L, z, w: L.real(z * L.conj(z) + w).sum(),
}


def _leaves(L, dtype=None):
    dt = L.complex128 if dtype is None else dtype
    return L.tensor(Z0, dtype=dt, requires_grad=True), L.tensor(W0, dtype=dt, requires_grad=True)


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().resolve_neg().numpy()
    return t.numpy()


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_leaf_grads_are_pytorchs(name, xb):
    f = LOSSES[name]
    (z, w), (zt, wt) = _leaves(T), _leaves(torch)
    f(T, z, w).backward()
    f(torch, zt, wt).backward()
    for got, want in ((z.grad, zt.grad), (w.grad, wt.grad)):
        assert got.dtype is xad.complex128
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("name", ["mul", "abs", "angle", "z*conj(z)", "matmul"])
def test_leaf_grads_are_finite_differences(name, xb):
    """``dL/dRe z + i dL/dIm z`` by central differences of each part."""
    f = LOSSES[name]
    z, w = _leaves(T)
    f(T, z, w).backward()
    want, h = np.zeros(Z0.shape, complex), 1e-6
    for idx in np.ndindex(*Z0.shape):
        for unit in (1.0, 1j):
            d = np.zeros(Z0.shape, complex)
            d[idx] = h * unit
            up = f(T, xad.tensor(Z0 + d), xad.tensor(W0)).item()
            down = f(T, xad.tensor(Z0 - d), xad.tensor(W0)).item()
            want[idx] += unit * (up - down) / (2 * h)
    np.testing.assert_allclose(z.grad.numpy(), want, rtol=1e-6, atol=1e-6, err_msg=name)


def _accumulate(L):
    z, w = _leaves(L)
    seen = []
    z.register_hook(lambda g: seen.append(g) or g * 1j)
    y = z * w
    y.retain_grad()
    L.real(y * y).sum().backward(retain_graph=True)
    L.abs(y).sum().backward()
    return [z.grad, w.grad, y.grad, *seen]


def test_accumulation_hooks_and_retain_grad(xb):
    for got, want in zip(_accumulate(T), _accumulate(torch), strict=True):
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12, atol=1e-12)


def _second_order(L):
    z, w = _leaves(L)
    loss = L.abs(L.sin(z) * w).sum()
    g, = L.autograd.grad(loss, [z], create_graph=True)
    h = L.autograd.grad(L.real(g * L.conj(g)).sum() + L.imag(g).sum(), [z, w])
    return [g, *h]


def test_autograd_grad_second_order(xb):
    for got, want in zip(_second_order(T), _second_order(torch), strict=True):
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-10, atol=1e-10)


def _explicit_gradient(L):
    z, w = _leaves(L)
    y = L.exp(z) * w
    y.backward(L.tensor(W0.conj() + 0.5, dtype=L.complex128))
    return [z.grad, w.grad]


def test_backward_with_a_complex_gradient(xb):
    for got, want in zip(_explicit_gradient(T), _explicit_gradient(torch), strict=True):
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12, atol=1e-12)


def test_complex_scalar_needs_a_gradient(xb):
    z = xad.tensor(1 + 2j, requires_grad=True)
    with pytest.raises(RuntimeError, match="implicitly created only for real scalar outputs"
                                           ".*complex"):
        (z * z).backward()
    with pytest.raises(RuntimeError, match="both must be complex"):
        (z * z).backward(xad.tensor(1.0, dtype=xad.float32))
    x = xad.tensor(1.0, dtype=xad.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="both must be complex"):  # was cast, losing im
        (x * 2).backward(xad.tensor(1 + 1j))


def test_which_dtypes_can_require_grad(xb):
    for make in (lambda: xad.tensor([1 + 1j], requires_grad=True),
                 lambda: xad.tensor([1 + 1j]).requires_grad_(),
                 lambda: xad.nn.Parameter(xad.tensor([1 + 1j]))):
        t = make()
        assert t.requires_grad and t.is_leaf and t.dtype is xad.complex64
        d = t.detach()
        assert not d.requires_grad and d.dtype is xad.complex64
    with pytest.raises(TypeError, match="floating or complex dtype, got xad.int64"):
        xad.tensor([1], requires_grad=True)
    with pytest.raises(TypeError, match=r"only floating tensors \(and complex ones\)"):
        xad.tensor([True]).requires_grad_()
    with pytest.raises(TypeError, match="floating or complex dtype"):
        xad.nn.Parameter(xad.tensor([1]))


def _through_view(L):
    z, w = _leaves(L)
    c = z * 1
    c[1:].mul_(2j)
    L.abs(c * w).sum().backward()
    return [z.grad, w.grad]


def test_inplace_through_views(xb):
    for got, want in zip(_through_view(T), _through_view(torch), strict=True):
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12, atol=1e-12)
    z, _ = _leaves(T)
    c = z * 1
    s = c * c  # saves c
    c[0].mul_(1j)
    with pytest.raises(RuntimeError, match="modified by an inplace operation|version"):
        T.real(s).sum().backward()
    with pytest.raises(RuntimeError, match="leaf"):
        z[0].mul_(2)


def _steps(L, name, kw):
    z = L.tensor(Z0, dtype=L.complex128, requires_grad=True)
    x = L.tensor(Z0.real, dtype=L.float64, requires_grad=True)
    opt = getattr(L.optim, name)([z, x], lr=0.1, **kw)
    for _ in range(4):
        opt.zero_grad()
        ((L.abs(z - 1j) ** 3).sum() + (L.abs(z) * x).sum()).backward()
        opt.step()
    st = opt.state.get(z, {})
    return [z, x] + [st[k] for k in sorted(st) if getattr(st[k], "shape", ()) == Z0.shape]


OPTIMISERS = [
    ("SGD", {}), ("SGD", {"momentum": 0.9, "dampening": 0.1}),
    ("SGD", {"momentum": 0.9, "nesterov": True, "weight_decay": 0.3, "maximize": True}),
    ("Adam", {}), ("Adam", {"amsgrad": True, "weight_decay": 0.2}),
    ("Adam", {"betas": (0.5, 0.7), "maximize": True}),
    ("AdamW", {"weight_decay": 0.3}), ("AdamW", {"amsgrad": True}),
    ("RMSprop", {"maximize": True}),
    ("RMSprop", {"centered": True, "momentum": 0.5, "weight_decay": 0.1}),
    ("Adamax", {"weight_decay": 0.1}), ("RAdam", {"weight_decay": 0.1}),
    ("RAdam", {"decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("NAdam", {}), ("NAdam", {"decoupled_weight_decay": True, "weight_decay": 0.1}),
    ("Adadelta", {"rho": 0.5, "weight_decay": 0.1}), ("ASGD", {"t0": 1, "weight_decay": 0.1}),
    ("Adagrad", {"lr_decay": 0.1, "initial_accumulator_value": 0.2, "weight_decay": 0.1}),
    ("Rprop", {}), ("Rprop", {"etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2), "maximize": True}),
]
# PyTorch keeps NAdam's mu_product and ASGD's eta/mu in float32 tensors: the real parameter
# beside the complex one differs by as much (1e-8), so these compare at 1e-7
_LOOSE = {"NAdam", "ASGD"}


@pytest.mark.parametrize("name,kw", OPTIMISERS)
def test_optimiser_steps_are_pytorchs(name, kw, xb):
    """Parameters and state after four steps: PyTorch's runs each rule on the real and
    imaginary parts (Adam's exp_avg_sq holds re^2 and im^2, not |g|^2)."""
    got, want = _steps(T, name, kw), _steps(torch, name, kw)
    assert len(got) == len(want)
    tol = 1e-7 if name in _LOOSE else 1e-11
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol, err_msg=name)


def test_capturable_with_complex_parameters_is_refused(xb):
    z = xad.tensor(Z0, requires_grad=True)
    opt = xad.optim.Adam([z], capturable=True)
    T.abs(z).sum().backward()
    if xb.name.startswith("cupy"):
        with pytest.raises(NotImplementedError, match="Adam: capturable=True .* complex"):
            opt.step()
    else:  # capturable is ignored off CuPy: the host step
        opt.step()


def test_clip_grad_norm_of_complex_gradients(xb):
    out = []
    for L in (torch, T):
        z, w = _leaves(L)
        x = L.tensor(Z0.real, dtype=L.float64, requires_grad=True)
        (L.abs(z * w).sum() + (x * x).sum() * 3).backward()
        for norm in (2.0, 1.0, float("inf"), 3.0):
            total = L.nn.utils.clip_grad_norm_([z, w, x], 1.0, norm_type=norm)
            out.append([_np(t).copy() for t in (total, z.grad, w.grad, x.grad)])  # torch: in place
    half = len(out) // 2
    for want, got in zip(out[:half], out[half:], strict=True):
        assert got[0].dtype == np.float64
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    z, w = _leaves(T)
    T.abs(z).sum().backward()
    with pytest.raises(NotImplementedError, match="clip_grad_value_.*complex128"):
        xad.nn.utils.clip_grad_value_([z], 0.1)



def test_parameter_list_makes_complex_parameters(xb):
    """A plain complex tensor put in a ParameterList becomes a Parameter that requires grad,
    as PyTorch's (before, one that did not)."""
    plist = xad.nn.ParameterList([xad.tensor(Z0), xad.tensor([1, 2])])
    assert plist[0].requires_grad and plist[0].dtype is xad.complex128
    assert not plist[1].requires_grad


# name -> f(L, z): holomorphic and not, for forward mode
FORWARD = {
    "mul": lambda L, z: z * z * (1 - 2j), "exp": lambda L, z: L.exp(z),
    "sin": lambda L, z: L.sin(z), "matmul": lambda L, z: z @ z, "abs": lambda L, z: L.abs(z),
    "conj": lambda L, z: L.conj(z) * z, "real": lambda L, z: L.real(z) * z,
    "angle": lambda L, z: L.angle(z), "z*conj(z)": lambda L, z: z * L.conj(z),
}


@pytest.mark.parametrize("name", sorted(FORWARD))
def test_jvp_of_complex_primals_is_torch_funcs(name, xb):
    f = FORWARD[name]
    want = torch.func.jvp(lambda z: f(torch, z), (torch.tensor(Z0),), (torch.tensor(W0),))
    got = xad.jvp(lambda z: f(T, z), (xad.tensor(Z0),), (xad.tensor(W0),))
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-12, err_msg=name)


def test_jacfwd_refuses_complex_inputs(xb):
    """torch.func.jacfwd refuses complex inputs; xad's gave d/dRe z alone (for ``abs`` not
    the Jacobian of anything PyTorch or JAX defines), now it raises."""
    with pytest.raises(NotImplementedError, match="jacfwd .*argument 0 is complex"):
        xad.jacfwd(lambda z: T.abs(z))(xad.tensor(Z0[0]))
