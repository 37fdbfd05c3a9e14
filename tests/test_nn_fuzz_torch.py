"""A differential fuzzer of xad's layers and ``xad.nn.functional`` against PyTorch 2.13 in
float64: random options (tests/nn_fuzz_cases.py draws them), the same weights copied in;
outputs, gradients of every input and parameter, and module state (running statistics,
buffers) after a few train/eval steps with an SGD update between them. A failure names the
family, seed and options, so ``_check(family, seed)`` replays it.

Default: a few seeded cases per family on numpy, one on every other backend;
``XAD_FUZZ_N=2000`` runs more (from the seed ``XAD_FUZZ_SEED``: on numpy without a backend
fixture, and that many per backend), and ``XAD_FUZZ_REPORT=1`` prints how many cases
ran, matched, or were refused by both. Where PyTorch raises, xad must raise too.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from nn_fuzz_cases import FAMILIES, Fn, Mod

import xad

torch = pytest.importorskip("torch")

N = int(os.environ.get("XAD_FUZZ_N", "0"))
SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))  # the long runs' first seed
DEFAULT_SEEDS = 3
RTOL, ATOL = 1e-8, 1e-9


def _flat(y):
    """The tensors of a result (``None`` as the string ``"None"``: compared as it is)."""
    if isinstance(y, (tuple, list)):
        return [t for v in y for t in _flat(v)]
    return ["None" if y is None else y]


def _to_np(t):
    return t.numpy() if isinstance(t, xad.Tensor) else t.detach().numpy()


def _close(a, b, what, atol=ATOL):
    if isinstance(a, str) or isinstance(b, str):
        assert a == b, f"{what}: {a!r}, torch {b!r}"
        return
    a, b = _to_np(a), _to_np(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} != torch's {b.shape}"
    if a.dtype.kind in "iub" or b.dtype.kind in "iub":
        assert a.dtype.kind == b.dtype.kind, f"{what}: dtype {a.dtype} != torch's {b.dtype}"
        np.testing.assert_array_equal(a, b, err_msg=what)
    else:
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=atol, err_msg=what)


def _seed_loss(ys, rng, lib):
    """``sum(y * g)`` over the float outputs, with fixed random cotangents ``g``."""
    loss = 0
    for y in ys:
        if not isinstance(y, str) and y.dtype in (xad.float64, torch.float64):
            g = rng.standard_normal(tuple(y.shape))
            loss = loss + (y * lib.tensor(g, dtype=y.dtype)).sum()
    return loss


def _run_fn(case: Fn, seed: int):
    xs = [xad.tensor(a, dtype=xad.float64, requires_grad=True) for a in case.arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in case.arrays]
    ty = _flat(case.fn(torch, *ts))
    y = _flat(case.fn(xad, *xs))
    assert len(y) == len(ty), f"{len(y)} outputs, torch {len(ty)}"
    for k, (a, b) in enumerate(zip(y, ty)):
        _close(a, b, f"output {k}")
    lx, lt = _seed_loss(y, np.random.default_rng(seed), xad), \
        _seed_loss(ty, np.random.default_rng(seed), torch)
    if not xs or not isinstance(lt, torch.Tensor) or not lt.requires_grad:
        return
    gx = xad.autograd.grad(lx, xs, allow_unused=True)
    gt = torch.autograd.grad(lt, ts, allow_unused=True)
    for k, (a, b) in enumerate(zip(gx, gt)):
        b = torch.zeros_like(ts[k]) if b is None else b
        a = xad.zeros_like(xs[k]) if a is None else a
        _close(a, b, f"gradient of input {k}", case.atol)


def _run_mod(case: Mod, seed: int):
    torch.manual_seed(seed)
    tm = case.make(torch, torch.float64)
    xm = case.make(xad, xad.float64)
    xm.load_state_dict({k: xad.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    for step, mode in enumerate(case.modes):
        tm.train(mode == "train")
        xm.train(mode == "train")
        ts = [torch.tensor(a, requires_grad=True) for a in case.arrays]
        xs = [xad.tensor(a, dtype=xad.float64, requires_grad=True) for a in case.arrays]
        ty = _flat(case.call(tm, torch, *ts))
        y = _flat(case.call(xm, xad, *xs))
        where = f"step {step} ({mode})"
        assert len(y) == len(ty), f"{where}: {len(y)} outputs, torch {len(ty)}"
        for k, (a, b) in enumerate(zip(y, ty)):
            _close(a, b, f"{where}: output {k}")
        rng = np.random.default_rng(seed + step)
        lt, lx = _seed_loss(ty, rng, torch), _seed_loss(y, np.random.default_rng(seed + step),
                                                        xad)
        tp, xp = dict(tm.named_parameters()), dict(xm.named_parameters())
        assert list(tp) == list(xp), f"parameters {list(xp)} != torch's {list(tp)}"
        gt = torch.autograd.grad(lt, ts + list(tp.values()), allow_unused=True)
        gx = xad.autograd.grad(lx, xs + list(xp.values()), allow_unused=True)
        names = [f"input {i}" for i in range(len(xs))] + list(xp)
        ins = ts + list(tp.values())
        for n, a, b, t in zip(names, gx, gt, ins):
            b = torch.zeros_like(t) if b is None else b
            a = np.zeros(tuple(t.shape)) if a is None else a
            _close(a, b, f"{where}: gradient of {n}")
            if not n.startswith("input "):  # an SGD step, so the next step sees new weights
                with torch.no_grad():
                    tp[n] -= 0.1 * b
                with xad.no_grad():
                    xp[n].data -= 0.1 * xad.tensor(_to_np(b), dtype=xad.float64)
        for k, v in tm.state_dict().items():
            _close(xm.state_dict()[k], v, f"{where}: state {k}")


def _check(family: str, seed: int) -> str:
    """Run one case; 'ok', or 'refused' where both libraries raise."""
    case = FAMILIES[family](np.random.default_rng(seed))
    run = _run_fn if isinstance(case, Fn) else _run_mod
    try:
        with torch.random.fork_rng():
            if isinstance(case, Fn):
                case.fn(torch, *[torch.tensor(a) for a in case.arrays])
            else:
                _run_mod_torch_only(case, seed)
    except (RuntimeError, ValueError, IndexError, TypeError, NotImplementedError) as e:
        with pytest.raises(Exception):  # noqa: B017 (xad's error classes differ)
            run(case, seed)
        return f"refused: {type(e).__name__}"
    try:
        run(case, seed)
    except Exception as e:
        raise AssertionError(f"{family} seed {seed}: {case.desc}\n{type(e).__name__}: {e}") \
            from e
    return "ok"


def _run_mod_torch_only(case: Mod, seed: int):
    torch.manual_seed(seed)
    tm = case.make(torch, torch.float64)
    for mode in case.modes:
        tm.train(mode == "train")
        case.call(tm, torch, *[torch.tensor(a) for a in case.arrays])


def _mha_unbatched(lib, dt):
    return lib.nn.MultiheadAttention(4, 2, batch_first=True, dtype=dt)


# Cases the fuzzer found: each failed (a wrong number, or a refusal) before its fix.
REGRESSIONS = {
    # a linear mode copies an axis whose size does not change, whatever scale_factor says
    "interpolate_same_size_axis": Fn("", [np.arange(12.0).reshape(1, 1, 3, 4)],
                                     lambda lib, x: lib.nn.functional.interpolate(
                                         x, scale_factor=(1.2, 1.5), mode="bilinear")),
    "interpolate_trilinear_align_corners": Fn(
        "", [np.sin(np.arange(24.0)).reshape(1, 2, 2, 3, 2)],
        lambda lib, x: lib.nn.functional.interpolate(x, size=(3, 2, 4), mode="trilinear",
                                                     align_corners=True)),
    "interpolate_area_3d": Fn("", [np.sin(np.arange(60.0)).reshape(1, 2, 5, 3, 2)],
                              lambda lib, x: lib.nn.functional.interpolate(
                                  x, size=(2, 3, 3), mode="area")),
    "upsampling_nearest2d_same_size_axis": Fn(
        "", [np.sin(np.arange(12.0)).reshape(2, 1, 2, 3)],
        lambda lib, x: lib.nn.UpsamplingNearest2d(scale_factor=(2.0, 1.25))(x)),
    "interpolate_linear_scale_same_size": Fn("", [np.arange(8.0).reshape(2, 1, 4)],
                                             lambda lib, x: lib.nn.functional.interpolate(
                                                 x, scale_factor=1.2, mode="linear")),
    # (L, E) is one sequence also with batch_first=True (was L batches of one token)
    "mha_unbatched_batch_first": Mod("", _mha_unbatched, [np.linspace(-1, 1, 12).reshape(3, 4)],
                                     call=lambda m, lib, x: m(x, x, x), modes=("train",)),
    "mha_add_bias_kv_add_zero_attn_masks": Mod(
        "", lambda lib, dt: lib.nn.MultiheadAttention(4, 2, add_bias_kv=True,
                                                      add_zero_attn=True, dtype=dt),
        [np.sin(np.arange(16.0)).reshape(2, 2, 4), np.cos(np.arange(24.0)).reshape(3, 2, 4)],
        call=lambda m, lib, q, kv: m(q, kv, kv, key_padding_mask=lib.tensor(
            [[False, True, False], [False, False, True]]), attn_mask=lib.tensor(
                [[0.0, -1.0, 0.5], [0.2, 0.0, -2.0]], dtype=q.dtype)), modes=("train",)),
    "pad_negative_reflect_replicate_circular": Fn(
        "", [np.sin(np.arange(30.0)).reshape(1, 2, 3, 5)],
        lambda lib, x: [lib.nn.functional.pad(x, p, mode=m) for m, p in (
            ("reflect", (-1, 2, 2, -1)), ("replicate", (3, -2, -1, 1)),
            ("circular", (-1, 2, 2, -1)), ("circular", (3, -2, 0, 0)))]),
    "fold_unbatched_dilated": Fn("", [np.sin(np.arange(72.0)).reshape(8, 9)],
                                 lambda lib, x: lib.nn.functional.fold(
                                     x, (5, 5), 2, dilation=2, padding=1, stride=2)),
    "lp_pool2d_ceil": Fn("", [np.cos(np.arange(60.0)).reshape(2, 2, 3, 5)],
                         lambda lib, x: lib.nn.LPPool2d(3, (2, 3), (1, 2), ceil_mode=True)(x)),
    "max_unpool2d_overlapping": Fn(
        "", [np.round(2 * np.sin(np.arange(60.0))).reshape(1, 3, 4, 5)],
        lambda lib, x: lib.nn.functional.max_unpool2d(
            *lib.nn.functional.max_pool2d(x, 3, 1, 1, return_indices=True), 3, 1, 1)),
    "rms_norm_default_eps_zero_row": Fn(
        "", [np.vstack([np.zeros((1, 2, 3)), np.sin(np.arange(6.0)).reshape(1, 2, 3)])],
        lambda lib, x: lib.nn.functional.rms_norm(x, (2, 3), x[1] * 0.5)),
    "max_pool2d_return_indices": Fn("", [np.round(3 * np.sin(np.arange(60.0))).reshape(
        1, 3, 4, 5)], lambda lib, x: lib.nn.functional.max_pool2d(
            x, (2, 3), (1, 2), (1, 1), (2, 1), ceil_mode=True, return_indices=True)),
    "max_pool1d_module_return_indices": Fn("", [np.sin(np.arange(14.0)).reshape(2, 7)],
                                           lambda lib, x: lib.nn.MaxPool1d(
                                               3, 2, 1, return_indices=True)(x)),
    "adaptive_max_pool2d_return_indices": Fn("", [np.cos(np.arange(70.0)).reshape(2, 5, 7)],
                                             lambda lib, x: lib.nn.AdaptiveMaxPool2d(
                                                 (3, None), return_indices=True)(x)),
    "conv1d_unbatched": Fn("", [np.sin(np.arange(10.0)).reshape(2, 5), np.ones((3, 2, 2))],
                           lambda lib, x, w: lib.nn.functional.conv1d(x, w, padding=1)),
    "embedding_max_norm_scale_grad_by_freq": Mod(
        "", lambda lib, dt: lib.nn.Embedding(5, 3, max_norm=1.2, norm_type=3.0,
                                             scale_grad_by_freq=True, dtype=dt), [],
        call=lambda m, lib: m(lib.tensor([[1, 3, 3], [0, 1, 1]])), modes=("train", "eval")),
    "embedding_bag_max_norm": Mod(
        "", lambda lib, dt: lib.nn.EmbeddingBag(5, 2, max_norm=0.7, mode="max", dtype=dt), [],
        call=lambda m, lib: m(lib.tensor([4, 1, 1, 0, 2]), lib.tensor([0, 2])),
        modes=("train",)),
    "unfold_unbatched": Fn("", [np.sin(np.arange(24.0)).reshape(2, 3, 4)],
                           lambda lib, x: lib.nn.functional.unfold(x, 2, padding=1)),
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression(xb, name):
    case = REGRESSIONS[name]
    (_run_fn if isinstance(case, Fn) else _run_mod)(case, 0)



def test_embedding_bag_scale_grad_by_freq_divides_by_the_rows_count(xb):
    """docs/PORTING.md: PyTorch's CPU ``embedding_bag`` divides a row's gradient by another
    row's count (``[1, 1, 2]`` gives row 2 half its gradient); xad by how often the row is
    picked, as PyTorch's ``embedding`` and both documentations say."""
    w0 = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    idx, offs = [1, 1, 2, 0, 0, 0, 3], [0, 1, 3]
    tw = torch.tensor(w0, requires_grad=True)
    rows = torch.nn.functional.embedding(torch.tensor(idx), tw, scale_grad_by_freq=True)
    (rows[:1].sum() + rows[1:3].sum() + rows[3:].sum()).backward()
    bag = torch.tensor(w0, requires_grad=True)
    torch.nn.functional.embedding_bag(torch.tensor(idx), bag, torch.tensor(offs), mode="sum",
                                      scale_grad_by_freq=True).sum().backward()
    assert not torch.equal(bag.grad, tw.grad)  # the artefact, while PyTorch has it
    xw = xad.tensor(w0, dtype=xad.float64, requires_grad=True)
    xad.nn.functional.embedding_bag(xad.tensor(idx), xw, xad.tensor(offs), mode="sum",
                                    scale_grad_by_freq=True).sum().backward()
    _close(xw.grad, tw.grad, "gradient")
    np.testing.assert_allclose(xw.grad.numpy()[:, 0], [1.0, 1.0, 1.0, 1.0])


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_interpolate_antialias_to_width_one(xb, mode):
    """docs/PORTING.md: torch 2.13's antialiased resize to an output width of 1 gives every
    row the first row's value; xad resizes each axis, as PyTorch does for the transposed
    input (height 1)."""
    a = np.arange(12.0).reshape(1, 1, 3, 4) ** 2 % 7
    f = torch.nn.functional.interpolate
    t = f(torch.tensor(a), size=(6, 1), mode=mode, antialias=True)
    assert torch.all(t == t[0, 0, 0, 0])  # the artefact, while PyTorch has it
    want = f(torch.tensor(a).transpose(2, 3), size=(1, 6), mode=mode,
             antialias=True).transpose(2, 3)
    got = xad.nn.functional.interpolate(xad.tensor(a, dtype=xad.float64), size=(6, 1),
                                        mode=mode, antialias=True)
    _close(got, want, "output")


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_interpolate_antialias_same_size_axis_gradient(xb, mode):
    """docs/PORTING.md: torch 2.13's antialiased backward filters an axis its forward copied;
    xad's gradient is that of the forward both compute (the map is linear: exact columns).
    The forward copied that axis in PyTorch, and xad filtered it before."""
    a = np.arange(15.0).reshape(1, 1, 5, 3) ** 2 % 7
    g = np.random.default_rng(0).standard_normal((1, 1, 6, 3))

    def f(v):
        return torch.nn.functional.interpolate(torch.tensor(v), scale_factor=1.3,
                                               mode=mode, antialias=True).numpy()
    want = np.array([(g * f(np.eye(15)[i].reshape(a.shape))).sum() for i in range(15)])
    x = xad.tensor(a, dtype=xad.float64, requires_grad=True)
    y = xad.nn.functional.interpolate(x, scale_factor=1.3, mode=mode, antialias=True)
    _close(y, torch.tensor(f(a)), "output")
    (y * xad.tensor(g)).sum().backward()
    _close(x.grad, torch.tensor(want.reshape(a.shape)), "gradient")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_layers_match_torch(xb, family):
    seeds = (range(SEED, SEED + N) if N else range(DEFAULT_SEEDS) if xb.name == "numpy"
             else [0])
    for seed in seeds:
        _check(family, seed)


@pytest.mark.skipif(not N, reason="the long run: set XAD_FUZZ_N")
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_layers_match_torch_long(family):
    counts: dict[str, int] = {}
    for seed in range(SEED, SEED + N):
        r = _check(family, seed)
        counts[r] = counts.get(r, 0) + 1
    if os.environ.get("XAD_FUZZ_REPORT"):
        print(f"\n{family}: {counts}")
