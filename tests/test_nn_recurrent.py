"""Recurrent layers, cells and packed sequences against PyTorch in float64 on every backend:
outputs, final states and the gradients of the input, the initial states and every weight
(loaded from the PyTorch module's state_dict, so the keys are PyTorch's); gradients and
second derivatives of the time-loop primitive by finite differences; long sequences."""

from __future__ import annotations

import inspect
import sys
import zlib

import numpy as np
import pytest
from same_numbers import assert_same_numbers

import xad
import xad.nn as nn
from xad.nn.rnn_utils import (
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)
from xad.ops.recurrent import recurrent

torch = pytest.importorskip("torch")

f64 = xad.float64
TOL = 1e-10


def _load(xm, tm):
    xm.load_state_dict({k: xad.tensor(v.detach().numpy(), dtype=f64)
                        for k, v in tm.state_dict().items()})


def _close(a, t, what):
    np.testing.assert_allclose(a.numpy(), t.detach().numpy(), rtol=TOL, atol=TOL, err_msg=what)


def _flat(out):
    """The tensors of an RNN result ``(output, h)`` / ``(output, (h, c))``, in order."""
    o, h = out
    o = o.data if hasattr(o, "batch_sizes") else o
    return [o, *(h if isinstance(h, tuple) else (h,))]


