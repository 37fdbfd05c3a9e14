"""CUDA graphs for ``xad.compile(fn, cuda_graphs=True)``: a program's array work captured
once per maximal run of kernels (a *segment*) and launched as graphs afterwards.

A program's host calls (``Optimizer.step`` where it keeps its numbers on the host, a
scheduler, GradScaler) and random draws other than the backend's own ``rand``/``randn``
(captured: ``captures_draws``) are Python that must run at every call, with the host
values of that call; an optimiser that keeps its numbers on the
device (:mod:`xad.optim.capturable`) is recorded as kernels instead, and its learning-rate
upload (``host_upload``) runs before the graph that reads it, splitting none. CuPy refuses
cuBLAS and cuSOLVER calls inside a capture (``Op.library``: ``linalg``), which run between
the graphs as Python too; matrix products (``Op.library == "matmul"``) are captured where
the backend can (``captures_matmul``: CuPy's by a cuBLAS handle of xad's own).
They split the program into segments, and only the segments become graphs. The plan of a
captured program is the list of its steps: launch segment 0's graph, call
``Optimizer.zero_grad()``, draw dropout's mask, launch segment 1's graph, multiply two
matrices, ...

- The first replay of a program runs it plainly (a warm-up, as PyTorch's: kernels are
  compiled, and the shapes and dtypes of each draw's and library call's results are
  learned).
- The second runs it once more with its host calls, draws, library calls and writes of tensors' data
  replaced by stubs that only note them (a *dry run*: nothing but captured kernels, and
  capture runs none), capturing each segment on a side stream into a private memory pool
  of its own (``Backend.begin_graph`` says why);
  then it runs the plan. A failed capture (a host-to-device copy, a random draw, an index
  check inside a segment) leaves no trace: the program replays without graphs, with one
  warning.
- Every later replay runs the plan: the arguments are copied into the static buffers the
  graphs read; before each launch, each tensor the segment reads from outside (a parameter,
  a buffer) is checked to still hold the array captured (else its values are copied in and,
  after the launch, back out); after it, the tensors' data and ``.grad`` writes are redone
  with the graph's arrays (a ``.grad`` the caller kept after its leaf dropped it gets a
  copy before the next launch overwrites its array); the results are copied out, new
  arrays each call.
"""

from __future__ import annotations

import contextlib
import re
import weakref
from collections.abc import Callable
from typing import Any

from .program import Program
from .recorder import ArgRef

__all__ = ["CaptureFailed", "GraphReplay", "graph_backend"]


class CaptureFailed(Exception):
    """Capturing a program's segments failed (the message says why)."""


def graph_backend(program: Program) -> Any:
    """The one backend every kernel of ``program`` runs on, when it captures CUDA graphs
    (CuPy's ``graph_capture``), else None."""
    backends = {id(i.b): i.b for i in program.instrs if i.kind in ("op", "call")}
    if len(backends) != 1:
        return None
    b = next(iter(backends.values()))
    return b if hasattr(b, "graph_capture") else None


@contextlib.contextmanager
def _patched(ns: dict, entries: dict) -> Any:
    saved = {k: ns[k] for k in entries}
    ns.update(entries)
    try:
        yield
    finally:
        ns.update(saved)


class _Segment:
    """One graph (None: a segment with no kernels), the uploads to run before it, what it
    reads from outside and the writes of tensors' data to redo after it."""

    def __init__(self, graph: Any, reads: list, binds: list, uploads: list,
                 checks: list, draws: list) -> None:
        self.graph, self.reads, self.binds, self.uploads = graph, reads, binds, uploads
        self.checks = checks  # index checks the graph updates (queued after each launch)
        self.draws = draws  # random draws inside it (their offsets written before it)
        self.owned: set[int] = set()  # ids of the plan's arrays its binds give tensors
        self.handed = _Handed(set())  # (the plan's) .grad tensors over those arrays

    def __call__(self, b: Any) -> None:
        if self.handed.tensors:
            self.handed.release(b)
        for up in self.uploads:  # host numbers into the device memory the graph reads
            up(b)
        if self.draws:
            b.before_graph_draws(self.draws)
        moved = []
        for ref, grad, static, written in self.reads:
            t = ref()
            now = t._grad._array if grad else t._array
            if now is not static:  # the tensor holds another array than at capture
                b.copy_into(static, now)
                if written and id(now) not in self.owned:  # (a graph's: it writes it anew)
                    moved.append((now, static))
        if self.graph is not None:
            b.launch_graph(self.graph)
        if self.checks:
            b.queue_graph_checks(self.checks)
        for now, static in moved:  # what the graph changed in place, back in the tensor
            b.copy_into(now, static)
        for ref, name, args in self.binds:
            t = ref()
            if t is not None:
                getattr(t, name)(*args) if name is not None else args(t)
                if name == "_set_grad_array":
                    self.handed.note(t, args[0])


