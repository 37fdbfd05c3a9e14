"""Module machinery: registration, traversal, state_dict round trips and errors, modes,
moving between backends, repr; and xad.nn.utils."""

from __future__ import annotations

import numpy as np
import pytest

import xad
import xad.nn as nn
import xad.nn.functional as F


def _mlp():
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Dropout(0.2),
                         nn.Linear(4, 2))


def test_parameter_is_a_leaf_tensor():
    p = nn.Parameter(xad.zeros(2, 3))
    assert isinstance(p, xad.Tensor) and p.is_leaf and p.requires_grad
    assert repr(p).startswith("Parameter containing:")
    y = p * 2
    assert type(y) is xad.Tensor and not y.is_leaf
    with pytest.raises(TypeError, match="floating"):
        nn.Parameter(xad.tensor([1, 2]))
    assert not nn.Parameter(xad.tensor([1, 2]), requires_grad=False).requires_grad


def test_registration_and_traversal():
    net = _mlp()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["0.weight", "0.bias", "1.weight", "1.bias", "4.weight", "4.bias"]
    assert [n for n, _ in net.named_buffers()] == ["1.running_mean", "1.running_var",
                                                   "1.num_batches_tracked"]
    assert len(list(net.children())) == 5 and len(list(net.modules())) == 6
    assert [n for n, _ in net.named_modules()][:2] == ["", "0"]
    assert net[0].weight.shape == (4, 3) and len(net[1:3]) == 2
    with pytest.raises(TypeError, match="Parameter"):
        net[0].weight = xad.zeros(4, 3)
    shared = nn.Linear(2, 2)
    both = nn.Sequential(shared, nn.Tanh(), shared)
    assert len(list(both.parameters())) == 2
    assert len(list(nn.ModuleList([nn.Linear(1, 1), nn.Linear(1, 1)]).parameters())) == 4
    assert len(list(nn.Linear(2, 2, bias=False).parameters())) == 1


def test_custom_module_and_errors():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(xad.ones(1))
            self.register_buffer("offset", xad.zeros(1))
            self.register_buffer("tmp", xad.zeros(1), persistent=False)
            self.body = nn.Linear(2, 1)

        def forward(self, x):
            return self.body(x) * self.scale + self.offset

    net = Net()
    assert list(net.state_dict()) == ["scale", "offset", "body.weight", "body.bias"]
    assert net(xad.ones(3, 2)).shape == (3, 1)

    class Broken(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(xad.ones(1))
    with pytest.raises(AttributeError, match="super"):
        Broken()
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(1)
    with pytest.raises(AttributeError, match="nothing"):
        _ = net.nothing


def test_state_dict_round_trip(xb):
    a, b = _mlp(), _mlp()
    a(xad.randn(5, 3))  # changes the running statistics
    sd = a.state_dict()
    assert list(sd) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                        "1.running_var", "1.num_batches_tracked", "4.weight", "4.bias"]
    assert all(not t.requires_grad for t in sd.values())
    res = b.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    for k, v in b.state_dict().items():
        assert np.array_equal(v.numpy(), sd[k].numpy()), k
    assert isinstance(b[0].weight, nn.Parameter) and b[0].weight.requires_grad
    # loading copies: changing the source later does not change b
    with xad.no_grad():
        a[0].weight += 1.0
    assert not np.array_equal(a[0].weight.numpy(), b[0].weight.numpy())
    with xad.no_grad():
        a[0].weight -= 1.0
    # host arrays are accepted too
    b.load_state_dict({k: v.numpy().copy() for k, v in a.state_dict().items()})
    x = xad.randn(4, 3)
    a.eval(), b.eval()
    assert np.allclose(a(x).numpy(), b(x).numpy())


