"""A differential fuzzer for ``xad.compile`` (issue 24): random functions, each run compiled
in one world and eagerly in an identical other one over several calls with varied inputs,
compared bit for bit: results, arguments (changed in place), parameters and their ``.grad``,
and which calls raise.

The functions mix elementwise arithmetic with data-dependent indices (argsort, argmax,
nonzero, unique, boolean masks), Python-scalar arguments (-0.0, NaN, int vs float), host
(NumPy) array arguments, aliased arguments, in-place changes of arguments and of views of
them, ``.data``/``detach()``, ``backward()`` into parameters, a data-dependent count read
only by Python, Python numbers read from a global, a closure cell, a dict entry and an
attribute of a plain object (which the caller changes between calls), and results that are
an argument, one tensor twice or a view of an argument (versions and identities are
compared too); between calls, hooks are registered and results changed by the caller
(everything compared again after that). A compiled call may run eagerly (with its warning);
it may never differ.

``XAD_FUZZ_N`` sets the programs per backend (default 12; the long run: 10000).
"""

from __future__ import annotations

import math
import os
import random
import warnings
import zlib

import numpy as np
import pytest
from check_mode import skip_in_check_mode

import xad

N = int(os.environ.get("XAD_FUZZ_N", "12"))
BACKENDS = ("numpy", "array_api_strict", "jax", "cupy-sim")  # their seeds, kept; others by name
SCALARS = (0.0, -0.0, 1, 1.0, 2.5, -3, float("nan"), float("inf"), 0.5)
STEPS = ("binary", "binary", "unary", "scalar", "const", "argsort", "argmax", "nonzero",
         "mask", "unique", "inplace_arg", "inplace_view", "detach", "data", "host", "count",
         "global", "closure", "dict", "attr")
KNOBS = ("global", "closure", "dict", "attr")  # Python values the caller changes
_KNOB = 2.0  # the "global" step's value: one for both worlds


class _Holder:
    """A plain object whose attribute ``k`` the "attr" step reads."""

    def __init__(self, k: float) -> None:
        self.k = k


class Program:
    """A random function of ``n`` tensor arguments (shape (4,), float64), a Python scalar
    and a host array, over two parameters."""

    def __init__(self, rng: random.Random) -> None:
        self.n = rng.randint(1, 3)
        self.steps = [(rng.choice(STEPS), rng.random(), rng.random(), rng.random())
                      for _ in range(rng.randint(2, 7))]
        self.backward = rng.random() < 0.5
        self.n_out = rng.randint(1, 2)
        self.extra = rng.choice(("", "", "arg", "twice", "view"))  # results with identities

    def function(self, params: list) -> tuple:
        """The world's function, and a setter of the Python values it reads (a closure
        cell, a dict entry, an attribute; the global is the module's)."""
        c, d, o = 2.0, {"k": 2.0, "other": 0}, _Holder(2.0)

        def fn(*args):
            *ts, s, h = args
            vals = [*ts, *params]
            knobs = {"closure": c, "dict": d["k"], "attr": o.k}

            def pick(u):
                return vals[int(u * len(vals))]

            for kind, u, v, w in self.steps:
                vals.append(_step(kind, pick(u), pick(v), ts[int(w * len(ts))],
                                  knobs.get(kind, s), h, params))
            outs = [v.detach() * 1 for v in vals[-self.n_out:]]
            if self.extra:  # an argument itself, a result twice, a view of an argument
                outs.append(ts[0] if self.extra == "arg" else outs[0] if self.extra == "twice"
                            else ts[0][1:3])
            if self.backward:
                loss = sum((v * v).sum() for v in vals if v.requires_grad)
                if isinstance(loss, xad.Tensor):
                    loss.backward()
                outs += [p.grad.detach() * 1 for p in params if p.grad is not None]
            return tuple(outs)

        def knob(kind, value):
            nonlocal c
            if kind == "closure":
                c = value
            d["other"] += 1  # an entry fn does not read: no new recording needed
            d["k"] = value if kind == "dict" else d["k"]
            o.k = value if kind == "attr" else o.k
        return fn, knob


def _step(kind, x, y, arg, s, h, params):
    """One step: a new value from ``x``, ``y`` (or an in-place change of argument ``arg``)."""
    if kind == "binary":
        return (x + y) * 0.5 - x * y
    if kind == "unary":
        return xad.tanh(x) + xad.abs(y)
    if kind in ("scalar", "closure", "dict", "attr"):  # s: the argument or the knob read
        return x * s + y
    if kind == "global":
        return x * _KNOB + y
    if kind == "const":
        return x + xad.full((4,), 1.25, dtype=xad.float64)
    if kind == "argsort":
        return xad.take(x, xad.argsort(y.detach(), stable=True))
    if kind == "argmax":
        return x * xad.take(y, xad.reshape(xad.argmax(y.detach()), (1,)))
    if kind == "nonzero":
        return x + xad.take(y, xad.nonzero(y.detach() > 0)[0]).sum()
    if kind == "mask":
        return x + y[y.detach() > 0].sum()
    if kind == "unique":
        return x + xad.unique_values(xad.round(y.detach())).sum()
    if kind == "inplace_arg":
        arg += y.detach()
        return arg * 1
    if kind == "inplace_view":
        arg[1:3] *= 2.0
        return x + arg
    if kind == "count":  # a data-dependent count read by Python only
        return x * y[y.detach() > 0].shape[0]
    if kind == "detach":
        return x.detach() * 2 + y
    if kind == "data":
        return params[0].data * 1.5 + x
    return x * float(h.sum()) if h is not None else x  # a host array's values


