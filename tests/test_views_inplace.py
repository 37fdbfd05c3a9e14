"""In-place changes through views reach their base, and a changed base reaches its views
(the issue "No silent wrong answers", item 7), with gradients checked against PyTorch's
values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

import xad

F64 = xad.float64


def test_inplace_through_a_slice_of_a_non_leaf_reaches_the_base(xb):
    x = xad.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    y = x * 2
    v = y[1:]
    v *= 10
    assert y.tolist() == [2.0, 40.0, 60.0]          # torch: [2, 40, 60]
    assert v.tolist() == [40.0, 60.0]
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 20.0, 20.0]      # d/dx of 2x, 20x, 20x


def test_setitem_on_a_base_shows_in_an_earlier_view(xb):
    x = xad.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    y = x * 2
    v = y[1:]
    y[1] = 100.0
    assert v.tolist() == [100.0, 6.0]
    (v * xad.tensor([1.0, 10.0], dtype=F64)).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 20.0]       # y[1] no longer depends on x


def test_inplace_on_a_view_of_a_leaf_that_requires_grad_raises(xb):
    leaf = xad.tensor([1.0, 2.0], requires_grad=True)
    v = leaf[0:1]
    with pytest.raises(RuntimeError, match="leaf that requires grad"):
        v += 1
    assert leaf.tolist() == [1.0, 2.0]


def test_inplace_on_a_view_of_a_plain_tensor_changes_the_base(xb):
    x = xad.tensor([1.0, 2.0, 3.0])
    v = x[1:]
    v += 1
    v[0] = 7.0
    assert x.tolist() == [1.0, 7.0, 4.0]


def test_a_recorded_value_written_into_a_view_of_a_plain_tensor(xb):
    x = xad.zeros(3, dtype=F64)
    w = xad.tensor([2.0, 3.0], dtype=F64, requires_grad=True)
    v = x[1:]
    v += w
    assert x.tolist() == [0.0, 2.0, 3.0]
    (x * x).sum().backward()
    assert w.grad.tolist() == [4.0, 6.0]


def test_view_of_a_view_follows_both_ways(xb):
    x = xad.tensor([1.0, 2.0, 3.0, 4.0], dtype=F64, requires_grad=True)
    y = x * 1
    v = y[1:]
    u = v[1:]
    u *= 3
    assert y.tolist() == [1.0, 2.0, 9.0, 12.0]
    assert v.tolist() == [2.0, 9.0, 12.0]
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 3.0, 3.0]


@pytest.mark.parametrize("view", ["reshape", "permute_dims", "reshape-of-index"])
def test_inplace_through_a_whole_view_reaches_the_base_and_the_graph(xb, view):
    """As PyTorch: a reshape, permutation or flip of a tensor in a graph covers each of its
    elements once, so an in-place change through it is the base's (SciPy 1.18's ``_var``
    multiplies a reshape view in place)."""
    torch = pytest.importorskip("torch")
    make = {"reshape": lambda t: t.reshape((3, 2)),
            "permute_dims": lambda t: t.permute((1, 0)) if isinstance(t, torch.Tensor)
            else xad.permute_dims(t, (1, 0)),
            "reshape-of-index": lambda t: t[1:].reshape((3,))}[view]
    start = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    results = []
    for lib, tensor in ((xad, lambda a: xad.tensor(a, dtype=F64, requires_grad=True)),
                        (torch, lambda a: torch.tensor(a, dtype=torch.float64,
                                                       requires_grad=True))):
        w = tensor(start)
        y = w * 1.5
        v = make(y)
        v *= tensor(v.detach().tolist()) if lib is xad else torch.tensor(
            v.detach().tolist(), dtype=torch.float64, requires_grad=True)
        ((y * y).sum() + (v * 3.0).sum()).backward()
        results.append((y.tolist(), v.tolist(), w.grad.tolist()))
    assert results[0] == results[1]


def test_flip_copies_as_pytorchs(xb):
    """``Tensor.flip`` and ``xad.flip`` both copy (PyTorch's copies; NumPy's is a view)."""
    x = xad.tensor([1.0, 2.0, 3.0], dtype=F64)
    a, b = x.flip(0), xad.flip(x)
    x[0] = 9.0
    a[1] = 7.0
    assert (a.tolist(), b.tolist(), x.tolist()) == ([3.0, 7.0, 1.0], [3.0, 2.0, 1.0],
                                                      [9.0, 2.0, 3.0])


def test_inplace_arithmetic_on_an_expanded_view_raises_xads_error(xb):
    """PyTorch raises for add_/mul_/copy_ on an expanded tensor; so does xad, with its own
    error (never NumPy's "assignment destination is read-only")."""
    for y in (xad.tensor([1.0, 2.0]), xad.tensor([1.0, 2.0], requires_grad=True) * 2):
        r = xad.broadcast_to(y, (3, 2))
        with pytest.raises(RuntimeError, match="expanded view"):
            r += 1
        with pytest.raises(RuntimeError, match="expanded view"):
            r.copy_(xad.ones((3, 2)))
        with pytest.raises(RuntimeError, match="expanded view"):
            r[0:2] = 5.0  # PyTorch: copy_ into elements that share memory raises


def test_filling_an_expanded_view_fills_its_storage_as_pytorchs(xb):
    x = xad.tensor([1.0, 2.0, 3.0], dtype=F64)
    x.expand(2, 3).zero_()
    assert x.tolist() == [0.0, 0.0, 0.0]
    c = xad.tensor([[1.0], [2.0]], dtype=F64)
    e = c.expand(2, 3)
    e[1].fill_(5.0)
    with pytest.raises(RuntimeError, match="expanded view"):
        e[1] = 6.0  # torch: e[1].copy_(6.0), into elements that share memory: raises
    assert (c.tolist(), e.tolist()) == ([[1.0], [5.0]], [[1.0] * 3, [5.0] * 3])
    w = xad.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    y = w * 3
    y.expand(4, 2).detach()[:, 1].fill_(2.0)  # outside the graph: y's node stays
    assert y.tolist() == [3.0, 2.0]
    y.sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="PyTorch fails at backward"):
        y.expand(4, 2).fill_(2.0)  # PyTorch fails at backward; xad refuses at once


