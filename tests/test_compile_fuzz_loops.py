"""A differential fuzzer of compiled training loops: a random model (Linear, BatchNorm,
Dropout), every optimiser with random options (momentum, Nesterov, weight decay, amsgrad,
maximize, capturable, ...), a scheduler, ``GradScaler`` or ``clip_grad_norm_``, and a step
that calls a function transform, ``checkpoint``, a custom ``Function`` or a tensor hook
inside, with keyword-only and ``*args`` arguments, run compiled in one world and eagerly in
an identical one while the caller changes the world between calls: a scheduler's step,
``zero_grad(set_to_none=...)``, gradient accumulation (a call that does not step),
``train()``/``eval()``, a parameter frozen or its data replaced, ``add_param_group``,
``load_state_dict`` of an earlier state, ``manual_seed``, a global the step reads, an
infinite gradient (a skipped ``GradScaler`` step) and a call that raises (a target of the
wrong shape, or a check that fails on the same guards). Results, raised errors,
parameters, gradients, buffers, every optimiser state entry and the random stream after
each call must agree (bit for bit, but within 1e-9 where the optimiser's numbers are on
the device: ``capturable``, CUDA graphs). ``XAD_FUZZ_N`` (and ``XAD_FUZZ_SEED``)
for the long run."""

from __future__ import annotations

import copy
import os
import random
import warnings

import numpy as np
import pytest

import xad
from xad import nn

N = int(os.environ.get("XAD_FUZZ_N", "3"))
SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))
CALLS = 8
OPTIMISERS = {
    "SGD": lambda r: dict(lr=0.1, momentum=r.choice((0.0, 0.9)), nesterov=False,
                          weight_decay=r.choice((0.0, 0.01)), maximize=r.random() < 0.2),
    "SGDn": lambda r: dict(lr=0.1, momentum=0.9, nesterov=True, dampening=0.0),
    "Adam": lambda r: dict(lr=0.05, amsgrad=r.random() < 0.5, maximize=r.random() < 0.2,
                           weight_decay=r.choice((0.0, 0.01)), capturable=r.random() < 0.3),
    "AdamW": lambda r: dict(lr=0.05, amsgrad=r.random() < 0.5, capturable=r.random() < 0.3),
    "RMSprop": lambda r: dict(lr=0.01, momentum=r.choice((0.0, 0.5)),
                              centered=r.random() < 0.5, weight_decay=r.choice((0.0, 0.01))),
    "Adagrad": lambda r: dict(lr=0.1, lr_decay=r.choice((0.0, 0.01)),
                              weight_decay=r.choice((0.0, 0.01))),
    "Adadelta": lambda r: dict(lr=1.0, weight_decay=r.choice((0.0, 0.01))),
    "Adamax": lambda r: dict(lr=0.01, weight_decay=r.choice((0.0, 0.01))),
    "NAdam": lambda r: dict(lr=0.01, decoupled_weight_decay=r.random() < 0.5,
                            weight_decay=r.choice((0.0, 0.01))),
    "RAdam": lambda r: dict(lr=0.01, weight_decay=r.choice((0.0, 0.01))),
    "ASGD": lambda r: dict(lr=0.01, t0=r.choice((1.0, 1e6))),
    "Rprop": lambda r: dict(lr=0.01, maximize=r.random() < 0.2),
}
INSIDE = ("plain", "grad", "vmap", "jvp", "checkpoint", "function", "hook", "no_grad")
CHANGES = ("sched", "zero_none", "zero_keep", "accumulate", "train", "eval", "freeze",
           "thaw", "data", "add_group", "save", "load", "seed", "global", "inf", "raise",
           "fail", "nothing")
SETTINGS = {"scale": 1.0, "fail": False}  # globals the step reads


