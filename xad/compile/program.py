"""A recorded program made runnable: checked, simplified, and generated as one Python
function of arrays.

From the recorder's instructions: values made only from constants are folded (computed
once, in the first call); common subexpressions are merged and explicit broadcasts made
implicit (:mod:`.simplify`); instructions whose results nothing uses, and writes to tensors
that no longer exist, are dropped; the rest becomes straight-line Python source, one line per
array call, each slot a local variable deleted after its last use (so memory is freed as
early as in eager mode). One-expression forwards are written inline with the backend's
functions bound as globals; on NumPy Python-scalar operands become 0-d arrays made once
and elementwise results are written into dead, exclusively owned buffers (``out=``,
:class:`_Memory`). :meth:`Program.text` prints it.
"""

from __future__ import annotations

import ast
import functools
import inspect
import math
import textwrap
from collections.abc import Callable
from typing import Any

from ..backend import takes_out
from ..ops.inplace import _refresh_views
from ..tensor import Tensor
from .recorder import ArgRef, Instr, Recorder, Slot
from .simplify import memory_owner, simplify

__all__ = ["Program", "ShapeChanged", "Unsupported"]


class Unsupported(Exception):
    """The recording cannot be replayed faithfully (the message says why)."""


class ShapeChanged(Exception):  # noqa: N818 (a signal, not an error)
    """A replay's data-dependent shape (``nonzero``, ``unique_*``, a boolean mask) differs
    from the recording's: nothing was changed yet, the call needs another program."""


_DYNAMIC = {"nonzero", "unique_values", "unique_counts", "unique_inverse", "unique_all"}