def test_load_state_dict_errors():
    net = _mlp()
    sd = net.state_dict()
    bad = dict(sd)
    bad["0.weight"] = xad.zeros(5, 3)
    with pytest.raises(RuntimeError, match=r"'0\.weight'.*\(5, 3\).*\(4, 3\)"):
        net.load_state_dict(bad)
    missing = {k: v for k, v in sd.items() if k != "4.bias"}
    missing["extra.weight"] = xad.zeros(1)
    with pytest.raises(RuntimeError, match=r"missing keys: '4\.bias'") as e:
        net.load_state_dict(missing)
    assert "unexpected keys: 'extra.weight'" in str(e.value)
    res = net.load_state_dict(missing, strict=False)
    assert res.missing_keys == ["4.bias"] and res.unexpected_keys == ["extra.weight"]


def test_train_eval_and_zero_grad():
    net = _mlp()
    assert all(m.training for m in net.modules())
    net.eval()
    assert not any(m.training for m in net.modules())
    x = xad.randn(3, 3)
    assert np.array_equal(net(x).numpy(), net(x).numpy())  # no dropout in eval
    net.train()
    assert net[3].training
    net(x).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_to_backend_keeps_parameters(xb):
    with xad.use_backend("numpy"):
        net = _mlp()
    params = list(net.parameters())
    net.to(xb)
    moved = list(net.parameters())
    assert all(p is q for p, q in zip(params, moved))
    for p in moved:
        assert isinstance(p, nn.Parameter) and p.is_leaf and p.requires_grad
        assert p.backend is xb
    assert all(b.backend is xb for b in net.buffers())
    out = net(xad.randn(5, 3))
    F.cross_entropy(out, xad.tensor([0, 1, 1, 0, 1])).backward()
    assert all(p.grad.backend is xb for p in net.parameters())


def test_to_dtype():
    net = _mlp().to(xad.float64)
    assert all(p.dtype == xad.float64 for p in net.parameters())
    assert net[1].num_batches_tracked.dtype == xad.int64
    assert net.float()[0].weight.dtype == xad.float32


def test_repr():
    r = repr(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Dropout(0.1))))
    assert r == ("Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n"
                 "  (1): ReLU()\n  (2): Sequential(\n    (0): Dropout(p=0.1, inplace=False)\n"
                 "  )\n)")
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"


# ----- utils ------------------------------------------------------------------------------
def test_clip_grad_norm(xb):
    a = xad.tensor([3.0, 0.0], requires_grad=True)
    b = xad.tensor([[4.0]], requires_grad=True)
    ((a * a).sum() * 0.5 + (b * b).sum() * 0.5).backward()
    total = nn.utils.clip_grad_norm_([a, b], 1.0)
    assert abs(total.item() - 5.0) < 1e-5
    assert np.allclose(a.grad.numpy(), [0.6, 0.0], atol=1e-5)
    assert np.allclose(b.grad.numpy(), [[0.8]], atol=1e-5)
    assert a.grad.dtype == xad.float32
    total = nn.utils.clip_grad_norm_([a, b], 10.0, norm_type=float("inf"))
    assert abs(total.item() - 0.8) < 1e-5 and np.allclose(b.grad.numpy(), [[0.8]], atol=1e-5)
    nn.utils.clip_grad_value_([a, b], 0.7)
    assert np.allclose(b.grad.numpy(), [[0.7]])


def test_clip_grad_norm_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    gs = [rng.standard_normal((3, 2)), rng.standard_normal(4)]
    ours = [xad.tensor(np.zeros_like(g), requires_grad=True) for g in gs]
    theirs = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in gs]
    for p, t, g in zip(ours, theirs, gs):
        p.grad, t.grad = xad.tensor(g), torch.tensor(g)
    for norm in (2.0, 1.0, 3.0):
        n1 = nn.utils.clip_grad_norm_(ours, 0.5, norm_type=norm)
        n2 = torch.nn.utils.clip_grad_norm_(theirs, 0.5, norm_type=norm)
        assert np.isclose(n1.item(), n2.item())
        for p, t in zip(ours, theirs):
            assert np.allclose(p.grad.numpy(), t.grad.numpy())


