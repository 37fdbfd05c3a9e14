"""A fourth view fuzzer against PyTorch, where the other three do not go: in-place changes
whose operand overlaps the tensor they write (``x[1:] += x[:-1]``, ``x.T.add_(x)``,
``x.copy_(x.flip(0))``, a write into an expanded view), and the copies of state that must
keep (or never keep) storage sharing: ``copy.deepcopy``, ``load_state_dict``,
``xad.save``/``xad.load``, ``clone``. ``XAD_FUZZ_N`` (and ``XAD_FUZZ_SEED``) for the long
run.

Where PyTorch gives a defined number (no overlap, or an operand that is the written tensor
itself), xad must give it. Where PyTorch raises for a partial overlap, xad reads the operand
from before the write (docs/PORTING.md): the fuzzer then holds xad to PyTorch's result on a
clone of the operand. Where PyTorch's overlap check cannot see the overlap and its loop reads
elements it already wrote (a result that differs from the clone's), the number is a
loop-order artefact, which xad does not copy (docs/PORTING.md).

Before: ``load_state_dict`` replaced a parameter's array, so a view or ``.data`` taken before
kept the old values; ``xad.load`` gave tensors that shared storage when saved (a tensor and
its view, the two ``detach()`` of a tied weight in a state dict) separate storages; and
``copy.deepcopy`` of a tensor with its view gave a view that no longer followed its base."""

from __future__ import annotations

import copy
import os
import random

import numpy as np
import pytest

import xad

torch = pytest.importorskip("torch")

N = int(os.environ.get("XAD_FUZZ_N", "40"))
SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))


def _lib(lib: str):
    return xad if lib == "xad" else torch


def _np(t) -> np.ndarray:
    return np.array(t.detach().numpy(), copy=True)


# ----- copies of state: regression cases ---------------------------------------------------
def test_load_state_dict_writes_into_the_storage(xb):
    """Views and ``.data`` of a parameter taken before ``load_state_dict`` see the loaded
    values, and a later write through them reaches the parameter (PyTorch copies into the
    parameter's storage; xad replaced its array)."""
    def run(lib):
        m = _lib(lib)
        lin = m.nn.Linear(3, 2)
        row, d = lin.weight.detach()[1], lin.weight.data
        lin.load_state_dict({"weight": m.ones(2, 3) * 5, "bias": m.zeros(2)})
        seen = [_np(row), _np(d)]
        d.mul_(3)
        return seen + [_np(lin.weight), lin.weight._version]
    for a, b in zip(run("xad"), run("torch")):
        np.testing.assert_array_equal(a, b)