class _Twice(xad.Function):
    """A custom Function whose backward is not forward's derivative (2x, not 1x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2.0 + x * 0.0


def _inside(kind: str, h: xad.Tensor, w: xad.Tensor) -> xad.Tensor:
    """One of the function transforms, ``checkpoint``, a custom Function, a hook, a
    ``no_grad`` block, applied to the hidden activations ``h``."""
    if kind == "grad":  # the gradient of a function of h, as a feature (and a graph)
        return h + xad.grad(lambda v: (v.sin() * w.detach()).sum())(h.detach())
    if kind == "vmap":
        return h * xad.vmap(lambda r: (r * r).sum())(h.detach()).reshape(-1, 1)
    if kind == "jvp":
        _, t = xad.jvp(lambda a: a.tanh(), (h.detach(),), (xad.ones_like(h),))
        return h * t
    if kind == "checkpoint":
        return xad.checkpoint(lambda a: nn.functional.dropout(a.tanh(), 0.3), h)
    if kind == "function":
        return _Twice.apply(h)
    if kind == "hook":
        if h.requires_grad:
            h.register_hook(lambda g: g * 0.5)
        return h
    if kind == "no_grad":
        with xad.no_grad():
            m = h.mean()
        with xad.enable_grad():
            return h - m
    return h


def _world(cfg: dict, compiled: bool) -> dict:
    xad.manual_seed(cfg["seed"])
    layers = [nn.Linear(4, 6)] + ([nn.BatchNorm1d(6)] if cfg["norm"] else [])
    body = nn.Sequential(*layers).double()
    head = nn.Sequential(nn.Dropout(cfg["p"]), nn.Tanh(), nn.Linear(6, 2)).double()
    m = nn.Sequential(body, head)
    extra = nn.Parameter(xad.tensor([0.5, -0.25], dtype=xad.float64))
    name = cfg["opt"]
    opt = getattr(xad.optim, name.rstrip("n"))(m.parameters(), **cfg["options"])
    sched = xad.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5)
    scaler = xad.amp.GradScaler(init_scale=8.0, growth_interval=2,
                                enabled=cfg["seed"] != 1) if cfg["scaler"] else None
    w = xad.tensor(np.linspace(-1.0, 1.0, 6))

    def step(x, *rest, stepping=True, clip=cfg["clip"]):
        y = rest[0]
        h = _inside(cfg["inside"], body(x), w)
        loss = ((head(h) + extra - y) ** 2).mean() * SETTINGS["scale"]
        for r in rest[1:]:  # *args of any length
            loss = loss + r.sum() * 0.0
        (loss if scaler is None else scaler.scale(loss)).backward()
        if SETTINGS["fail"]:  # (a check of the caller's, on the same guards)
            raise ValueError("a failing step")
        if stepping:
            if scaler is not None:
                scaler.unscale_(opt)
            if clip:
                nn.utils.clip_grad_norm_(opt.param_groups[0]["params"], 0.5)
            if scaler is None:
                opt.step()
            else:
                scaler.step(opt)
                scaler.update()
            if cfg["zero_inside"]:
                opt.zero_grad()
        return loss.detach()
    f = xad.compile(step, cuda_graphs=cfg["graphs"]) if compiled else step
    return {"m": m, "extra": extra, "opt": opt, "sched": sched, "scaler": scaler, "f": f,
            "saved": None}


def _change(kind: str, w: dict, k: int) -> None:
    m, opt = w["m"], w["opt"]
    if kind == "sched":
        w["sched"].step()
    elif kind in ("zero_none", "zero_keep"):
        opt.zero_grad(set_to_none=kind == "zero_none")
    elif kind in ("train", "eval"):
        getattr(m, kind)()
    elif kind in ("freeze", "thaw"):
        m[0][0].bias.requires_grad_(kind == "thaw")
    elif kind == "data":
        m[1][-1].weight.data = m[1][-1].weight.data * 0.5
    elif kind == "add_group" and len(opt.param_groups) == 1:
        opt.add_param_group({"params": [w["extra"]], "lr": 0.02})
    elif kind == "save":
        w["saved"] = copy.deepcopy(opt.state_dict())
    elif kind == "load" and w["saved"] is not None and \
            len(w["saved"]["param_groups"]) == len(opt.param_groups):
        opt.load_state_dict(w["saved"])
    elif kind == "seed":
        xad.manual_seed(k)
    elif kind == "global":
        SETTINGS["scale"] = 1.0 + k / 4


def _inputs(kind: str, k: int) -> tuple:
    g = np.random.default_rng(k)
    x = g.standard_normal((5, 4))
    if kind == "inf":
        x[1, 2] = np.inf
    y = g.standard_normal((5, 3 if kind == "raise" else 2))
    rest = (xad.tensor(g.standard_normal(3)),) * (k // 4)
    return (xad.tensor(x), xad.tensor(y), *rest)


def _np(t: xad.Tensor) -> np.ndarray:
    return np.array(t.numpy())  # a copy: the host array may be the tensor's own


def _state(w: dict) -> list:
    out: list = []
    params = [*w["m"].parameters(), w["extra"]]
    for t in (*params, *w["m"].buffers()):
        out += [_np(t), t._version, t.requires_grad, None if t.grad is None else _np(t.grad)]
    for st in w["opt"].state_dict()["state"].values():
        out += [_np(v) if isinstance(v, xad.Tensor) and v.ndim else float(v)
                for _, v in sorted(st.items())]  # a count is a 0-d tensor on a device path
    out += [[g["lr"] for g in w["opt"].param_groups], w["sched"].last_epoch]
    if w["scaler"] is not None:
        out.append(w["scaler"].get_scale())
    return out + [_np(xad.rand(2, dtype=xad.float64))]  # the stream after the call


def _call(w: dict, kind: str, k: int) -> list:
    args = _inputs(kind, k)
    SETTINGS["fail"] = kind == "fail"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = [_np(w["f"](*args, stepping=kind != "accumulate"))]
    except Exception as e:  # noqa: BLE001 (compared with eager mode's)
        out = [type(e).__name__]
    return out + [_np(a) for a in args]


def _same(a, b, close: bool) -> bool:
    """Equal, bit for bit; or, where the optimiser's numbers are on the device (``close``:
    within an ulp of the host's), within 1e-9: a parameter whose gradient is rounding noise
    (a bias before BatchNorm) takes an Adam step of ``lr`` in the noise's direction, which
    turns an ulp into ~1e-11."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if close:
            return a.shape == b.shape and np.allclose(a, b, rtol=1e-9, atol=1e-9,
                                                      equal_nan=True)
        return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, close) for x, y in zip(a, b))
    if close and type(a) is float and type(b) is float:
        return bool(np.isclose(a, b, rtol=1e-9, atol=1e-9, equal_nan=True))
    return type(a) is type(b) and (a == b or a != a and b != b)


