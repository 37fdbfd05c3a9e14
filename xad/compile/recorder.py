"""The recorder: watches a compiled function's first call run eagerly and writes down its
array-level program.

Every array a call touches gets a *slot*. A slot is an argument's array, the array of a
tensor that existed before the call (``live``: read again from that tensor at each replay),
the gradient of such a leaf (``grad``), a constant (made inside the call by a factory), or
the output of an instruction. A tensor made during the call is classified where it is made
(``Tensor._make``/``__init__`` tell :meth:`Recorder.created`): a constant only where a
factory with static arguments says so (:meth:`Recorder.constant`); any other tensor whose
array no instruction produced (a backend call outside xad's operations, host data turned
into a tensor) makes the recording unsupported when the program reads it, naming the
function that made it, so no first-call value is ever replayed as a constant. Writes
(data, ``.grad``) to an argument go to the current call's argument tensor, by position;
writes to tensors made inside the call are not replayed (a replay makes its own).
Instructions are the operations' forwards and their gradient
rules (every ``Op`` call), raw array updates the rest of xad tells it about (in-place
arithmetic, copies), writes of a tensor's data or ``.grad``, random draws, and host calls
(``optimizer.step()``: run again as Python). What it cannot replay faithfully (a host read
such as ``.item()``, a hook's Python code, a draw outside the factories) makes the recording
*unsupported*: the call finishes eagerly and the function stays eager for those guards.
"""

from __future__ import annotations

import inspect
import sys
import weakref
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from ..context import context
from ..tensor import Tensor

__all__ = ["Recorder", "Instr", "Slot", "ArgRef", "bases_of"]


class Slot(int):
    """An array inside an instruction's parameters (a ``where`` condition, an index key):
    filled from the program's values at each replay, never frozen."""


@dataclass(eq=False)
class Instr:
    """One step of a program. ``kind``: ``op`` (``fn`` is the Op class), ``call`` (a raw
    kernel ``fn(b, *arrays, **params)``), ``bind`` (a tensor's data set to slot ``refs[0]``),
    ``grad`` (a leaf's ``.grad``), ``draw`` (a random factory), ``host`` (a Python call)."""

    kind: str
    fn: Any
    refs: tuple = ()          # input slots (int) or ("k", python value)
    outs: tuple = ()          # output slots
    params: dict = field(default_factory=dict)
    b: Any = None             # the backend the kernel runs on
    label: str = ""
    holder: Any = None        # the tensor a bind/grad writes: a weakref or an ArgRef
    fix: bool = False         # the result passes through b.ensure_array
    npos: int = -1            # refs after the first npos fill the Slot marks in params
    target: int | None = None  # the slot an in-place kernel writes into
    many: bool = False        # a kernel returning a tuple (of any length)