def _tied(m):
    class Tied(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = m.nn.Linear(3, 3), m.nn.Linear(3, 3)
            self.b.weight = self.a.weight
    return Tied()


def test_a_deep_copied_model_has_no_gradients(xb):
    """``copy.deepcopy`` of a model after backward gives parameters without ``.grad``, as
    PyTorch's ``Parameter.__deepcopy__`` (xad copied the gradients, so an optimiser of the
    copy stepped by the original's: the copy moved where PyTorch's stays); a plain tensor
    keeps its ``.grad`` in both."""
    def run(lib):
        m = _lib(lib)
        lin = m.nn.Linear(2, 2)
        with m.no_grad():
            lin.weight.fill_(0.5)
            lin.bias.fill_(0.1)
        lin(m.ones(1, 2)).sum().backward()
        twin = copy.deepcopy(lin)
        m.optim.SGD(twin.parameters(), lr=1.0).step()
        t = m.ones(2, requires_grad=True)
        (t * 2).sum().backward()
        return [twin.weight.grad is None, _np(twin.weight), _np(copy.deepcopy(t).grad),
                type(twin.weight).__name__]
    for a, b in zip(run("xad"), run("torch")):
        np.testing.assert_array_equal(a, b)


def test_copy_copy_shares_the_storage(xb):
    """``copy.copy`` of a tensor, a view or a parameter shares its storage, as PyTorch's,
    on every backend (on JAX it gave a tensor with values of its own)."""
    def run(lib):
        m = _lib(lib)
        x = m.arange(4.0, dtype=m.float64)
        c, v = copy.copy(x), copy.copy(x[1:])
        p = m.nn.Parameter(m.ones(2))
        q = copy.copy(p)
        with m.no_grad():
            x.add_(1)
            c[0] = -5.0
            q.mul_(3)
        return [_np(x), _np(c), _np(v), _np(p), type(q).__name__, q.requires_grad, q.is_leaf]
    for a, b in zip(run("xad"), run("torch")):
        np.testing.assert_array_equal(a, b)


def test_a_parameter_made_from_a_tensor_counts_versions_with_it(xb):
    """``nn.Parameter(x)`` shares ``x``'s memory and version counter, as PyTorch's: a change
    of the parameter raises at the backward of a graph that saved ``x`` (xad counted them
    apart, and on NumPy the backward read the changed memory: a gradient twice the right
    one, without an error)."""
    def run(lib):
        m = _lib(lib)
        x = m.tensor([1.0, 2.0, 3.0])
        p = m.nn.Parameter(x)
        loss = (p * x).sum()
        with m.no_grad():
            p.mul_(2)
        with pytest.raises(RuntimeError):
            loss.backward()
        return x._version, p._version
    assert run("xad") == run("torch")


def test_ravel_and_unflatten_to_the_same_shape_are_new_views(xb):
    """``x.ravel()`` of a 1-d tensor and ``x.unflatten(0, (n,))`` are new views, as
    PyTorch's (they were ``x`` itself, so a hook on one saw every gradient of ``x``)."""
    def run(lib):
        m = _lib(lib)
        x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        seen = []
        r, u = x.ravel(), x.unflatten(0, (3,))
        r.register_hook(lambda g: seen.append(_np(g)))
        u.register_hook(lambda g: seen.append(_np(g)))
        (x * 2 + r + u * 3).sum().backward()
        return [r is x, u is x, *seen, _np(x.grad)]
    for a, b in zip(run("xad"), run("torch")):
        np.testing.assert_array_equal(a, b)


def test_an_optimisers_state_dict_is_a_snapshot(xb):
    """xad's optimiser ``state_dict()`` holds copies, where PyTorch's hands out the live
    buffers (docs/PORTING.md): the trajectory is PyTorch's, and a dict taken before a step
    keeps the state it had (PyTorch's shows the later step's)."""
    def run(lib):
        m = _lib(lib)
        w = m.nn.Parameter(m.ones(2))
        opt = m.optim.SGD([w], lr=0.1, momentum=0.9)
        w.grad = m.ones(2)
        opt.step()
        sd = opt.state_dict()
        opt2 = m.optim.SGD([w], lr=0.1, momentum=0.9)
        opt2.load_state_dict(copy.deepcopy(sd))
        w.grad = m.ones(2)
        opt2.step()
        return _np(w), _np(sd["state"][0]["momentum_buffer"])
    (wx, bx), (wt, bt) = run("xad"), run("torch")
    np.testing.assert_allclose(wx, wt, rtol=1e-6)
    np.testing.assert_array_equal(bx, bt)  # deepcopy'd: 1.0 in both
    w = xad.nn.Parameter(xad.ones(2))
    opt = xad.optim.SGD([w], lr=0.1, momentum=0.9)
    w.grad = xad.ones(2)
    opt.step()
    sd = opt.state_dict()
    w.grad = xad.ones(2)
    opt.step()
    assert sd["state"][0]["momentum_buffer"].tolist() == [1.0, 1.0]  # torch: 1.9


def test_save_load_keeps_sharing_within_a_file(xb, tmp_path):
    """Tensors that share storage in one file share it after loading (a tensor, its row,
    its transpose; the tied weight of a state dict; one tensor twice), as ``torch.save``'s;
    xad loaded each as a storage of its own."""
    def run(lib):
        m = _lib(lib)
        path = str(tmp_path / f"shared.{lib}")
        x = m.arange(6.0, dtype=m.float64).reshape(2, 3)
        sd = _tied(m).state_dict()
        m.save({"x": x, "row": x[1], "t": x.T, "again": x, "sd": sd}, path)
        d = m.load(path)
        d["x"][1, 0] = 99.0
        d["t"][0, 0] = -1.0
        d["sd"]["a.weight"][0, 0] = 11.0
        return [_np(d["row"]), _np(d["t"]), _np(d["again"]), d["again"] is d["x"],
                _np(d["sd"]["b.weight"])[0, 0], tuple(d["row"].shape)]
    for a, b in zip(run("xad"), run("torch")):
        np.testing.assert_array_equal(a, b)


def test_saved_views_of_a_leaf_load_as_leaves_sharing_its_storage(xb, tmp_path):
    """Views of a leaf that requires grad, saved with it, load as leaves that require grad
    and share its storage; its ``detach()`` loads as a view that does not, as torch's."""
    def run(lib):
        m = _lib(lib)
        path = str(tmp_path / f"leaf.{lib}")
        w = m.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True, dtype=m.float64)
        m.save([w[0], w[1], w, w.detach()], path)
        a, b, c, d = m.load(path)
        flags = [(t.requires_grad, t.is_leaf) for t in (a, b, c, d)]
        (a * 2).sum().backward()
        with m.no_grad():
            c[0, 0] = 100.0
        return [flags, _np(a.grad), c.grad is None, _np(a), _np(d)]
    for a, b in zip(run("xad"), run("torch")):
        np.testing.assert_array_equal(a, b)


