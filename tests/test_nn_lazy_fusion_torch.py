"""Lazy modules, batch-norm fusion and the smaller torch.nn.utils names (skip_init,
clip_grad_norm, stateless.functional_call, convert_parameters, memory formats) against
PyTorch 2.13 in float64, with identical weights (torch's state_dict loaded)."""

from __future__ import annotations

import numpy as np
import pytest

import xad
import xad.nn as nn
from xad import as_torch

torch = pytest.importorskip("torch")


def _np(t):
    return np.asarray(t.detach().numpy())


def _sd(m):
    return {k: v.detach().numpy() for k, v in m.state_dict().items()}


# (xad class, torch class, constructor arguments, input shape)
LAZY = [("LazyLinear", (4,), (3, 5)), ("LazyLinear", (2, False), (2, 3, 5)),
        ("LazyConv1d", (4, 3), (2, 5, 8)),
        ("LazyConv2d", (4, 3, 1, 1, 1, 1, False), (1, 2, 5, 5)),
        ("LazyConv3d", (2, 2), (1, 3, 3, 3, 3)), ("LazyConv1d", (4, 3), (5, 8)),
        ("LazyConvTranspose1d", (4, 3, 2), (2, 5, 4)),
        ("LazyConvTranspose2d", (4, 2), (1, 3, 3, 3)),
        ("LazyConvTranspose3d", (2, 2), (1, 2, 2, 2, 2)), ("LazyBatchNorm1d", (), (4, 3)),
        ("LazyBatchNorm2d", (), (2, 3, 2, 2)), ("LazyBatchNorm3d", (1e-3, 0.2), (2, 3, 2, 1, 2)),
        ("LazyInstanceNorm1d", (), (2, 3, 5)), ("LazyInstanceNorm2d", (1e-5, 0.1, False, False),
                                                (2, 3, 4, 4)),
        ("LazyInstanceNorm3d", (), (2, 3, 2, 2, 2))]


def _lazy_pair(i):
    name, args, shape = LAZY[i]
    torch.manual_seed(i)
    theirs = getattr(torch.nn, name)(*args, dtype=torch.float64)
    ours = getattr(nn, name)(*args, dtype=xad.float64)
    return ours, theirs, np.random.default_rng(i).standard_normal(shape)


@pytest.mark.parametrize("i", range(len(LAZY)))
def test_lazy_module_dry_run_then_torch_weights(xb, i):
    ours, theirs, x = _lazy_pair(i)
    assert ours.has_uninitialized_params() == theirs.has_uninitialized_params()
    assert isinstance(ours.weight, nn.UninitializedParameter) or ours.weight is None
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours(xad.tensor(x))  # the dry run: shapes inferred, values drawn, the class changes
    ty = theirs(torch.tensor(x))
    assert type(ours).__name__ == type(theirs).__name__ == LAZY[i][0][4:]
    assert not isinstance(ours, nn.lazy.LazyModuleMixin)
    sd, tsd = ours.state_dict(), theirs.state_dict()
    assert [(k, tuple(v.shape)) for k, v in sd.items()] == \
        [(k, tuple(v.shape)) for k, v in tsd.items()]
    assert all(type(p) is nn.Parameter for p in ours.parameters())
    if "Norm" in LAZY[i][0] and ours.track_running_stats:  # the first batch's statistics
        np.testing.assert_allclose(_np(ours.running_var), tsd["running_var"].numpy(),
                                   rtol=1e-10)
    ours.load_state_dict(_sd(theirs))
    trained = bool(list(ours.parameters()))  # (a LazyInstanceNorm2d without affine: none)
    opt = xad.optim.SGD(ours.parameters(), lr=0.1) if trained else None  # after the dry run
    topt = torch.optim.SGD(theirs.parameters(), lr=0.1) if trained else None
    for _ in range(2):
        y, ty = ours(xad.tensor(x)), theirs(torch.tensor(x))
        np.testing.assert_allclose(_np(y), ty.detach().numpy(), rtol=1e-9, atol=1e-9)
        if trained:
            opt.zero_grad()
            topt.zero_grad()
            (y * y).sum().backward()
            (ty * ty).sum().backward()
            opt.step()
            topt.step()
    for k, v in ours.state_dict().items():
        np.testing.assert_allclose(_np(v), theirs.state_dict()[k].numpy(), rtol=1e-9,
                                   atol=1e-9, err_msg=k)


