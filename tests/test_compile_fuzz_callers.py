"""A differential fuzzer of xad.compile over how the caller calls: each call wires the
arguments anew from a tensor the caller keeps (the same tensor twice, ``x`` and ``x.T``,
``x[:, :]``, ``.data``, ``detach()``, a Fortran-ordered or sliced copy, a broadcast view, a
fresh tensor, a leaf that requires grad: the call then returns its gradient), passes a
Python number whose type changes (``2``, ``2.0``, ``True``, ``-0.0``) by position or by
keyword or leaves the default, and holds views of its tensor across the call; the function
computes from its arguments, writes some of them in place (under ``no_grad``; also
``.data = ...``), and returns a random selection (an argument as it is, one result twice,
a dict). Compiled (one world; on CuPy also with ``cuda_graphs=True``) and eager (an
identical one) must agree bit for bit on every result, argument, held view and version
counter, after each of six calls (about half of them replays) and again after the caller
writes through its views, and raise alike. ``XAD_FUZZ_N`` (and ``XAD_FUZZ_SEED``) for the
long run.

Before: on JAX a program recorded for unrelated arguments read ``x.T`` before the call
wrote ``x``, one recorded for ``x[0]`` replayed for ``x[1]``, and the caller's views of a
written argument kept the old values; where arrays have no strides a broadcast argument
replayed a program for a plain view; with CUDA graphs a written argument was left holding
the graph's buffer; on JAX a replayed ``x.data = ...`` kept the caller's views tied to ``x``
and lost the writes through an argument view of ``x`` (tests/test_compile_callers.py)."""

from __future__ import annotations

import os
import random
import warnings

import numpy as np

import xad

N = int(os.environ.get("XAD_FUZZ_N", "6"))
SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))
WIRES = ("base", "T", "rows", "detach", "fresh", "fortran", "slice", "expand", "data", "leaf")
NUMBERS = (2, 2.0, True, -0.0, 0.5, 3)
CALLS = 6


def _wire(base: xad.Tensor, kind: str, k: int) -> xad.Tensor:
    """One argument made from the caller's ``base`` (3x3): a view of it, or a new tensor."""
    if kind == "base":
        return base
    if kind == "T":
        return base.T
    if kind == "rows":
        return base[:, :]
    if kind == "detach":
        return base.detach()
    if kind == "data":
        return base.data
    if kind == "expand":
        return xad.broadcast_to(base[0:1], (3, 3))
    a = np.arange(9.0).reshape(3, 3) * 0.5 - k
    if kind == "leaf":
        return xad.tensor(a, dtype=xad.float64, requires_grad=True)
    if kind == "fortran":
        return xad.tensor(np.asfortranarray(a), dtype=xad.float64)
    if kind == "slice":
        return xad.tensor(np.arange(18.0).reshape(3, 6) - k, dtype=xad.float64)[:, ::2]
    return xad.tensor(a, dtype=xad.float64)


def _program(rng: random.Random) -> tuple:
    """Steps over a pool that starts with the three arguments: ('op', i, j, kind),
    ('write', i, j, kind) (argument i changed in place from pool value j); the returned
    pool indices and their container."""
    steps, n = [], 3
    for _ in range(rng.randint(2, 6)):
        if rng.random() < 0.4:
            steps.append(("write", rng.randrange(3), rng.randrange(n),
                          rng.choice(("add", "mul", "row", "copy", "data"))))
        else:
            steps.append(("op", rng.randrange(n), rng.randrange(n),
                          rng.choice(("mix", "tanh", "sum", "T"))))
            n += 1
    outs = [rng.randrange(n) for _ in range(rng.randint(1, 3))]
    return steps, outs, rng.choice(("tuple", "dict", "one"))


