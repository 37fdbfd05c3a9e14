"""PyTorch's tensor methods and functions that xad runs (the subset ``xad.as_torch`` relies
on), each checked against PyTorch in float64: values and gradients."""

from __future__ import annotations

import contextlib
import math

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
    "round": lambda x, m: x + (x * 3).round() + (x * 3).round(decimals=1),
    "floor_ceil_trunc": lambda x, m: x * (x * 3).floor() + (x * 3).ceil() - (x * 3).trunc(),
    "sign": lambda x, m: x * x.sign(),
    "pow": lambda x, m: x.pow(2) + x.pow(x * 0 + 3),
    "remainder": lambda x, m: x.remainder(0.7) + x.remainder(-0.4),
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
    "floor_divide": lambda x, m: (x * 3).floor_divide(0.4),  # (PyTorch: no derivative)
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
    with pytest.raises(RuntimeError, match=r"0-d tensor.*x\.reshape\(1\)\.view\(dtype\)"):
        xad.zeros(()).view(xad.int16)  # (view(dtype) itself: tests/test_view_dtype.py)
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
    if xb.name.startswith("cupy"):  # (a CUDA backend: the tensor itself)
        assert p.cuda() is p
    else:
        with pytest.raises(NotImplementedError, match="cupy"):
            p.cuda()


# ----- PyTorch's meanings where the standard's differ (docs/PORTING.md, "Two meanings") -----
def _norm(r):
    """A result as plain data: tensors as (shape, dtype name, values), tuples as lists."""
    if isinstance(r, (xad.Tensor, torch.Tensor)):
        name = str(r.dtype).rsplit(".", 1)[-1]
        return ("tensor", tuple(r.shape), name, r.tolist())
    if isinstance(r, (tuple, list)):
        return [_norm(v) for v in r]
    if isinstance(r, dict):
        return {k: _norm(v) for k, v in r.items()}
    if isinstance(r, (xad.DType, torch.dtype)):
        return str(r).rsplit(".", 1)[-1]
    return r


