"""Random cases for tests/test_nn_fuzz_torch.py: each family draws options of one layer or
function the way a PyTorch user may pass them. A case is either functional (``fn(lib,
*tensors)`` with ``lib`` xad or torch) or a module (``make(lib, dtype)``), run by the
harness in the test file. Options xad does not implement are not drawn; the test file's
docstring lists them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Fn:
    """``fn(lib, *tensors)`` of float64 ``arrays`` (inputs that get gradients)."""
    desc: str
    arrays: list
    fn: Callable
    atol: float = 1e-9  # for gradients: near-zero rows give terms of 1e5 that cancel


@dataclass
class Mod:
    """A module ``make(lib, dtype)`` run on ``arrays`` for each mode of ``modes`` (an SGD
    step between them), by ``call(module, lib, *tensors)``."""
    desc: str
    make: Callable
    arrays: list
    call: Callable = field(default=lambda m, lib, *xs: m(*xs))
    modes: tuple = ("train", "train", "eval")


def _pick(rng, options):
    return options[int(rng.integers(len(options)))]


def _size(rng, dim, lo, hi):
    """An int or a tuple of ``dim`` ints (PyTorch takes either)."""
    v = [int(rng.integers(lo, hi + 1)) for _ in range(dim)]
    return v[0] if dim == 1 and rng.random() < 0.5 else tuple(v)


def _tup(v, dim):
    return (v,) * dim if isinstance(v, int) else tuple(v)


def _n(rng, *shape):
    return rng.standard_normal(shape)


def conv(rng, dim=None):
    dim = int(rng.integers(1, 3)) if dim is None else dim
    g = int(_pick(rng, [1, 1, 2, 3]))
    cin, cout = g * int(rng.integers(1, 3)), g * int(rng.integers(1, 3))
    k = _size(rng, dim, 1, 4)
    dil = _size(rng, dim, 1, 3) if rng.random() < 0.4 else 1
    mode = _pick(rng, ["zeros", "zeros", "reflect", "replicate", "circular"])
    pk = _pick(rng, ["int", "tuple", "same", "valid"])
    stride = 1 if pk == "same" else (_size(rng, dim, 1, 3) if rng.random() < 0.5 else 1)
    span = [d * (kk - 1) + 1 for d, kk in zip(_tup(dil, dim), _tup(k, dim))]
    pad = {"int": int(rng.integers(0, 3)), "tuple": tuple(int(rng.integers(0, 3))
                                                       for _ in range(dim)),
           "same": "same", "valid": "valid"}[pk]
    shape = tuple(int(max(s + 1, rng.integers(3, 9 if dim < 3 else 6))) for s in span)
    if mode in ("reflect", "circular") and pk in ("int", "tuple") and rng.random() < 0.9:
        pad = tuple(min(p, s - 1) for p, s in zip(_tup(pad, dim), shape))
    bias = bool(rng.random() < 0.7)
    kw = dict(stride=stride, padding=pad, dilation=dil, groups=g, bias=bias, padding_mode=mode)
    name = f"Conv{dim}d"

    def make(lib, dt):
        return getattr(lib.nn, name)(cin, cout, k, dtype=dt, **kw)
    lead = (2,) if rng.random() < 0.8 else ()
    return Mod(f"{name}({cin}, {cout}, {k}, {kw}) on {lead + (cin,) + shape}", make,
               [_n(rng, *lead, cin, *shape)], modes=("train",))


def conv_transpose(rng, dim=2):
    g = int(_pick(rng, [1, 1, 2]))
    cin, cout = g * int(rng.integers(1, 3)), g * int(rng.integers(1, 3))
    k, stride, dil = _size(rng, dim, 1, 4), _size(rng, dim, 1, 3), _size(rng, dim, 1, 2)
    pad = _size(rng, dim, 0, 2)
    opad = tuple(int(rng.integers(0, max(s, d)))
                 for s, d in zip(_tup(stride, dim), _tup(dil, dim)))
    opad = opad if rng.random() < 0.5 else 0
    kw = dict(stride=stride, padding=pad, output_padding=opad, groups=g,
              bias=bool(rng.random() < 0.7), dilation=dil)
    shape = tuple(int(rng.integers(2, 6 if dim < 3 else 4)) for _ in range(dim))
    name = f"ConvTranspose{dim}d"

    def make(lib, dt):
        return getattr(lib.nn, name)(cin, cout, k, dtype=dt, **kw)
    lead = (2,) if rng.random() < 0.8 else ()
    return Mod(f"{name}({cin}, {cout}, {k}, {kw}) on {lead + (cin,) + shape}", make,
               [_n(rng, *lead, cin, *shape)], modes=("train",))


def norm3d(rng):
    return _pick(rng, [batch_norm, instance_norm])(rng, 3)


def pool3d(rng):
    """max_pool3d, avg_pool3d, the adaptive pools and MaxUnpool3d over (D, H, W)."""
    kind = _pick(rng, ["max", "avg", "adaptive_avg", "adaptive_max", "unpool"])
    k = _size(rng, 3, 1, 3)
    stride = _pick(rng, [None, _size(rng, 3, 1, 3)])
    pad = tuple(int(rng.integers(0, kk // 2 + 1)) for kk in _tup(k, 3))
    dil = _size(rng, 3, 1, 2) if rng.random() < 0.3 and kind == "max" else 1
    ceil, flag = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
    span = [d * (kk - 1) + 1 for d, kk in zip(_tup(dil, 3), _tup(k, 3))]
    shape = tuple(int(max(s, rng.integers(2, 6))) for s in span)
    out = tuple(None if rng.random() < 0.2 else int(rng.integers(1, 4)) for _ in range(3))
    over = int(rng.integers(1, 7)) if kind == "avg" and rng.random() < 0.3 else None
    lead = (2, 2) if rng.random() < 0.8 else (2,)

    def fn(lib, x):
        F = lib.nn.functional
        if kind == "max":
            return F.max_pool3d(x, k, stride, pad, dil, ceil_mode=ceil, return_indices=flag)
        if kind == "avg":
            return F.avg_pool3d(x, k, stride, pad, ceil_mode=ceil, count_include_pad=flag,
                                divisor_override=over)
        if kind == "adaptive_avg":
            return lib.nn.AdaptiveAvgPool3d(out)(x)
        if kind == "adaptive_max":
            return F.adaptive_max_pool3d(x, out, return_indices=flag)
        y, i = F.max_pool3d(x, k, stride, pad, return_indices=True)
        st = _tup(k, 3) if stride is None else _tup(stride, 3)
        default = [(n - 1) * ss - 2 * p + kk
                   for n, ss, p, kk in zip(y.shape[-3:], st, pad, _tup(k, 3))]
        # an empty default output: torch's backward raises there (as in max_unpool)
        given = flag or min(default) < 1
        return lib.nn.MaxUnpool3d(k, stride, pad)(y, i, shape if given else None)
    return Fn(f"{kind} pool3d(k={k}, s={stride}, p={pad}, d={dil}, ceil={ceil}, flag={flag}, "
              f"out={out}, override={over}) on {lead + shape}",
              [_ties(rng, _n(rng, *lead, *shape))], fn)


def grid_sampling(rng):
    """grid_sample (every mode, padding mode, align_corners; 4-d and 5-d) on a grid that
    reaches past [-1, 1], or on affine_grid's grid from random matrices."""
    nd = int(_pick(rng, [2, 2, 3]))
    kw = dict(mode=_pick(rng, ["bilinear", "nearest"]),
              padding_mode=_pick(rng, ["zeros", "border", "reflection"]),
              align_corners=bool(rng.random() < 0.5))
    spatial = tuple(int(rng.integers(1, 6 if nd == 2 else 4)) for _ in range(nd))
    out = tuple(int(rng.integers(1, 5 if nd == 2 else 3)) for _ in range(nd))
    n, c = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    affine = rng.random() < 0.3
    g = _n(rng, n, nd, nd + 1) if affine else rng.uniform(-1.5, 1.5, (n, *out, nd))

    def fn(lib, x, g):
        F = lib.nn.functional
        if affine:
            g = F.affine_grid(g, (n, c, *out), align_corners=kw["align_corners"])
        return F.grid_sample(x, g, **kw)
    args = [_n(rng, n, c, *spatial), g]
    if nd == 2 and rng.random() < 0.3:  # drawn last: earlier seeds keep their other draws
        kw["mode"] = "bicubic"
    return Fn(f"grid_sample({kw}) of {(n, c, *spatial)}, {'affine' if affine else 'grid'} "
              f"{g.shape}", args, fn)


