"""``xad.compile``: record a function once, replay its array program afterwards.

A compiled function keeps a small cache of programs, keyed by what its first call depended
on: the structure of its arguments, each tensor argument's shape, dtype, backend,
``requires_grad``, whether it is a view and its strides, which arguments are the same
tensor or array, each Python argument's type and exact value, a host array argument's
contents (another object's identity), grad mode, autocast, the default backend and dtype,
and the count of hook registrations. Each program also checks, before it runs, that the
Python values its recording read (globals, closure cells, dict entries, attributes:
:mod:`.pyguards`) are the same, that the
tensors it reads from outside (parameters, buffers, optimiser state) still have the shapes,
dtypes, strides and ``requires_grad`` it saw and are not passed as arguments, that the modules it
called are in the same train/eval mode with no attribute assigned since, that the
optimisers it calls hold the same parameters, and that gradients it found absent are still
absent. A call no program fits records a new one (up
to ``cache_size`` programs per function, the least recently used dropped first, up to
``cache_size`` times; then it runs eagerly, with a warning). With ``cuda_graphs`` on CuPy,
a program's replays launch captured CUDA graphs (:mod:`.cuda_graph`); with ``fuse``, its
chains of elementwise operations run as fused kernels (:mod:`.fusion`); with ``check``,
every replay is checked against an eager run (:mod:`.check`).
"""

from __future__ import annotations

import functools
import gc
import os
import sys
import types
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .. import hooks as _hooks
from ..context import HOOKED, context
from ..grad_mode import no_grad
from ..graph import walk
from ..ops._apply import unary
from ..tensor import Tensor
from .check import RETRACE, check_call, trace
from .cuda_graph import CaptureFailed, GraphReplay, graph_backend
from .fusion import fuse as fuse_regions
from .fusion import launch as fused_launch
from .program import Program, ShapeChanged, Unsupported
from .pyguards import Reads, scalar_key, stale
from .recorder import ArgRef, Recorder, bases_of, recording

__all__ = ["compile", "CompiledFunction"]

_SCALARS = (int, float, bool, str, type(None))


_UNSET = object()  # a result not made yet


def _flatten(tree: Any, leaves: list) -> Any:
    """The leaves of nested tuples (named ones too)/lists/dicts in order, and a structure
    to rebuild them."""
    if type(tree) in (tuple, list) or isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return (type(tree), tuple(_flatten(x, leaves) for x in tree))
    if type(tree) is dict:
        return (dict, tuple((k, _flatten(v, leaves)) for k, v in tree.items()))
    leaves.append(tree)
    return None


def _unflatten(spec: Any, leaves: Any) -> Any:
    if spec is None:
        return next(leaves)
    kind, items = spec
    if kind is dict:
        return {k: _unflatten(s, leaves) for k, s in items}
    if hasattr(kind, "_fields"):  # a named tuple
        return kind(*(_unflatten(s, leaves) for s in items))
    return kind(_unflatten(s, leaves) for s in items)


def _leaf_key(x: Any) -> Any:
    """What a replay depends on in argument leaf ``x``: a tensor's shape, dtype, backend,
    ``requires_grad``, whether it is a view (and an expanded one: ``broadcast_to``,
    ``diagonal``, whose writes go to its base) and its strides (where its array has them:
    ``out=`` buffers are chosen for the recorded layout); a Python number's type and exact bits
    (``-0.0`` is not ``0.0``, a NaN's payload counts); a host (NumPy) array's contents."""
    if isinstance(x, Tensor):
        a = x._array
        return ("tensor", tuple(a.shape), a.dtype, x._backend, x.requires_grad,
                None if x._base is None else x._expanded, getattr(a, "strides", None))
    t = type(x)
    if t is complex or t in _SCALARS:
        return scalar_key(x)
    if hasattr(x, "__array_interface__") and hasattr(x, "tobytes"):  # a host array
        return ("host", t, x.shape, str(x.dtype), x.tobytes())
    if t is types.MethodType:  # made anew at each attribute access: its object and function
        return ("method", _Same(x.__self__), _Same(x.__func__))
    return ("object", _Same(x))