def _function(steps: list, outs: list, form: str):
    def fn(a, b, c, s=0.25):
        pool = [a, b, c]
        for kind, i, j, how in steps:
            p, q = pool[i], pool[j]
            if kind == "op":
                pool.append(p * s + q if how == "mix" else xad.tanh(p) - q if how == "tanh"
                            else p.sum(0) * s + q if how == "sum" else p.T * q)
                continue
            with xad.no_grad():
                if how == "add":
                    p.add_(q * 0.5)
                elif how == "mul":
                    p.mul_(s)
                elif how == "row":
                    p[1] = q[0] * s
                elif how == "data":
                    p.data = q * s
                else:
                    p.copy_(q.T)
        got = [pool[k] for k in outs]
        if a.requires_grad:  # an input gradient (the results detached: a replay's are)
            sum((t * t).sum() for t in pool[3:] + [a]).backward()
            got = [t.detach() for t in got] + [a.grad]
        return got[0] if form == "one" else {str(k): v for k, v in enumerate(got)} \
            if form == "dict" else tuple(got)
    return fn


def _calls(rng: random.Random) -> list:
    """Per call: the wiring of the three arguments and how the number is passed."""
    wiring = [rng.choice(WIRES) for _ in range(3)]
    s, how = rng.choice(NUMBERS), rng.choice(("pos", "kw", "default"))
    out = []
    for _ in range(CALLS):  # most calls keep the last wiring and number: they replay
        if rng.random() < 0.25:
            wiring[rng.randrange(3)] = rng.choice(WIRES)
        if rng.random() < 0.25:
            s, how = rng.choice(NUMBERS), rng.choice(("pos", "kw", "default"))
        out.append((list(wiring), s, how))
    return out


def _state(res, tensors: list) -> list:
    res = list(res.values()) if isinstance(res, dict) else res
    res = list(res) if isinstance(res, tuple) else [res]
    ids = {id(t): i for i, t in enumerate(tensors)}
    return [v for t in (*res, *tensors) for v in (t.numpy().copy(), t._version)] + \
        [ids.get(id(t)) for t in res]


def _world(fn, calls: list, compile_) -> list:
    f = compile_(fn) if compile_ is not None else fn
    got: list = []
    for k, (wiring, s, how) in enumerate(calls):
        base = xad.tensor(np.arange(9.0).reshape(3, 3) + k, dtype=xad.float64)
        args = [_wire(base, w, k) for w in wiring]
        held = [base, base[0], base.T, base.detach()[1:], base.data]
        kw = {"s": s} if how == "kw" else {}
        pos = (s,) if how == "pos" else ()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = f(*args, *pos, **kw)
            got += _state(res, [*args, *held])
            with xad.no_grad():  # the caller writes through what it holds
                held[1].mul_(2.0)
                base.add_(1.0)
            got += [v for t in (*args, *held) for v in (t.numpy().copy(), t._version)]
        except Exception as e:  # noqa: BLE001 -- both worlds must raise alike
            got.append(f"raised {type(e).__name__}")
    return got


def _run(seed: int, compiler) -> str | None:
    rng = random.Random(seed)
    steps, outs, form = _program(rng)
    calls = _calls(rng)
    fn = _function(steps, outs, form)
    worlds = [_world(fn, calls, compiler), _world(fn, calls, None)]
    for j, (a, b) in enumerate(zip(*worlds)):
        arrays = isinstance(a, np.ndarray), isinstance(b, np.ndarray)
        if arrays[0] != arrays[1] or not (np.array_equal(a, b) if arrays[0] else a == b):
            return f"seed {seed}: item {j}: compiled {a!r}, eager {b!r}\n  {steps} -> " \
                   f"{outs} {form}; calls {calls}"
    if len(worlds[0]) != len(worlds[1]):
        return f"seed {seed}: {len(worlds[0])} items compiled, {len(worlds[1])} eager"
    return None


def test_compiled_calls_agree_with_eager(xb):
    compilers = [xad.compile]
    if xb.name in ("cupy", "cupy-sim"):
        compilers.append(lambda f: xad.compile(f, cuda_graphs=True))
    n = N if xb.name != "jax" or "XAD_FUZZ_N" in os.environ else 3
    failures = [d for k in range(n) for c in compilers
                if (d := _run(SEED * 1_000_003 + k, c)) is not None]
    assert not failures, "\n".join(failures[:5]) + f"\n({len(failures)} of {n})"
