"""A recurrent layer's time loop as one node: Elman RNN (tanh or relu), LSTM (with an
optional projection) and GRU, in PyTorch's gate order and formulas.

The input projection of every time step is one matrix product made before the loop (by the
caller, :func:`xad.nn.functional.rnn`); :class:`Recurrent` runs the loop over the
precomputed gates ``gx`` ``(T, B, G)``: per step one product with ``w_hh`` and a few
element-wise array calls, with no node per step, so long sequences cost no recursion and
no per-step recording. Its rule (back-propagation through time) recomputes the gate
pre-activations of all steps in one product from the saved states, then walks the steps
backward; it is one non-differentiable operation (:class:`RecurrentGrad`), or, when the
backward pass is itself recorded (``create_graph``), the same formulas in xad operations.
Both passes are written once, over :class:`_Arrays` or :class:`_Tensors`.

``mask`` ``(T, B, 1)`` (ones and zeros; packed sequences) keeps a sequence's state where its
mask is 0: ``h_t = h_{t-1} + m_t (h_new - h_{t-1})``, so a finished sequence carries its last
state to the end (and the reverse direction starts at each sequence's own end).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..backend import takes_out
from ..context import context
from ..factories import full
from ..tensor import Tensor
from ._apply import Op, apply
from .elementwise import Sigmoid, astype, relu, sigmoid, tanh
from .linalg import matmul
from .manipulation import unstack
from .reduce import sum as _sum
from .shape import concat, matrix_transpose, reshape, stack

__all__ = ["recurrent"]

MODES = ("rnn_tanh", "rnn_relu", "lstm", "gru")


class _Arrays:
    """The element-wise vocabulary of the loops, on a backend's raw arrays."""

    def __init__(self, b: Any) -> None:
        self.b, self.xp = b, b.xp
        # ufuncs with ``out=`` into mutable arrays (NumPy; JAX's ufuncs refuse ``out=``):
        # the LSTM's loops written into buffers
        self.into = b.mutable and takes_out(b.xp)

    def mm(self, a: Any, w: Any) -> Any:
        return self.xp.matmul(a, w)

    def mT(self, a: Any) -> Any:
        return self.xp.matrix_transpose(a)

    def sigmoid(self, a: Any) -> Any:
        return Sigmoid.forward(self.b, a)

    def tanh(self, a: Any) -> Any:
        return self.xp.tanh(a)

    def relu(self, a: Any) -> Any:
        return self.xp.maximum(a, 0)

    def positive(self, a: Any) -> Any:
        return self.xp.astype(a > 0, a.dtype)

    def concat(self, xs: list, axis: int = -1) -> Any:
        return self.xp.concat(xs, axis=axis)

    def stack(self, xs: list) -> Any:
        # one step (the cells: LSTMCell in a Python loop) is the common case
        return self.xp.expand_dims(xs[0], axis=0) if len(xs) == 1 else self.xp.stack(xs, axis=0)

    def unstack(self, a: Any) -> Any:
        # indexing, not xp.unstack: NumPy's goes through moveaxis (~10x slower per call)
        return None if a is None else [a[i, ...] for i in range(a.shape[0])]

    def reshape(self, a: Any, shape: tuple) -> Any:
        return self.xp.reshape(a, shape)

    def sum01(self, a: Any) -> Any:
        return self.xp.sum(a, axis=(0, 1))

    def zeros_like(self, a: Any) -> Any:
        return self.xp.zeros_like(a)

    def gate_scale(self, n_c: int, like: Any) -> Any:
        """``(4 n_c,)``: 1/2 for an LSTM's ``i f o`` gates, 1 for ``g``."""
        xp, kw = self.xp, {"dtype": like.dtype, "device": like.device}
        return xp.concat([xp.full((2 * n_c,), 0.5, **kw), xp.ones((n_c,), **kw),
                          xp.full((n_c,), 0.5, **kw)])


