"""The reverse-mode engine: graph nodes, grad modes, and backward without recursion.

A recorded operation makes one :class:`Node`. The node holds its inputs' edges (a leaf
tensor, or the producing node and output index), the values its rule saved, and the
versions of saved tensors; it never holds its own outputs (a saved output is kept as a bare
array and re-wrapped when the rule runs), so a finished graph is freed by reference
counting alone. Backward visits nodes in a topological order computed iteratively, runs
each node's gradient rule (written with xad's own operations, so with ``create_graph`` the
backward pass is recorded as a graph too) and reduces broadcast gradients once, here.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = [
    "Node", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "backward",
    "grad", "GraphFreedError",
]


class GraphFreedError(RuntimeError):
    """Backward reached a node whose saved values were already freed."""


class _Mode(threading.local):
    enabled = True
    anomaly = False
    backward_node: Node | None = None  # the node whose rule runs (for anomaly messages)


_mode = _Mode()


def is_grad_enabled() -> bool:
    """Whether operations are being recorded for backward (per thread).

    Example:
        >>> import xad
        >>> with xad.no_grad():
        ...     xad.is_grad_enabled()
        False
    """
    return _mode.enabled


class _GradMode:
    """A context manager and decorator that runs code with recording on or off."""

    def __init__(self, mode: bool) -> None:
        self.mode = mode
        self._prev: list[bool] = []

    def __enter__(self) -> None:
        self._prev.append(_mode.enabled)
        _mode.enabled = self.mode

    def __exit__(self, *exc: object) -> None:
        _mode.enabled = self._prev.pop()

    def __call__(self, fn: Callable) -> Callable:
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with _GradMode(mode):
                return fn(*args, **kwargs)
        return wrapper


class set_grad_enabled(_GradMode):
    """Turn recording on or off: at once when called, until the end of a ``with`` block,
    or around a decorated function (as in PyTorch).

    Example:
        >>> import xad
        >>> with xad.set_grad_enabled(False):
        ...     (xad.ones(2, requires_grad=True) * 2).requires_grad
        False
        >>> _ = xad.set_grad_enabled(False); xad.is_grad_enabled()
        False
        >>> _ = xad.set_grad_enabled(True)
    """

    def __init__(self, mode: bool) -> None:
        super().__init__(bool(mode))
        self._prev.append(_mode.enabled)
        _mode.enabled = self.mode

    def __enter__(self) -> None:
        pass  # already set by the call

    def __call__(self, fn: Callable) -> Callable:
        _mode.enabled = self._prev.pop()  # used as a decorator: undo the call's effect
        return super().__call__(fn)


class _Switch(_GradMode):
    """``no_grad``/``enable_grad``: used as ``with x():``, ``@x()`` or ``@x``."""

    _MODE = True

    def __new__(cls, fn: Callable | None = None) -> Any:
        self = super().__new__(cls)
        if fn is None:
            return self
        _GradMode.__init__(self, cls._MODE)
        return self(fn)

    def __init__(self, fn: Callable | None = None) -> None:
        super().__init__(self._MODE)


class no_grad(_Switch):
    """Stop recording: results need no gradient and keep no graph.

    Example:
        >>> import xad
        >>> w = xad.ones(2, requires_grad=True)
        >>> with xad.no_grad():
        ...     (w * 2).requires_grad
        False
    """

    _MODE = False


class enable_grad(_Switch):
    """Record again inside a ``no_grad`` block.

    Example:
        >>> import xad
        >>> with xad.no_grad(), xad.enable_grad():
        ...     xad.is_grad_enabled()
        True
    """

    _MODE = True


_sequence = itertools.count()


def sequence_mark() -> int:
    """A creation number: nodes made after this call have a larger ``seq``."""
    return next(_sequence)


@functools.cache
def _tensor_class() -> type:
    from .tensor import Tensor  # a late import: tensor.py imports this module
    return Tensor


class Node:
    """One recorded operation: its rule, input edges, saved values and output hooks.

    ``edges[i]`` is ``None`` (input i needs no gradient), a leaf :class:`Tensor`, or a tuple
    ``(node, output_index)``. The rule's ``backward(node, *grads)`` returns one gradient (or
    ``None``) per input.
    """

    # Rarely-set fields are class-level defaults, so recording an operation sets only the
    # five it always needs (this is on the per-operation path).
    saved: tuple | None = ()
    versions: tuple = ()
    out: Any = None
    n_out = 1
    out_meta: Any = None
    hooks: dict[int, list[Callable]] | None = None
    ctx: Any = None
    trace: Any = None
    out_vc: list[int] | None = None  # the saved result's version counter

    def __init__(self, op: Any, edges: tuple, in_shapes: tuple, backend: Any,
                 params: Any = None) -> None:
        self.seq = next(_sequence)  # consumers are made after their inputs: a topological key
        self.op = op
        self.edges = edges
        self.in_shapes = in_shapes
        self.backend = backend
        self.params = params

    @property
    def name(self) -> str:
        """The operation's name, as in error messages and graph drawings."""
        return getattr(self.op, "name", None) or type(self.op).__name__

    def __repr__(self) -> str:
        return f"<{self.name}Backward>"

    # ----- what rules read ---------------------------------------------------------------
    @property
    def inputs(self) -> tuple:
        """The saved inputs (tensors or Python scalars), checked against in-place changes."""
        saved = self.saved
        if saved is None:
            raise GraphFreedError(_freed_message(self))
        for t, v in zip(saved, self.versions):
            if v is not None and (0 if t._vc is None else t._vc[0]) != v:  # t._version
                raise RuntimeError(
                    f"{self.name} backward: a tensor it saved for backward (shape "
                    f"{tuple(t.shape)}, dtype {t.dtype}) was changed by an in-place operation: "
                    f"it is now at version {t._version}, it was saved at version {v}. Change a "
                    f"copy instead (x = x.clone()) or move the in-place change after backward.")
        return saved

    def output(self, index: int = 0) -> Tensor:
        """The operation's (saved) output, linked to this node so it can be differentiated."""
        if self.saved is None:
            raise GraphFreedError(_freed_message(self))
        if self.out_vc is not None and self.out_vc[0]:
            raise RuntimeError(
                f"{self.name} backward: its result, saved for backward, was changed by an "
                f"in-place operation (through the tensor or a view or detach() of it; version "
                f"{self.out_vc[0]}, saved at version 0). Change a copy instead (.clone()).")
        data = self.out if self.n_out == 1 else self.out[index]
        t = _tensor_class()._make(data, self.backend)
        if _mode.enabled:
            t._node, t._idx, t.requires_grad = self, index, True
        return t

    def release(self) -> None:
        """Drop what was saved for backward."""
        self.saved = None
        self.out = None
        self.ctx = None

    def register_hook(self, index: int, fn: Callable) -> None:
        if self.hooks is None:
            self.hooks = {}
        self.hooks.setdefault(index, []).append(fn)


