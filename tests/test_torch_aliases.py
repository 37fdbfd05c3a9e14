"""Torch-level names for xad's computations (xad/torch_copies.py, torch_nn_functions.py,
torch_tensor_methods.py) against torch in float64: that copies do not alias and in-place
views do, and gradients (values are fuzzed by tests/fuzz_torch_aliases.py)."""

from __future__ import annotations

import numpy as np
import pytest

import xad
from xad import as_torch

torch = pytest.importorskip("torch")
from torch_reference import skip_if_lacking  # noqa: E402

T = as_torch.namespace()["torch"]

COPIES = {
    "view_copy": ((6, 4),), "permute_copy": ((2, 0, 1),), "transpose_copy": (0, 2),
    "expand_copy": ((2, 2, 3, 4),), "diagonal_copy": (0, 1, 2), "select_copy": (1, 0),
    "slice_copy": (2, 1, 3), "squeeze_copy": (), "unsqueeze_copy": (1,),
    "unbind_copy": (1,), "unfold_copy": (2, 2, 1), "narrow_copy": (1, 0, 2),
    "split_with_sizes_copy": ([1, 2], 1), "alias_copy": (), "detach_copy": (),
    "as_strided_copy": ((3, 2), (2, 5), 1),
}


def _data(seed: int, shape=(2, 3, 4)) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, shape)


def _run(m, name, a, grad):
    x = m.tensor(a, dtype=m.float64, requires_grad=grad)
    y = getattr(m, name)(x * 1.0, *COPIES[name])
    ys = list(y) if isinstance(y, (list, tuple)) else [y]
    return x, ys


@pytest.mark.parametrize("name", sorted(COPIES))
def test_copies_do_not_alias_and_carry_gradients_as_torch(name, xb):
    a = _data(1)
    grads = []
    for m in (T, torch) if name != "detach_copy" else ():
        x, ys = _run(m, name, a, True)
        try:
            sum(((y * (k + 2.0)) ** 2).sum() for k, y in enumerate(ys)).backward()
        except RuntimeError as e:  # (an older torch: narrow_copy's derivative)
            skip_if_lacking(e)
        grads.append(x.grad.numpy())
    if grads:
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)
    for m in (T, torch):
        base = m.tensor(a, dtype=m.float64)
        ys = getattr(m, name)(base, *COPIES[name])
        ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
        before = [y.tolist() for y in ys]
        base.add_(1.0)                          # the input changes: the copies do not
        assert [y.tolist() for y in ys] == before
        ys[0].mul_(0.0)                         # a copy changes: the input does not
        assert np.allclose(np.asarray(base.tolist()), a + 1.0)


def test_view_copies_of_complex_do_not_alias(xb):
    z = T.complex(T.tensor([1.0, 2.0], dtype=T.float64), T.tensor([3.0, 4.0], dtype=T.float64))
    r = T.view_as_real_copy(z)
    z.mul_(2.0)
    assert r.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    c = T.view_as_complex_copy(r)
    r.zero_()
    assert c.tolist() == [1 + 3j, 2 + 4j]


IN_PLACE_VIEWS = {"squeeze_": ((3, 1), ()), "unsqueeze_": ((3, 2), (1,)), "t_": ((3, 2), ()),
                  "transpose_": ((2, 3, 4), (0, 2)), "swapaxes_": ((3, 2), (0, 1)),
                  "swapdims_": ((2, 3, 4), (2, 1))}


@pytest.mark.parametrize("name", sorted(IN_PLACE_VIEWS))
def test_in_place_views_change_the_tensor_with_gradients_as_torch(name, xb):
    shape, args = IN_PLACE_VIEWS[name]
    a, w = _data(2, shape), None
    grads, shapes = [], []
    for m in (T, torch):
        x = m.tensor(a, dtype=m.float64, requires_grad=True)
        y = x * 2.0
        assert getattr(y, name)(*args) is y
        w = m.tensor(np.arange(y.numel()).reshape(tuple(y.shape)) + 1.0, dtype=m.float64)
        (y * y * w).sum().backward()
        grads.append(x.grad.numpy())
        shapes.append(tuple(y.shape))
    assert shapes[0] == shapes[1]
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)
    leaf = T.tensor(a, dtype=T.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match=f"{name}.*leaf that requires grad"):
        getattr(leaf, name)(*args)