class Program:
    """The replayable form of one recording; call :meth:`run` with the argument arrays."""

    def __init__(self, rec: Recorder, outs: list[Tensor | None],
                 fuse: Callable[[Program], list[Instr]] | None = None,
                 library_calls: bool = False) -> None:
        self.rec = rec
        self.args: Any = ()  # the current call's argument tensors (set around each run)
        self.library_calls = library_calls  # a library op is a call f{i}, never inline
        self.out_slots = [None if t is None else rec.ref(t) for t in outs]
        self.out_b = {s: t._backend for s, t in zip(self.out_slots, outs) if t is not None}
        self.lives = self._check_lives()
        self.const = self._fold()
        returned = [s for s in self.out_slots if s is not None]  # never merged away
        self.instrs = self._needed(simplify(rec.instrs, rec.arrays, returned, self.const))
        self._check_dynamic()
        if fuse is not None:  # fusion.fuse: elementwise regions become one kernel each
            self.instrs = fuse(self)
        self.ns: dict[str, Any] = {"_Tensor": Tensor, "_write": _write, "_leave": _leave,
                                   "_ShapeChanged": ShapeChanged}
        self.grad_reads: set[str] = set()  # the ``t{s}`` names whose ``.grad`` is read
        self.source = self._generate()
        exec(compile(self.source, "<xad.compile program>", "exec"), self.ns)  # noqa: S102
        self.run = self.ns["program"]
        self.guards = [(r, meta) for _, (r, meta) in self.lives.items()]
        self.grad_guards = [(self.resolve(r), none) for kind, r, none in rec.guards
                            if kind == "grad_none"]
        self.value_guards = [(r, v) for kind, r, v in rec.guards if kind == "value"]
        self.modules = list(rec.modules.values())
        self.bumps = [(self.resolve(h), n) for h, n in rec.version_changes()]
        self.writes = rec.writes  # (for CUDA graphs: the memory a capture must copy back)
        self.arg_writes = {rec.kinds[s][1] for s in rec.writes if rec.kinds[s][0] == "arg"}
        del self.rec  # the recording's arrays are no longer needed (constants are in ns)

    def resolve(self, holder: Any) -> Any:
        """A function returning the tensor ``holder`` names at the current call (a weak
        reference stays one; an argument position reads :attr:`args`)."""
        if type(holder) is not ArgRef:
            return holder
        i = holder.index
        return lambda: self.args[i]

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

    def dynamic(self, ins: Instr) -> bool:
        """Whether ``ins``'s result shapes depend on its operands' values (``nonzero``,
        ``unique_*``, indexing by a boolean mask)."""
        if ins.label in _DYNAMIC:
            return True
        if ins.kind != "op" or ins.label != "getitem" or ins.npos == len(ins.refs):
            return False
        return any("bool" in str(self.rec.arrays[s].dtype) for s in ins.refs[ins.npos:]
                   if type(s) is int)

    def _check_dynamic(self) -> None:
        """A replay checks each data-dependent shape where it is made; only while nothing
        has been written can it stop there and leave the call to another program."""
        effects = [k for k, ins in enumerate(self.instrs)
                   if ins.kind in ("host", "draw", "bind", "grad") or ins.target is not None]
        for k, ins in enumerate(self.instrs):
            if effects and k > effects[0] and self.dynamic(ins):
                raise Unsupported(f"a data-dependent shape ({ins.label}) is computed after "
                                  f"an in-place change, a host call or a random draw")

    def _needed(self, instrs: list[Instr]) -> list[Instr]:
        """The instructions to run, in order: those with effects outside the program (writes
        to live tensors, draws, host calls, in-place kernels), data-dependent shapes (Python
        may have read them: a replay checks each), and what they and the outputs use."""
        need = {s for s in self.out_slots if s is not None}
        keep = []
        for ins in reversed(instrs):
            if ins.kind == "op" and ins.outs[0] in self.const:
                continue
            effect = (ins.kind in ("host", "draw") or ins.target is not None
                      or ins.kind in ("bind", "grad") and (type(ins.holder) is ArgRef
                                                            or ins.holder() is not None))
            if effect or self.dynamic(ins) or any(o in need for o in ins.outs):
                keep.append(ins)
                need.update(r for r in ins.refs if type(r) is int)
        keep.reverse()
        return keep

    # ----- code ----------------------------------------------------------------------------
    def _generate(self) -> str:
        lines = ["def program(A):"]
        self.listing: list[str] = []
        self.bound: dict[int, str] = {}
        self.reuse = _Memory(self).plan()
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
            if self.dynamic(ins):
                for o in ins.outs:
                    shape = tuple(self.rec.arrays[o].shape)
                    lines.append(f"    if tuple(v{o}.shape) != {shape!r}: raise _ShapeChanged")
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
        rets = ", ".join("None" if s is None else self._returned(s) for s in self.out_slots)
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
        if s in self.const:  # a returned one: a copy (the first call's result is the user's)
            a = self.rec.arrays[s]
            self.ns[f"c{s}"] = _copy(self.out_b[s], a) if s in self.out_b else a
            return None
        if kind[0] == "arg":
            return f"A[{kind[1]}]"
        if kind[0] == "live":
            self.ns[f"t{s}"] = kind[1]
            return f"t{s}()._array"
        if kind[0] == "grad":
            self.ns[f"t{s}"] = self.resolve(kind[1])
            self.grad_reads.add(f"t{s}")
            return f"t{s}()._grad._array"
        return None

    def _returned(self, s: int) -> str:
        """Slot ``s`` as returned: a constant is copied (a caller may change the result)."""
        if s not in self.const:
            return f"v{s}"
        b = self.out_b[s]
        copy = self._bind(functools.partial(_copy, b), "copy")
        return f"{copy}(c{s})"

    def _name(self, s: int) -> str:
        return f"c{s}" if s in self.const else f"v{s}"

    def _bind(self, obj: Any, hint: str) -> str:
        """A global name of the generated code for ``obj`` (a backend function, a constant
        parameter), the same name for the same object."""
        name = self.bound.get(id(obj))
        if name is None:
            name = self.bound[id(obj)] = f"{hint}_{len(self.bound)}"
            self.ns[name] = obj
        return name

    def _arg(self, i: int, j: int, r: Any, hoist: bool = True) -> str:
        if type(r) is int:
            return self._name(r)
        value = r[1]
        ins = self.instrs[i]
        if hoist and j < ins.npos and self._hoists(ins):
            like = self._like(ins)
            zero_d = _zero_d(ins.b, value, like)
            if zero_d is not None:  # a 0-d array: NumPy converts a Python scalar every call
                self.ns[f"k{i}_{j}"] = zero_d
                return f"k{i}_{j}"
        if type(value) in (int, bool) or type(value) is float and math.isfinite(value):
            return repr(value)
        self.ns[f"k{i}_{j}"] = value
        return f"k{i}_{j}"

    def _like(self, ins: Instr) -> Any:
        """The recorded array of ``ins``'s first array operand (whose dtype a Python-scalar
        operand takes as a 0-d array)."""
        return next(self.rec.arrays[s] for s in ins.refs[:ins.npos] if type(s) is int)

    def _hoists(self, ins: Instr) -> bool:
        """Whether ``ins``'s Python-scalar operands may be passed as 0-d arrays of its array
        operands' dtype: an ``Op`` on ufuncs (NumPy, CuPy: the scalar is converted to that
        dtype anyway) whose forward is an operator expression without ``**`` or converts
        scalars itself (``_arr``), with a result of that dtype."""
        if ins.kind != "op" or not _ufuncs(ins.b) or len(ins.outs) != 1:
            return False
        fn = ins.fn.forward
        found = _expression(fn)
        if found is None and "_arr" not in getattr(fn, "__code__", _NO_CODE).co_names:
            return False
        if found is not None and any(isinstance(n, ast.Pow) for n in ast.walk(found[1])):
            return False
        dtypes = {self.rec.arrays[s].dtype for s in ins.refs[:ins.npos] if type(s) is int}
        out = self.rec.arrays[ins.outs[0]].dtype
        return len(dtypes) == 1 and out in (*dtypes, ins.b.xp.bool)

    def _line(self, i: int, ins: Instr) -> str:
        args = ", ".join(self._arg(i, j, r) for j, r in enumerate(ins.refs))
        outs = ", ".join(f"v{s}" for s in ins.outs) + ("," if len(ins.outs) == 1 else "")
        if ins.kind in ("op", "call"):
            fn = self._forward(ins) if ins.kind == "op" else ins.fn
            expr = None if self.is_library(ins) else self._inline(i, ins, fn)
            if expr is not None:
                return f"v{ins.outs[0]} = {expr}"
            self.ns[f"f{i}"] = _kernel(fn, ins)
            call = f"f{i}({args})"
            if ins.fix:
                self.ns[f"e{i}"] = ins.b.ensure_array
                call = f"[e{i}(a) for a in {call}]" if len(ins.outs) > 1 else f"e{i}({call})"
            if len(ins.outs) == 1 and not ins.many:
                return f"{outs.rstrip(',')} = {call}"
            return f"{outs} = {call}"
        self.ns[f"h{i}"] = self.resolve(ins.holder)
        if ins.kind == "bind":
            if ins.params.get("leave"):  # ``t.data = ...``: its views keep the old storage
                return f"_leave(h{i}()); _write(h{i}(), {ins.fn!r}, {args})"
            views = ", True" if ins.params.get("views") else ""
            return f"_write(h{i}(), {ins.fn!r}, {args}{views})"
        if ins.kind == "grad":
            how = "_keep_grad" if ins.params.get("keep") else "_set_grad_array"
            return f"_write(h{i}(), '{how}', {args or 'None'})"
        self.ns[f"f{i}"] = _again(ins)
        if ins.kind == "host":
            return f"f{i}({args})"
        return f"v{ins.outs[0]} = f{i}({args})._array"

    def is_library(self, ins: Instr) -> bool:
        """Whether ``ins`` is an operation calling a vendor library (``Op.library``) that
        this program keeps as a call ``f{i}`` of its own (for :mod:`.cuda_graph`)."""
        return self.library_calls and ins.kind == "op" and ins.fn.library

    def _forward(self, ins: Instr) -> Any:
        """The function replaying op ``ins``: its ``array_forward`` (see ``Op``) where every
        Python-scalar operand is passed as a 0-d array of the operands' dtype, else its
        ``forward``."""
        fast = getattr(ins.fn, "array_forward", None)
        if fast is None or not self._hoists(ins):
            return ins.fn.forward
        like = self._like(ins)
        if all(type(r) is int or _zero_d(ins.b, r[1], like) is not None
               for r in ins.refs[:ins.npos]):
            return fast
        return ins.fn.forward

    def _inline(self, i: int, ins: Instr, fn: Any) -> str | None:
        """``fn``'s call written inline (``v3 + v4``, ``tanh_2(v3)``, with ``out=`` where
        :class:`_Memory` found a buffer) where its body is one expression; else None."""
        found = _expression(fn) if len(ins.outs) == 1 else None
        if found is None:
            return None
        names, body = found
        values = dict(zip(names[1:], [self._arg(i, j, r) for j, r in enumerate(ins.refs)]))
        for k, v in ins.params.items():
            if type(v) is Slot:
                values[k] = self._arg(i, ins.npos + v, ins.refs[ins.npos + v])
            elif type(v) in (tuple, list) and _has_slot(v):
                return None
            elif _literal(v):
                values[k] = repr(v)
            else:
                values[k] = self._bind(v, f"k{i}")
        if any(isinstance(n, ast.Name) and n.id not in values and n.id != "b"
               for n in ast.walk(body)):
            return None
        like = self._hoists(ins) and self._like(ins)
        tree = _Substitute(self, ins.b, values, like).visit(
            ast.parse(ast.unparse(body), mode="eval"))
        reuse = self.reuse.get(i)
        if reuse is not None:
            tree.body = _with_out(tree.body, self, ins.b, f"v{reuse}")
        text = ast.unparse(tree.body)
        return f"{self._bind(ins.b.ensure_array, 'ensure')}({text})" if ins.fix else text

    # ----- reading it ----------------------------------------------------------------------
    def _describe(self, i: int, ins: Instr) -> str:
        if "fused" in ins.params and ins.kind == "call":  # its call and its operations
            return ins.params["fused"].listing
        args = ", ".join(self._arg(i, j, r, hoist=False) for j, r in enumerate(ins.refs))
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


