"""xad.compile against Python-side state a first call reads: each test is a way a replay
gave another number than eager mode (found by an adversarial hunt), now a new recording, an
eager call with a warning, or the same number."""

from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest
from check_mode import CHECK_MODE

import xad
from xad import nn


def _f64(*values):
    return xad.tensor(list(values), dtype=xad.float64)


def test_grads_accumulate_after_a_host_call_that_leaves_them(xb):
    """A scheduler's step (a host call) before ``backward()`` decides nothing about the
    ``.grad`` fields: with no ``zero_grad``, they accumulate across calls, as in eager
    mode (the replay used to overwrite them)."""
    def world():
        w = _f64(1.0, 2.0).requires_grad_()
        opt = xad.optim.SGD([w], lr=0.1)
        sched = xad.optim.lr_scheduler.StepLR(opt, 1)

        def step(x):
            sched.step()
            (w * x).sum().backward()
            return w.grad.detach() * 1
        return step

    f, eager = xad.compile(world()), world()
    for k in range(4):
        np.testing.assert_array_equal(f(_f64(1.0, k)).numpy(), eager(_f64(1.0, k)).numpy())


def test_zero_grad_inside_records_once(xb):
    """``opt.zero_grad()`` inside the step decides ``.grad`` (None) whatever it was: one
    recording serves the first call (no gradients yet) and the later ones."""
    w = _f64(1.0, 2.0).requires_grad_()
    opt = xad.optim.SGD([w], lr=0.1)

    @xad.compile
    def step(x):
        opt.zero_grad()
        (w * x).sum().backward()
        opt.step()
        return w.grad.detach() * 1

    for k in range(3):
        assert step(_f64(1.0, k)).tolist() == [1.0, k]
    assert step.recordings == 1


def test_an_argument_keyed_by_identity_is_never_a_later_object(xb):
    """A function passed as an argument is keyed by identity: another function made
    later at the same address (the first one freed) records its own program."""
    f = xad.compile(lambda x, g: g(x) * 1)
    x = _f64(1.0)
    for k in range(4):
        g = (lambda t: t * 2) if k % 2 == 0 else (lambda t: t + 5)
        assert f(x, g).tolist() == g(x).tolist()
        del g


@pytest.mark.filterwarnings("ignore:xad.compile:RuntimeWarning")
def test_a_module_attribute_assigned_between_calls_records_again(xb):
    """Dropout's ``p`` (a Python number the first call used) set to 0 between calls: the
    next call records again and drops nothing, as eager mode."""
    d = nn.Dropout(0.5)
    f = xad.compile(lambda x: d(x) * 1)
    x = xad.ones(16, dtype=xad.float64)
    f(x)
    d.p = 0.0
    assert f(x).tolist() == [1.0] * 16
    assert f(x).tolist() == [1.0] * 16


def test_a_parameter_replaced_between_calls_is_read(xb):
    """``lin.weight = Parameter(...)`` between calls: the next call reads the new one."""
    lin = nn.Linear(2, 1).to(xad.float64)
    opt = xad.optim.SGD(lin.parameters(), lr=0.1)  # holds the first weight
    f = xad.compile(lambda x: lin(x) * 1)
    x = _f64(1.0, 1.0)
    with xad.no_grad():
        f(x)
        lin.weight = nn.Parameter(xad.full((1, 2), 3.0, dtype=xad.float64))
        np.testing.assert_array_equal(f(x).numpy(), lin(x).numpy())
        lin.weight = nn.Parameter(xad.zeros(1, 2, dtype=xad.float64))
        np.testing.assert_array_equal(f(x).numpy(), lin(x).numpy())
    assert len(opt.param_groups[0]["params"]) == 2


def test_a_branch_on_a_raw_array_runs_eagerly(xb):
    """``x.array`` read inside: what Python does with it (a branch) is not recorded, so
    the function runs eagerly with a warning instead of replaying the first branch."""
    def fn(x):
        if x.backend.to_numpy(x.array).sum() > 0:  # a host copy of the raw array
            return x * 1
        return x * -1

    f = xad.compile(fn)
    with pytest.warns(RuntimeWarning, match=r"\.array of a tensor"):
        assert f(_f64(1.0)).tolist() == [1.0]
    assert f(_f64(-1.0)).tolist() == [1.0]