def test_in_place_view_is_a_view_of_the_storage(xb):
    x = xad.zeros(3, 1, dtype=xad.float64)
    x.squeeze_()
    x[1] = 5.0
    assert x.shape == (3,) and x.tolist() == [0.0, 5.0, 0.0]
    v = x[1:]
    with pytest.raises(RuntimeError, match="unsqueeze_ of a tensor of shape .*has views"):
        x.unsqueeze_(0)
    del v


def test_in_place_views_of_a_view_as_torch(xb):
    a = np.random.default_rng(0).uniform(-1, 1, (4, 1, 3))
    out = []
    for m in (T, torch):
        x = m.tensor(a, dtype=m.float64, requires_grad=True)
        y = x * 2.0
        v = y[1:3]
        v.squeeze_(1).t_().unsqueeze_(0).transpose_(0, 2)
        v[0, 1] = v[0, 1] * 3.0                 # through the view into y's storage
        w = m.tensor(np.arange(v.numel()).reshape(tuple(v.shape)) + 1.0, dtype=m.float64)
        (v * v * w).sum().backward()
        out.append([tuple(v.shape), np.asarray(v.tolist()), np.asarray(y.tolist()),
                    x.grad.numpy()])
    assert out[0][0] == out[1][0]
    for mine, theirs in zip(out[0][1:], out[1][1:]):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)


def test_resize_new_and_reductions_codes_as_torch(xb):
    a = _data(3, (2, 3))
    x = T.tensor(a, dtype=T.float64, requires_grad=True)
    x.resize(3, 2).pow(2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * a)
    with pytest.raises(RuntimeError, match="resize keeps the number of elements"):
        x.resize(5)
    with pytest.raises(TypeError, match="give sizes as ints"):
        x.new((2, 3))
    with pytest.raises(ValueError, match="integer code"):
        T.kl_div(x, x, "mean")
    t = x.detach().clone()
    n = x.new(t)
    t.add_(1.0)
    assert n.tolist() == t.tolist()            # x.new(tensor) shares its storage, as torch's


LOSS_GRADS = {
    "kl_div": lambda m, a, b: m.kl_div(a, b.exp(), 1),
    "binary_cross_entropy_with_logits": lambda m, a, b: m.binary_cross_entropy_with_logits(
        a, b.sigmoid(), None, b[0].detach().exp(), 2),
    "triplet_margin_loss": lambda m, a, b: m.triplet_margin_loss(a, b, a.flip(0), 1.5, 2.0,
                                                                 1e-6, True, 1),
    "gru_cell": lambda m, a, b: m.gru_cell(a, b, b.repeat(3, 1), a.repeat(3, 1)).sum(),
    "lstm_cell": lambda m, a, b: sum(t.sum() for t in m.lstm_cell(
        a, [b, b.sin()], b.repeat(4, 1), a.repeat(4, 1))),
    "norm_except_dim": lambda m, a, b: m.norm_except_dim(a * b, 2, 1).sum(),
    "batch_norm": lambda m, a, b: (m.batch_norm(a, b[0], b[1], None, None, True, 0.1, 1e-5,
                                                False) ** 3).sum(),
    "embedding": lambda m, a, b: (m.embedding(b, m.tensor([[0, 1], [1, 3]]), 1, True) ** 2
                                  ).sum() + (a * a).sum(),
    "grid_sampler": lambda m, a, b: m.grid_sampler(a.reshape(1, 1, 4, 4), b.tanh().reshape(
        1, 2, 4, 2), 0, 1, False).pow(2).sum(),
    "convolution": lambda m, a, b: m.convolution(a.reshape(1, 2, 8), b.reshape(2, 4, 2), None,
                                                 [2], [1], [1], True, [1], 2).pow(2).sum(),
    "conv_tbc": lambda m, a, b: m.conv_tbc(a.reshape(4, 1, 4), b.reshape(4, 4, 1)[:2],
                                           b[0, :1], 1).pow(2).sum(),
}


@pytest.mark.parametrize("name", sorted(LOSS_GRADS))
def test_layer_functions_gradients_as_torch(name, xb):
    a, b = _data(4, (4, 4)), _data(5, (4, 4))
    grads = []
    for m in (T, torch):
        x, y = (m.tensor(v, dtype=m.float64, requires_grad=True) for v in (a, b))
        LOSS_GRADS[name](m, x, y).backward()
        grads.append([x.grad.numpy(), y.grad.numpy()])
    for g0, g1 in zip(*grads):
        np.testing.assert_allclose(g0, g1, rtol=1e-9, atol=1e-12)
