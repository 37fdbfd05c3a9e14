"""The graph: nodes, edges, the one function that records an operation, the one walker.

A recorded operation is one :class:`Node`. Its ``edges`` say where each input's gradient
goes (an *edge*): ``None`` (no gradient wanted), the leaf tensor itself, or the pair
``(node, output_index)`` of the operation that made the input. Edges are made only by
:func:`record` and read through :func:`producer`; rules ask :meth:`Node.needs_grad`.

A node holds what its rule saved and never its own outputs (a saved output is kept as a
bare array and re-wrapped by :meth:`Node.output`), so a graph is freed by reference
counting alone. This module sits below :class:`~xad.Tensor`: the tensor class, the
broadcast reduction and the anomaly checks are *installed* into :data:`installed` by the
layers above, so nothing here imports upward.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from . import dtypes as _dt
from .context import HOOKED, context, quiet
from .hooks import RemovableHandle

__all__ = ["Node", "GraphFreedError", "record", "producer", "walk", "sequence_mark",
           "installed", "complex_twins"]


class GraphFreedError(RuntimeError):
    """Backward reached a node whose saved values were already freed."""


class _Installed:
    """What the layers above put here: ``tensor`` (the Tensor class) and ``result`` (its
    ``_result``, bound once), by xad.tensor,
    ``sum_to`` (the reverse of broadcasting, by xad.ops), ``check_forward`` and
    ``check_backward`` (by xad.utils.anomaly, read only while anomaly detection is on).
    ``import xad`` installs all five before any user code runs, so they carry no default."""

    tensor: Any
    result: Callable[..., Any]
    sum_to: Callable[..., Any]
    check_forward: Callable[..., None]
    check_backward: Callable[..., None]


installed = _Installed()

# op -> its twin whose rule is the complex one (``xad.ops.elementwise.holomorphic`` fills
# it): ``record`` gives a node the twin where the result is complex, so a real gradient
# runs the op's own rule without a dtype test per node
complex_twins: dict[Any, Any] = {}
_COMPLEX = (_dt.complex64, _dt.complex128)
_sequence = itertools.count()
_new = object.__new__


def sequence_mark() -> int:
    """A creation number: nodes made after this call have a larger ``seq``."""
    return next(_sequence)


class Node:
    """One recorded operation: its rule (``op``), input edges, saved values, output hooks.

    The rule is ``op.backward(node, *grads)`` and returns one gradient (or ``None``) per
    input. :func:`record` makes every node and sets the fields the engine reads for every
    node there, without an ``__init__`` frame (an instance attribute is read faster than a
    class default in Python 3.11: this is the per-operation path); rarely-set ones
    (``versions``, ``out_meta``, ``trace``) are class defaults.
    """

    seq: int  # creation number: consumers are made after their inputs (a topological key)
    op: Any
    edges: tuple  # per input: None (no gradient wanted), a leaf tensor, or (node, index)
    in_shapes: tuple
    backend: Any
    saved: tuple | None  # None once released
    out: Any
    n_out: int
    hooks: dict[int, list[Callable]] | None
    ctx: Any
    out_vc: list[int] | None  # the saved result's version counter
    params: Any
    versions: tuple = ()
    out_meta: Any = None
    trace: Any = None

    @property
    def name(self) -> str:
        """The operation's name, as in error messages and graph drawings."""
        return getattr(self.op, "name", None) or type(self.op).__name__

    def __repr__(self) -> str:
        return f"<{self.name}Backward>"

    def needs_grad(self, i: int) -> bool:
        """Whether input ``i`` wants a gradient (a rule may skip computing it otherwise)."""
        return self.edges[i] is not None

    @property
    def inputs(self) -> tuple:
        """The saved inputs (tensors or Python scalars), checked against in-place changes."""
        saved = self.saved
        if saved is None:
            raise GraphFreedError(freed_message(self))
        for i, v in enumerate(self.versions):  # _check, inline: a per-node path
            if v is not None and (0 if saved[i]._vc is None else saved[i]._vc[0]) != v:
                self._check(i)  # raises
        return saved

    def input(self, i: int) -> Any:
        """Saved input ``i`` alone, checked against in-place changes: a rule reading only
        some inputs raises only for those, as PyTorch saves only what a rule reads."""
        saved = self.saved
        if saved is None:
            raise GraphFreedError(freed_message(self))
        t, v = saved[i], self.versions[i]
        if v is not None and (0 if t._vc is None else t._vc[0]) != v:
            self._check(i)  # raises
        return t

    def _check(self, i: int) -> None:
        assert self.saved is not None  # both callers raised GraphFreedError otherwise
        t, v = self.saved[i], self.versions[i]
        if v is not None and (0 if t._vc is None else t._vc[0]) != v:
            raise RuntimeError(
                f"{self.name} backward: a tensor it saved for backward (shape "
                f"{tuple(t.shape)}, dtype {t.dtype}) was changed by an in-place operation: "
                f"it is now at version {t._version}, it was saved at version {v}. Change a "
                f"copy instead (x = x.clone()) or move the in-place change after backward.")

    def output(self, index: int = 0) -> Any:
        """The operation's (saved) output, linked to this node so it can be differentiated."""
        if self.saved is None:
            raise GraphFreedError(freed_message(self))
        if self.out_vc is not None and self.out_vc[0]:
            raise RuntimeError(
                f"{self.name} backward: its result, saved for backward, was changed by an "
                f"in-place operation (through the tensor or a view or detach() of it; version "
                f"{self.out_vc[0]}, saved at version 0). Change a copy instead (.clone()).")
        data = self.out if self.n_out == 1 else self.out[index]
        if context.grad_enabled:
            return installed.result(data, self.backend, self, index)
        return installed.result(data, self.backend)

    def release(self) -> None:
        """Drop what was saved for backward (the rule cannot run again)."""
        self.saved = None
        self.out = None
        self.ctx = None

    def adopt_saved(self, other: Node) -> None:
        """Take ``other``'s saved values (a recomputed twin, for checkpointing)."""
        self.saved, self.versions, self.out, self.ctx = (other.saved, other.versions,
                                                         other.out, other.ctx)

    def register_hook(self, index: int, fn: Callable) -> RemovableHandle:
        """Call ``fn(grad)`` on output ``index``'s gradient before the rule runs; hooks run
        in registration order, except that ``retain_grad``'s keeper stays last (as PyTorch's:
        ``.grad`` is the gradient after every hook)."""
        if self.hooks is None:
            self.hooks = {}
        hooks = self.hooks.setdefault(index, [])
        pos = len(hooks)
        while pos and getattr(hooks[pos - 1], "retains_grad", False) and not getattr(
                fn, "retains_grad", False):
            pos -= 1
        hooks.insert(pos, fn)
        return RemovableHandle(hooks, fn)