def _freed_message(node: Node) -> str:
    return (f"{node.name} backward: trying to backward through the graph a second time (or "
            f"to use saved values after they were freed). The values saved for backward are "
            f"freed by the first backward; pass retain_graph=True to the first backward() or "
            f"autograd.grad() call if you need to go through the graph again.")


# ----- the engine ---------------------------------------------------------------------------
def _unbroadcast(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum ``g`` down to ``shape`` (the reverse of broadcasting)."""
    gshape = g.shape
    if gshape == shape:
        return g
    from . import ops
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and gshape[i + lead] != 1)
    if axes:
        g = ops.sum(g, axis=axes, keepdims=True)
    if lead or g.shape != shape:
        g = ops.reshape(g, shape)
    return g


def _run_hooks(hooks: list[Callable], g: Tensor) -> Tensor:
    for fn in hooks:
        r = fn(g)
        if r is not None:
            g = r
    return g


def _reachable(roots: list[Node]) -> list[Node]:
    """Nodes reachable from ``roots``, producers first (no recursion)."""
    stack = list(roots)
    seen = set(roots)
    while stack:
        for e in stack.pop().edges:
            if type(e) is tuple and e[0] not in seen:
                seen.add(e[0])
                stack.append(e[0])
    return sorted(seen, key=lambda n: n.seq)


def _needed(order: list[Node], leaf_ids: set[int], node_targets: set[Node]) -> set[Node]:
    """Nodes whose rule must run: those with an edge into a requested leaf, into a node that
    makes a requested tensor, or into another such node (a requested node's own rule runs
    only if it leads further to something requested)."""
    need: set[Node] = set()
    for n in order:  # producers before consumers
        for e in n.edges:
            if e is None:
                continue
            if type(e) is tuple:
                if e[0] in need or e[0] in node_targets:
                    need.add(n)
                    break
            elif id(e) in leaf_ids:
                need.add(n)
                break
    return need


def _capture(node: Node, slots: list, node_targets: dict, captured: dict) -> None:
    """Keep the gradients of requested non-leaf tensors made by ``node``."""
    for i in range(node.n_out):
        ids = node_targets.get((node, i))
        if ids and slots[i] is not None:
            for k in ids:
                captured[k] = slots[i]


def run_backward(outputs: Sequence[Tensor], grad_outputs: Sequence[Tensor], *,
                 retain_graph: bool, create_graph: bool,
                 inputs: Sequence[Tensor] | None = None) -> dict[int, Tensor] | None:
    """Propagate ``grad_outputs`` from ``outputs`` through the graph.

    Without ``inputs``, gradients accumulate into the ``.grad`` of leaves (PyTorch's
    ``backward``). With ``inputs``, nothing is stored: the gradients of those tensors are
    returned, keyed by ``id`` (``autograd.grad``), and only the part of the graph that
    leads to them is run.
    """
    from .tensor import Tensor
    pending: dict[Node, list] = {}
    captured: dict[int, Tensor] = {}
    leaf_ids: set[int] = set()
    node_targets: dict[tuple[Node, int], list[int]] = {}
    if inputs is not None:
        for t in inputs:
            if t._node is None:
                leaf_ids.add(id(t))
            else:
                node_targets.setdefault((t._node, t._idx), []).append(id(t))

    # Gradients reaching a leaf are summed here first; hooks then see the total once, as
    # in PyTorch, and the total is stored in .grad (or returned) at the end. A sum the
    # engine made itself is added into in place (never a tensor a rule handed over, which
    # may be shared).
    leaf_acc: dict[int, list] = {}
    inplace_ok = not create_graph

    def add(a: Tensor | None, g: Tensor) -> Tensor:
        return g if a is None else a + g

    def to_leaf(leaf: Tensor, g: Tensor) -> None:
        if inputs is not None and id(leaf) not in leaf_ids:
            return
        slot = leaf_acc.get(id(leaf))
        if slot is None:
            leaf_acc[id(leaf)] = [leaf, g, False]
        elif slot[2] and inplace_ok and g._array.dtype == slot[1]._array.dtype:
            slot[1]._array += g._array
        else:
            slot[1] = slot[1] + g
            slot[2] = slot[1]._backend.mutable

    # Gradients that something else also holds (the caller's, or passed through by a rule)
    # are copied before they become a leaf's .grad, as are read-only views.
    shared = {id(g) for g in grad_outputs}
    roots = []
    for t, g in zip(outputs, grad_outputs):
        if t._node is None:
            if not t.requires_grad:
                raise RuntimeError(
                    f"backward: tensor of shape {tuple(t.shape)} does not require grad and "
                    f"has no graph; create the inputs with requires_grad=True (or call "
                    f".requires_grad_()) before computing it")
            to_leaf(t, g)
            continue
        slots = pending.get(t._node)
        if slots is None:
            slots = pending[t._node] = [None] * t._node.n_out
            roots.append(t._node)
        slots[t._idx] = add(slots[t._idx], g)

    target_nodes = {n for n, _ in node_targets}
    need = _needed(_reachable(roots), leaf_ids, target_nodes) if inputs is not None else None
    # Nodes run in decreasing creation order: every consumer of a node was made after it,
    # so by the time a node is popped all of its gradient has arrived.
    heap = [(-n.seq, n) for n in roots]
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    anomaly = _mode.anomaly
    with _GradMode(create_graph):
        while heap:
            node = pop(heap)[1]
            slots = pending.pop(node)
            if need is not None and node not in need and node not in target_nodes:
                continue
            if node.hooks:
                for i, hooks in node.hooks.items():
                    if slots[i] is not None:
                        slots[i] = _run_hooks(hooks, slots[i])
            if need is not None:
                if node in target_nodes:
                    _capture(node, slots, node_targets, captured)
                if node not in need:
                    continue
            if node.saved is None:
                raise GraphFreedError(_freed_message(node))
            multi = node.n_out > 1
            if multi:
                for i, s in enumerate(slots):
                    if s is None:
                        shape, dtype = node.out_meta[i]
                        slots[i] = Tensor._make(node.backend.zeros(shape, dtype), node.backend)
            if anomaly:
                from .utils.anomaly import check_backward
                _mode.backward_node = node
                try:
                    grads = node.op.backward(node, *slots)
                finally:
                    _mode.backward_node = None
                grads = grads if type(grads) is tuple else (grads,)
                check_backward(node, grads)
            else:
                grads = node.op.backward(node, *slots)
                if type(grads) is not tuple:
                    grads = (grads,)
            if not retain_graph and (node.saved or node.out is not None or node.ctx is not None):
                node.saved = node.out = node.ctx = None  # (a node that saved nothing can rerun)
            g0 = slots[0]
            for e, g, shape in zip(node.edges, grads, node.in_shapes):
                if e is None or g is None:
                    continue
                if g._array.shape != shape:
                    g = _unbroadcast(g, tuple(shape))
                if type(e) is tuple:
                    m, i = e
                    s = pending.get(m)
                    if s is None:
                        s = pending[m] = [None] * m.n_out
                        push(heap, (-m.seq, m))
                    s[i] = g if s[i] is None else s[i] + g
                else:
                    if g is g0 or multi and any(g is s for s in slots):
                        shared.add(id(g))  # the rule passed its own input through
                    to_leaf(e, g)
            del grads, slots
        stored: set[int] = set()
        for leaf, g, owned in leaf_acc.values():
            if g._array.dtype != leaf._array.dtype:  # a gradient has its input's dtype
                g, owned = g.astype(leaf.dtype), True
            if leaf._hooks:
                g = _run_hooks(leaf._hooks, g)
            if inputs is not None:
                captured[id(leaf)] = g
                continue
            if g._node is not None and not create_graph:
                g = g.detach()
            if not owned and leaf.grad is None and not create_graph and (
                    g._view or id(g) in shared or id(g._array) in stored):
                g = Tensor._make(g._backend.xp.asarray(g._array, copy=True), g._backend)
            stored.add(id(g._array))
            leaf.grad = g if leaf.grad is None else leaf.grad + g
    return captured if inputs is not None else None


def backward(tensors: Tensor | Sequence[Tensor], grad_tensors: Any = None,
             retain_graph: bool | None = None, create_graph: bool = False) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves behind them.

    Example:
        >>> import xad
        >>> x = xad.tensor([1.0, 2.0], requires_grad=True)
        >>> xad.autograd.backward((x * x).sum()); x.grad.tolist()
        [2.0, 4.0]
    """
    outs, gs = _prepare(tensors, grad_tensors, "backward")
    run_backward(outs, gs, retain_graph=create_graph if retain_graph is None else retain_graph,
                 create_graph=create_graph)


def grad(outputs: Tensor | Sequence[Tensor], inputs: Tensor | Sequence[Tensor],
         grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool = False) -> tuple[Tensor | None, ...]:
    """Gradients of ``outputs`` with respect to ``inputs``, returned rather than stored.

    Example:
        >>> import xad
        >>> x = xad.tensor(3.0, requires_grad=True)
        >>> g, = xad.autograd.grad(x ** 3, [x], create_graph=True)
        >>> h, = xad.autograd.grad(g, [x]); (g.item(), h.item())
        (27.0, 18.0)
    """
    from .tensor import Tensor
    single = isinstance(inputs, Tensor)
    ins = [inputs] if single else list(inputs)
    for i, t in enumerate(ins):
        if not isinstance(t, Tensor):
            raise TypeError(f"autograd.grad: inputs[{i}] is {type(t).__name__}, not a Tensor")
        if not t.requires_grad:
            raise RuntimeError(f"autograd.grad: inputs[{i}] (shape {tuple(t.shape)}) does not "
                               f"require grad; create it with requires_grad=True")
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
        if g is not None and not create_graph:
            g = g.detach()
        result.append(g)
    return tuple(result)


def _prepare(tensors: Any, grads: Any, where: str) -> tuple[list, list]:
    from .tensor import Tensor
    outs = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if grads is None:
        gs: list = [None] * len(outs)
    elif isinstance(grads, Tensor):
        gs = [grads]
    else:
        gs = list(grads)
    if len(gs) != len(outs):
        raise ValueError(f"{where}: got {len(outs)} outputs but {len(gs)} gradients")
    for i, (t, g) in enumerate(zip(outs, gs)):
        if g is None:
            if t.ndim != 0 and t.size != 1:
                raise RuntimeError(
                    f"{where}: output {i} has shape {tuple(t.shape)}; a gradient can be implied "
                    f"only for a scalar output. Pass the gradient explicitly "
                    f"(y.backward(xad.ones_like(y)) for the sum) or reduce y first (y.sum()).")
            gs[i] = Tensor._make(t._backend.full(t.shape, 1, t._array.dtype), t._backend)
        elif not isinstance(g, Tensor):
            gs[i] = Tensor._make(t._backend.asarray(g, dtype=t._array.dtype), t._backend)
        elif g.shape != t.shape:
            raise ValueError(f"{where}: gradient {i} has shape {tuple(g.shape)} but the output "
                             f"has shape {tuple(t.shape)}")
        elif g._backend is not t._backend:
            raise ValueError(f"{where}: gradient {i} is on {g._backend.label} but the output is "
                             f"on {t._backend.label}; move it with .to(...)")
    return outs, gs
