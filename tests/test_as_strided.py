"""``as_strided``, ``as_strided_`` and ``as_strided_scatter`` against PyTorch 2.13: values
of views of roots, offset, transposed and strided bases (sliding windows, a stride of 0,
an explicit and the default storage offset), which stay current after in-place changes of
the storage by any route, writes through the result that reach the storage (and raise
where its windows overlap), PyTorch's errors, and gradients (float64, against torch and
finite differences), forward mode and ``vmap``."""

from __future__ import annotations

import copy
import os
import random

import pytest

import xad

torch = pytest.importorskip("torch")

# a base of the storage arange(24) shaped (4, 6), as both libraries write it
BASES = {"root": lambda x: x, "offset": lambda x: x.reshape(-1)[5:],
         "transposed": lambda x: x.t(), "strided": lambda x: x[1:, ::2],
         "row": lambda x: x[2]}
# (size, stride, storage_offset): None takes the base's own offset
GEOMETRIES = [((19, 6), (1, 1), None), ((4, 3), (1, 4), 2), ((3, 2), (6, 1), None),
              ((2, 3, 2), (0, 2, 1), 5), ((), (), 23), ((0, 3), (4, 1), 24),
              ((3,), (7,), 1), ((2, 2), (1, 2), None), ((1, 4), (100, 5), 0)]


def _both(program):
    """``program(module)`` on xad (current backend) and torch, as nested lists."""
    return program(xad), program(torch)


def _storage(m, dtype=None, requires_grad=False):
    x = m.arange(24.0, dtype=dtype or m.float32).reshape(4, 6)
    return x.requires_grad_() if requires_grad else x


@pytest.mark.parametrize("base", list(BASES))
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_values_follow_the_storage_as_torch(base, geometry, xb):
    size, stride, offset = geometry

    def program(m):
        x = _storage(m)
        v = BASES[base](x)
        a = v.as_strided(size, stride) if offset is None else v.as_strided(size, stride, offset)
        seen = [a.tolist()]
        x[1:3] *= -1.0                 # the storage changed through the root
        seen.append(a.tolist())
        v.mul_(2.0)                    # ... and through the base
        seen.append(a.tolist())
        x.reshape(-1)[::5] = 100.0     # ... and through another view of it
        return seen + [a.tolist(), x.tolist()]

    try:
        want = program(torch)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="storage"):
            program(xad)
        return
    assert program(xad) == want


@pytest.mark.parametrize("order", ["result first", "base first"])
def test_writes_through_the_result_and_the_base_as_torch(order, xb):
    def program(m):
        x = _storage(m)
        v = x.t()[1:]                  # a transposed, offset base
        a = v.as_strided((3, 4), (1, 6), 1)   # no two elements share a position
        out = []
        for step in ((0, 1) if order == "result first" else (1, 0)):
            if step == 0:
                a[1] = m.tensor([-1.0, -2.0, -3.0, -4.0])
                a[:, 2].add_(0.5)
                a.mul_(2.0)
            else:
                v[0, 1:3] = 50.0
                x.sub_(1.0)
            out += [a.tolist(), v.tolist(), x.tolist()]
        return out

    got, want = _both(program)
    assert got == want


def test_sliding_windows_read_and_fill_but_refuse_other_writes(xb):
    x = xad.arange(6.0)
    w = x.as_strided((4, 3), (1, 1))
    t = torch.arange(6.0).as_strided((4, 3), (1, 1))
    assert w.tolist() == t.tolist()
    for write in (lambda: w.add_(1.0), lambda: w.copy_(xad.zeros((4, 3))),
                  lambda: w.__setitem__(slice(0, 2), 5.0), lambda: w[0:2].mul_(2.0)):
        with pytest.raises(RuntimeError, match="as_strided view .*overlap"):
            write()
    assert x.tolist() == list(range(6))        # nothing was written
    w[0].mul_(10.0)                            # one window: its elements are distinct
    w[3, 2] = -1.0
    w[:, 0] = 5.0                              # the first column: distinct positions too
    assert x.tolist() == [5.0, 5.0, 5.0, 5.0, 4.0, -1.0]
    w.fill_(7.0)                               # filling with a number is well defined
    assert x.tolist() == [7.0] * 6
    z = x.as_strided((2, 3), (0, 2))
    with pytest.raises(RuntimeError, match="overlap"):
        z += 1.0
    assert z.tolist() == [[7.0] * 3] * 2


@pytest.mark.parametrize("call,match", [
    (lambda m, x: x.as_strided((2,), (-1,)), "egative strides"),
    (lambda m, x: x.as_strided((7,), (1,)), "storage"),
    (lambda m, x: x.as_strided((2, 3), (3, 1), 1), "storage"),
    (lambda m, x: x[1:].as_strided((6,), (1,)), "storage"),
    (lambda m, x: x.as_strided((2,), (1,), -1), "storage offset"),
    (lambda m, x: x.as_strided((2, 3), (1,)), "length of strides and shape")])