def freed_message(node: Node) -> str:
    """The error for a second backward through freed saved values."""
    return (f"{node.name} backward: trying to backward through the graph a second time (or "
            f"to use saved values after they were freed). The values saved for backward are "
            f"freed by the first backward; pass retain_graph=True to the first backward() or "
            f"autograd.grad() call if you need to go through the graph again.")


def producer(edge: Any) -> Node | None:
    """The node an edge leads to, or ``None`` for a leaf (or no) edge."""
    return edge[0] if type(edge) is tuple else None


def walk(roots: Iterable[Node], stop: Callable[[Node], bool] | None = None) -> Iterator[Node]:
    """Every node reachable from ``roots`` once, without recursion (``stop(node)`` True:
    do not go past that node). The one graph walker: backward's plan, transforms,
    checkpointing and drawings all use it."""
    stack = list(dict.fromkeys(roots))
    seen = set(stack)
    while stack:
        n = stack.pop()
        yield n
        if stop is not None and stop(n):
            continue
        for e in n.edges:
            if type(e) is tuple and e[0] not in seen:
                seen.add(e[0])
                stack.append(e[0])


def _inputs(args: tuple, T: Any) -> tuple[tuple, tuple, tuple]:
    """:func:`record`'s edges, shapes and versions of three or more inputs (linear, layer
    norm, attention): one loop, no generators."""
    le: list[Any] = []
    ls: list[Any] = []
    lv: list[Any] = []
    for a in args:
        if isinstance(a, T):
            le.append((a if a._node is None else (a._node, a._idx)) if a.requires_grad else None)
            ls.append(a._array.shape)
            lv.append(0 if a._vc is None else a._vc[0])
        else:
            le.append(None)
            ls.append(())
            lv.append(None)
    return tuple(le), tuple(ls), tuple(lv)


