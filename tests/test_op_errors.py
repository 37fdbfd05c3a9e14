"""Operations that once gave a wrong number silently or an unclear error (the issue "No
silent wrong answers": out-of-range indices, wrapping axes, NaN from masked rules, empty
axes, 0-d tensors), on every backend."""

from __future__ import annotations

import math

import pytest

import xad
from xad.ops.axes import AxisError

F64 = xad.float64


def _grid():
    return xad.reshape(xad.arange(9.0), (3, 3))


@pytest.mark.parametrize("key, axis, index", [
    (([0], [5]), 1, 5), (([-4],), 0, -4), (([3],), 0, 3), ((slice(None), [0, 3]), 1, 3)])
def test_out_of_range_index_array_raises_naming_axis_and_size(xb, key, axis, index):
    with pytest.raises(IndexError, match=f"index {index} is out of bounds for axis {axis} "
                                         f"with size 3"):
        _grid()[key]


def test_out_of_range_index_tensor_raises(xb):
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0"):
        _grid()[xad.tensor([0, 7])]


def test_out_of_range_item_assignment_raises_and_writes_nothing(xb):
    y = xad.zeros((3, 3))
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 1"):
        y[[0], [5]] = 1.0
    assert y.sum().item() == 0.0


def test_float_index_and_wrong_mask_raise(xb):
    x = _grid()
    with pytest.raises(IndexError, match="integer or bool"):
        x[xad.tensor([0.0, 1.0])]
    with pytest.raises(IndexError, match=r"mask of shape \(2,\)"):
        x[xad.tensor([True, False])]


def test_empty_index_list_selects_nothing(xb):
    assert _grid()[[]].shape == (0, 3)


def test_slices_past_the_end_clamp_on_every_backend(xb):
    x = xad.arange(5.0)
    assert x[3:10].tolist() == [3.0, 4.0]
    assert x[7:9].tolist() == []
    assert x[-10:2].tolist() == [0.0, 1.0]


@pytest.mark.parametrize("call", [
    lambda a: xad.cumsum(a, axis=5), lambda a: xad.concat([a, a], axis=2),
    lambda a: xad.permute_dims(a, (3, 0)), lambda a: xad.squeeze(xad.ones((1, 3)), axis=2),
    lambda a: xad.split(a, 2, axis=3), lambda a: xad.sum(a, axis=-3),
    lambda a: xad.softmax(a, axis=2), lambda a: xad.expand_dims(a, axis=4),
    lambda a: xad.flip(a, axis=2), lambda a: xad.sum(a, axis=(0, 0))])
def test_invalid_axes_raise_instead_of_wrapping(xb, call):
    with pytest.raises(AxisError, match="axis"):
        call(xad.ones((2, 2)))


def test_zero_d_tensors_take_axis_zero_like_pytorch(xb):
    s = xad.tensor(3.0)
    assert xad.sum(s, axis=0).item() == 3.0
    assert xad.mean(s, axis=-1).item() == 3.0
    assert xad.cumsum(s, axis=0).item() == 3.0
    with pytest.raises(AxisError, match="0-d tensor has no axis 0"):
        xad.concat([s, s], axis=0)


def test_empty_axes(xb):
    e = xad.ones((2, 0))
    assert xad.softmax(e, axis=-1).shape == (2, 0)
    assert xad.log_softmax(e, axis=-1).shape == (2, 0)
    assert xad.sum(e, axis=1).tolist() == [0.0, 0.0]
    assert xad.logsumexp(e, axis=1).tolist() == [-math.inf, -math.inf]
    with pytest.raises(ValueError, match="max: cannot reduce.*empty axis"):
        xad.max(e, axis=1)


@pytest.mark.parametrize("f", [
    lambda x: xad.sqrt(xad.relu(x)), lambda x: xad.sqrt(xad.clip(x, 0.0)),
    lambda x: xad.sqrt(xad.maximum(x, 0.0)), lambda x: xad.sqrt(-xad.minimum(-x, 0.0))],
    ids=["relu", "clip", "maximum", "minimum"])
def test_masked_rules_give_zero_not_nan_where_locally_constant(xb, f):
    x = xad.tensor([-1.0, 4.0], dtype=F64, requires_grad=True)
    f(x).sum().backward()
    assert [abs(v) for v in x.grad.tolist()] == [0.0, 0.25]


@pytest.mark.parametrize("f", [
    lambda x: xad.sqrt(xad.max(xad.stack([x, xad.zeros_like(x)]), axis=0)),
    lambda x: xad.sqrt(-xad.min(xad.stack([-x, xad.zeros_like(x)]), axis=0))],
    ids=["max", "min"])
def test_reductions_give_zero_not_nan_where_locally_constant(xb, f):
    x = xad.tensor([-1.0, 4.0], dtype=F64, requires_grad=True)
    f(x).sum().backward()
    assert [abs(v) for v in x.grad.tolist()] == [0.0, 0.25]
