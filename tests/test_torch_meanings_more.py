"""PyTorch meanings that a probe of ``xad.as_torch`` against torch 2.13 found giving other
numbers or dtypes without an error: a bool ``tril``/``triu``, ``chunk`` of an empty axis,
``max_pool``'s ``return_indices`` beside padding and at NaN, ``index_fill``/``scatter`` of
bools with a number; each on every backend."""

from __future__ import annotations

import math

import numpy as np
import pytest

import xad
import xad.nn.functional as F

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402
from test_half_scalars import _dtypes as half_dtypes  # noqa: E402


def _same(ours, theirs):
    assert str(ours.tolist()) == str(theirs.tolist())  # NaN and -0.0 too
    assert str(ours.dtype).rsplit(".")[-1] == str(theirs.dtype).rsplit(".")[-1]


def test_tril_and_triu_of_a_bool_mask_stay_bool(xb):
    """An attention mask ``ones(T, T, dtype=bool).tril()`` was int64 (the zeros above the
    diagonal were a Python int beside the bools)."""
    m = [[True, False, True], [True, True, False]]
    for k in (-1, 0, 1):
        _same(xad.tensor(m).tril(k), torch.tensor(m).tril(k))
        _same(xad.tensor(m).triu(k), torch.tensor(m).triu(k))


def test_chunk_of_an_empty_axis_gives_chunks_pieces(xb):
    """PyTorch gives ``chunks`` empty pieces (xad gave the tensor alone: ``a, b =
    x.chunk(2)`` failed and a loop over the pieces ran once)."""
    for shape, chunks, dim in (((0,), 2, 0), ((2, 0), 3, -1), ((0, 3), 1, 0)):
        ours = xad.zeros(shape).chunk(chunks, dim)
        theirs = torch.zeros(shape).chunk(chunks, dim)
        assert [tuple(c.shape) for c in ours] == [tuple(c.shape) for c in theirs]


