"""Fused elementwise kernels for ``xad.compile(fn, fuse=True)`` on a backend that fuses
(:meth:`xad.Backend.fuse`; CuPy's is ``cupy.fuse``).

A *region* is a maximal run of consecutive instructions of a :class:`Program`, each one
elementwise operation written as one expression of operators (``+ - * /``, unary ``-``) and
ufunc calls (:data:`FUSABLE`: ``b.xp.tanh(x)``, ``b.xp.maximum(x, 0)``) over its operands
and finite number literals, all on one backend, all with results of one shape (a fused
kernel writes each output in the broadcast shape of all its inputs). A value a region makes
and something after it reads (a later instruction, a write of a tensor's data or ``.grad``,
the program's results) is one of its outputs; the others never leave the kernel. A region of
two or more operations becomes one instruction, a ``call`` of the backend's fused function,
generated as Python with one line per operation::

    def fused_0(v0, v1):
        v2 = v0 * v1
        v3 = v2 + v0
        v4 = xp.tanh(v3)
        return v4 * 0.9

Its Python-scalar operands are literals of that source (``cupy.fuse`` types them as weak
scalars, as eager mode's ufunc calls do). It runs before the rest of the program is
generated: the fused call is one kernel to :class:`program._Memory` (which gives no ``out=``
to anything inside it) and to :mod:`.cuda_graph` (which captures it like any kernel).
"""

from __future__ import annotations

import ast
import math
from typing import Any

from .program import Program, _chain, _expression
from .recorder import Instr

__all__ = ["FUSABLE", "fuse"]

# ufuncs a fused function may call: CuPy ufuncs that array_api_compat.cupy re-exports as
# they are (tests/test_cupy_contract.py checks both), so eager mode calls the same ufunc
FUSABLE = frozenset((
    "abs", "add", "cos", "cosh", "divide", "exp", "exp2", "expm1", "hypot", "log", "log10",
    "log1p", "log2", "logaddexp", "maximum", "minimum", "multiply", "negative", "positive",
    "reciprocal", "sin", "sinh", "sqrt", "square", "subtract", "tan", "tanh",
))
_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


def fuse(program: Program) -> list[Instr]:
    """``program.instrs`` with each region of two or more fusable operations replaced by
    one call of its fused kernel (where the backend gives one)."""
    instrs, reads = program.instrs, _last_reads(program)
    out: list[Instr] = []
    run: list[tuple[int, Instr, str]] = []
    for i, ins in enumerate(instrs):
        line = _line(program, ins)
        if run and (line is None or not _joins(program, run[0][1], ins)):
            out += _region(program, run, reads, sum(1 for x in out if x.fn is launch))
            run = []
        if line is None:
            out.append(ins)
        else:
            run.append((i, ins, line))
    return out + _region(program, run, reads, sum(1 for x in out if x.fn is launch))


def _last_reads(program: Program) -> dict[int, float]:
    """Slot -> the last instruction reading it (inf: a result of the program)."""
    last: dict[int, float] = {}
    for i, ins in enumerate(program.instrs):
        for s in (*ins.refs, ins.target):
            if type(s) is int:
                last[s] = i
    last.update({s: math.inf for s in program.out_slots if s is not None})
    return last


def _joins(program: Program, first: Instr, ins: Instr) -> bool:
    arrays = program.rec.arrays
    return ins.b is first.b and arrays[ins.outs[0]].shape == arrays[first.outs[0]].shape


def _line(program: Program, ins: Instr) -> str | None:
    """``ins`` as a line of a fused function (``v4 = xp.tanh(v3)``), or None if it is not
    one fusable elementwise operation."""
    if ins.kind not in ("op", "call") or ins.fix or ins.target is not None \
            or len(ins.outs) != 1 or ins.params or ins.b is None:
        return None
    found = _expression(getattr(ins.fn, "expression", ins.fn.forward) if ins.kind == "op"
                        else ins.fn)  # expression: xad/ops/fused.py
    if found is None or len(found[0]) != len(ins.refs) + 1 \
            or not isinstance(found[1], (ast.BinOp, ast.UnaryOp, ast.Call)):
        return None
    values = {}
    for name, r in zip(found[0][1:], ins.refs):
        if type(r) is int:
            values[name] = program._name(r)
        elif _number(r[1]):
            values[name] = _literal(r[1])
        else:
            return None
    text = _source(found[1], values)
    return None if text is None else f"v{ins.outs[0]} = {text}"