@pytest.mark.parametrize("i", [0, 3, 7, 10, 12])
def test_load_state_dict_into_uninitialized_lazy_module(xb, i):
    ours, theirs, x = _lazy_pair(i)
    theirs(torch.tensor(x))
    net = nn.Sequential(ours)  # through a container: the prefix is "0."
    net.load_state_dict({"0." + k: v for k, v in _sd(theirs).items()})
    assert not ours.has_uninitialized_params()
    assert type(ours).__name__ == LAZY[i][0]  # the class changes at the first call
    y = net(xad.tensor(x))
    ty = theirs(torch.tensor(x))
    assert type(ours).__name__ == LAZY[i][0][4:]
    np.testing.assert_allclose(_np(y), ty.detach().numpy(), rtol=1e-10, atol=1e-10)


def test_state_dict_of_a_lazy_module_loads_into_another_lazy_module(xb):
    """torch keeps the placeholders in state_dict; xad's are empty tensors: both leave the
    loaded module lazy, to be shaped by its first call."""
    a, b = nn.LazyConv1d(3, 2), nn.LazyConv1d(3, 2)
    assert b.load_state_dict(a.state_dict()) == ([], [])
    assert b.has_uninitialized_params()
    assert b(xad.ones(2, 4, 5)).shape == (2, 3, 4) and b.weight.shape == (3, 4, 2)


def test_lazy_errors_and_initialization_from_xads_generator(xb):
    with pytest.raises(RuntimeError, match="in_channels"):
        nn.LazyConv2d(2, 3)(xad.ones(3, 3))
    with pytest.raises(ValueError, match="groups"):
        nn.LazyConv1d(4, 1, groups=2)(xad.ones(1, 3, 4))
    xad.manual_seed(5)
    a = nn.LazyLinear(3)
    a(xad.ones(2, 4))
    xad.manual_seed(5)
    b = nn.Linear(4, 3)
    np.testing.assert_array_equal(_np(a.weight), _np(b.weight))  # Linear's own init, same draws
    p = nn.UninitializedParameter(dtype=xad.float64)
    p.materialize((2, 3))
    assert type(p) is nn.Parameter and p.shape == (2, 3) and p.dtype == xad.float64
    assert p.requires_grad


@pytest.mark.parametrize("kind", ["conv2d", "conv_transpose2d", "conv1d", "linear",
                                  "linear_bn1"])