def test_save_load_of_one_view_saves_its_values(xb, tmp_path):
    """A view alone in a file loads with its own values and shape (no storage to share)."""
    x = xad.arange(12.0).reshape(3, 4)
    path = str(tmp_path / "one.xad")
    xad.save([x.T[1:], x.diagonal()], path)
    a, b = xad.load(path)
    np.testing.assert_array_equal(a.numpy(), x.T[1:].numpy())
    np.testing.assert_array_equal(b.numpy(), x.diagonal().numpy())


def test_deepcopy_keeps_sharing_among_what_it_copies(xb):
    """``copy.deepcopy`` of tensors that share storage gives tensors that share a new one
    (a write through the copied base reaches the copied view), and none of the original's;
    PyTorch's ``Parameter`` copies its own storage, so tied parameters that are views of
    one another do not share after it, as in PyTorch."""
    def run(lib):
        m = _lib(lib)
        x = m.arange(4.0, dtype=m.float64)
        v, d = x[1:3], x.detach()
        x2, v2, d2 = copy.deepcopy((x, v, d))
        x2[1] = 50.0
        d2[3] = 7.0
        out = [_np(v2), _np(x2), _np(x), _np(copy.deepcopy(v)), tuple(copy.deepcopy(v).shape)]
        tied = copy.deepcopy(_tied(m))
        with m.no_grad():
            tied.a.weight.fill_(3.0)
        return out + [_np(tied.b.weight), tied.a.weight is tied.b.weight]
    for a, b in zip(run("xad"), run("torch")):
        np.testing.assert_array_equal(a, b)


def test_no_grad_updates_through_views_of_leaves(xb):
    """An optimiser-style update of a leaf through a view under ``no_grad``: a graph that
    saved the leaf raises at backward, one that did not runs; a tied weight trained by SGD
    with momentum follows PyTorch's trajectory."""
    def run(lib):
        m = _lib(lib)
        w = m.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True, dtype=m.float64)
        loss = (w * w).sum()
        with m.no_grad():
            w[0].sub_(0.5)
        with pytest.raises(RuntimeError):
            loss.backward()
        loss = w.exp().sum()
        w.detach()[1].mul_(2)
        loss.backward()
        out = [_np(w), _np(w.grad), w._version]
        m.manual_seed(0)
        tied = _tied(m)
        with m.no_grad():
            tied.a.weight.copy_(m.tensor(np.arange(9.0).reshape(3, 3) / 10))
            tied.a.bias.fill_(0.2)
            tied.b.bias.fill_(-0.1)
        opt = m.optim.SGD(tied.parameters(), lr=0.1, momentum=0.9)
        x = m.tensor(np.ones((2, 3)) / 3, dtype=m.float32)
        for _ in range(3):
            opt.zero_grad()
            tied.b(tied.a(x)).pow(2).sum().backward()
            opt.step()
        return out + [_np(tied.a.weight), _np(tied.b.bias), len(list(tied.parameters()))]
    for a, b in zip(run("xad"), run("torch")):
        np.testing.assert_allclose(a, b, rtol=1e-6)


# ----- in-place changes whose operand overlaps what they write -----------------------------
SHAPES = ((4, 4), (3, 4), (2, 3, 3), (6,), (4, 1, 4))
OPS = ("add_", "sub_", "mul_", "div_", "copy_", "iadd", "setitem", "lerp_", "clamp_",
       "addcmul_", "pow_", "addcdiv_", "index_add_", "scatter_add_", "setitem_ints")
# (xad's functions take no out=)


