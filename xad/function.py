"""Custom operations: subclass :class:`Function` with ``forward`` and ``backward``."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any, cast

from . import autograd as _ag
from .context import context
from .factories import zeros_like
from .forward_mode import JVPLevel
from .graph import GraphFreedError, freed_message, record
from .ops import sum_to
from .tensor import Tensor

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """What ``forward`` leaves for ``backward``: saved tensors and any attributes."""

    _versions: tuple  # the saved tensors' versions, set by Function.apply after forward

    def __init__(self) -> None:
        self._saved: tuple = ()
        self._node: weakref.ref | None = None  # weak: the node holds this context
        self._outputs_data: dict[int, Any] = {}
        self._non_differentiable: tuple = ()
        self._dirty: tuple = ()
        self._materialize = True
        self._saved_forward: tuple = ()
        self._in_jvp = False  # while the Function's jvp runs: saved_tensors are its own
        self.needs_input_grad: tuple[bool, ...] = ()

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors for ``backward``; checked there against in-place changes."""
        self._saved = tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """Keep tensors for the Function's ``jvp`` (its ``saved_tensors`` there)."""
        self._saved_forward = tensors

    def mark_non_differentiable(self, *outputs: Any) -> None:
        """Outputs of ``forward`` that carry no gradient (indices, masks): they do not
        require grad, and ``backward`` gets zeros for them."""
        self._non_differentiable = outputs

    def mark_dirty(self, *inputs: Any) -> None:
        """Inputs ``forward`` changed in place (and returns): they become its outputs, so
        their later uses differentiate through this operation, as PyTorch's."""
        self._dirty = inputs

    def set_materialize_grads(self, value: bool) -> None:
        """``False``: ``backward`` gets ``None``, not zeros, for outputs nobody used."""
        self._materialize = bool(value)

    @property
    def saved_tensors(self) -> tuple:
        if self._in_jvp:
            return self._saved_forward
        node = self._node() if self._node is not None else None
        if node is not None and node.saved is None:
            raise GraphFreedError(freed_message(node))
        out = []
        for i, (t, v) in enumerate(zip(self._saved, self._versions)):
            if i in self._outputs_data:  # a saved output: re-linked to the node, no cycle
                t = node.output(self._outputs_data[i]) if node is not None else t
            elif isinstance(t, Tensor) and v is not None and t._version != v:
                raise RuntimeError(
                    f"{node.name if node else 'Function'} backward: saved tensor {i} (shape "
                    f"{t.shape}) was changed by an in-place operation: now at version "
                    f"{t._version}, saved at version {v}")
            out.append(t)
        return tuple(out)


class _FunctionOp:
    """Adapts a Function subclass to the engine's rule interface."""

    save_inputs = False
    user_rule = True  # its gradients may be tensors the user holds (the engine copies them)
    materialize_grads = True  # outputs no gradient reached get zeros (PyTorch's default)

    def __init__(self, cls: type[Function], save_output: bool) -> None:
        self.cls = cls
        self.name = cls.__name__
        self.save_output = save_output  # keep the outputs' arrays: ctx saved some of them

    def backward(self, node: _ag.Node, *grads: Tensor) -> tuple:
        ctx = node.ctx
        if ctx is None:
            raise GraphFreedError(freed_message(node))
        res = self.cls.backward(ctx, *grads)
        res = res if isinstance(res, tuple) else (res,)
        n_in = len(node.in_shapes)
        if len(res) != n_in:
            raise RuntimeError(f"{self.name}.backward returned {len(res)} gradients, but "
                               f"forward took {n_in} inputs (return None for inputs that "
                               f"need no gradient)")
        out = []
        for i, (g, shape) in enumerate(zip(res, node.in_shapes)):
            if g is not None and node.needs_grad(i) and not isinstance(g, Tensor):
                raise TypeError(f"{self.name}.backward: gradient {i} is "
                                f"{type(g).__name__}, not a Tensor")
            if isinstance(g, Tensor) and node.needs_grad(i) and g.shape != shape:
                try:
                    sum_to(g, shape)
                except Exception:
                    raise ValueError(f"{self.name}.backward: gradient {i} has shape "
                                     f"{g.shape} but input {i} has shape {shape}") from None
            out.append(g)
        return tuple(out)