M = np.arange(12).reshape(3, 4) % 3
# name -> f(m): the same PyTorch code on xad's torch namespace and on PyTorch
MEANINGS = {
    "split_size": lambda m: m.split(m.arange(5), 2),
    "split_sizes": lambda m: m.split(m.arange(10).reshape(5, 2), [2, 3]),
    "split_dim": lambda m: m.tensor(M).split(3, dim=1),
    "split_method_list": lambda m: m.tensor(M).split([1, 0, 2]),
    "sort": lambda m: m.sort(m.tensor([3.0, 1.0, 2.0, 1.0])),
    "sort_fields": lambda m: [m.sort(m.tensor(M), 0).values, m.tensor(M).sort(0).indices],
    "sort_descending": lambda m: m.tensor(M).sort(dim=1, descending=True, stable=True),
    "argsort_dim": lambda m: [m.argsort(m.tensor(M), 0), m.tensor(M).argsort(0, True)],
    "nonzero": lambda m: m.nonzero(m.tensor(M)),
    "nonzero_method_bool": lambda m: (m.tensor(M) > 1).nonzero(),
    "nonzero_tuple": lambda m: m.nonzero(m.tensor(M), as_tuple=True),
    "nonzero_0d": lambda m: m.nonzero(m.tensor(5)),
    "equal": lambda m: [m.equal(m.tensor(M), m.tensor(M)), m.equal(m.tensor([1, 2]),
                                                                   m.tensor([1.0, 2.0]))],
    "equal_false": lambda m: [m.tensor([1, 2]).equal(m.tensor([1, 3])),
                              m.equal(m.tensor([1.0, 2.0]), m.tensor([[1.0, 2.0]]))],
    "meshgrid": lambda m: m.meshgrid(m.arange(2), m.arange(3)),
    "meshgrid_list": lambda m: m.meshgrid([m.arange(2), m.arange(3), m.arange(4)]),
    "meshgrid_xy": lambda m: m.meshgrid(m.arange(2), m.arange(3), indexing="xy"),
    "Tensor_sizes": lambda m: [m.Tensor(5).shape, m.Tensor(2, 3).dtype, m.Tensor().shape],
    "Tensor_data": lambda m: [m.Tensor([1, 2]), m.Tensor((2, 3))],
    "Tensor_isinstance": lambda m: [isinstance(m.ones(1), m.Tensor), m.is_tensor(m.ones(1))],
    "one_hot": lambda m: m.nn.functional.one_hot(m.tensor([0, 2, 1]), 4),
    "one_hot_classes": lambda m: m.nn.functional.one_hot(m.tensor([[0], [2]])),
    "sum_uint8": lambda m: [m.tensor([200, 100], dtype=m.uint8).sum(),
                            m.sum(m.tensor([[200, 100]], dtype=m.uint8), dim=1)],
    "sum_bool_int32": lambda m: [m.tensor([True, True]).sum(),
                                 m.tensor([7, 8], dtype=m.int32).sum(0)],
    "cumsum_prod_int": lambda m: [m.tensor([200, 100], dtype=m.uint8).cumsum(0),
                                  m.tensor([20, 100], dtype=m.uint8).prod(),
                                  m.cumsum(m.tensor([1, 2], dtype=m.int32), dim=0)],
    "sum_dtype": lambda m: m.tensor([1, 2], dtype=m.int32).sum(dtype=m.float64),
    "to_other": lambda m: m.ones(2).to(m.zeros(1, dtype=m.float64)),
    "to_cpu_dtype": lambda m: [m.ones(2).to("cpu", m.float64), m.ones(2).to("cpu", dtype=m.long)],
    "to_keywords": lambda m: [m.ones(2).to(dtype=m.int64), m.ones(2).to(device="cpu"),
                              m.ones(2).to(m.float64, copy=True)],
    "format_0d": lambda m: [f"{m.tensor(2.0) / 3:.4f}", format(m.tensor(3), "d"),
                            f"{m.tensor(7):>4}", format(m.tensor(True), "")],
    "percent_and_math": lambda m: ["%.2f" % m.tensor(1.5), "%d" % m.tensor(1.5),  # noqa: UP031
                                   math.sqrt(m.tensor([4.0])), math.floor(m.tensor(1.5)),
                                   math.isclose(m.tensor(0.5), 0.5), float(m.tensor([2]))],
    "gather_longer_along_dim": lambda m: m.arange(6.0).reshape(2, 3).gather(
        1, m.tensor([[0, 1, 1, 2], [0, 0, 0, 1]])),
}

# name -> f(m) that PyTorch refuses: xad must refuse too (not answer)
MISUSE = {
    "split_sizes_short": lambda m: m.split(m.arange(5), [2, 2]),
    "split_zero": lambda m: m.arange(5).split(0),
    "split_bad_dim": lambda m: m.zeros(2, 3).split(1, dim=2),
    "linear_float64_input": lambda m: m.nn.Linear(2, 2)(m.zeros(1, 2, dtype=m.float64)),
    "linear_int_input": lambda m: m.nn.Linear(2, 2)(m.zeros(1, 2, dtype=m.int64)),
    "gather_out_of_bounds": lambda m: m.zeros(2, 3).gather(1, m.tensor([[0, 5, 1], [0, 0, 0]])),
    "gather_negative": lambda m: m.zeros(2, 3).gather(1, m.tensor([[-1], [0]])),
    "gather_too_wide": lambda m: m.zeros(2, 3).gather(1, m.tensor([[0, 1], [0, 0], [1, 1]])),
    "scatter_add_out_of_bounds": lambda m: m.zeros(3).scatter_add(0, m.tensor([3]), m.ones(1)),
    "format_1d_spec": lambda m: f"{m.tensor([1.5]):.3f}",
    "round": lambda m: round(m.tensor(1.5)),
    "float_of_two": lambda m: math.sqrt(m.tensor([4.0, 1.0])),
    "Tensor_float": lambda m: m.Tensor(2.5),
    "equal_not_tensor": lambda m: m.equal(m.ones(1), 1),
    "to_cuda_without_gpu": lambda m: m.ones(1).to("cuda"),
}


