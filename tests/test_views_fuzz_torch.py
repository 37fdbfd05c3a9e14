"""A view and in-place fuzzer against PyTorch: random chains of slicing, integer and bool
indexing, reshape, transpose/permute, flip, expand, squeeze/unsqueeze, ``.data`` and
``detach()``, interleaved with ``+= *= setitem add_ mul_ zero_ fill_ clamp_ copy_`` and
products that save tensors, run step by step on xad and on torch; every step must raise in
both or in neither, and at the end the values of every tensor and the gradients of the two
leaves must agree. A small seeded run per backend by default; ``XAD_FUZZ_N=5000`` (and
``XAD_FUZZ_SEED``) for the long run, whose counts docs/PORTING.md reports."""

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

N = int(os.environ.get("XAD_FUZZ_N", "12"))
SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))


class Pair:
    """The same program's state in both libraries: lists of tensors, index for index."""

    def __init__(self, rng: random.Random, shape: tuple[int, ...]) -> None:
        n = math.prod(shape)
        w0 = np.array([rng.uniform(-2, 2) for _ in range(n)]).reshape(shape)
        u0 = np.array([rng.uniform(-2, 2) for _ in range(64)])
        self.w = (xad.tensor(w0, dtype=xad.float64, requires_grad=True),
                  torch.tensor(w0, requires_grad=True))
        self.u = (xad.tensor(u0, dtype=xad.float64, requires_grad=True),
                  torch.tensor(u0, requires_grad=True))
        c0 = np.arange(n, dtype=np.float64).reshape(shape)
        self.ts = [self.w, (self.w[0] * 1.5, self.w[1] * 1.5),
                   (xad.tensor(c0, dtype=xad.float64), torch.tensor(c0))]


def _key(rng: random.Random, shape: tuple[int, ...]) -> tuple:
    """A basic index: ints, slices with steps, a new axis now and then."""
    key: list = []
    for n in shape[:rng.randint(1, len(shape))] if shape else ():
        r = rng.random()
        if n == 0:
            key.append(slice(None))
        elif r < 0.3:
            key.append(rng.randrange(n))
        elif r < 0.9:
            a = rng.randrange(n)
            key.append(slice(a, rng.randint(a + 1, n), rng.choice((1, 1, 2))))
        else:
            key.append(slice(None))
        if rng.random() < 0.1:
            key.append(None)
    return tuple(key)