def test_errors_as_torch(call, match, xb):
    with pytest.raises(RuntimeError, match=match):
        call(torch, torch.arange(6.0))
    with pytest.raises(RuntimeError, match=match):
        call(xad, xad.arange(6.0))


def test_empty_and_one_element_views_need_no_storage_as_torch(xb):
    for size, stride, off in (((0,), (1,), 7), ((2, 0), (100, 1), 6), ((1,), (100,), 5)):
        assert xad.arange(6.0).as_strided(size, stride, off).tolist() == \
            torch.arange(6.0).as_strided(size, stride, off).tolist()


def test_what_xad_refuses_says_why(xb):
    x = xad.arange(6.0)
    with pytest.raises(NotImplementedError, match="through view_dtype"):
        x.view(xad.int32).as_strided((2,), (1,))
    z = xad.tensor([1 + 2j, 3 + 4j, 5 + 6j])
    with pytest.raises(NotImplementedError, match="through real"):  # torch: [1.0, 3.0]
        z.real.as_strided((2,), (2,))
    assert z.as_strided((2,), (2,)).tolist() == [1 + 2j, 5 + 6j]
    with pytest.raises(NotImplementedError, match="part of a storage through detach"):
        x[1:].detach().as_strided((2,), (1,))
    e = x.reshape(2, 3).t().exp()                # keeps x.t()'s layout, as PyTorch's
    if e.is_contiguous():                        # JAX: no layouts, rows are its order
        assert e.as_strided((6,), (1,)).tolist() == e.reshape(-1).tolist()
    else:
        with pytest.raises(RuntimeError, match="row-major.*contiguous"):
            e.as_strided((6,), (1,))
        assert e.contiguous().as_strided((6,), (1,)).tolist() == e.reshape(-1).tolist()
    assert x.detach().as_strided((2,), (2,), 1).tolist() == [1.0, 3.0]


def _taken(m, x, v, size, stride, offset=None):
    """``v.as_strided(...)`` on xad; on torch the same elements taken from ``x``, the
    storage's tensor: torch's gradient of a view then reaches every position it reads (of
    ``v`` it stops at ``v``'s own until the storage changes in place, see below)."""
    if m is xad:
        return v.as_strided(size, stride, *([] if offset is None else [offset]))
    return x.as_strided(size, stride, v.storage_offset() if offset is None else offset)


@pytest.mark.parametrize("base", list(BASES))
def test_gradients_as_torch_in_float64(base, xb):
    """Overlapping windows sum their gradients, to second order."""
    def program(m):
        w = _storage(m, m.float64, requires_grad=True)
        x = w * 1.0
        v = BASES[base](x)
        a = _taken(m, x, v, (5, 3), (1, 2), 1)
        b = _taken(m, x, v, (2, 2), (0, 3))
        loss = (a * m.arange(15.0, dtype=m.float64).reshape(5, 3)).sum() + (b ** 2).sum()
        (g,) = m.autograd.grad(loss, w, create_graph=True)
        (gg,) = m.autograd.grad((g ** 2).sum(), w)
        return [a.tolist(), g.tolist(), gg.tolist()]

    got, want = _both(program)
    assert got == want


def test_positions_outside_the_view_get_their_gradient(xb):
    """``x[2:].as_strided((3,), (1,), 0)`` reads ``x[0]`` and ``x[1]``: xad's gradient
    reaches them (the derivative); torch 2.13's stops at the view's own positions, and
    fails its own gradcheck (docs/PORTING.md)."""
    w = xad.arange(6.0, dtype=xad.float64, requires_grad=True)
    (w * 1.0)[2:].as_strided((3,), (1,), 0).sum().backward()
    assert w.grad.tolist() == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    t = torch.arange(6.0, dtype=torch.float64, requires_grad=True)
    (t * 1.0)[2:].as_strided((3,), (1,), 0).sum().backward()
    assert t.grad.tolist() == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]


def test_gradients_through_writes_in_a_graph_as_torch(xb):
    def program(m):
        w = m.arange(1.0, 13.0, dtype=m.float64).reshape(3, 4).requires_grad_()
        s = m.arange(3.0, dtype=m.float64).requires_grad_()
        x = w * 2.0
        a = x.as_strided((3,), (5,), 0)      # the diagonal
        a.mul_(s)                            # a recorded write through the view
        x[:, 1] += x[:, 0]                   # and one through the base after it
        loss = (x ** 2).sum() + (a * a.sum()).sum()
        loss.backward()
        return [x.tolist(), a.tolist(), w.grad.tolist(), s.grad.tolist()]

    got, want = _both(program)
    assert got == want


