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

import threading
import weakref
from collections.abc import Callable
from typing import Any

from .. import autograd as _ag
from ..backend import get_backend
from ..context import context
from ..graph import Node, producer, walk
from ..tensor import Tensor
from ..tracing import host_call

_depth = threading.local()  # how many re-runs are in progress in this thread

__all__ = ["checkpoint", "recomputing"]


def recomputing() -> bool:
    """Whether a checkpointed function is being re-run by backward now (in this thread), so
    a module hook that changes the graph (DataParallel's) can build the first run's again.

    Example:
        >>> import xad
        >>> xad.utils.checkpoint.recomputing()
        False
    """
    return getattr(_depth, "n", 0) > 0


def _outputs(out: Any) -> list[Tensor]:
    items = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in items if isinstance(o, Tensor)]


def _region(outs: list[Tensor], start: int) -> list[Node]:
    """The nodes behind ``outs`` made after ``start``: those ``f`` recorded.

    The walk stops at older nodes (the arguments' history, closed-over tensors), so its
    cost is the size of ``f``'s own graph.
    """
    roots = [o._node for o in outs if o._node is not None and o._node.seq > start]
    return [n for n in walk(roots, stop=lambda n: n.seq <= start) if n.seq > start]


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
    refill = _Refill(f, args, kwargs)
    refill.capture()
    start = refill.start = _ag.sequence_mark()
    out = f(*args, **kwargs)
    outs = _outputs(out)
    inner = _region(outs, start)
    if not inner:
        return out
    for n in inner:
        n.release()
    # The hook lives on the outputs' nodes, so it refers to them weakly: a strong reference
    # would be a cycle (node -> hook -> node) that only the cyclic collector frees.
    refill.old = [(weakref.ref(o._node), o._idx) if o._node is not None else None for o in outs]
    for n in dict.fromkeys(o._node for o in outs if o._node is not None and o._node.seq > start):
        for i in range(n.n_out):
            n.register_hook(i, refill)
    return out


class _Refill:
    """The hook that re-runs the checkpointed function once, when backward first reaches
    its outputs, and hands the recomputed saved values to the stripped nodes.

    Under ``xad.compile`` the re-run's operations are recorded like any others; the random
    state's capture, restore and resume are host calls, so a replay draws the same masks."""

    replay_safe = True  # its Python work (pairing nodes) is not needed by a replay

    def __init__(self, f: Callable, args: tuple, kwargs: dict) -> None:
        self.f, self.args, self.kwargs = f, args, kwargs
        self.old: list = []
        self.start, self.done = 0, False
        self.states: list = []
        self.now: list = []
        self.autocast = context.autocast  # the re-run computes in the first run's dtypes
        self.versions = [(k, a, a._version) for k, a in _tensor_args(args, kwargs)]

    @host_call
    def capture(self) -> None:
        """Keep the random state ``f`` starts from."""
        self.states = _rng_states(self.args)

    @host_call
    def restore(self) -> None:
        """Set the random state ``f`` started from, keeping the current one."""
        self.now = [(b, b.get_rng_state()) for b, _ in self.states]
        for b, s in self.states:
            b.set_rng_state(s)

    @host_call
    def resume(self) -> None:
        for b, s in self.now:
            b.set_rng_state(s)

    def __call__(self, _: Tensor) -> None:
        if self.done:
            return
        self.done = True
        self.check_versions()
        cast, context.autocast = context.autocast, self.autocast
        self.restore()
        _depth.n = getattr(_depth, "n", 0) + 1
        try:
            with _ag.enable_grad():
                new = _outputs(self.f(*self.args, **self.kwargs))
        finally:
            _depth.n -= 1
            context.autocast = cast
            self.resume()
        if len(self.old) != len(new):
            raise RuntimeError(_differs(f"{len(self.old)} outputs first, {len(new)} now"))
        olds = [None if o is None else o[0]() for o in self.old]
        _pair([(a, b._node) for a, b in zip(olds, new) if a is not None and a.seq > self.start],
              self.start)


    def check_versions(self) -> None:
        """The re-run would read changed arguments: a silent wrong gradient (PyTorch raises)."""
        for i, a, v in self.versions:
            if a._version != v:
                raise RuntimeError(
                    f"checkpoint: argument {i} (shape {tuple(a.shape)}) was changed by an "
                    f"in-place operation during or after the checkpointed call (now at "
                    f"version {a._version}, called at version {v}); backward re-runs the "
                    f"function on its arguments, so change a copy (x.clone()) instead")


def _tensor_args(args: tuple, kwargs: dict) -> list[tuple[Any, Tensor]]:
    """The tensor arguments, by position or keyword."""
    named = list(enumerate(args)) + list(kwargs.items())
    return [(k, a) for k, a in named if isinstance(a, Tensor)]


def _pair(stack: list[tuple[Node, Node | None]], start: int) -> None:
    """Give each stripped node (made after ``start``) the saved values of its twin in the
    recomputed graph."""
    done: set = set()
    while stack:
        a, b = stack.pop()
        if a in done:
            continue
        done.add(a)
        if b is None or a.name != b.name or len(a.edges) != len(b.edges):
            raise RuntimeError(_differs(f"{a.name} first, "
                                        f"{b.name if b is not None else 'no operation'} now"))
        a.adopt_saved(b)
        for ea, eb in zip(a.edges, b.edges):
            pa, pb = producer(ea), producer(eb)
            if pa is not None and pa.seq > start and pa not in done:
                if pb is None:
                    raise RuntimeError(_differs(f"an input of {a.name} changed"))
                stack.append((pa, pb))


def _differs(detail: str) -> str:
    return (f"checkpoint: the function built a different graph when it was re-run during "
            f"backward ({detail}); a checkpointed function must run the same operations "
            f"every time it is called with the same arguments and random state")