def _dst(rng: random.Random, shape: tuple) -> tuple[str, tuple]:
    """A view of the base to write: (kind, args)."""
    nd = len(shape)
    kinds = ["whole", "slice", "detach", "flat"]
    if nd >= 2:
        kinds += ["T", "select", "diagonal", "expand"]
    kind = rng.choice(kinds)
    if kind == "slice":
        d = rng.randrange(nd)
        a = rng.randrange(shape[d])
        return kind, (d, a, rng.randint(a + 1, shape[d]), rng.choice((1, 1, 2)))
    if kind == "select":
        return kind, (rng.randrange(shape[0]),)
    if kind == "flat":
        n = int(np.prod(shape))
        a = rng.randrange(n)
        return kind, (a, rng.randint(a + 1, n))
    return kind, ()


def _take(lib: str, x, kind: str, args: tuple):
    if kind == "slice":
        d, a, b, s = args
        return x[(slice(None),) * d + (slice(a, b, s),)]
    if kind == "select":
        return x[args[0]]
    if kind == "flat":
        return x.reshape(-1)[args[0]:args[1]]
    if kind == "T":
        return x.transpose(-1, -2)
    if kind == "diagonal":
        return x.diagonal(0, -2, -1)
    if kind == "expand":  # one row repeated: elements that share memory
        return x[..., :1, :].expand(*x.shape)
    if kind == "detach":
        return x.detach()
    return x


def _src(rng: random.Random, base_shape: tuple, dst_shape: tuple) -> tuple[str, tuple]:
    """An operand for a change of a view of shape ``dst_shape``: another view of the base
    (overlapping or not), the view itself, a flipped copy, a number or a new tensor."""
    n = int(np.prod(dst_shape))
    kinds = ["self", "self_detach", "flip", "number", "fresh", "flatwin"]
    if len(dst_shape) >= 2 and dst_shape[-1] == dst_shape[-2]:
        kinds += ["selfT", "selfT"]
    if tuple(base_shape[1:]) == tuple(dst_shape[-(len(base_shape) - 1):]) and base_shape[1:]:
        kinds += ["row"]
    kind = rng.choice(kinds)
    if kind == "flatwin":
        return kind, (rng.randint(0, int(np.prod(base_shape)) - n),)
    if kind == "row":
        return kind, (rng.randrange(base_shape[0]),)
    if kind == "number":
        return kind, (round(rng.uniform(0.5, 1.5), 3),)
    if kind == "fresh":
        return kind, (rng.randrange(1000),)
    return kind, ()


def _operand(lib: str, base, dst, kind: str, args: tuple):
    m = _lib(lib)
    if kind == "self":
        return dst
    if kind == "self_detach":
        return dst.detach()
    if kind == "selfT":
        return dst.transpose(-1, -2)
    if kind == "flip":
        return dst.flip(0)
    if kind == "flatwin":
        return base.reshape(-1)[args[0]:args[0] + int(np.prod(dst.shape))].reshape(dst.shape)
    if kind == "row":
        return base[args[0]]
    if kind == "fresh":
        a = np.random.default_rng(args[0]).uniform(0.5, 1.5, tuple(dst.shape))
        return m.tensor(a)
    return args[0]


def _change_overlap(lib: str, base, dst, op: str, src, clone: bool) -> None:
    """``dst op= src``; ``clone``: with a clone of a tensor operand (the oracle)."""
    m = _lib(lib)
    o = src.clone() if clone and not isinstance(src, float) else src
    if op == "iadd":
        dst += o
    elif op == "setitem":
        dst[...] = o
    elif op == "lerp_":
        dst.lerp_(o if not isinstance(o, float) else m.full_like(dst, o), 0.25)
    elif op == "clamp_":
        dst.clamp_(min=o)
    elif op in ("addcmul_", "addcdiv_"):
        getattr(dst, op)(o if not isinstance(o, float) else m.full_like(dst, o), dst,
                         value=0.5)
    elif op in ("index_add_", "scatter_add_", "setitem_ints"):
        _indexed(m, dst, op, o if not isinstance(o, float) else m.full_like(dst, o))
    else:
        getattr(dst, op)(o)


def _indexed(m, dst, op: str, o) -> None:
    """An indexed change of ``dst`` by ``o`` (of ``dst``'s shape): the rows in reverse
    order (``index_add_``, ``dst[idx] = o``), or each row's elements rotated
    (``scatter_add_``): no place named twice."""
    n = dst.shape[0] if dst.ndim else 1
    if op == "scatter_add_" and dst.ndim:
        k = dst.shape[-1]
        idx = np.broadcast_to((np.arange(k) + 1) % k, tuple(dst.shape))
        dst.scatter_add_(-1, m.tensor(np.ascontiguousarray(idx)), o)
    elif op == "index_add_" and dst.ndim:
        dst.index_add_(0, m.tensor(np.arange(n)[::-1].copy()), o)
    elif dst.ndim:
        dst[m.tensor(np.arange(n)[::-1].copy())] = o
    else:
        dst.add_(o)