def _clipped(lib, grads, dtype, max_norm, **kw):
    """``clip_grad_norm_`` of ``grads`` (NumPy arrays, None for no gradient) in ``lib``:
    the total and the clipped gradients, in float64 on the host."""
    ps = []
    for g in grads:
        if lib is xad:
            p = xad.zeros(np.shape(g), dtype=getattr(xad, dtype), requires_grad=True)
            p.grad = None if g is None else xad.tensor(g.copy(), dtype=p.dtype)
        else:
            p = lib.zeros(np.shape(g), dtype=getattr(lib, dtype), requires_grad=True)
            p.grad = None if g is None else lib.tensor(g, dtype=p.dtype)
        ps.append(p)
    total = lib.nn.utils.clip_grad_norm_(ps, max_norm, **kw)
    host = (lambda t: t.numpy()) if lib is xad else (lambda t: t.float().numpy())
    return float(total), [None if p.grad is None else host(p.grad).astype(float) for p in ps]


_RNG_CLIP = np.random.default_rng(3)
_MANY = [_RNG_CLIP.standard_normal((3, 2)), np.zeros(2)] + [
    _RNG_CLIP.standard_normal(4) * 3 for _ in range(9)]  # more than 8: CuPy joins them


@pytest.mark.parametrize("dtype,grads,max_norm,kw", [
    ("float64", _MANY, 1.0, dict(norm_type=0)),  # raised ZeroDivisionError
    ("float64", _MANY, 1.0, dict(norm_type=-float("inf"))),  # total 1.0, not 0.0
    ("float64", _MANY[:3], 1.0, dict(norm_type="inf", foreach=True)),  # raised TypeError
    ("float16", [np.full(4, 300.0)], 1.0, {}),  # g * g overflowed: total inf, gradients 0
    ("float16", [np.full(4, 1e-4), None], 1e-5, {}),  # g * g underflowed: not clipped
    ("float16", [np.full(400, 300.0)], 1.0, dict(norm_type=1)),  # past float16: inf in both
], ids=["order-0", "order-minus-inf", "inf-as-text-foreach", "f16-large", "f16-small",
        "f16-overflow"])
def test_clip_grad_norm_edge_orders_and_half_precision_match_torch(xb, dtype, grads,
                                                                   max_norm, kw):
    torch = pytest.importorskip("torch")
    if dtype == "float16" and xb._dtypes.get(xad.float16) is None:
        pytest.skip(f"{xb.name} has no float16")
    total, ours = _clipped(xad, grads, dtype, max_norm, **kw)
    ref_total, ref = _clipped(torch, grads, dtype, max_norm, **kw)
    assert np.isclose(total, ref_total, rtol=1e-3), (total, ref_total)
    for a, b in zip(ours, ref):
        assert (a is None) == (b is None)
        if a is not None:
            # float16 subnormals are 6e-8 apart: PyTorch's 1e-5 / total is a reciprocal
            # rounded to float16, then a product, one step from the rounded quotient
            np.testing.assert_allclose(a, b, rtol=2e-3, atol=6e-8 if dtype == "float16" else 1e-12)


@pytest.mark.parametrize("clip", ["norm", "norm-inf", "with_norm", "value"])
@pytest.mark.parametrize("n", [2, 11], ids=["few", "joined"])  # more than 8: CuPy joins them
def test_clipping_scales_each_grad_in_place_as_torch(xb, clip, n):
    """PyTorch scales each ``.grad`` in place: a reference to it, or a view of it, taken
    before the call reads the clipped values (xad replaced the ``.grad`` tensors, so both
    kept the unclipped gradient, a wrong number in code that collects the gradients first)."""
    torch = pytest.importorskip("torch")
    grads = [np.arange(1.0, 7.0) * (k + 1) for k in range(n)]
    kept = {}
    for lib in (xad, torch):
        ps = [lib.zeros(6, dtype=lib.float64, requires_grad=True) for _ in grads]
        for p, g in zip(ps, grads):
            p.grad = lib.tensor(g.copy(), dtype=lib.float64)
        held, view = [p.grad for p in ps], ps[-1].grad[2:4]
        u = lib.nn.utils
        if clip == "value":
            u.clip_grad_value_(ps, 2.5)
        elif clip == "with_norm":
            u.clip_grads_with_norm_(ps, 1.0, u.get_total_norm(held))
        else:
            u.clip_grad_norm_(ps, 1.0, norm_type=2.0 if clip == "norm" else "inf")
        assert all(h is p.grad for h, p in zip(held, ps))
        kept[lib] = [np.asarray(t.numpy()) for t in held + [view]]
    for a, b in zip(kept[xad], kept[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 0, 3.0])