class ArgRef:
    """The tensor at argument position ``index`` of the current call (a holder or owner the
    program resolves at each replay, never the first call's tensor)."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __call__(self) -> Any:  # a recording-time lookup: the argument is always alive
        return None


class Recorder:
    """Builds the instruction list of one eager call (see the module docstring)."""

    def __init__(self, args: list[Tensor], graphs: bool = False) -> None:
        self.graphs = graphs  # the program is to be captured as CUDA graphs where it can
        self.again = False  # the call did a one-off (an optimiser's first step): record anew
        self.hosts = 0  # host calls run so far
        self.paused = False
        self.problem: str | None = None
        self.ends: list[Any] = []  # checks run when the call returns: a reason, or None
        self.instrs: list[Instr] = []
        self.kinds: list[tuple] = []      # per slot: ("arg", i) / ("live", ref, meta) / ...
        self.arrays: list[Any] = []       # per slot: the array (keeps ids unique)
        self.slot_of: dict[int, int] = {}  # id(array) -> its newest slot
        self.fresh: dict[int, Tensor] = {}  # tensors made during the call (not by Ops)
        self.made_by: dict[int, str] = {}  # id(fresh tensor) -> the function that made it
        self.consts: set[int] = set()      # ids of fresh tensors a static factory made
        self.outside: set[int] = set()     # ids of tensors from before the call seen
        self.host_made: dict[int, Tensor] = {}  # ... made inside a host call
        self.grad_owner: dict[int, Any] = {}  # id(a .grad tensor read) -> (leaf ref, grad)
        self.guards: list[tuple] = []     # ("grad_none", leaf ref, is_none)
        self.host_cleared: set[int] = set()  # ids of leaves a host call set .grad = None
        self.results: list[Any] = []      # weak references to operations' results
        self.grads: list[Tensor] = []     # the .grad tensors the call set
        self.held: set[int] = set()       # slots set as data of tensors from before the call
        self.writes: set[int] = set()     # slots written in place, and their views' bases'
        self.modules: dict[int, Any] = {}
        self.args = args
        self.nodes = [t._node for t in args]  # an argument left in a graph: see Program
        self.arg_of: dict[int, int] = {}  # id(argument tensor) -> its first position
        self.arg_bases = {i for t in args for i in bases_of(t)}
        self.versions: dict[int, list] = {}  # id(tensor from before) -> [holder, version, 0]
        for i, t in enumerate(args):
            if self.arg_of.setdefault(id(t), i) == i:
                self.versions[id(t)] = [ArgRef(i), t._version, 0]
            if id(t._array) not in self.slot_of:  # an aliased argument: its first slot
                self._new(t._array, ("arg", i))

    # ----- slots ---------------------------------------------------------------------------
    def _new(self, array: Any, kind: tuple) -> int:
        s = len(self.arrays)
        self.arrays.append(array)
        self.kinds.append(kind)
        self.slot_of[id(array)] = s
        return s

    def ref(self, t: Tensor) -> int:
        """The slot of tensor ``t``'s array (made on first sight)."""
        s = self.slot_of.get(id(t._array))
        if s is not None:
            if self.kinds[s][0] == "arg" and id(t) not in self.arg_of \
                    and id(t) not in self.fresh:
                self.unsupported(f"a tensor it reads from outside (shape {tuple(t.shape)}) "
                                 f"shares its array with argument {self.kinds[s][1]}")
            return s
        owner = self.grad_owner.get(id(t))  # a .grad read (also one zero_grad made)
        if owner is not None:
            return self._new(t._array, ("grad", owner[0]))
        if id(t) in self.host_made:
            self.unsupported("a tensor made inside an optimiser/scheduler step is read later")
        if id(t) in self.fresh:
            if id(t) not in self.consts:
                self.unsupported(f"{self.made_by[id(t)]} made a tensor from an array no "
                                 f"recorded operation produced (a backend call outside "
                                 f"xad's operations, or host data); a replay would reuse "
                                 f"the first call's values")
            return self._new(t._array, ("const",))
        if id(t) in self.arg_bases:
            self.unsupported(f"an argument is a view of a tensor (shape {tuple(t.shape)}) "
                             f"the call also reads or writes; pass that tensor instead")
        meta = (tuple(t._array.shape), t._array.dtype, t.requires_grad, t._backend,
                getattr(t._array, "strides", None))  # the layout out= was planned for
        ref = weakref.ref(t)
        self._track(t, ref)
        return self._new(t._array, ("live", ref, meta))

    def _track(self, t: Tensor, ref: Any) -> None:
        """``t`` is from before the call: count its in-place changes from here on."""
        self.outside.add(id(t))
        self.versions.setdefault(id(t), [ref, t._version, 0])

    def _tensor(self, holder: Any) -> Any:
        return self.args[holder.index] if type(holder) is ArgRef else holder()

    def version_changes(self) -> list[tuple[Any, int]]:
        """``(holder, count)``: how many in-place changes the call made to each tensor from
        before it, outside host calls (which count their own when run again); a replay,
        whose kernels write memory without counting, adds them."""
        out = []
        for holder, first, hosted in self.versions.values():
            t = self._tensor(holder)
            if t is not None and t._version - first - hosted > 0:
                out.append((holder, t._version - first - hosted))
        return out

    def holder(self, t: Tensor) -> Any:
        """How a replay finds tensor ``t`` to write to: its argument position, a weak
        reference (a tensor from before the call), or None (made inside the call: a replay
        makes its own)."""
        i = self.arg_of.get(id(t))
        if i is not None:
            return ArgRef(i)
        if id(t) in self.fresh:
            return None
        if id(t) in self.outside:
            return weakref.ref(t)
        old = self.slot_of.get(id(t._array))
        if old is not None and old not in self.held \
                and self.kinds[old][0] not in ("live", "arg", "grad"):
            return None  # an operation's result (its array made in this call)
        if id(t) in self.arg_bases:
            self.unsupported(f"an argument is a view of a tensor (shape {tuple(t.shape)}) "
                             f"the call writes; pass that tensor instead")
        ref = weakref.ref(t)
        self._track(t, ref)
        return ref

    def _refs(self, inputs: tuple) -> tuple:
        return tuple(self.ref(a) if isinstance(a, Tensor) else ("k", a) for a in inputs)

    def _params(self, b: Any, params: dict, refs: list) -> dict:
        """``params`` with every array in them replaced by a :class:`Slot` (appended to
        ``refs``); an array the program does not know makes the recording unsupported."""
        base = len(refs)

        def walk(v: Any) -> Any:
            if type(v) in (tuple, list):
                return type(v)(walk(x) for x in v)
            if b is not None and isinstance(v, b.array_type):
                s = self.slot_of.get(id(v))
                if s is None and any(t._array is v for i, t in self.fresh.items()
                                     if i in self.consts):
                    s = self._new(v, ("const",))  # a factory's array (arange's indices)
                if s is None:
                    self.unsupported("an operation's parameter is an array made outside "
                                     "xad's operations")
                    return v
                refs.append(s)
                return Slot(len(refs) - 1 - base)
            return v
        return {k: walk(v) for k, v in params.items()}

    def _outs(self, out: Any, instr_index: int) -> tuple:
        outs = out if type(out) is tuple else (out,)
        return tuple(self._new(o, ("op", instr_index)) for o in outs)

    # ----- what the engine tells it --------------------------------------------------------
    def op(self, op: Any, b: Any, inputs: tuple, params: dict, out: Any, fix: bool) -> None:
        """An ``Op``'s forward ran on ``inputs`` (tensors and Python scalars)."""
        if self.paused:
            return
        refs = list(self._refs(inputs))
        npos = len(refs)
        params = self._params(b, params, refs)
        self.instrs.append(Instr("op", op, tuple(refs), self._outs(out, len(self.instrs)),
                                 params, b, op.name, fix=fix, npos=npos))

    def call(self, kernel: Any, b: Any, inputs: tuple, out: Any, label: str,
             params: dict | None = None, target: Tensor | None = None) -> None:
        """A raw kernel ``kernel(b, *arrays, **params)`` made ``out`` (writing into
        ``target``'s array when given)."""
        if self.paused:
            return
        refs = list(self._refs(inputs))
        npos = len(refs)
        params = self._params(b, params or {}, refs)
        tslot = None
        if target is not None:
            tslot = refs[list(inputs).index(target)] if any(
                a is target for a in inputs) else self.ref(target)
            if self.kinds[tslot][0] == "const":
                self.unsupported(f"an in-place change ({label}) of a tensor made inside the "
                                 f"compiled function by a factory (zeros, ones, tensor(...))")
            root = self.slot_of.get(id(_root(target)._array))  # (a view shares its memory)
            self.writes.update((tslot,) if root is None else (tslot, root))
        self.instrs.append(Instr("call", kernel, tuple(refs), self._outs(out, len(self.instrs)),
                                 params, b, label, target=tslot, npos=npos,
                                 many=type(out) is tuple))

    def bind(self, t: Tensor, array: Any, how: str) -> None:
        """``t``'s data becomes ``array`` (``_set_data`` or ``_rebind``)."""
        if self.paused:
            return
        s = self.slot_of.get(id(array))
        if s is None:
            self.unsupported(f"a tensor's data was set ({how}) to an array made outside "
                             f"xad's operations")
            return
        leaf = self._grad_holder(t)
        if leaf is not None:  # a leaf's .grad changed (JAX: g.zero_()): the current call's
            self.held.add(s)
            self.instrs.append(Instr("grad", None, (s,), params={"keep": True}, holder=leaf,
                                     label="grad"))  # the same .grad tensor takes it
            return
        holder = self.holder(t)
        if holder is None:
            return  # a tensor this call made: a replay makes its own (and reads it by array)
        self.held.add(s)
        self.instrs.append(Instr("bind", how, (s,), holder=holder, label=how))

    def refreshed(self, t: Tensor, how: str = "views") -> None:
        """Eager mode remade the views of ``t`` after setting its data (an immutable backend,
        a non-leaf; ``how="leave"``: left them with the old storage, ``t.data = ...``): the
        replay of that write does too, since views that the caller holds of an argument
        (``v = x[0]; f(x)``) are other tensors at every call."""
        if how == "leave" and not self.paused and any(
                isinstance(a, Tensor) and a is not t and a._base is not None
                and id(_root(a)) in self.fresh for a in self.args):
            self.unsupported(f"an argument is a view of a tensor (shape {tuple(t.shape)}) "
                             f"whose data the call replaces (.data = ...); pass that tensor")
            return
        last = self.instrs[-1] if self.instrs and not self.paused else None
        if last is not None and last.kind == "bind" and (
                self.arg_of.get(id(t), -1) == last.holder.index if type(last.holder) is ArgRef
                else last.holder() is t):
            last.params[how] = True

    def _grad_holder(self, t: Tensor) -> Any:
        """The holder of the leaf whose ``.grad`` ``t`` is now (read in this call), or None."""
        owner = self.grad_owner.get(id(t))
        if owner is None:
            return None
        holder = owner[0]
        leaf = self.args[holder.index] if type(holder) is ArgRef else holder()
        return holder if leaf is not None and leaf._grad is t else None

    def grad_set(self, leaf: Tensor, g: Tensor | None) -> None:
        if self.paused:  # inside a host call (``zero_grad``): run again at each replay
            if g is None:
                self.host_cleared.add(id(leaf))
            return
        holder = self.holder(leaf)
        if g is not None:
            self.grads.append(g)
        refs = () if g is None else (self.ref(g),)
        if holder is not None:
            self.instrs.append(Instr("grad", None, refs, holder=holder, label="grad"))

    def grad_read(self, leaf: Tensor, g: Tensor | None) -> None:
        """``leaf.grad`` was read: remember how to read it again, and guard None-ness while
        neither a recorded assignment nor a host call's ``.grad = None`` (``zero_grad``,
        run again at each replay) has decided it yet; another host call (a scheduler's
        step) decides nothing."""
        if self.paused:
            return
        holder = self.holder(leaf)
        if holder is None:
            return  # made inside the call: its .grad is an instruction's output or None
        touched = id(leaf) in self.host_cleared or any(
            i.kind == "grad" and _same(i.holder, holder) for i in self.instrs)
        if g is not None:
            self.grad_owner[id(g)] = (holder, g)
        if not touched:
            self.guards.append(("grad_none", holder, g is None))

    def created(self, t: Tensor, how: str | None = None, source: Tensor | None = None) -> None:
        """Tensor ``t`` was made outside an ``Op`` (``Tensor._make``/``__init__``), sharing
        ``source``'s array where given (``detach()``, ``.data``)."""
        if self.paused:
            self.host_made[id(t)] = t
            return
        self.fresh[id(t)] = t
        self.made_by[id(t)] = how or _maker()
        if source is not None and id(t._array) not in self.slot_of:
            if id(source) not in self.fresh or id(source) in self.consts:
                self.ref(source)
            else:
                self.made_by[id(t)] = self.made_by[id(source)]

    def result(self, t: Tensor) -> None:
        """``t`` is an operation's result: one that outlives the call (kept in a cache) is
        state the next call may read (see ``compiled._kept_results``)."""
        if not self.paused:
            self.results.append(weakref.ref(t))

    def constant(self, t: Tensor) -> None:
        """``t`` was made by a factory from static arguments (shapes, Python numbers): the
        same array at every call, so a constant of the program."""
        if not self.paused:
            self.consts.add(id(t))

    def value_guard(self, read: Any) -> None:
        """Replay only while ``read()`` gives what it gives now (hyperparameters a program
        holds as kernel constants)."""
        if not self.paused:
            self.guards.append(("value", read, read()))

    def module(self, m: Any) -> None:
        """Module ``m`` was called: guard its train/eval mode and its attributes (Python
        numbers such as Dropout's ``p``, which parameter objects it holds), and those of
        the modules below it, as they are now."""
        if self.paused:
            return
        if m._forward_pre_hooks or m._forward_hooks or m._backward_hooks or \
                m._backward_pre_hooks:
            self.unsupported(f"{type(m).__name__} has forward/backward hooks (Python code a "
                             f"replay would skip)")
        if id(m) not in self.modules:  # else seen below a module called before
            for sub in m.modules():
                self.modules.setdefault(id(sub), (weakref.ref(sub), sub.training,
                                                  sub._changes))

    def host_read(self, t: Tensor, what: str) -> None:
        if not self.paused:
            self.unsupported(f"a host read ({what} of a tensor of shape {tuple(t.shape)}); "
                             f"return the tensor and read it outside the compiled function")

    def raw_read(self, t: Tensor) -> None:
        """``t.array`` was read: a Python branch on its values or a backend call on it
        (wrapped with ``Tensor(...)``) would not be recorded."""
        self.unsupported(f"a tensor's backend array was read (.array of a tensor of shape "
                         f"{tuple(t.shape)}): a branch on its values or a backend call "
                         f"wrapped with Tensor(...) would not be replayed; use xad's "
                         f"operations on the tensor")

    def at_end(self, check: Any) -> None:
        """Run ``check()`` when the recorded call returns; a reason it gives makes the
        recording unsupported (Python state a replay would not leave as the call did)."""
        if not self.paused:
            self.ends.append(check)

    def unsupported(self, why: str) -> None:
        if not self.paused and self.problem is None:
            self.problem = why

    # ----- calls it runs itself ------------------------------------------------------------
    def host_call(self, fn: Any, args: tuple, kwargs: dict, reads: bool = False,
                  upload: bool = False) -> Any:
        """Run a host call (paused) and record it to be run again at each replay (with the
        replay's arrays for its tensor arguments, where it only ``reads`` them; an
        ``upload`` launches no kernel: see :func:`xad.tracing.host_upload`); a method of
        an object with ``_host_state()`` replays only while that gives the same."""
        inputs = tuple(a for a in (*args, *kwargs.values()) if isinstance(a, Tensor))
        state = getattr(args[0], "_host_state", None) if args else None
        if state is not None:  # what the call works on (an optimiser's parameters)
            self.value_guard(state)
        if inputs and not reads:
            self.unsupported(f"{fn.__qualname__} was given a tensor (a replay would pass the "
                             f"first call's)")
        self.hosts += 1
        self.instrs.append(Instr("host", fn, self._refs(inputs),
                                 params={"args": args, "kwargs": kwargs, "upload": upload,
                                         "check": reads},
                                 label=fn.__qualname__))
        seen = [(v, self._tensor(v[0])) for v in self.versions.values()]
        before = [None if t is None else t._version for _, t in seen]
        try:
            return self._paused(fn, args, kwargs)
        finally:
            for (v, t), n in zip(seen, before):
                if t is not None:
                    v[2] += t._version - n

    def draw(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        """Run a random factory (paused) and record it to be drawn again at each replay."""
        inputs = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
        refs = self._refs(tuple(inputs))
        out = self._paused(fn, args, kwargs)
        if context.transform is not None:  # inside vmap: the array drawn is the batch's
            args, kwargs = _physical(fn, args, kwargs, tuple(out._array.shape))
        self.instrs.append(Instr("draw", fn, refs, self._outs(out._array, len(self.instrs)),
                                 {"args": args, "kwargs": kwargs}, label=fn.__name__))
        return out

    def _paused(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        self.paused = True
        try:
            return fn(*args, **kwargs)
        finally:
            self.paused = False


def _physical(fn: Any, args: tuple, kwargs: dict, shape: tuple) -> tuple[tuple, dict]:
    """The arguments that draw ``shape``, the array a random factory drew inside
    ``vmap(randomness="different")`` (one draw per example: the batch's shape first),
    where a replay, outside the transform, would draw the logical shape and broadcast one
    draw to every example."""
    if fn.__name__ in ("rand", "randn"):
        return shape, kwargs
    if fn.__name__ == "randint":
        bound = inspect.signature(fn).bind(*args, **kwargs)
        a = bound.arguments
        low, high = (a["low"], a["high"]) if a.get("size") is not None else (0, a["low"])
        rest = {k: v for k, v in a.items() if k not in ("low", "high", "size")}
        return (low, high, shape), rest
    return args, kwargs  # (the others draw no per-example batch: vmap refuses them)


def _root(t: Tensor) -> Tensor:
    while t._base is not None:
        t = t._base
    return t


def bases_of(t: Tensor) -> list[int]:
    """The ids of the tensors ``t`` is a view of (its base, that one's base, ...)."""
    out = []
    while t._base is not None:
        t = t._base
        out.append(id(t))
    return out


def _same(a: Any, b: Any) -> bool:
    """Whether holders ``a`` and ``b`` name the same tensor."""
    if type(a) is ArgRef or type(b) is ArgRef:
        return type(a) is type(b) and a.index == b.index
    return a() is b()


def _maker() -> str:
    """The public function (outside tensor.py) that made a tensor: the first caller not
    named ``_...`` above ``Tensor._make``."""
    f: FrameType | None = sys._getframe(3)
    for _ in range(6):
        if f is None:
            break
        name = f.f_code.co_name
        if not name.startswith("_") and name != "<lambda>":
            return f"{name}()"
        f = f.f_back
    return "a function outside xad's operations"


def recording(rec: Recorder | None) -> Any:
    """Set this thread's recorder; returns the previous one."""
    prev, context.recorder = context.recorder, rec
    return prev