@pytest.mark.parametrize("name", sorted(MEANINGS))
def test_pytorch_meaning(xb, name):
    ref = _norm(MEANINGS[name](torch))
    got = _norm(MEANINGS[name](T))
    assert got == ref


@pytest.mark.parametrize("name", sorted(MISUSE))
def test_pytorch_misuse_raises(xb, name):
    gpu_case = name == "to_cuda_without_gpu"
    if gpu_case and T.cuda.is_available():  # a device backend is PyTorch's "cuda"
        assert MISUSE[name](T).device == T.ones(1).to("cuda").device
        return
    if not (gpu_case and torch.cuda.is_available()):  # (PyTorch with a GPU allows it)
        with pytest.raises(Exception):  # noqa: B017 (PyTorch's own types vary)
            MISUSE[name](torch)
    with pytest.raises((TypeError, ValueError, IndexError, NotImplementedError)):
        out = MISUSE[name](T)
        if isinstance(out, xad.Tensor):
            out.tolist()  # CuPy reports an index range check at the next host read


def test_the_namespace_decides(xb):
    """``xad.f`` keeps the standard's (NumPy's) meaning; ``torch.f`` and methods PyTorch's."""
    x = xad.arange(6)
    assert [t.tolist() for t in xad.split(x, 2)] == [[0, 1, 2], [3, 4, 5]]  # 2 parts
    assert [t.tolist() for t in x.split(2)] == [[0, 1], [2, 3], [4, 5]]     # pieces of 2
    assert xad.sort(xad.tensor([2.0, 1.0])).tolist() == [1.0, 2.0]
    assert [t.tolist() for t in xad.nonzero(xad.tensor([0, 3]))] == [[1]]
    assert xad.equal(xad.tensor([1, 2]), xad.tensor([1, 3])).tolist() == [True, False]
    assert xad.meshgrid(xad.zeros(2), xad.zeros(3))[0].shape == (3, 2)
    if xb.name == "numpy":  # the standard's unsigned sum (torch's and JAX's namespaces differ)
        assert xad.sum(xad.tensor([1], dtype=xad.uint8)).dtype == xad.uint64


def test_sort_gradient_goes_to_original_places(xb):
    x = xad.tensor([3.0, 1.0, 2.0], dtype=xad.float64, requires_grad=True)
    v, i = x.sort(descending=True)
    (v * xad.tensor([1.0, 10.0, 100.0], dtype=xad.float64)).sum().backward()
    assert x.grad.tolist() == [1.0, 100.0, 10.0] and i.tolist() == [0, 2, 1]


def test_split_pieces_are_views_with_gradients(xb):
    x = xad.arange(5.0, dtype=xad.float64).requires_grad_()
    a, b, c = x.split(2)
    (a.sum() + 2 * b.sum() + 3 * c.sum()).backward()
    assert x.grad.tolist() == [1.0, 1.0, 2.0, 2.0, 3.0]


