"""Autograd API corners against PyTorch: hook order with ``retain_grad``, grad-mode
decorators on generators, gradient accumulation into ``.grad``, ``autograd.grad``'s
keywords. Each case failed (a silent wrong value, or a missing keyword) before its fix."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import xad


def _pair(lib, data):
    return lib.tensor(data, requires_grad=True)


@pytest.mark.parametrize("retain_first", [True, False])
def test_retain_grad_sees_every_hook(xb, retain_first):
    """PyTorch's retained ``.grad`` is the gradient after all tensor hooks, whenever they
    were registered; xad's was the value before hooks registered after ``retain_grad``."""
    got = []
    for lib in (xad, torch):
        x = _pair(lib, [1.0, 2.0])
        y = x * 2
        if retain_first:
            y.retain_grad()
        y.register_hook(lambda g: g * 100)
        if not retain_first:
            y.retain_grad()
        (y * y).sum().backward()
        got.append((np.asarray(y.grad.tolist()), np.asarray(x.grad.tolist())))
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b)


@pytest.mark.parametrize("deco", ["no_grad", "enable_grad", "set_grad_enabled"])
def test_grad_mode_decorator_on_generator(xb, deco):
    """A decorated generator's body runs in the mode at each resumption (it ran in the
    caller's mode: ``@no_grad`` recorded a graph), and the caller's mode is kept between."""
    inner = deco == "enable_grad"
    make = {"no_grad": xad.no_grad, "enable_grad": lambda: xad.enable_grad,
            "set_grad_enabled": lambda: xad.set_grad_enabled(False)}[deco]()
    x = xad.ones(2, requires_grad=True)

    @make
    def gen():
        sent = yield (x * 2).requires_grad
        try:
            yield sent, xad.is_grad_enabled()
        except ValueError:
            yield "caught", xad.is_grad_enabled()
        return "done"

    with xad.set_grad_enabled(not inner):
        it = gen()
        assert next(it) is inner
        assert xad.is_grad_enabled() is not inner
        assert it.send("s") == ("s", inner)
        assert it.throw(ValueError()) == ("caught", inner)
        with pytest.raises(StopIteration) as stop:
            next(it)
        assert stop.value.value == "done"
        assert xad.is_grad_enabled() is not inner


class _Mul(xad.nn.Module):
    def forward(self, a, k, b):
        return a * b * k


@pytest.mark.parametrize("grad_a", [False, True])
def test_full_backward_hook_grad_input_by_position(xb, grad_a):
    """``grad_input[i]`` is positional argument ``i``'s gradient (``None`` where it has
    none); xad's held only the inputs that require grad, so with ``a`` constant ``gi[0]``
    was ``b``'s gradient and a hook scaling ``gi[1]`` failed."""
    m, seen = _Mul(), []

    def hook(mod, gi, go):
        seen.append([g is not None for g in gi])
        return (gi[0], None, gi[2] * 10)

    m.register_full_backward_hook(hook)
    a = xad.tensor([1.0, 2.0], requires_grad=grad_a)
    b = xad.tensor([3.0, 4.0], requires_grad=True)
    m(a, 2.0, b).sum().backward()
    assert seen == [[grad_a, False, True]]
    np.testing.assert_allclose(np.asarray(b.grad.tolist()), [20.0, 40.0])
    if grad_a:
        np.testing.assert_allclose(np.asarray(a.grad.tolist()), [6.0, 8.0])


@pytest.mark.parametrize("allow_unused", [None, True, False])
def test_grad_materialize_grads(xb, allow_unused):
    """``autograd.grad(..., materialize_grads=True)`` gives zeros for unused inputs (the
    keyword was missing); with ``allow_unused=False`` it is an error, as in PyTorch."""
    res = []
    for lib in (xad, torch):
        x, z = _pair(lib, [1.0, 2.0]), _pair(lib, [[1.0], [3.0]])
        y = (x * 3).sum()
        try:
            res.append(lib.autograd.grad(y, [x, z], allow_unused=allow_unused,
                                         materialize_grads=True))
        except ValueError:
            res.append(None)
    if res[1] is None:
        assert res[0] is None
        return
    for a, b in zip(*res):
        assert tuple(a.shape) == tuple(b.shape) and a.requires_grad == b.requires_grad
        np.testing.assert_allclose(np.asarray(a.tolist()), b.tolist())


