"""Convolution, pooling, BatchNorm2d, GroupNorm and Dropout2d layers: PyTorch's parameter
shapes, state_dict keys and initialisation; a PyTorch state_dict loads and gives the same
outputs and gradients (float64), on every backend; bad input gets a clear error."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import xad  # noqa: E402
import xad.nn as nn  # noqa: E402

F64 = xad.float64

# xad layer, torch layer, input shape
PAIRS = [
    (lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1, dtype=F64),
     lambda: torch.nn.Conv2d(3, 4, 3, stride=2, padding=1), (2, 3, 7, 6)),
    (lambda: nn.Conv2d(4, 6, (2, 3), dilation=2, groups=2, bias=False, dtype=F64),
     lambda: torch.nn.Conv2d(4, 6, (2, 3), dilation=2, groups=2, bias=False), (1, 4, 7, 8)),
    (lambda: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect", dtype=F64),
     lambda: torch.nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), (1, 2, 5, 5)),
    (lambda: nn.Conv1d(3, 4, 3, padding="same", dtype=F64),
     lambda: torch.nn.Conv1d(3, 4, 3, padding="same"), (2, 3, 9)),
    (lambda: nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1, dtype=F64),
     lambda: torch.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1),
     (2, 4, 3, 4)),
    (lambda: nn.BatchNorm2d(3, dtype=F64), lambda: torch.nn.BatchNorm2d(3), (4, 3, 3, 2)),
    (lambda: nn.GroupNorm(2, 4, dtype=F64), lambda: torch.nn.GroupNorm(2, 4), (2, 4, 3, 3)),
    (lambda: nn.MaxPool2d(3, 2, 1, ceil_mode=True),
     lambda: torch.nn.MaxPool2d(3, 2, 1, ceil_mode=True), (2, 3, 7, 6)),
    (lambda: nn.AvgPool2d(2, count_include_pad=False, padding=1),
     lambda: torch.nn.AvgPool2d(2, count_include_pad=False, padding=1), (2, 3, 5, 6)),
    (lambda: nn.AdaptiveAvgPool2d((2, 3)), lambda: torch.nn.AdaptiveAvgPool2d((2, 3)),
     (2, 3, 5, 7)),
]


@pytest.mark.parametrize("i", range(len(PAIRS)))
def test_layer_loads_torch_state_dict_and_matches(xb, i):
    make_x, make_t, shape = PAIRS[i]
    torch.manual_seed(i)
    tl = make_t().double()
    xl = make_x()
    state = {k: v.numpy() for k, v in tl.state_dict().items()}
    assert list(state) == list(xl.state_dict()), "state_dict keys differ from PyTorch's"
    for k, v in xl.state_dict().items():
        assert tuple(v.shape) == state[k].shape, k
    xl.load_state_dict({k: xad.tensor(v) for k, v in state.items()})
    a = np.random.default_rng(i).standard_normal(shape)
    x, t = xad.tensor(a, dtype=F64, requires_grad=True), torch.tensor(a, requires_grad=True)
    for train in (True, False):
        xl.train(train)
        tl.train(train)
        y, ty = xl(x), tl(t)
        np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-9, atol=1e-9)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-9)
    for (name, p), tp in zip(xl.named_parameters(), tl.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-8, atol=1e-9,
                                   err_msg=name)
    for k, v in xl.state_dict().items():  # running statistics updated as PyTorch's
        np.testing.assert_allclose(v.numpy(), tl.state_dict()[k].numpy(), rtol=1e-9, err_msg=k)


@pytest.mark.parametrize("make", [lambda: nn.Conv2d(6, 8, (3, 2), groups=2),
                                  lambda: nn.ConvTranspose2d(6, 4, 3, groups=2),
                                  lambda: nn.Conv1d(4, 2, 5)])
def test_conv_init_matches_torch_bounds(xb, make):
    layer = make()
    fan_in = layer.weight.shape[1] * math.prod(layer.kernel_size)
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform(a=sqrt(5)) gives the same bound
    w, b = layer.weight.numpy(), layer.bias.numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.5 * bound
    assert np.abs(b).max() <= bound and len(set(b.tolist())) == b.size


def test_dropout2d_zeroes_whole_channels(xb):
    y = nn.Dropout2d(0.5)(xad.ones((4, 16, 3, 3))).numpy()
    per_channel = y.reshape(64, 9)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert (per_channel.min(axis=1) == per_channel.max(axis=1)).all()
    assert 0 < (per_channel[:, 0] == 0).sum() < 64
    assert nn.Dropout2d(0.5).eval()(xad.ones((1, 2, 2, 2))).numpy().tolist() == \
        np.ones((1, 2, 2, 2)).tolist()


@pytest.mark.parametrize("d", [1, 2, 3])
def test_conv_transpose_output_size_matches_torch(xb, d):
    """``forward(x, output_size=...)`` (was a TypeError) picks the output padding as
    PyTorch's: spatial sizes or the whole shape, batched or not; out of range raises."""
    kw = dict(stride=3, padding=1, dilation=2, groups=2)
    xl = getattr(nn, f"ConvTranspose{d}d")(4, 2, 3, dtype=F64, **kw)
    tl = getattr(torch.nn, f"ConvTranspose{d}d")(4, 2, 3, **kw).double()
    xl.load_state_dict({k: xad.tensor(v.detach().numpy()) for k, v in tl.state_dict().items()})
    a = np.random.default_rng(d).standard_normal((2, 4) + (3,) * d)
    for x_shape, size in [((2, 4) + (3,) * d, (9,) * d), ((2, 4) + (3,) * d, (11,) * d),
                          ((4,) + (3,) * d, (2,) + (10,) * d),
                          ((2, 4) + (3,) * d, (2, 2) + (9,) * (d - 1) + (11,))]:
        x = xad.tensor(a.reshape(-1)[:math.prod(x_shape)].reshape(x_shape), requires_grad=True)
        t = torch.tensor(x.numpy(), requires_grad=True)
        y, ty = xl(x, output_size=size), tl(t, output_size=size)
        np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
        w = np.random.default_rng(0).standard_normal(tuple(ty.shape))
        (y * xad.tensor(w)).sum().backward()
        (ty * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match=rf"ConvTranspose{d}d: output_size .* from the "
                                         rf"smallest output \(9"):
        xl(xad.tensor(a), output_size=(12,) * d)