class _Handed:
    """The ``.grad`` tensors that hold a plan's buffers: made by its binds, or read by its
    graphs (a capture adopts the array a ``.grad`` held). One its leaf no longer holds but
    the caller still does (an earlier step's gradient kept in a list) gets a copy of its
    values before the next segment runs, as eager mode's keeps them; so does one its leaf
    holds but the plan replaces by a new ``.grad`` (``p.grad = p.grad * c`` of gradients
    that accumulate across calls), since the caller may keep it too; one that died, or that
    stays its leaf's ``.grad``, costs nothing."""

    def __init__(self, replaced: set) -> None:
        self.tensors: dict[int, tuple] = {}  # id(buffer) -> (.grad ref, leaf ref, buffer)
        self.replaced = replaced  # ids of the leaves whose .grad the plan makes anew

    def note(self, leaf: Any, buffer: Any) -> None:
        g = leaf._grad
        if g is not None and g._array is buffer:
            self.tensors[id(buffer)] = (weakref.ref(g), weakref.ref(leaf), buffer)

    def release(self, b: Any) -> None:
        """Before a segment: copy each ``.grad`` over a buffer whose leaf dropped it."""
        for key, (gref, lref, buffer) in list(self.tensors.items()):
            g, leaf = gref(), lref()
            if g is not None and g._array is buffer:
                if leaf is not None and leaf._grad is g and id(leaf) not in self.replaced:
                    continue
                g._replayed("_set_data", _copied(b, buffer))
            del self.tensors[key]


class _Host:
    def __init__(self, fn: Any, args: tuple) -> None:
        self.fn, self.args = fn, args

    def __call__(self, b: Any) -> None:
        self.fn(*self.args)


class _Draw:
    """A random draw, run as Python; its result copied into the buffer the graphs read."""

    def __init__(self, fn: Any, args: tuple, static: Any) -> None:
        self.fn, self.args, self.static = fn, args, static
        self._array = static  # what the dry run's program line reads

    def __call__(self, b: Any) -> None:
        self.static[...] = self.fn(*self.args)._array


class _Library:
    """An operation calling cuBLAS or cuSOLVER (``Op.library``), which CuPy refuses inside a
    capture: run as Python between the graphs, its results copied into the buffers the
    graphs read (made empty: in the dry run its arguments hold no values yet)."""

    def __init__(self, fn: Any, args: tuple, out: Any) -> None:
        self.fn, self.args, self.out = fn, args, out

    def __call__(self, b: Any) -> None:
        new = self.fn(*self.args)
        if isinstance(self.out, (tuple, list)):
            for static, a in zip(self.out, new):
                static[...] = a
        else:
            self.out[...] = new


class _Plan:
    """A captured program: static argument buffers, the steps, the static results."""

    def __init__(self, b: Any, pools: list, statics: list, steps: list, outs: tuple,
                 back: list[int]) -> None:
        self.b, self.pools, self.statics, self.steps, self.outs = b, pools, statics, steps, outs
        self.back = back  # the arguments written in place but never bound: copied back
        segments = [s for s in steps if type(s) is _Segment]
        self.graphs = sum(1 for s in segments if s.graph is not None)
        owned = {id(a) for s in segments for _, name, args in s.binds if name is not None
                 for a in args}
        self.handed = _Handed({id(ref()) for s in segments for ref, name, args in s.binds
                               if name == "_set_grad_array" and not args[1]})
        for s in segments:
            s.owned, s.handed = owned, self.handed
            for ref, grad, static, _ in s.reads:
                t = ref() if grad else None
                if t is not None:
                    self.handed.note(t, static)

    def run(self, arrays: list) -> tuple:
        b = self.b
        for static, a in zip(self.statics, arrays):
            b.copy_into(static, a)
        for step in self.steps:
            step(b)
        for i in self.back:  # (eager mode wrote the caller's memory)
            b.copy_into(arrays[i], self.statics[i])
        return tuple(None if o is None else _copied(b, o) for o in self.outs)


def _copied(b: Any, a: Any) -> Any:
    """A new copy of a graph's static result (a memcpy where the backend has one)."""
    out = b.xp.empty_like(a)
    b.copy_into(out, a)
    return out