@pytest.mark.parametrize("by_keyword", [False, True])
def test_checkpoint_argument_changed_in_place_raises(xb, by_keyword):
    """Backward re-runs a checkpointed function on its arguments: one changed in place
    since gave a silent wrong gradient (120, 480 here); PyTorch raises, so does xad now."""
    w = xad.tensor([1.0, 2.0], requires_grad=True)
    x = w * 1

    def f(x, scale=1.0):
        return x * x * w * scale

    y = xad.checkpoint(f, w * 0 + 1, scale=x) if by_keyword else xad.checkpoint(f, x)
    with xad.no_grad():
        x.mul_(10)
    with pytest.raises(RuntimeError, match="in-place"):
        y.sum().backward()


def test_checkpoint_function_changing_its_argument_raises(xb):
    """A function that changes its argument in place is re-run on the changed value (the
    gradient was 16, 32 for 8, 16): an error, as in PyTorch."""
    x = xad.tensor([1.0, 2.0], requires_grad=True)

    def f(h):
        h.mul_(2)
        return h * h

    y = xad.checkpoint(f, x * 1).sum()
    with pytest.raises(RuntimeError, match="in-place"):
        y.backward()


def test_grad_accumulates_in_place(xb):
    """A second backward adds into the existing ``.grad`` in place, as PyTorch's: a held
    reference saw the old value (2, 4 for 4, 8), a user's buffer viewed by ``.grad`` was
    left unchanged. Tensors a hook or a Function's rule returned are never added into."""
    x = xad.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    held = x.grad
    (x * x).sum().backward()
    assert x.grad is held
    np.testing.assert_allclose(np.asarray(held.tolist()), [4.0, 8.0])
    if xb.mutable:  # a view of a buffer shares its memory where arrays can change
        buf = xad.zeros(4)
        y = xad.tensor([1.0, 2.0], requires_grad=True)
        y.grad = buf[1:3]
        (y * y).sum().backward()
        np.testing.assert_allclose(np.asarray(buf.tolist()), [0.0, 2.0, 4.0, 0.0])


def test_grad_accumulation_leaves_returned_tensors_alone(xb):
    w, c = xad.tensor([3.0, 4.0]), xad.tensor([5.0, 5.0])

    class Dot(xad.Function):
        @staticmethod
        def forward(ctx, x):
            return (x * w).sum()

        @staticmethod
        def backward(ctx, g):
            return w

    x = xad.tensor([1.0, 2.0], requires_grad=True)
    y = xad.tensor([1.0, 2.0], requires_grad=True)
    y.register_hook(lambda g: c)
    for _ in range(2):
        Dot.apply(x).backward()
        (y * 2).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad.tolist()), [6.0, 8.0])
    np.testing.assert_allclose(np.asarray(y.grad.tolist()), [10.0, 10.0])
    assert w.tolist() == [3.0, 4.0] and c.tolist() == [5.0, 5.0]