def _number(v: Any) -> bool:
    return type(v) in (int, bool) or type(v) is float and math.isfinite(v)


def _literal(v: Any) -> str:
    return f"({v!r})" if type(v) is not bool and v < 0 else repr(v)


def _source(node: ast.AST, values: dict[str, str], top: bool = True) -> str | None:
    """The fusable expression ``node`` with its parameters replaced by ``values``, else
    None."""
    if isinstance(node, ast.Name):
        return values.get(node.id)
    if isinstance(node, ast.Constant):
        return _literal(node.value) if _number(node.value) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        x = _source(node.operand, values, False)
        return None if x is None else f"-{x}" if top else f"(-{x})"
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        x, y = _source(node.left, values, False), _source(node.right, values, False)
        if x is None or y is None:
            return None
        text = f"{x} {_BINARY[type(node.op)]} {y}"
        return text if top else f"({text})"
    if isinstance(node, ast.Call) and not node.keywords:
        path = _chain(node.func)
        args = [None if isinstance(a, ast.Starred) else _source(a, values) for a in node.args]
        if path is None or len(path) != 2 or path[0] != "xp" or path[1] not in FUSABLE \
                or None in args:
            return None
        return f"xp.{path[1]}({', '.join(args)})"  # type: ignore[arg-type]
    return None


def _region(program: Program, run: list[tuple[int, Instr, str]], reads: dict[int, float],
            k: int) -> list[Instr]:
    """The run's one fused call, or its instructions as they are (fewer than two, or a
    backend that does not fuse)."""
    plain = [ins for _, ins, _ in run]
    if len(run) < 2:
        return plain
    made = [ins.outs[0] for ins in plain]
    inputs = list(dict.fromkeys(r for ins in plain for r in ins.refs
                                if type(r) is int and r not in made))
    end = run[-1][0]
    outs = [s for s in made if reads.get(s, -1) > end]
    name = f"fused_{k}"
    args = ", ".join(program._name(s) for s in inputs)
    rets = ", ".join(f"v{s}" for s in outs)
    source = "\n".join([f"def {name}({args}):", *(f"    {line}" for _, _, line in run),
                        f"    return {rets}", ""])
    kernel = plain[0].b.fuse(_maker(name, source), f"xad_{name}")
    if kernel is None or not outs:
        return plain
    listing = [f"{rets} = {name}({args})  # one kernel, {len(run)} operations:",
               *(f"    {program._describe(i, ins)}" for i, ins, _ in run)]
    fused = Fused(kernel, source, "\n".join(listing))
    return [Instr("call", launch, tuple(inputs), tuple(outs), {"fused": fused}, plain[0].b,
                  name, npos=len(inputs))]


def _maker(name: str, source: str) -> Any:
    def make(xp: Any) -> Any:
        ns = {"xp": xp}
        exec(compile(source, f"<xad.compile {name}>", "exec"), ns)  # noqa: S102
        return ns[name]
    return make


class Fused:
    """One region's fused kernel, its generated source and its listing (for
    :meth:`Program.text`)."""

    def __init__(self, kernel: Any, source: str, listing: str) -> None:
        self.kernel, self.source, self.listing = kernel, source, listing

    def __repr__(self) -> str:
        return f"<fused kernel\n{self.source}>"


def launch(b: Any, *arrays: Any, fused: Fused) -> Any:
    """Run a region's kernel (the program's call of a fused instruction)."""
    return fused.kernel(*arrays)