def _compare(name, xm, tm, x, hx=None, pack=None):
    """Run both modules on ``x`` (and ``hx``), compare every output, then the gradients of
    a random projection of the outputs for the input, states and weights."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    _load(xm, tm)
    hx = hx if hx is None or isinstance(hx, tuple) else (hx,)
    xs = [xad.tensor(a, dtype=f64, requires_grad=True) for a in (x, *(hx or ()))]
    ts = [torch.tensor(a, requires_grad=True) for a in (x, *(hx or ()))]

    def call(m, ins, lib):
        h = None if hx is None else (tuple(ins[1:]) if len(ins) > 2 else ins[1])
        inp = ins[0] if pack is None else pack(lib, ins[0])
        return m(inp, h)
    yo, to = _flat(call(xm, xs, "xad")), _flat(call(tm, ts, "torch"))
    for i, (a, b) in enumerate(zip(yo, to)):
        _close(a, b, f"{name}: output {i}")
    seeds = [rng.standard_normal(tuple(t.shape)) for t in to]
    sx = sum((a * xad.tensor(s, dtype=f64)).sum() for a, s in zip(yo, seeds))
    st = sum((b * torch.tensor(s)).sum() for b, s in zip(to, seeds))
    xp = dict(xm.named_parameters())
    tp = dict(tm.named_parameters())
    gx = xad.autograd.grad(sx, xs + list(xp.values()))
    gt = torch.autograd.grad(st, ts + list(tp.values()))
    names = [f"input {i}" for i in range(len(xs))] + list(xp)
    for n, a, b in zip(names, gx, gt):
        _close(a, b, f"{name}: gradient of {n}")


def _seq(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


CONFIGS = [
    ("rnn_tanh", nn.RNN, torch.nn.RNN, {}),
    ("rnn_relu_2layers", nn.RNN, torch.nn.RNN, {"nonlinearity": "relu", "num_layers": 2}),
    ("lstm", nn.LSTM, torch.nn.LSTM, {}),
    ("lstm_bi_2layers", nn.LSTM, torch.nn.LSTM, {"num_layers": 2, "bidirectional": True}),
    ("lstm_proj_bi", nn.LSTM, torch.nn.LSTM, {"proj_size": 3, "bidirectional": True}),
    ("lstm_no_bias_batch_first", nn.LSTM, torch.nn.LSTM, {"bias": False, "batch_first": True}),
    ("gru", nn.GRU, torch.nn.GRU, {}),
    ("gru_bi_2layers_batch_first", nn.GRU, torch.nn.GRU,
     {"num_layers": 2, "bidirectional": True, "batch_first": True}),
]


@pytest.mark.parametrize("name,xcls,tcls,kw", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_layer_matches_torch(xb, name, xcls, tcls, kw):
    tm = tcls(4, 5, **kw).double()
    xm = xcls(4, 5, dtype=f64, **kw)
    assert list(xm.state_dict()) == list(tm.state_dict())
    x = _seq(3, 4, 4) if kw.get("batch_first") else _seq(4, 3, 4)
    _compare(name, xm, tm, x)
    d = 2 if kw.get("bidirectional") else 1
    n = kw.get("num_layers", 1) * d
    h0 = _seq(n, 3, kw.get("proj_size") or 5, seed=1)
    hx = (h0, _seq(n, 3, 5, seed=2)) if tcls is torch.nn.LSTM else h0
    _compare(name + ":hx", xm, tm, x, hx)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_unbatched_input(xb, cls):
    tm, xm = getattr(torch.nn, cls)(3, 4).double(), getattr(nn, cls)(3, 4, dtype=f64)
    _compare(f"unbatched {cls}", xm, tm, _seq(5, 3))
    h0 = _seq(1, 4, seed=3)
    _compare(f"unbatched {cls}:hx", xm, tm, _seq(5, 3), (h0, h0) if cls == "LSTM" else h0)


def _packer(lengths, enforce_sorted, batch_first=False):
    def pack(lib, x):
        if lib == "xad":
            return pack_padded_sequence(x, lengths, batch_first, enforce_sorted)
        return torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first,
                                                       enforce_sorted)
    return pack


@pytest.mark.parametrize("cls,kw", [("LSTM", {"bidirectional": True, "num_layers": 2}),
                                    ("GRU", {"bidirectional": True}), ("RNN", {})])
def test_packed_sequences_match_torch(xb, cls, kw):
    tm, xm = getattr(torch.nn, cls)(3, 4, **kw).double(), getattr(nn, cls)(3, 4, dtype=f64, **kw)
    x = _seq(5, 4, 3)
    _compare(f"packed {cls}", xm, tm, x, pack=_packer([5, 3, 3, 1], True))
    n = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
    h0 = _seq(n, 4, 4, seed=4)
    _compare(f"packed unsorted {cls}", xm, tm, x, (h0, h0 * 0.5) if cls == "LSTM" else h0,
             pack=_packer([2, 5, 1, 4], False))


def test_pad_and_pack_utilities_match_torch(xb):
    from xad.nn.utils.rnn import pad_sequence as reached  # PyTorch's module path
    assert reached is pad_sequence
    seqs = [_seq(n, 2, seed=n) for n in (2, 4, 1)]
    xs = [xad.tensor(s, dtype=f64) for s in seqs]
    ts = [torch.tensor(s) for s in seqs]
    for bf in (False, True):
        for side in ("right", "left"):
            _close(pad_sequence(xs, bf, -1.0, side),
                   torch.nn.utils.rnn.pad_sequence(ts, bf, -1.0, side), f"pad {bf} {side}")
    p = pack_sequence(xs, enforce_sorted=False)
    tp = torch.nn.utils.rnn.pack_sequence(ts, enforce_sorted=False)
    _close(p.data, tp.data, "packed data")
    assert p.batch_sizes.tolist() == tp.batch_sizes.tolist()
    assert p.sorted_indices.tolist() == tp.sorted_indices.tolist()
    assert p.unsorted_indices.tolist() == tp.unsorted_indices.tolist()
    out, lens = pad_packed_sequence(p, batch_first=True, padding_value=7.0, total_length=6)
    tout, tlens = torch.nn.utils.rnn.pad_packed_sequence(tp, True, 7.0, 6)
    _close(out, tout, "unpacked")
    assert lens.tolist() == tlens.tolist()
    assert [u.shape for u in unpack_sequence(p)] == [(2, 2), (4, 2), (1, 2)]
    assert [u.shape for u in unpad_sequence(out, lens, batch_first=True)] == [(2, 2), (4, 2),
                                                                              (1, 2)]
    stacked = np.stack([_seq(3, 2, seed=1), _seq(3, 2, seed=2)])  # a tensor of sequences
    _close(pad_sequence(xad.tensor(stacked, dtype=f64)),
           torch.nn.utils.rnn.pad_sequence(torch.tensor(stacked)), "pad of a tensor")
    with pytest.raises(RuntimeError, match="not sorted"):
        pack_padded_sequence(xad.zeros(3, 2), [1, 3])
    with pytest.raises(ValueError, match="lengths must be in 1..3"):
        pack_padded_sequence(xad.zeros(3, 2), [4, 3])


@pytest.mark.parametrize("lengths", [(1, 3, 2), (3, 1, 3, 2), (2, 4, 4, 1), (2, 3, 1)])
def test_unsorted_round_trips_match_torch(xb, lengths):
    # a sort order that is not its own inverse ((1, 3, 2): [1, 2, 0]) gave each sequence
    # another's length, so unpack_sequence cut the sequences at the wrong places
    xs = [xad.tensor(_seq(n, 2, seed=n), dtype=f64) for n in lengths]
    ts = [torch.tensor(_seq(n, 2, seed=n)) for n in lengths]
    p = pack_sequence(xs, enforce_sorted=False)
    tp = torch.nn.utils.rnn.pack_sequence(ts, enforce_sorted=False)
    for bf in (False, True):
        out, lens = pad_packed_sequence(p, batch_first=bf, padding_value=-9.0)
        tout, tlens = torch.nn.utils.rnn.pad_packed_sequence(tp, bf, -9.0)
        _close(out, tout, f"unpacked {lengths} batch_first={bf}")
        assert lens.tolist() == tlens.tolist() == list(lengths)
    for u, t in zip(unpack_sequence(p), torch.nn.utils.rnn.unpack_sequence(tp), strict=True):
        _close(u, t, f"unpack_sequence {lengths}")


def test_pack_gradient_reaches_the_padded_input(xb):
    x = xad.tensor(_seq(4, 3, 2), dtype=f64, requires_grad=True)
    f = lambda x: pad_packed_sequence(pack_padded_sequence(x, [4, 2, 1]))[0] ** 2  # noqa
    assert xad.gradcheck(f, [x])


@pytest.mark.parametrize("cls,tcls", [("RNNCell", {"nonlinearity": "relu"}),
                                      ("LSTMCell", {}), ("GRUCell", {"bias": False})])
def test_cells_match_torch(xb, cls, tcls):
    tm = getattr(torch.nn, cls)(3, 4, **tcls).double()
    xm = getattr(nn, cls)(3, 4, dtype=f64, **tcls)
    _load(xm, tm)
    assert list(xm.state_dict()) == list(tm.state_dict())
    x, h = _seq(2, 3), _seq(2, 4, seed=5)
    hx = (h, h * 2) if cls == "LSTMCell" else h

    def run(m, lib, x, hx):
        conv = (lambda a: xad.tensor(a, dtype=f64)) if lib == "xad" else torch.tensor
        hx = tuple(conv(a) for a in hx) if isinstance(hx, tuple) else conv(hx)
        out = []
        for _ in range(3):  # a three-step loop feeding the state back
            hx = m(conv(x), hx)
            out += list(hx) if isinstance(hx, tuple) else [hx]
        return out
    for a, b in zip(run(xm, "xad", x, hx), run(tm, "torch", x, hx)):
        _close(a, b, cls)
    _close(xm(xad.tensor(x[0], dtype=f64))[0] if cls == "LSTMCell" else
           xm(xad.tensor(x[0], dtype=f64)),
           tm(torch.tensor(x[0]))[0] if cls == "LSTMCell" else tm(torch.tensor(x[0])),
           f"{cls} unbatched")


MODES = [("rnn_tanh", 1), ("rnn_relu", 1), ("lstm", 4), ("gru", 3)]


@pytest.mark.parametrize("mode,gates", MODES, ids=[m[0] for m in MODES])
@pytest.mark.parametrize("reverse", [False, True])
def test_recurrent_primitive_gradients(xb, mode, gates, reverse):
    h = 3
    gx, h0, c0 = (xad.randn(*s, dtype=f64, requires_grad=True)
                  for s in ((3, 2, gates * h), (2, h), (2, h)))
    w = (xad.randn(gates * h, h, dtype=f64) * 0.5).detach().requires_grad_()
    b = xad.randn(gates * h, dtype=f64, requires_grad=True)
    mask = xad.tensor([[[1.0], [1.0]], [[1.0], [0.0]], [[0.0], [0.0]]], dtype=f64)

    def f(gx, h0, c0, w, b):
        hs, cs = recurrent(gx, h0, c0, w, b, mask=mask, mode=mode, reverse=reverse)
        return hs if cs is None else hs * cs
    assert xad.gradcheck(f, [gx, h0, c0, w, b])
    if not reverse:  # the same formulas: second order once
        assert xad.gradgradcheck(f, [gx, h0, c0, w, b])


def test_lstm_projection_second_order(xb):
    gx, h0, c0 = (xad.randn(*s, dtype=f64, requires_grad=True)
                  for s in ((2, 2, 8), (2, 1), (2, 2)))
    w, wr = xad.randn(8, 1, dtype=f64, requires_grad=True), xad.randn(1, 2, dtype=f64,
                                                                      requires_grad=True)
    f = lambda gx, h0, c0, w, wr: recurrent(gx, h0, c0, w, None, wr, mode="lstm")[0]  # noqa
    assert xad.gradgradcheck(f, [gx, h0, c0, w, wr])


def test_long_sequence_has_no_recursion(xb):
    """More steps than the recursion limit (lowered here, to keep the test cheap): through a
    layer (one node per direction) and through a Python loop over a cell (a node chain
    longer than the limit), forward, backward and freeing the graph."""
    limit = sys.getrecursionlimit()
    depth = len(inspect.stack(0))
    sys.setrecursionlimit(depth + 250)  # room for a library's own calls (JAX's)
    try:
        lstm = nn.LSTM(2, 3, bidirectional=True)
        x = xad.randn(60, 1, 2)
        out, (h, c) = lstm(x)
        (out.sum() + c.sum()).backward()
        assert lstm.weight_hh_l0_reverse.grad.shape == (12, 3)
        cell, hx = nn.GRUCell(2, 3), None
        x0 = x[0]
        for _ in range(100):  # 3 nodes a step
            hx = cell(x0, hx)
        hx.sum().backward()
        del hx
    finally:
        sys.setrecursionlimit(limit)
    assert bool(xad.isfinite(cell.weight_hh.grad).all())


def test_dropout_between_layers_and_train_eval(xb):
    lstm = nn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = xad.randn(5, 2, 3)
    lstm.eval()
    a, b = lstm(x)[0].numpy(), lstm(x)[0].numpy()
    assert (a == b).all()
    lstm.train()
    assert not np.allclose(lstm(x)[0].numpy(), a)
    with pytest.warns(UserWarning, match="num_layers=1"):
        nn.GRU(3, 4, dropout=0.2)


def test_float32_stays_float32(xb):
    out, (h, c) = nn.LSTM(3, 4)(xad.randn(5, 2, 3))
    assert out.dtype == h.dtype == c.dtype == xad.float32


def test_errors_name_the_shapes(xb):
    with pytest.raises(ValueError, match="input_size=3"):
        nn.LSTM(3, 4)(xad.zeros(5, 2, 2))
    with pytest.raises(ValueError, match=r"h_0 has shape \(1, 2, 4\), expected \(2, 2, 4\)"):
        nn.LSTM(3, 4, num_layers=2)(xad.zeros(5, 2, 3), (xad.zeros(1, 2, 4),
                                                         xad.zeros(2, 2, 4)))
    with pytest.raises(TypeError, match=r"tuple \(h_0, c_0\)"):
        nn.LSTM(3, 4)(xad.zeros(5, 2, 3), xad.zeros(1, 2, 4))
    with pytest.raises(ValueError, match="proj_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(3, 4, nonlinearity="sigmoid")


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("with_g_cs", [False, True])
def test_lstm_in_place_loops_equal_the_generic_ones_bit_for_bit(xb, reverse, dtype, with_g_cs):
    # the LSTM's loops written into buffers (NumPy, ufuncs with out=) repeat the generic
    # loops' operations in order: the same numbers exactly, forward and backward
    from xad.ops.recurrent import _Arrays, _bptt, _run
    dt = getattr(xad, dtype)
    gx, h0, c0 = (xad.randn(*s, dtype=dt) for s in ((7, 3, 16), (3, 4), (3, 4)))
    w, g_hs, g_cs = xad.randn(16, 4, dtype=dt) * 0.5, xad.randn(7, 3, 4, dtype=dt), \
        xad.randn(7, 3, 4, dtype=dt)
    raw = [t._array for t in (gx, h0, c0, w, g_hs, g_cs)]
    ins = (raw[0], raw[1], raw[2], raw[3], None, None, None)
    grads = (raw[4], raw[5] if with_g_cs else None)
    res = []
    for into in (False, True):
        m = _Arrays(xb)
        m.into = into and m.into
        with xb.on_device():
            outs = _run(m, "lstm", *ins, reverse)
            res.append([*outs, *(r for r in _bptt(m, "lstm", ins, outs, grads, reverse)
                                 if r is not None)])
    for a, b in zip(*res):
        assert_same_numbers(xb, xb.to_numpy(a), xb.to_numpy(b))