def test_function_integer_output_needs_no_grad(xb):
    """A Function's integer output (an argmax beside a max) does not require grad, as in
    PyTorch; it did, and its values fed a graph as if differentiable."""

    class MaxArg(xad.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return xad.max(x), xad.argmax(x)

        @staticmethod
        def backward(ctx, g, gi):
            (x,) = ctx.saved_tensors
            return g * (x == xad.max(x)).astype(x.dtype)

    x = xad.tensor([1.0, 3.0, 2.0], requires_grad=True)
    m, i = MaxArg.apply(x)
    assert m.requires_grad and not i.requires_grad and i.is_leaf
    m.backward()
    np.testing.assert_allclose(np.asarray(x.grad.tolist()), [0.0, 1.0, 0.0])


def test_grad_outputs_take_the_outputs_dtype(xb):
    """A float64 seed for a float32 output gave float64 gradients of non-leaf tensors
    (``autograd.grad`` results and retained ``.grad``); PyTorch casts it to the output's
    dtype first. A seed requiring grad stays differentiable through the cast."""
    x = xad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    h.retain_grad()
    y = h * 3
    v = xad.tensor([1.0, 2.0], dtype=xad.float64, requires_grad=True)
    g, = xad.autograd.grad(y, h, v, retain_graph=True, create_graph=True)
    assert g.dtype == xad.float32
    dv, = xad.autograd.grad(g.sum(), v)
    assert dv.dtype == xad.float64
    np.testing.assert_allclose(np.asarray(dv.tolist()), [3.0, 3.0])
    y.backward(xad.tensor([1.0, 1.0], dtype=xad.float64))
    assert h.grad.dtype == xad.float32 and x.grad.dtype == xad.float32


def test_backward_takes_pytorchs_gradient_keyword(xb):
    """``y.backward(gradient=g, retain_graph=None)`` as PyTorch scripts write it (the keyword
    was a TypeError); giving it twice raises."""
    got = []
    for lib in (xad, torch):
        x = _pair(lib, [1.0, 2.0])
        y = x * x
        y.backward(gradient=lib.tensor([1.0, 3.0]), retain_graph=None)
        got.append(x.grad.tolist())
    assert got[0] == got[1] == [2.0, 12.0]
    x = xad.tensor([1.0], requires_grad=True)
    with pytest.raises(TypeError, match="both grad and gradient"):
        (x * 2).backward(xad.ones(1), gradient=xad.ones(1))


def test_backward_inputs(xb):
    """``backward(inputs=...)`` fills only those tensors' ``.grad`` (a non-leaf's too), as
    PyTorch's; the keyword was a TypeError."""
    got = []
    for lib in (xad, torch):
        x, w = _pair(lib, [1.0, 2.0]), _pair(lib, [3.0, 4.0])
        h = x * w
        (h * h).sum().backward(inputs=[x, h], retain_graph=True)
        (h * h).sum().backward(inputs=h)
        got.append((x.grad.tolist(), w.grad, h.grad.tolist()))
    assert got[0] == got[1]
    x = xad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="empty"):
        (x * x).sum().backward(inputs=[])
    w = xad.tensor([3.0, 4.0], requires_grad=True)
    (x ** 2 * w).sum().backward(inputs=[x], create_graph=True)
    assert w.grad is None
    dw, = xad.autograd.grad(x.grad.sum(), w)
    np.testing.assert_allclose(np.asarray(dw.tolist()), [2.0, 4.0])


@pytest.mark.parametrize("materialize", [True, False])
def test_function_ctx_non_differentiable_and_materialize(xb, materialize):
    """``ctx.mark_non_differentiable`` and ``ctx.set_materialize_grads`` as PyTorch's (both
    were AttributeErrors): marked outputs need no grad, unused outputs' gradients are zeros
    or, without materializing, None."""
    seen = []
    for lib, base in ((xad, xad.Function), (torch, torch.autograd.Function)):

        class Split(base):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                y = x * 3
                ctx.mark_non_differentiable(y)
                return x * 2, y, x * 4

            @staticmethod
            def backward(ctx, g1, g2, g3):
                seen.append([None if g is None else g.tolist() for g in (g1, g2, g3)])
                return g1 * 2

        x = _pair(lib, [1.0, 2.0])
        p, q, r = Split.apply(x)
        assert p.requires_grad and not q.requires_grad and r.requires_grad
        p.sum().backward()
        seen.append(x.grad.tolist())
    assert seen[:2] == seen[2:]


class _Two(xad.nn.Module):
    def forward(self, a, b):
        return a * 2, b * 3


def test_full_backward_hook_unused_output_is_none(xb):
    """An output nobody used has ``None`` in ``grad_output`` (it was zeros); an input whose
    gradient is zero gets zeros, as in PyTorch."""
    m, seen = _Two(), []
    m.register_full_backward_hook(
        lambda mod, gi, go: seen.append(([None if g is None else g.tolist() for g in gi],
                                         [None if g is None else g.tolist() for g in go])))
    a, b = xad.tensor([1.0, 2.0], requires_grad=True), xad.tensor([1.0, 2.0], requires_grad=True)
    y, _ = m(a, b)
    (y * y).sum().backward()
    assert seen == [([[8.0, 16.0], [0.0, 0.0]], [[4.0, 8.0], None])]