def _config(seed: int) -> tuple[dict, list]:
    r = random.Random(seed)
    name = r.choice(sorted(OPTIMISERS))
    cfg = {"seed": seed % 5, "norm": r.random() < 0.5, "p": r.choice((0.0, 0.5)),
           "opt": name, "options": OPTIMISERS[name](r), "scaler": r.random() < 0.3,
           "clip": r.random() < 0.3, "inside": r.choice(INSIDE),
           "zero_inside": r.random() < 0.5, "graphs": r.random() < 0.3}
    return cfg, [r.choice(CHANGES) if r.random() < 0.5 else "nothing" for _ in range(CALLS)]


def _run(seed: int) -> str | None:
    cfg, changes = _config(seed)
    worlds = []
    for compiled in (True, False):
        SETTINGS["scale"] = 1.0
        w = _world(cfg, compiled)
        got = []
        for k, kind in enumerate(changes):
            got.append(_call(w, kind, k) + _state(w))
            _change(kind, w, k)
        worlds.append(got)
    close = cfg["options"].get("capturable", False) or cfg["graphs"]
    for k, (a, b) in enumerate(zip(*worlds)):
        for j, (x, y) in enumerate(zip(a, b)):
            if not _same(x, y, close):
                return (f"seed {seed}: call {k} item {j}: compiled {x!r}, eager {y!r}\n"
                        f"  {cfg} {changes}")
    return None


