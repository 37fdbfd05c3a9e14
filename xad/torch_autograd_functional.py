"""``torch.autograd.functional`` under ``xad.as_torch``: ``jacobian``, ``hessian``, ``vjp``,
``jvp``, ``hvp`` and ``vhp`` with PyTorch's signatures and its shapes (a tuple of inputs or
outputs gives tuples; an input the function does not use gets zeros, or raises with
``strict=True``), computed as PyTorch computes them, by reverse mode (``jvp`` and ``hvp``
through the double-backward trick), so a custom ``Function`` works wherever its backward
is differentiable. ``vectorize`` and ``strategy`` are accepted: the numbers are the same."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import autograd as _ag
from .factories import zeros_like
from .ops import stack
from .tensor import Tensor

__all__ = ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"]


def _as_tuple(x: Any, what: str, fn: str) -> tuple[bool, tuple]:
    is_tuple = isinstance(x, tuple)
    xs = x if is_tuple else (x,)
    for i, el in enumerate(xs):
        if not isinstance(el, Tensor):
            raise TypeError(f"torch.autograd.functional.{fn}: the {what} must be a Tensor or "
                            f"a tuple of Tensors, but entry {i} is {type(el).__name__}")
    return is_tuple, xs


def _prepare(xs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """The inputs as the function sees them: linked to the caller's graph only with
    ``create_graph`` (PyTorch's ``_grad_preprocess``)."""
    return tuple(x.view_as(x) if create_graph and x.requires_grad
                 else x.detach().requires_grad_(need_graph) for x in xs)


def _finish(xs: Any, create_graph: bool) -> Any:
    if isinstance(xs, Tensor):
        return xs if create_graph else xs.detach()
    return tuple(_finish(x, create_graph) for x in xs)


def _unpack(res: Any, outer: bool, inner: bool | None = None) -> Any:
    if inner is not None and not inner:
        res = tuple(r[0] for r in res)
    return res if outer else res[0]


def _check_v(fn: str, v: Any, refs: tuple, create_graph: bool) -> tuple | None:
    """``v`` as a tuple the shapes of ``refs``; ``None`` only where ``refs`` is one
    single-element tensor (PyTorch's rule)."""
    if v is None:
        if len(refs) != 1 or refs[0].numel() != 1:
            raise RuntimeError(f"torch.autograd.functional.{fn}: v can be None only where it "
                               f"pairs with a single Tensor of a single element; got shapes "
                               f"{[tuple(r.shape) for r in refs]}: pass v")
        return None
    _, vs = _as_tuple(v, "v", fn)
    vs = _prepare(vs, create_graph, False)
    if len(vs) != len(refs):
        raise RuntimeError(f"torch.autograd.functional.{fn}: v is a tuple of invalid length: "
                           f"should be {len(refs)} but got {len(vs)}")
    for i, (a, b) in enumerate(zip(vs, refs)):
        if a.shape != b.shape:
            raise RuntimeError(f"torch.autograd.functional.{fn}: entry {i} in v has invalid "
                               f"size: should be {tuple(b.shape)} but got {tuple(a.shape)}")
    return vs


def _grad(outs: tuple, ins: tuple, gs: tuple | None, create_graph: bool) -> tuple:
    """The gradients of ``outs`` (those that require grad) to ``ins``; ``None`` where
    unused (PyTorch's ``_autograd_grad``)."""
    gs = (None,) * len(outs) if gs is None else gs
    pairs = [(o, g) for o, g in zip(outs, gs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(ins)
    return _ag.grad([o for o, _ in pairs], list(ins), [g for _, g in pairs],
                    retain_graph=True, create_graph=create_graph, allow_unused=True)


def _zeros_for(fn: str, grads: tuple, refs: tuple, strict: bool) -> tuple:
    out = []
    for i, (g, r) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(f"torch.autograd.functional.{fn}: the output is "
                                   f"independent of input {i} (shape {tuple(r.shape)}), which "
                                   f"is not allowed in strict mode")
            g = zeros_like(r)
        out.append(g)
    return tuple(out)


def _inputs(fn: str, inputs: Any, create_graph: bool) -> tuple[bool, tuple]:
    is_tuple, ins = _as_tuple(inputs, "inputs", fn)
    return is_tuple, _prepare(ins, create_graph, True)


def _last(fn: str, outs: tuple, ins: tuple, gs: tuple | None, refs: tuple,
          create_graph: bool, strict: bool) -> tuple:
    """The last gradients (zeros for unused ``refs``), recorded only where
    ``create_graph`` or the caller's grad mode asks."""
    with _ag.set_grad_enabled(create_graph or _ag.is_grad_enabled()):
        return _zeros_for(fn, _grad(outs, ins, gs, create_graph), refs, strict)


def _trick(outs: tuple, ins: tuple, like: tuple) -> tuple[tuple, tuple]:
    """Zero cotangents shaped as ``like`` (requiring grad) and the vjp of ``outs`` to
    ``ins`` at them: linear in them, so its gradient to them is a jvp (PyTorch's
    double-backward trick)."""
    with _ag.enable_grad():
        cot = tuple(zeros_like(o).requires_grad_() for o in like)
        return cot, _grad(outs, ins, cot, True)


def _outputs(fn: str, func: Callable, ins: tuple, strict: bool) -> tuple[bool, tuple]:
    with _ag.enable_grad():
        is_tuple, outs = _as_tuple(func(*ins), "outputs of the user-provided function", fn)
    if strict:
        for i, o in enumerate(outs):
            if not o.requires_grad:
                raise RuntimeError(f"torch.autograd.functional.{fn}: output {i} of the "
                                   f"user-provided function does not require gradients; "
                                   f"it is independent of the inputs (strict mode)")
    return is_tuple, outs


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), v^T J)``, as ``torch.autograd.functional.vjp``.

    Example:
        >>> import xad
        >>> from xad.torch_autograd_functional import vjp
        >>> vjp(lambda x: x ** 2, xad.tensor([1.0, 2.0]), xad.tensor([1.0, 1.0]))[1].tolist()
        [2.0, 4.0]
    """
    in_tuple, ins = _inputs("vjp", inputs, create_graph)
    out_tuple, outs = _outputs("vjp", func, ins, strict)
    vs = _check_v("vjp", v, outs, create_graph)
    res = _last("vjp", outs, ins, vs, ins, create_graph, strict)
    return (_unpack(_finish(outs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), in_tuple))


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), J v)``, as ``torch.autograd.functional.jvp`` (its double-backward
    trick: the vjp's gradient with respect to its cotangent).

    Example:
        >>> import xad
        >>> from xad.torch_autograd_functional import jvp
        >>> jvp(lambda x: x ** 2, xad.tensor([1.0, 2.0]), xad.tensor([1.0, 0.0]))[1].tolist()
        [2.0, 0.0]
    """
    in_tuple, ins = _inputs("jvp", inputs, create_graph)
    vs = _check_v("jvp", v, ins, create_graph)
    out_tuple, outs = _outputs("jvp", func, ins, strict)
    cot, back = _trick(outs, ins, outs)
    res = _last("jvp", back, cot, vs, outs, create_graph, strict)
    return (_unpack(_finish(outs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), out_tuple))


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs`` (shape ``output.shape + input.shape``; for
    tuples, a tuple per output of one per input), as ``torch.autograd.functional.jacobian``.

    Example:
        >>> import xad
        >>> from xad.torch_autograd_functional import jacobian
        >>> jacobian(lambda x: x ** 2, xad.tensor([1.0, 2.0])).tolist()
        [[2.0, 0.0], [0.0, 4.0]]
    """
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f"torch.autograd.functional.jacobian: strategy must be "
                         f"'forward-mode' or 'reverse-mode', got {strategy!r}")
    in_tuple, ins = _inputs("jacobian", inputs, create_graph)
    out_tuple, outs = _outputs("jacobian", func, ins, strict)
    jac = []
    with _ag.enable_grad():  # the rows are picked on the graph
        for out in outs:
            flat = out.reshape(-1)
            rows = [_zeros_for("jacobian", _grad((flat[j],), ins, None, create_graph), ins,
                               strict) for j in range(out.numel())]
            jac.append(tuple(
                stack([r[k] for r in rows]).reshape(tuple(out.shape) + tuple(x.shape))
                if rows else zeros_like(x).reshape(tuple(out.shape) + tuple(x.shape))
                for k, x in enumerate(ins)))
    return _unpack(_finish(tuple(jac), create_graph), out_tuple, in_tuple)


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of the scalar ``func`` at ``inputs`` (shape ``input.shape * 2``; for a
    tuple, a tuple of tuples), as ``torch.autograd.functional.hessian``.

    Example:
        >>> import xad
        >>> from xad.torch_autograd_functional import hessian
        >>> hessian(lambda x: (x ** 3).sum(), xad.tensor([1.0, 2.0])).tolist()
        [[6.0, 0.0], [0.0, 12.0]]
    """
    in_tuple, ins = _as_tuple(inputs, "inputs", "hessian")

    def scalar(*xs: Tensor) -> Tensor:
        out = func(*xs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError(f"torch.autograd.functional.hessian: the function must return "
                               f"a single Tensor of a single element, got "
                               f"{tuple(out.shape) if isinstance(out, Tensor) else type(out)}")
        if strict and not out.requires_grad:
            raise RuntimeError("torch.autograd.functional.hessian: the output does not "
                               "require gradients; it is independent of the inputs (strict)")
        return out.reshape(())

    def grads(*xs: Tensor) -> tuple:
        return jacobian(scalar, xs, create_graph=True, strict=strict)
    res = jacobian(grads, ins, create_graph=create_graph, strict=strict)
    return _unpack(res, in_tuple, in_tuple)


def _first_grads(fn: str, func: Callable, inputs: Any, v: Any, create_graph: bool,
                 strict: bool) -> tuple:
    """The inputs, ``v``, the scalar output and its gradients (with a graph) for
    :func:`vhp`/:func:`hvp`."""
    in_tuple, ins = _inputs(fn, inputs, create_graph)
    vs = _check_v(fn, v, ins, create_graph)
    out_tuple, outs = _outputs(fn, func, ins, strict)
    if out_tuple or outs[0].numel() != 1:
        raise RuntimeError(f"torch.autograd.functional.{fn}: the function must return a "
                           f"single Tensor of a single element, got shapes "
                           f"{[tuple(o.shape) for o in outs]}")
    with _ag.enable_grad():
        first = _grad(outs, ins, None, True)
    return in_tuple, ins, vs, outs[0], first


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), v^T H)``, as ``torch.autograd.functional.vhp``.

    Example:
        >>> import xad
        >>> from xad.torch_autograd_functional import vhp
        >>> x, v = xad.tensor([1.0, 2.0]), xad.tensor([1.0, 1.0])
        >>> vhp(lambda x: (x ** 3).sum(), x, v)[1].tolist()
        [6.0, 12.0]
    """
    in_tuple, ins, vs, out, first = _first_grads("vhp", func, inputs, v, create_graph, strict)
    res = _last("vhp", first, ins, vs, ins, create_graph, strict)
    return _finish(out, create_graph), _unpack(_finish(res, create_graph), in_tuple)


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """``(func(inputs), H v)``, as ``torch.autograd.functional.hvp`` (its double-backward
    trick).

    Example:
        >>> import xad
        >>> from xad.torch_autograd_functional import hvp
        >>> x, v = xad.tensor([1.0, 2.0]), xad.tensor([1.0, 0.0])
        >>> hvp(lambda x: (x ** 3).sum(), x, v)[1].tolist()
        [6.0, 0.0]
    """
    in_tuple, ins, vs, out, first = _first_grads("hvp", func, inputs, v, create_graph, strict)
    cot, back = _trick(first, ins, ins)
    res = _last("hvp", back, cot, vs, ins, create_graph, strict)
    return _finish(out, create_graph), _unpack(_finish(res, create_graph), in_tuple)