def test_layer_errors_name_the_layer_and_shapes(xb):
    with pytest.raises(ValueError, match=r"Conv2d\(3, 4\): expected input of shape "
                                         r"\(N, 3, H, W\), got \(2, 5, 8, 8\)"):
        nn.Conv2d(3, 4, 3)(xad.ones((2, 5, 8, 8)))
    with pytest.raises(ValueError, match=r"larger than the padded input 2x2"):
        nn.Conv2d(3, 4, 3)(xad.ones((1, 3, 2, 2)))
    with pytest.raises(ValueError, match=r"conv2d: padding must be an int, a pair, 'same' or "
                                         r"'valid', got 'foo'"):  # as with padding_mode zeros
        nn.Conv2d(1, 1, 3, padding="foo", padding_mode="reflect")(xad.ones((1, 1, 5, 5)))
    with pytest.raises(ValueError, match=r"Conv2d: groups=2 must divide in_channels \(3\)"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match=r"Conv1d\(2, 4\): expected input of shape \(N, 2, L\)"):
        nn.Conv1d(2, 4, 3)(xad.ones((1, 2, 3, 3)))
    with pytest.raises(ValueError, match=r"BatchNorm2d\(3\): expected input of shape "
                                         r"\(N, 3, H, W\), got \(2, 4, 5, 5\)"):
        nn.BatchNorm2d(3)(xad.ones((2, 4, 5, 5)))
    with pytest.raises(ValueError, match=r"GroupNorm: num_groups \(3\) must divide"):
        nn.GroupNorm(3, 4)