def _new_shape(rng: random.Random, shape: tuple[int, ...]) -> tuple[int, ...]:
    n = math.prod(shape)
    if rng.random() < 0.3 or n == 1:
        return (-1,)
    divs = [d for d in range(2, n) if n % d == 0]
    if not divs:
        return (n, 1)
    d = rng.choice(divs)
    return rng.choice(((d, n // d), (n // d, d), (d, -1), (1, d, n // d)))


def _expand_shape(rng: random.Random, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = tuple(rng.choice((2, 3)) if s == 1 else s for s in shape)
    return ((rng.choice((2, 3)),) if rng.random() < 0.5 or out == shape else ()) + out


def _view(rng: random.Random, t: tuple, shape: tuple[int, ...]) -> tuple[str, tuple]:
    """A random view (or copy) operation and its arguments for a tensor of ``shape``."""
    nd = len(shape)
    kinds = ["data", "detach", "reshape", "expand", "unsqueeze"]
    if nd:
        kinds += ["slice", "slice", "flip"] + (["ints", "mask"] if shape[0] else [])
    if nd >= 2:
        kinds += ["transpose", "permute"]
    if 1 in shape:
        kinds.append("squeeze")
    kind = rng.choice(kinds)
    if kind == "slice":
        return kind, (_key(rng, shape),)
    if kind == "ints":
        return kind, ([rng.randrange(shape[0]) for _ in range(rng.randint(1, 3))],)
    if kind == "mask":
        return kind, ([rng.random() < 0.5 for _ in range(shape[0])],)
    if kind == "reshape":
        return kind, (_new_shape(rng, shape),)
    if kind == "expand":
        return kind, (_expand_shape(rng, shape),)
    if kind == "transpose":
        return kind, tuple(rng.sample(range(nd), 2))
    if kind == "permute":
        return kind, tuple(rng.sample(range(nd), nd))
    if kind == "flip":
        return kind, (tuple(rng.sample(range(nd), rng.randint(1, nd))),)
    if kind == "squeeze":
        return kind, (rng.choice([i for i, s in enumerate(shape) if s == 1]),)
    if kind == "unsqueeze":
        return kind, (rng.randint(0, nd),)
    return kind, ()


def _apply_view(lib: str, t, kind: str, args: tuple):
    if kind == "slice":
        return t[args[0]]
    if kind == "ints":
        return t[list(args[0])]
    if kind == "mask":
        m = (xad.tensor(args[0]) if lib == "xad" else torch.tensor(args[0]))
        return t[m]
    if kind in ("data", "detach"):
        return t.data if kind == "data" else t.detach()
    if kind == "flip":
        return t.flip(args[0])
    return getattr(t, kind)(*args)


def _value(rng: random.Random, pair: Pair, shape: tuple[int, ...]) -> tuple:
    """A right-hand side: a number, a constant tensor, or a tensor made from the leaf u."""
    r = rng.random()
    if r < 0.4:
        v = round(rng.uniform(-2, 2), 3)
        return v, v
    n = math.prod(shape)
    if r < 0.6:
        a = np.array([rng.uniform(-2, 2) for _ in range(n)]).reshape(shape)
        return xad.tensor(a, dtype=xad.float64), torch.tensor(a)
    c = round(rng.uniform(0.5, 2), 3)
    return tuple(u[:n].reshape(shape) * c for u in pair.u)


def _change(rng: random.Random, pair: Pair, shape: tuple[int, ...]) -> tuple[str, tuple]:
    """A random in-place change and its arguments (values as (xad, torch) pairs)."""
    kind = rng.choice(["iadd", "imul", "setitem", "add_", "mul_", "zero_", "fill_",
                       "clamp_", "copy_"])
    if kind == "setitem":
        key = _key(rng, shape) if shape else ()
        r = rng.random() if shape and shape[0] else 1.0
        if r < 0.15:
            key = (rng.sample(range(shape[0]), min(2, shape[0])),)  # repeats: undefined
        elif r < 0.25:
            key = ([rng.random() < 0.5 for _ in range(shape[0])],)
        slot = tuple(torch.empty(shape)[_lib_key("torch", key)].shape)
        return kind, (key, _value(rng, pair, slot))
    if kind == "fill_":
        v = round(rng.uniform(-2, 2), 3)
        return kind, ((v, v),)
    if kind == "clamp_":
        lo = round(rng.uniform(-2, 1), 3)
        return kind, (lo, lo + 1.0)
    if kind == "zero_":
        return kind, ()
    vshape = shape[rng.randint(0, len(shape)):] if kind != "copy_" else shape
    return kind, (_value(rng, pair, vshape),)


def _lib_key(lib: str, key: tuple) -> tuple:
    """A key with a list of bools made a mask tensor of ``lib``."""
    if key and isinstance(key[0], list) and key[0] and isinstance(key[0][0], bool):
        return ((xad.tensor(key[0]) if lib == "xad" else torch.tensor(key[0])),) + key[1:]
    return key


def _apply_change(i: int, t, kind: str, args: tuple) -> None:
    if kind == "iadd":
        t += args[0][i]
    elif kind == "imul":
        t *= args[0][i]
    elif kind == "setitem":
        t[_lib_key(("xad", "torch")[i], args[0])] = args[1][i]
    elif kind in ("add_", "mul_", "fill_", "copy_"):
        getattr(t, kind)(args[0][i])
    elif kind == "clamp_":
        t.clamp_(*args)
    else:
        t.zero_()


def _product(t, kind: str):
    return {"square": lambda: t * t, "scale": lambda: t * 2.5, "exp": t.exp}[kind]()


def _step(rng: random.Random, pair: Pair) -> tuple:
    j = rng.randrange(len(pair.ts))
    tx, tt = pair.ts[j]
    shape = tuple(tt.shape)
    r = rng.random()
    if r < 0.5:
        kind, args = _view(rng, tt, shape)
        raised, out = both(lambda i, lib: _apply_view(lib, pair.ts[j][i], kind, args))
        what = f"t{j}.{kind}{args}"
    elif r < 0.6 and tt.requires_grad:
        kind = rng.choice(["square", "scale", "exp"])
        raised, out = both(lambda i, lib: _product(pair.ts[j][i], kind))
        what = f"t{j} {kind}"
    else:
        kind, args = _change(rng, pair, shape)
        raised, out = both(lambda i, lib: _apply_change(i, pair.ts[j][i], kind, args))
        out = [None, None]
        what = f"t{j}.{kind}" + (f"{args[0]}" if kind == "setitem" else "")
    if out[0] is not None and out[1] is not None:
        pair.ts.append(tuple(out))
    return what, raised


def _grad(t, lib: str):
    g = t.grad
    if g is None:
        return np.zeros(tuple(t.shape))
    return g.numpy() if lib == "xad" else g.detach().numpy()


def _finish(pair: Pair) -> str | None:
    """Compare every tensor's values, then backward through a loss over all of them, then
    the two leaves' gradients."""
    diff, raised = values_then_backward(pair.ts, 1e-10)
    if diff:
        return diff
    for name in ("w", "u"):
        x, t = getattr(pair, name)
        if raised[0] is None and not close(_grad(x, "xad"), _grad(t, "torch"), 1e-10):
            return f"{name}.grad differs: xad {_grad(x, 'xad')} torch {_grad(t, 'torch')}"
    return None


SHAPES = ((4,), (3, 4), (2, 3, 2), (1, 4), (3, 1, 2))


def test_views_and_inplace_changes_agree_with_torch(xb):
    check_programs(xb.name, lambda seed: run_program(seed, SHAPES, Pair, _step, _finish),
                   N, SEED)