def conv3d(rng):
    return conv(rng, 3)


def conv_transpose_1d_3d(rng):
    return conv_transpose(rng, _pick(rng, [1, 3]))


def max_pool(rng):
    dim = int(rng.integers(1, 3))
    k = _size(rng, dim, 1, 4)
    stride = _pick(rng, [None, _size(rng, dim, 1, 3)])
    pad = tuple(int(rng.integers(0, kk // 2 + 1)) for kk in _tup(k, dim))
    dil = _size(rng, dim, 1, 3) if rng.random() < 0.4 else 1
    ceil, ri = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
    span = [d * (kk - 1) + 1 for d, kk in zip(_tup(dil, dim), _tup(k, dim))]
    shape = tuple(int(max(s, rng.integers(3, 10))) for s in span)
    f = f"max_pool{dim}d"
    x = _ties(rng, _n(rng, 2, 3, *shape))

    def fn(lib, x):
        return getattr(lib.nn.functional, f)(x, k, stride, pad, dil, ceil_mode=ceil,
                                             return_indices=ri)
    return Fn(f"{f}(k={k}, s={stride}, p={pad}, d={dil}, ceil={ceil}, idx={ri}) on {shape}",
              [x], fn)


def _ties(rng, a):
    """Sometimes rounded to a few values (tied maxima: the gradient goes to the first)."""
    return np.round(a) if rng.random() < 0.4 else a


def avg_pool(rng):
    dim = int(rng.integers(1, 3))
    k = _size(rng, dim, 1, 4)
    stride = _pick(rng, [None, _size(rng, dim, 1, 3)])
    pad = tuple(int(rng.integers(0, kk // 2 + 1)) for kk in _tup(k, dim))
    ceil, cip = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
    extra = {} if dim == 1 or rng.random() < 0.6 else {"divisor_override":
                                                          int(rng.integers(1, 7))}
    shape = tuple(int(max(kk, rng.integers(3, 10))) for kk in _tup(k, dim))
    f = f"avg_pool{dim}d"

    def fn(lib, x):
        return getattr(lib.nn.functional, f)(x, k, stride, pad, ceil_mode=ceil,
                                             count_include_pad=cip, **extra)
    return Fn(f"{f}(k={k}, s={stride}, p={pad}, ceil={ceil}, cip={cip}, {extra}) on {shape}",
              [_n(rng, 2, 3, *shape)], fn)


def adaptive_pool(rng):
    dim = int(rng.integers(1, 3))
    kind = _pick(rng, ["avg", "max"])
    shape = tuple(int(rng.integers(1, 9)) for _ in range(dim))
    out = tuple(int(rng.integers(1, 7)) for _ in range(dim))
    out = out[0] if dim == 1 else (tuple(None if rng.random() < 0.2 else o for o in out)
                                   if rng.random() < 0.7 else out[0])
    ri = kind == "max" and bool(rng.random() < 0.5)
    f = f"adaptive_{kind}_pool{dim}d"
    lead = (2, 3) if rng.random() < 0.7 else (3,)

    def fn(lib, x):
        F = lib.nn.functional
        return getattr(F, f)(x, out, return_indices=True) if ri else getattr(F, f)(x, out)
    return Fn(f"{f}({out}, idx={ri}) on {lead + shape}", [_ties(rng, _n(rng, *lead, *shape))],
              fn)


def interpolate(rng):
    mode = _pick(rng, ["nearest", "nearest-exact", "area", "linear", "bilinear", "bicubic",
                       "trilinear"])
    dim = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}.get(
        mode, int(rng.integers(1, 4)))
    shape = tuple(int(rng.integers(1, 8)) for _ in range(dim))
    kw: dict = {"mode": mode}
    if rng.random() < 0.5:
        s = tuple(int(rng.integers(1, 12)) for _ in range(dim))
        kw["size"] = s[0] if dim == 1 or rng.random() < 0.3 else s
    else:
        s = tuple(float(_pick(rng, [0.5, 0.7, 1.0, 1.3, 1.5, 2.0, 2.5, 3.0, 1 / 3, 0.9]))
                  for _ in range(dim))
        s = tuple(max(f, 1.0 / n + 1e-3) for f, n in zip(s, shape))
        kw["scale_factor"] = s[0] if rng.random() < 0.3 else s
        shape = (shape[0],) * dim if isinstance(kw["scale_factor"], float) else shape
        if rng.random() < 0.5:
            kw["recompute_scale_factor"] = bool(rng.random() < 0.5)
    if mode in ("linear", "bilinear", "bicubic", "trilinear") and rng.random() < 0.6:
        kw["align_corners"] = bool(rng.random() < 0.5)
    sz = kw.get("size", 0)
    sf = kw.get("scale_factor", 1.0)
    last = (sz if isinstance(sz, int) else sz[-1]) if "size" in kw else int(
        shape[-1] * (sf if isinstance(sf, float) else sf[-1]))
    # with an output width of 1 PyTorch's antialiased rows all equal the first (PORTING.md)
    if mode in ("bilinear", "bicubic") and rng.random() < 0.5 and last > 1:
        kw["antialias"] = True  # (with "size": an axis that keeps its size has no scale)
        if "scale_factor" in kw:  # its backward filters an axis its forward copies
            kw["recompute_scale_factor"] = True

    def fn(lib, x):
        return lib.nn.functional.interpolate(x, **kw)
    return Fn(f"interpolate({kw}) on {shape}", [_n(rng, 2, 2, *shape)], fn)


def pad(rng):
    mode = _pick(rng, ["constant", "reflect", "replicate", "circular"])
    dim = int(rng.integers(1, 3))
    shape = tuple(int(rng.integers(2, 6)) for _ in range(dim))
    p = []
    for s in reversed(shape):
        lim = (s - 1 if mode == "reflect" else s) + int(rng.random() < 0.1)  # over: refused
        lo = -1 if mode == "constant" or rng.random() < 0.2 else 0
        a, b = int(rng.integers(lo, lim + 1)), int(rng.integers(lo, lim + 1))
        if mode == "circular" and min(a, b) < 0:  # wrapping past a cropped axis: torch
            a, b = min(a, s + min(a, b)), min(b, s + min(a, b))  # errs or reads garbage
        p += [a, b] if s + a + b >= 1 else [max(a, 0), max(b, 0)]  # (cropped to nothing)
    kw = {"value": float(rng.standard_normal())} if mode == "constant" else {}
    lead = (2, 2) if mode == "constant" or rng.random() < 0.7 else (2,)

    def fn(lib, x):
        return lib.nn.functional.pad(x, tuple(p), mode=mode, **kw)
    return Fn(f"pad({p}, {mode!r}, {kw}) on {lead + shape}", [_n(rng, *lead, *shape)], fn)


def batch_norm(rng, dim=None):
    dim = int(rng.integers(1, 3)) if dim is None else dim
    c = int(rng.integers(1, 4))
    kw = dict(momentum=_pick(rng, [0.1, None, 0.5]), affine=bool(rng.random() < 0.6),
              track_running_stats=bool(rng.random() < 0.7), eps=_pick(rng, [1e-5, 0.1]))
    shape = (int(_pick(rng, [3, 3, 2, 1])), c) + (
        (int(rng.integers(1, 4)),) * int(rng.integers(0, 2)) if dim == 1 else
                      tuple(int(rng.integers(1, 4)) for _ in range(dim)))
    name = f"BatchNorm{dim}d"

    def make(lib, dt):
        return getattr(lib.nn, name)(c, dtype=dt, **kw)
    modes = _pick(rng, [("train", "train", "eval"), ("eval", "train", "eval", "train")])
    return Mod(f"{name}({c}, {kw}) on {shape}, {modes}", make, [_n(rng, *shape)],
               modes=modes)


def instance_norm(rng, dim=None):
    dim = int(rng.integers(1, 3)) if dim is None else dim
    c = int(rng.integers(1, 4))
    kw = dict(momentum=_pick(rng, [0.1, None, 0.5]), affine=bool(rng.random() < 0.5),
              track_running_stats=bool(rng.random() < 0.6))
    spatial = tuple(int(rng.integers(2, 5)) for _ in range(dim))
    shape = ((2,) if rng.random() < 0.8 else ()) + (c,) + spatial
    name = f"InstanceNorm{dim}d"

    def make(lib, dt):
        return getattr(lib.nn, name)(c, dtype=dt, **kw)
    return Mod(f"{name}({c}, {kw}) on {shape}", make, [_n(rng, *shape)])


def group_norm(rng):
    g = int(rng.integers(1, 4))
    c = g * int(rng.integers(1, 3))
    kw = dict(affine=bool(rng.random() < 0.6), eps=_pick(rng, [1e-5, 0.3]))
    shape = (2, c) + tuple(int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 3))))
    if int(np.prod(shape[1:])) // g < 2:
        shape = shape + (2,)

    def make(lib, dt):
        return lib.nn.GroupNorm(g, c, dtype=dt, **kw)
    return Mod(f"GroupNorm({g}, {c}, {kw}) on {shape}", make, [_n(rng, *shape)])


def layer_norm(rng):
    shape = tuple(int(rng.integers(1, 4)) for _ in range(int(rng.integers(2, 5))))
    k = int(rng.integers(1, len(shape) + 1))
    ns = shape[-k:]
    ns = ns[0] if k == 1 and rng.random() < 0.5 else list(ns)
    if int(np.prod(shape[-k:])) < 2:
        shape, ns = shape[:-1] + (3,), (list(shape[-k:-1]) + [3] if k > 1 else 3)
    kw = dict(elementwise_affine=bool(rng.random() < 0.7), bias=bool(rng.random() < 0.6),
              eps=_pick(rng, [1e-5, 0.2]))

    def make(lib, dt):
        return lib.nn.LayerNorm(ns, dtype=dt, **kw)
    return Mod(f"LayerNorm({ns}, {kw}) on {shape}", make, [_n(rng, *shape)])


def embedding(rng):
    n, d = int(rng.integers(2, 7)), int(rng.integers(1, 4))
    pidx = _pick(rng, [None, int(rng.integers(-n, n))])
    idx = rng.integers(0, n, size=tuple(int(rng.integers(1, 4)) for _ in range(
        int(rng.integers(1, 3))))).tolist()

    kw = dict(padding_idx=pidx, max_norm=_pick(rng, [None, None, 0.5, 1.5]),
              norm_type=_pick(rng, [2.0, 1.0, 3.0]), scale_grad_by_freq=bool(rng.random() < 0.4))

    def make(lib, dt):
        return lib.nn.Embedding(n, d, dtype=dt, **kw)
    return Mod(f"Embedding({n}, {d}, {kw}) on {idx}", make, [],
               call=lambda m, lib: m(lib.tensor(idx)), modes=("train", "train", "eval"))


def embedding_bag(rng):
    n, d = int(rng.integers(2, 7)), int(rng.integers(1, 4))
    mode = _pick(rng, ["sum", "mean", "max"])
    pidx = _pick(rng, [None, int(rng.integers(0, n))])
    two_d = rng.random() < 0.4
    last = (not two_d) and bool(rng.random() < 0.4)
    if two_d:
        idx, offs = rng.integers(0, n, size=(int(rng.integers(1, 4)),
                                             int(rng.integers(1, 4)))).tolist(), None
        m = len(idx) * len(idx[0])
    else:
        m = int(rng.integers(1, 8))
        idx = rng.integers(0, n, size=m).tolist()
        offs = sorted([0] + rng.integers(0, m + 1, size=int(rng.integers(0, 4))).tolist())
        if last:
            offs = offs + [m]
    psw = mode == "sum" and rng.random() < 0.5
    arrays = [_n(rng, *((len(idx), len(idx[0])) if two_d else (m,)))] if psw else []
    kw = dict(mode=mode, padding_idx=pidx, include_last_offset=last,
              max_norm=_pick(rng, [None, None, 0.5, 1.5]), norm_type=_pick(rng, [2.0, 1.0]))
    # scale_grad_by_freq: PyTorch's bag divides by another row's count (docs/PORTING.md)

    def make(lib, dt):
        return lib.nn.EmbeddingBag(n, d, dtype=dt, **kw)

    def call(mod, lib, *w):
        o = None if offs is None else lib.tensor(offs)
        return mod(lib.tensor(idx), o, per_sample_weights=w[0] if w else None)
    return Mod(f"EmbeddingBag({n}, {d}, {kw}) on {idx}, offsets {offs}, psw={psw}", make,
               arrays, call=call, modes=("train", "train"))


def recurrent(rng):
    kind = _pick(rng, ["RNN", "GRU", "LSTM"])
    i, h = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    kw = dict(num_layers=int(rng.integers(1, 3)), bias=bool(rng.random() < 0.7),
              batch_first=bool(rng.random() < 0.5), bidirectional=bool(rng.random() < 0.5))
    if kind == "RNN":
        kw["nonlinearity"] = _pick(rng, ["tanh", "relu"])
    if kind == "LSTM" and rng.random() < 0.4:
        kw["proj_size"] = int(rng.integers(1, h + 1)) if h > 1 else 0
    t, b = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    unbatched = rng.random() < 0.25
    x = (t, i) if unbatched else ((b, t, i) if kw["batch_first"] else (t, b, i))
    nd = kw["num_layers"] * (2 if kw["bidirectional"] else 1)
    hs = kw.get("proj_size") or h
    st = [(nd, hs) if unbatched else (nd, b, hs)]
    if kind == "LSTM":
        st.append((nd, h) if unbatched else (nd, b, h))
    given = rng.random() < 0.5
    arrays = [_n(rng, *x)] + ([_n(rng, *s) for s in st] if given else [])

    def make(lib, dt):
        return getattr(lib.nn, kind)(i, h, dtype=dt, **kw)

    def call(m, lib, x, *hc):
        if not hc:
            return m(x)
        return m(x, tuple(hc) if kind == "LSTM" else hc[0])
    return Mod(f"{kind}({i}, {h}, {kw}) on {x}, states given {given}", make, arrays,
               call=call, modes=("train", "eval"))


def pixel_shuffle(rng):
    r = int(rng.integers(1, 4))
    lead = tuple(int(rng.integers(1, 3)) for _ in range(int(rng.integers(0, 3))))
    h, w = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    if rng.random() < 0.5:
        shape = lead + (int(rng.integers(1, 3)) * r * r, h, w)
        f = "pixel_shuffle"
    else:
        shape = lead + (int(rng.integers(1, 3)), h * r, w * r)
        f = "pixel_unshuffle"

    def fn(lib, x):
        return getattr(lib.nn.functional, f)(x, r)
    return Fn(f"{f}({r}) on {shape}", [_n(rng, *shape)], fn)


def unfold(rng):
    k, dil, stride = _size(rng, 2, 1, 3), _size(rng, 2, 1, 2), _size(rng, 2, 1, 3)
    pad = _size(rng, 2, 0, 2)
    span = [d * (kk - 1) + 1 for d, kk in zip(_tup(dil, 2), _tup(k, 2))]
    shape = tuple(int(max(s, rng.integers(2, 7))) for s in span)
    lead = (2, 2) if rng.random() < 0.7 else (3,)

    def fn(lib, x):
        return lib.nn.functional.unfold(x, k, dilation=dil, padding=pad, stride=stride)
    return Fn(f"unfold(k={k}, d={dil}, p={pad}, s={stride}) on {lead + shape}",
              [_n(rng, *lead, *shape)], fn)


def _tiny_rows(rng, a, axis):
    """Some slices along ``axis`` set to zero or scaled to about 1e-5 (eps territory)."""
    a = np.moveaxis(a.copy(), axis, -1)
    flat = a.reshape(-1, a.shape[-1])
    for r in range(flat.shape[0]):
        u = rng.random()
        flat[r] *= 0.0 if u < 0.2 else (1e-5 if u < 0.4 else 1.0)
    return np.moveaxis(flat.reshape(a.shape), -1, axis)


def distances(rng):
    which = _pick(rng, ["cosine_similarity", "pairwise_distance", "normalize"])
    shape = (int(rng.integers(1, 4)), int(rng.integers(1, 5)))
    if which == "cosine_similarity":
        dim = int(rng.integers(-2, 2))
        eps = _pick(rng, [1e-8, 1e-3, 0.5])
        a, b = _tiny_rows(rng, _n(rng, *shape), dim), _tiny_rows(rng, _n(rng, *shape), dim)
        if rng.random() < 0.3:  # broadcasting
            b = b[:1] if dim in (1, -1) else b[:, :1]
        elif rng.random() < 0.2 and dim in (1, -1):  # fewer axes
            b = b[0]

        def fn(lib, x, y):
            return lib.nn.functional.cosine_similarity(x, y, dim=dim, eps=eps)
        return Fn(f"cosine_similarity(dim={dim}, eps={eps}) on {a.shape}, {b.shape}",
                  [a, b], fn)
    if which == "pairwise_distance":
        p = _pick(rng, [2.0, 1.0, 3.0, 0.5, float("inf")])
        eps, keep = _pick(rng, [1e-6, 0.1, 0.0]), bool(rng.random() < 0.5)
        a = _n(rng, *shape)
        b = a + _tiny_rows(rng, _n(rng, *shape), 1)
        if rng.random() < 0.3:
            b = b[:1]

        def fn(lib, x, y):
            return lib.nn.functional.pairwise_distance(x, y, p=p, eps=eps, keepdim=keep)
        return Fn(f"pairwise_distance(p={p}, eps={eps}, keepdim={keep}) on {a.shape}, "
                  f"{b.shape}", [a, b], fn)
    p = _pick(rng, [2.0, 1.0, 3.0, 0.5, float("inf")])
    dim, eps = int(rng.integers(-2, 2)), _pick(rng, [1e-12, 1e-3, 0.5])
    a = _tiny_rows(rng, _n(rng, *shape), dim)

    def fn(lib, x):
        return lib.nn.functional.normalize(x, p=p, dim=dim, eps=eps)
    return Fn(f"normalize(p={p}, dim={dim}, eps={eps}) on {shape}", [a], fn, atol=1e-7)


def one_hot(rng):
    n = int(rng.integers(1, 6))
    idx = rng.integers(0, n, size=tuple(int(rng.integers(1, 4)) for _ in range(
        int(rng.integers(0, 3))))).tolist()
    nc = _pick(rng, [-1, n, n + 2])

    def fn(lib):
        return lib.nn.functional.one_hot(lib.tensor(idx), nc)
    return Fn(f"one_hot({idx}, {nc})", [], fn)


def _mask(rng, lib, s, t, kind):
    m = rng.random((s, t)) < 0.3
    m[:, 0] = False  # every query sees a key: no all-masked rows (NaN in both)
    if kind == "bool":
        return lib.tensor(m.tolist())
    return lib.tensor(np.where(m, -1.5, 0.3 * rng.standard_normal((s, t))).tolist())


def transformer(rng):
    kind = _pick(rng, ["TransformerEncoderLayer", "TransformerDecoderLayer"])
    heads = int(rng.integers(1, 3))
    d = heads * int(rng.integers(1, 4))
    kw = dict(dim_feedforward=int(rng.integers(1, 6)), dropout=0.0,
              activation=_pick(rng, ["relu", "gelu"]), batch_first=bool(rng.random() < 0.5),
              norm_first=bool(rng.random() < 0.5), bias=bool(rng.random() < 0.8),
              layer_norm_eps=_pick(rng, [1e-5, 0.1]))
    b, s, t = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    unbatched = rng.random() < 0.2
    seq = (lambda n: (n, d)) if unbatched else (
        (lambda n: (b, n, d)) if kw["batch_first"] else (lambda n: (n, b, d)))
    mk = _pick(rng, [None, "bool", "float"])
    kpm = rng.random() < 0.4
    state = np.random.default_rng(int(rng.integers(1 << 30)))
    seed = int(rng.integers(1 << 30))

    def masks(lib, q, k):
        r = np.random.default_rng(seed)
        am = None if mk is None else _mask(r, lib, q, k, mk)
        pm = None
        if kpm:
            p = r.random((k,) if unbatched else (b, k)) < 0.3
            p[..., 0] = False
            pm = lib.tensor(p.tolist())
        return am, pm

    def make(lib, dt):
        return getattr(lib.nn, kind)(d, heads, dtype=dt, **kw)

    if kind == "TransformerEncoderLayer":
        def call(m, lib, x):
            am, pm = masks(lib, s, s)
            return m(x, src_mask=am, src_key_padding_mask=pm)
        arrays = [_n(state, *seq(s))]
    else:
        def call(m, lib, x, mem):
            am, pm = masks(lib, s, s)
            mm, mpm = masks(lib, s, t)
            return m(x, mem, tgt_mask=am, tgt_key_padding_mask=pm, memory_mask=mm,
                     memory_key_padding_mask=mpm)
        arrays = [_n(state, *seq(s)), _n(state, *seq(t))]
    return Mod(f"{kind}({d}, {heads}, {kw}) on {[a.shape for a in arrays]}, mask {mk}, "
               f"key_padding {kpm}", make, arrays, call=call, modes=("train", "eval"))


def attention(rng):
    heads = int(rng.integers(1, 3))
    e = heads * int(rng.integers(1, 3))
    kw = dict(bias=bool(rng.random() < 0.7), add_bias_kv=bool(rng.random() < 0.3),
              add_zero_attn=bool(rng.random() < 0.3), batch_first=bool(rng.random() < 0.5))
    if rng.random() < 0.4:
        kw.update(kdim=int(rng.integers(1, 4)), vdim=int(rng.integers(1, 4)))
    b, s, t = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    unbatched = rng.random() < 0.2
    lay = (lambda n, d: (n, d)) if unbatched else (
        (lambda n, d: (b, n, d)) if kw["batch_first"] else (lambda n, d: (n, b, d)))
    arrays = [_n(rng, *lay(s, e)), _n(rng, *lay(t, kw.get("kdim", e))),
              _n(rng, *lay(t, kw.get("vdim", e)))]
    if "kdim" not in kw and rng.random() < 0.4:  # self-attention: one tensor thrice
        arrays = arrays[:1]
    fw = dict(need_weights=bool(rng.random() < 0.7), average_attn_weights=bool(
        rng.random() < 0.5))
    mk, kpm, seed = _pick(rng, [None, "bool", "float"]), rng.random() < 0.4, \
        int(rng.integers(1 << 30))
    k_len = s if len(arrays) == 1 else t
    per_head = rng.random() < 0.3

    def make(lib, dt):
        return lib.nn.MultiheadAttention(e, heads, dtype=dt, **kw)

    def call(m, lib, q, *kv):
        r = np.random.default_rng(seed)
        am = None if mk is None else _mask(r, lib, s, k_len, mk)
        if am is not None and per_head and not unbatched:
            am = am.unsqueeze(0).expand(b * heads, s, k_len) if lib.__name__ == "torch" else \
                lib.broadcast_to(am[None], (b * heads, s, k_len))
        pm = None
        if kpm:
            p = r.random((k_len,) if unbatched else (b, k_len)) < 0.3
            p[..., 0] = False
            pm = lib.tensor(p.tolist())
        k, v = kv if kv else (q, q)
        return m(q, k, v, key_padding_mask=pm, attn_mask=am, **fw)
    return Mod(f"MultiheadAttention({e}, {heads}, {kw}) on {[a.shape for a in arrays]}, "
               f"{fw}, mask {mk} per head {per_head}, key_padding {kpm}", make, arrays,
               call=call, modes=("train", "eval"))


def sdpa(rng):
    b, h, s, t, d = (int(rng.integers(1, 4)) for _ in range(5))
    causal = rng.random() < 0.3
    mk = None if causal else _pick(rng, [None, "bool", "float"])
    scale = _pick(rng, [None, 0.3])
    seed = int(rng.integers(1 << 30))

    def fn(lib, q, k, v):
        am = None if mk is None else _mask(np.random.default_rng(seed), lib, s, t, mk)
        return lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=am,
                                                              is_causal=causal, scale=scale)
    return Fn(f"scaled_dot_product_attention(causal={causal}, mask={mk}, scale={scale}) on "
              f"{(b, h, s, d)}, {(b, h, t, d)}", [_n(rng, b, h, s, d), _n(rng, b, h, t, d),
                                                 _n(rng, b, h, t, d)], fn)


def norm_functions(rng):
    """The functional forms, with running statistics passed or not."""
    which = _pick(rng, ["batch_norm", "instance_norm", "group_norm", "layer_norm"])
    c = int(rng.integers(1, 4))
    shape = (int(rng.integers(2, 4)), c, int(rng.integers(2, 4)))
    w = _pick(rng, [None, "w", "wb", "b"])
    arrays = [_n(rng, *shape)] + [_n(rng, c) for _ in range(len(w or ""))]
    rm, rv = rng.standard_normal(c), rng.random(c) + 0.5
    training, momentum = bool(rng.random() < 0.5), _pick(rng, [0.1, 0.7])
    stats = rng.random() < 0.7

    def wb(lib, rest):
        rest = list(rest)
        wt = rest.pop(0) if "w" in (w or "") else None
        bt = rest.pop(0) if "b" in (w or "") else None
        return wt, bt

    def fn(lib, x, *rest):
        F = lib.nn.functional
        wt, bt = wb(lib, rest)
        m, v = (lib.tensor(rm), lib.tensor(rv)) if stats else (None, None)
        if which == "batch_norm":
            y = F.batch_norm(x, m, v, wt, bt, training=training or not stats,
                             momentum=momentum, eps=1e-5)
        elif which == "instance_norm":
            y = F.instance_norm(x, m, v, wt, bt, use_input_stats=training or not stats,
                                momentum=momentum)
        elif which == "group_norm":  # (torch's backward fails with a bias and no weight)
            y = F.group_norm(x, 1, wt, None if wt is None else bt)
            return y
        else:
            y = F.layer_norm(x, (shape[-1],), None if wt is None else x[0, 0] * 0 + 1.5,
                             None)
            return y
        return [y] + ([m, v] if stats else [])
    return Fn(f"{which}(weights {w}, stats {stats}, training {training}, momentum "
              f"{momentum}) on {shape}", arrays, fn)


def upsample(rng):
    kind = _pick(rng, ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"])
    shape = (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
    if rng.random() < 0.5:
        kw: dict = {"size": (int(rng.integers(1, 8)), int(rng.integers(1, 8)))}
    else:
        kw = {"scale_factor": _pick(rng, [2, 1.5, 3.0, (2.0, 1.25)])}
    if kind == "Upsample":
        kw["mode"] = _pick(rng, ["nearest", "bilinear", "nearest-exact"])
        if kw["mode"] == "bilinear":
            kw["align_corners"] = _pick(rng, [None, True, False])
        if "scale_factor" in kw and rng.random() < 0.5:
            kw["recompute_scale_factor"] = bool(rng.random() < 0.5)

    def make(lib, dt):
        return getattr(lib.nn, kind)(**kw)
    return Mod(f"{kind}({kw}) on {shape}", make, [_n(rng, 2, 2, *shape)], modes=("train",))


def fold(rng):
    k, dil, stride = _size(rng, 2, 1, 3), _size(rng, 2, 1, 2), _size(rng, 2, 1, 3)
    pad = _size(rng, 2, 0, 2)
    span = [d * (kk - 1) + 1 for d, kk in zip(_tup(dil, 2), _tup(k, 2))]
    out = tuple(int(max(sp, rng.integers(2, 7))) for sp in span)
    blocks = [(o + 2 * p - sp) // st + 1 for o, p, sp, st in zip(out, _tup(pad, 2), span,
                                                                  _tup(stride, 2))]
    c = int(rng.integers(1, 3))
    shape = ((2,) if rng.random() < 0.7 else ()) + (c * int(np.prod(_tup(k, 2))),
                                                   int(np.prod(blocks)))

    def fn(lib, x):
        return lib.nn.functional.fold(x, out, k, dilation=dil, padding=pad, stride=stride)
    return Fn(f"fold({out}, k={k}, d={dil}, p={pad}, s={stride}) on {shape}",
              [_n(rng, *shape)], fn)


def lp_pool(rng):
    dim = int(rng.integers(1, 3))
    k = _size(rng, dim, 1, 3)
    stride = _pick(rng, [None, _size(rng, dim, 1, 3)])
    p, ceil = _pick(rng, [1.0, 2.0, 3.0, 1.5]), bool(rng.random() < 0.5)
    shape = tuple(int(max(kk, rng.integers(2, 7))) for kk in _tup(k, dim))
    a = _n(rng, 2, 2, *shape)
    a = np.abs(a) + 0.1 if p == 1.5 else a  # a fractional power of a negative: NaN in both
    name = f"LPPool{dim}d"

    def fn(lib, x):
        return getattr(lib.nn, name)(p, k, stride, ceil_mode=ceil)(x)
    return Fn(f"{name}({p}, {k}, {stride}, ceil={ceil}) on {shape}", [a], fn)


def max_unpool(rng):
    dim = int(rng.integers(1, 3))
    k = _size(rng, dim, 1, 4)
    stride = _pick(rng, [None, _size(rng, dim, 1, 3)])
    pad = tuple(int(rng.integers(0, kk // 2 + 1)) for kk in _tup(k, dim))
    shape = tuple(int(max(kk, rng.integers(2, 8))) for kk in _tup(k, dim))
    st = _tup(k, dim) if stride is None else _tup(stride, dim)
    default = [((n + 2 * p - kk) // ss) * ss - 2 * p + kk
               for n, p, kk, ss in zip(shape, pad, _tup(k, dim), st)]
    # an empty default output: torch's backward raises there
    given = rng.random() < 0.5 or min(default) < 1
    x = _ties(rng, _n(rng, 2, 2, *shape))

    def fn(lib, x):
        y, i = getattr(lib.nn.functional, f"max_pool{dim}d")(x, k, stride, pad,
                                                             return_indices=True)
        size = list(shape) if given else None
        return getattr(lib.nn, f"MaxUnpool{dim}d")(k, stride, pad)(y, i, size)
    return Fn(f"MaxUnpool{dim}d(k={k}, s={stride}, p={pad}) after max_pool, output_size "
              f"{given} on {shape}", [x], fn)


def rms_norm(rng):
    shape = tuple(int(rng.integers(1, 4)) for _ in range(int(rng.integers(1, 4))))
    k = int(rng.integers(1, len(shape) + 1))
    ns = shape[-k:]
    ns = ns[0] if k == 1 and rng.random() < 0.5 else list(ns)
    kw = dict(eps=_pick(rng, [None, 1e-6, 0.3]), elementwise_affine=bool(rng.random() < 0.7))
    a = _tiny_rows(rng, _n(rng, *shape), -1) if rng.random() < 0.3 else _n(rng, *shape)

    def make(lib, dt):
        return lib.nn.RMSNorm(ns, dtype=dt, **kw)
    return Mod(f"RMSNorm({ns}, {kw}) on {shape}", make, [a])


FAMILIES = {f.__name__: f for f in (
    conv3d, conv_transpose_1d_3d, pool3d, norm3d, grid_sampling,
    rms_norm, fold, lp_pool, max_unpool, upsample, attention, sdpa, norm_functions,
    conv, conv_transpose, max_pool, avg_pool, adaptive_pool, interpolate, pad, batch_norm,
    instance_norm, group_norm, layer_norm, embedding, embedding_bag, recurrent,
    pixel_shuffle, unfold, distances, one_hot, transformer)}