class _Same:
    """An argument keyed by identity (a function, a module): equal only to the same object,
    held by a weak reference where it can be (else strongly), so an object made later at
    the same address is never taken for it."""

    __slots__ = ("id", "ref")

    def __init__(self, x: Any) -> None:
        self.id = id(x)
        try:
            self.ref: Callable[[], Any] = weakref.ref(x)
        except TypeError:
            self.ref = lambda: x

    def __hash__(self) -> int:
        return self.id

    def __eq__(self, other: object) -> bool:
        return type(other) is _Same and other.id == self.id and self.ref() is not None \
            and self.ref() is other.ref()


def _aliases(tensors: Any) -> tuple:
    """Which earlier argument each tensor argument's array, the tensor itself, and the tensor
    it is a view of (its chain's first) is, as ``((array's first position, tensor's, root's),
    ...)``; () where none repeats and none is a view. ``f(x, y.T)`` and ``f(x, x.T)`` are
    other programs: where arrays are immutable (JAX) the view is another array, which a
    program recorded for ``y.T`` reads before the call changes ``x``."""
    if len(tensors) == 2:  # the common case, quickly
        a, b = tensors
        if a._array is not b._array and a._base is None and b._base is None:
            return ()
    elif all(t._base is None for t in tensors) and \
            len({id(t._array) for t in tensors}) == len(tensors):
        return ()
    arrays: dict[int, int] = {}
    objs: dict[int, int] = {}
    roots: dict[int, int] = {}
    out = tuple((arrays.setdefault(id(t._array), i), objs.setdefault(id(t), i),
                 roots.setdefault(id(_root(t)), i)) for i, t in enumerate(tensors))
    if len(roots) == len(tensors):
        return out
    return out + tuple(_chain(t) for t in tensors)  # views of one tensor: which views


def _root(t: Tensor) -> Tensor:
    while t._base is not None:
        t = t._base
    return t


def _chain(t: Tensor) -> tuple:
    """How ``t`` is a view of its root: per step its view function (name and parameters)
    and whether it is a ``.data``. ``f(x, x[0])`` and ``f(x, x[1])`` are other programs (on
    JAX a program made ``x[0]`` again after writing ``x``); a change through ``.data`` is
    not counted."""
    out = []
    while t._base is not None:
        fn = t._view_fn
        out.append((None if fn is None else (fn[0].name, repr(fn[1])), t._data_of))
        t = t._base
    return tuple(out)


def _escapes(t: Tensor, rec: Recorder) -> bool:
    """Whether ``t``'s graph reaches a tensor from outside the call (an argument or a
    parameter that requires grad): a replay, which returns plain tensors, would cut it."""
    if not t.requires_grad:
        return False
    if t._node is None:  # a leaf: a replay's result would neither require grad nor be it
        return True
    for n in walk([t._node]):
        for e in n.edges:
            if e is not None and type(e) is not tuple and id(e) not in rec.fresh:
                return True
    return False


def _overlap(tensors: Any) -> bool:
    """Whether two arguments share memory (``f(x, x[1:])``, ``f(a, a)``: views of one
    tensor, or one array): CUDA graphs read copies of the arguments, so a change of one
    would not reach the other."""
    if len(tensors) < 2:
        return False
    roots = {id(_root(t)) for t in tensors}
    return len(roots) < len(tensors) or len({id(t._array) for t in tensors}) < len(tensors)


def _identities(rec: Recorder, outs: list) -> list | None:
    """Per result, how a replay gives it eager mode's identity, so that changing it in
    place changes what eager mode's would (also where arrays are immutable, JAX): None (a
    new tensor), ``("is", src)`` (that very tensor) or ``("view", src, steps)`` (a new view
    of it, remade by ``steps``: ``(view_fn, data_of)`` from ``src`` down, a view of a view
    included), ``src`` being ``("arg", i)``, ``("out", k)`` (another result, or a base
    :func:`_shared_bases` added), ``("live", weakref)`` (a tensor from before the call) or
    ``("grad", holder)`` (the ``.grad`` the call gave a leaf: eager mode returned that very
    tensor); None where all are new."""
    def source(t: Tensor, j: int) -> tuple | None:
        if id(t) in rec.arg_of:
            return ("arg", rec.arg_of[id(t)])
        k = next((k for k in range(j) if outs[k] is t), None)
        if k is not None:
            return ("out", k)
        if id(t) in rec.outside:
            return ("live", weakref.ref(t))
        return next((("grad", i.holder) for i in rec.instrs if i.kind == "grad" and i.refs
                     and getattr(rec._tensor(i.holder), "_grad", None) is t), None)

    same: list = []
    for j, o in enumerate(outs):
        src = source(o, j) if isinstance(o, Tensor) else None
        steps: list = []
        t, base = o, None
        while src is None and base is None and isinstance(t, Tensor) and t._base is not None:
            steps.append((t._view_fn, t._data_of))
            t = t._base
            base = source(t, len(outs))  # any result: the base may be returned after it
        same.append(("is", src) if src is not None else None if base is None else
                    ("view", base, tuple(reversed(steps))))
    return same if any(h is not None for h in same) else None


