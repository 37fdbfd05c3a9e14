"""``Tensor.view(dtype)``, PyTorch's bit reinterpretation: its bits, shapes and errors, its
storage shared with the tensor both ways, and no gradient through it. Expected values are
PyTorch 2.13's (written out, so the test runs without torch)."""

from __future__ import annotations

import pytest

import xad

I32, F32, F64 = xad.int32, xad.float32, xad.float64


@pytest.mark.parametrize("values,src,dst,shape,want", [
    ([1.0, -2.5, float("inf"), -0.0], F32, I32, (4,),
     [1065353216, -1071644672, 2139095040, -2147483648]),
    ([1.0, -2.0, 65504.0], xad.float16, xad.int16, (3,), [15360, -16384, 31743]),
    ([1.0, -2.5], F64, I32, (4,), [0, 1072693248, 0, -1073479680]),
    ([0, 0, 128, 63, 0, 0, 0, 192], xad.uint8, F32, (2,), [1.0, -2.0]),
    ([True, False, True], xad.bool_, xad.uint8, (3,), [1, 0, 1]),
    ([1, 0, 1], xad.uint8, xad.bool_, (3,), [True, False, True]),
    ([[1.0, 2.0], [3.0, -4.0]], F32, F64, (2, 1), [[2.000000473111868], [-512.0001225471497]]),
    (1.0, F32, I32, (), 1065353216),
    ([1, 2], xad.int64, F64, (2,), [5e-324, 1e-323]),
    ([1.0, -1.0], F32, xad.int8, (8,), [0, 0, -128, 63, 0, 0, -128, -65]),
    ([1.0, 2.0], F32, xad.complex64, (1,), [complex(1.0, 2.0)])])
def test_view_dtype_gives_torchs_bits_and_shape(values, src, dst, shape, want, xb):
    if xb._dtypes.get(src) is None or xb._dtypes.get(dst) is None:
        with pytest.raises(TypeError, match="has no dtype"):  # (array_api_strict: float16)
            xad.tensor([0], dtype=src).view(dst)
        return
    v = xad.tensor(values, dtype=src).view(dst)
    assert v.dtype is dst and v.shape == shape and not v.requires_grad
    assert v.tolist() == want


def test_writes_reach_both_ways_as_torch(xb):
    x = xad.tensor([1.0, -2.5], dtype=F64)
    v = x.view(I32)
    v[1] = 1073741824          # the high word of x[0]: 2.0
    assert x.tolist() == [2.0, -2.5]
    x[1] = 1.0
    assert v.tolist() == [0, 1073741824, 0, 1072693248]
    v += 1                     # torch: the low words count up by one
    assert v.tolist() == [1, 1073741825, 1, 1072693249]
    assert x.view(I32).tolist() == v.tolist()
    w = x[1:].view(xad.int64)  # a view of a slice: the write lands in x[1]
    w.fill_(4607182418800017408)
    assert x.tolist()[1] == 1.0 and w.tolist() == [4607182418800017408]


def test_a_view_of_a_view_as_another_dtype(xb):
    x = xad.tensor([[1.0, 2.0], [3.0, 4.0]])
    v = x.t().contiguous().view(I32)[0]  # a row of bits of a copy: x stays
    v.zero_()
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    h = x.view(xad.int16)[:, 1::2]       # the high halves of x's floats
    h.zero_()
    assert x.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_no_gradient_and_writes_leave_the_graph_as_torch(xb):
    w = xad.tensor([1.0, 2.0], requires_grad=True)
    assert not w.view(I32).requires_grad and not w.view(F32).requires_grad
    z = w * 3
    z.view(I32)[0] = 1073741824          # z[0] = 2.0, outside the graph (torch's)
    assert z.tolist() == [2.0, 6.0]
    z.sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]  # torch: MulBackward0 kept, 3 everywhere
    w.view(I32)[1] = 1065353216           # a leaf's bits: allowed, as torch's
    assert w.tolist() == [1.0, 1.0]


def test_a_view_follows_its_base_through_a_graph_and_a_compiled_step(xb):
    w = xad.tensor([1.0, 2.0], requires_grad=True)
    x = w * 2
    v = x.view(I32)
    x.mul_(2)                              # recorded: x takes a new array
    assert v.tolist() == [1082130432, 1090519040]  # torch: the bits of 4.0 and 8.0
    v.view(2, 1)[1, 0] = 1065353216
    assert x.tolist() == [4.0, 1.0]
    x.sum().backward()
    assert w.grad.tolist() == [4.0, 4.0]   # torch: the write left x's graph as it was

    def step(a):
        b = a * 1
        b.view(I32).add_(1)
        return b

    f = xad.compile(step, check=True)
    for _ in range(3):
        assert f(xad.tensor([1.0, 2.0])).view(I32).tolist() == [1065353217, 1073741825]


def test_a_changed_saved_result_raises_at_backward(xb):
    w = xad.tensor([1.0, 2.0], requires_grad=True)
    z = w.exp()
    z.view(I32).add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation|version"):
        z.sum().backward()


def test_a_recorded_value_written_through_the_view_joins_its_graph(xb):
    base = xad.tensor([4607182418800017408, 0], dtype=xad.int64)  # bits of 1.0, 0.0
    y = base.view(F64)
    t = xad.tensor([2.0, 3.0], dtype=F64, requires_grad=True)
    y *= t                                 # torch: y joins the graph, base takes the bits
    assert y.tolist() == [2.0, 0.0] and base.tolist() == [4611686018427387904, 0]
    (y * y).sum().backward()
    assert t.grad.tolist() == [4.0, 0.0]   # d/dt (t * 1)^2 = 2t, d/dt (t * 0)^2 = 0


@pytest.mark.parametrize("shape,src,dst,match", [
    ((), F32, xad.int16, "0-d"),
    ((2, 3), xad.int16, F32, "last axis's length 3"),
    ((3, 2), F32, xad.int16, "stride 3"),            # (a transpose)
    ((4, 2), xad.int16, F32, "storage offset 1"),    # (x[:, 1:3] of a (4, 6))
    ((4, 2), xad.int16, F64, "must be divisible by 4")])
def test_refused_where_torch_refuses(shape, src, dst, match, xb):
    x = {(): lambda: xad.tensor(1.0),
         (2, 3): lambda: xad.zeros(2, 3, dtype=src),
         (3, 2): lambda: xad.zeros(2, 3).t(),
         (4, 2): lambda: xad.zeros(4, 6, dtype=src)[:, 1:3] if dst is F32 else
         xad.zeros(4, 6, dtype=src)[:, :4]}[shape]()
    with pytest.raises(RuntimeError, match=match):
        x.view(dst)


def test_allowed_where_torch_allows(xb):
    assert xad.zeros(4, 6, dtype=xad.int16)[:, 2:4].view(F32).shape == (4, 1)
    assert xad.zeros(2, 4)[:, :1].view(xad.int16).shape == (2, 2)
    assert xad.zeros(3)[:, None].view(xad.int16).shape == (3, 2)
    assert xad.zeros(0, 4, dtype=xad.int16).view(F64).shape == (0, 1)
    assert xad.zeros(2, 4).view(dtype=I32).shape == (2, 4)


def test_a_write_through_a_dtype_view_of_an_expanded_tensor_raises(xb):
    e = xad.zeros(3).expand(2, 3)
    v = e.view(I32)
    with pytest.raises(NotImplementedError, match="view\\(dtype\\)"):
        v[0] = 5
    assert e.tolist() == [[0.0] * 3] * 2
