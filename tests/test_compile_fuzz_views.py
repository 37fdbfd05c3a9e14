"""A differential fuzzer of xad.compile over views: random functions that take views of
their arguments and of tensors they make (slices, ``T``, ``reshape``, ``detach()``,
``.data``, ``diagonal``, ``unsqueeze``, views of views), change some in place, and return
a random selection of them; the caller then writes through one result. Compiled (one
world) and eager (an identical one) must agree bit for bit on every result, argument and
version counter, after each call and after the caller's write, over four calls (recorded,
replayed...). ``XAD_FUZZ_N`` (and ``XAD_FUZZ_SEED``) for the long run.

Before: a result that is a view of a later result, of a view of an argument, or one of
several views of a tensor the call made and did not return came back unrelated (other
values on JAX after the caller's write, versions that did not move)."""

from __future__ import annotations

import os
import random
import warnings

import numpy as np

import xad

N = int(os.environ.get("XAD_FUZZ_N", "12"))
SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))
VIEWS = ("row", "col", "T", "reshape", "detach", "data", "diagonal", "unsqueeze", "flip")


def _view(t: xad.Tensor, kind: str) -> xad.Tensor:
    if kind == "row":
        return t[1:] if t.ndim else t
    if kind == "col":
        return t[..., ::2]
    if kind == "T":
        return t.T if t.ndim == 2 else t
    if kind == "reshape":
        return t.reshape(-1)
    if kind == "detach":
        return t.detach()
    if kind == "data":
        return t.data
    if kind == "diagonal":
        return t.diagonal() if t.ndim >= 2 else t
    if kind == "unsqueeze":
        return t[None]
    return t.flip(0) if t.ndim else t  # a copy


def _program(rng: random.Random) -> list:
    """Steps over a pool that starts with the two arguments: ('view', i, kind),
    ('op', i, j) (a new tensor), ('change', i, c) (in place, under no_grad); then the
    indices returned and the caller's write (result index, value)."""
    steps, n = [], 2
    for _ in range(rng.randint(2, 7)):
        r = rng.random()
        if r < 0.45:
            steps.append(("view", rng.randrange(n), rng.choice(VIEWS)))
            n += 1
        elif r < 0.75:
            steps.append(("op", rng.randrange(n), rng.randrange(n)))
            n += 1
        else:
            steps.append(("change", rng.randrange(n), round(rng.uniform(0.5, 2), 2)))
    outs = rng.sample(range(n), rng.randint(1, min(n, 4)))
    return [steps, outs, (rng.randrange(len(outs)), round(rng.uniform(-3, 3), 2))]


def _function(steps: list, outs: list):
    def fn(a, b):
        pool = [a, b]
        for kind, i, x in steps:
            if kind == "view":
                pool.append(_view(pool[i], x))
            elif kind == "op":
                p, q = pool[i], pool[x]
                pool.append(p * 2.0 + (q.sum() if q.shape != p.shape else q))
            else:
                with xad.no_grad():
                    pool[i].mul_(x)
        return tuple(pool[k] for k in outs)
    return fn


def _state(outs: tuple, args: tuple) -> list:
    return [v for t in (*outs, *args) for v in (t.numpy().copy(), t._version)]


def _run(seed: int) -> str | None:
    rng = random.Random(seed)
    steps, outs, (w, value) = _program(rng)
    fn = _function(steps, outs)
    worlds = []
    for compiled in (True, False):
        f = xad.compile(fn) if compiled else fn
        got = []
        for k in range(4):
            args = (xad.tensor(np.arange(6.0).reshape(2, 3) + k, dtype=xad.float64),
                    xad.tensor(np.ones((2, 3)) * (k + 1), dtype=xad.float64))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = f(*args)
                got += _state(res, args)
                res[w][...] = value
                got += _state(res, args)
            except Exception as e:  # noqa: BLE001 -- both worlds must raise alike
                got.append(f"raised {type(e).__name__}")
        worlds.append(got)
    for j, (a, b) in enumerate(zip(*worlds)):
        arrays = isinstance(a, np.ndarray), isinstance(b, np.ndarray)
        if arrays[0] != arrays[1] or not (np.array_equal(a, b) if arrays[0] else a == b):
            return f"seed {seed}: item {j}: compiled {a!r}, eager {b!r}\n  {steps} -> {outs}, " \
                   f"write result {w}"
    return None


def test_compiled_views_agree_with_eager(xb):
    n = N if xb.name != "jax" or "XAD_FUZZ_N" in os.environ else 4
    failures = [d for k in range(n) if (d := _run(SEED * 1_000_003 + k)) is not None]
    assert not failures, "\n".join(failures[:5]) + f"\n({len(failures)} of {n})"