@pytest.mark.parametrize("case", [
    ("max_pool1d", [[[-math.inf, -math.inf, 2.0, -math.inf, -math.inf]]],
     dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("max_pool1d", [[[math.nan, 1.0, math.nan, 2.0]]], dict(kernel_size=4)),
    ("max_pool2d", [[[-math.inf, -math.inf, 2.0], [1.0, -math.inf, -math.inf]]],
     dict(kernel_size=2, stride=1, padding=1)),
    ("max_pool2d", [[[[math.nan, 1.0], [math.nan, 2.0]], [[0.0, 1.0], [3.0, 3.0]]]],
     dict(kernel_size=2)),
    ("adaptive_max_pool1d", [[[1.0, math.nan, 2.0, math.nan, 3.0, 0.5]]], dict(output_size=1)),
    ("adaptive_max_pool1d", [[[math.nan, math.nan, 2.0, math.nan, 3.0]]], dict(output_size=2)),
    ("adaptive_max_pool2d", [[[math.nan, math.nan, 1.0], [math.nan, 2.0, 5.0],
                              [0.0, math.nan, 1.0]]], dict(output_size=2)),
    ("adaptive_max_pool2d", [[[[1.0, math.nan], [math.nan, 2.0]]]], dict(output_size=1)),
])
def test_max_pool_indices_skip_the_padding_and_take_the_last_nan(xb, case):
    """A window whose input is all ``-inf`` tied with its ``-inf`` padding: the index named
    the padding (``-1``); of several NaNs torch's loop keeps the last (xad took the first;
    the adaptive poolings too, until later)."""
    name, a, kw = case
    y, i = getattr(F, name)(xad.tensor(a), return_indices=True, **kw)
    yt, it = getattr(TF, name)(torch.tensor(a), return_indices=True, **kw)
    _same(i, it)
    assert str(y.tolist()) == str(yt.tolist())


def test_index_fill_and_scatter_of_a_bool_tensor_with_a_number_stay_bool(xb):
    """``index_fill(dim, i, 0)`` and ``scatter(dim, i, 1)`` of bools were int64 (the number
    stayed an int beside the bools); PyTorch casts the number to bool."""
    m = [[True, False, True], [False, True, True]]
    for v in (0, 1, 2.5):
        _same(xad.tensor(m).index_fill(1, xad.tensor([0, 2]), v),
              torch.tensor(m).index_fill(1, torch.tensor([0, 2]), v))
        _same(xad.tensor(m).scatter(1, xad.tensor([[1], [0]]), v),
              torch.tensor(m).scatter(1, torch.tensor([[1], [0]]), v))


def _close(ours, theirs):
    """Within a rounding of the half dtype (torch's kernel rounds its intermediates: its
    bfloat16 batch_norm gives -0.99609375 where the float32 value rounds to -1)."""
    assert str(ours.dtype).rsplit(".")[-1] == str(theirs.dtype).rsplit(".")[-1]
    np.testing.assert_allclose(np.array(ours.float().tolist()), theirs.float().numpy(),
                               rtol=8e-3, atol=1e-3)


def test_half_std_nanmean_and_batch_norm_as_torch(xb):
    """float16 ``std`` of 3 and 1e4 was inf (its variance, 2.5e7, overflowed before the
    root), ``nanmean`` of float16 came back float32, and ``batch_norm`` in training gave 0
    for a channel whose float16 squared deviations overflowed; PyTorch computes each in
    float32 and rounds once."""
    a = [[3.0, 1e4, 7.0], [0.1, 0.2, 0.3]]
    for dt, dtt in half_dtypes(xb):  # those the backend has (array_api_strict: none)
        x, xt = xad.tensor(a, dtype=dt), torch.tensor(a, dtype=dtt)
        _same(x.std(1), xt.std(1))
        _same(xad.std(x, axis=1, correction=1), xt.std(1))
        _same(x.std(), xt.std())
        _same(xad.std_mean(x, 1)[0], torch.std_mean(xt, 1)[0])
        _same(x.nanmean(1), xt.nanmean(1))
        _same(xad.tensor([math.nan], dtype=dt).nanmean(),
              torch.tensor([math.nan], dtype=dtt).nanmean())
        _close(F.batch_norm(x, None, None, training=True),
               TF.batch_norm(xt, None, None, training=True))
        m, v, mt, vt = xad.zeros(3), xad.ones(3), torch.zeros(3), torch.ones(3)
        _close(F.batch_norm(x, m, v, training=True), TF.batch_norm(xt, mt, vt, training=True))
        _close(m, mt)
        _close(v, vt)


def test_broadcast_to_keeps_a_size_at_minus_one(xb):
    """``torch.broadcast_to(x, (3, -1, 2))`` and ``x.broadcast_to((2, -1))`` are ``expand``'s
    (they raised "all elements of broadcast shape must be non-negative", naming no
    operation); a -1 for a new leading axis is refused, as PyTorch's."""
    from xad.as_torch import namespace

    xt = namespace()["torch"]
    a = [[1], [2]]
    for shape in ((3, -1, 2), (2, -1), (-1, 4)):
        _same(xt.broadcast_to(xad.tensor(a), shape), torch.broadcast_to(torch.tensor(a), shape))
        _same(xad.tensor(a).broadcast_to(shape), torch.tensor(a).broadcast_to(shape))
    with pytest.raises(ValueError, match="expand: -1 keeps a size"):
        xad.tensor(a).broadcast_to((-1, 2, 1))


def test_documented_differences_found_by_the_probe(xb):
    """The rows docs/PORTING.md gives these: xad's numbers pinned, torch 2.13's in comments."""
    inf, nan = math.inf, math.nan
    f64 = xad.float64
    x = xad.zeros(1, 3, dtype=f64, requires_grad=True)
    xad.cdist(x, xad.ones(1, 3, dtype=f64), p=inf).sum().backward()
    assert x.grad.tolist() == [[-1 / 3] * 3]  # torch: [[-1, -1, -1]]
    x = xad.tensor([-inf, 0.0, 1.0], dtype=f64, requires_grad=True)
    x.logcumsumexp(0)[0].backward()
    assert x.grad.tolist() == [1.0, 0.0, 0.0]  # torch: [nan, 0, 0]
    x = xad.tensor([3.0, nan, 3.0], dtype=f64, requires_grad=True)
    x.max().backward()
    assert all(math.isnan(g) for g in x.grad.tolist())  # torch: [0, 1, 0]
    a = xad.arange(12.0).reshape(3, 4)
    assert a[[[0, 2]]].shape == (1, 2, 4)  # torch: (2, 4), a deprecated tuple reading
    pad = xad.tensor([[[-inf, -inf, 2.0]]], dtype=f64, requires_grad=True)
    F.max_pool1d(pad, 2, 1, padding=1).sum().backward()
    assert pad.grad.tolist() == [[[1.0, 0.0, 2.0]]]  # torch: [[[2, 0, 2]]] (window 0 to x[0])


def test_count_nonzero_method_over_no_dims_counts_all(xb):
    """``x.count_nonzero(())`` counts every element, as ``torch.count_nonzero(x, ())`` did
    already (the method gave the 0/1 tensor of each element)."""
    a = [[1.0, 0.0, 3.0], [4.0, 5.0, 7.0]]
    for dim in ((), [], (0, 1), [-1], None):
        _same(xad.tensor(a).count_nonzero(dim), torch.tensor(a).count_nonzero(dim))


def test_xlogy_gradient_to_input_at_zero_is_log_other(xb):
    """``d xlogy(x, y) / dx`` is ``log(y)`` at ``x == 0`` too (0 only where ``y <= 0``), as
    torch's; xad gave 0 there (a probability at exactly 0 learnt nothing)."""
    xs, ys = [0.0, -0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0], [2.0, 0.5, 0.3, 0.0, -1.0, 0.0, -1.0, 4.0]
    x = xad.tensor(xs, dtype=xad.float64, requires_grad=True)
    y = xad.tensor(ys, dtype=xad.float64, requires_grad=True)
    xt = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
    yt = torch.tensor(ys, dtype=torch.float64, requires_grad=True)
    _same(x.xlogy(y), xt.xlogy(yt))
    w = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    (x.xlogy(y) * xad.tensor(w, dtype=xad.float64)).sum().backward()
    (xt.xlogy(yt) * torch.tensor(w, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy()[[0, 1, 2, 4, 5, 6, 7]],
                               yt.grad.numpy()[[0, 1, 2, 4, 5, 6, 7]], rtol=1e-12)
    assert y.grad.tolist()[3] == 0.0  # torch: NaN (0 / 0); the value is 0 for every y there