def _loader_batch(m, sample):
    class Items(m.utils.data.Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return sample(m, i)
    return _norm(next(iter(m.utils.data.DataLoader(Items(), batch_size=3))))


@pytest.mark.parametrize("sample", [
    lambda m, i: (m.ones(2) * i, i * 0.5),          # a Python float target: float64
    lambda m, i: (i, i > 0),                        # Python int and bool
    lambda m, i: m.ones(2) * i,                     # a bare tensor: the batch is a tensor
    lambda m, i: {"x": m.ones(1) * i, "y": float(i)},
], ids=["float", "int_bool", "tensor", "dict"])
def test_loader_collates_as_pytorch(xb, sample):
    assert _loader_batch(T, sample) == _loader_batch(torch, sample)


def test_autocast_and_grad_scaler_take_pytorchs_arguments(xb):
    host = not T.cuda.is_available()
    with pytest.warns(UserWarning, match="GradScaler") if host else _nothing():
        s = T.amp.GradScaler("cuda")
    assert s.is_enabled() == (not host)
    assert T.amp.GradScaler("cpu").is_enabled() and T.cuda.is_available() == (not host)
    with pytest.warns(UserWarning, match="autocast") if host else _nothing():
        ac = T.amp.autocast("cuda")
    with ac:
        assert xad.amp.is_autocast_enabled() == (not host)
    if xb.name == "array_api_strict":
        with pytest.raises(TypeError, match="float16"), T.autocast("cpu", dtype=T.float16):
            pass
        return
    with T.autocast("cpu", dtype=T.float16):
        y = T.ones(2, 3) @ T.ones(3, 1)
        z = T.nn.Linear(3, 1)(T.ones(2, 3))  # autocast casts: no dtype error
    with torch.autocast("cpu", dtype=torch.float16):
        ref = torch.ones(2, 3) @ torch.ones(3, 1)
    assert (y.dtype.name, z.dtype.name) == (str(ref.dtype)[6:], "float16")
    with pytest.raises(ValueError, match="device_type"):
        T.amp.autocast("tpu")


def test_hash_is_identity(xb):
    a, b = xad.tensor(1.0), xad.tensor(1.0)
    assert hash(a) != hash(b) and {a: 1, b: 2}[a] == 1 and a in {a} and b not in {a}


def test_set_printoptions(xb):
    try:
        T.set_printoptions(precision=2)
        assert "1.23," in repr(xad.tensor([1.23456, 2.0]))
        T.set_printoptions(threshold=5, edgeitems=1)
        assert "..." in repr(xad.arange(10))
        T.set_printoptions(sci_mode=True)
        assert "e+03" in repr(xad.tensor([1234.5]))
        with pytest.raises(ValueError, match="profile"):
            T.set_printoptions(profile="long")
    finally:
        xad.Tensor._print_options.clear()
    assert "1.23456" in repr(xad.tensor([1.23456], dtype=xad.float64))


@contextlib.contextmanager
def _nothing():
    yield


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin"])
def test_softmax_without_dim_is_pytorchs_or_an_error(xb, name):
    # PyTorch's implicit dim is the last axis up to 2-d; 3-d and more took another silently
    for shape in [(5,), (3, 4)]:
        a = np.random.default_rng(2).standard_normal(shape)
        ours = getattr(xad.nn.functional, name)(xad.tensor(a, dtype=xad.float64))
        with pytest.warns(UserWarning, match="Implicit dimension"):
            ref = getattr(torch.nn.functional, name)(torch.tensor(a))
        np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-12)
    x = xad.zeros(2, 3, 4)
    with pytest.raises(ValueError, match=f"{name}: pass dim= .* would be dim=0"):
        getattr(xad.nn.functional, name)(x)
    with pytest.raises(ValueError, match="would be dim=1"):
        xad.nn.Softmax()(xad.zeros(2, 3, 4, 5))
    assert xad.nn.Softmax()(xad.zeros(2, 3)).shape == (2, 3)


@pytest.mark.parametrize("call", ["copysign(2.0, t)", "copysign(2, t)", "atan2(1.0, t)",
                                  "sum(3.0)", "clamp(1.0, 0.0)"])
def test_a_number_as_first_argument_is_refused_as_pytorch(call, xb):
    """``torch.copysign(2.0, t)`` and the other functions that are tensor methods take a
    tensor first, as PyTorch's (a ``TypeError`` both; xad's was ``AttributeError: 'float'
    object has no attribute 'copysign'``); ``t.copysign(2.0)`` and ``xad.copysign(2.0, t)``
    (the standard's, which takes a Python number on either side) give PyTorch's values."""
    with pytest.raises(TypeError):
        eval(call, {"t": torch.tensor([1.0, -2.0])}, vars(torch))
    with pytest.raises(TypeError, match=r"torch\.\w+: its first argument must be a tensor"):
        eval(call, {"t": T.tensor([1.0, -2.0])}, vars(T))
    t = xad.tensor([1.0, -2.0, -0.0], dtype=xad.float64)
    want = torch.tensor([1.0, -2.0, -0.0], dtype=torch.float64).copysign(-2.0)
    assert t.copysign(-2.0).tolist() == T.copysign(t, -2.0).tolist() == want.tolist()
    assert xad.copysign(2.0, t).tolist() == torch.tensor(2.0).copysign(
        torch.tensor([1.0, -2.0, -0.0])).tolist()