def test_writes_through_an_expanded_view_whose_elements_do_not_repeat(xb):
    """``e[0] = t`` and ``e[0].add_(t)`` reach the storage, in a graph too (torch: y ==
    4 w, w.grad == 32, 64 for sum(y * y))."""
    x = xad.zeros(3, dtype=F64)
    e = x.expand(2, 3)
    e[0] = xad.tensor([1.0, 2.0, 3.0], dtype=F64)
    e[1].add_(1.0)
    assert x.tolist() == [2.0, 3.0, 4.0] and e.tolist() == [[2.0, 3.0, 4.0]] * 2
    w = xad.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    y = w * 3
    y.expand(4, 2)[0].add_(w)
    (y * y).sum().backward()
    assert (y.tolist(), w.grad.tolist()) == ([4.0, 8.0], [32.0, 64.0])


def test_data_taken_before_an_inplace_change_stays_out_of_the_graph(xb):
    """The issue's case: ``.data`` followed its base's node after an in-place change, so
    a gradient flowed through it (torch: w.grad == d == [2, 3, 4])."""
    w = xad.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    h = w * 1
    d = h.data
    h += 1
    assert not d.requires_grad and d.tolist() == [2.0, 3.0, 4.0]
    (w * d).sum().backward()
    assert w.grad.tolist() == [2.0, 3.0, 4.0]


