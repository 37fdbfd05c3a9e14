"""xad.compile is sound by construction (issue 24): no array made during a recording is
replayed as a constant unless a static factory made it; writes go to the current call's
tensors; guards cannot collide; ``check=True`` names the first difference. Each test is one
of the issue's examples of a compiled call returning another number than eager mode."""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest
from check_mode import CHECK_MODE

import xad
from xad import nn

# a test that expects a replay fails if the function fell back to eager (which warns)
pytestmark = pytest.mark.filterwarnings("error:xad.compile:RuntimeWarning")


def _f64(*values):
    return xad.tensor(list(values), dtype=xad.float64)


def _calls(f, fn, inputs):
    """``f`` (compiled) and ``fn`` (eager) agree on every input, bit for bit."""
    for x in inputs:
        got, want = f(*x), fn(*x)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(g.numpy(), w.numpy())


@pytest.mark.parametrize("which", ["argsort", "argmax", "nonzero", "unique", "mask",
                                   "searchsorted"])
def test_data_dependent_indices_are_recomputed(xb, which):
    def fn(x):
        if which == "argsort":
            return xad.take(x, xad.argsort(x))
        if which == "argmax":
            return xad.take(x, xad.reshape(xad.argmax(x), (1,)))
        if which == "nonzero":
            return xad.take(x, xad.nonzero(x > 0)[0])
        if which == "unique":
            v, c = xad.unique_counts(xad.round(x))
            return v * c.astype(xad.float64)
        if which == "searchsorted":
            return xad.searchsorted(_f64(-1.0, 0.0, 1.0), x)
        return x[x > 0]

    dynamic = which in ("nonzero", "unique", "mask")  # shapes no capture holds
    f = xad.compile(fn, cuda_graphs=False if dynamic else None)
    _calls(f, fn, [(_f64(3.0, -1.0, 2.0),), (_f64(-5.0, 4.0, 1.0),),
                   (_f64(2.0, 2.0, -7.0),)])
    assert f.recordings <= 3


def test_hard_example_mining_trains_as_eager(xb):
    """Select the largest residuals (argsort) and train on them: compiled = eager."""
    def run(compiled):
        xad.manual_seed(0)
        w = xad.zeros(3, dtype=xad.float64, requires_grad=True)
        opt = xad.optim.SGD([w], lr=0.1)

        def step(x, y):
            opt.zero_grad()
            r = (x @ w - y) ** 2
            hard = xad.argsort(r.detach(), descending=True)[:2]
            loss = xad.take(r, hard).sum()
            loss.backward()
            opt.step()
            return loss.detach()

        f = xad.compile(step) if compiled else step
        g = np.random.default_rng(0)
        for _ in range(5):
            x = xad.tensor(g.standard_normal((6, 3)), dtype=xad.float64)
            y = xad.tensor(g.standard_normal(6), dtype=xad.float64)
            f(x, y)
        return w.numpy()

    np.testing.assert_array_equal(run(True), run(False))


def test_tensor_of_an_argument_is_a_copy_each_call(xb):
    f = xad.compile(lambda x: xad.tensor(x) * 2)
    assert f(_f64(1.0, 2.0)).tolist() == [2.0, 4.0]
    assert f(_f64(5.0, 6.0)).tolist() == [10.0, 12.0]


def test_a_backend_array_wrapped_by_hand_runs_eagerly_with_a_warning(xb):
    def fn(x):
        b = x.backend
        return x + xad.Tensor(b.xp.abs(x.array), backend=b)

    f = xad.compile(fn)
    with pytest.warns(RuntimeWarning, match=r"Tensor\(\.\.\.\)"):
        assert f(_f64(-1.0)).tolist() == [0.0]
    assert f(_f64(-2.0)).tolist() == [0.0]


def test_aliased_arguments_get_their_own_program(xb):
    f = xad.compile(lambda a, b: a * 10 + b)
    a, b = _f64(1.0), _f64(2.0)
    assert f(a, a).tolist() == [11.0]
    assert f(a, b).tolist() == [12.0]
    assert f(b, a).tolist() == [21.0]