class _Tensors:
    """The same vocabulary in xad operations (recorded: the rule under ``create_graph``)."""

    mm, mT, sigmoid, tanh, relu = (staticmethod(matmul), staticmethod(matrix_transpose),
                                   staticmethod(sigmoid), staticmethod(tanh), staticmethod(relu))

    @staticmethod
    def positive(a: Tensor) -> Tensor:
        return astype(a.detach() > 0, a.dtype)

    @staticmethod
    def concat(xs: list, axis: int = -1) -> Tensor:
        return concat(xs, axis=axis)

    @staticmethod
    def stack(xs: list) -> Tensor:
        return stack(xs, axis=0)

    @staticmethod
    def unstack(a: Tensor | None) -> Any:
        return None if a is None else unstack(a, axis=0)

    @staticmethod
    def reshape(a: Tensor, shape: tuple) -> Tensor:
        return reshape(a, shape)

    @staticmethod
    def sum01(a: Tensor) -> Tensor:
        return _sum(a, axis=(0, 1))

    @staticmethod
    def zeros_like(a: Tensor) -> Tensor:
        return a.detach() * 0.0


class _Dual:
    """A primal tensor and its tangent (``None``: zero), for the loop run in forward mode
    (:class:`Recurrent`'s tangent rule): the operators :func:`_cell` uses."""

    __slots__ = ("p", "t")

    def __init__(self, p: Tensor, t: Tensor | None) -> None:
        self.p, self.t = p, t

    @property
    def shape(self) -> tuple:
        return self.p.shape

    def __getitem__(self, key: Any) -> _Dual:
        return _Dual(self.p[key], None if self.t is None else self.t[key])

    def __add__(self, o: Any) -> _Dual:
        p, t = _parts(o)
        return _Dual(self.p + p, _plus(self.t, t))

    __radd__ = __add__

    def __sub__(self, o: Any) -> _Dual:
        p, t = _parts(o)
        return _Dual(self.p - p, _plus(self.t, None if t is None else -t))

    def __mul__(self, o: Any) -> _Dual:
        p, t = _parts(o)
        return _Dual(self.p * p, _plus(None if self.t is None else self.t * p,
                                       None if t is None else self.p * t))

    __rmul__ = __mul__


def _parts(o: Any) -> tuple:
    return (o.p, o.t) if isinstance(o, _Dual) else (o, None)


def _plus(a: Tensor | None, b: Tensor | None) -> Tensor | None:
    return b if a is None else a if b is None else a + b


def _scaled(a: _Dual, y: Tensor, dy: Any) -> _Dual:
    """``f(a)`` with value ``y`` and derivative ``dy``."""
    return _Dual(y, None if a.t is None else a.t * dy)


class _Duals:
    """The loop's vocabulary on :class:`_Dual` values, in xad operations (one level below
    the transform, so that an outer one differentiates the tangents again)."""

    @staticmethod
    def mm(a: _Dual, b: _Dual) -> _Dual:
        return _Dual(matmul(a.p, b.p), _plus(None if a.t is None else matmul(a.t, b.p),
                                             None if b.t is None else matmul(a.p, b.t)))

    @staticmethod
    def mT(a: _Dual) -> _Dual:
        return _Dual(matrix_transpose(a.p), None if a.t is None else matrix_transpose(a.t))

    @staticmethod
    def sigmoid(a: _Dual) -> _Dual:
        y = sigmoid(a.p)
        return _scaled(a, y, y * (1 - y))

    @staticmethod
    def tanh(a: _Dual) -> _Dual:
        y = tanh(a.p)
        return _scaled(a, y, 1 - y * y)

    @staticmethod
    def relu(a: _Dual) -> _Dual:
        return _scaled(a, relu(a.p), astype(a.p.detach() > 0, a.p.dtype))

    @staticmethod
    def concat(xs: list, axis: int = -1) -> _Dual:
        return _joined(xs, lambda ys: concat(ys, axis=axis))

    @staticmethod
    def stack(xs: list) -> _Dual:
        return _joined(xs, lambda ys: stack(ys, axis=0))

    @staticmethod
    def unstack(a: _Dual | None) -> Any:
        if a is None:
            return None
        ts = unstack(a.t, axis=0) if a.t is not None else [None] * a.shape[0]
        return [_Dual(p, t) for p, t in zip(unstack(a.p, axis=0), ts)]

    @staticmethod
    def gate_scale(n_c: int, like: _Dual) -> Tensor:
        kw: dict[str, Any] = {"dtype": like.p.dtype, "backend": like.p._backend}
        return concat([full((2 * n_c,), 0.5, **kw), full((n_c,), 1.0, **kw),
                       full((n_c,), 0.5, **kw)])