class Function:
    """A custom differentiable operation (PyTorch's ``autograd.Function``).

    ``forward(ctx, *args)`` runs with recording off and returns a tensor or a tuple of
    tensors; ``backward(ctx, *grads)`` returns one gradient per input, written with xad's
    own operations (so it can itself be differentiated). PyTorch's other form, a
    ``forward(*args)`` without ``ctx`` and a ``setup_context(ctx, inputs, output)``, works
    too. An optional ``jvp(ctx, *tangents)`` gives the outputs' tangents in forward mode
    (``ctx.save_for_forward`` keeps tensors for it); without one, forward mode
    differentiates ``forward``'s xad operations.

    Example:
        >>> import xad
        >>> class Cube(xad.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x * x
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         (x,) = ctx.saved_tensors
        ...         return 3 * x * x * g
        >>> t = xad.tensor([2.0], requires_grad=True)
        >>> Cube.apply(t).sum().backward(); t.grad.tolist()
        [12.0]
    """

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Tensor) -> Any:
        raise NotImplementedError

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple, output: Any) -> None:
        raise NotImplementedError  # overridden: forward takes no ctx (PyTorch 2's form)

    @staticmethod
    def jvp(ctx: FunctionCtx, *tangents: Any) -> Any:
        raise NotImplementedError  # overridden: the Function's own forward-mode rule

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        level = context.transform
        if (cls.jvp is not Function.jvp and isinstance(level, JVPLevel)
                and any(level.get(a) is not None for a in args)):
            return _with_jvp(cls, level, args, kwargs)
        return _forward_and_record(cls, FunctionCtx(), args, kwargs)


def _forward_and_record(cls: type[Function], ctx: FunctionCtx, args: tuple,
                        kwargs: dict) -> Any:
    """:meth:`Function.apply`: run ``forward`` with recording off, then record its node."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
    with _ag.no_grad():
        if cls.setup_context is Function.setup_context:
            out = cls.forward(ctx, *args, **kwargs)
        else:
            out = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, out)
    multi = isinstance(out, tuple)
    outs = list(out) if multi else [out]
    for i, o in enumerate(outs):
        if not isinstance(o, Tensor):
            raise TypeError(f"{cls.__name__}.forward must return tensors, got "
                            f"{type(o).__name__} as output {i}")
        if any(o is a for a in args) and not any(o is d for d in ctx._dirty):
            outs[i] = Tensor._make(o._array, o._backend, o)  # an input returned as is
    _check_dirty(cls, ctx, outs)
    _check_traced(cls, tensors, outs)
    ctx._versions = tuple(t._version if isinstance(t, Tensor) else None
                          for t in ctx._saved)
    if not (context.grad_enabled and any(t.requires_grad for t in tensors)):
        return tuple(outs) if multi else outs[0]
    # saved outputs are kept as arrays and re-linked on use: no reference cycle
    saved = list(ctx._saved)
    for j, s in enumerate(saved):
        for i, o in enumerate(outs):
            if s is o:
                ctx._outputs_data[j] = i
                saved[j] = None
    ctx._saved = tuple(saved)
    arrays = tuple(o._array for o in outs)
    op = _FunctionOp(cls, bool(ctx._outputs_data))
    op.materialize_grads = ctx._materialize
    res = record(op, args, arrays if multi else arrays[0], outs[0]._backend, ctx=ctx)
    ctx._node = weakref.ref(res[0]._node if multi else res._node)
    # integer, boolean and marked outputs carry no gradient (as PyTorch's)
    cut = [any(o is m for m in ctx._non_differentiable) for o in (out if multi else [out])]
    res = tuple(Tensor._make(r._array, r._backend) if c or r.dtype.name.startswith(
        ("int", "uint", "bool")) else r for r, c in zip(res if multi else (res,), cut))
    res = tuple(_rebind_dirty(ctx, o, r, i) for i, (o, r) in enumerate(zip(outs, res)))
    return res if multi else res[0]


def _with_jvp(cls: type[Function], level: JVPLevel, args: tuple, kwargs: dict) -> Any:
    """:meth:`Function.apply` where inputs carry tangents at ``level`` and ``cls`` has a
    ``jvp``: ``forward``, then ``jvp(ctx, *tangents)`` (zeros for a tensor without one,
    ``None`` for anything else), both below ``level``; its results are the outputs'
    tangents there (``None``: zero)."""
    ctx = FunctionCtx()
    context.transform = level.parent
    try:
        out = _forward_and_record(cls, ctx, args, kwargs)
        tans = [None if not isinstance(a, Tensor) or not a.dtype.can_require_grad
                else level.get(a) if level.get(a) is not None else zeros_like(a) for a in args]
        ctx._in_jvp = True
        res = cls.jvp(ctx, *tans)
    finally:
        ctx._in_jvp = False
        context.transform = level
    outs = out if isinstance(out, tuple) else (out,)
    res = res if isinstance(res, tuple) else (res,)
    if len(res) != len(outs):
        raise RuntimeError(f"{cls.__name__}.jvp: Function's jvp returned an invalid number of "
                           f"forward gradients (expected {len(outs)} but got {len(res)})")
    for i, (o, t) in enumerate(zip(outs, res)):
        if t is not None and (not isinstance(t, Tensor) or t.shape != o.shape
                              or t.dtype != o.dtype or t._backend is not o._backend):
            got = (f"{tuple(t.shape)} {t.dtype} on {t._backend.label}"
                   if isinstance(t, Tensor) else type(t).__name__)
            raise RuntimeError(f"{cls.__name__}.jvp: tangent {i} is {got}, but output {i} is "
                               f"{tuple(o.shape)} {o.dtype} on {o._backend.label}; return one "
                               f"tangent per output, each of its output's shape and dtype")
        base = next((a for a in args if isinstance(a, Tensor) and a._array is o._array), None)
        if base is None:
            level.set(o, t)
        else:
            level.hold(o, t, base)
    return out


def _check_dirty(cls: type, ctx: FunctionCtx, outs: list) -> None:
    """Inputs marked dirty must be returned, and be neither leaves nor views in a graph."""
    for d in ctx._dirty:
        if not any(d is o for o in outs):
            raise RuntimeError(f"{cls.__name__}: an input marked dirty (shape {d.shape}) was "
                               f"not returned by forward; return every tensor it changes")
        if d.requires_grad and context.grad_enabled and (d._node is None or d._base is not None):
            raise RuntimeError(
                f"{cls.__name__}: forward changed in place an input (shape {d.shape}) that is "
                f"{'a leaf' if d._node is None else 'a view'} requiring grad; pass a copy "
                f"(x.clone()) instead")


def _rebind_dirty(ctx: FunctionCtx, o: Tensor, r: Tensor, i: int) -> Tensor:
    """A dirty input returned as output ``i``: the input tensor itself, now made by the
    Function's node (result ``r``)."""
    if not any(o is d for d in ctx._dirty) or r._node is None:
        return r
    o._rebind(o._array, r._node, i)
    return o


