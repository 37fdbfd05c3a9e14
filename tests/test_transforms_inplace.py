"""In-place changes, through views too, inside ``xad.jvp`` and ``xad.vmap``: tangents and
batched values against ``torch.func.jvp`` and ``torch.func.vmap`` (torch 2.13)."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

import xad

torch = pytest.importorskip("torch")
tfunc = pytest.importorskip("torch.func")

A = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]])
T = np.array([[1.0, 0.5, -1.0], [0.2, 2.0, 1.0]])


def _set_number(x):
    y = x * 1
    y[0] = 5.0  # a number has no tangent: y's tangent there is 0
    return y * x


def _set_through_expand(x):
    y = x * 1
    e = y[:1].expand(3)
    y[0] = 7.0
    return e * x


def _set_through_squeeze(x):
    y = x.unsqueeze(0) * 1
    y.squeeze(0)[1] = 9.0
    return y.sum(0) * x


def _add_into_a_view(x):
    y = x * 2
    v = y[1:]
    v *= 3
    return y


def _add_through_a_view_of_a_clone(x):
    y = x.clone()
    y.view(-1)[0:2].add_(x[0:2] * 10)
    return y.exp()


JVP = [_set_number, _set_through_expand, _set_through_squeeze, _add_into_a_view,
       _add_through_a_view_of_a_clone]


def _np(t):
    return t.numpy() if isinstance(t, xad.Tensor) else t.detach().numpy()


@pytest.mark.parametrize("f", JVP, ids=lambda f: f.__name__)
def test_jvp_of_inplace_changes_matches_torch(xb, f):
    x, t = xad.tensor(A[0], dtype=xad.float64), xad.tensor(T[0], dtype=xad.float64)
    out, tan = xad.jvp(f, (x,), (t,))
    want_out, want_tan = tfunc.jvp(f, (torch.tensor(A[0]),), (torch.tensor(T[0]),))
    np.testing.assert_allclose(_np(out), _np(want_out), rtol=1e-12)
    np.testing.assert_allclose(_np(tan), _np(want_tan), rtol=1e-12)


def _change_through_detach(x):
    y = x * 1
    y.clamp_(min=0.0)
    d = y.detach()
    d.mul_(2.0)  # y's values change, not its tangent
    return y * x


def _change_through_data(x):
    y = x * 1
    y.data.add_(1.0)
    return y * x


@pytest.mark.parametrize("f", [_change_through_detach, _change_through_data],
                         ids=lambda f: f.__name__)
def test_jvp_keeps_the_tangent_of_a_tensor_changed_through_detach_or_data(xb, f):
    """Inside ``xad.jvp`` such a change was recorded, so the tangent became 0 there."""
    test_jvp_of_inplace_changes_matches_torch(xb, f)


@pytest.mark.parametrize("f", [_set_number, _set_through_expand, _set_through_squeeze,
                               _add_into_a_view, _add_through_a_view_of_a_clone,
                               _change_through_detach],
                         ids=lambda f: f.__name__)
def test_vmap_of_inplace_changes_through_views_matches_torch(xb, f):
    """A view made inside ``vmap`` kept its batched parameters, so a change through it was
    written to the wrong elements of its base (or lost)."""
    got = xad.vmap(f)(xad.tensor(A, dtype=xad.float64))
    want = tfunc.vmap(f)(torch.tensor(A))
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)


def test_vmap_refuses_an_index_it_cannot_batch(xb):
    def f(x):
        y = x * 1
        y[xad.tensor([0, 2])] = 0.0
        return y

    with pytest.raises((NotImplementedError, RuntimeError), match="vmap"):
        xad.vmap(f)(xad.tensor(A, dtype=xad.float64))


def test_jvp_of_vmap_and_vmap_of_jvp_with_a_change_through_detach(xb):
    """The change is made per example and keeps the tangent, whichever level is outside."""
    def h(x):
        y = x * x
        y.detach().mul_(2.0)
        return (y * x).sum()

    a, ones = np.array([[1.0, 2.0], [3.0, 4.0]]), np.ones((2, 2))
    want = tfunc.jvp(lambda v: tfunc.vmap(h)(v), (torch.tensor(a),), (torch.tensor(ones),))[1]
    xa, xt = xad.tensor(a, dtype=xad.float64), xad.tensor(ones, dtype=xad.float64)
    got = xad.jvp(lambda v: xad.vmap(h)(v), (xa,), (xt,))[1]
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)
    got = xad.vmap(lambda v: xad.jvp(h, (v,), (xad.ones(2, dtype=xad.float64),))[1])(xa)
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)


def test_nested_vmap_of_changes_through_views_matches_torch(xb):
    def f(x):
        y = x * 2
        v = y[1:]
        v *= 3
        y[0] += x[1:].sum(0)
        return y

    a = np.arange(24.0).reshape(2, 3, 4)
    got = xad.vmap(xad.vmap(f))(xad.tensor(a, dtype=xad.float64))
    want = tfunc.vmap(tfunc.vmap(f))(torch.tensor(a))
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)


# A ``detach()``/``.data`` tensor has a tangent of its own (PyTorch's forward AD: a
# non-differentiable view starts one): an in-place write into it gives it the value's
# tangent and leaves its base's alone. xad gave both the base's (0 for most of these).
def _copy_into_detach_of_zeros(x, m):
    y = m.zeros(3, dtype=x.dtype)
    d = y.detach()
    d.copy_(x * 2)
    return y + d * 10


def _copy_into_data_of_zeros(x, m):
    y = m.zeros(3, dtype=x.dtype)
    d = y.data
    d.copy_(x * 2)
    return y + d * 10


def _overwrite_a_detach_of_a_dual(x, m):
    y = x * 1
    d = y.detach()
    d.copy_(x * 3)
    return y + d * 10


def _multiply_a_detach_by_a_dual(x, m):
    y = x * 2
    d = y.detach()
    d.add_(x)
    d.mul_(x)  # the saved old value of d carries d's tangent, not y's
    return d + y


def _detach_in_place_then_multiply(x, m):
    y = x * 1
    y.detach_()
    y.mul_(x)
    return y * 1


def _base_changed_after_a_detach_took_a_tangent(x, m):
    y = m.zeros(3, dtype=x.dtype)
    d = y.detach()
    d.copy_(x * 2)
    y.mul_(x)  # d's values change with y's, its tangent stays its own
    return d + y * 100


def _write_through_a_view_of_a_detach(x, m):
    y = m.zeros(3, dtype=x.dtype)
    d = y.detach()
    d[:2].copy_(x[:2] * 2)
    d[2] = x[0] * 5
    return y + d[1:].sum() * 10 + d


def _detach_of_a_detach(x, m):
    y = m.zeros(3, dtype=x.dtype)
    d = y.detach()
    e = d.detach()
    e.copy_(x * 2)
    d2 = y.detach()
    return d + e * 10 + d2 * 100


def _data_of_a_dual_multiplied(x, m):
    y = x * 2
    d = y.data
    d.mul_(x)
    return d * 3 + y


DETACHED = [_copy_into_detach_of_zeros, _copy_into_data_of_zeros,
            _overwrite_a_detach_of_a_dual, _multiply_a_detach_by_a_dual,
            _detach_in_place_then_multiply, _base_changed_after_a_detach_took_a_tangent,
            _write_through_a_view_of_a_detach, _detach_of_a_detach,
            _data_of_a_dual_multiplied]


@pytest.mark.parametrize("f", DETACHED, ids=lambda f: f.__name__)
def test_jvp_gives_a_detached_tensor_written_in_place_its_own_tangent(xb, f):
    x, t = xad.tensor(A[0], dtype=xad.float64), xad.tensor(T[0], dtype=xad.float64)
    out, tan = xad.jvp(lambda v: f(v, xad), (x,), (t,))
    want_out, want_tan = tfunc.jvp(lambda v: f(v, torch), (torch.tensor(A[0]),),
                                   (torch.tensor(T[0]),))
    np.testing.assert_allclose(_np(out), _np(want_out), rtol=1e-12)
    np.testing.assert_allclose(_np(tan), _np(want_tan), rtol=1e-12, atol=1e-12)


def test_nested_jvp_and_vmap_of_a_write_into_a_detach(xb):
    """Each level keeps the detached tensor's own tangent (torch.func's nesting agrees)."""
    f = _multiply_a_detach_by_a_dual
    a, ones = np.array([[1.0, 2.0, -1.0], [3.0, 4.0, 0.5]]), np.ones((2, 3))
    want = tfunc.jvp(lambda v: tfunc.vmap(lambda r: f(r, torch))(v), (torch.tensor(a),),
                     (torch.tensor(ones),))[1]
    xa, xt = xad.tensor(a, dtype=xad.float64), xad.tensor(ones, dtype=xad.float64)
    got = xad.jvp(lambda v: xad.vmap(lambda r: f(r, xad))(v), (xa,), (xt,))[1]
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)

    def inner(m):  # the tangent of the tangent: a jvp of a jvp
        return lambda v: (m.func.jvp if m is torch else xad.jvp)(
            lambda u: f(u, m), (v,), (v * 0 + 1,))[1]
    want = tfunc.jvp(inner(torch), (torch.tensor(A[0]),), (torch.tensor(T[0]),))[1]
    got = xad.jvp(inner(xad), (xad.tensor(A[0], dtype=xad.float64),),
                  (xad.tensor(T[0], dtype=xad.float64),))[1]
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)


# A fuzzer of the above: random programs of detach(), .data, slices, products and in-place
# changes (copy_ mul_ add_ zero_ setitem) under xad.jvp against torch.func.jvp, comparing
# every tensor's value and tangent. A small seeded run per backend; XAD_FUZZ_N=2000 (and
# XAD_FUZZ_SEED) for the long run.
FUZZ_N = int(os.environ.get("XAD_FUZZ_N", "12"))
FUZZ_SEED = int(os.environ.get("XAD_FUZZ_SEED", "0"))
X4, T4 = np.array([0.5, -1.0, 2.0, 1.5]), np.array([1.0, 0.5, -1.0, 2.0])


def _program(seed: int) -> list[tuple]:
    rng = random.Random(seed)
    steps: list[tuple] = []
    live = 2  # t0 = x * 1.5, t1 = zeros
    for _ in range(rng.randint(3, 8)):
        r, i, c = rng.random(), rng.randrange(live), round(rng.uniform(-2, 2), 2)
        kinds = [(0.12, ("detach", i)), (0.2, ("data", i)), (0.3, ("view", i, rng.randrange(3))),
                 (0.38, ("mul", i, c)), (0.5, ("copy_", i, c)), (0.6, ("mul_", i)),
                 (0.7, ("add_", i, c)), (0.78, ("set_num", i, rng.randrange(4), c)),
                 (0.9, ("set_x", i, rng.randrange(4), c)), (1.0, ("zero_", i))]
        step = next(s for p, s in kinds if r < p)
        steps.append(step)
        live += step[0] in ("detach", "data", "view", "mul")
    return steps


def _run(steps: list[tuple], x, m) -> tuple:
    ts = [x * 1.5, m.zeros(4, dtype=x.dtype)]
    for op, i, *a in steps:
        t = ts[i]
        k = t.shape[0]
        if op in ("detach", "data"):
            ts.append(t.detach() if op == "detach" else t.data)
        elif op == "view":
            ts.append(t[min(a[0], k - 1):])
        elif op == "mul":
            ts.append(t * x[:k] * a[0])
        elif op in ("copy_", "add_"):
            getattr(t, op)(x[:k] * a[0])
        elif op == "mul_":
            t.mul_(x[:k])
        elif op == "zero_":
            t.zero_()
        else:  # set_num, set_x
            t[a[0] % k] = a[1] if op == "set_num" else x[a[0]] * a[1]
    return tuple(t * 1 for t in ts)


def _fuzz_one(seed: int) -> str | None:
    steps = _program(seed)
    raised: list = [None, None]
    try:
        want = tfunc.jvp(lambda v: _run(steps, v, torch), (torch.tensor(X4),),
                         (torch.tensor(T4),))
    except Exception as e:  # noqa: BLE001 - compared with xad's below
        raised[1] = e
    try:
        got = xad.jvp(lambda v: _run(steps, v, xad), (xad.tensor(X4, dtype=xad.float64),),
                      (xad.tensor(T4, dtype=xad.float64),))
    except Exception as e:  # noqa: BLE001
        raised[0] = e
    if raised != [None, None]:
        return None if None not in raised else f"raised: xad {raised[0]!r}, torch {raised[1]!r}"
    for j, (p, q) in enumerate(zip(got[0] + got[1], want[0] + want[1])):
        if not np.allclose(_np(p), _np(q), rtol=1e-12, atol=1e-12):
            return f"output {j}: xad {_np(p)} torch {_np(q)}"
    return None


def test_jvp_fuzz_of_detach_data_views_and_inplace_changes_matches_torch(xb):
    n = FUZZ_N if xb.name != "jax" or "XAD_FUZZ_N" in os.environ else 3
    seeds = [FUZZ_SEED * 1_000_003 + k for k in range(n)]
    failures = [f"seed {s}: {d}\n  steps: {_program(s)}" for s in seeds
                if (d := _fuzz_one(s)) is not None]
    assert not failures, "\n".join(failures[:5]) + f"\n({len(failures)} of {n})"


def test_vmap_refuses_a_batched_write_into_a_detach_of_an_unbatched_tensor(xb):
    """``vmap`` of ``_copy_into_detach_of_zeros``: the per-example value cannot go into one
    unbatched storage; torch.func.vmap raises too (no silent mixing of the examples)."""
    a = xad.tensor(A, dtype=xad.float64)
    with pytest.raises((NotImplementedError, RuntimeError), match="vmap"):
        xad.vmap(lambda v: _copy_into_detach_of_zeros(v, xad))(a)
    with pytest.raises(RuntimeError, match="vmap"):
        tfunc.vmap(lambda v: _copy_into_detach_of_zeros(v, torch))(torch.tensor(A))


def test_no_grad_changes_of_leaves_inside_a_transform(xb):
    """Inside ``xad.jvp``/``vmap``, a leaf that requires grad may change in place under
    ``no_grad`` (an initialiser, an optimiser-like update), as outside: it raised "a leaf
    that requires grad", so an ``nn.Linear`` could not be made inside ``jvp``."""
    w = xad.ones(3, requires_grad=True)

    def f(x):
        lin = xad.nn.Linear(3, 2)  # (its reset_parameters writes its leaves in place)
        with xad.no_grad():
            w.mul_(2.0)
            w[0] = 5.0
        return (x * w).sum() + lin.weight.sum() * 0

    out, tangent = xad.jvp(f, (xad.ones(3),), (xad.ones(3),))
    assert w.tolist() == [5.0, 2.0, 2.0] and w.requires_grad and w.is_leaf
    assert tangent.item() == 9.0
    with pytest.raises(RuntimeError, match="leaf that requires grad"):
        xad.jvp(lambda x: w.mul_(x), (xad.ones(3),), (xad.ones(3),))
