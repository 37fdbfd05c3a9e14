"""The backward pass, in three pieces: plan (which nodes run), loop (call the rules in
order), accumulate (sum what reaches each leaf, run its hooks, store or return it).

Nodes run in decreasing creation order (``Node.seq``): every consumer of a node was made
after it, so when a node is popped from the heap all of its gradient has arrived. No
recursion, so graphs of any depth work. Each rule is written with xad's operations, so with
``create_graph`` the backward pass is itself recorded. Broadcast gradients are reduced to
their input's shape here, once, for every rule. Autocast is off while rules run: each
rule computes in the dtypes its forward used (as PyTorch).
"""

from __future__ import annotations

import contextlib
import heapq
from collections.abc import Callable, Sequence
from typing import Any

from .context import context
from .grad_mode import set_grad_enabled
from .graph import GraphFreedError, Node, freed_message, installed, walk

__all__ = ["run_backward"]


def run_hooks(hooks: list[Callable], g: Any, where: str) -> Any:
    """Run gradient hooks in order; a returned tensor replaces the gradient, and must match
    it in shape, dtype and backend."""
    if context.recorder is not None and not all(getattr(f, "replay_safe", False) for f in hooks):
        context.recorder.unsupported(f"a gradient hook ({_name(hooks[0])}) runs Python code that "
                                     f"a replay would skip")
    for fn in list(hooks):
        r = fn(g)
        if r is None:
            continue
        if not isinstance(r, installed.tensor):
            raise TypeError(f"gradient hook {_name(fn)} on {where} returned "
                            f"{type(r).__name__}; a hook returns None or a tensor shaped like "
                            f"the gradient {tuple(g.shape)}")
        if r.shape != g.shape or r._array.dtype != g._array.dtype or r._backend is not g._backend:
            raise ValueError(f"gradient hook {_name(fn)} on {where} returned a tensor of shape "
                             f"{tuple(r.shape)}, dtype {r.dtype} on {r._backend.label}; the "
                             f"gradient has shape {tuple(g.shape)}, dtype {g.dtype} on "
                             f"{g._backend.label}: return a tensor like it")
        g = r
    return g


def _name(fn: Callable) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


class _Plan:
    """Which nodes run. With no requested ``inputs`` (``backward()``), all of them. With
    inputs (``autograd.grad``), only nodes with a path to a requested leaf or to a node
    making a requested tensor; gradients of requested non-leaf tensors are captured."""

    def __init__(self, roots: list[Node], inputs: Sequence[Any] | None) -> None:
        self.leaf_ids: set[int] | None = None
        self.targets: dict[tuple[Node, int], list[int]] = {}
        self.need: set[Node] | None = None
        self.target_nodes: set[Node] = set()
        self.visit: set[Node] = set()  # nodes whose hooks run though no rule of theirs does
        if inputs is None:
            return
        self.leaf_ids = set()
        for t in inputs:
            if t._node is None:
                self.leaf_ids.add(id(t))
            else:
                self.targets.setdefault((t._node, t._idx), []).append(id(t))
        target_nodes = {n for n, _ in self.targets}
        self.need = set()
        for n in sorted(walk(roots), key=lambda n: n.seq):  # producers before consumers
            if any(e is not None and (e[0] in self.need or e[0] in target_nodes
                                      if type(e) is tuple else id(e) in self.leaf_ids)
                   for e in n.edges):
                self.need.add(n)
        self.target_nodes = target_nodes
        self.visit = target_nodes | set(roots)  # as PyTorch: an output's hooks always run

    def capture(self, node: Node, slots: list, captured: dict[int, Any]) -> None:
        """Keep the gradients of requested non-leaf tensors made by ``node``."""
        for i in range(node.n_out):
            ids = self.targets.get((node, i))
            if ids and slots[i] is not None:
                for k in ids:
                    captured[k] = slots[i]


