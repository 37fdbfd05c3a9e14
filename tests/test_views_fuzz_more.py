"""A second view and in-place fuzzer against PyTorch, over what tests/test_views_fuzz_torch.py
leaves out: ``T``/``mT``/``t()``, ``narrow``, ``split`` pieces, ``view``, ``flatten``,
``view_as``, negative and out-of-range slices, Ellipsis keys; ``sub_``/``div_``/``alpha=``,
one-sided ``clamp_``, ``masked_fill_``, ``index_fill_``, ``index_add_`` and ``scatter_add_``
(repeated indices), ``scatter_``, ``x[idx] += v`` with repeated indices, setitem of a
broadcast tensor, ``copy_`` of a broadcast source; changes made under ``no_grad()`` (an
optimiser's update of a parameter through a view); operations that save tensors for backward
(``exp``, ``sigmoid``, ``tanh``, ``pow``, ``@``, ``softmax``...); ``retain_grad()``. Each step
must raise in both libraries or in neither; at the end every tensor's values, the three
leaves' gradients and the retained ones must agree. ``XAD_FUZZ_N`` (and ``XAD_FUZZ_SEED``)
for the long run."""

from __future__ import annotations

import math
import os
import random

import numpy as np
import pytest

import xad

torch = pytest.importorskip("torch")
from views_fuzz_driver import (  # noqa: E402
    both,
    check_programs,
    close,
    run_program,
    values_then_backward,
)

N = int(os.environ.get("XAD_FUZZ_N", "10"))
SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))
LIBS = ("xad", "torch")


def _pair(a: np.ndarray, grad: bool = False) -> tuple:
    return (xad.tensor(a, dtype=xad.float64, requires_grad=grad),
            torch.tensor(a, dtype=torch.float64, requires_grad=grad))


def _ints(lib: str, idx: list) -> object:
    if lib == "xad":
        return xad.tensor(idx, dtype=xad.int64)
    return torch.tensor(idx, dtype=torch.int64)


def _bools(lib: str, mask: list) -> object:
    if lib == "xad":
        return xad.tensor(mask, dtype=xad.bool)
    return torch.tensor(mask, dtype=torch.bool)


def _nograd(lib: str):
    return xad.no_grad() if lib == "xad" else torch.no_grad()


class State:
    """The program's tensors in both libraries, index for index; leaves w, u (in graphs)
    and p (a parameter, changed only under no_grad)."""

    def __init__(self, rng: random.Random, shape: tuple[int, ...]) -> None:
        self.rng = rng
        n = math.prod(shape)

        def draw(k):
            return np.array([rng.uniform(-2, 2) for _ in range(k)])
        self.w = _pair(draw(n).reshape(shape), True)
        self.u = _pair(draw(64), True)
        self.p = _pair(draw(n).reshape(shape), True)
        c = _pair(np.arange(n, dtype=np.float64).reshape(shape))
        self.ts = [self.w, tuple(t * 1.5 for t in self.w), c, self.p,
                   tuple(a * b for a, b in zip(self.p, self.w))]
        self.retained: list[int] = []  # tensors that retain_grad()


# ----- views ------------------------------------------------------------------------------
def _slice(rng: random.Random, n: int) -> slice:
    a = rng.randint(-n - 1, n)
    b = rng.choice((None, rng.randint(-n, n + 2)))
    return slice(a, b, rng.choice((1, 1, 2, 3)))


def _key(rng: random.Random, shape: tuple[int, ...]) -> tuple:
    key: list = []
    for n in shape[:rng.randint(1, len(shape))]:
        r = rng.random()
        key.append(rng.randint(-n, n - 1) if r < 0.25 and n else
                   _slice(rng, n) if r < 0.85 else slice(None))
    if rng.random() < 0.3:
        key.insert(rng.randint(0, len(key)), None)
    if rng.random() < 0.3 and len(key) < len(shape):
        key = [..., *key[len(key) - 1:]] if rng.random() < 0.5 else [*key, ...]
    return tuple(key)