def test_detach_and_data_share_storage_for_life(xb):
    """Both ways, on a leaf and on a non-leaf, after in-place changes of either (JAX too)."""
    w = xad.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    for base in (xad.tensor([1.0, 2.0], dtype=F64), w * 1):
        d, p = base.detach(), base.data
        base += 1
        assert d.tolist() == p.tolist() == [2.0, 3.0]
        d[0] = 7.0
        assert base.tolist() == p.tolist() == [7.0, 3.0]
        p *= 2
        assert base.tolist() == d.tolist() == [14.0, 6.0]
        assert not d.requires_grad and not p.requires_grad


def test_detach_counts_versions_with_its_base_and_data_does_not(xb):
    """As PyTorch: a change through detach() of a saved tensor raises at backward, one
    through .data does not (the rule reads the changed values)."""
    w = xad.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    x = w * 1
    y = x * x
    x.data.add_(1.0)
    y.sum().backward()
    assert w.grad.tolist() == [4.0, 6.0]   # torch: 2 * (x + 1)
    x = w * 1
    y = x * x
    x.detach().add_(1.0)
    with pytest.raises(RuntimeError, match="in-place"):
        y.sum().backward()


@pytest.mark.parametrize("requires_grad", [False, True])
def test_reshape_is_a_view_exactly_when_pytorchs_is(xb, requires_grad):
    w = xad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=F64,
                   requires_grad=requires_grad)
    y = w * 1 if requires_grad else w
    copied = y.t().reshape(-1)       # torch: a copy (strides do not allow a view)
    viewed = y[:, 1:].t().reshape(4)  # still a copy
    kept = y.reshape(3, 2)              # a view
    with xad.no_grad() if not requires_grad else _nothing():
        y += 10
    assert copied.tolist() == [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
    assert viewed.tolist() == [2.0, 5.0, 3.0, 6.0]
    assert kept.tolist() == [[11.0, 12.0], [13.0, 14.0], [15.0, 16.0]]
    with pytest.raises(ValueError, match="without a copy"):
        y.t().view(-1)
    c = y.t().contiguous()  # a copy whose elements lie in order, as PyTorch's
    assert c.view(-1).tolist() == [11.0, 14.0, 12.0, 15.0, 13.0, 16.0]
    assert y.contiguous() is y


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_product_by_a_number_saves_nothing(xb):
    """``x * 2.0`` then an in-place change of x: PyTorch runs, so does xad; ``2.0 / x``
    reads x and raises, as PyTorch's."""
    w = xad.tensor([1.0, 2.0], dtype=F64, requires_grad=True)
    x = w * 1
    y = x * 2.0 + 3.0 * x + x / 4.0
    x += 1
    y.sum().backward()
    assert w.grad.tolist() == [5.25, 5.25]
    x = w * 1
    z = 2.0 / x
    x += 1
    with pytest.raises(RuntimeError, match="in-place"):
        z.sum().backward()


def test_a_recorded_write_through_an_expanded_data_puts_only_it_in_the_graph(xb):
    """torch: x == d == [3, 3], d joins the graph (u.grad == 12), x does not."""
    x = xad.zeros(2, dtype=F64)
    u = xad.tensor([3.0], dtype=F64, requires_grad=True)
    d = x.data
    d.expand(2, 2)[1] = u * xad.ones(2, dtype=F64)
    assert x.tolist() == d.tolist() == [3.0, 3.0]
    assert d.requires_grad and not x.requires_grad
    (d * d).sum().backward()
    assert u.grad.tolist() == [12.0]


@pytest.mark.parametrize("change", ["mul_", "view mul_", "setitem"])
def test_retain_grad_after_an_inplace_change_is_the_changed_values(xb, change):
    """As PyTorch's (2.0 on): ``.grad`` of a tensor that retains grad and was then changed
    in place (directly or through a view) is the gradient of its new value; xad gave the
    old value's (torch: y.grad == 2 * y, x.grad as below)."""
    x = xad.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    y = x * 2
    y.retain_grad()
    if change == "mul_":
        y.mul_(5)
    elif change == "view mul_":
        y[0:2].mul_(5)
    else:
        y[0:2] = x[0:2] * 7
    (y ** 2).sum().backward()
    assert y.grad.tolist() == (2 * y).tolist()
    want = {"mul_": [200.0, 400.0, 600.0], "view mul_": [200.0, 400.0, 24.0],
            "setitem": [98.0, 196.0, 24.0]}[change]
    assert x.grad.tolist() == want


def test_clamp_inplace_of_integers_by_a_float_bound_raises_as_pytorchs(xb):
    """``x.clamp_(min=1.5)`` of an int64 ``x`` cast the clamped values back (giving 1, below
    the bound); PyTorch raises (a float result cannot be written into integers)."""
    x = xad.tensor([0, 1, 2])
    with pytest.raises(TypeError, match="clamp_"):
        x.clamp_(min=1.5)
    assert x.tolist() == [0, 1, 2]
    assert x.clamp_(min=1).tolist() == [1, 1, 2]


@pytest.mark.parametrize("change", ["x += x.T", "x[:, 1:] += x[:, :-1]", "x[1:] = x[:-1]",
                                    "x.copy_(x.T)", "x.mul_(x[0])", "x.T.copy_(x)"])
def test_a_change_that_reads_another_view_of_its_storage_reads_the_old_values(xb, change):
    """The right side is read before the change on every backend (NumPy's and JAX's
    meaning): the torch backend raised or, for ``x[:, 1:] += x[:, :-1]``, gave torch's
    order-dependent numbers, and CuPy's kernels race there. (PyTorch raises where it
    detects the overlap; docs/PORTING.md.)"""
    x = xad.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]], dtype=F64)
    a = x.numpy().copy()
    exec(change, {"x": x})
    want = {"x += x.T": a + a.T, "x[:, 1:] += x[:, :-1]": np.concatenate(
        [a[:, :1], a[:, 1:] + a[:, :-1]], axis=1), "x[1:] = x[:-1]": np.concatenate(
        [a[:1], a[:-1]]), "x.copy_(x.T)": a.T, "x.mul_(x[0])": a * a[0],
        "x.T.copy_(x)": a.T}[change]
    assert x.tolist() == want.tolist()