def test_inplace_changes_and_grads_reach_the_current_arguments(xb):
    @xad.compile
    def f(x, p):
        x += 1.0
        (p * x).sum().backward()
        return x * 1

    for k in range(3):
        x, p = _f64(k, k), _f64(1.0, 2.0).requires_grad_()
        f(x, p)
        assert x.tolist() == [k + 1.0, k + 1.0]
        assert p.grad.tolist() == [k + 1.0, k + 1.0]
    assert f.recordings == 1


def test_inplace_change_with_a_grad_requiring_right_hand_side(xb):
    @xad.compile
    def f(x, w):
        x.add_(w * 2)
        return x.detach() * 1

    w = _f64(1.0).requires_grad_()
    for k in range(3):
        x = _f64(k)
        with xad.no_grad():
            f(x, w)
        assert x.tolist() == [k + 2.0]


@pytest.mark.parametrize("pair", [(0.0, -0.0), (1, 1.0), (float("nan"), 0.0)])
def test_python_scalars_are_keyed_by_type_and_exact_value(xb, pair):
    f = xad.compile(lambda x, s: x * s)
    fn = lambda x, s: x * s  # noqa: E731
    x = _f64(-1.0)
    for s in (*pair, *pair):
        np.testing.assert_array_equal(f(x, s).numpy(), fn(x, s).numpy())
        assert np.signbit(f(x, s).numpy()) == np.signbit(fn(x, s).numpy())
    assert f.recordings == 2


def test_host_arrays_are_keyed_by_content_not_identity():
    with xad.use_backend("numpy"):
        f = xad.compile(lambda x, h: x + h.sum())
        x = _f64(0.0)
        for k in range(4):
            h = np.full(2, float(k))  # the same id() again and again
            assert f(x, h).tolist() == [2.0 * k]
            del h


def test_hooks_registered_after_recording_run(xb):
    w = _f64(1.0, 2.0).requires_grad_()
    lin = nn.Linear(2, 1).to(xad.float64)

    @xad.compile
    def step(x):
        w.grad = None
        (lin(x * w)).sum().backward()
        return w.grad.detach() * 1

    x = _f64(1.0, 1.0)
    g0 = step(x).tolist()
    h = w.register_hook(lambda g: g * 10)
    with pytest.warns(RuntimeWarning, match="hook"):
        assert step(x).tolist() == [10 * v for v in g0]
    h.remove()
    assert step(x).tolist() == g0
    seen = []
    lin.register_forward_hook(lambda m, i, o: seen.append(1))
    with pytest.warns(RuntimeWarning, match="hooks"):
        step(x)
    assert seen == [1]


def test_a_returned_constant_is_fresh_each_call(xb):
    f = xad.compile(lambda x: (x * 2, xad.ones(2, dtype=xad.float64) * 3))
    _, c1 = f(_f64(1.0))
    c1 += 100.0
    _, c2 = f(_f64(1.0))
    assert c2.tolist() == [3.0, 3.0]


def test_the_cache_is_bounded_in_keys_and_programs(xb):
    f = xad.compile(lambda x: x + 1, cache_size=4)
    with pytest.warns(RuntimeWarning, match="run eagerly"):
        for n in range(1, 40):
            assert f(xad.zeros(n)).tolist() == [1.0] * n
    assert len(f._cache) <= 4 and f.recordings <= 4


def test_a_grad_of_a_leaf_in_a_reference_cycle_survives_gc(xb):
    """The ``.grad`` of a leaf made inside the call is not replayed into the first call's
    leaf (which may live on in a reference cycle, or be collected)."""
    class Box:
        pass

    @xad.compile
    def f(x):
        box = Box()
        box.me = box
        box.w = xad.ones(2, dtype=xad.float64, requires_grad=True)
        y = (box.w * x).sum()
        y.backward()
        return y.detach(), box.w.grad.detach() * 1

    for k in range(4):
        y, g = f(_f64(k, 2.0))
        assert y.tolist() == k + 2.0 and g.tolist() == [k, 2.0]
        gc.collect()
    assert f.recordings == 1


def test_check_mode_names_the_first_difference(xb):
    k, i = [0.0] * 64 + [2.0], 64
    f = xad.compile(lambda x: (x + 1) * k[i], check=True)
    assert f(_f64(1.0)).tolist() == [4.0]
    assert f(_f64(2.0)).tolist() == [6.0]
    k[64] = 3.0  # a Python value the guards do not see (past pyguards.WHOLE, a computed index)
    with pytest.raises(RuntimeError, match=r"instruction 1: multiply"):
        f(_f64(1.0))


