"""In-place changes, through views too, inside ``xad.jvp`` and ``xad.vmap``: tangents and
batched values against ``torch.func.jvp`` and ``torch.func.vmap`` (torch 2.13)."""

from __future__ import annotations

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