def _joined(xs: list, join: Any) -> _Dual:
    """``join`` of the primals and of the tangents (zeros for a missing one)."""
    ts = None
    if any(x.t is not None for x in xs):
        ts = join([x.t if x.t is not None else x.p.detach() * 0.0 for x in xs])
    return _Dual(join([x.p for x in xs]), ts)


# ----- forward --------------------------------------------------------------------------
def _into(m: Any, *arrays: Any) -> bool:
    """Whether the LSTM's loops can write into buffers: NumPy's ufuncs, one dtype."""
    return getattr(m, "into", False) and len({a.dtype for a in arrays if a is not None}) == 1


def _dense_T(m: _Arrays, w: Any) -> Any:
    """``w^T`` stored row-major: a small product with a transposed view takes OpenBLAS's
    slower path (measured ``(32, 128) @ (128, 512)`` float32: 38 against 25 µs)."""
    out = m.xp.empty((w.shape[1], w.shape[0]), dtype=w.dtype, device=w.device)
    out[...] = m.mT(w)
    return out


def _lstm_into(m: _Arrays, gx: Any, h: Any, c: Any, w_hh: Any, scale: Any,
               reverse: bool) -> tuple:
    """:func:`_run` for an LSTM without projection or mask where ufuncs take ``out=``
    (NumPy): :func:`_cell`'s operations, in its order (the same numbers, bit for bit), each
    written into preallocated buffers, the states and gate ``tanh``s straight into the
    arrays returned (no temporaries per step, no stacking)."""
    xp, n, n_c = m.xp, gx.shape[0], c.shape[-1]
    kw = {"dtype": gx.dtype, "device": gx.device}
    hs, cs, ts = (xp.empty((n, *c.shape), **kw), xp.empty((n, *c.shape), **kw),
                  xp.empty(gx.shape, **kw))
    whT, a, tc = _dense_T(m, w_hh), xp.empty(gx.shape[1:], **kw), xp.empty(c.shape, **kw)
    a_i, a_f, a_o = a[:, :n_c], a[:, n_c:2 * n_c], a[:, 3 * n_c:]  # i, f, o (g unused)
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        z, t_t, c_new, h = m.mm(h, whT), ts[t, ...], cs[t, ...], hs[t, ...]
        xp.add(gx[t, ...], z, out=z)
        xp.multiply(z, scale, out=z)
        xp.tanh(z, out=t_t)
        xp.multiply(t_t, 0.5, out=a)
        xp.add(a, 0.5, out=a)
        xp.multiply(a_f, c, out=c_new)
        xp.multiply(a_i, t_t[:, 2 * n_c:3 * n_c], out=tc)
        xp.add(c_new, tc, out=c_new)
        xp.tanh(c_new, out=tc)
        xp.multiply(a_o, tc, out=h)
        c = c_new
    return hs, cs, ts


def _halve_sigmoid_gates(m: Any, a: Any, n_c: int, axis: int) -> Any:
    """An LSTM's ``i f g o`` blocks along ``axis`` with ``i f o`` halved: one ``tanh`` of
    the result gives every gate, as ``sigmoid(z) = (tanh(z / 2) + 1) / 2``."""
    def part(lo: int, hi: int) -> Any:
        return a[lo:hi, ...] if axis == 0 else a[..., lo:hi]
    return m.concat([part(0, 2 * n_c) * 0.5, part(2 * n_c, 3 * n_c), part(3 * n_c, 4 * n_c) * 0.5],
                    axis=axis)


def _cell(m: Any, mode: str, z: Any, h: Any, c: Any, whT: Any, b_hh: Any, whrT: Any,
          scale: Any = None) -> tuple[Any, Any, Any]:
    """One step: the new ``(h, c)`` and what the rule reads (the LSTM's gate ``tanh``s; the
    GRU's ``(W_hh h + b_hh, r z, n)``) from the step's input gates ``z`` and the state (for
    the LSTM ``z`` and ``whT`` come with :func:`_halve_sigmoid_gates` applied)."""
    if mode == "gru":
        gh = m.mm(h, whT)
        if b_hh is not None:
            gh = gh + b_hh
        n_h = h.shape[-1]
        rz = m.sigmoid(z[:, :2 * n_h] + gh[:, :2 * n_h])
        n = m.tanh(z[:, 2 * n_h:] + rz[:, :n_h] * gh[:, 2 * n_h:])
        return n + rz[:, n_h:] * (h - n), None, (gh, rz, n)
    z = z + m.mm(h, whT)
    if mode != "lstm":
        return (m.tanh(z) if mode == "rnn_tanh" else m.relu(z)), None, None
    n_c = c.shape[-1]
    t = m.tanh(z * scale)
    a = t * 0.5 + 0.5  # i, f, o (the g block unused)
    c = a[:, n_c:2 * n_c] * c + a[:, :n_c] * t[:, 2 * n_c:3 * n_c]
    h = a[:, 3 * n_c:] * m.tanh(c)
    return (h if whrT is None else m.mm(h, whrT)), c, (t,)