_NO_CODE = compile("", "", "exec")
_UFUNC_OF = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide",
             ast.USub: "negative"}


def _chain(node: ast.AST) -> list[str] | None:
    """``["xp", "tanh"]`` for the expression ``b.xp.tanh``, None if it is not rooted at
    ``b``."""
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    return names[::-1] if isinstance(node, ast.Name) and node.id == "b" and names else None


@functools.cache
def _expression(fn: Any) -> tuple[list[str], ast.expr] | None:
    """``fn``'s parameter names and returned expression when its body is one ``return`` of
    Python operators and backend calls (``b.xp.tanh(x)``, ``b.xp.sum(x, axis=axis)``) over
    its parameters and literals, else None."""
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
               ast.unaryop, ast.Call, ast.keyword, ast.Attribute)
    body = func.body[0].value
    callees = {id(n) for c in ast.walk(body) if isinstance(c, ast.Call) and _chain(c.func)
               for n in ast.walk(c.func)}
    for n in ast.walk(body):
        if not isinstance(n, allowed) or id(n) not in callees and (
                isinstance(n, ast.Attribute) or isinstance(n, ast.Name) and n.id == "b"
                or isinstance(n, ast.Call) and not _chain(n.func)):
            return None
    if any(isinstance(n, ast.Call) and any(isinstance(a, ast.Starred) for a in n.args)
           for n in ast.walk(body)):
        return None
    return names, body