def test_compiled_training_loops_agree_with_eager(xb):
    failures = [d for k in range(N) if (d := _run(SEED * 1_000_003 + k)) is not None]
    assert not failures, "\n".join(failures[:5]) + f"\n({len(failures)} of {N})"


# ----- regressions ----------------------------------------------------------------------
@pytest.mark.parametrize("which", ["rand", "randn", "randint", "dropout", "nested"])
def test_a_draw_per_example_inside_vmap_replays_one_per_example(xb, which):
    """``vmap(randomness="different")`` draws one array per example (the batch's shape
    first): a replay drew the logical shape, one draw broadcast to every example, and
    consumed fewer numbers of the stream (the next eager draw differed)."""
    def per_example(a):
        if which == "rand":
            return a + xad.rand(3, dtype=a.dtype)
        if which == "randn":
            return a * xad.randn(3, dtype=a.dtype)
        if which == "randint":
            return a + xad.randint(0, 1000, (3,)).to(a.dtype)
        return nn.functional.dropout(a + 1.0, 0.5)

    def fn(x):
        inner = xad.vmap(per_example, randomness="different")
        if which == "nested":
            return xad.vmap(inner, randomness="different")(x.reshape(2, 2, 3))
        return inner(x)

    got = []
    for f in (fn, xad.compile(fn), xad.compile(fn, cuda_graphs=True)):  # (CuPy's flag)
        xad.manual_seed(0)
        got.append([np.array(a.numpy()) for k in range(4)
                    for a in (f(xad.zeros(4, 3, dtype=xad.float64)),
                              xad.rand(2, dtype=xad.float64))])
    for a, b, c in zip(*got):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("how", ["append", "pop", "dict", "replace"])
def test_a_call_that_changes_the_lists_it_was_passed_runs_eagerly(xb, how):
    """``xs.append(y)`` on a list argument: a replay ran the kernels but not the append,
    so the caller's list stayed as it was (eager mode's grew), silently."""
    def fn(xs, d):
        y = xs[0] * 2.0
        if how == "append":
            xs.append(y)
        elif how == "pop":
            xs.pop()
        elif how == "dict":
            d["y"] = y
        else:
            xs[-1] = y
        return y + 1.0

    got = []
    for f in (fn, xad.compile(fn)):
        lists = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for k in range(3):
                xs, d = [xad.tensor([float(k)]), xad.tensor([1.0])], {"a": xad.tensor([2.0])}
                lists.append([f(xs, d).tolist(), [x.tolist() for x in xs], sorted(d)])
        got.append(lists)
    assert got[0] == got[1]


def _momentum_world(fail: dict) -> tuple:
    xad.manual_seed(0)
    m = nn.Linear(4, 2).double()
    opt = xad.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

    def step(x):
        if fail["on"]:
            raise ValueError("a bad first batch")
        opt.zero_grad()
        loss = m(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss.detach()
    return m, step


def test_a_first_call_that_raises_leaves_the_next_a_first_call(xb):
    """A first call that raised left its guards' (empty) list of programs behind, and the
    next call was taken for a second recording, which keeps what a first call does once:
    with CUDA graphs, SGD's first momentum step (``b = g``) was replayed at every step."""
    fail = {"on": False}
    got = []
    for compiled in (False, True):
        m, step = _momentum_world(fail)
        f = xad.compile(step, cuda_graphs=True) if compiled else step  # (CuPy's flag)
        out: list = []
        for k in range(6):
            fail["on"] = k == 0
            try:
                out.append(f(xad.tensor(np.random.default_rng(k).standard_normal((3, 4)))).item())
            except ValueError:
                out.append("raised")
        got.append(out + [_np(m.weight)])
    assert got[0][:-1] == got[1][:-1]
    np.testing.assert_array_equal(got[0][-1], got[1][-1])