def _overlap_program(seed: int) -> tuple[str | None, str]:
    """One random base, a few overlapping changes: (the first difference or None, what the
    oracle said: "raised", "artefact" or "defined")."""
    rng = random.Random(seed)
    shape = rng.choice(SHAPES)
    a = np.random.default_rng(seed).uniform(0.5, 1.5, shape)
    graph = rng.random() < 0.3
    libs = {}
    for lib, clone in (("xad", False), ("torch", False), ("oracle", True)):
        m = _lib("torch" if lib == "oracle" else lib)
        w = m.tensor(a, requires_grad=graph, dtype=m.float64)
        libs[lib] = (w, w * 1.0 if graph else w, clone)
    what, steps = "defined", []
    for _ in range(3):
        dk, dargs = _dst(rng, shape)
        op = rng.choice(OPS)
        dst_shape = tuple(_take("torch", libs["oracle"][1], dk, dargs).shape)
        sk, sargs = _src(rng, shape, dst_shape)
        raised, vals = {}, {}
        for lib, (_, base, clone) in libs.items():
            name = "torch" if lib == "oracle" else lib
            try:
                dst = _take(name, base, dk, dargs)
                _change_overlap(name, base, dst, op, _operand(name, base, dst, sk, sargs), clone)
                raised[lib] = None
                vals[lib] = (_np(base), base._version, dst._version)
            except Exception as e:  # noqa: BLE001 -- which library raises is compared
                raised[lib] = e
        step = f"{dk}{dargs} {op} {sk}{sargs} (graph={graph})"
        steps.append(step)
        if "torch" in raised and raised["torch"] is not None and raised["oracle"] is None:
            what = "raised"
            del libs["torch"]  # (its state is lost: the clone's goes on)
        if op == "setitem_ints" and "expanded view" in str(raised["xad"]):
            return None, what  # an index written into an expanded view: docs/PORTING.md
        if (raised["xad"] is None) != (raised["oracle"] is None):
            return f"{step}: xad raised {raised['xad']!r}, torch (on a clone) " \
                   f"{raised['oracle']!r}", what
        if raised["xad"] is not None:
            return None, what
        if raised.get("torch", 1) is None and not np.array_equal(vals["torch"][0],
                                                                 vals["oracle"][0]):
            what = "artefact"
        x, t = vals["xad"], vals["oracle"]
        if not np.allclose(x[0], t[0], rtol=1e-12, atol=0, equal_nan=True) or x[1:] != t[1:]:
            return f"{step}: xad {x} torch (on a clone) {t}", what
    if graph:
        failed = {}
        for lib, (_, base, _) in libs.items():
            try:
                (base * base).sum().backward()
                failed[lib] = False
            except RuntimeError:  # a saved tensor changed in place: in both, or a difference
                failed[lib] = True
        # torch's own run decides whether backward raises where it ran every step (a clone
        # of an operand takes that operand out of the saved tensors); xad runs where torch
        # refuses a saved in-place result changed since (docs/PORTING.md: it keeps it)
        ref = failed.get("torch", failed["xad"])
        if failed["xad"] and not ref:
            return f"backward raised in xad, not in torch, after {steps}", what
        if failed["xad"] or failed["oracle"]:
            return None, what
        gx, gt = _np(libs["xad"][0].grad), _np(libs["oracle"][0].grad)
        if not np.allclose(gx, gt, rtol=1e-12, equal_nan=True):
            return f"gradients differ: xad {gx} torch {gt} after {steps}", what
    return None, what


