"""Reverse mode, as users call it: ``backward`` (into ``.grad``) and ``grad`` (returned).

This module also gathers the engine's public names (grad modes, :class:`Node`) so that
``xad.autograd`` is the one place to import them from. The engine itself is
:mod:`xad.graph` (nodes, recording, the walker) and :mod:`xad.engine` (the backward pass).
"""

from __future__ import annotations

from typing import Any

from .engine import run_backward
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from .graph import GraphFreedError, Node, installed, sequence_mark

__all__ = [
    "Node", "no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "is_grad_enabled",
    "backward", "grad", "GraphFreedError", "sequence_mark",
]


def backward(tensors: Any, grad_tensors: Any = None,
             retain_graph: bool | None = None, create_graph: bool = False,
             inputs: Any = None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves behind them,
    or, given ``inputs``, of those tensors only (as PyTorch's).

    Example:
        >>> import xad
        >>> x = xad.tensor([1.0, 2.0], requires_grad=True)
        >>> xad.autograd.backward((x * x).sum()); x.grad.tolist()
        [2.0, 4.0]
    """
    ins = None if inputs is None else _inputs(inputs, "backward")
    if ins is not None and not ins:
        raise RuntimeError("backward: inputs is empty; pass the tensors whose .grad to fill, "
                           "or leave it out for every leaf")
    outs, gs = _prepare(tensors, grad_tensors, "backward")
    run_backward(outs, gs, retain_graph=create_graph if retain_graph is None else retain_graph,
                 create_graph=create_graph, inputs=ins, store=True)


def grad(outputs: Any, inputs: Any,
         grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool | None = None,
         materialize_grads: bool = False) -> tuple[Any, ...]:
    """Gradients of ``outputs`` with respect to ``inputs``, returned rather than stored.

    An input the outputs do not depend on raises, or with ``allow_unused`` gets ``None``,
    or with ``materialize_grads`` zeros (as PyTorch's).

    Example:
        >>> import xad
        >>> x = xad.tensor(3.0, requires_grad=True)
        >>> g, = xad.autograd.grad(x ** 3, [x], create_graph=True)
        >>> h, = xad.autograd.grad(g, [x]); (g.item(), h.item())
        (27.0, 18.0)
    """
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError("autograd.grad: materialize_grads=True needs allow_unused=True or "
                         "left out")
    ins = _inputs(inputs, "autograd.grad")
    outs, gs = _prepare(outputs, grad_outputs, "autograd.grad")
    captured = run_backward(outs, gs, inputs=ins,
                            retain_graph=create_graph if retain_graph is None else retain_graph,
                            create_graph=create_graph)
    result = []
    for i, t in enumerate(ins):
        g = captured.get(id(t))  # type: ignore[union-attr]
        if g is None and not allow_unused:
            raise RuntimeError(f"autograd.grad: inputs[{i}] (shape {tuple(t.shape)}) was not "
                               f"used to compute the outputs; pass allow_unused=True to get "
                               f"None for it")
        if g is None and materialize_grads:  # zeros that require grad, as PyTorch's
            g = installed.tensor._make(t._backend.zeros(t.shape, t._array.dtype), t._backend)
            g.requires_grad_()
        if g is not None and not create_graph:
            g = g.detach()
        result.append(g)
    return tuple(result)


def _inputs(inputs: Any, where: str) -> list:
    ins = [inputs] if isinstance(inputs, installed.tensor) else list(inputs)
    for i, t in enumerate(ins):
        if not isinstance(t, installed.tensor):
            raise TypeError(f"{where}: inputs[{i}] is {type(t).__name__}, not a Tensor")
        if not t.requires_grad:
            raise RuntimeError(f"{where}: inputs[{i}] (shape {tuple(t.shape)}) does not "
                               f"require grad; create it with requires_grad=True")
    return ins


def _prepare(tensors: Any, grads: Any, where: str) -> tuple[list, list]:
    T = installed.tensor
    outs = [tensors] if isinstance(tensors, T) else list(tensors)
    if grads is None:
        gs: list = [None] * len(outs)
    elif isinstance(grads, T):
        gs = [grads]
    elif isinstance(grads, (list, tuple)):
        gs = list(grads)
    else:
        raise TypeError(f"{where}: the gradient must be a tensor (or a list of tensors, one "
                        f"per output), got {type(grads).__name__}; pass e.g. "
                        f"xad.full_like(y, 2.0) rather than a number or an array")
    if len(gs) != len(outs):
        raise ValueError(f"{where}: got {len(outs)} outputs but {len(gs)} gradients")
    for i, (t, g) in enumerate(zip(outs, gs)):
        if g is None:
            if t.dtype.is_complex:
                raise RuntimeError(
                    f"{where}: grad can be implicitly created only for real scalar outputs; "
                    f"output {i} has dtype {t.dtype}. Pass the gradient explicitly "
                    f"(y.backward(xad.ones_like(y))) or take a real loss (y.abs(), y.real).")
            if t.ndim != 0 and t.size != 1:
                raise RuntimeError(
                    f"{where}: output {i} has shape {tuple(t.shape)}; a gradient can be implied "
                    f"only for a scalar output. Pass the gradient explicitly "
                    f"(y.backward(xad.ones_like(y)) for the sum) or reduce y first (y.sum()).")
            gs[i] = T._constant(t._backend.full(t.shape, 1, t._array.dtype), t._backend)
        elif not isinstance(g, T):
            gs[i] = T._make(t._backend.asarray(g, dtype=t._array.dtype), t._backend)
        elif g.shape != t.shape:
            raise ValueError(f"{where}: gradient {i} has shape {tuple(g.shape)} but the output "
                             f"has shape {tuple(t.shape)}")
        elif g._backend is not t._backend:
            raise ValueError(f"{where}: gradient {i} is on {g._backend.label} but the output is "
                             f"on {t._backend.label}; move it with .to(...)")
        elif g.dtype.is_complex != t.dtype.is_complex and t.dtype.can_require_grad:
            raise RuntimeError(f"{where}: gradient {i} has dtype {g.dtype} but output {i} has "
                               f"dtype {t.dtype}; for complex tensors both must be complex "
                               f"(or both real): cast the gradient with .astype({t.dtype})")
        elif g.dtype != t.dtype and t.dtype.can_require_grad:
            gs[i] = g.astype(t.dtype)  # as PyTorch: a gradient has its tensor's dtype
    return outs, gs
