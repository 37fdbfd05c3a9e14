"""A third view and in-place fuzzer against PyTorch, over the views the other two leave out
(``diagonal`` with offsets and planes, ``movedim``, ``swapaxes``, ``unbind`` and ``chunk``
pieces, ``unflatten``, ``expand_as``, ``x[i]`` as ``select``), chained and written through,
and over what neither compares: every tensor's **version counter** (``_version``) after
each step, which decides whether a backward raises over a changed saved tensor. Each step
must raise in both libraries or in neither, the versions must agree after each, and at the
end the values and the leaves' gradients must. ``XAD_FUZZ_N`` (and ``XAD_FUZZ_SEED``) for
the long run.

Before: ``diagonal`` was a copy in xad (a write through it never reached the matrix)."""

from __future__ import annotations

import math
import os
import random

import numpy as np
import pytest

import xad

torch = pytest.importorskip("torch")
from views_fuzz_driver import both, check_programs, close, run_program, values_then_backward  # noqa: E402,I001

N = int(os.environ.get("XAD_FUZZ_N", "10"))
SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))
SHAPES = ((3, 4), (4, 4), (2, 3, 3), (3, 2, 4), (2, 2, 2, 3))


def _nograd(lib: str):
    return xad.no_grad() if lib == "xad" else torch.no_grad()


class State:
    """Both libraries' tensors, index for index: a leaf ``w`` in graphs, a plain tensor and
    a parameter ``p`` changed only under ``no_grad``."""

    def __init__(self, rng: random.Random, shape: tuple[int, ...]) -> None:
        n = math.prod(shape)
        a = np.array([rng.uniform(-2, 2) for _ in range(2 * n)])
        self.w = (xad.tensor(a[:n].reshape(shape), dtype=xad.float64, requires_grad=True),
                  torch.tensor(a[:n].reshape(shape), requires_grad=True))
        self.p = (xad.tensor(a[n:].reshape(shape), dtype=xad.float64, requires_grad=True),
                  torch.tensor(a[n:].reshape(shape), requires_grad=True))
        c = np.arange(n, dtype=np.float64).reshape(shape)
        self.ts = [tuple(t * 1.5 for t in self.w), (xad.tensor(c), torch.tensor(c)), self.p,
                   tuple(t.exp() for t in self.w)]
        self.params = {2}  # indices of tensors changed only under no_grad


