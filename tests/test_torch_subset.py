"""PyTorch's tensor methods and functions that xad runs (the subset ``xad.as_torch`` relies
on), each checked against PyTorch in float64: values and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import xad
from xad import as_torch

torch = pytest.importorskip("torch")  # the oracle (a test dependency)
T = as_torch.namespace()["torch"]  # what ``import torch`` gives a script under xad.as_torch

X = np.random.default_rng(0).standard_normal((3, 4))
IDX = np.array([[0, 3, 1, 1], [2, 0, 0, 3], [1, 1, 2, 0]])

# name -> f(x, m): x a tensor, m the ``torch`` module (xad's or PyTorch's); same code for both
CASES = {
    "view": lambda x, m: x.view(-1, 2) * 1.5,
    "view_as": lambda x, m: x.view_as(x.t()),
    "reshape": lambda x, m: x.reshape(2, 6),
    "flatten": lambda x, m: x.view(3, 2, 2).flatten(1),
    "unsqueeze": lambda x, m: x.unsqueeze(1).squeeze(1),
    "squeeze_other_length": lambda x, m: x.unsqueeze(0).squeeze(1).squeeze((0, 2)),
    "permute": lambda x, m: x.view(3, 2, 2).permute(2, 0, 1),
    "transpose": lambda x, m: x.view(3, 2, 2).transpose(0, 2),
    "transpose_2d": lambda x, m: x.transpose(0, 1),
    "t": lambda x, m: x.t(),
    "expand": lambda x, m: x[:1].expand(5, -1),
    "repeat": lambda x, m: x.repeat(2, 3),
    "contiguous": lambda x, m: x.contiguous() * 2,
    "type_as": lambda x, m: x.float().type_as(x),
    "sum_dim": lambda x, m: x.sum(dim=1, keepdim=True),
    "mean_dim": lambda x, m: x.mean(0),
    "std": lambda x, m: x.std(dim=1),
    "std_all": lambda x, m: x.std(),
    "var_biased": lambda x, m: x.var(1, unbiased=False),
    "var_correction": lambda x, m: x.var(dim=0, correction=0, keepdim=True),
    "prod": lambda x, m: x.prod(dim=1),
    "cumsum": lambda x, m: x.cumsum(dim=1),
    "softmax": lambda x, m: x.softmax(dim=0),
    "log_softmax": lambda x, m: x.log_softmax(dim=1),
    "max_values": lambda x, m: x.max(dim=1).values,
    "min_values": lambda x, m: x.min(1, keepdim=True)[0],
    "max_all": lambda x, m: x.max(),
    "clamp": lambda x, m: x.clamp(-0.5, 0.5),
    "masked_fill": lambda x, m: x.masked_fill(x > 0.3, 0.0),
    "gather": lambda x, m: x.gather(1, m.tensor(IDX[:, :2])),
    "gather_0": lambda x, m: x.gather(0, m.tensor(IDX[:2] % 3)),
    "scatter_add": lambda x, m: m.zeros(3, 5, dtype=m.float64).scatter_add(
        1, m.tensor(IDX), x),
    "index_select": lambda x, m: x.index_select(1, m.tensor([3, 0, 3])),
    "cat": lambda x, m: m.cat([x, x * 2], dim=1),
    "stack": lambda x, m: m.stack([x, x * 2], dim=1),
    "where": lambda x, m: m.where(x > 0, x, x * x),
}

# integer or boolean results: values only
INT_CASES = {
    "argmax": lambda x, m: x.argmax(dim=1),
    "argmin": lambda x, m: x.argmin(0, keepdim=True),
    "max_indices": lambda x, m: x.max(dim=0).indices,
    "long": lambda x, m: (x * 3).long(),
    "int": lambda x, m: (x * 3).int().long(),
    "bool": lambda x, m: x.bool(),
    "eq": lambda x, m: x.eq(x[0]),
    "ne": lambda x, m: x.ne(x[0]),
    "lt": lambda x, m: x.lt(0.0),
    "gt": lambda x, m: x.gt(x.t()[0].unsqueeze(1)),
}


def _pair(fn):
    xt = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    xx = xad.tensor(X, dtype=xad.float64, requires_grad=True)
    return fn(xx, T), fn(xt, torch), xx, xt


@pytest.mark.parametrize("name", sorted(CASES))
def test_method_matches_pytorch(xb, name):
    out, ref, xx, xt = _pair(CASES[name])
    assert out.shape == tuple(ref.shape)
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = np.random.default_rng(1).standard_normal(tuple(ref.shape))
    (out * xad.tensor(w, dtype=xad.float64)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xx.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(INT_CASES))
def test_integer_method_matches_pytorch(xb, name):
    out, ref, _, _ = _pair(INT_CASES[name])
    assert out.shape == tuple(ref.shape)
    assert out.tolist() == ref.tolist()


def test_sizes_and_casts(xb):
    x = xad.zeros(2, 3)
    assert (x.size, x.size(), x.size(1), x.numel(), x.nelement(), x.dim()) == \
        (6, (2, 3), 3, 6, 6, 2)
    assert x.long().dtype == xad.int64 and x.double().dtype == xad.float64
    assert x.to(xad.int64).float().dtype == xad.float32
    v, i = xad.tensor([[1.0, 5.0], [7.0, 2.0]]).max(dim=1)
    assert v.tolist() == [5.0, 7.0] and i.tolist() == [1, 0]
    assert xad.tensor([[1.0, 5.0]]).max(axis=1).tolist() == [5.0]  # the standard's: values


def test_gather_gradients_second_order(xb):
    x = xad.tensor(X, dtype=xad.float64, requires_grad=True)
    idx = xad.tensor(IDX)
    assert xad.gradgradcheck(lambda t: (t.gather(1, idx) ** 2).sum(), (x,))
    src = xad.tensor(X, dtype=xad.float64, requires_grad=True)
    assert xad.gradgradcheck(lambda s: (xad.zeros(3, 5, dtype=xad.float64)
                                        .scatter_add(1, idx, s) ** 2).sum(), (src,))


def test_data_shares_and_updates_in_place(xb):
    p = xad.tensor([1.0, 2.0], requires_grad=True)
    (p * p).sum().backward()
    p.data += -0.5 * p.grad
    assert p.tolist() == [0.0, 0.0] and p.requires_grad and p.is_leaf
    d = p.data
    assert not d.requires_grad
    p.data.fill_(3.0)
    assert p.tolist() == [3.0, 3.0]
    p.data.zero_()
    assert p.tolist() == [0.0, 0.0]
    p.data = xad.ones(2)
    assert p.tolist() == [1.0, 1.0]
    assert p.array is p._array


def test_fill_uniform_normal_in_place(xb):
    g1, g2 = xad.Generator().manual_seed(3), xad.Generator().manual_seed(3)
    a = xad.zeros(50).uniform_(-2.0, 2.0, generator=g1)
    b = xad.zeros(50).uniform_(-2.0, 2.0, generator=g2)
    assert a.tolist() == b.tolist() and bool(((a >= -2) & (a < 2)).all())
    n = xad.zeros(4000, dtype=xad.float64).normal_(1.0, 0.5, generator=g1)
    assert abs(n.mean().item() - 1.0) < 0.05 and abs(n.std().item() - 0.5) < 0.05
    assert xad.zeros(3).fill_(7.0).tolist() == [7.0] * 3


def test_generator_streams_are_independent_of_the_global_seed(xb):
    def draw(seed):
        xad.manual_seed(seed)
        g = xad.Generator().manual_seed(42)
        return [xad.randn(3, generator=g).tolist(), xad.rand(2, generator=g).tolist(),
                xad.randint(0, 10, (5,), generator=g).tolist(),
                xad.randperm(6, generator=g).tolist(),
                xad.multinomial(xad.ones(2, 4), 2, generator=g).tolist()]
    assert draw(0) == draw(1)
    xad.manual_seed(0)
    before = xad.randn(3).tolist()
    xad.manual_seed(0)
    xad.randn(3, generator=xad.Generator().manual_seed(9))
    assert xad.randn(3).tolist() == before  # the global stream did not move


def test_multinomial_frequencies(xb):
    g = xad.Generator().manual_seed(0)
    p = xad.tensor([[0.1, 0.0, 0.9], [0.5, 0.5, 0.0]])
    s = xad.multinomial(p, 2000, replacement=True, generator=g)
    assert s.shape == (2, 2000) and s.dtype == xad.int64
    row0 = (s[0] == 2).float().mean().item()
    assert abs(row0 - 0.9) < 0.04 and not bool((s[0] == 1).any())
    assert not bool((s[1] == 2).any())
    w = xad.multinomial(xad.tensor([1.0, 0.0, 2.0, 3.0]), 3, generator=g)
    assert sorted(w.tolist()) == [0, 2, 3]
    with pytest.raises(ValueError, match="replacement=True"):
        xad.multinomial(xad.ones(3), 4)


def test_loader_and_random_split_take_generators(xb):
    ds = xad.data.TensorDataset(xad.arange(10))
    orders = []
    for _ in range(2):
        g = xad.Generator().manual_seed(5)
        orders.append([b.tolist() for (b,) in
                       xad.data.DataLoader(ds, batch_size=4, shuffle=True, generator=g)])
    assert orders[0] == orders[1] and sorted(sum(orders[0], [])) == list(range(10))
    a, b = xad.data.random_split(ds, [0.7, 0.3], generator=xad.Generator().manual_seed(1))
    a2, _ = xad.data.random_split(ds, [7, 3], generator=xad.Generator().manual_seed(1))
    assert (len(a), len(b)) == (7, 3) and a.indices == a2.indices
    assert sorted(a.indices + b.indices) == list(range(10))
    with pytest.raises(ValueError, match="add up"):
        xad.data.random_split(ds, [3, 3])


def test_init_takes_a_generator(xb):
    w1 = xad.nn.init.kaiming_uniform_(xad.zeros(4, 3), generator=xad.Generator().manual_seed(2))
    w2 = xad.nn.init.kaiming_uniform_(xad.zeros(4, 3), generator=xad.Generator().manual_seed(2))
    assert w1.tolist() == w2.tolist()


def test_errors_say_what_to_write(xb):
    with pytest.raises(TypeError, match=r"\.to\(dtype\)"):
        xad.zeros(2).view(xad.int32)
    with pytest.raises(ValueError, match="transpose"):
        xad.zeros(2, 2, 2).t()
    with pytest.raises(TypeError, match="integer tensor"):
        xad.zeros(2, 2).gather(1, xad.zeros(2, 2))


def test_in_place_arithmetic_methods(xb):
    p = xad.tensor([1.0, 2.0], requires_grad=True)
    (p * p).sum().backward()
    with xad.no_grad():
        p.add_(p.grad, alpha=-0.25)
    assert p.tolist() == [0.5, 1.0]
    p.data.mul_(4.0).sub_(xad.ones(2), alpha=2.0).div_(2.0)
    assert p.tolist() == [0.0, 1.0]
    assert p.cpu().tolist() == [0.0, 1.0]
    with pytest.raises(NotImplementedError, match="cupy"):
        p.cuda()