def test_gradcheck_of_windows(xb):
    w = xad.randn((7,), dtype=xad.float64, requires_grad=True)
    assert xad.gradcheck(lambda t: (t * 1.0)[1:].as_strided((3, 3), (1, 1), 0).exp(), (w,))


def test_jvp_and_vmap(xb):
    x = xad.arange(8.0, dtype=xad.float64)
    t = xad.arange(8.0, dtype=xad.float64) * 0.5 - 1.0
    f = lambda u: (u * u).t().contiguous().as_strided((3, 2), (2, 1), 1)  # noqa: E731
    _, tangent = xad.jvp(f, (x.reshape(2, 4),), (t.reshape(2, 4),))
    tx = torch.arange(8.0, dtype=torch.float64).reshape(2, 4)
    tt = (torch.arange(8.0, dtype=torch.float64) * 0.5 - 1.0).reshape(2, 4)
    g = lambda u: (u * u).t().contiguous().as_strided((3, 2), (2, 1), 1)  # noqa: E731
    assert tangent.tolist() == torch.func.jvp(g, (tx,), (tt,))[1].tolist()
    batch = xad.arange(30.0).reshape(3, 10) * 1.0
    out = xad.vmap(lambda r: (r * 2.0).as_strided((4, 3), (2, 1), 1))(batch)
    assert out.tolist() == [(r * 2.0).as_strided((4, 3), (2, 1), 1).tolist() for r in batch]


def test_inplace_as_strided_changes_the_geometry_as_torch(xb):
    def program(m):
        x = m.arange(6.0)
        v = x[1:]
        v.as_strided_((2, 2), (1, 1))
        out = [v.tolist()]
        x[1] = 7.0
        y = m.arange(6.0)
        y.as_strided_((3,), (2,))
        a = m.arange(6.0, dtype=m.float64, requires_grad=True)
        b = a * 1.0
        b.as_strided_((2,), (2,), 1)
        b.sum().backward()
        return out + [v.tolist(), y.tolist(), b.tolist(), a.grad.tolist()]

    got, want = _both(program)
    assert got == want
    for grad in (xad.enable_grad, xad.no_grad):  # (torch's raises under enable_grad)
        with grad(), pytest.raises(RuntimeError, match="leaf"):
            xad.zeros(6, requires_grad=True).as_strided_((2,), (1,))
    x = xad.arange(6.0)
    _ = x[1:]
    with pytest.raises(RuntimeError, match="has views"):
        x.as_strided_((2,), (1,))


def test_as_strided_scatter_as_torch(xb):
    """Values as torch's; gradients by finite differences (torch 2.13's gradient of
    ``input`` goes to the scattered positions instead of the others: it fails torch's own
    gradcheck)."""
    def program(m):
        out = m.as_strided_scatter(m.arange(6.0) * 1.0, m.tensor([10.0, 20.0]), (2,), (2,), 1)
        view = m.as_strided_scatter(m.arange(6.0)[1:], m.ones(2) * 9.0, (2,), (1,))
        return [out.tolist(), view.tolist()]

    got, want = _both(program)
    assert got == want
    b = xad.randn((6,), dtype=xad.float64, requires_grad=True)
    s = xad.randn((2,), dtype=xad.float64, requires_grad=True)
    assert xad.gradcheck(lambda u, v: xad.as_strided_scatter(u * 1.0, v, (2,), (2,), 1), (b, s))
    with pytest.raises(RuntimeError, match="src"):
        xad.as_strided_scatter(xad.zeros(6), xad.ones(1), (2,), (2,), 1)
    with pytest.raises(RuntimeError, match="overlap"):
        xad.as_strided_scatter(xad.zeros(6), xad.arange(3.0), (3,), (0,), 1)


FUZZ_N = int(os.environ.get("XAD_FUZZ_N", "12"))
FUZZ_SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))
FUZZ_BASES = [lambda x: x, lambda x: x.reshape(-1)[3:], lambda x: x.t(),
              lambda x: x[1:, ::2], lambda x: x[1], lambda x: x.reshape(-1)[1::3]]


def _fuzz_case(rng: random.Random) -> dict:
    nd = rng.randint(0, 3)
    return {"shape": (rng.choice([3, 4]), rng.choice([4, 5, 6])),
            "base": rng.randrange(len(FUZZ_BASES)), "grad": rng.random() < 0.5,
            "size": tuple(rng.randint(0, 4) for _ in range(nd)),
            "stride": tuple(rng.randint(0, 5) for _ in range(nd)),
            "offset": rng.choice([None, rng.randint(0, 12)]),
            "steps": [(rng.choice(["root", "base", "fill", "add", "copy"]),
                       rng.choice([0.5, 2.0, -1.0, 3.0]), rng.randint(0, 3)) for _ in range(4)]}


