"""Module hooks, as in PyTorch: forward pre-hooks and forward hooks (with ``with_kwargs``),
full backward pre-hooks and full backward hooks.

``Module.__call__`` comes here only when a module has hooks, so a module without any pays
one attribute test. Full backward hooks work like PyTorch's ``BackwardHook``: the module's
tensor inputs and its outputs pass through identity operations; backward through the outputs'
identity runs the backward pre-hooks ``hook(module, grad_output)`` (a returned tuple
replaces ``grad_output``, for the module's own backward too) and records ``grad_output``, and
backward through the inputs' identity calls ``hook(module, grad_input, grad_output)``, whose
returned tuple replaces ``grad_input``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..function import Function
from ..grad_mode import is_grad_enabled
from ..hooks import RemovableHandle
from ..tensor import Tensor

__all__ = ["register", "call_with_hooks", "hooked"]

_KINDS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")


class _WithKwargs:
    """A forward (pre-)hook registered with ``with_kwargs=True``: it also gets the keyword
    arguments (``hook(module, args, kwargs[, output])``)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable) -> None:
        self.fn = fn


def hooked(module: Any) -> bool:
    """Whether ``module`` has any hook (its call then goes through :func:`call_with_hooks`)."""
    return bool(module._forward_pre_hooks or module._forward_hooks or module._backward_hooks
                or module._backward_pre_hooks)


def register(module: Any, kind: str, hook: Callable, prepend: bool = False,
             with_kwargs: bool = False) -> RemovableHandle:
    """Add ``hook`` to ``module``'s hooks of ``kind`` (one of ``_KINDS``): last, or first
    with ``prepend``; a forward (pre-)hook ``with_kwargs`` also gets the keywords."""
    if not callable(hook):
        raise TypeError(f"register{kind[:-1]}: the hook must be callable, got "
                        f"{type(hook).__name__}")
    hooks = module.__dict__.get(kind)
    if hooks is None:
        hooks = []
        object.__setattr__(module, kind, hooks)
    entry: Any = _WithKwargs(hook) if with_kwargs else hook
    hooks.insert(0 if prepend else len(hooks), entry)
    return RemovableHandle(hooks, entry)


def call_with_hooks(module: Any, args: tuple, kwargs: dict) -> Any:
    """``module(*args, **kwargs)`` with its hooks."""
    for hook in list(module._forward_pre_hooks or ()):
        if isinstance(hook, _WithKwargs):
            r = hook.fn(module, args, kwargs)
            if r is not None:
                if not (isinstance(r, tuple) and len(r) == 2):
                    raise RuntimeError(f"forward pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {r!r}.")
                args, kwargs = r
            continue
        r = hook(module, args)
        if r is not None:
            args = r if isinstance(r, tuple) else (r,)
    state = None
    if (module._backward_hooks or module._backward_pre_hooks) and is_grad_enabled():
        state = _State(module)
        args = state.wrap_inputs(args)
    out = module.forward(*args, **kwargs)
    for hook in list(module._forward_hooks or ()):
        r = hook.fn(module, args, kwargs, out) if isinstance(hook, _WithKwargs) else \
            hook(module, args, out)
        if r is not None:
            out = r
    if state is not None:
        out = state.wrap_outputs(out)
    return out


class _State:
    """What one call's backward hooks share: which inputs were wrapped, ``grad_output``."""

    def __init__(self, module: Any) -> None:
        self.module = module
        self.pos: list[int] = []  # where the inputs that require grad (wrapped) are
        self.n_args = 0  # positional arguments: grad_input has one entry per argument
        self.grad_output: tuple | None = None

    def wrap_inputs(self, args: tuple) -> tuple:
        self.n_args = len(args)
        args, self.pos = _through(_InputsIdentity, self, args)
        return args

    def wrap_outputs(self, out: Any) -> Any:
        outs, _ = _through(_OutputsIdentity, self, out if isinstance(out, tuple) else (out,))
        return outs if isinstance(out, tuple) else outs[0]

    def pre(self, grad_output: tuple) -> tuple:
        """Run the module's backward pre-hooks on ``grad_output``; a returned tuple (of as
        many gradients) replaces it."""
        for hook in list(self.module._backward_pre_hooks or ()):
            r = hook(self.module, grad_output)
            if r is not None:
                r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
                if len(r) != len(grad_output):
                    raise RuntimeError(f"Backward pre hook returned an invalid number of "
                                       f"grad_output, got {len(r)}, but expected "
                                       f"{len(grad_output)}")
                grad_output = r
        return grad_output

    def call(self, grad_input: tuple) -> tuple:
        """Run the module's backward hooks on ``grad_input`` (one entry per positional
        argument, ``None`` where it needs no gradient); a returned tuple replaces it."""
        for hook in list(self.module._backward_hooks or ()):
            r = hook(self.module, grad_input, self.grad_output)
            if r is not None:
                r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
                if len(r) != len(grad_input):
                    raise ValueError(f"backward hook {getattr(hook, '__qualname__', hook)} "
                                     f"returned {len(r)} gradients for "
                                     f"{len(grad_input)} inputs")
                grad_input = r
        return grad_input


def _through(fn: type[Function], state: _State, values: tuple) -> tuple[tuple, list[int]]:
    """``values`` with the tensors that require grad passed through ``fn`` (an identity),
    and their positions."""
    pos = [i for i, v in enumerate(values) if isinstance(v, Tensor) and v.requires_grad]
    if not pos:
        return values, pos
    new = fn.apply(state, *(values[i] for i in pos))
    res = list(values)
    for i, t in zip(pos, new if isinstance(new, tuple) else (new,)):
        res[i] = t
    return tuple(res), pos


class _Identity(Function):
    """Passes its tensors through; the subclasses' backward is where hooks happen."""

    @staticmethod
    def forward(ctx: Any, state: _State, *ts: Tensor) -> Any:
        ctx.state = state
        return ts if len(ts) > 1 else ts[0]


class _OutputsIdentity(_Identity):
    @staticmethod
    def forward(ctx: Any, state: _State, *ts: Tensor) -> Any:
        ctx.set_materialize_grads(False)  # an unused output's gradient is None, as PyTorch's
        return _Identity.forward(ctx, state, *ts)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple:
        grads = ctx.state.grad_output = ctx.state.pre(grads)
        if not ctx.state.pos:  # nothing upstream to wait for: call the hooks now
            ctx.state.call((None,) * ctx.state.n_args)  # as PyTorch: None per input
        return (None, *grads)


class _InputsIdentity(_Identity):
    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple:
        state = ctx.state  # grad_input[i] is argument i's gradient, as in PyTorch
        full: list = [None] * state.n_args
        for i, g in zip(state.pos, grads):
            full[i] = g
        full = list(state.call(tuple(full)))
        return (None, *(full[i] for i in state.pos))