def record(op: Any, args: tuple, out: Any, backend: Any, params: Any = None,
           ctx: Any = None) -> Any:
    """Make the node of ``op`` applied to ``args`` (tensors and Python scalars, at least one
    tensor requiring grad) and return its result tensor(s) for the array(s) ``out``.

    The only place a node is made. ``op.save_inputs`` keeps the inputs (with their
    versions, checked at backward); ``op.save_output`` keeps the result's array; a tuple
    ``out`` makes a node with several outputs; ``ctx`` is a custom Function's context.
    """
    T = installed.tensor
    edges: tuple[Any, ...]
    shapes: tuple[Any, ...]
    versions: tuple[Any, ...]
    if len(args) == 2:  # the commonest shapes, written out: this is the per-operation path
        x, y = args
        if isinstance(x, T):
            ex = (x if x._node is None else (x._node, x._idx)) if x.requires_grad else None
            sx, vx = x._array.shape, (0 if x._vc is None else x._vc[0])
        else:
            ex, sx, vx = None, (), None
        if isinstance(y, T):
            ey = (y if y._node is None else (y._node, y._idx)) if y.requires_grad else None
            sy, vy = y._array.shape, (0 if y._vc is None else y._vc[0])
        else:
            ey, sy, vy = None, (), None
        edges, shapes, versions = (ex, ey), (sx, sy), (vx, vy)
    elif len(args) == 1 and isinstance(args[0], T):
        x = args[0]
        edges = (((x if x._node is None else (x._node, x._idx)) if x.requires_grad else None),)
        shapes = (x._array.shape,)
        versions = (0 if x._vc is None else x._vc[0],)
    else:
        edges, shapes, versions = _inputs(args, T)
    twin = complex_twins.get(op)
    if twin is not None and type(out) is not tuple:
        d = backend._from_native.get(out.dtype) or backend.xad_dtype(out.dtype)
        if d in _COMPLEX:
            op = twin
    node = _new(Node)  # (Node's fields, set here: no __init__ frame on the per-op path)
    node.seq = next(_sequence)
    node.op = op
    node.edges = edges
    node.in_shapes = shapes
    node.backend = backend
    node.saved = ()
    node.out = None
    node.n_out = 1
    node.hooks = None
    node.ctx = ctx
    node.out_vc = None
    node.params = params or None
    if op.save_inputs:
        node.saved = args
        node.versions = versions
    if type(out) is not tuple:
        vc = None
        if op.save_output:  # the saved result is checked against in-place changes
            node.out = out
            vc = node.out_vc = [0]
        res = installed.result(out, backend, node, 0, vc)
        if not quiet.on and context.mode & HOOKED:  # anomaly or a recorder: the per-op path
            if context.anomaly:
                installed.check_forward(op.name, backend, out, node)
            if context.recorder is not None:
                context.recorder.result(res)
        return res
    node.n_out = len(out)
    node.out_meta = tuple([(o.shape, o.dtype) for o in out])
    if op.save_output:
        node.out = out
    if context.anomaly:
        for o in out:
            installed.check_forward(op.name, backend, o, node)
    make = installed.result
    results = tuple([make(o, backend, node, i) for i, o in enumerate(out)])
    if context.recorder is not None:
        for r in results:
            context.recorder.result(r)
    return results