class _BindNote:
    """Stands in for a tensor whose data or ``.grad`` a program line sets: notes the call.
    ``static``: the argument's buffer, where the tensor is an argument (see
    :func:`_into_argument`)."""

    def __init__(self, ref: Any, binds: list, static: Any = None) -> None:
        self._ref, self._binds, self._static = ref, binds, static

    def __getattr__(self, name: str) -> Any:
        if self._static is not None and name == "_replayed":
            static = self._static
            return lambda how, array: self._binds.append(
                (self._ref, None, lambda t: _into_argument(t, how, array, static)))
        if self._static is not None and name == "_set_grad_array":  # (as _into_argument)
            return lambda a, keep: self._binds.append(
                (self._ref, None, lambda t: t._set_grad_array(_copied(t._backend, a), keep)))
        return lambda *args: self._binds.append((self._ref, name, args))

    def then(self, fn: Callable[[Any], None]) -> None:
        """Note ``fn(tensor)`` (remaking its views) for after the write."""
        self._binds.append((self._ref, None, fn))


def _into_argument(t: Any, how: str, array: Any, static: Any) -> None:
    """Redo ``t.how(array)`` for an argument ``t`` (another tensor at each call) with a
    graph's array: never that array itself, which the next call overwrites (an argument of
    an earlier call changed with it). A write in place (the argument's own buffer, a
    ``_set_data`` of its ``static`` buffer) is copied into the argument's array, so the
    views the caller holds see it, as in eager mode; another array is bound as a copy."""
    b = t._backend
    if how == "_set_data" and array is static and t._array is not array:
        b.copy_into(t._array, array)
        return
    t._replayed(how, _copied(b, array))


class _DryRun:
    """Runs a program once with stubs, capturing each segment that has kernels."""

    def __init__(self, program: Program, b: Any, shapes: dict, statics: list) -> None:
        self.b, self.shapes, self.statics = b, shapes, statics
        self.kernels = [False]  # per segment: whether it has kernels
        self.library = {i for i, ins in enumerate(program.instrs) if program.is_library(ins)
                        and not self._captures(ins, i)}
        self.checks = getattr(b, "captures_checks", False)
        self.draws = getattr(b, "captures_draws", False)
        for i, ins in enumerate(program.instrs):
            if _upload(ins) or self._captured_check(ins) or self._captured_draw(ins):
                continue
            if ins.kind in ("host", "draw") or i in self.library:
                self.kernels.append(False)
            elif ins.kind in ("op", "call"):
                self.kernels[-1] = True
        self.k = 0
        self.steps: list[Any] = []  # _Segment, _Host, _Draw and _Library, in order
        self.reads: list[tuple] = []
        self.binds: list[tuple] = []  # (ref, method, args), noted by _BindNote
        self.uploads: list[_Host] = []
        self.pools: list = []  # one per graph (Backend.begin_graph says why)

    def _captured_check(self, ins: Any) -> bool:
        """Whether host check ``ins`` (``host_check``: an index range check) runs inside the
        capture: where the backend keeps its maximum in the graph (``captures_checks``)."""
        return self.checks and ins.kind == "host" and ins.params.get("check", False)

    def _captured_draw(self, ins: Any) -> bool:
        """Whether draw ``ins`` runs inside the capture: ``rand``/``randn`` from the
        backend's own stream (no ``generator``), where the backend reads each draw's offset
        from device memory it writes before each launch (``captures_draws``)."""
        return self.draws and ins.kind == "draw" and ins.fn.__name__ in ("rand", "randn") \
            and ins.params["kwargs"].get("generator") is None

    def _captures(self, ins: Any, i: int) -> bool:
        """Whether library op ``ins`` runs inside the capture: its vendor calls are only
        matrix products (``Op.library == "matmul"``) of a dtype the backend can capture
        (``captures_matmul``: CuPy's by a cuBLAS handle of xad's own)."""
        shape = self.shapes.get(i)
        dtype = (shape[0] if type(shape) is list else shape)[1] if shape else None
        captures = getattr(self.b, "captures_matmul", None)
        return ins.fn.library == "matmul" and captures is not None and captures(dtype)

    def stubs(self, program: Program) -> dict:
        ns, stubs = program.ns, {}
        grads = program.grad_reads
        written = {f"t{s}" for s in program.writes}
        for name, ref in ns.items():
            if re.fullmatch(r"t\d+", name):
                stubs[name] = self._reader(ref, name in grads, name in written)
        for i, ins in enumerate(program.instrs):
            if ins.kind in ("bind", "grad"):
                h = ins.holder
                arg = self.statics[h.index] if type(h) is ArgRef else None
                stubs[f"h{i}"] = (lambda r, a: lambda: _BindNote(r, self.binds, a))(
                    ns[f"h{i}"], arg)
            elif self._captured_check(ins) or self._captured_draw(ins):
                continue  # it runs inside the capture (see the two methods)
            elif _upload(ins):
                stubs[f"f{i}"] = (lambda f: lambda *a: self.uploads.append(_Host(f, a)))(
                    ns[f"f{i}"])
            elif ins.kind in ("host", "draw") or i in self.library:
                kind = "library" if i in self.library else ins.kind
                stubs[f"f{i}"] = self._boundary(i, kind, ns[f"f{i}"])
        return stubs

    def _reader(self, ref: Any, grad: bool, written: bool) -> Any:
        def read() -> Any:
            t = ref()
            self.reads.append((ref, grad, t._grad._array if grad else t._array, written))
            return t
        return read

    def _boundary(self, i: int, kind: str, fn: Any) -> Any:
        def stub(*args: Any) -> Any:
            self.close()
            if kind == "host":
                step: Any = _Host(fn, args)
            elif kind == "draw":
                shape, dtype = self.shapes[i]
                step = _Draw(fn, args, self.b.xp.empty(shape, dtype=dtype))
            else:
                shapes, empty = self.shapes[i], self.b.xp.empty
                out = [empty(sh, dtype=dt) for sh, dt in shapes] if type(shapes) is list \
                    else empty(shapes[0], dtype=shapes[1])
                step = _Library(fn, args, out)
            self.steps.append(step)
            self.open()
            return step.out if kind == "library" else step
        return stub

    def open(self) -> None:
        if self.kernels[self.k]:
            self.pools.append(self.b.graph_pool())
            self.b.begin_graph(self.pools[-1])

    def close(self) -> None:
        graph = self.b.end_graph() if self.kernels[self.k] else None
        checks = self.b.take_graph_checks() if self.checks else []
        draws = self.b.take_graph_draws() if self.draws else []
        if graph is not None or self.reads or self.binds or self.uploads:
            self.steps.append(_Segment(graph, self.reads, self.binds, self.uploads, checks,
                                       draws))
        self.reads, self.binds, self.uploads = [], [], []
        self.k += 1