def test_a_reshape_of_a_result_laid_out_by_its_input_copies_where_the_layout_needs_it(xb):
    """``y = x.T.exp()`` keeps ``x.T``'s layout on NumPy and torch, as in PyTorch, so
    ``y.reshape(-1)`` copies there and ``y.view(-1)`` raises, as PyTorch's. Before, xad
    took every result as row-major: the copy was counted as a view (``y``'s version moved)
    and a write through it was lost, and ``(x.T * 2).contiguous()`` returned the product
    itself, whose ``view(-1)`` was then a copy. CuPy's elementwise kernels write a row-major
    result whatever their input's layout, and JAX has no layouts: there ``y.reshape(-1)``
    is a view (docs/PORTING.md); xad's version counter follows the layout either way."""
    x = xad.tensor(np.arange(12.0).reshape(3, 4), dtype=xad.float64)
    h = (x.T * 2).contiguous()  # row-major (a copy where the product kept x.T's layout)
    h.view(-1)[1] = -1.0  # a view of it on every backend: the write reaches h
    assert h[0, 1].item() == -1.0
    y = x.T.exp()
    r = y.reshape(-1)
    r[0] = 100.0
    if not xb.mutable or xb.name.startswith("cupy"):  # y is row-major: r is a view of it
        assert y.is_contiguous()
        assert y[0, 0].item() == 100.0 and y._version == r._version == 1
        y.view(-1)[1] = -1.0
        assert y[0, 1].item() == -1.0 and y._version == 2
        return
    assert not y.is_contiguous()
    assert y[0, 0].item() == 1.0 and y._version == 0 and r._version == 1
    with pytest.raises(ValueError, match="without a copy"):
        y.view(-1)
    z = x.exp()  # a row-major result stays a view both ways
    z.reshape(-1)[0] = 100.0
    assert z[0, 0].item() == 100.0 and z._version == 1


@pytest.mark.parametrize("key", ["ints", "mask"])
def test_a_tensor_written_into_itself_at_other_places(xb, key):
    """``x[idx] = x`` reads ``x`` from before the write on every backend (on the torch
    backend it raised torch's "refer to a single memory location"; CuPy's scatter would
    read elements it had already written)."""
    a = np.arange(4.0)
    idx = {"ints": [3, 2, 1, 0], "mask": a > -1}[key]
    x = xad.tensor(a, dtype=xad.float64)
    x[xad.tensor(idx)] = x
    want = a.copy()
    want[idx] = a.copy()
    np.testing.assert_array_equal(x.numpy(), want)


def test_overlapping_changes_agree_with_torch_on_a_clone(xb):
    """Every program's values, versions and gradients are PyTorch's with the operand cloned
    (its own where it defines one); it raises where that raises (an expanded target)."""
    n = N if xb.name != "jax" or "XAD_FUZZ_N" in os.environ else 4
    failures, kinds = [], {"raised": 0, "artefact": 0, "defined": 0}
    for k in range(n):
        diff, what = _overlap_program(SEED * 1_000_003 + k)
        kinds[what] += 1
        if diff:
            failures.append(f"seed {SEED * 1_000_003 + k}: {diff}")
    if "XAD_FUZZ_N" in os.environ:
        print(f"\n{xb.name}: {n} programs, {kinds}, {len(failures)} differences")
    assert not failures, "\n".join(failures[:5]) + f"\n({len(failures)} of {n})"


# ----- view-or-copy chains, written through either end -------------------------------------
CHAIN_SHAPES = ((2, 3, 4), (4, 6), (1, 4, 3), (6,))