def test_fusion_matches_torch_and_conv_then_bn(xb, kind):
    torch.manual_seed(0)
    tlayer, tbn, shape, transpose = {
        "conv2d": (torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3), (2, 2, 5, 5), False),
        "conv_transpose2d": (torch.nn.ConvTranspose2d(2, 3, 2, bias=False),
                             torch.nn.BatchNorm2d(3), (1, 2, 3, 3), True),
        "conv1d": (torch.nn.Conv1d(2, 4, 2), torch.nn.BatchNorm1d(4, affine=False), (3, 2, 5),
                   False),
        "linear": (torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), (5, 3), False),
        "linear_bn1": (torch.nn.Linear(3, 4, bias=False), torch.nn.BatchNorm1d(1), (5, 3),
                       False)}[kind]
    tlayer, tbn = tlayer.double(), tbn.double()
    with torch.no_grad():  # running statistics of a few batches, random affine parameters
        for name, t in tbn.named_buffers():
            if name != "num_batches_tracked":
                t.uniform_(0.5, 2.0)
        for t in tbn.parameters():
            t.uniform_(-1.0, 1.0)
    tlayer.eval()
    tbn.eval()
    layer = {"conv2d": nn.Conv2d(2, 3, 3), "conv_transpose2d": nn.ConvTranspose2d(
        2, 3, 2, bias=False), "conv1d": nn.Conv1d(2, 4, 2), "linear": nn.Linear(3, 4),
        "linear_bn1": nn.Linear(3, 4, bias=False)}[kind].double().eval()
    bn = (nn.BatchNorm2d(3) if "2d" in kind else nn.BatchNorm1d(
        1 if kind == "linear_bn1" else 4, affine=kind != "conv1d")).double().eval()
    layer.load_state_dict(_sd(tlayer))
    bn.load_state_dict(_sd(tbn))
    x = np.random.default_rng(0).standard_normal(shape)
    if kind.startswith("linear"):
        fused, tfused = nn.utils.fuse_linear_bn_eval(layer, bn), \
            torch.nn.utils.fuse_linear_bn_eval(tlayer, tbn)
    else:
        fused = nn.utils.fuse_conv_bn_eval(layer, bn, transpose=transpose)
        tfused = torch.nn.utils.fuse_conv_bn_eval(tlayer, tbn, transpose=transpose)
    assert fused is not layer and type(fused) is type(layer)
    for k, v in fused.state_dict().items():
        np.testing.assert_allclose(_np(v), tfused.state_dict()[k].detach().numpy(),
                                   rtol=1e-12, atol=1e-12, err_msg=k)
    if kind != "linear_bn1":  # a 1-feature norm of (N, 4) input: fused only, as torch's
        np.testing.assert_allclose(_np(fused(xad.tensor(x))), _np(bn(layer(xad.tensor(x)))),
                                   rtol=1e-10, atol=1e-10)
    with pytest.raises(AssertionError, match="eval"):
        nn.utils.fuse_conv_bn_eval(layer.train(), bn)


def test_small_utils_names(xb):
    ns = as_torch.namespace()
    t = ns["torch"]
    lin = nn.Linear(3, 2, dtype=xad.float64)
    w = {"weight": xad.ones(2, 3, dtype=xad.float64), "bias": xad.zeros(2, dtype=xad.float64)}
    x = xad.ones(1, 3, dtype=xad.float64)
    assert t.nn.utils.stateless.functional_call(lin, w, (x,)).tolist() == [[3.0, 3.0]]
    assert t.nn.utils.stateless.functional_call(lin, w, kwargs={"x": x}).tolist() == \
        [[3.0, 3.0]]  # args=None: no positional arguments (was module(None))
    v = t.nn.utils.convert_parameters.parameters_to_vector(lin.parameters())
    assert v.shape == (8,)
    t.nn.utils.convert_parameters.vector_to_parameters(v * 0, lin.parameters())
    assert lin.bias.tolist() == [0.0, 0.0]
    conv = nn.Conv2d(1, 2, 3)
    w0 = _np(conv.weight)
    assert t.nn.utils.convert_conv2d_weight_memory_format(conv, None) is conv
    assert t.nn.utils.memory_format.convert_conv3d_weight_memory_format(conv, None) is conv
    np.testing.assert_array_equal(_np(conv.weight), w0)
    m = t.nn.utils.skip_init(nn.Linear, 3, 4, device="cpu")
    assert type(m) is nn.Linear and m.weight.shape == (4, 3)
    with pytest.raises(RuntimeError, match="Module class"):
        t.nn.utils.skip_init(int)
    p = xad.ones(4, requires_grad=True)
    (p * 3).sum().backward()
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        total = t.nn.utils.clip_grad_norm([p], 1.0)
    assert abs(total.item() - 6.0) < 1e-6 and abs(p.grad.tolist()[0] - 0.5) < 1e-5
    for name in ("parametrize", "parametrizations", "stateless", "fusion", "init",
                 "convert_parameters", "memory_format", "rnn"):
        assert ns[f"torch.nn.utils.{name}"] is getattr(t.nn.utils, name)
    assert t.nn.parameter.UninitializedParameter is nn.UninitializedParameter
    assert t.nn.modules.lazy.LazyModuleMixin is nn.lazy.LazyModuleMixin
    assert t.nn.utils.parametrize.register_parametrization is \
        nn.utils.parametrize.register_parametrization
