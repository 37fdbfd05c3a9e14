"""xad.compile against eager mode where the caller, not the step, varies (a fourth
adversarial round): arguments that are views of one another, views the caller holds of an
argument the step writes in place, a function's default values replaced between calls.
Each test runs one world compiled and an identical one eagerly and compares values (and
versions) bit for bit; on cupy-sim also with ``cuda_graphs=True``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import xad


def _compilers(xb) -> list:
    """The ways to compile on ``xb``: plainly, and with CUDA graphs where there are any."""
    out = [xad.compile]
    if xb.name in ("cupy", "cupy-sim"):
        out.append(lambda f: xad.compile(f, cuda_graphs=True))
    return out


def _t(values) -> xad.Tensor:
    return xad.tensor(np.asarray(values, dtype=np.float64), dtype=xad.float64)


def _same(a: xad.Tensor, b: xad.Tensor, what: str) -> None:
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=what)
    assert a._version == b._version, what


def _add_one(a: xad.Tensor) -> xad.Tensor:
    with xad.no_grad():
        a.add_(1.0)
    return a * 2


def _set_row(a: xad.Tensor) -> xad.Tensor:
    with xad.no_grad():
        a[0] = a[1] * 3
    return a.sum(0)


@pytest.mark.parametrize("step", [_add_one, _set_row])
def test_views_the_caller_holds_follow_a_written_argument(xb, step):
    """``v = x[0]; f(x)`` where ``f`` writes ``x`` in place: ``v`` shows the new values.
    On JAX (arrays immutable, views remade from their base) the replay wrote ``x`` but left
    ``v`` and ``x.detach()`` with the old values (eager mode remakes them)."""
    base = np.arange(6.0).reshape(2, 3)
    for compile_ in _compilers(xb):
        f = compile_(step)
        for k in range(4):
            x, x2 = _t(base + k), _t(base + k)
            held = (x[0], x.detach(), x.T[1:], x.data)
            held2 = (x2[0], x2.detach(), x2.T[1:], x2.data)
            _same(f(x), step(x2), f"call {k}: result")
            for j, (v, v2) in enumerate(zip(held, held2)):
                _same(v, v2, f"call {k}: held view {j}")


def _write_first_read_second(a: xad.Tensor, b: xad.Tensor) -> xad.Tensor:
    with xad.no_grad():
        a.mul_(2.0)
    return a + b


@pytest.mark.parametrize("view", ["T", "row", "detach", "slice"])
def test_an_argument_that_is_a_view_of_another(xb, view):
    """``f(x, x.T)`` after ``f(x, y.T)`` was recorded: a program for unrelated arguments
    read ``b``'s array before the call changed ``x`` (JAX: ``b`` is another array), so the
    call gave ``2x + x.T`` from before; the relation of views is part of the key now."""
    make = {"T": lambda t: t.T, "row": lambda t: t[1], "detach": lambda t: t.detach(),
            "slice": lambda t: t[:, 1:2]}[view]
    base = np.arange(9.0).reshape(3, 3)
    for compile_ in _compilers(xb):
        f = compile_(_write_first_read_second)
        for k in range(5):
            x, x2 = _t(base + k), _t(base + k)
            other = _t(base * 0.5 - k)
            b = make(other) if k in (0, 3) else make(x)  # records unaliased first
            b2 = make(other) if k in (0, 3) else make(x2)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                got = f(x, b)
            _same(got, _write_first_read_second(x2, b2), f"call {k}: result")
            _same(x, x2, f"call {k}: x")
            _same(b, b2, f"call {k}: the view")


def test_default_values_replaced_between_calls(xb):
    """``f.__defaults__``/``__kwdefaults__`` replaced after the recording: guarded as a
    closure cell is (the replay kept the first call's ``2.0`` and the first tensor)."""
    w0 = _t([1.0, 1.0])

    def f(a, s=2.0, w=w0, *, c=0.5):
        return a * s * w + c

    g = xad.compile(f)
    x = _t([1.0, 2.0])
    changes = [lambda: None, lambda: setattr(f, "__defaults__", (3.0, w0)),
               lambda: setattr(f, "__defaults__", (3.0, _t([4.0, 5.0]))),
               lambda: setattr(f, "__kwdefaults__", {"c": -1.0}),
               lambda: setattr(f, "__defaults__", (3, f.__defaults__[1]))]
    for k, change in enumerate(changes):
        change()
        for _ in range(2):  # recorded, then replayed
            _same(g(x), f(x), f"change {k}")


def _rebind_data(a: xad.Tensor) -> xad.Tensor:
    with xad.no_grad():
        a.data = a * 3
    return a + 1


@pytest.mark.parametrize("step", [_add_one, _rebind_data])
def test_arguments_of_earlier_calls_keep_their_values(xb, step):
    """With CUDA graphs an argument written in the call (in place, or ``a.data = ...``) was
    left holding the graph's buffer, which the next call overwrote: every earlier call's
    argument then showed the latest values (and a view the caller held, none)."""
    for compile_ in _compilers(xb):
        f = compile_(step)
        kept, kept2 = [], []
        for k in range(5):
            x, x2 = _t([1.0 + k, 2.0]), _t([1.0 + k, 2.0])
            kept += [x, x[0:1], f(x)]
            kept2 += [x2, x2[0:1], step(x2)]
        for j, (a, b) in enumerate(zip(kept, kept2)):
            _same(a, b, f"tensor {j}")


def _write_first(a: xad.Tensor, b: xad.Tensor) -> xad.Tensor:
    with xad.no_grad():
        a.add_(1.0)
    return b * 1.0


@pytest.mark.parametrize("views", [("row0", "row1"), ("T", "slice"), ("slice", "data")])
def test_other_views_of_one_argument(xb, views):
    """``f(x, x[1])`` after ``f(x, x[0])`` was recorded: the key said only that ``b`` is a
    view of ``a``, so on JAX the replay made ``x[0]`` again after writing ``x`` (``.data``
    against ``[:, :]``: the same values, but a write through ``.data`` counts no version)."""
    make = {"row0": lambda t: t[0], "row1": lambda t: t[1], "T": lambda t: t.T,
            "slice": lambda t: t[:, :], "data": lambda t: t.data}
    for compile_ in _compilers(xb):
        f = compile_(_write_first)
        for k in range(6):
            view = make[views[k // 3]]
            x, x2 = _t(np.arange(9.0).reshape(3, 3) + k), _t(np.arange(9.0).reshape(3, 3) + k)
            b, b2 = view(x), view(x2)
            _same(f(x, b), _write_first(x2, b2), f"call {k}: result")
            _same(x, x2, f"call {k}: x")
            _same(b, b2, f"call {k}: the view")


def _write_row(c: xad.Tensor) -> xad.Tensor:
    with xad.no_grad():
        c[1] = c[0] * 2.0 + 1.0
    return c * 1.0


def test_an_expanded_argument_after_a_plain_view(xb):
    """``f(y.T)`` recorded, then ``f(broadcast_to(y[0:1], (3, 3)))``: where arrays have no
    strides (array_api_strict, torch, JAX) the key saw two views of one shape, and the
    replay wrote the broadcast array itself (read-only: a ``ValueError`` on
    array_api_strict), not its base's row as eager mode does."""
    for compile_ in _compilers(xb):
        f = compile_(_write_row)
        for k in range(6):
            y, y2 = _t(np.arange(9.0).reshape(3, 3) + k), _t(np.arange(9.0).reshape(3, 3) + k)
            view = (lambda t: t.T) if k < 3 else (lambda t: xad.broadcast_to(t[0:1], (3, 3)))
            c, c2 = view(y), view(y2)
            outs = []
            for g, arg in ((f, c), (_write_row, c2)):
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", RuntimeWarning)
                        outs.append(g(arg).numpy())
                except Exception as e:  # noqa: BLE001 -- both must raise alike
                    outs.append(type(e).__name__)
            assert type(outs[0]) is type(outs[1]), f"call {k}: {outs}"
            if not isinstance(outs[0], str):
                np.testing.assert_array_equal(outs[0], outs[1], err_msg=f"call {k}")
            _same(y, y2, f"call {k}: y")


def test_gradients_of_earlier_arguments_keep_their_values(xb):
    """An argument's ``.grad`` under CUDA graphs was the graph's buffer, so the next call
    changed every earlier call's input gradient (a parameter's ``.grad`` is documented to
    be the buffer, as PyTorch's)."""
    for compile_ in _compilers(xb):
        w = xad.nn.Parameter(_t([1.0, 2.0]))

        def step(x, w=w):
            xad.tanh(x * w).sum().backward()
            return x.grad.detach() * 1.0

        f = compile_(step)
        kept = []
        for k in range(5):
            x = xad.tensor([0.1 * k, 0.5], dtype=xad.float64, requires_grad=True)
            f(x)
            kept.append((x, x.grad.numpy().copy()))
        for k, (x, g) in enumerate(kept):
            np.testing.assert_array_equal(x.grad.numpy(), g, err_msg=f"call {k}")


def test_views_left_by_a_data_assignment(xb):
    """``a.data = a * 3`` inside: eager mode leaves the caller's ``x[0:1]`` and
    ``x.detach()`` with the old storage; on JAX the replay kept them views of ``x``, so
    the caller's later ``x.add_`` remade them from ``x`` and ``v.mul_`` doubled ``x[0]``."""
    for compile_ in _compilers(xb):
        f = compile_(_rebind_data)
        for k in range(5):
            got = []
            for g in (f, _rebind_data):
                x = _t([1.0 + k, 2.0])
                v, d = x[0:1], x.detach()
                g(x)
                with xad.no_grad():
                    x.add_(10.0)
                    v.mul_(2.0)
                got.append((x, v, d))
            for j, (a, b) in enumerate(zip(*got)):
                _same(a, b, f"call {k}: tensor {j}")


def _replace_then_write_view(a: xad.Tensor, b: xad.Tensor) -> xad.Tensor:
    with xad.no_grad():
        a.data = a * 2.0
        b[1] = a[0] * 0.5
    return b * 1.0


def test_an_argument_view_of_a_tensor_whose_data_is_replaced(xb):
    """``f(x, x.T)`` doing ``a.data = ...`` then writing through ``b``: eager mode leaves
    ``b`` with ``x``'s old storage (a tensor the call made), and on JAX the replay lost the
    write through ``b``; such a call now runs eagerly (one warning)."""
    for compile_ in _compilers(xb):
        f = compile_(_replace_then_write_view)
        for k in range(4):
            x, x2 = _t(np.arange(9.0).reshape(3, 3) + k), _t(np.arange(9.0).reshape(3, 3) + k)
            b, b2 = x.T, x2.T
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                got = f(x, b)
            _same(got, _replace_then_write_view(x2, b2), f"call {k}: result")
            _same(x, x2, f"call {k}: x")
            _same(b, b2, f"call {k}: b")