def _run(m: Any, mode: str, gx: Any, h: Any, c: Any, w_hh: Any, b_hh: Any, w_hr: Any,
         mask: Any, reverse: bool) -> Any:
    """The loop: the states of every step and what the rule reads: ``hs``, ``(hs, cs, t)``
    for the LSTM, ``(hs, gh, rz, n)`` for the GRU."""
    n = gx.shape[0]
    # the LSTM's gates halved by a product per step: cheaper than halving all of gx first
    scale = m.gate_scale(c.shape[-1], gx) if mode == "lstm" else None
    if mode == "lstm" and w_hr is None and mask is None and _into(m, gx, h, c, w_hh):
        return _lstm_into(m, gx, h, c, w_hh, scale, reverse)
    whT, whrT = m.mT(w_hh), (None if w_hr is None else m.mT(w_hr))
    hs, cs, aux = [None] * n, [None] * n, [None] * n
    gxs, masks = m.unstack(gx), m.unstack(mask)  # steps as views: one call, not n slices
    for t in (range(n - 1, -1, -1) if reverse else range(n)):
        h_new, c_new, aux[t] = _cell(m, mode, gxs[t], h, c, whT, b_hh, whrT, scale)
        if masks is not None:
            h_new = h + masks[t] * (h_new - h)
            if c is not None:
                c_new = c + masks[t] * (c_new - c)
        h, c = h_new, c_new
        hs[t], cs[t] = h, c
    if mode in ("rnn_tanh", "rnn_relu"):
        return m.stack(hs)
    saved = tuple(m.stack(list(a)) for a in zip(*aux))
    return (m.stack(hs), m.stack(cs), *saved) if mode == "lstm" else (m.stack(hs), *saved)


# ----- backward -------------------------------------------------------------------------
def _shift(m: Any, seq: Any, first: Any, reverse: bool) -> Any:
    """Each step's previous state: ``first`` then ``seq`` without its last (in time order)."""
    if reverse:
        return m.concat([seq[1:, ...], first[None, ...]], axis=0)
    return m.concat([first[None, ...], seq[:-1, ...]], axis=0)


def _flat(m: Any, a: Any) -> Any:
    return m.reshape(a, (-1, a.shape[-1]))


def _weight_grad(m: Any, d: Any, x: Any) -> Any:
    """``sum_t d_t^T x_t`` over time and batch: one product."""
    return m.mm(m.mT(_flat(m, d)), _flat(m, x))