def test_check_mode_passes_a_training_step(xb):
    xad.manual_seed(1)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)).to(xad.float64)
    opt = xad.optim.Adam(model.parameters(), lr=0.01)

    @xad.compile(check=True)
    def step(x):
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        return loss.detach()

    x = xad.ones(5, 3, dtype=xad.float64)
    for _ in range(3):
        step(x)
    assert step.recordings == 1


def test_check_mode_from_the_environment(monkeypatch):
    monkeypatch.setenv("XAD_COMPILE_CHECK", "1")
    assert xad.compile(lambda x: x).check
    monkeypatch.setenv("XAD_COMPILE_CHECK", "0")
    assert not xad.compile(lambda x: x, check=True).check
    with warnings.catch_warnings():
        warnings.simplefilter("error")


def test_a_constant_kept_as_state_is_read_again(xb):
    """A tensor a factory made in the first call and kept (a lazily made cache, a
    GradScaler's scale) is state: later changes to it are seen, not the first value."""
    cache = {}

    @xad.compile
    def f(x):
        if "s" not in cache:
            cache["s"] = xad.full((1,), 2.0, dtype=xad.float64)
        return x * cache["s"]

    for k in range(4):
        assert f(_f64(1.0)).tolist() == [2.0 + k]
        cache["s"] += 1.0
    assert f.recordings == 1


def test_an_argument_left_in_a_graph_runs_eagerly(xb):
    """``x.add_(w * 2)`` with ``w`` requiring grad makes the argument ``x`` a node of the
    graph (eager mode); a replay could not, so the call stays eager."""
    @xad.compile
    def f(x, w):
        x.add_(w * 2)
        return x.detach() * 1

    w = _f64(1.0).requires_grad_()
    with pytest.warns(RuntimeWarning, match="argument 0 in a graph"):
        f(_f64(0.0), w)
    x = _f64(5.0)
    assert f(x, w).tolist() == [7.0] and x.grad_fn is not None


@pytest.mark.parametrize("which", ["nonzero", "mask"])
def test_a_data_dependent_shape_that_changes_gets_another_program(xb, which):
    """The backward of indexing by ``nonzero`` or a mask has the index count in its shapes:
    a replay stops where that count differs and the call records again."""
    def fn(x, w):
        sel = xad.take(w, xad.nonzero(x > 0)[0]) if which == "nonzero" else w[x > 0]
        (sel * sel).sum().backward()
        return w.grad.detach() * 1

    f = xad.compile(fn, cuda_graphs=False)  # (data-dependent shapes: no capture holds them)
    for x in ([1.0, -1.0, 1.0, 1.0], [1.0, -1.0, -1.0, 1.0], [1.0, 1.0, 1.0, -1.0],
              [-1.0, 1.0, 1.0, 1.0]):
        got = f(_f64(*x), _f64(1.0, 2.0, 3.0, 4.0).requires_grad_())
        want = fn(_f64(*x), _f64(1.0, 2.0, 3.0, 4.0).requires_grad_())
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    if not CHECK_MODE:  # check mode runs a changed shape eagerly, without recording it
        assert f.recordings == 2


@pytest.mark.parametrize("which", ["gather", "take_along_axis", "scatter_add", "index_fill"])
def test_a_replay_checks_the_range_of_its_own_index(xb, which):
    """Indexing along an axis by a tensor is replayed (not run eagerly) and each replay
    checks that call's index: an index out of range raises, never reads another element
    (NumPy wraps -1, CuPy wraps every index, JAX clamps)."""
    def fn(x, i):
        if which == "gather":
            return xad.gather(x, 1, i) * 2
        if which == "take_along_axis":
            return xad.take_along_axis(x, i, axis=1) * 2
        if which == "scatter_add":
            return x.scatter_add(1, i, xad.ones_like(x[:, :1]))
        return x.index_fill(1, xad.reshape(i, (-1,)), -1.0)

    x = xad.reshape(xad.arange(6.0, dtype=xad.float64), (2, 3))
    f = xad.compile(fn)
    good = [xad.tensor([[2], [0]]), xad.tensor([[1], [1]]), xad.tensor([[0], [2]])]
    _calls(f, fn, [(x, i) for i in good])
    bad = [xad.tensor([[3], [0]]), xad.tensor([[0], [7]])]
    if which not in ("take_along_axis", "index_fill"):  # NumPy's -1 is valid there
        bad.append(xad.tensor([[-1], [0]]))
    for i in bad:
        with pytest.raises(IndexError, match=f"{which}: index -?[0-9] is out of bounds"):
            f(x, i).tolist()  # CuPy reports at this host read
    assert f.recordings == 1