class _Leaves:
    """Gradients reaching leaves, summed first; hooks then see the total once (as in
    PyTorch) and it is stored in ``.grad`` (``backward``) or returned (``autograd.grad``).
    A sum the engine made itself is added into in place; a gradient someone else may hold
    (the caller's, or one a rule passed through) is copied before it becomes a ``.grad``."""

    def __init__(self, plan: _Plan, create_graph: bool, store: bool) -> None:
        self.plan = plan
        self.store = store  # into .grad (backward), or returned (autograd.grad)
        self.leaf_ids = plan.leaf_ids
        self.inplace_ok = not create_graph
        self.create_graph = create_graph
        self.acc: dict[int, list] = {}

    def add(self, leaf: Any, g: Any, held: Sequence[Any] = ()) -> None:
        """Add ``g`` to ``leaf``'s gradient; ``held``: gradients someone else holds (the
        caller's, or the rule's inputs, which it may pass through): ``g`` among them is
        shared, never added into."""
        key = id(leaf)
        ids = self.leaf_ids
        if ids is not None and key not in ids:
            return
        slot = self.acc.get(key)
        if slot is None:  # (leaf, sum, owned, shared)
            self.acc[key] = [leaf, g, False, any(g is h for h in held)]
        elif slot[2] and self.inplace_ok and g._array.dtype == slot[1]._array.dtype:
            slot[1]._accumulate(g)
        else:
            slot[1] = slot[1] + g
            slot[2], slot[3] = slot[1]._backend.mutable, False

    def finish(self, captured: dict[int, Any]) -> None:
        stored: dict[int, Any] = {}  # id -> the array, kept alive: an id is never reused
        for leaf, g, owned, shared in self.acc.values():
            if g._array.dtype != leaf._array.dtype:  # a gradient has its input's dtype
                g, owned = g.astype(leaf.dtype), True
            if leaf._hooks:
                h = run_hooks(leaf._hooks, g, f"a leaf tensor of shape {tuple(leaf.shape)}")
                g, shared = h, shared or h is not g  # a hook's tensor may be held elsewhere
            if not self.store:
                captured[id(leaf)] = g
                continue
            if g._node is not None and not self.create_graph:
                g = g.detach()
            if not owned and leaf.grad is None and not self.create_graph and (
                    g._view or shared or id(g._array) in stored):
                g = g._copy()
            stored[id(g._array)] = g._array
            _store(leaf, g, self.create_graph)
            if leaf._post_hooks:
                _post_hooks(leaf)


def _store(leaf: Any, g: Any, create_graph: bool) -> None:
    """Set or add ``g`` into ``leaf.grad``. As PyTorch's, a first-order sum is added into
    the existing ``.grad`` in place: a reference to it, or a buffer it views, sees the sum."""
    old = leaf.grad
    if old is None:
        leaf.grad = g
    elif create_graph or old.requires_grad or old._array.dtype != g._array.dtype:
        leaf.grad = old + g
    elif context.recorder is not None:  # the sum's own array, given to the same tensor
        old._set_data((old + g)._array)
    else:
        old += g  # recording is off here (no create_graph): a plain in-place add
        leaf.grad = old


def _post_hooks(leaf: Any) -> None:
    """Run ``register_post_accumulate_grad_hook``'s hooks on ``leaf``."""
    if context.recorder is not None:
        context.recorder.unsupported("a post-accumulate-grad hook runs Python code that a "
                                     "replay would skip")
    for fn in list(leaf._post_hooks):
        fn(leaf)


def _zeros_for(node: Node, slots: list) -> None:
    """Fill the gradients of a multi-output node's unused outputs with zeros."""
    for i, s in enumerate(slots):
        if s is None:
            shape, dtype = node.out_meta[i]
            slots[i] = installed.tensor._constant(node.backend.zeros(shape, dtype), node.backend)


def _call_rule(node: Node, slots: list) -> tuple:
    """Run ``node``'s rule on its output gradients; a tuple of input gradients back."""
    if node.saved is None:
        raise GraphFreedError(freed_message(node))
    if node.n_out > 1 and node.op.materialize_grads:
        _zeros_for(node, slots)
    if not context.anomaly:
        grads = node.op.backward(node, *slots)
        return grads if type(grads) is tuple else (grads,)
    context.backward_node = node
    try:
        grads = node.op.backward(node, *slots)
    finally:
        context.backward_node = None
    grads = grads if type(grads) is tuple else (grads,)
    installed.check_backward(node, grads)
    return grads