@pytest.mark.parametrize("which", ["mask", "nonzero", "unique"])
def test_a_data_dependent_shape_read_only_by_python_is_checked(xb, which):
    """A count Python reads from a data-dependent shape (``x[x > 0].shape[0]``), with
    the selection itself unused: the replay still computes it and records again where
    the count differs (the unused selection was dropped, the first count replayed)."""
    def fn(x):
        if which == "mask":
            return x * x[x > 0].shape[0]
        if which == "nonzero":
            return x * len(xad.nonzero(x > 0)[0])
        return x * xad.unique_values(x).shape[0]

    f = xad.compile(fn)
    for v in ([1.0, -1.0, 2.0], [1.0, 1.0, 2.0], [-1.0, -1.0, 2.0]):
        assert f(_f64(*v)).tolist() == fn(_f64(*v)).tolist()


def test_an_argument_with_other_strides_gets_its_own_program():
    """On NumPy a replay writes results into dead buffers (``out=``) chosen for the
    recorded layout: an argument with other strides (Fortran order) records again, so
    the sum below adds in eager mode's order, bit for bit."""
    def fn(a, b):
        w = b * 0.9999 + a * 1.0001
        return w.sum(axis=1) * 1

    with xad.use_backend("numpy"):
        f = xad.compile(fn)
        g = np.random.default_rng(0)
        for fortran in (False, True, True):
            a = g.standard_normal((64, 64)).astype(np.float32)
            b = np.asfortranarray(a[::-1]) if fortran else a[::-1].copy()
            got = f(xad.Tensor(a), xad.Tensor(b))
            np.testing.assert_array_equal(got.numpy(), fn(xad.Tensor(a), xad.Tensor(b)).numpy())


def test_a_parameter_group_added_between_calls(xb):
    """``add_param_group`` between calls: ``zero_grad`` (a host call) now clears another
    gradient, which the replay read (it raised in the middle of the step, after clearing)."""
    def world():
        w, v = _f64(1.0, 2.0).requires_grad_(), _f64(3.0).requires_grad_()
        opt = xad.optim.SGD([w], lr=0.1)

        def step(x):
            opt.zero_grad()
            ((w * x).sum() + (v * v).sum()).backward()
            opt.step()
            return w.detach() * 1, v.detach() * 1, v.grad.detach() * 1
        return step, opt, v

    (f, fopt, fv), (e, eopt, ev) = world(), world()
    f = xad.compile(f)
    for k in range(5):
        if k == 2:
            fopt.add_param_group({"params": [fv]})
            eopt.add_param_group({"params": [ev]})
        for got, want in zip(f(_f64(1.0, k)), e(_f64(1.0, k))):
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_a_change_through_a_view_of_an_argument_is_counted(xb):
    """``x[0:1] += 1`` inside: the replay's kernel writes ``x``'s memory; ``x``'s version
    moves as in eager mode, so a graph outside that saved ``x`` raises at backward
    (it used the changed values silently)."""
    @xad.compile
    def bump(x):
        v = x[0:1]
        v += 1.0
        return v * 1

    for _ in range(3):
        w, x = _f64(2.0, 2.0).requires_grad_(), _f64(3.0, 3.0)
        y = (w * x).sum()
        bump(x)
        with pytest.raises(RuntimeError, match="saved"):
            y.backward()


@pytest.mark.parametrize("graphs", [False, True], ids=["", "cuda_graphs"])
def test_results_keep_eager_identities(xb, graphs):
    """A result that is an argument, the same tensor twice, or a view of an argument is
    so after a replay too: changing it in place changes what eager mode's change (on
    JAX, whose arrays are immutable, a replay's results were unrelated copies; under CUDA
    graphs, on CuPy, a view was a copy)."""
    def fn(x):
        x.mul_(2.0)
        y = x * 1
        return x, y, y, x[0:1], x.detach()

    f = xad.compile(fn, cuda_graphs=graphs)
    for k in range(5):
        xf, xe = _f64(1.0, k), _f64(1.0, k)
        got, want = f(xf), fn(xe)
        for r in (got, want):
            r[0].add_(10.0)
            r[1].add_(5.0)
            r[3].add_(100.0)
            r[4].add_(1000.0)
        for a, b in zip((xf, *got), (xe, *want)):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert got[0] is xf and got[1] is got[2]
        assert got[3]._version == want[3]._version and xf._version == xe._version