def _world(seed: int) -> list:
    g = np.random.default_rng(seed)
    return [xad.tensor(g.standard_normal(4), dtype=xad.float64, requires_grad=True)
            for _ in range(2)]


def _inputs(rng: random.Random, n: int, host: bool, prev: tuple | None = None) -> tuple:
    """One call's inputs, as a recipe both worlds turn into their own tensors; often with
    ``prev``'s aliasing, scalar and host array (the same guards: a replay)."""
    values = [[round(rng.uniform(-3, 3), 1) for _ in range(4)] for _ in range(n)]
    alias = [rng.randrange(i + 1) if rng.random() < 0.3 else i for i in range(n)]
    h = [rng.choice((0.5, 1.0, -2.0))] * 2 if host else None
    if prev is not None and rng.random() < 0.6:
        return values, prev[1], prev[2], prev[3]
    return values, alias, rng.choice(SCALARS), h


def _make(recipe: tuple) -> tuple:
    values, alias, s, h = recipe
    ts: list = []
    for i, v in enumerate(values):
        ts.append(ts[alias[i]] if alias[i] != i else xad.tensor(v, dtype=xad.float64))
    return (*ts, s, None if h is None else np.asarray(h))


def _state(args: tuple, params: list, outs) -> list:
    """Every array a call could have changed or made, as bytes (bit for bit), and the
    arguments' and parameters' versions."""
    seen = [t for t in args if isinstance(t, xad.Tensor)] + params
    versions = [t._version for t in seen]
    seen += [p.grad for p in params if p.grad is not None]
    seen += list(outs) if isinstance(outs, tuple) else [outs]
    return [(t.shape, str(t.dtype), t.numpy().tobytes()) for t in seen] + versions


def _call(fn, recipe, params):
    args = _make(recipe)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outs = fn(*args)
    except Exception as e:  # noqa: BLE001 (which calls raise is compared)
        return ("raised", type(e).__name__)
    return _state(args, params, outs), outs, args


def run_program(seed: int, host: bool, check: bool | None = None) -> str | None:
    """Run program ``seed`` compiled (``check``: also checked against eager mode at each
    replay, raising on a difference) and eagerly; the first difference, or None."""
    rng = random.Random(seed)
    prog = Program(rng)
    global _KNOB
    pa, pb = _world(seed), _world(seed)
    (compiled, knob_a), (eager, knob_b) = prog.function(pa), prog.function(pb)
    compiled = xad.compile(compiled, check=check)
    _KNOB = 2.0
    recipe = None
    for call in range(4):
        used = [k for k, *_ in prog.steps if k in KNOBS] or list(KNOBS)
        if call and rng.random() < 0.7:  # the caller changes a Python value fn reads
            kind, value = rng.choice(used), rng.choice(SCALARS)
            if kind == "global":
                _KNOB = value
            knob_a(kind, value)
            knob_b(kind, value)
        recipe = _inputs(rng, prog.n, host, recipe)
        a, b = _call(compiled, recipe, pa), _call(eager, recipe, pb)
        if a[0] != b[0]:
            return f"program {seed}, call {call}: {prog.steps} {recipe}: {a[0]} != {b[0]}"
        if a[0] != "raised" and rng.random() < 0.5:  # the caller changes a result
            for outs in (a[1], b[1]):
                out = outs[-1]
                out += 1.0
            after = [_state(r[2], p, r[1]) for r, p in ((a, pa), (b, pb))]
            if after[0] != after[1]:  # an argument or another result it aliases changed
                return f"program {seed}, call {call}: after the caller's change: {prog.steps}"
        if rng.random() < 0.3:  # a hook registered between calls
            for p in (pa[0], pb[0]):
                p.register_hook(lambda g: g * 2)
    return None


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("check", [None, True], ids=["", "check"])
def test_compiled_equals_eager_bit_for_bit(xb, request, check):
    """``check``: the same programs under xad.compile's check mode (``XAD_COMPILE_CHECK=1``,
    eager beside each replay), which must neither raise nor change a result."""
    name = request.node.callspec.params["xb"]  # each backend its own programs
    base = 1000 * (BACKENDS.index(name) if name in BACKENDS else 4 + zlib.crc32(name.encode()) % 96)
    n = N
    diffs = [d for seed in range(base, base + n)
             if (d := run_program(seed, name == "numpy", check)) is not None]
    assert not diffs, f"{len(diffs)} of {n} programs differ; first: {diffs[0]}"


@skip_in_check_mode("the check itself raises at the planted difference, before the fuzzer's "
                    "comparison (test_compile_sound.py tests that error)")
def test_the_fuzzer_finds_a_wrong_replay():
    """The comparison is sharp: a replay that ignores a Python value changed between
    calls (a closure the guards cannot see) is reported."""
    with xad.use_backend("numpy"):
        k, i = [1.0] * 65, 64  # read past pyguards.WHOLE by a computed index: not guarded
        fn = lambda x: (x * k[i],)  # noqa: E731
        f = xad.compile(fn)
        x = xad.ones(4, dtype=xad.float64)
        assert _state((x,), [], f(x)) == _state((x,), [], fn(x))
        k[64] = math.pi
        assert _state((x,), [], f(x)) != _state((x,), [], fn(x))