def _own_counter(same: list | None, k: int) -> bool:
    """Whether result ``k`` of a replay counts versions from 0 as it is made: a new tensor,
    or a view through a ``.data`` (which starts a counter of its own)."""
    how = None if same is None else same[k]
    return how is None or how[0] == "view" and any(data_of for _, data_of in how[2])


def _shared_bases(rec: Recorder, outs: list) -> list:
    """The tensors made in the call that two results are views of and that are not
    returned (``y = x * 2; return y[0], y.T``): returned too, unseen by the caller, so a
    replay remakes both results as views of one tensor, which share memory and a version
    counter as eager mode's did (on JAX a write through one reaches the other). Also the
    base of one result that is an expanded view or a diagonal, whose array may be
    read-only: eager mode writes through it into the base's positions."""
    roots: dict[int, list] = {}
    for o in outs:
        t = o
        while isinstance(t, Tensor) and t._base is not None and id(t) not in rec.arg_of \
                and id(t) not in rec.outside and all(r is not t for r in outs if r is not o):
            t = t._base
        if t is not o and isinstance(t, Tensor) and id(t) not in rec.arg_of \
                and id(t) not in rec.outside and all(r is not t for r in outs):
            roots.setdefault(id(t), [t, set()])[1].add(id(o))
    return [t for t, users in roots.values() if len(users) > 1 or any(
        o._expanded for o in outs if id(o) in users)]


def _grad_of(holder: Any, tensors: Any) -> Tensor | None:
    """The ``.grad`` the replay gave the leaf ``holder`` names (an argument position or a
    weak reference)."""
    leaf = tensors[holder.index] if type(holder) is ArgRef else holder()
    return None if leaf is None else leaf._grad


def _view_of(t: Tensor, steps: tuple) -> Tensor:
    """Eager mode's view of ``t`` made again, step by step (``view_fn``: ``(op, params)``;
    None: ``detach()``, or ``.data`` where ``data_of``): it shares ``t``'s memory and
    version, as eager mode's did (a replay's own array may be a copy: CUDA graphs copy
    results out)."""
    for view_fn, data_of in steps:
        if view_fn is None:
            t = t.data if data_of else t.detach()
        else:
            with no_grad():
                t = unary(view_fn[0], t, **view_fn[1])
    return t


def _changed(layout: tuple, tree: Any) -> bool:
    """Whether the call changed the containers of its arguments (``xs.append(y)``,
    ``d["out"] = y``): ``layout`` is their structure and leaves before it."""
    leaves: list = []
    return _flatten(tree, leaves) != layout[0] or any(
        a is not b for a, b in zip(leaves, layout[1]))


def _kept_constants(rec: Recorder) -> bool:
    """Whether a constant the call made (``zeros(...)`` stored as a cache, a GradScaler's
    scale) outlives it: then it is state a later call reads and may change, so the call is
    recorded again (where that tensor is read as a tensor from before the call). Drops the
    recorder's references to the other tensors the call made."""
    kept = [t for i, t in rec.fresh.items() if i in rec.consts]
    rec.fresh.clear()
    return any(sys.getrefcount(t) > 3 for t in kept)  # the list, the loop, the argument


def _kept_results(rec: Recorder, outs: list) -> bool:
    """Whether an operation's result outlives the call other than as a result, a ``.grad``
    or what those are views of (``cache["s"] = x * 0 + 1`` made in a first call): state,
    as :func:`_kept_constants`'s, so the call is recorded again."""
    if not rec.results:
        return False
    held = [a for i in rec.instrs if i.kind in ("host", "draw")  # the recording's own
            for a in (*i.params["args"], *i.params["kwargs"].values())]
    gone = {id(t) for t in _with_bases([o for o in (*outs, *held) if isinstance(o, Tensor)]
                                       + rec.grads)}
    rec.grads.clear()
    if all(r() is None or id(r()) in gone for r in rec.results):
        return False
    gc.collect()  # a reference cycle of the call's own (freed now) is not state
    return any(r() is not None and id(r()) not in gone for r in rec.results)