class _Substitute(ast.NodeTransformer):
    """Parameters replaced by the program's expressions, ``b.xp.f`` by a global bound to
    that backend's function (looked up once, not at every call)."""

    def __init__(self, program: Program, b: Any, values: dict[str, str], like: Any) -> None:
        self.program, self.b, self.values, self.like = program, b, values, like

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.parse(f"({self.values[node.id]})", mode="eval").body

    def operand(self, node: ast.expr) -> ast.expr:
        """An operand of an elementwise call: a number literal becomes a 0-d array where
        the instruction allows it (see :meth:`Program._hoists`)."""
        if isinstance(node, ast.Constant) and self.like is not False:
            zero_d = _zero_d(self.b, node.value, self.like)
            if zero_d is not None:
                return ast.Name(self.program._bind(zero_d, "k"), ast.Load())
        return self.visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        node.left, node.right = self.operand(node.left), self.operand(node.right)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        chain = _chain(node.func)
        assert chain is not None  # _expression admits only calls of b's functions
        obj = self.b
        for name in chain:
            obj = getattr(obj, name)
        node.func = ast.Name(self.program._bind(obj, chain[-1]), ast.Load())
        elementwise = getattr(obj, "nout", 0) == 1
        node.args = [self.operand(a) if elementwise else self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        return node


def _with_out(node: ast.expr, program: Program, b: Any, out: str) -> ast.expr:
    """The elementwise call ``node`` (an operator or a ufunc call) writing into ``out``."""
    if isinstance(node, (ast.BinOp, ast.UnaryOp)):
        fn = program._bind(getattr(b.xp, _UFUNC_OF[type(node.op)]), _UFUNC_OF[type(node.op)])
        args = [node.left, node.right] if isinstance(node, ast.BinOp) else [node.operand]
        node = ast.Call(ast.Name(fn, ast.Load()), args, [])
    assert isinstance(node, ast.Call)  # _elementwise: an operator, else a call
    node.keywords = [*node.keywords, ast.keyword("out", ast.Name(out, ast.Load()))]
    return node


def _has_slot(v: Any) -> bool:
    return type(v) is Slot or type(v) in (tuple, list) and any(_has_slot(x) for x in v)


def _literal(v: Any) -> bool:
    if type(v) is tuple:
        return all(_literal(x) for x in v)
    return v is None or type(v) in (int, bool, str) or type(v) is float and math.isfinite(v)


def _ufuncs(b: Any) -> bool:
    """Whether ``b``'s elementwise functions are ufuncs over mutable arrays (NumPy; CuPy's
    reach xad wrapped to run on their device, so not yet):
    they take ``out=`` and convert a Python scalar operand to the array's dtype."""
    return b is not None and b.mutable and takes_out(b.xp)


def _zero_d(b: Any, value: Any, like: Any) -> Any:
    """``value`` as a 0-d array of ``like``'s dtype where that is exactly what the ufunc
    would compute with (a float32/float64 array and a Python int or float, an integer array
    and a Python int it can hold), else None."""
    floating = like.dtype in (b.xp.float32, b.xp.float64)
    if not (type(value) in (int, float) and floating or type(value) is int and not floating
            and b.xp.isdtype(like.dtype, "integral")):
        return None
    try:
        return b.xp.asarray(value, dtype=like.dtype, device=b.device)
    except (OverflowError, ValueError, TypeError):
        return None


class _Memory:
    """Which elementwise instructions may write their result into an input's buffer
    (``out=``), on backends with ufuncs over mutable arrays.

    Slots are grouped by the memory they use: the recorded arrays' ``.base`` chains say
    which slot's buffer a view (``reshape``, a transpose) or an in-place result shares. An
    instruction ``i`` reuses input slot ``S`` when ``S`` is the fresh output of an ``Op`` or
    kernel (it owns its buffer; never an argument, a live tensor's array, a gradient read, a
    constant or a random draw), no slot sharing that buffer is returned, written into a
    tensor (``.grad``, data) or read after ``i`` (views included), no other operand of ``i``
    shares it, and the result has ``S``'s shape, dtype and strides (the layout eager mode
    made, so later reductions sum in the same order and the bits stay the same).
    """

    def __init__(self, program: Program) -> None:
        self.p = program
        self.arrays = program.rec.arrays

    def plan(self) -> dict[int, int]:
        """Instruction index -> the slot whose buffer it writes into."""
        instrs = self.p.instrs
        if not any(_ufuncs(ins.b) for ins in instrs):
            return {}
        group, last = self._groups(), self._last_uses()
        made_by = {s: ins for ins in instrs for s in ins.outs}
        members: dict[int, set[int]] = {}
        for s, g in group.items():
            members.setdefault(g, set()).add(s)
        plan = {}
        for i, ins in enumerate(instrs):
            into = self._candidate(i, ins, group, members, last, made_by)
            if into is not None:  # the result, and every later view of it, in into's buffer
                plan[i] = into
                for m in members.pop(group[ins.outs[0]]):
                    group[m] = group[into]
                    members[group[into]].add(m)
        return plan

    def _groups(self) -> dict[int, int]:
        """Slot -> the id of the object owning its memory (the end of its ``.base`` chain)."""
        return {s: memory_owner(a) for s, a in enumerate(self.arrays)}

    def _last_uses(self) -> dict[int, float]:
        """Slot -> the last instruction reading or writing it (inf: it outlives the
        program: returned, or held by a tensor)."""
        last: dict[int, float] = {s: math.inf for s in self.p.out_slots if s is not None}
        for i, ins in enumerate(self.p.instrs):
            slots = [r for r in ins.refs if type(r) is int] + list(ins.outs)
            if ins.target is not None:
                slots.append(ins.target)
            for s in slots:
                keep = ins.kind in ("bind", "grad") or last.get(s) == math.inf
                last[s] = math.inf if keep else i
        return last

    def _candidate(self, i: int, ins: Instr, group: dict, members: dict, last: dict,
                   made_by: dict) -> int | None:
        if ins.fix or ins.target is not None or not self._elementwise(ins):
            return None
        out = self.arrays[ins.outs[0]]
        if getattr(out, "base", 0) is not None:  # eager made no fresh array: leave it
            return None
        operands = [r for r in ins.refs if type(r) is int]
        for s in dict.fromkeys(operands):
            a, maker = self.arrays[s], made_by.get(s)
            if maker is None or maker.kind not in ("op", "call") or s in self.p.const \
                    or not hasattr(a, "base") or a.base is not None \
                    or (a.shape, a.dtype, a.strides) != (out.shape, out.dtype, out.strides):
                continue
            if any(self._pinned(m, made_by) or last.get(m, -1) > i
                   for m in members[group[s]]) \
                    or any(group[r] == group[s] for r in operands if r != s):
                continue
            return s
        return None

    def _pinned(self, s: int, made_by: dict) -> bool:
        """Whether slot ``s``'s buffer is not the program's to overwrite."""
        if self.p.rec.kinds[s][0] != "op" or s in self.p.const:
            return True  # an argument, a live tensor's array, a gradient read, a constant
        maker = made_by.get(s)
        return maker is not None and maker.kind not in ("op", "call")  # a random draw

    @staticmethod
    def _elementwise(ins: Instr) -> bool:
        """Whether ``ins`` is one ufunc call written inline: ``x * y``, ``-x``,
        ``b.xp.tanh(x)`` over its operands."""
        if ins.kind not in ("op", "call") or len(ins.outs) != 1 or not _ufuncs(ins.b):
            return False
        found = _expression(ins.fn.forward if ins.kind == "op" else ins.fn)
        if found is None:
            return False
        body = found[1]
        leaves = (ast.Name, ast.Constant)
        if isinstance(body, ast.BinOp):
            return type(body.op) in _UFUNC_OF and all(
                isinstance(x, leaves) for x in (body.left, body.right))
        if isinstance(body, ast.UnaryOp):
            return type(body.op) in _UFUNC_OF and isinstance(body.operand, leaves)
        if not isinstance(body, ast.Call) or body.keywords \
                or not all(isinstance(x, leaves) for x in body.args):
            return False
        chain = _chain(body.func)
        assert chain is not None  # _expression admits only calls of b's functions
        fn = ins.b
        for name in chain:
            fn = getattr(fn, name)
        return getattr(fn, "nout", 0) == 1 and getattr(fn, "nin", 0) == len(body.args)


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
    if type(ins.holder) is ArgRef:
        return f"A[{ins.holder.index}]"
    t = ins.holder()
    return "<dead tensor>" if t is None else f"tensor{tuple(t.shape)}"


def _write(t: Tensor | None, how: str, array: Any, views: bool = False) -> None:
    """``t.how(array)`` (``_set_data``, ``_rebind``, ``_set_grad_array``), unless ``t``, a
    tensor from before the call, no longer exists (nothing can read what it was given).
    Its version stays: the replay adds the changes eager mode counted once, after the run
    (``version_changes``; a change through ``.data`` is written but never counted).
    ``views``: eager mode then remade ``t``'s views (JAX: ``v = x[0]`` held by the caller
    kept ``x``'s old values under replay before)."""
    if t is not None:
        if how in ("_set_grad_array", "_keep_grad"):
            t._set_grad_array(array, how == "_keep_grad")
        else:
            t._replayed(how, array)
            if views:  # (a CUDA graph's dry run notes it for after each launch)
                _refresh_views(t) if isinstance(t, Tensor) else t.then(_refresh_views)


def _leave(t: Tensor | None) -> None:
    """``t._leave_views()``, unless ``t``, from before the call, no longer exists."""
    if t is not None:
        t._leave_views()


def _copy(b: Any, a: Any) -> Any:
    """A copy of the constant ``a`` (returned fresh at every call)."""
    with b.on_device():
        return b.xp.asarray(a, copy=True)


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