def _check_traced(cls: type, inputs: list[Tensor], outs: list[Tensor]) -> None:
    """Under ``xad.jvp``/``vmap``, every output of a ``Function`` whose inputs carry a
    tangent (a batch axis) must carry one too: a forward that wrapped raw arrays would
    otherwise give a silent zero tangent (a wrong batch)."""
    level = context.transform
    if level is None or not any(level.carries(t) for t in inputs):
        return
    for i, o in enumerate(outs):
        if not level.carries(o):
            raise NotImplementedError(
                f"{cls.__name__}.apply under {type(level).__name__}: output {i} (shape "
                f"{tuple(o.shape)}) was not computed from the inputs with xad operations, so "
                f"its tangent or batch axis is unknown; write forward with xad operations "
                f"(not on .array), or use reverse mode (xad.vjp) for this function")


class _Once(Function):
    """The first ``n`` tensors, unchanged, as values made from the rest (the gradients a
    :func:`once_differentiable` backward received) that no later backward may
    differentiate: differentiating them raises."""

    @staticmethod
    def forward(ctx: FunctionCtx, name: str, n: int, *tensors: Tensor) -> Any:
        cast(Any, ctx).name = name  # FunctionCtx holds any attribute
        out = tuple(t.clone() for t in tensors[:n])
        return out if n > 1 else out[0]

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        raise RuntimeError(f"{cast(Any, ctx).name}: trying to differentiate twice a function "
                           f"that was marked with @once_differentiable; write its backward "
                           f"with xad operations and drop the decorator to get higher "
                           f"derivatives")


def once_differentiable(backward: Callable) -> Callable:
    """Mark a :class:`Function`'s ``backward`` as not differentiable (PyTorch's
    ``torch.autograd.function.once_differentiable``): it runs without recording, and a
    second derivative through it raises instead of silently missing its part.

    Example:
        >>> import xad
        >>> class Square(xad.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     @xad.once_differentiable
        ...     def backward(ctx, g):
        ...         return 2 * ctx.saved_tensors[0] * g
        >>> x = xad.tensor(3.0, requires_grad=True)
        >>> Square.apply(x).backward(); x.grad.item()
        6.0
    """
    @functools.wraps(backward)
    def wrapper(ctx: FunctionCtx, *grads: Any) -> Any:
        with _ag.no_grad():
            out = backward(ctx, *grads)
        live = [g for g in grads if isinstance(g, Tensor) and g.requires_grad]
        res = list(out) if isinstance(out, tuple) else [out]
        kept = [i for i, g in enumerate(res) if isinstance(g, Tensor)]
        if not context.grad_enabled or not live or not kept:
            return out
        made = _Once.apply(backward.__qualname__, len(kept), *(res[i] for i in kept), *live)
        for i, m in zip(kept, made if len(kept) > 1 else (made,)):
            res[i] = m
        return tuple(res) if isinstance(out, tuple) else res[0]
    return wrapper