def _called(rec: Recorder, m: Any) -> bool:
    """Whether ``m`` is a module the recorded call called (or one below such a module)."""
    seen = rec.modules.get(id(m))
    return seen is not None and seen[0]() is m


def _with_bases(tensors: list) -> list:
    """``tensors`` and the tensors each is a view of (which it keeps alive)."""
    out = []
    for t in tensors:
        while t is not None:
            out.append(t)
            t = t._base
    return out


class _Entry:
    """One recorded program, or the reason its guards run eagerly."""

    def __init__(self, program: Program | None, reason: str | None, spec: Any = None,
                 backends: list | None = None, scope: Any = None,
                 graphs: GraphReplay | None = None) -> None:
        self.program, self.reason, self.spec = program, reason, spec
        self.backends, self.scope, self.graphs = backends, scope, graphs
        self.trace: Any = None  # the recording's instructions, kept in checking mode
        self.py: Any = ()  # guards on the Python values it read (pyguards.Reads)
        self.before: Any = ()  # provisional: what the next recording reads as it starts
        self.same: list | None = None  # per result, its identity (see _identities)
        self.versions: list | None = None  # per new result, the changes eager mode counted

    def mismatch(self, tensors: Any) -> str | None:
        """Why this program does not fit the current state (None: it fits)."""
        p = self.program
        assert p is not None  # the caller keeps entries without a program from here
        if self.py and (what := stale(self.py)) is not None:
            return f"a Python value it read changed: {what}"
        p.args = tensors
        args = {id(t._array) for t in tensors} if p.guards and tensors else ()
        bases = {i for t in tensors for i in bases_of(t)} if args else ()
        for ref, (shape, dtype, requires_grad, b, strides) in p.guards:
            t = ref()
            if t is None:
                return "a tensor it read no longer exists"
            a = t._array
            if a.shape != shape or a.dtype != dtype or t.requires_grad != requires_grad \
                    or t._backend is not b or getattr(a, "strides", None) != strides:
                return f"a tensor it read changed (shape {shape} -> {tuple(a.shape)}, or " \
                       f"its dtype, layout or requires_grad)"
            if id(a) in args or id(t) in bases:
                return "a tensor it reads from outside is also passed as an argument (or a view)"
        for ref, was_none in p.grad_guards:
            t = ref()
            if t is None or (t._grad is None) != was_none:
                return "a parameter's .grad was " + ("set" if was_none else "cleared")
        for read, value in p.value_guards:
            if read() != value:
                return "a value it holds as a constant changed (an optimiser's betas, eps, ...)"
        for ref, training, changes in p.modules:
            m = ref()
            if m is None or m.training != training:
                return "a module switched between train() and eval()"
            if m._changes != changes:
                return f"an attribute of a {type(m).__name__} was assigned"
        return None

    def replay(self, tensors: Any, warn: Callable[[str], None]) -> Any:
        """The program's outputs for ``tensors`` (or RETRACE); only on an entry with one."""
        p, backends = self.program, self.backends
        assert p is not None and backends is not None  # recorded together, in _record
        arrays = [t._array for t in tensors]
        p.args = tensors
        try:
            due = [(t, t._version + n) for read, n in p.bumps if (t := read()) is not None]
            if self.scope is None:
                outs = self._run(arrays, warn)
            else:
                with self.scope:
                    outs = self._run(arrays, warn)
        except ShapeChanged:
            return RETRACE
        finally:
            p.args = ()
        for t, version in due:  # the in-place changes eager mode counts (views' included)
            t._catch_up(version)
        if self.same is None:
            made = [o if b is None else Tensor._make(o, b) for o, b in zip(outs, backends)]
        else:
            made = self._made(outs, tensors)
        if self.versions is not None:  # (y.detach().mul_(2) made inside: y's version is 1)
            for t, version in zip(made, self.versions):
                if version:
                    t._catch_up(version)
        return _unflatten(self.spec, iter(made))

    def _made(self, outs: tuple, tensors: Any) -> list:
        """The results as tensors with eager mode's identities (see :func:`_identities`),
        each made after the result it is a view of."""
        assert self.same is not None and self.backends is not None  # replay checked both
        backends, same = self.backends, self.same
        res: list = [_UNSET] * len(outs)

        def made(k: int) -> Any:
            if res[k] is _UNSET:
                o, b, how = outs[k], backends[k], same[k]
                src = None if how is None else how[1]
                t = None if src is None else tensors[src[1]] if src[0] == "arg" else \
                    made(src[1]) if src[0] == "out" else _grad_of(src[1], tensors) \
                    if src[0] == "grad" else src[1]()
                res[k] = (o if b is None else Tensor._make(o, b)) if t is None else \
                    t if how[0] == "is" else _view_of(t, how[2])
            return res[k]
        return [made(k) for k in range(len(outs))]

    def _run(self, arrays: list, warn: Callable[[str], None]) -> tuple:
        assert self.program is not None  # replay, the only caller, checked it
        if self.graphs is not None and not _overlap(self.program.args):  # graphs copy each
            # argument (a plain replay calls the kernels on the arguments' own memory)
            try:
                return self.graphs.run(arrays)
            except CaptureFailed as e:
                self.graphs = None
                warn(f"replays without CUDA graphs: capturing its kernels failed ({e})")
        return self.program.run(arrays)


