"""``xad.compile``: record a function once, replay its array program afterwards.

A compiled function keeps a small cache of programs, keyed by what its first call depended
on: the structure of its arguments, each tensor argument's shape, dtype, backend,
``requires_grad`` and whether it is a view, which arguments are the same tensor or array,
each Python argument's type and exact value, a host array argument's contents, grad mode,
autocast, the default backend and dtype, and the count of hook registrations. Each program
also checks, before it runs, that the tensors it reads from outside (parameters, buffers,
optimiser state) still have the shapes, dtypes and ``requires_grad`` it saw and are not
passed as arguments, that the modules it called are in the same train/eval mode, and that
gradients it found absent are still absent. A call no program fits records a new one (up
to ``cache_size`` programs per function, the least recently used dropped first, up to
``cache_size`` times; then it runs eagerly, with a warning). With ``cuda_graphs`` on CuPy,
a program's replays launch captured CUDA graphs (:mod:`.cuda_graph`); with ``fuse``, its
chains of elementwise operations run as fused kernels (:mod:`.fusion`); with ``check``,
every replay is checked against an eager run (:mod:`.check`).
"""

from __future__ import annotations

import functools
import os
import struct
import sys
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .. import grad_mode as _grad_mode
from .. import hooks as _hooks
from ..context import context
from ..graph import walk
from ..ops._apply import unary
from ..tensor import Tensor
from .check import RETRACE, check_call, trace
from .cuda_graph import CaptureFailed, GraphReplay, graph_backend
from .fusion import fuse as fuse_regions
from .fusion import launch as fused_launch
from .program import Program, ShapeChanged, Unsupported
from .recorder import ArgRef, Recorder, recording

__all__ = ["compile", "CompiledFunction"]

_SCALARS = (int, float, bool, str, type(None))


def _flatten(tree: Any, leaves: list) -> Any:
    """The leaves of nested tuples/lists/dicts in order, and a structure to rebuild them."""
    if type(tree) in (tuple, list):
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
    return kind(_unflatten(s, leaves) for s in items)


def _leaf_key(x: Any) -> Any:
    """What a replay depends on in argument leaf ``x``: a tensor's shape, dtype, backend,
    ``requires_grad`` and whether it is a view; a Python number's type and exact bits
    (``-0.0`` is not ``0.0``, a NaN's payload counts); a host (NumPy) array's contents."""
    if isinstance(x, Tensor):
        a = x._array
        return ("tensor", tuple(a.shape), a.dtype, x._backend, x.requires_grad,
                x._base is None)
    t = type(x)
    if t is float:
        return (float, struct.pack("<d", x))
    if t is complex:
        return (complex, struct.pack("<dd", x.real, x.imag))
    if t in _SCALARS:
        return (t, x)
    if hasattr(x, "__array_interface__") and hasattr(x, "tobytes"):  # a host array
        return ("host", t, x.shape, str(x.dtype), x.tobytes())
    return ("object", id(x))


def _aliases(tensors: Any) -> tuple:
    """Which earlier argument each tensor argument's array (and the tensor itself) is, as
    ``((array's first position, tensor's first position), ...)``; () where none repeats."""
    if len(tensors) == 2:  # the common case, quickly
        if tensors[0]._array is not tensors[1]._array:
            return ()
    elif len({id(t._array) for t in tensors}) == len(tensors):
        return ()
    arrays: dict[int, int] = {}
    objs: dict[int, int] = {}
    return tuple((arrays.setdefault(id(t._array), i), objs.setdefault(id(t), i))
                 for i, t in enumerate(tensors))


def _view_chain(t: Tensor, rec: Recorder) -> tuple | None:
    """For ``t``, a view (or ``detach()``/``.data``) of an argument or of a tensor from
    before the call: how a replay finds that tensor and the steps that view it (a replay
    remakes the view, so that it shares its storage as eager mode's does); else None."""
    steps: list = []
    root = t
    while root._base is not None:
        fn = root._view_fn
        steps.append(fn if fn is not None else "data" if root._data_of else "detach")
        root = root._base
    if not steps:
        return None
    i = rec.arg_of.get(id(root))
    if i is None and id(root) not in rec.outside:
        return None
    return (ArgRef(i) if i is not None else weakref.ref(root)), tuple(reversed(steps))


def _remade(t: Tensor, root: Tensor | None, steps: tuple) -> Tensor:
    """The view ``steps`` make of ``root`` now (``t``, the replay's array, when gone)."""
    if root is None:
        return t
    with _grad_mode.no_grad():
        for s in steps:
            root = root.detach() if s == "detach" else root.data if s == "data" else \
                unary(s[0], root, **s[1])
    return root


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