def _upload(ins: Any) -> bool:
    """Whether ``ins`` is a host call that only uploads numbers (``host_upload``): it runs
    before its segment's graph and splits none."""
    return ins.kind == "host" and ins.params.get("upload", False)


class GraphReplay:
    """The CUDA-graph replay of one program on backend ``b`` (see the module docstring)."""

    def __init__(self, program: Program, b: Any) -> None:
        self.program, self.b = program, b
        self.shapes: dict | None = None
        self.plan: _Plan | None = None

    @property
    def graphs(self) -> int:
        """How many graphs the captured program launches per call (0 before capture)."""
        return 0 if self.plan is None else self.plan.graphs

    def run(self, arrays: list) -> tuple:
        if self.plan is None:
            if self.shapes is None:
                return self._warm_up(arrays)
            self.plan = self._capture(arrays, self.shapes)
        return self.plan.run(arrays)

    def _warm_up(self, arrays: list) -> tuple:
        p, shapes = self.program, {}

        def observe(i: int, fn: Any, draw: bool) -> Any:
            def call(*args: Any) -> Any:
                r = fn(*args)
                a = r._array if draw else r
                shapes[i] = [(tuple(x.shape), x.dtype) for x in a] \
                    if isinstance(a, (tuple, list)) else (tuple(a.shape), a.dtype)
                return r
            return call

        seen = {f"f{i}": observe(i, p.ns[f"f{i}"], ins.kind == "draw")
                for i, ins in enumerate(p.instrs) if ins.kind == "draw" or p.is_library(ins)}
        with _patched(p.ns, seen):
            outs = p.run(arrays)
        self.shapes = shapes
        return outs

    def _capture(self, arrays: list, shapes: dict) -> _Plan:
        p, b = self.program, self.b
        statics = [b.xp.asarray(a, copy=True) for a in arrays]
        pool = b.graph_pool()
        dry = _DryRun(p, b, shapes, statics)
        try:
            with b.graph_capture(pool), _patched(p.ns, dry.stubs(p)):
                dry.open()
                outs = p.run(statics)
                dry.close()
        except Exception as e:  # nothing ran: the caller replays without graphs
            raise CaptureFailed(f"{type(e).__name__}: {e}") from e
        bound = {i.holder.index for i in p.instrs if i.kind == "bind" and type(i.holder) is ArgRef}
        return _Plan(b, [pool, *dry.pools], statics, dry.steps, outs,
                     sorted(p.arg_writes - bound))