def _fuzz_step(m, x, v, a, step):
    kind, c, k = step
    if kind == "root":
        x[k % x.shape[0]] += c
    elif kind == "base":
        v.mul_(c)
    elif kind == "fill":
        a.fill_(c)
    elif kind == "add":
        (a[k % max(a.shape[0], 1):] if a.ndim else a).add_(c)
    else:
        a.copy_(m.full(tuple(a.shape), c, dtype=m.float64))


def _fuzz_run(m, case, refused):
    """The program on ``m``; ``refused``: the steps xad refused (None: record them)."""
    w = m.arange(float(case["shape"][0] * case["shape"][1]), dtype=m.float64)
    w = w.reshape(case["shape"]).requires_grad_(case["grad"])
    x = w * 1.0
    v = FUZZ_BASES[case["base"]](x)
    a = _taken(m, x, v, case["size"], case["stride"], case["offset"])
    seen = [a.tolist()]
    for i, step in enumerate(case["steps"]):
        if refused is None:
            try:
                _fuzz_step(m, x, v, a, step)
            except RuntimeError as e:
                assert "overlap" in str(e), e  # (a fill_ too, in a graph)
                seen.append(("refused", i))
        elif ("refused", i) not in refused:
            _fuzz_step(m, x, v, a, step)
        else:
            seen.append(("refused", i))
        seen += [a.tolist(), x.tolist()]
    if case["grad"]:
        ((x * m.arange(float(x.numel()), dtype=m.float64).reshape(x.shape)).sum()
         + (a * a).sum()).backward()
        seen.append(w.grad.tolist())
    return seen


def test_fuzz_against_torch(xb):
    """Random bases, geometries and writes (through the storage's tensor, the base, the
    result), in and out of a graph, against torch 2.13: values after every step, which
    steps xad refuses (only writes to elements that share a position: PyTorch's order
    there is undefined), gradients. ``XAD_FUZZ_N`` programs (``XAD_FUZZ_SEED``)."""
    rng = random.Random(FUZZ_SEED)
    ran = 0
    for _ in range(FUZZ_N):
        case = _fuzz_case(rng)
        try:
            got = _fuzz_run(xad, case, None)
        except RuntimeError:              # out of the storage's bounds
            with pytest.raises(RuntimeError):
                _fuzz_run(torch, case, set())
            continue
        refused = {s for s in got if isinstance(s, tuple)}
        for _, i in refused:              # only writes to elements sharing a position
            assert _repeats(case, case["steps"][i]), (case, i)
        assert got == _fuzz_run(torch, case, refused), case
        ran += 1
    assert ran >= FUZZ_N // 3


def _repeats(case, step):
    """Whether the elements a step writes through the view include one position twice."""
    off = case["offset"]
    n = case["shape"][0] * case["shape"][1]
    at = FUZZ_BASES[case["base"]](torch.arange(n).reshape(case["shape"])).as_strided(
        case["size"], case["stride"], *([] if off is None else [off]))
    if step[0] == "add" and at.ndim:
        at = at[step[2] % max(at.shape[0], 1):]
    return at.unique().numel() < at.numel()


def test_copies_and_checkpoints_keep_the_sharing_as_torch(xb, tmp_path):
    """``copy.deepcopy`` and ``save``/``load`` of a tensor with its ``as_strided`` views
    give copies that share a new storage (as torch's), sliding windows included."""
    def program(m):
        a = m.arange(6.0)
        views = {"a": a, "y": a.as_strided((3, 2), (1, 1)), "z": a[1:].as_strided((2,), (2,))}
        m.save(views, tmp_path / f"{m.__name__}.pt")
        loaded = m.load(tmp_path / f"{m.__name__}.pt")
        copied = copy.deepcopy(views)
        out = []
        for d in (loaded, copied):
            d["a"][1] = 50.0
            d["z"][1] = -3.0
            out += [d["y"].tolist(), d["z"].tolist(), d["a"].tolist()]
        return out + [a.tolist()]

    got, want = _both(program)
    assert got == want


def test_compiled_steps_read_the_current_storage(xb):
    def step(t):
        w = t.as_strided((3, 2), (1, 1))
        t[5] = t[0] + 1.0                  # a change of the storage inside the step
        return (w * 2.0).sum(axis=1)

    f = xad.compile(step, check=True)
    t, u = xad.arange(6.0), xad.arange(6.0)
    for _ in range(3):
        assert f(t).tolist() == step(u).tolist()
        assert t.tolist() == u.tolist()
        t.add_(1.0)
        u.add_(1.0)
