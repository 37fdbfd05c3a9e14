"""A recorded program made runnable: checked, simplified, and generated as one Python
function of arrays.

From the recorder's instructions: values made only from constants are folded (computed
once, in the first call); instructions whose results nothing uses, and writes to tensors
that no longer exist, are dropped; the rest becomes straight-line Python source, one line per
array call, each slot a local variable deleted after its last use (so memory is freed as
early as in eager mode). :meth:`Program.text` prints it.
"""

from __future__ import annotations

import ast
import functools
import inspect
import math
import textwrap
from typing import Any

from ..tensor import Tensor
from .recorder import Instr, Recorder, Slot

__all__ = ["Program"]


class Unsupported(Exception):
    """The recording cannot be replayed faithfully (the message says why)."""


class Program:
    """The replayable form of one recording; call :meth:`run` with the argument arrays."""

    def __init__(self, rec: Recorder, outs: list[Tensor | None]) -> None:
        self.rec = rec
        self.out_slots = [None if t is None else rec.ref(t) for t in outs]
        self.lives = self._check_lives()
        self.const = self._fold()
        self.instrs = self._needed()
        self.ns: dict[str, Any] = {"_Tensor": Tensor}
        self.source = self._generate()
        exec(compile(self.source, "<xad.compile program>", "exec"), self.ns)  # noqa: S102
        self.run = self.ns["program"]
        self.guards = [(r, meta) for _, (r, meta) in self.lives.items()]
        self.grad_guards = [(r, none) for kind, r, none in rec.guards]
        self.modules = list(rec.modules.values())
        del self.rec  # the recording's arrays are no longer needed (constants are in ns)

    # ----- analysis ------------------------------------------------------------------------
    def _check_lives(self) -> dict[int, tuple]:
        lives = {}
        for s, kind in enumerate(self.rec.kinds):
            if kind[0] == "live":
                if kind[1]() is None:
                    raise Unsupported(f"a tensor the call read (shape {kind[2][0]}) was "
                                      f"replaced by another tensor object during the call")
                lives[s] = (kind[1], kind[2])
        return lives

    def _fold(self) -> set[int]:
        """Slots whose values never change between calls: constants and what ``Op``s make
        from constants alone."""
        kinds, const = self.rec.kinds, set()
        for s, kind in enumerate(kinds):
            if kind[0] == "const":
                const.add(s)
        for ins in self.rec.instrs:
            if ins.kind == "op" and all(type(r) is not int or r in const for r in ins.refs):
                const.update(ins.outs)
        if any(ins.target in const for ins in self.rec.instrs if ins.target is not None):
            return {s for s, kind in enumerate(kinds) if kind[0] == "const"}
        return const

    def _needed(self) -> list[Instr]:
        """The instructions to run, in order: those with effects outside the program (writes
        to live tensors, draws, host calls, in-place kernels) and what they and the
        outputs use."""
        need = {s for s in self.out_slots if s is not None}
        keep = []
        for ins in reversed(self.rec.instrs):
            if ins.kind == "op" and ins.outs[0] in self.const:
                continue
            effect = (ins.kind in ("host", "draw") or ins.target is not None
                      or ins.kind in ("bind", "grad") and ins.holder() is not None)
            if effect or any(o in need for o in ins.outs):
                keep.append(ins)
                need.update(r for r in ins.refs if type(r) is int)
        keep.reverse()
        return keep

    # ----- code ----------------------------------------------------------------------------
    def _generate(self) -> str:
        lines = ["def program(A):"]
        self.listing: list[str] = []
        last = self._last_uses()
        loaded: set[int] = set()
        for i, ins in enumerate(self.instrs):
            for r in ins.refs:
                if type(r) is int and r not in loaded:
                    loaded.add(r)
                    load = self._load(r)
                    if load:
                        lines.append(f"    v{r} = {load}")
            lines.append("    " + self._line(i, ins))
            self.listing.append(self._describe(i, ins))
            loaded.update(ins.outs)
            dead = [f"v{s}" for s in sorted(last.get(i, ())) if s not in self.const]
            if dead:
                lines.append(f"    del {', '.join(dead)}")
        for s in self.out_slots:
            if s is not None and s not in loaded:
                load = self._load(s)
                if load:
                    lines.append(f"    v{s} = {load}")
        rets = ", ".join("None" if s is None else self._name(s) for s in self.out_slots)
        lines.append(f"    return ({rets}{',' if len(self.out_slots) == 1 else ''})")
        return "\n".join(lines) + "\n"

    def _last_uses(self) -> dict[int, set[int]]:
        outs = set(self.out_slots)
        last: dict[int, int] = {}
        for i, ins in enumerate(self.instrs):
            for s in (*[r for r in ins.refs if type(r) is int], *ins.outs):
                last[s] = i
        by_line: dict[int, set[int]] = {}
        for s, i in last.items():
            if s not in outs:
                by_line.setdefault(i, set()).add(s)
        return by_line

    def _load(self, s: int) -> str | None:
        """The expression that reads slot ``s`` where it is not an instruction's output."""
        kind = self.rec.kinds[s]
        if s in self.const:
            self.ns[f"c{s}"] = self.rec.arrays[s]
            return None
        if kind[0] == "arg":
            return f"A[{kind[1]}]"
        if kind[0] == "live":
            self.ns[f"t{s}"] = kind[1]
            return f"t{s}()._array"
        if kind[0] == "grad":
            self.ns[f"t{s}"] = kind[1]
            return f"t{s}()._grad._array"
        return None

    def _name(self, s: int) -> str:
        return f"c{s}" if s in self.const else f"v{s}"

    def _arg(self, i: int, j: int, r: Any) -> str:
        if type(r) is int:
            return self._name(r)
        value = r[1]
        if type(value) in (int, bool) or type(value) is float and math.isfinite(value):
            return repr(value)
        self.ns[f"k{i}_{j}"] = value
        return f"k{i}_{j}"

    def _line(self, i: int, ins: Instr) -> str:
        args = ", ".join(self._arg(i, j, r) for j, r in enumerate(ins.refs))
        outs = ", ".join(f"v{s}" for s in ins.outs) + ("," if len(ins.outs) == 1 else "")
        if ins.kind in ("op", "call"):
            fn = ins.fn.forward if ins.kind == "op" else ins.fn
            expr = None if ins.fix else _inline(fn, ins, [self._arg(i, j, r) for j, r in
                                                          enumerate(ins.refs)])
            if expr is not None:
                return f"v{ins.outs[0]} = {expr}"
            self.ns[f"f{i}"] = _kernel(fn, ins)
            call = f"f{i}({args})"
            if ins.fix:
                self.ns[f"e{i}"] = ins.b.ensure_array
                call = f"[e{i}(a) for a in {call}]" if len(ins.outs) > 1 else f"e{i}({call})"
            return f"{outs.rstrip(',')} = {call}" if len(ins.outs) == 1 else f"{outs} = {call}"
        self.ns[f"h{i}"] = ins.holder
        if ins.kind == "bind":
            return f"h{i}().{ins.fn}({args})"
        if ins.kind == "grad":
            return f"h{i}()._set_grad_array({args or 'None'})"
        self.ns[f"f{i}"] = _again(ins)
        if ins.kind == "host":
            return f"f{i}({args})"
        return f"v{ins.outs[0]} = f{i}({args})._array"

    # ----- reading it ----------------------------------------------------------------------
    def _describe(self, i: int, ins: Instr) -> str:
        args = ", ".join(self._arg(i, j, r) for j, r in enumerate(ins.refs))
        params = ", ".join(f"{k}={v!r}" for k, v in ins.params.items()
                           if ins.kind in ("op", "call"))
        call = f"{ins.label}({args}{', ' if args and params else ''}{params})"
        if ins.kind in ("bind", "grad"):
            return f"{_holder(ins)}{'.grad =' if ins.kind == 'grad' else ' <-'} {args or 'None'}"
        if ins.kind == "host":
            return f"{ins.label}()  # Python, run again"
        return f"{', '.join(f'v{s}' for s in ins.outs)} = {call}"

    def text(self) -> str:
        """The program, one line per array call (``vN``: values, ``cN``: constants)."""
        return "\n".join(self.listing)


