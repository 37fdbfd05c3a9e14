"""torch.nn.utils.parametrize and parametrizations (weight_norm, spectral_norm, orthogonal)
and the hook forms (weight_norm, spectral_norm) against PyTorch in float64, with identical
weights (torch's state_dict loaded): state keys, forward values, gradients of the original
tensors, spectral norm's u/v through training steps and in eval, orthogonality."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import xad
import xad.nn as nn
from xad.nn.utils import parametrizations as XP
from xad.nn.utils import parametrize as XPZ

torch = pytest.importorskip("torch")
TP, TPZ = torch.nn.utils.parametrizations, torch.nn.utils.parametrize


def _np(t):
    return np.asarray(t.detach().numpy())


def _load(ours, theirs):
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})


def _same_state(ours, theirs, tol=1e-10):
    sd, tsd = ours.state_dict(), theirs.state_dict()
    assert list(sd) == list(tsd)
    for k in sd:
        np.testing.assert_allclose(_np(sd[k]), tsd[k].detach().numpy(), rtol=tol, atol=tol,
                                   err_msg=k)


def _same_grads(ours, theirs, tol=1e-9):
    tgrads = dict(theirs.named_parameters())
    for k, p in ours.named_parameters():
        assert (p.grad is None) == (tgrads[k].grad is None), k
        if p.grad is not None:
            np.testing.assert_allclose(_np(p.grad), tgrads[k].grad.numpy(), rtol=tol,
                                       atol=tol, err_msg=k)


def _pair(make_ours, make_theirs, x_shape, seed=0):
    """Two float64 modules with torch's weights, an input, and both outputs' sums' backward."""
    torch.manual_seed(seed)
    theirs = make_theirs()
    ours = make_ours()
    _load(ours, theirs)
    return ours, theirs, np.random.default_rng(seed).standard_normal(x_shape)