def _link(rng: random.Random, shape: tuple, cplx: bool = False) -> tuple[str, tuple]:
    """One operation that PyTorch makes a view in some cases and a copy in others (of a
    complex tensor also its real or imaginary part: every other number of the storage)."""
    nd = len(shape)
    kinds = ["reshape", "flatten", "contiguous", "unsqueeze", "clone", "detach", "view"]
    kinds += ["real", "imag"] * 2 if cplx else []
    if nd >= 1:
        kinds += ["tensor_split", "split", "unfold", "narrow", "select", "flip", "squeeze"]
    if nd >= 2:
        kinds += ["transpose", "transpose", "movedim", "unflatten"]
    kind = rng.choice(kinds)
    d = rng.randrange(nd) if nd else 0
    n = shape[d] if nd else 1
    if kind in ("reshape", "view"):
        sizes = [f for f in range(1, int(np.prod(shape)) + 1) if int(np.prod(shape)) % f == 0]
        f = rng.choice(sizes)
        return kind, ((f, -1) if rng.random() < 0.7 else (-1,))
    if kind == "flatten":
        a = rng.randrange(max(nd, 1))
        return kind, (a, rng.randrange(a, max(nd, 1)))
    if kind in ("unsqueeze", "squeeze"):
        return kind, (rng.randint(0, nd) if kind == "unsqueeze" else d,)
    if kind in ("tensor_split", "split"):
        k = rng.randint(1, max(n, 1))
        pieces = len(np.array_split(np.empty(n), k)) if kind == "tensor_split" else -(-n // k)
        return kind, (k, d, rng.randrange(pieces))
    if kind == "unfold":  # windows that tile the axis (overlapping ones copy: PORTING.md)
        size = rng.choice([f for f in range(1, n + 1) if n % f == 0] or [1])
        return kind, (d, size, size)
    if kind == "narrow":
        a = rng.randrange(n)
        return kind, (d, a, rng.randint(1, n - a))
    if kind == "select":
        return kind, (d, rng.randrange(n))
    if kind in ("transpose", "movedim"):
        return kind, (d, rng.randrange(nd))
    if kind == "unflatten":
        f = rng.choice([f for f in range(1, n + 1) if n % f == 0])
        return kind, (d, (f, n // f))
    if kind == "flip":
        return kind, (d,)
    return kind, ()


def _follow_link(t, kind: str, args: tuple):
    if kind in ("real", "imag"):
        return getattr(t, kind)
    if kind in ("tensor_split", "split"):
        k, d, j = args
        return getattr(t, kind)(k, d)[j]
    if kind == "select":
        return t.select(*args) if hasattr(t, "select") else t[(slice(None),) * args[0]
                                                            + (args[1],)]
    if kind == "view":
        return t.view(*args)
    return getattr(t, kind)(*args)


def _root(lib: str, t):
    if lib == "torch":
        return t.untyped_storage().data_ptr()
    while t._base is not None:
        t = t._base
    return id(t)


def _chain_program(seed: int) -> str | None:
    rng = random.Random(seed)
    shape = rng.choice(CHAIN_SHAPES)
    a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) + 1
    factor = 1 - 2j if rng.random() < 0.25 else 1.0  # complex: real and imag links
    graph = rng.random() < 0.3
    ts: dict[str, list] = {}
    for lib in ("xad", "torch"):
        m = _lib(lib)
        w = m.tensor(a, requires_grad=graph, dtype=m.float64)
        ts[lib] = [w, w * factor]
    steps: list[str] = []
    for _ in range(6):
        j = rng.randrange(1, len(ts["torch"]))
        if rng.random() < 0.6:
            kind, args = _link(rng, tuple(ts["torch"][j].shape), ts["torch"][j].is_complex())
            steps.append(f"t{len(ts['torch'])} = t{j}.{kind}{args}")
            out, err = {}, {}
            for lib in ("xad", "torch"):
                try:
                    out[lib] = _follow_link(ts[lib][j], kind, args)
                except Exception as e:  # noqa: BLE001 -- which library raises is compared
                    err[lib] = e
            if list(err) == ["torch"] and "returns multiple views" in str(err["torch"]):
                return None  # a split piece in a graph whose base changed: PORTING.md
            if list(err) == ["torch"] and "view size is not compatible" in str(err["torch"]):
                return None  # a copy keeps its input's layout in torch: PORTING.md
            if len(err) == 1:
                return f"{steps}: raised only in {list(err)}: {list(err.values())[0]!r}"
            if not err:
                for lib in ("xad", "torch"):
                    ts[lib].append(out[lib])
            continue
        c = round(rng.uniform(-2, 2), 2)
        nograd = not graph or rng.random() < 0.3
        where = rng.choice(["mul_", "setitem", "add_"])
        steps.append(f"t{j}.{where}({c})" + (" no_grad" if nograd else ""))
        err = {}
        for lib in ("xad", "torch"):
            t, m = ts[lib][j], _lib(lib)
            try:
                with m.no_grad() if nograd else m.enable_grad():
                    if where == "setitem":
                        t[(0,) * min(t.ndim, 1)] = c
                    else:
                        getattr(t, where)(c)
            except Exception as e:  # noqa: BLE001 -- which library raises is compared
                err[lib] = e
        if list(err) == ["torch"] and "returns multiple views" in str(err["torch"]):
            return None  # a split piece changed in a graph: docs/PORTING.md
        if len(err) == 1:
            return f"{steps}: raised only in {list(err)}: {list(err.values())[0]!r}"
        if err:
            return None
        for k, (tx, tt) in enumerate(zip(ts["xad"], ts["torch"])):
            if not np.array_equal(_np(tx), _np(tt)):
                return f"{steps}: t{k} differs: xad {_np(tx)} torch {_np(tt)}"
            if tx._version != tt._version:
                return f"{steps}: t{k}'s version: xad {tx._version} torch {tt._version}"
            same_x = _root("xad", tx) == _root("xad", ts["xad"][1])
            if k and same_x != (_root("torch", tt) == _root("torch", ts["torch"][1])):
                return f"{steps}: t{k} shares t1's storage in one library only"
    return None


def test_view_or_copy_chains_agree_with_torch(xb):
    """Chains of operations that are views in some cases and copies in others (reshape of a
    transpose, flatten, contiguous, unfold, tensor_split...), then writes through any of
    them: every value, version and storage relation is PyTorch's."""
    n = N if xb.name != "jax" or "XAD_FUZZ_N" in os.environ else 4
    failures = [f"seed {SEED * 1_000_003 + k}: {d}" for k in range(n)
                if (d := _chain_program(SEED * 1_000_003 + k))]
    if "XAD_FUZZ_N" in os.environ:
        print(f"\n{xb.name}: {n} chain programs, {len(failures)} differences")
    assert not failures, "\n".join(failures[:5]) + f"\n({len(failures)} of {n})"


# ----- second derivatives through in-place changes of views --------------------------------
def _narrowed(t, kind: str, args: tuple):
    """``_follow_link`` in torch, a piece of ``split``/``tensor_split`` taken by ``narrow``
    (the same view, which torch lets a graph change: docs/PORTING.md)."""
    if kind not in ("split", "tensor_split"):
        return _follow_link(t, kind, args)
    k, d, j = args
    n = t.shape[d]
    if kind == "split":
        return t.narrow(d, j * k, min(k, n - j * k))
    sizes = [len(p) for p in np.array_split(np.empty(n), k)]
    return t.narrow(d, sum(sizes[:j]), sizes[j])


def _second_order_program(seed: int) -> tuple[str | None, bool]:
    """Views of a tensor in a graph changed in place (by numbers and by other tensors of the
    graph), then a gradient with ``create_graph=True`` and the gradient of its square."""
    rng = random.Random(seed)
    shape = rng.choice(((3, 4), (4, 4), (2, 3, 2)))
    a = np.random.default_rng(seed).uniform(0.5, 1.5, shape)
    plan = [(_link(rng, shape), rng.choice(["mul_", "add_", "mul_t", "div_t", "setitem",
                                            "pow_", "addcmul_"]), round(rng.uniform(0.5, 1.5), 2))
            for _ in range(3)]
    res: dict[str, list] = {}
    for lib in ("xad", "torch"):
        m = _lib(lib)
        w = m.tensor(a, requires_grad=True, dtype=m.float64)
        y = w * w
        try:
            for (kind, args), op, c in plan:
                v = _follow_link(y, kind, args) if lib == "xad" else _narrowed(y, kind, args)
                other = (v.detach() * 0 + c) * w.reshape(-1)[0]  # a tensor in the graph
                if op in ("mul_t", "div_t"):
                    getattr(v, op[:3] + "_")(other)
                elif op == "setitem":
                    v[(0,) * min(v.ndim, 1)] = other.reshape(-1)[0] if v.ndim else other
                elif op == "addcmul_":
                    v.addcmul_(other, other, value=0.5)
                else:
                    getattr(v, op)(c)
            (g,) = m.autograd.grad((y * y.sin()).sum(), w, create_graph=True)
            (h,) = m.autograd.grad((g * g).sum(), w)
            res[lib] = [_np(y), _np(g), _np(h)]
        except Exception as e:  # noqa: BLE001 -- which library raises is compared
            res[lib] = [type(e).__name__]
    x, t = res["xad"], res["torch"]
    if len(x) != len(t):
        return f"{plan}: xad {x[0] if len(x) == 1 else 'ran'}, torch " \
               f"{t[0] if len(t) == 1 else 'ran'}", False
    if len(x) == 3 and not all(np.allclose(p, q, rtol=1e-10, equal_nan=True)
                               for p, q in zip(x, t)):
        return f"{plan}: values or derivatives differ: xad {x} torch {t}", True
    return None, len(x) == 3


def test_second_derivatives_through_inplace_changes_of_views(xb):
    """Values, gradients (``create_graph=True``) and second derivatives after in-place
    changes of views of a tensor in a graph are PyTorch's."""
    n = max(N // 4, 10) if xb.name != "jax" or "XAD_FUZZ_N" in os.environ else 2
    runs = [_second_order_program(SEED * 1_000_003 + k) for k in range(n)]
    failures = [f"seed {SEED * 1_000_003 + k}: {d}" for k, (d, _) in enumerate(runs) if d]
    if "XAD_FUZZ_N" in os.environ:
        print(f"\n{xb.name}: {n} second-order programs ({sum(r for _, r in runs)} ran in "
              f"both, the others raised in both), {len(failures)} differences")
    assert not failures, "\n".join(failures[:5]) + f"\n({len(failures)} of {n})"