@pytest.mark.parametrize("clear", ["zero_", "setitem", "view", "before"])
def test_an_inplace_change_of_a_grad_reaches_the_leafs_grad(xb, clear):
    """``w.grad.zero_()`` (or a write through a view of it) in a compiled step: on JAX the
    replay dropped the change of a .grad made in the call, so the gradient accumulated
    across calls and the weights left eager's (from the first replay on)."""
    def make():
        w = xad.tensor([[0.0, 0.2, 0.4], [0.6, 0.8, 1.0]], dtype=xad.float64,
                       requires_grad=True)

        def step(x):
            if clear == "before" and w.grad is not None:
                w.grad.zero_()
            loss = ((w * x) ** 2).sum()
            loss.backward()
            with xad.no_grad():
                w.sub_(0.1 * w.grad)
                if clear == "zero_":
                    w.grad.zero_()
                elif clear == "setitem":
                    w.grad[0] = 0.0
                    w.grad[1].zero_()
                elif clear == "view":
                    w.grad.T[1:].zero_()
            return loss.detach()
        return w, step

    (we, eager), (wc, step) = make(), make()
    step = xad.compile(step)
    rng = np.random.default_rng(1)
    for _ in range(5):
        x = rng.normal(size=(2, 3))
        _calls(step, eager, [(xad.tensor(x, dtype=xad.float64),)])
        np.testing.assert_array_equal(wc.numpy(), we.numpy())
        np.testing.assert_array_equal(wc.grad.numpy(), we.grad.numpy())


@pytest.mark.parametrize("which", ["argument", "live", "detach"])
def test_a_returned_view_of_an_outside_tensor_stays_its_view(xb, which):
    """A change of the returned view reaches the tensor it views, as in eager mode: a
    replay remakes the view (its result was a new tensor: on JAX the change was lost, on
    NumPy it reached the memory behind the tensor's version counter)."""
    def make():
        w = xad.zeros((2, 3), dtype=xad.float64)

        def f(x):
            w.add_(x)
            return {"argument": lambda: x[0], "live": lambda: w.T,
                    "detach": lambda: x.detach()}[which]()
        return w, f

    (we, eager), (wc, step) = make(), make()
    step = xad.compile(step)
    for k in range(3):
        a = np.arange(6.0).reshape(2, 3) + k
        xe, xc = xad.tensor(a, dtype=xad.float64), xad.tensor(a, dtype=xad.float64)
        eager(xe).mul_(10.0)
        step(xc).mul_(10.0)
        np.testing.assert_array_equal(xc.numpy(), xe.numpy())
        np.testing.assert_array_equal(wc.numpy(), we.numpy())
        assert xc._version == xe._version
    assert step.recordings == 1


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
@pytest.mark.parametrize("graphs", [False, True])
def test_clip_grad_norm_of_many_gradients_is_eagers_bits(xb, norm_type, graphs):
    """More than 8 gradients: eager mode on a device (CuPy) reduces them joined, in one
    reduction; a compiled call summed them per gradient, which rounds otherwise (the norm
    an ulp off, then every clipped gradient and parameter)."""
    def make():
        xad.manual_seed(0)
        m = nn.Sequential(*[nn.Linear(6, 6) for _ in range(5)]).double()

        def step(x):
            m.zero_grad()
            (m(x) ** 2).mean().backward()
            return nn.utils.clip_grad_norm_(m.parameters(), 0.5, norm_type).detach()
        return m, step

    (me, eager), (mc, step) = make(), make()
    step = xad.compile(step, cuda_graphs=graphs)
    for k in range(4):
        x = np.random.default_rng(k).standard_normal((5, 6))
        _calls(step, eager, [(xad.tensor(x, dtype=xad.float64),)])
        for pe, pc in zip(me.parameters(), mc.parameters()):
            np.testing.assert_array_equal(pc.grad.numpy(), pe.grad.numpy())