@pytest.mark.parametrize("take", ["slice", "detach slice", "data"])
def test_views_taken_before_data_is_assigned_keep_the_old_storage(xb, take):
    """``p.data = t`` gives ``p`` another storage; PyTorch's earlier views keep the old one.
    xad's still wrote through to ``p``, changing the values just assigned (torch: p ==
    [10, 20, 30], v == [2, 3])."""
    p = xad.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    v = {"slice": lambda: p[0:2], "detach slice": lambda: p.detach()[0:2],
         "data": lambda: p.data[0:2]}[take]()
    p.data = xad.tensor([10.0, 20.0, 30.0], dtype=F64)
    with xad.no_grad():
        v.add_(1.0)
    assert (p.tolist(), v.tolist()) == ([10.0, 20.0, 30.0], [2.0, 3.0])
    (p * 2).sum().backward()
    assert p.grad.tolist() == [2.0, 2.0, 2.0]


def test_clamp_inplace_takes_pytorchs_gradient_at_a_bound(xb):
    """``clamp_`` is the method ``clamp`` in place: at a bound ``x`` gets all the gradient
    and a tensor bound none, as PyTorch's (it took the standard ``clip``'s halves)."""
    x = xad.tensor([0.5, -1.0, 2.0], dtype=F64, requires_grad=True)
    lo = xad.tensor([0.5, 0.0, 0.0], dtype=F64, requires_grad=True)
    y = x * 1
    y.clamp_(min=lo, max=0.5)
    (y * xad.tensor([1.0, 2.0, 3.0], dtype=F64)).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 0.0]  # torch: [1, 0, 0]
    assert lo.grad.tolist() == [0.0, 2.0, 0.0]  # torch: [0, 2, 0]