def test_a_module_removed_from_a_module_dict_between_calls(xb):
    """``del blocks["b"]`` (the module kept elsewhere): the next call records again
    instead of replaying the removed block."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.Linear(2, 2)})

        def forward(self, x):
            for m in self.blocks.values():
                x = m(x)
            return x

    net = Net().to(xad.float64)
    f = xad.compile(lambda x: net(x) * 1)
    x = _f64(1.0, 2.0)
    with xad.no_grad():
        f(x)
        kept = net.blocks.pop("b")
        np.testing.assert_array_equal(f(x).numpy(), net(x).numpy())
    assert kept is not None


def test_a_compiled_function_under_jvp_and_vmap_is_traced_through(xb):
    """``xad.jvp`` and ``xad.vmap`` of a compiled function: it runs as written inside
    them (a replay lost the tangent, 0, and ignored the batching on its second call)."""
    fn = lambda x: (x * x).sum() * 1  # noqa: E731
    f = xad.compile(fn)
    x, t = _f64(1.0, 2.0), _f64(1.0, 0.0)
    assert f(x).tolist() == 5.0
    for _ in range(2):
        assert xad.jvp(f, (x,), (t,))[1].tolist() == 2.0
    g = xad.compile(fn)
    xs = xad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=xad.float64)
    for _ in range(2):
        assert xad.vmap(g)(xs).tolist() == [5.0, 25.0]


def test_zero_grad_to_zeros_replays(xb):
    """``opt.zero_grad(set_to_none=False)`` inside: the gradients it makes are read as the
    parameters' ``.grad`` at each replay (the step ran eagerly for ever before)."""
    def world():
        w = _f64(1.0, 2.0).requires_grad_()
        opt = xad.optim.SGD([w], lr=0.1, momentum=0.9)

        def step(x):
            opt.zero_grad(set_to_none=False)
            (w * x).sum().backward()
            opt.step()
            return w.detach() * 1, w.grad * 1
        return step

    f, e = xad.compile(world()), world()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        for k in range(4):
            for got, want in zip(f(_f64(1.0, k)), e(_f64(1.0, k))):
                np.testing.assert_array_equal(got.numpy(), want.numpy())
    if not CHECK_MODE:
        assert f.recordings <= 2  # .grad None, then zeros


@pytest.mark.parametrize("which", ["view", "same"])
def test_arguments_sharing_memory_under_cuda_graphs(xb, which):
    """``f(x, x[1:])`` or ``f(x, x)`` with ``cuda_graphs=True``: the graphs read copies of
    the arguments, so an in-place change of one missed the other (and, through the view,
    the tensor itself); such calls replay without graphs (on CuPy; elsewhere the flag does
    nothing)."""
    def fn(x, v):
        v += 1.0
        return x * 1, v * 1

    f = xad.compile(fn, cuda_graphs=True)
    for k in range(5):
        xf, xe = _f64(1.0, 2.0, 3.0) + k, _f64(1.0, 2.0, 3.0) + k
        got = f(xf, xf[1:] if which == "view" else xf)
        want = fn(xe, xe[1:] if which == "view" else xe)
        for a, b in zip((xf, *got), (xe, *want)):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_named_tuples_are_structure(xb):
    """A named tuple of tensors (a batch) is flattened like a tuple: a new one each call
    is a new argument, not a new key (keyed by identity it recorded at every call, then ran
    eagerly); a returned one is rebuilt."""
    batch = collections.namedtuple("batch", "x y")
    f = xad.compile(lambda b: batch(b.x * 2 + b.y, b.y * 1))
    for k in range(4):
        out = f(batch(_f64(k), _f64(1.0)))
        assert type(out) is batch and out.x.tolist() == [2.0 * k + 1]
    if not CHECK_MODE:
        assert f.recordings == 1