def _kept_constants(rec: Recorder) -> bool:
    """Whether a constant the call made (``zeros(...)`` stored as a cache, a GradScaler's
    scale) outlives it: then it is state a later call reads and may change, so the call is
    recorded again (where that tensor is read as a tensor from before the call). Drops the
    recorder's references to the other tensors the call made."""
    kept = [t for i, t in rec.fresh.items() if i in rec.consts]
    rec.fresh.clear()
    return any(sys.getrefcount(t) > 3 for t in kept)  # the list, the loop, the argument


class _Entry:
    """One recorded program, or the reason its guards run eagerly."""

    def __init__(self, program: Program | None, reason: str | None, spec: Any = None,
                 backends: list | None = None, scope: Any = None,
                 graphs: GraphReplay | None = None) -> None:
        self.program, self.reason, self.spec = program, reason, spec
        self.backends, self.scope, self.graphs = backends, scope, graphs
        self.trace: Any = None  # the recording's instructions, kept in checking mode
        self.views: list = []  # (output index, _view_chain): outputs a replay remakes

    def mismatch(self, tensors: Any) -> str | None:
        """Why this program does not fit the current state (None: it fits)."""
        p = self.program
        assert p is not None  # the caller keeps entries without a program from here
        p.args = tensors
        args = {id(t._array) for t in tensors} if p.guards and tensors else ()
        for ref, (shape, dtype, requires_grad, b) in p.guards:
            t = ref()
            if t is None:
                return "a tensor it read no longer exists"
            a = t._array
            if a.shape != shape or a.dtype != dtype or t.requires_grad != requires_grad \
                    or t._backend is not b:
                return f"a tensor it read changed (shape {shape} -> {tuple(a.shape)})"
            if id(a) in args:
                return "a tensor it reads from outside is also passed as an argument"
        for ref, was_none in p.grad_guards:
            t = ref()
            if t is None or (t._grad is None) != was_none:
                return "a parameter's .grad was " + ("set" if was_none else "cleared")
        for read, value in p.value_guards:
            if read() != value:
                return "a value it holds as a constant changed (an optimiser's betas, eps, ...)"
        for ref, training in p.modules:
            m = ref()
            if m is None or m.training != training:
                return "a module switched between train() and eval()"
        return None

    def replay(self, tensors: Any, warn: Callable[[str], None]) -> Any:
        """The program's outputs for ``tensors`` (or RETRACE); only on an entry with one."""
        p, backends = self.program, self.backends
        assert p is not None and backends is not None  # recorded together, in _record
        arrays = [t._array for t in tensors]
        p.args = tensors
        try:
            if self.scope is None:
                outs = self._run(arrays, warn)
            else:
                with self.scope:
                    outs = self._run(arrays, warn)
        except ShapeChanged:
            return RETRACE
        finally:
            p.args = ()
        made = [o if b is None else Tensor._make(o, b) for o, b in zip(outs, backends)]
        for k, (holder, steps) in self.views:
            root = tensors[holder.index] if type(holder) is ArgRef else holder()
            made[k] = _remade(made[k], root, steps)
        return _unflatten(self.spec, iter(made))

    def _run(self, arrays: list, warn: Callable[[str], None]) -> tuple:
        if self.graphs is not None:
            try:
                return self.graphs.run(arrays)
            except CaptureFailed as e:
                self.graphs = None
                warn(f"replays without CUDA graphs: capturing its kernels failed ({e})")
        assert self.program is not None  # replay, the only caller, checked it
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
        if context.recorder is not None or context.anomaly:  # inside another recording
            return self.fn(*args, **kwargs)
        if not kwargs and all(type(a) is Tensor for a in args):  # the common case, fast
            leaves: Any = args
            tensors: Any = args
            spec: Any = len(args)
            sig: Any = tuple((a._array.shape, a._array.dtype, a._backend, a.requires_grad,
                              a._base is None) for a in args)
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
        if entries is not None:
            self._cache.move_to_end(key)
            for e in entries:
                if e.program is None and e.reason is None:  # provisional: record again
                    entries.remove(e)
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
        return self._record(entries, args, kwargs, tensors, again)

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
                tensors: list[Tensor], again: bool = False) -> Any:
        rec = Recorder(list(tensors), graphs=self.cuda_graphs)
        prev = recording(rec)
        try:
            result = self.fn(*args, **kwargs)
        finally:
            recording(prev)
        outs: list = []
        spec = _flatten(result, outs)
        entry = self._entry(rec, spec, outs)
        if self.check and entry.program is not None:
            entry.trace = trace(rec, [o if isinstance(o, Tensor) else None for o in outs])
        if entry.program is not None and not again and (_kept_constants(rec) or rec.again):
            entry = _Entry(None, None)  # provisional: the next call records again
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
        chains = [(k, _view_chain(o, rec)) for k, o in enumerate(outs) if isinstance(o, Tensor)]
        entry.views = [(k, c) for k, c in chains if c is not None]
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
