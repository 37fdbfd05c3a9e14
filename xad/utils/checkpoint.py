"""Gradient checkpointing: drop a function's saved arrays, recompute them during backward.

``checkpoint(f, *args)`` records ``f`` as usual, so every edge of its graph (to the
arguments, to closed-over weights, to any outer tensor) is exactly what it would be without
checkpointing, and then drops what the nodes made inside ``f`` saved for backward. A hook
on ``f``'s outputs runs when backward first reaches them: it re-runs ``f`` on the same
arguments, with the random state ``f`` started from, and hands the recomputed values to the
stripped nodes before the engine runs their rules. This is the approach of PyTorch's
non-reentrant checkpoint: gradients reach closed-over parameters, ``autograd.grad`` and
``backward`` both work, and gradients equal the un-checkpointed ones exactly (dropout draws
the same mask). With ``create_graph`` the rules read the recomputed graph's tensors, so
second derivatives go through it too.

The nodes made inside ``f`` are told apart from older ones by their creation number
(``Node.seq``), so the walks cost the size of ``f``'s own graph, not of what came before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import autograd as _ag
from ..backend import get_backend
from ..tensor import Tensor

__all__ = ["checkpoint"]


def _outputs(out: Any) -> list[Tensor]:
    items = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in items if isinstance(o, Tensor)]


def _region(outs: list[Tensor], start: int) -> list[_ag.Node]:
    """The nodes behind ``outs`` made after ``start``: those ``f`` recorded.

    The walk stops at older nodes (the arguments' history, closed-over tensors), so its
    cost is the size of ``f``'s own graph.
    """
    inner = {o._node for o in outs if o._node is not None and o._node.seq > start}
    stack = list(inner)
    while stack:
        for e in stack.pop().edges:
            if type(e) is tuple and e[0].seq > start and e[0] not in inner:
                inner.add(e[0])
                stack.append(e[0])
    return list(inner)


def _rng_states(args: tuple) -> list[tuple[Any, Any]]:
    backends = [get_backend()]
    for a in args:
        if isinstance(a, Tensor) and all(a._backend is not b for b in backends):
            backends.append(a._backend)
    return [(b, b.get_rng_state()) for b in backends]


def checkpoint(f: Callable, *args: Any, **kwargs: Any) -> Any:
    """``f(*args, **kwargs)``, keeping no intermediate arrays: they are recomputed in backward.

    ``f`` returns a tensor or a tuple/list of tensors and must build the same graph when
    re-run (the random state is restored for the re-run). Arguments that are not tensors
    are passed through. Costs one extra forward of ``f`` per backward.

    Example:
        >>> import xad
        >>> w = xad.tensor([[0.5, -1.0], [2.0, 0.1]], requires_grad=True)
        >>> x = xad.tensor([[1.0, 2.0]])
        >>> y = xad.checkpoint(lambda h: xad.tanh(h @ w), x).sum()
        >>> y.backward(); w.grad.shape
        (2, 2)
    """
    if not callable(f):
        raise TypeError(f"checkpoint: expected a function, got {type(f).__name__}")
    if not _ag.is_grad_enabled():
        return f(*args, **kwargs)
    states = _rng_states(args)
    start = _ag.sequence_mark()
    out = f(*args, **kwargs)
    outs = _outputs(out)
    inner = _region(outs, start)
    if not inner:
        return out
    for n in inner:
        n.saved, n.out, n.ctx = None, None, None
    state = {"done": False}

    def refill(_: Tensor) -> None:
        if state["done"]:
            return
        state["done"] = True
        now = [(b, b.get_rng_state()) for b, _ in states]
        try:
            for b, s in states:
                b.set_rng_state(s)
            with _ag.enable_grad():
                re_outs = _outputs(f(*args, **kwargs))
        finally:
            for b, s in now:
                b.set_rng_state(s)
        _pair(outs, re_outs, start)

    hooked = set()
    for o in outs:
        n = o._node
        if n is not None and n.seq > start and n not in hooked:
            hooked.add(n)
            for i in range(n.n_out):
                n.register_hook(i, refill)
    return out


def _pair(old_outs: list[Tensor], new_outs: list[Tensor], start: int) -> None:
    """Give each stripped node (made after ``start``) the saved values of its twin in the
    recomputed graph."""
    if len(old_outs) != len(new_outs):
        raise RuntimeError(_differs(f"{len(old_outs)} outputs first, {len(new_outs)} now"))
    stack = [(a._node, b._node) for a, b in zip(old_outs, new_outs)
             if a._node is not None and a._node.seq > start]
    done: set = set()
    while stack:
        a, b = stack.pop()
        if a in done:
            continue
        done.add(a)
        if b is None or a.name != b.name or len(a.edges) != len(b.edges):
            raise RuntimeError(_differs(f"{a.name} first, "
                                        f"{b.name if b is not None else 'no operation'} now"))
        a.saved, a.versions, a.out, a.ctx = b.saved, b.versions, b.out, b.ctx
        for ea, eb in zip(a.edges, b.edges):
            if type(ea) is tuple and ea[0].seq > start and ea[0] not in done:
                if type(eb) is not tuple:
                    raise RuntimeError(_differs(f"an input of {a.name} changed"))
                stack.append((ea[0], eb[0]))


def _differs(detail: str) -> str:
    return (f"checkpoint: the function built a different graph when it was re-run during "
            f"backward ({detail}); a checkpointed function must run the same operations "
            f"every time it is called with the same arguments and random state")
