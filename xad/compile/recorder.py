"""The recorder: watches a compiled function's first call run eagerly and writes down its
array-level program.

Every array a call touches gets a *slot*. A slot is an argument's array, the array of a
tensor that existed before the call (``live``: read again from that tensor at each replay),
the gradient of such a leaf (``grad``), a constant (made inside the call by a factory), or
the output of an instruction. Instructions are the operations' forwards and their gradient
rules (every ``Op`` call), raw array updates the rest of xad tells it about (in-place
arithmetic, copies), writes of a tensor's data or ``.grad``, random draws, and host calls
(``optimizer.step()``: run again as Python). What it cannot replay faithfully (a host read
such as ``.item()``, a hook's Python code, a draw outside the factories) makes the recording
*unsupported*: the call finishes eagerly and the function stays eager for those guards.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

from ..context import context
from ..tensor import Tensor

__all__ = ["Recorder", "Instr", "Slot"]


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
    holder: Any = None        # a weak reference to the tensor a bind/grad writes
    fix: bool = False         # the result passes through b.ensure_array
    npos: int = -1            # refs after the first npos fill the Slot marks in params
    target: int | None = None  # the slot an in-place kernel writes into


class Recorder:
    """Builds the instruction list of one eager call (see the module docstring)."""

    def __init__(self, args: list[Tensor]) -> None:
        self.paused = False
        self.problem: str | None = None
        self.instrs: list[Instr] = []
        self.kinds: list[tuple] = []      # per slot: ("arg", i) / ("live", ref, meta) / ...
        self.arrays: list[Any] = []       # per slot: the array (keeps ids unique)
        self.slot_of: dict[int, int] = {}  # id(array) -> its newest slot
        self.fresh: dict[int, Tensor] = {}  # tensors made during the call (not by Ops)
        self.host_made: dict[int, Tensor] = {}  # ... made inside a host call
        self.grad_owner: dict[int, Any] = {}  # id(a .grad tensor read) -> (leaf ref, grad)
        self.guards: list[tuple] = []     # ("grad_none", leaf ref, is_none)
        self.held: set[int] = set()       # slots set as data of tensors from before the call
        self.modules: dict[int, Any] = {}
        for i, t in enumerate(args):
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
            return s
        if id(t) in self.host_made:
            self.unsupported("a tensor made inside an optimiser/scheduler step is read later")
        owner = self.grad_owner.get(id(t))
        if owner is not None:
            return self._new(t._array, ("grad", owner[0]))
        if id(t) in self.fresh:
            return self._new(t._array, ("const",))
        meta = (tuple(t._array.shape), t._array.dtype, t.requires_grad, t._backend)
        return self._new(t._array, ("live", weakref.ref(t), meta))

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
                if s is None and any(t._array is v for t in self.fresh.values()):
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
        self.instrs.append(Instr("call", kernel, tuple(refs), self._outs(out, len(self.instrs)),
                                 params, b, label, target=tslot, npos=npos))

    def bind(self, t: Tensor, array: Any, how: str) -> None:
        """``t``'s data becomes ``array`` (``_set_data`` or ``_rebind``)."""
        if self.paused:
            return
        s = self.slot_of.get(id(array))
        if s is None:
            self.unsupported(f"a tensor's data was set ({how}) to an array made outside "
                             f"xad's operations")
            return
        old = self.slot_of.get(id(t._array))
        if id(t) in self.fresh or old is not None and old not in self.held \
                and self.kinds[old][0] not in ("live", "arg", "grad"):
            return  # a tensor this call made: a replay makes its own (and reads it by array)
        self.held.add(s)
        self.instrs.append(Instr("bind", how, (s,), holder=weakref.ref(t), label=how))

    def grad_set(self, leaf: Tensor, g: Tensor | None) -> None:
        if self.paused:
            return
        refs = () if g is None else (self.ref(g),)
        self.instrs.append(Instr("grad", None, refs, holder=weakref.ref(leaf), label="grad"))

    def grad_read(self, leaf: Tensor, g: Tensor | None) -> None:
        """``leaf.grad`` was read: remember how to read it again, and guard None-ness while
        no host call (``zero_grad``) has decided it yet."""
        if self.paused:
            return
        touched = any(i.kind in ("host", "grad") and (i.kind == "host" or i.holder() is leaf)
                      for i in self.instrs)
        if g is not None:
            self.grad_owner[id(g)] = (weakref.ref(leaf), g)
        if not touched:
            self.guards.append(("grad_none", weakref.ref(leaf), g is None))

    def created(self, t: Tensor) -> None:
        (self.host_made if self.paused else self.fresh)[id(t)] = t

    def module(self, m: Any) -> None:
        if self.paused:
            return
        self.modules[id(m)] = (weakref.ref(m), m.training)
        if m._forward_pre_hooks or m._forward_hooks or m._backward_hooks:
            self.unsupported(f"{type(m).__name__} has forward/backward hooks (Python code a "
                             f"replay would skip)")

    def host_read(self, t: Tensor, what: str) -> None:
        if not self.paused:
            self.unsupported(f"a host read ({what} of a tensor of shape {tuple(t.shape)}); "
                             f"return the tensor and read it outside the compiled function")

    def unsupported(self, why: str) -> None:
        if not self.paused and self.problem is None:
            self.problem = why

    # ----- calls it runs itself ------------------------------------------------------------
    def host_call(self, fn: Any, args: tuple, kwargs: dict, reads: bool = False) -> Any:
        """Run a host call (paused) and record it to be run again at each replay (with the
        replay's arrays for its tensor arguments, where it only ``reads`` them)."""
        inputs = tuple(a for a in (*args, *kwargs.values()) if isinstance(a, Tensor))
        if inputs and not reads:
            self.unsupported(f"{fn.__qualname__} was given a tensor (a replay would pass the "
                             f"first call's)")
        self.instrs.append(Instr("host", fn, self._refs(inputs),
                                 params={"args": args, "kwargs": kwargs},
                                 label=fn.__qualname__))
        return self._paused(fn, args, kwargs)

    def draw(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        """Run a random factory (paused) and record it to be drawn again at each replay."""
        inputs = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
        refs = self._refs(tuple(inputs))
        out = self._paused(fn, args, kwargs)
        self.instrs.append(Instr("draw", fn, refs, self._outs(out._array, len(self.instrs)),
                                 {"args": args, "kwargs": kwargs}, label=fn.__name__))
        return out

    def _paused(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        self.paused = True
        try:
            return fn(*args, **kwargs)
        finally:
            self.paused = False


def recording(rec: Recorder | None) -> Any:
    """Set this thread's recorder; returns the previous one."""
    prev, context.recorder = context.recorder, rec
    return prev