def _pick(rng: random.Random, shape: tuple[int, ...]) -> tuple[str, tuple]:
    nd = len(shape)
    kinds = ["unflatten", "expand_as", "detach"]
    if 0 in shape:  # an empty diagonal: only whole-tensor views
        return rng.choice(kinds[1:]), ()
    if nd >= 2:
        kinds += ["diagonal", "diagonal", "movedim", "swapaxes", "plane"]
    if nd >= 1:
        kinds += ["unbind", "chunk", "select", "slice"]
    kind = rng.choice(kinds)
    d = rng.randrange(nd) if nd else 0
    if kind == "diagonal":
        d1, d2 = rng.sample(range(nd), 2)
        return kind, (rng.randint(-shape[d1], shape[d2]), d1 - nd * rng.randint(0, 1), d2)
    if kind in ("movedim", "swapaxes"):
        return kind, (d, rng.randrange(nd))
    if kind == "unbind":
        return kind, (d, rng.randrange(shape[d]) if shape[d] else 0)
    if kind == "chunk":
        k = rng.randint(1, max(shape[d], 1))
        return kind, (k, d, rng.randrange(len(torch.empty(shape).chunk(k, d))))
    if kind == "select":
        return kind, (rng.randint(-shape[0], shape[0] - 1),)
    if kind == "slice":
        return kind, (rng.randint(0, shape[d] - 1), d, rng.choice((1, 2)))
    if kind == "unflatten":
        n = shape[d] if nd else 1
        f = rng.choice([f for f in range(1, n + 1) if n % f == 0])
        return kind, (d, (f, n // f)) if nd else ("none", ())
    if kind == "plane":  # a diagonal of a transposed matrix
        return kind, (rng.randint(-1, 1),)
    return kind, ()


def _view(lib: str, t, kind: str, args: tuple):
    if kind == "diagonal":
        return t.diagonal(*args)
    if kind == "movedim":
        return t.movedim(*args)
    if kind == "swapaxes":
        return t.swapaxes(*args)
    # torch refuses in-place changes of unbind's and chunk's pieces in a graph (docs/
    # PORTING.md): its select and narrow, the same views, stand in for them
    if kind == "unbind":
        return t.unbind(args[0])[args[1]] if lib == "xad" else t.select(*args)
    if kind == "chunk":
        k, d, j = args
        if lib == "xad":
            return t.chunk(k, d)[j]
        size = math.ceil(t.shape[d] / k)
        return t.narrow(d, size * j, min(size, t.shape[d] - size * j))
    if kind == "select":
        return t[args[0]]
    if kind == "slice":
        key = (slice(None),) * args[1] + (slice(args[0], None, args[2]),)
        return t[key]
    if kind == "unflatten":
        return t.unflatten(*args) if args[0] != "none" else t
    if kind == "expand_as":
        return t.expand_as(t[None].expand(2, *t.shape))
    if kind == "plane":
        return t.transpose(-1, -2).diagonal(args[0], -2, -1)
    return t.detach()


def _change(rng: random.Random, shape: tuple[int, ...]) -> tuple[str, tuple]:
    kind = rng.choice(["mul_", "add_", "setitem", "zero_", "clamp_", "copy_", "iadd", "ints"])
    if kind == "ints" and shape and shape[0]:  # distinct integer indices: no repeats
        return "setitem", ((rng.sample(range(shape[0]), rng.randint(1, shape[0])),),
                           round(rng.uniform(-3, 3), 2))
    if kind in ("setitem", "ints"):
        kind = "setitem"
        key = tuple(rng.randint(-n, n - 1) for n in shape[:rng.randint(0, len(shape))] if n)
        return kind, (key, round(rng.uniform(-3, 3), 3))
    return kind, (round(rng.uniform(0.5, 2), 3),)


def _apply(lib: str, t, kind: str, args: tuple, under_nograd: bool) -> None:
    def run():
        if kind == "setitem":
            key = args[0]
            if key and isinstance(key[0], list):  # an integer index tensor of the library
                key = ((xad if lib == "xad" else torch).tensor(key[0]),) + key[1:]
            t[key] = args[1]
        elif kind == "zero_":
            t.zero_()
        elif kind == "clamp_":
            t.clamp_(-args[0], args[0])
        elif kind == "copy_":
            t.copy_(t * args[0])
        elif kind == "iadd":
            t.__iadd__(t.detach() * args[0])  # t += ..., t stays the view
        else:
            getattr(t, kind)(args[0])
    if under_nograd:
        with _nograd(lib):
            run()
    else:
        run()


def _step(rng: random.Random, st: State) -> tuple[str, list]:
    j = rng.randrange(len(st.ts))
    shape = tuple(st.ts[j][1].shape)
    if rng.random() < 0.55:
        kind, args = _pick(rng, shape)
        raised, out = both(lambda i, lib: _view(lib, st.ts[j][i], kind, args))
        if out[0] is not None and out[1] is not None:
            st.ts.append(tuple(out))
            if j in st.params:
                st.params.add(len(st.ts) - 1)
        what = f"t{j}.{kind}{args}"
    else:
        kind, args = _change(rng, shape)
        nograd = j in st.params or rng.random() < 0.3
        raised, _ = both(lambda i, lib: _apply(lib, st.ts[j][i], kind, args, nograd))
        what = f"t{j}.{kind}{args}" + (" (no_grad)" if nograd else "")
    if raised[0] is None and raised[1] is None:
        versions = [(tx._version, tt._version) for tx, tt in st.ts]
        bad = [k for k, (a, b) in enumerate(versions) if a != b]
        if bad:
            raised = [RuntimeError(f"versions differ at t{bad}: {versions}"), None]
    return what, raised


def _finish(st: State) -> str | None:
    diff, raised = values_then_backward(st.ts, 1e-10)
    if diff:
        return diff
    for name in ("w", "p"):
        x, t = getattr(st, name)
        gx = np.zeros(x.shape) if x.grad is None else x.grad.numpy()
        gt = np.zeros(tuple(t.shape)) if t.grad is None else t.grad.numpy()
        if raised[0] is None and not close(gx, gt, 1e-10):
            return f"{name}.grad differs: xad {gx} torch {gt}"
    return None


def test_views_versions_and_writes_agree_with_torch(xb):
    check_programs(xb.name, lambda seed: run_program(seed, SHAPES, State, _step, _finish),
                   N, SEED)


@pytest.mark.parametrize("how", ["method", "function", "linalg", "planes", "transposed"])
def test_a_write_through_a_diagonal_reaches_the_matrix(xb, how):
    """``diagonal`` is a view, as PyTorch's: a change through it reaches the matrix and
    counts in its version (it was a copy, and the change was lost without an error)."""
    def make(lib):
        m = xad if lib == "xad" else torch
        x = m.tensor(np.arange(24.0).reshape(2, 3, 4))
        d = {"method": lambda: x.diagonal(1, -2, -1),
             "function": lambda: m.diagonal(x, -1, 1, 2),
             "linalg": lambda: m.linalg.diagonal(x, offset=2),
             "planes": lambda: x.diagonal(0, 0, 2),
             "transposed": lambda: x.transpose(1, 2).diagonal(1, 1, 2)}[how]()
        d.mul_(10)
        d[..., 0] = -1
        return x, d
    (xx, dx), (xt, dt) = make("xad"), make("torch")
    np.testing.assert_array_equal(xx.numpy(), xt.numpy())
    np.testing.assert_array_equal(dx.numpy(), dt.numpy())
    assert (xx._version, dx._version) == (xt._version, dt._version)


def test_a_diagonal_in_a_graph(xb):
    """Through a diagonal of a tensor in a graph: the gradient PyTorch gives, and a saved
    tensor changed through it raises at backward."""
    def run(lib):
        m = xad if lib == "xad" else torch
        w = m.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
        y = w * 1
        y.diagonal().mul_(3)
        (y * y).sum().backward()
        z = w.exp()
        z.diagonal(1).add_(1)
        with pytest.raises(RuntimeError):
            z.sum().backward()
        return w.grad.numpy()
    np.testing.assert_array_equal(run("xad"), run("torch"))


@pytest.mark.parametrize("key", ["ints", "mask", "row_of_expanded"])
def test_an_index_write_into_a_view_whose_elements_do_not_repeat(xb, key):
    """An integer or bool index written into a diagonal, or into a row of an expanded
    tensor (no element repeats there), writes the base, as PyTorch's; xad raised as for an
    expanded view whose elements repeat."""
    def run(lib):
        m = xad if lib == "xad" else torch
        if key == "row_of_expanded":
            b = m.zeros(3, dtype=m.float64)
            v = b.expand(2, 3)[1]
        else:
            b = m.tensor(np.arange(9.0).reshape(3, 3))
            v = b.diagonal()
        idx = m.tensor([True, False, True]) if key == "mask" else m.tensor([0, 2])
        v[idx] = -1.0
        return b.numpy(), b._version
    (bx, vx), (bt, vt) = run("xad"), run("torch")
    np.testing.assert_array_equal(bx, bt)
    assert vx == vt