class CompiledFunction:
    """A function whose first call (per guards) is recorded and later calls replayed.

    Example:
        >>> import xad
        >>> w = xad.ones(3, requires_grad=True)
        >>> opt = xad.optim.SGD([w], lr=0.1)
        >>> @xad.compile
        ... def step(x):
        ...     opt.zero_grad()
        ...     loss = ((w * x).sum() - 1.0) ** 2
        ...     loss.backward()
        ...     opt.step()
        ...     return loss.detach()
        >>> [round(step(xad.ones(3)).item(), 4) for _ in range(3)]
        [4.0, 0.64, 0.1024]
        >>> step.program().splitlines()[:2]
        ['Optimizer.zero_grad()  # Python, run again', 'v2 = multiply(v1, v0)']
    """

    def __init__(self, fn: Callable, cache_size: int = 8,
                 cuda_graphs: bool | None = None, fuse: bool | None = None,
                 check: bool | None = None) -> None:
        self.fn = fn
        self.cache_size = cache_size
        self.cuda_graphs = _flag(cuda_graphs, "XAD_CUDA_GRAPHS")
        self.fuse = _flag(fuse, "XAD_FUSE")
        self.check = _flag(check, "XAD_COMPILE_CHECK")
        self._cache: OrderedDict[Any, list[_Entry]] = OrderedDict()  # least recent first
        self._evicted = 0
        self._last: _Entry | None = None
        self._warned: set[str] = set()
        functools.update_wrapper(self, fn, updated=())

    def __getattr__(self, name: str) -> Any:
        """What the compiled object has (a module's ``parameters()``, ``state_dict()``,
        ``train()``, ``eval()``), as ``torch.compile``'s wrapper of a module gives."""
        fn = self.__dict__.get("fn")
        if fn is None or name.startswith("__"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(fn, name)

    @property
    def recordings(self) -> int:
        """How many programs have been recorded (a count of compilations)."""
        return sum(len(v) for v in self._cache.values())

    @property
    def graphs(self) -> int:
        """How many CUDA graphs the last program launches per call (0: none captured)."""
        e = self._last
        return 0 if e is None or e.graphs is None else e.graphs.graphs

    @property
    def fused(self) -> int:
        """How many fused kernels the last program calls (0: none; only on a backend that
        fuses, with ``fuse=True``)."""
        e = self._last
        return 0 if e is None or e.program is None else sum(
            1 for i in e.program.instrs if i.fn is fused_launch)

    def program(self) -> str:
        """The last program run or recorded, one line per array call."""
        e = self._last
        if e is None:
            return "(not called yet)"
        return e.program.text() if e.program is not None else f"(eager: {e.reason})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if context.mode & HOOKED:  # inside a recording, anomaly detection, vmap or jvp
            return self.fn(*args, **kwargs)  # traced through
        if not kwargs and all(type(a) is Tensor for a in args):  # the common case, fast
            leaves: Any = args
            tensors: Any = args
            spec: Any = len(args)
            sig: Any = tuple((a._array.shape, a._array.dtype, a._backend, a.requires_grad,
                              None if a._base is None else a._expanded,
                              getattr(a._array, "strides", None)) for a in args)
        else:
            leaves = []
            spec = _flatten((args, kwargs), leaves)
            sig = tuple(_leaf_key(x) for x in leaves)
            tensors = [x for x in leaves if isinstance(x, Tensor)]
        key = (spec, sig, _aliases(tensors) if len(tensors) > 1 else (),
               context.grad_enabled, context.autocast, context.backend, context.dtype,
               _hooks.changes[0])
        entries = self._cache.get(key)
        why = "first call"
        before: Any = ()
        if entries is not None:
            self._cache.move_to_end(key)
            for e in entries:
                if e.program is None and e.reason is None:  # provisional: record again
                    entries.remove(e)
                    before = e.before
                    break
                if e.program is None:
                    self._last = e
                    return self.fn(*args, **kwargs)
                mismatch = e.mismatch(tensors)
                if mismatch is not None:
                    why = mismatch
                else:
                    self._last = e
                    if self.check:
                        return check_call(self, e, tensors, args, kwargs, _flatten)
                    out = e.replay(tensors, self._warn)
                    if out is not RETRACE:
                        return out
                    why = "a data-dependent shape (nonzero, unique, a boolean mask) changed"
                e.program.args = ()
        if not self._room(why):
            return self.fn(*args, **kwargs)
        again = entries is not None and not entries
        if entries is None:
            entries = self._cache[key] = []
        try:
            return self._record(entries, args, kwargs, tensors, again, before)
        except BaseException:
            if not entries and self._cache.get(key) is entries:  # nothing recorded: the
                del self._cache[key]  # next call is a first call, not a second recording
            raise

    def _room(self, why: str) -> bool:
        """Whether a new recording may be kept: at ``cache_size`` programs the least
        recently used key's are dropped, up to ``cache_size`` times; then calls that no
        program fits run eagerly (with one warning)."""
        while self.recordings >= self.cache_size:
            if self._evicted >= self.cache_size:
                self._warn(f"recorded {self.cache_size + self._evicted} times (twice "
                           f"cache_size); calls no program fits now run eagerly (last "
                           f"reason: {why})")
                return False
            self._cache.popitem(last=False)
            self._evicted += 1
        return True

    def _record(self, entries: list[_Entry], args: tuple, kwargs: dict,
                tensors: list[Tensor], again: bool = False, before: Any = ()) -> Any:
        rec = Recorder(list(tensors), graphs=self.cuda_graphs)
        roots: list = []
        layout = _flatten((args, kwargs), roots), list(roots)
        reads = Reads(self.fn, roots, lambda: rec.paused, lambda: rec.hosts > 0,
                      functools.partial(_called, rec), before)
        prev = recording(rec)
        try:
            with reads:
                result = self.fn(*args, **kwargs)
        finally:
            recording(prev)
        for check in rec.ends:
            why = check()
            if why is not None:
                rec.unsupported(why)
        outs: list = []
        spec = _flatten(result, outs)
        entry = self._entry(rec, spec, outs)
        if self.check and entry.program is not None:
            entry.trace = trace(rec, [o if isinstance(o, Tensor) else None for o in outs])
        moved = reads.changed() if entry.program is not None else None
        if entry.program is not None and _changed(layout, (args, kwargs)):
            entry = _Entry(None, "it changes the lists or dicts it was passed (an item "
                                 "added, removed or replaced), which a replay would not; "
                                 "return the new values instead")
        elif reads.failed is not None and entry.program is not None:
            entry = _Entry(None, f"the Python values it reads could not be guarded "
                                 f"({reads.failed})")
        elif moved is not None and again:
            entry = _Entry(None, f"it changes a Python value it reads ({moved}), which a "
                                 f"replay would not; pass it as an argument")
        elif entry.program is not None and (moved is not None or not again and (
                _kept_constants(rec) or _kept_results(rec, outs) or rec.again or reads.late)):
            entry = _Entry(None, None)  # provisional: the next call records again
            entry.before = reads.before()
        entry.py = tuple(reads.guards)
        entries.append(entry)
        self._last = entry
        if entry.reason is not None:
            self._warn(f"runs eagerly for these inputs: {entry.reason}")
        return result

    def _entry(self, rec: Recorder, spec: Any, outs: list) -> _Entry:
        problem = rec.problem
        for o in outs:
            if isinstance(o, Tensor) and _escapes(o, rec):
                problem = problem or ("its result requires grad (a graph that leaves the "
                                      "compiled function); compile the whole training step, "
                                      "or return detached tensors")
            elif not isinstance(o, Tensor) and o is not None:
                problem = problem or (f"it returns a {type(o).__name__}, not tensors (a "
                                      f"replay could not recompute it)")
        for i, (t, node) in enumerate(zip(rec.args, rec.nodes)):
            if t._node is not node:
                problem = problem or (f"an in-place change with an operand that requires grad "
                                      f"left argument {i} in a graph (a replay would cut it); "
                                      f"change it under no_grad or use the result")
        if problem is not None:
            return _Entry(None, problem)
        outs = outs + _shared_bases(rec, outs)  # returned unseen, to make views of
        try:
            program = Program(rec, outs, fuse_regions if self.fuse else None,
                              library_calls=bool(self.cuda_graphs))
        except Unsupported as e:
            return _Entry(None, str(e))
        backends = [o._backend if isinstance(o, Tensor) else None for o in outs]
        scopes = [i.b.scope for i in program.instrs if i.b is not None and i.b.scope]
        b = graph_backend(program) if self.cuda_graphs else None
        entry = _Entry(program, None, spec, backends, scopes[0] if scopes else None,
                       None if b is None else GraphReplay(program, b))
        entry.same = _identities(rec, outs)
        versions = [o._version if isinstance(o, Tensor) and _own_counter(entry.same, k)
                    else 0 for k, o in enumerate(outs)]
        entry.versions = versions if any(versions) else None
        return entry

    def _warn(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            name = getattr(self.fn, "__qualname__", repr(self.fn))
            warnings.warn(f"xad.compile: {name} {message}", RuntimeWarning, stacklevel=3)


def _flag(flag: bool | None, name: str) -> bool:
    """``cuda_graphs``/``fuse``: the argument, else the environment variable ``name`` set to
    1; set to 0, it turns the feature off everywhere."""
    env = os.environ.get(name, "")
    if env == "0":
        return False
    return env == "1" if flag is None else bool(flag)


def compile(fn: Callable | None = None, *, cache_size: int = 8,
            cuda_graphs: bool | None = None, fuse: bool | None = None,
            check: bool | None = None) -> Any:
    """Compile ``fn`` (a function, a module, or a whole training step): its first call runs
    eagerly and records the array program; later calls with the same guards replay it
    without tensors, graph nodes or rule lookups. Usable as ``@xad.compile``.

    ``cuda_graphs=True``: on CuPy, replays launch the program's kernels as captured CUDA
    graphs, split at its host calls, random draws and matrix products (off by default, as PyTorch's
    ``mode="reduce-overhead"``; ``XAD_CUDA_GRAPHS=1`` turns it on by default, ``=0`` off
    everywhere; other backends ignore it). docs/COMPILE.md says what changes.

    ``fuse=True``: on CuPy, each run of consecutive elementwise operations (operators,
    ``tanh``, ``exp``, ...) of one shape runs as one ``cupy.fuse`` kernel (off by default;
    ``XAD_FUSE=1``/``=0`` as above; other backends ignore it).

    ``check=True`` (or ``XAD_COMPILE_CHECK=1``): every replay also runs the function
    eagerly (the eager call is the one whose effects and results count) and raises
    ``RuntimeError`` on the first difference, naming the instruction (for debugging: each
    call costs an eager call and a recording).

    Example:
        >>> import xad
        >>> f = xad.compile(lambda x: (x * 2 + 1).exp())
        >>> f(xad.zeros(2)).tolist(), round(f(xad.ones(2)).tolist()[0], 3)
        ([2.7182819843292236, 2.7182819843292236], 20.086)
    """
    if fn is None:
        return lambda f: CompiledFunction(f, cache_size, cuda_graphs, fuse, check)
    return CompiledFunction(fn, cache_size, cuda_graphs, fuse, check)