def test_get_total_norm_and_clip_grads_with_norm_match_torch(xb, norm_type):
    # PyTorch 2.13's two halves of clip_grad_norm_ (they were missing)
    torch = pytest.importorskip("torch")
    total, grads = {}, {}
    for lib in (xad, torch):
        ps = [lib.zeros(g.shape, dtype=lib.float64, requires_grad=True) for g in _MANY]
        for p, g in zip(ps, _MANY):
            p.grad = lib.tensor(g.copy(), dtype=lib.float64)
        total[lib] = lib.nn.utils.get_total_norm([p.grad for p in ps], norm_type)
        lib.nn.utils.clip_grads_with_norm_(ps, 0.5, total[lib], foreach=None)
        grads[lib] = np.concatenate([np.ravel(np.asarray(p.grad.numpy())) for p in ps])
    assert np.isclose(float(total[xad]), float(total[torch]), rtol=1e-12)
    np.testing.assert_allclose(grads[xad], grads[torch], rtol=1e-12, atol=1e-15)
    with pytest.raises(RuntimeError, match="get_total_norm: the total norm"):
        xad.nn.utils.get_total_norm(xad.tensor([float("nan")]), error_if_nonfinite=True)


def test_parameters_to_vector(xb):
    net = nn.Sequential(nn.Linear(3, 2), nn.Tanh(), nn.Linear(2, 1))
    v = nn.utils.parameters_to_vector(net.parameters())
    assert v.shape == (11,)
    nn.utils.vector_to_parameters(v * 0 + 1, net.parameters())
    assert np.all(net[2].bias.numpy() == 1) and net[0].weight.requires_grad
    with pytest.raises(ValueError, match="11"):
        nn.utils.vector_to_parameters(xad.zeros(3), net.parameters())


def test_deepcopy_keeps_the_backend_and_copies_the_values(xb):
    import copy

    m = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
    c = copy.deepcopy(m)
    x = xad.ones(4, 3)
    assert c[0].weight._backend is m[0].weight._backend
    assert np.array_equal(xb.to_numpy(c(x)._array), xb.to_numpy(m(x)._array))
    with xad.no_grad():
        c[2].bias.add_(1.0)  # the copy changes, the original does not
    assert not np.array_equal(xb.to_numpy(c(x)._array), xb.to_numpy(m(x)._array))
    (c(x) + m(x)).sum().backward()  # the copy and the original mix in one graph
    assert m[0].weight.grad is not None and c[0].weight.grad is not None


def test_buffer_assignment_registers_as_pytorchs(xb):
    """``nn.Buffer`` (it raised AttributeError under as_torch): assigned to a module it is a
    buffer, persistent or not, re-assignable, and stays a Buffer for another module."""
    torch = pytest.importorskip("torch")
    from xad import as_torch
    T = as_torch.namespace()["torch"]
    seen = []
    for L in (T, torch):
        m = L.nn.Module()
        m.a = L.nn.Buffer(L.ones(2))
        m.b = L.nn.Buffer(L.zeros(1), persistent=False)
        m.w = L.nn.Parameter(L.ones(1))
        state = [list(m.state_dict()), [n for n, _ in m.named_buffers()]]
        m.a = L.nn.Buffer(L.ones(3), persistent=False)
        m.b = L.nn.Buffer(L.ones(3))
        other = L.nn.Module()
        other.c = m.b
        x = L.ones(2, requires_grad=True) * 2
        m.d = L.nn.Buffer(x)
        seen.append(state + [list(m.state_dict()), list(other.state_dict()),
                             isinstance(m.a, L.nn.Buffer), m.d.requires_grad, m.d.is_leaf,
                             m.b.tolist()])
    assert seen[0] == seen[1]