@functools.cache
def _expression(fn: Any) -> tuple[list[str], ast.expr] | None:
    """``fn``'s parameter names and returned expression when its body is one ``return`` of
    Python operators over its parameters and literals (``return x + y``), else None."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    func = tree.body[0] if tree.body else None
    if not isinstance(func, ast.FunctionDef) or len(func.body) != 1 \
            or not isinstance(func.body[0], ast.Return) or func.body[0].value is None:
        return None
    names = [a.arg for a in func.args.args]
    allowed = (ast.BinOp, ast.UnaryOp, ast.Name, ast.Constant, ast.Load, ast.operator,
               ast.unaryop)
    body = func.body[0].value
    if not all(isinstance(n, allowed) for n in ast.walk(body)) or "b" in {
            n.id for n in ast.walk(body) if isinstance(n, ast.Name)}:
        return None
    return names, body


def _inline(fn: Any, ins: Instr, args: list[str]) -> str | None:
    """The source of ``fn``'s call written inline (``v3 + v4``) where its body is one
    operator expression and its parameters are literals; else None."""
    found = _expression(fn) if len(ins.outs) == 1 and len(ins.refs) == ins.npos else None
    if found is None:
        return None
    names, body = found
    values = dict(zip(names[1:], args))
    for k, v in ins.params.items():
        if type(v) not in (int, bool) and not (type(v) is float and math.isfinite(v)):
            return None
        values[k] = repr(v)

    class Put(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return ast.parse(f"({values[node.id]})", mode="eval").body

    if any(isinstance(n, ast.Name) and n.id not in values for n in ast.walk(body)):
        return None
    return ast.unparse(Put().visit(ast.parse(ast.unparse(body), mode="eval")).body)


def _kernel(fn: Any, ins: Instr) -> Any:
    """``fn(b, *arrays, **params)`` as a function of the instruction's refs (the refs past
    ``ins.npos`` fill the :class:`Slot` marks in its parameters)."""
    if len(ins.refs) == ins.npos:
        return functools.partial(fn, ins.b, **ins.params)
    b, params, npos = ins.b, ins.params, ins.npos

    def fill(v: Any, extra: tuple) -> Any:
        if type(v) is Slot:
            return extra[v]
        if type(v) in (tuple, list):
            return type(v)(fill(x, extra) for x in v)
        return v

    def call(*arrays: Any) -> Any:
        extra = arrays[npos:]
        return fn(b, *arrays[:npos], **{k: fill(v, extra) for k, v in params.items()})

    return call


def _holder(ins: Instr) -> str:
    t = ins.holder()
    return "<dead tensor>" if t is None else f"tensor{tuple(t.shape)}"


def _again(ins: Instr) -> Any:
    """The Python call of ``ins`` (a draw or host call) as a function of the arrays of its
    tensor arguments (each passed in a new tensor)."""
    fn, args, kwargs = ins.fn, ins.params["args"], ins.params["kwargs"]
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
    if not tensors:
        return functools.partial(fn, *args, **kwargs)

    def again(*arrays: Any) -> Any:
        fresh = {id(t): Tensor._make(a, t._backend) for t, a in zip(tensors, arrays)}
        a2 = [fresh.get(id(a), a) for a in args]
        k2 = {k: fresh.get(id(v), v) for k, v in kwargs.items()}
        return fn(*a2, **k2)

    return again