def _saved_gates(m: Any, mode: str, gx: Any, hp: Any, w_hh: Any, b_hh: Any) -> tuple:
    """What :func:`_run` saved for the rule, recomputed for all steps at once from the
    previous states ``hp`` (the rule under ``create_graph``: differentiable)."""
    gh = m.mm(hp, m.mT(w_hh))
    if mode == "lstm":
        return (m.tanh(_halve_sigmoid_gates(m, gx + gh, w_hh.shape[0] // 4, -1)),)
    if b_hh is not None:
        gh = gh + b_hh
    n_h = hp.shape[-1]
    rz = m.sigmoid(gx[..., :2 * n_h] + gh[..., :2 * n_h])
    return gh, rz, m.tanh(gx[..., 2 * n_h:] + rz[..., :n_h] * gh[..., 2 * n_h:])


def _coefficients(m: Any, mode: str, saved: tuple, hp: Any, cp: Any, cs: Any, hs: Any,
                  proj: bool) -> tuple:
    """Per-step factors of the backward loop, for all steps at once."""
    if mode in ("rnn_tanh", "rnn_relu"):
        return ((1 - hs * hs) if mode == "rnn_tanh" else m.positive(hs),)
    if mode == "lstm":
        n_c = cs.shape[-1]
        (t,) = saved
        s = t * 0.5 + 0.5
        i, f, o = s[..., :n_c], s[..., n_c:2 * n_c], s[..., 3 * n_c:]
        g = t[..., 2 * n_c:3 * n_c]
        tc = m.tanh(cs)
        gates = m.concat([g * i * (1 - i), cp * f * (1 - f), i * (1 - g * g), tc * o * (1 - o)])
        return gates, o * (1 - tc * tc), f, (o * tc if proj else None)
    gh, rz, n = saved
    n_h = hp.shape[-1]
    r, z = rz[..., :n_h], rz[..., n_h:]
    ghn = gh[..., 2 * n_h:]
    kn = (1 - z) * (1 - n * n)
    kr = kn * ghn * r * (1 - r)
    kz = (hp - n) * z * (1 - z)
    return m.concat([kr, kz, kn]), m.concat([kr, kz, kn * r]), z


def _step_back(m: Any, mode: str, k: Sequence, t: int, dh: Any, dc: Any, w_hh: Any,
               w_hr: Any) -> tuple:
    """One step backward from the gradients ``dh``/``dc`` reaching its new state: the
    gradients of the step's input gates, of its recurrent gates (GRU), and of the previous
    state."""
    if mode in ("rnn_tanh", "rnn_relu"):
        dz = dh * k[0][t]
        return dz, dz, m.mm(dz, w_hh), None
    if mode == "gru":
        d3 = m.concat([dh, dh, dh])
        dgh = d3 * k[1][t]
        return d3 * k[0][t], dgh, m.mm(dgh, w_hh) + dh * k[2][t], None
    dr = dh if w_hr is None else m.mm(dh, w_hr)
    dc = dc + dr * k[1][t]
    dz = m.concat([dc, dc, dc, dr]) * k[0][t]
    return dz, dz, m.mm(dz, w_hh), dc * k[2][t]


def _bptt(m: Any, mode: str, ins: tuple, outs: tuple, grads: tuple, reverse: bool) -> tuple:
    """Back-propagation through time: ``(dgx, dh0, dc0, dw_hh, db_hh, dw_hr)``; ``outs``
    are the forward's outputs, with or without the saved gates (then recomputed)."""
    gx, h0, c0, w_hh, b_hh, w_hr, mask = ins
    hs, cs = outs[:2] if mode == "lstm" else (outs[0], None)
    saved = outs[2:] if mode == "lstm" else outs[1:]
    g_hs, g_cs = grads
    if mode == "lstm" and saved and w_hr is None and mask is None and \
            _into(m, gx, h0, c0, w_hh, *outs, *grads):
        return _lstm_bptt_into(m, ins, outs, grads, reverse)
    hp = _shift(m, hs, h0, reverse)
    cp = None if cs is None else _shift(m, cs, c0, reverse)
    if not saved and mode in ("lstm", "gru"):
        saved = _saved_gates(m, mode, gx, hp, w_hh, b_hh)
    coefs = _coefficients(m, mode, saved, hp, cp, cs, hs, w_hr is not None)
    k = [m.unstack(a) for a in coefs if a is not None]
    g_hs, g_cs, masks = m.unstack(g_hs), m.unstack(g_cs), m.unstack(mask)
    n = gx.shape[0]
    dh, dc = m.zeros_like(h0), (None if c0 is None else m.zeros_like(c0))
    dzs, dghs, dhn = [None] * n, [None] * n, [None] * n
    for t in (range(n) if reverse else range(n - 1, -1, -1)):
        if g_hs is not None:
            dh = dh + g_hs[t]
        if g_cs is not None:
            dc = dc + g_cs[t]
        keep_h = keep_c = None
        if masks is not None:
            keep_h, dh = dh - masks[t] * dh, masks[t] * dh
            if dc is not None:
                keep_c, dc = dc - masks[t] * dc, masks[t] * dc
        dzs[t], dghs[t], dh_prev, dc_prev = _step_back(m, mode, k, t, dh, dc, w_hh, w_hr)
        dhn[t] = dh
        dh = dh_prev if keep_h is None else dh_prev + keep_h
        dc = dc_prev if keep_c is None else dc_prev + keep_c
    dgh = m.stack(dghs)
    dgx = dgh if mode != "gru" else m.stack(dzs)
    db_hh = None if b_hh is None else m.sum01(dgh)
    dw_hr = None if w_hr is None else _weight_grad(m, m.stack(dhn), coefs[3])
    return dgx, dh, dc, _weight_grad(m, dgh, hp), db_hh, dw_hr


def _lstm_coefficients_into(m: _Arrays, t: Any, cp: Any, cs: Any) -> tuple:
    """:func:`_coefficients` of an LSTM without projection, in its operations and order
    (the same numbers), each into a buffer: ``(gates, o (1 - tanh(c)^2), f)``."""
    xp, n_c = m.xp, cs.shape[-1]
    kw = {"dtype": t.dtype, "device": t.device}
    s, k, k1, tc, u = (xp.empty(t.shape, **kw), xp.empty(t.shape, **kw),
                       xp.empty(cs.shape, **kw), xp.empty(cs.shape, **kw),
                       xp.empty(cs.shape, **kw))
    xp.multiply(t, 0.5, out=s)
    xp.add(s, 0.5, out=s)
    i, f, o = s[..., :n_c], s[..., n_c:2 * n_c], s[..., 3 * n_c:]
    g = t[..., 2 * n_c:3 * n_c]
    xp.tanh(cs, out=tc)
    for j, (a, p) in enumerate(((g, i), (cp, f), (None, None), (tc, o))):
        kj = k[..., j * n_c:(j + 1) * n_c]
        if a is None:  # i (1 - g^2)
            xp.multiply(g, g, out=u)
            xp.subtract(1, u, out=u)
            xp.multiply(i, u, out=kj)
        else:  # a p (1 - p)
            xp.multiply(a, p, out=kj)
            xp.subtract(1, p, out=u)
            xp.multiply(kj, u, out=kj)
    xp.multiply(tc, tc, out=u)
    xp.subtract(1, u, out=u)
    xp.multiply(o, u, out=k1)
    return k, k1, f


def _lstm_bptt_into(m: _Arrays, ins: tuple, outs: tuple, grads: tuple,
                    reverse: bool) -> tuple:
    """:func:`_bptt` of an LSTM without projection or mask, with its forward's saved gates,
    where ufuncs take ``out=`` (NumPy): :func:`_step_back`'s operations in its order (the
    same numbers), the gate gradients of every step written straight into one array."""
    xp, (gx, h0, c0, w_hh), (hs, cs, t_all), (g_hs, g_cs) = m.xp, ins[:4], outs, grads
    hp, n, n_c = _shift(m, hs, h0, reverse), gx.shape[0], c0.shape[-1]
    k, k1, f = _lstm_coefficients_into(m, t_all, _shift(m, cs, c0, reverse), cs)
    dgh, dh, dc, u = (xp.empty(gx.shape, dtype=gx.dtype, device=gx.device),
                      m.zeros_like(h0), m.zeros_like(c0), m.zeros_like(c0))
    k4, dgh4 = (xp.reshape(a, (*a.shape[:2], 4, n_c)) for a in (k, dgh))  # views
    dc3 = xp.expand_dims(dc, axis=1)  # dc's own buffer, updated in place below
    for t in (range(n) if reverse else range(n - 1, -1, -1)):
        if g_hs is not None:
            xp.add(dh, g_hs[t, ...], out=dh)
        if g_cs is not None:
            xp.add(dc, g_cs[t, ...], out=dc)
        xp.multiply(dh, k1[t, ...], out=u)
        xp.add(dc, u, out=dc)
        # the i f g blocks in one call: (B, 1, H) times (B, 3, H)
        xp.multiply(dc3, k4[t, :, :3, :], out=dgh4[t, :, :3, :])
        xp.multiply(dh, k4[t, :, 3, :], out=dgh4[t, :, 3, :])
        dh = m.mm(dgh[t, ...], w_hh)
        xp.multiply(dc, f[t, ...], out=dc)
    return dgh, dh, dc, _weight_grad(m, dgh, hp), None, None


# ----- the primitive --------------------------------------------------------------------
class Recurrent(Op):
    """The time loop of a recurrent layer over precomputed input gates ``gx``: outputs the
    state of every step, ``hs``, or ``(hs, cs)`` for the LSTM, and the gate values its rule
    reads (hidden outputs: :func:`_run`)."""

    name = "recurrent"
    save_inputs = True
    save_output = True
    materialize_grads = False
    library = True

    @staticmethod
    def forward(b, gx, h0, c0, w_hh, b_hh, w_hr, mask, mode, reverse):
        return _run(_Arrays(b), mode, gx, h0, c0, w_hh, b_hh, w_hr, mask, reverse)

    @staticmethod
    def backward(node, *grads):
        ins = node.inputs
        mode, reverse = node.params["mode"], node.params["reverse"]
        g_hs, g_cs = grads[0], (grads[1] if mode == "lstm" else None)
        if g_hs is None and g_cs is None:
            return (None,) * 7
        states = tuple(node.output(i) for i in range(2 if mode == "lstm" else 1))
        if context.grad_enabled and any(isinstance(t, Tensor) and t.requires_grad
                                        for t in (*ins, *states, g_hs, g_cs)):
            return (*_bptt(_Tensors, mode, ins, states, (g_hs, g_cs), reverse), None)
        outs = tuple(node.output(i) for i in range(node.n_out)) if node.n_out > 1 else states
        present = [i for i, t in enumerate(ins[:6]) if t is not None]
        res = apply(RecurrentGrad, *ins, *outs, g_hs, g_cs, mode=mode, reverse=reverse,
                    present=tuple(present))
        full: list = [None] * 7
        for i, r in zip(present, res):
            full[i] = r if node.needs_grad(i) else None
        return tuple(full)

    @staticmethod
    def jvp(primals, tangents, out, mode, reverse):
        """The loop run again on dual numbers: every output's tangent."""
        ins = [None if p is None else _Dual(p, t) for p, t in zip(primals, tangents)]
        res = _run(_Duals, mode, *ins, reverse)
        return tuple(r.t for r in res) if type(res) is tuple else res.t


class RecurrentGrad(Op):
    """The gradients of :class:`Recurrent`'s inputs ``present`` (indices into ``(gx, h0, c0,
    w_hh, b_hh, w_hr)``), for a backward pass that is not itself recorded."""

    name = "recurrent_grad"
    differentiable = False
    library = True

    @staticmethod
    def forward(b, gx, h0, c0, w_hh, b_hh, w_hr, mask, *rest, mode, reverse, present):
        outs, (g_hs, g_cs) = rest[:-2], rest[-2:]
        res = _bptt(_Arrays(b), mode, (gx, h0, c0, w_hh, b_hh, w_hr, mask), outs,
                    (g_hs, g_cs), reverse)
        return tuple(res[i] for i in present)


def recurrent(gx: Tensor, h0: Tensor, c0: Tensor | None, w_hh: Tensor,
              b_hh: Tensor | None = None, w_hr: Tensor | None = None,
              mask: Tensor | None = None, *, mode: str, reverse: bool = False) -> tuple:
    """The states of every step of a recurrent layer: ``(hs, cs)`` (``cs`` None but for
    ``mode="lstm"``), from the input gates ``gx`` ``(T, B, G)`` (the input projection with
    its biases; for the LSTM and RNN also ``b_hh``), initial states ``h0``/``c0``
    ``(B, H)``, the recurrent weight ``w_hh`` ``(G, H)`` in PyTorch's gate order (LSTM
    ``i f g o``, GRU ``r z n``), the GRU's recurrent bias ``b_hh``, the LSTM's projection
    ``w_hr`` ``(P, H)``, and an optional 0/1 ``mask`` ``(T, B, 1)``. ``reverse`` runs from
    the last step to the first. :func:`xad.nn.functional.rnn` checks the shapes.

    Example:
        >>> import xad
        >>> from xad.ops.recurrent import recurrent
        >>> hs, _ = recurrent(xad.zeros(5, 2, 3), xad.zeros(2, 3), None, xad.zeros(3, 3),
        ...                   mode="rnn_tanh")
        >>> hs.shape
        (5, 2, 3)
    """
    if mode not in MODES:
        raise ValueError(f"recurrent: mode must be one of {MODES}, got {mode!r}")
    if gx.shape[0] == 0:
        raise ValueError(f"recurrent: the input has no time steps (gates of shape {gx.shape})")
    if mode == "lstm" and c0 is None:
        raise ValueError("recurrent: the LSTM needs an initial cell state c0")
    out = apply(Recurrent, gx, h0, c0 if mode == "lstm" else None, w_hh,
                b_hh if mode == "gru" else None, w_hr if mode == "lstm" else None, mask,
                mode=mode, reverse=bool(reverse))
    if mode == "lstm":
        return out[0], out[1]
    return (out[0] if mode == "gru" else out), None