def test_a_bound_method_argument_is_keyed_by_its_object_and_function(xb):
    """``f(x, obj.scale)``: a bound method is made anew at each access, so it is keyed by
    its object and function (one recording), and another object is another key."""
    class Scale:
        def __init__(self, k):
            self.k = k

        def apply(self, t):
            return t * self.k

    f = xad.compile(lambda x, g: g(x) * 1)
    a, b = Scale(2.0), Scale(3.0)
    for _ in range(3):
        assert f(_f64(1.0), a.apply).tolist() == [2.0]
        assert f(_f64(1.0), b.apply).tolist() == [3.0]
    if not CHECK_MODE:
        assert f.recordings == 2


def test_a_result_kept_as_state_is_read_again(xb):
    """A tensor an operation made in the first call and kept (a lazily filled cache) is
    state: the next call records again and reads it, so a change of it is seen (a replay
    recomputed the first call's value)."""
    cache = {}

    def fn(x):
        if "s" not in cache:
            cache["s"] = x * 0 + 1.0
        return x * cache["s"]

    f = xad.compile(fn)
    for k in range(4):
        assert f(_f64(1.0, 2.0)).tolist() == [1.0 + k, 2.0 + 2 * k]
        cache["s"] += 1.0


@pytest.mark.filterwarnings("ignore:xad.compile:RuntimeWarning")
def test_an_argument_that_becomes_a_view_of_a_tensor_it_changes(xb):
    """Recorded with a view of another tensor, called with a view of the tensor it changes
    in place (``f(w[0:2])``, ``w.mul_(2)`` inside): eager mode's view sees the change, so
    the call runs eagerly (on JAX a replay read the view's old values)."""
    def world():
        w = _f64(1.0, 2.0, 3.0)

        def fn(v):
            w.mul_(2.0)
            return v * 1
        return w, fn

    (wf, f), (we, e) = world(), world()
    f = xad.compile(f)
    for k in range(4):
        vf = _f64(5.0, 6.0, 7.0)[0:2] if k < 2 else wf[0:2]
        ve = _f64(5.0, 6.0, 7.0)[0:2] if k < 2 else we[0:2]
        np.testing.assert_array_equal(f(vf).numpy(), e(ve).numpy())
        np.testing.assert_array_equal(wf.numpy(), we.numpy())


@pytest.mark.parametrize("graphs", [False, True], ids=["", "cuda_graphs"])
def test_a_returned_grad_is_the_grad(xb, graphs):
    """``return w.grad`` (not detached): a replay returns the ``.grad`` tensor it gave
    ``w``, as eager mode, so changing the result changes ``w.grad`` (on JAX it was a new
    tensor over the same values, and ``w.grad`` kept the old ones)."""
    w = _f64(1.0, 2.0).requires_grad_()

    def fn(x):
        w.grad = None
        (w * x).sum().backward()
        return w.grad

    f = xad.compile(fn, cuda_graphs=graphs)
    for k in range(5):
        g = f(_f64(1.0, k))
        assert g is w.grad
        g.add_(10.0)
        assert w.grad.tolist() == [11.0, 10.0 + k]


def test_a_parameter_with_another_layout_gets_its_own_program():
    """A tensor from outside (a parameter) whose data is replaced by the same values in
    another memory layout (Fortran order): the replay's ``out=`` buffers and reductions
    were planned for the recorded layout, so it records again and sums in eager mode's
    order, bit for bit (it gave other bits)."""
    with xad.use_backend("numpy"):
        g = np.random.default_rng(0)
        a = g.standard_normal((64, 64)).astype(np.float32)
        w = xad.Tensor(a.copy())

        def fn(x):
            return (w * 0.9999 + x * 1.0001).sum(axis=1) * 1

        f = xad.compile(fn)
        x = xad.Tensor(a[::-1].copy())
        for fortran in (False, True, True, False):
            w.data = xad.Tensor(np.asfortranarray(a) if fortran else a.copy())
            np.testing.assert_array_equal(f(x).numpy(), fn(x).numpy())