def test_inference_mode_and_detach_(xb):
    """``inference_mode`` (as ``no_grad``; ``False`` records) and ``detach_`` as PyTorch's;
    both were AttributeErrors."""
    got = []
    for lib in (xad, torch):
        x = _pair(lib, [1.0, 2.0])

        @lib.inference_mode
        def f(x=x):
            return (x * 2).requires_grad

        with lib.inference_mode():
            a = (x * 2).requires_grad
        with lib.no_grad(), lib.inference_mode(False):
            b = (x * 2).requires_grad
        y = x * 2
        z = y * 3
        y.detach_()
        z.sum().backward()
        (y * x).sum().backward()
        with pytest.raises(RuntimeError):
            (x * 2)[1:].detach_()
        got.append((f(), a, b, y.requires_grad, y.is_leaf, x.grad.tolist()))
    assert got[0] == got[1]


def test_post_accumulate_grad_hook(xb):
    """``register_post_accumulate_grad_hook`` as PyTorch's (was an AttributeError): called
    with the leaf after each accumulation, removable, refused on a non-leaf."""
    got = []
    for lib in (xad, torch):
        x, seen = _pair(lib, [1.0, 2.0]), []
        h = x.register_post_accumulate_grad_hook(lambda t, s=seen: s.append(t.grad.tolist()))
        (x * x).sum().backward()
        (x * 3).sum().backward(inputs=[x])
        h.remove()
        (x * 3).sum().backward()
        with pytest.raises(RuntimeError):
            (x * 2).register_post_accumulate_grad_hook(print)
        got.append(seen)
    assert got[0] == got[1] == [[2.0, 4.0], [5.0, 7.0]]


def _doubler(base):
    class Double(base):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors  # a saved dirty output: no version error
            return g * 2 + y * 0
    return Double


def test_function_mark_dirty(xb):
    """``ctx.mark_dirty`` as PyTorch's (was an AttributeError): the changed input becomes
    the output, so its later uses differentiate through the Function; a leaf is refused."""
    got = []
    for lib, base in ((xad, xad.Function), (torch, torch.autograd.Function)):
        x = _pair(lib, [1.0, 2.0])
        h = x * 1
        y = _doubler(base).apply(h)
        g, = lib.autograd.grad((h * y).sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        with pytest.raises(RuntimeError):
            _doubler(base).apply(x)
        got.append((y is h, h.tolist(), g.tolist(), gg.tolist()))
    assert got[0] == got[1]


def test_output_hooks_run_off_the_requested_paths(xb):
    """An output's hooks and ``retain_grad`` run even when ``autograd.grad`` or
    ``backward(inputs=)`` asks for tensors it does not lead to, as PyTorch's (its ``.grad``
    stayed None)."""
    got = []
    for lib in (xad, torch):
        x, w = _pair(lib, [1.0, 2.0]), _pair(lib, [1.0, 2.0])
        y, seen = x * 2, []
        y.retain_grad()
        y.register_hook(lambda g, s=seen: s.append(g.tolist()))
        lib.autograd.grad(y, [w], lib.ones(2), allow_unused=True, retain_graph=True)
        y.backward(lib.ones(2) * 3, inputs=[w])
        got.append((y.grad.tolist(), seen, x.grad, w.grad))
    assert got[0] == got[1]


def test_assigned_grad_must_have_the_dtype(xb):
    """``x.grad = g`` of another dtype raises, as PyTorch's; it was accepted, and the next
    backward's sum silently took the wider dtype."""
    x = xad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match="dtype"):
        x.grad = xad.ones(2, dtype=xad.float64)
    x.grad = xad.ones(2)
    (x * x).sum().backward()
    assert x.grad.dtype == xad.float32
