"""Less common options of layers and losses against PyTorch 2.13 (float64): outputs, input
and parameter gradients and buffers agree, on every backend. Each row was a silent wrong
number once."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import xad  # noqa: E402
import xad.nn as nn  # noqa: E402

F64 = xad.float64

# name: (xad layer, torch layer, input shape)
LAYERS = {
    "conv1d_same_even_kernel_reflect": (
        lambda: nn.Conv1d(3, 4, 4, padding="same", padding_mode="reflect", dtype=F64),
        lambda: torch.nn.Conv1d(3, 4, 4, padding="same", padding_mode="reflect"), (2, 3, 9)),
    "conv2d_same_dilated_replicate": (
        lambda: nn.Conv2d(2, 3, (4, 3), padding="same", dilation=(1, 2),
                          padding_mode="replicate", dtype=F64),
        lambda: torch.nn.Conv2d(2, 3, (4, 3), padding="same", dilation=(1, 2),
                                padding_mode="replicate"), (1, 2, 7, 8)),
    "conv2d_circular_same_even_kernel": (
        lambda: nn.Conv2d(2, 4, (2, 3), padding="same", padding_mode="circular", groups=2,
                          dtype=F64),
        lambda: torch.nn.Conv2d(2, 4, (2, 3), padding="same", padding_mode="circular",
                                groups=2), (2, 2, 5, 4)),
    "conv1d_circular_stride": (
        lambda: nn.Conv1d(3, 2, 3, stride=2, padding=2, padding_mode="circular", dtype=F64),
        lambda: torch.nn.Conv1d(3, 2, 3, stride=2, padding=2, padding_mode="circular"),
        (2, 3, 7)),
    "instancenorm_momentum_none_keeps_running_stats": (
        lambda: nn.InstanceNorm1d(3, momentum=None, track_running_stats=True, dtype=F64),
        lambda: torch.nn.InstanceNorm1d(3, momentum=None, track_running_stats=True),
        (2, 3, 5)),
}


def _close(a, b, what):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-10,
                               err_msg=what)


@pytest.mark.parametrize("name", LAYERS)
def test_layer_matches_torch(xb, name):
    make_x, make_t, shape = LAYERS[name]
    torch.manual_seed(0)
    tl = make_t().double()
    xl = make_x()
    xl.load_state_dict({k: xad.tensor(v.numpy()) for k, v in tl.state_dict().items()})
    a = np.random.default_rng(0).standard_normal(shape)
    w = np.random.default_rng(1).standard_normal
    x, t = xad.tensor(a, dtype=F64, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = xl(x), tl(t)
    _close(y.numpy(), ty.detach().numpy(), "output")
    g = w(tuple(ty.shape))
    (y * xad.tensor(g)).sum().backward()
    (ty * torch.tensor(g)).sum().backward()
    _close(x.grad.numpy(), t.grad.numpy(), "input gradient")
    for (k, p), tp in zip(xl.named_parameters(), tl.parameters()):
        _close(p.grad.numpy(), tp.grad.numpy(), k)
    for k, v in xl.state_dict().items():
        _close(v.numpy(), tl.state_dict()[k].numpy(), k)


def _embedding_padding(lib, w):
    """A nonzero padding row is looked up as it is; its gradient is zero."""
    i = lib.tensor([[0, 2, 2, 5], [6, 2, 1, 0]])
    return lib.nn.functional.embedding(i, w, padding_idx=2) * lib.arange(3.0)


def _embedding_bag_last_offset(lib, w):
    """With include_last_offset, PyTorch's last bag runs to the end of the input."""
    i = lib.tensor([1, 2, 4, 5, 4, 3, 2, 6, 0])
    return [lib.nn.functional.embedding_bag(i, w, lib.tensor([0, 2, 2, 5]), mode=m,
                                            include_last_offset=True)
            for m in ("sum", "mean", "max")]


def _pairwise_distance_inf_zero(lib, a, b):
    """p = inf, -inf and 0 (the power formula gave 1, NaN gradients, a ZeroDivisionError)."""
    F = lib.nn.functional
    return [F.pairwise_distance(a, b, p=float("inf")), F.pairwise_distance(a, b, p=-float("inf")),
            F.pairwise_distance(a, b, p=0.0, keepdim=True),
            F.triplet_margin_loss(a, b, a.flip(0), p=float("inf"), reduction="none")]


def _bce_saturated(lib, a):
    """Probabilities of exactly 0 and 1 (a saturated sigmoid): finite, PyTorch's gradients
    (NaN before)."""
    p = a - a.detach() + lib.tensor([0.0, 1.0, 0.0, 1.0, 0.3, 1e-13], dtype=a.dtype)
    y = lib.tensor([0.0, 1.0, 1.0, 0.0, 0.5, 0.0], dtype=a.dtype)
    return lib.nn.functional.binary_cross_entropy(p, y, reduction="none")