def _view_shape(rng: random.Random, shape: tuple[int, ...]) -> tuple[int, ...]:
    n = math.prod(shape)
    d = rng.choice([d for d in range(1, n + 1) if n % d == 0] or [1])
    return rng.choice(((d, -1), (-1,), (n // d, d), (1, n // d, d)))


def _pick_view(rng: random.Random, shape: tuple[int, ...]) -> tuple[str, tuple]:
    nd = len(shape)
    kinds = ["view", "flatten", "unsqueeze", "detach", "data", "expand", "view_as"]
    if nd:
        kinds += ["key", "key", "narrow", "split", "squeeze"]
    if nd <= 2:
        kinds.append("t")
    if nd >= 2:
        kinds += ["mT", "transpose", "flatten2"]
    if nd == 2:
        kinds.append("T")
    kind = rng.choice(kinds)
    if kind == "key":
        return kind, (_key(rng, shape),)
    if kind in ("view", "view_as"):
        return kind, _view_shape(rng, shape)
    if kind == "unsqueeze":
        return kind, (rng.randint(-nd - 1, nd),)
    if kind == "expand":
        return kind, (rng.choice((2, 3)), *(-1 if rng.random() < 0.5 else s for s in shape))
    if kind == "narrow":
        d = rng.randrange(nd)
        s = rng.randint(-shape[d], shape[d]) if shape[d] else 0
        start = s % shape[d] if shape[d] and s < 0 else s
        return kind, (d - nd if rng.random() < 0.3 else d, s,
                      rng.randint(0, max(shape[d] - start, 0)))
    if kind == "split":
        d = rng.randrange(nd)
        k = rng.randint(1, max(shape[d], 1))
        return kind, (k, d, rng.randrange(max(math.ceil(shape[d] / k), 1)))
    if kind == "transpose":
        return kind, (rng.randint(-nd, nd - 1), rng.randint(-nd, nd - 1))
    if kind == "flatten2":
        a = rng.randrange(nd)
        return kind, (a, rng.randint(a, nd - 1))
    return kind, ()


def _apply_view(lib: str, t, kind: str, args: tuple):
    if kind == "key":
        return t[args[0]]
    if kind in ("T", "mT"):
        return getattr(t, kind)
    if kind in ("detach", "t", "flatten"):
        return getattr(t, kind)()
    if kind == "data":
        return t.data
    if kind == "view_as":
        return t.view_as((xad if lib == "xad" else torch).zeros(args).reshape(args))
    if kind == "split":  # torch refuses in-place changes of split's views: its narrow
        k, d, j = args
        if lib == "xad":
            return t.split(k, d)[j]
        return t.narrow(d, k * j, min(k, t.shape[d] - k * j))
    if kind == "flatten2":
        return t.flatten(*args)
    if kind == "squeeze":
        return t.squeeze()
    return getattr(t, kind)(*args)


# ----- products that save tensors -----------------------------------------------------------
PRODUCTS = {
    "square": lambda t: t * t, "exp": lambda t: t.exp(), "sigmoid": lambda t: t.sigmoid(),
    "tanh": lambda t: t.tanh(), "sin": lambda t: t.sin(), "pow3": lambda t: t ** 3,
    "relu": lambda t: t.relu(), "clone": lambda t: t.clone(), "div": lambda t: 1.0 / (t * t + 1),
    "softmax": lambda t: t.softmax(-1), "sum0": lambda t: t.sum(0, keepdim=True) * t,
    "mm": lambda t: t @ t.mT, "cumsum": lambda t: t.cumsum(0), "abs": lambda t: t.abs(),
    "max": lambda t: t.max() * t,
}


# ----- changes -----------------------------------------------------------------------------
def _number(rng: random.Random) -> float:
    return round(rng.choice((-1, 1)) * rng.uniform(0.5, 2), 3)


def _value(rng: random.Random, st: State, shape: tuple[int, ...]) -> tuple:
    """A number, a constant tensor, or a tensor made from the leaf u, of ``shape`` (or a
    shape that broadcasts to it)."""
    r = rng.random()
    if r < 0.35:
        v = _number(rng)
        return v, v
    if shape and rng.random() < 0.4:
        shape = tuple(1 if rng.random() < 0.5 else s for s in shape)[rng.randint(0, 1):]
    n = math.prod(shape)
    if r < 0.6:
        return _pair(np.array([_number(rng) for _ in range(n)]).reshape(shape))
    c = round(rng.uniform(0.5, 2), 3)
    return tuple(u[:n].reshape(shape) * c for u in st.u)


def _index(rng: random.Random, n: int, repeats: bool) -> list:
    if repeats:
        return [rng.randrange(n) for _ in range(rng.randint(1, 4))]
    return rng.sample(range(n), rng.randint(1, n))


def _pick_change(rng: random.Random, st: State, shape: tuple[int, ...]) -> tuple[str, tuple]:
    nd = len(shape)
    kinds = ["iadd", "isub", "imul", "idiv", "add_a", "sub_a", "div_", "clamp_lo", "clamp_hi",
             "copy_", "fill_", "setitem", "masked_fill_"]
    if nd and shape[0]:
        kinds += ["index_fill_", "index_add_", "idx_iadd", "mask_imul", "setitem_ints"]
    if nd and 0 not in shape:
        kinds += ["scatter_", "scatter_add_"]
    kind = rng.choice(kinds)
    if kind in ("iadd", "isub", "imul", "add_a", "sub_a"):
        return kind, (_value(rng, st, shape[rng.randint(0, nd):]), _number(rng))
    if kind in ("idiv", "div_"):
        v = _number(rng)
        return kind, ((v, v),)
    if kind in ("clamp_lo", "clamp_hi", "fill_"):
        return kind, (_number(rng),)
    if kind == "copy_":
        return kind, (_value(rng, st, shape),)
    if kind == "setitem":
        key = _key(rng, shape) if nd else ()
        return kind, (key, _value(rng, st, tuple(np.empty(shape)[key].shape)))
    if kind == "masked_fill_":
        sub = shape[rng.randint(0, nd):]
        return kind, ([rng.random() < 0.5 for _ in range(math.prod(sub))], sub, _number(rng))
    d = rng.randrange(nd) if nd else 0
    if kind == "setitem_ints":
        idx = _index(rng, shape[0], False)
        return kind, (idx, _value(rng, st, (len(idx), *shape[1:])))
    if kind == "idx_iadd":
        return kind, (_index(rng, shape[0], True), _number(rng))
    if kind == "mask_imul":
        return kind, ([rng.random() < 0.5 for _ in range(shape[0])], _number(rng))
    if kind == "index_fill_":
        return kind, (d, _index(rng, shape[d], True) if shape[d] else [], _number(rng))
    if kind == "index_add_":
        idx = _index(rng, shape[d], True) if shape[d] else []
        src = shape[:d] + (len(idx),) + shape[d + 1:]
        return kind, (d, idx, _value(rng, st, src), _number(rng))
    k = rng.randint(1, shape[d])
    idx = np.array([rng.sample(range(shape[d]), k) if kind == "scatter_" else
                    [rng.randrange(shape[d]) for _ in range(k)]
                    for _ in range(math.prod(shape) // shape[d])])
    idx = np.moveaxis(idx.reshape(shape[:d] + shape[d + 1:] + (k,)), -1, d)
    return kind, (d, idx.tolist(), _value(rng, st, idx.shape))


def _tensor_value(lib: str, i: int, v, shape: tuple[int, ...]):
    """``v[i]`` as a tensor of ``shape`` (scatter sources must be tensors)."""
    v = v[i]
    if isinstance(v, float):
        return (xad.full(shape, v, dtype=xad.float64) if lib == "xad"
                else torch.full(shape, v, dtype=torch.float64))
    return v.expand(*shape) if tuple(v.shape) != shape else v


def _apply_change(i: int, t, kind: str, args: tuple) -> None:
    lib = LIBS[i]
    if kind in ("iadd", "isub", "imul"):
        v = args[0][i]
        if kind == "iadd":
            t += v
        elif kind == "isub":
            t -= v
        else:
            t *= v
    elif kind == "idiv":
        t /= args[0][i]
    elif kind in ("add_a", "sub_a"):
        getattr(t, kind[:3] + "_")(args[0][i], alpha=args[1])
    elif kind in ("div_", "copy_"):
        getattr(t, kind)(args[0][i])
    elif kind == "clamp_lo":
        t.clamp_(min=args[0])
    elif kind == "clamp_hi":
        t.clamp_(max=args[0])
    elif kind == "fill_":
        t.fill_(args[0])
    elif kind == "setitem":
        t[args[0]] = args[1][i]
    elif kind == "masked_fill_":
        t.masked_fill_(_bools(lib, args[0]).reshape(args[1]), args[2])
    elif kind == "setitem_ints":
        t[_ints(lib, args[0])] = args[1][i]
    elif kind == "idx_iadd":
        t[_ints(lib, args[0])] += args[1]
    elif kind == "mask_imul":
        t[_bools(lib, args[0])] *= args[1]
    elif kind == "index_fill_":
        t.index_fill_(args[0], _ints(lib, args[1]), args[2])
    elif kind == "index_add_":
        t.index_add_(args[0], _ints(lib, args[1]), args[2][i], alpha=args[3])
    else:  # scatter_, scatter_add_
        src = _tensor_value(lib, i, args[2], tuple(np.shape(args[1])))
        getattr(t, kind)(args[0], _ints(lib, args[1]), src)


# ----- the program -------------------------------------------------------------------------
def _step(rng: random.Random, st: State) -> tuple[str, list]:
    j = rng.randrange(len(st.ts))
    shape = tuple(st.ts[j][1].shape)
    r = rng.random()
    if r < 0.42:
        kind, args = _pick_view(rng, shape)
        raised, out = both(lambda i, lib: _apply_view(lib, st.ts[j][i], kind, args))
        what = f"t{j}.{kind}{args}"
    elif r < 0.63 and st.ts[j][1].grad_fn is not None and not st.ts[j][1]._is_view():
        # (a view's: PyTorch remakes the views of a view from the base, past it; PORTING.md)
        raised, _ = both(lambda i, lib: st.ts[j][i].retain_grad())
        st.retained.append(j)
        what = f"t{j}.retain_grad()"
        out = [None, None]
    elif r < 0.6:
        kind = rng.choice(sorted(PRODUCTS))
        raised, out = both(lambda i, lib: PRODUCTS[kind](st.ts[j][i]))
        what = f"t{j} {kind}"
    else:
        kind, args = _pick_change(rng, st, shape)
        quiet = rng.random() < 0.3

        def change(i, lib):
            if quiet:
                with _nograd(lib):
                    _apply_change(i, st.ts[j][i], kind, args)
            else:
                _apply_change(i, st.ts[j][i], kind, args)
        raised, out = both(change)
        out = [None, None]
        what = f"t{j}.{kind}{args[:2] if kind != 'setitem' else args[0]}" + (
            " (no_grad)" if quiet else "")
    if out[0] is not None and out[1] is not None:
        st.ts.append(tuple(out))
    return what, raised


def _finish(st: State) -> str | None:
    """Compare every tensor's values, then backward through a loss over all of them, then
    the three leaves' gradients and the retained ones."""
    diff, raised = values_then_backward(st.ts, 1e-9)
    if diff:
        return diff
    named = [(n, getattr(st, n)) for n in ("w", "u", "p")]
    named += [(f"t{j}", st.ts[j]) for j in st.retained]
    for name, (x, t) in named:
        gx = None if x.grad is None else x.grad.numpy()
        gt = None if t.grad is None else t.grad.numpy()
        if raised[0] is None and (gx is None) != (gt is None) and not x.is_leaf:
            return f"{name}.grad: xad {gx} torch {gt}"
        gx = np.zeros(x.shape) if gx is None else gx
        gt = np.zeros(tuple(t.shape)) if gt is None else gt
        if raised[0] is None and not close(gx, gt):
            return f"{name}.grad differs: xad {gx} torch {gt}"
    return None


SHAPES = ((4,), (3, 4), (2, 3, 2), (1, 4), (3, 1, 2), (2, 2))


def test_more_views_and_inplace_changes_agree_with_torch(xb):
    check_programs(xb.name, lambda seed: run_program(seed, SHAPES, State, _step, _finish),
                   N, SEED)