def _loop(roots: list[Node], pending: dict[int, tuple], plan: _Plan, leaves: _Leaves,
          retain_graph: bool, captured: dict[int, Any]) -> None:
    """Call the rules in decreasing creation order, passing gradients along the edges.
    ``pending`` maps a node's ``seq`` to the node and its output gradients; the heap holds
    the negated ``seq`` s (ints compare faster than tuples: this is the per-node path)."""
    heap = [-n.seq for n in roots]
    heapq.heapify(heap)
    pop, push, need = heapq.heappop, heapq.heappush, plan.need
    anomaly, add_leaf, sum_to = context.anomaly, leaves.add, installed.sum_to
    while heap:
        node, slots = pending.pop(-pop(heap))
        if need is not None and node not in need and node not in plan.visit:
            continue
        if node.hooks:
            for i, hooks in node.hooks.items():
                if slots[i] is not None:
                    slots[i] = run_hooks(hooks, slots[i], f"an output of {node.name}")
        if need is not None:
            plan.capture(node, slots, captured)
            if node not in need:
                continue
        if not anomaly and node.n_out == 1 and node.saved is not None:
            grads = node.op.backward(node, slots[0])  # the common case, without a call
            if type(grads) is not tuple:
                grads = (grads,)
        else:
            grads = _call_rule(node, slots)
        if not retain_graph and (node.saved or node.out is not None or node.ctx is not None):
            node.saved = None  # Node.release, inline (a node that saved nothing can run again)
            if node.out is not None:
                node.out = None
            if node.ctx is not None:
                node.ctx = None
        for e, g, shape in zip(node.edges, grads, node.in_shapes):
            if e is None or g is None:
                continue
            if g._array.shape != shape:
                g = sum_to(g, tuple(shape))
            if type(e) is tuple:
                m, i = e
                p = pending.get(m.seq)
                if p is None:
                    s = [None] * m.n_out
                    pending[m.seq] = (m, s)
                    push(heap, -m.seq)
                else:
                    s = p[1]
                s[i] = g if s[i] is None else s[i] + g
            else:  # a Function's rule may return a tensor the user holds: never add into it
                add_leaf(e, g, (g,) if node.op.user_rule else slots)
        del grads, slots


def run_backward(outputs: Sequence[Any], grad_outputs: Sequence[Any], *, retain_graph: bool,
                 create_graph: bool, inputs: Sequence[Any] | None = None,
                 store: bool | None = None) -> dict | None:
    """Propagate ``grad_outputs`` from ``outputs`` through the graph.

    Without ``inputs``, gradients accumulate into the ``.grad`` of leaves (``backward``).
    With ``inputs``, only the part of the graph that leads to them runs, and their
    gradients are returned keyed by ``id`` (``autograd.grad``), or with ``store``
    accumulated into their ``.grad`` (``backward(inputs=...)``).
    """
    store = inputs is None if store is None else store
    pending: dict[int, tuple] = {}  # seq -> (node, its output gradients)
    roots: list[Node] = []
    direct = []
    for t, g in zip(outputs, grad_outputs):
        if t._node is None:
            if not t.requires_grad:
                raise RuntimeError(
                    f"backward: tensor of shape {tuple(t.shape)} does not require grad and "
                    f"has no graph; create the inputs with requires_grad=True (or call "
                    f".requires_grad_()) before computing it")
            direct.append((t, g))
            continue
        n = t._node
        slots = pending[n.seq][1] if n.seq in pending else None
        if slots is None:
            slots = [None] * n.n_out
            pending[n.seq] = (n, slots)
            roots.append(n)
        slots[t._idx] = g if slots[t._idx] is None else slots[t._idx] + g
    plan = _Plan(roots, inputs)
    leaves = _Leaves(plan, create_graph, store)
    for t, g in direct:
        leaves.add(t, g, (g,))
    captured: dict[int, Any] = {}
    scope = outputs[0]._backend.on_device() if outputs else _NO_SCOPE
    cast, context.autocast = context.autocast, None  # rules run in their forward's dtypes
    try:
        with set_grad_enabled(create_graph), scope:  # the outputs' device made current (CuPy)
            _loop(roots, pending, plan, leaves, retain_graph, captured)
            leaves.finish(captured)
    finally:
        context.autocast = cast
    if not store:
        return captured
    for t in {id(t): t for t in inputs or () if t._node is not None}.values():
        g = None if t._retains else captured.get(id(t))  # retain_grad's hook stored it
        if g is not None:
            _store(t, g if create_graph else g.detach()._copy(), create_graph)
    return None


_NO_SCOPE = contextlib.nullcontext()