def _ce_smoothing_weight(lib, x, x3):
    """label_smoothing with class weight (and ignored targets): refused before."""
    F = lib.nn.functional
    w = lib.tensor([0.5, 2.0, 1.0, 1.5], dtype=x.dtype)
    t, t3 = lib.tensor([0, 2, 2, 3, 1, 2]), lib.tensor([[0, 2, 1], [3, 3, 2]])
    return [F.cross_entropy(x, t, weight=w, label_smoothing=0.3, ignore_index=ii,
                            reduction=r) for r in ("mean", "sum", "none") for ii in (2, -100)] \
        + [F.cross_entropy(x3, t3, weight=w, label_smoothing=0.2, ignore_index=2)]


def _pad_circular(lib, x):
    return lib.nn.functional.pad(x, (2, 0, 1, 3), mode="circular")


# name: (function of (library, *tensors), input shapes)
FUNCTIONS = {
    "pad_circular": (_pad_circular, [(2, 3, 5, 4)]),
    "cross_entropy_label_smoothing_weight": (_ce_smoothing_weight, [(6, 4), (2, 4, 3)]),
    "binary_cross_entropy_saturated": (_bce_saturated, [(6,)]),
    "pairwise_distance_inf_zero": (_pairwise_distance_inf_zero, [(4, 3), (4, 3)]),
    "embedding_padding_idx_nonzero_row": (_embedding_padding, [(7, 3)]),
    "embedding_bag_include_last_offset": (_embedding_bag_last_offset, [(7, 3)]),
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_matches_torch(xb, name):
    f, shapes = FUNCTIONS[name]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    xs = [xad.tensor(a, dtype=F64, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    ys, tys = f(xad, *xs), f(torch, *ts)
    ys, tys = (ys, tys) if isinstance(ys, list) else ([ys], [tys])
    loss, tloss = 0, 0
    for k, (y, ty) in enumerate(zip(ys, tys)):
        _close(y.numpy(), ty.detach().numpy(), f"output {k}")
        g = rng.standard_normal(tuple(ty.shape))
        loss, tloss = loss + (y * xad.tensor(g)).sum(), tloss + (ty * torch.tensor(g)).sum()
    loss.backward()
    tloss.backward()
    for k, (x, t) in enumerate(zip(xs, ts)):
        _close(x.grad.numpy(), t.grad.numpy(), f"gradient of input {k}")


@pytest.mark.parametrize("dim,kw", [
    (1, dict(kernel_size=3, padding=2, dilation=2)),
    (2, dict(kernel_size=(3, 1), stride=(2, 3), padding=(2, 0), dilation=2)),
])
def test_max_pool_padding_over_half_kernel_raises_as_torch(xb, dim, kw):
    """PyTorch bounds the padding by half the kernel, whatever the dilation."""
    shape = (2, 2) + (7,) * dim
    with pytest.raises(RuntimeError):
        getattr(torch.nn, f"MaxPool{dim}d")(**kw)(torch.zeros(shape))
    with pytest.raises(ValueError, match="must be at most half the kernel"):
        getattr(nn, f"MaxPool{dim}d")(**kw)(xad.zeros(shape))


@pytest.mark.parametrize("case", ["avg_pool_divisor_zero", "instance_norm_one_element",
                                  "layer_norm_no_axes"])
def test_refused_as_torch(xb, case):
    """PyTorch raises; xad gave an ordinary average and all zeros."""
    if case == "avg_pool_divisor_zero":
        t_layer, x_layer = (m.AvgPool2d(2, divisor_override=0) for m in (torch.nn, nn))
        shape, match = (1, 1, 4, 4), "divisor_override must not be zero"
    elif case == "instance_norm_one_element":
        t_layer, x_layer = (m.InstanceNorm1d(3) for m in (torch.nn, nn))
        shape, match = (2, 3, 1), "more than 1 spatial element"
    else:
        t_layer, x_layer = (m.LayerNorm([]) for m in (torch.nn, nn))
        shape, match = (2, 3), "at least one axis"
    with pytest.raises((RuntimeError, ValueError)):
        t_layer(torch.zeros(shape))
    with pytest.raises(ValueError, match=match):
        x_layer(xad.zeros(shape))


@pytest.mark.parametrize("mode", ["zeros", "reflect", "circular"])
def test_conv_same_padding_with_stride_raises_as_torch(xb, mode):
    """With a padding_mode the layer pads itself: it checks the stride as PyTorch does."""
    with pytest.raises(ValueError):
        torch.nn.Conv1d(2, 2, 3, stride=2, padding="same", padding_mode=mode)
    with pytest.raises(ValueError, match="padding='same' needs stride 1"):
        nn.Conv1d(2, 2, 3, stride=2, padding="same", padding_mode=mode)(xad.ones((1, 2, 8)))