def _run(ours, theirs, x, tol=1e-10):
    y, ty = ours(xad.tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(_np(y), ty.detach().numpy(), rtol=tol, atol=tol)
    (y * y).sum().backward()
    (ty * ty).sum().backward()


def _modules(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).mT

        def right_inverse(self, a):
            return a.triu()

    class Scale(lib.nn.Module):
        def forward(self, x):
            return 2.0 * x

        def right_inverse(self, a):
            return a / 2.0

    class RankOne(lib.nn.Module):
        def forward(self, x, y):
            return x[:, None] * y[None, :]

        def right_inverse(self, z):
            return z[:, 0], z[0, :]

    return Symmetric, Scale, RankOne


def _linear(lib, n_in, n_out):
    return lib.nn.Linear(n_in, n_out).double() if lib is torch else \
        nn.Linear(n_in, n_out, dtype=xad.float64)


def test_register_parametrization_chain_matches_torch(xb):
    def make(lib, P):
        sym, scale, _ = _modules(lib)
        m = _linear(lib, 3, 3)
        P.register_parametrization(m, "weight", sym())
        P.register_parametrization(m, "weight", scale())
        return m
    ours, theirs, x = _pair(lambda: make(xad, XPZ), lambda: make(torch, TPZ), (4, 3))
    assert type(ours).__name__ == type(theirs).__name__ == "ParametrizedLinear"
    assert isinstance(ours, nn.Linear) and XPZ.is_parametrized(ours, "weight")
    assert not XPZ.is_parametrized(ours, "bias")
    _same_state(ours, theirs)
    _run(ours, theirs, x)
    _same_grads(ours, theirs)
    assert ours.parametrizations.weight.original.grad is not None
    # assignment goes through right_inverse, last parametrization first
    w = np.arange(9.0).reshape(3, 3)
    ours.weight = xad.tensor(w)
    with torch.no_grad():
        theirs.weight = torch.tensor(w)
    _same_state(ours, theirs)
    with pytest.raises(KeyError):
        theirs.weight = torch.nn.Parameter(torch.tensor(w))
    with pytest.raises(KeyError, match="parametrized"):
        ours.weight = nn.Parameter(xad.tensor(w))
    with XPZ.cached():
        assert ours.weight is ours.weight
    assert ours.weight is not ours.weight
    for leave in (True, False):
        a, b = _pair(lambda: make(xad, XPZ), lambda: make(torch, TPZ), (1,))[:2]
        XPZ.remove_parametrizations(a, "weight", leave_parametrized=leave)
        TPZ.remove_parametrizations(b, "weight", leave_parametrized=leave)
        assert type(a) is nn.Linear and not XPZ.is_parametrized(a)
        _same_state(a, b)


def test_right_inverse_with_several_tensors_and_unsafe(xb):
    def make(lib, P):
        _, _, rank_one = _modules(lib)
        m = _linear(lib, 3, 4)
        return P.register_parametrization(m, "weight", rank_one())
    ours, theirs, x = _pair(lambda: make(xad, XPZ), lambda: make(torch, TPZ), (2, 3))
    assert list(ours.state_dict()) == ["bias", "parametrizations.weight.original0",
                                       "parametrizations.weight.original1"]
    _same_state(ours, theirs)
    _run(ours, theirs, x)
    _same_grads(ours, theirs)
    with pytest.raises(ValueError, match="several"):
        XPZ.remove_parametrizations(ours, "weight", leave_parametrized=False)
    XPZ.remove_parametrizations(ours, "weight")
    TPZ.remove_parametrizations(theirs, "weight")
    _same_state(ours, theirs)

    class Pad(nn.Module):
        def forward(self, w):
            return xad.concat([w, w], axis=0)
    m = nn.Linear(3, 2, dtype=xad.float64)
    with pytest.raises(ValueError, match="unsafe=True"):
        XPZ.register_parametrization(m, "weight", Pad())
    XPZ.register_parametrization(m, "weight", Pad(), unsafe=True)
    assert m.weight.shape == (4, 3)
    with pytest.raises(ValueError, match="no parameter, buffer"):
        XPZ.register_parametrization(m, "nothing", Pad())


def _weight_norm_cases():
    return [(lambda lib: _linear(lib, 3, 4), (5, 3), 0), (lambda lib: _linear(lib, 3, 4),
                                                          (5, 3), 1),
            (lambda lib: _linear(lib, 3, 4), (5, 3), None),
            (lambda lib: (lib.nn.Conv2d(2, 3, 2).double() if lib is torch else
                          nn.Conv2d(2, 3, 2, dtype=xad.float64)), (1, 2, 4, 4), 0)]


@pytest.mark.parametrize("case", range(4))
def test_weight_norm_parametrization_matches_torch(xb, case):
    make, shape, dim = _weight_norm_cases()[case]
    ours, theirs, x = _pair(lambda: XP.weight_norm(make(xad), dim=dim),
                            lambda: TP.weight_norm(make(torch), dim=dim), shape)
    _same_state(ours, theirs)
    _run(ours, theirs, x)
    _same_grads(ours, theirs)  # of original0 (g) and original1 (v)


@pytest.mark.parametrize("case", range(4))
def test_weight_norm_hooks_match_torch(xb, case):
    make, shape, dim = _weight_norm_cases()[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ours, theirs, x = _pair(lambda: nn.utils.weight_norm(make(xad), dim=dim),
                                lambda: torch.nn.utils.weight_norm(make(torch), dim=dim), shape)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert any(k.endswith("weight_g") for k in ours.state_dict())
    _run(ours, theirs, x)
    _same_grads(ours, theirs)  # of weight_g and weight_v
    nn.utils.remove_weight_norm(ours)
    torch.nn.utils.remove_weight_norm(theirs)
    _same_state(ours, theirs)
    with pytest.raises(ValueError, match="no weight_norm"):
        nn.utils.remove_weight_norm(ours)


def _spectral_cases():
    return [(lambda lib: _linear(lib, 5, 3), (4, 5)),
            (lambda lib: (lib.nn.ConvTranspose2d(2, 3, 2).double() if lib is torch else
                          nn.ConvTranspose2d(2, 3, 2, dtype=xad.float64)), (1, 2, 3, 3))]


def _train_steps(ours, theirs, x, steps=3):
    opt = xad.optim.SGD(ours.parameters(), lr=0.1)
    topt = torch.optim.SGD(theirs.parameters(), lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        topt.zero_grad()
        _run(ours, theirs, x, tol=1e-9)
        _same_grads(ours, theirs)
        opt.step()
        topt.step()
        _same_state(ours, theirs, tol=1e-9)


@pytest.mark.parametrize("case", range(2))
def test_spectral_norm_parametrization_trains_as_torch(xb, case):
    make, shape = _spectral_cases()[case]
    ours, theirs, x = _pair(lambda: XP.spectral_norm(make(xad)),
                            lambda: TP.spectral_norm(make(torch)), shape)
    assert any(k.endswith("weight.0._u") for k in ours.state_dict())
    _same_state(ours, theirs)
    _train_steps(ours, theirs, x)  # u and v advance one power step per call, as torch's
    ours.eval()
    theirs.eval()
    with torch.no_grad():
        ty = theirs(torch.tensor(x))
    np.testing.assert_allclose(_np(ours(xad.tensor(x))), ty.numpy(), rtol=1e-9, atol=1e-9)
    _same_state(ours, theirs, tol=1e-9)  # eval leaves u and v as they were


@pytest.mark.parametrize("case", range(2))
def test_spectral_norm_hooks_train_as_torch(xb, case):
    make, shape = _spectral_cases()[case]
    ours, theirs, x = _pair(lambda: nn.utils.spectral_norm(make(xad)),
                            lambda: torch.nn.utils.spectral_norm(make(torch)), shape)
    assert [k for k in ours.state_dict() if "weight" in k] == \
        ["weight_orig", "weight_u", "weight_v"]
    _same_state(ours, theirs)
    _train_steps(ours, theirs, x)
    nn.utils.remove_spectral_norm(ours)
    torch.nn.utils.remove_spectral_norm(theirs)
    _same_state(ours, theirs, tol=1e-9)


ORTH = [(m, s, triv) for m in ("matrix_exp", "cayley", "householder")
        for s in ((3, 3), (5, 3), (3, 5)) for triv in (True, False)]


@pytest.mark.parametrize("orth_map,shape,triv", ORTH)
def test_orthogonal_matches_torch(xb, orth_map, shape, triv):
    torch.manual_seed(0)
    t0 = _linear(torch, shape[1], shape[0])
    ours = _linear(xad, shape[1], shape[0])
    _load(ours, t0)
    theirs = TP.orthogonal(t0, orthogonal_map=orth_map, use_trivialization=triv)
    XP.orthogonal(ours, orthogonal_map=orth_map, use_trivialization=triv)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    if not triv or shape[0] == shape[1]:  # no random completion: registration is torch's
        _same_state(ours, theirs, tol=1e-9)
    _load(ours, theirs)
    w = ours.weight
    q = w if shape[0] >= shape[1] else w.mT
    np.testing.assert_allclose(_np(q.mT @ q), np.eye(min(shape)), atol=1e-10)
    np.testing.assert_allclose(_np(w), theirs.weight.detach().numpy(), atol=1e-10)
    x = np.random.default_rng(1).standard_normal((2, shape[1]))
    _run(ours, theirs, x)
    _same_grads(ours, theirs)
    if not triv and orth_map != "householder":
        with pytest.raises(NotImplementedError):
            ours.weight = xad.tensor(np.eye(*shape))


def _batched(lib, shape):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.Parameter(lib.zeros(*shape, dtype=lib.float64))
    return M()


@pytest.mark.parametrize("orth_map,shape,triv", [("householder", (2, 4, 3), False),
                                                 ("cayley", (2, 3, 4), False),
                                                 ("matrix_exp", (2, 3, 3), True)])
def test_orthogonal_of_a_batch_of_matrices(xb, orth_map, shape, triv):
    torch.manual_seed(0)
    theirs, ours = _batched(torch, shape), _batched(xad, shape)
    with torch.no_grad():
        theirs.w.normal_()
    _load(ours, theirs)
    TP.orthogonal(theirs, "w", orthogonal_map=orth_map, use_trivialization=triv)
    XP.orthogonal(ours, "w", orthogonal_map=orth_map, use_trivialization=triv)
    _same_state(ours, theirs, tol=1e-9)  # registration: no random completion in these cases
    np.testing.assert_allclose(_np(ours.w), theirs.w.detach().numpy(), atol=1e-10)
    (ours.w * xad.tensor(np.arange(np.prod(shape)).reshape(shape))).sum().backward()
    (theirs.w * torch.arange(np.prod(shape)).reshape(shape)).sum().backward()
    _same_grads(ours, theirs)
