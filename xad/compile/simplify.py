"""Simplifications of a recorded program that keep every result bit for bit.

- **Common subexpressions**: an ``Op`` instruction with the same operation, backend,
  operands and parameters as an earlier one reuses the earlier result (the MSE gradient's
  ``c * d`` computed for both operands of its product). Only pure operations merge, never
  across a host call or an in-place write (either may have changed an operand), and never
  where the result, or memory it shares, is written in place, becomes a tensor's data or
  ``.grad``, or is returned (two tensors must not come to share one array).
- **Products by one**: ``x * 1`` (a Python 1, or a constant array of ones, as the seed of
  a gradient folds to) with a result of ``x``'s shape and dtype is ``x``, where nothing
  changes ``x`` while the product is read (NumPy only: it reads the constant's values).
- **Implicit broadcasting**: ``+ - * /`` broadcast their operands themselves, so an operand
  made by ``broadcast_to`` is replaced by the array it broadcast, where another operand
  already has the result's full shape (so the result's shape and memory layout are those
  eager mode made). The ``broadcast_to`` then usually has no reader left and is dropped
  (NumPy's costs ~5-10 µs a call on small arrays, more than the product it feeds).

Both are exact: the same elementwise operations on the same values, in the same order.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..backend import takes_out
from ..ops.elementwise import Add, Divide, Multiply, Subtract
from ..ops.shape import BroadcastTo
from .recorder import Instr

__all__ = ["simplify", "memory_owner"]

_BROADCASTING = (Add, Subtract, Multiply, Divide)


def simplify(instrs: list[Instr], arrays: list[Any], returned: list[int],
             const: set[int]) -> list[Instr]:
    """``instrs`` with common subexpressions merged, products by one dropped and explicit
    broadcasts made implicit. ``arrays``: the recorded array of every slot (shapes, values
    of constants, which memory each shares); ``returned``: the slots the program returns;
    ``const``: the slots whose values never change."""
    pinned = _pinned_memory(instrs, arrays, returned)
    made_by = {s: ins for ins in instrs for s in ins.outs}
    stable = _Stable(instrs, arrays)
    same: dict[int, int] = {}
    seen: dict[tuple, Instr] = {}
    out = []
    for i, ins in enumerate(instrs):
        refs = tuple(same.get(r, r) if type(r) is int else r for r in ins.refs)
        if refs != ins.refs:
            ins = dataclasses.replace(ins, refs=refs)
        if ins.kind == "host" or ins.target is not None:
            seen.clear()  # operands may have changed: nothing earlier is reused
        elif ins.kind == "op":
            ins = _implicit_broadcast(ins, arrays, made_by, same)
            x = _times_one(ins, arrays, const)
            if x is not None and memory_owner(arrays[ins.outs[0]]) not in pinned \
                    and stable(x, i, ins.outs[0]):
                same[ins.outs[0]] = x
                continue
            key = _key(ins)
            earlier = seen.get(key) if key is not None else None
            if earlier is not None and not any(memory_owner(arrays[s]) in pinned
                                               for s in (*ins.outs, *earlier.outs)):
                same.update(zip(ins.outs, earlier.outs))
                continue
            if key is not None:
                seen[key] = ins
        out.append(ins)
    return out


def _times_one(ins: Instr, arrays: list[Any], const: set[int]) -> int | None:
    """The operand ``x`` where ``ins`` is ``x * 1`` (a Python 1, or a constant array of
    ones) with a result of ``x``'s own shape and dtype, so equal to ``x`` bit for bit."""
    if ins.fn is not Multiply or len(ins.refs) != 2:
        return None
    out = arrays[ins.outs[0]]
    for one, x in (ins.refs, ins.refs[::-1]):
        if type(x) is not int or arrays[x].shape != out.shape or arrays[x].dtype != out.dtype:
            continue
        if type(one) is not int and type(one[1]) in (int, float) and one[1] == 1 \
                or type(one) is int and one in const and _all_ones(ins.b, arrays[one]):
            return x
    return None


def _all_ones(b: Any, a: Any) -> bool:
    """Whether constant ``a`` holds only ones, read where that is free: host arrays with
    ufuncs (NumPy; a device backend would pay a transfer, so it is never asked)."""
    return takes_out(b.xp) and bool(b.xp.all(a == 1))


class _Stable:
    """Whether an array ``x`` keeps its values from instruction ``i`` to the last read of
    slot ``out`` (no host call and no in-place write of ``x``'s memory in between), so
    that ``out`` may read ``x`` itself instead of a copy. Memory from outside the program
    (arguments, tensors from before the call, and views of them) may overlap differently
    at the next call, so any in-place write touching it counts as a change of it."""

    def __init__(self, instrs: list[Instr], arrays: list[Any]) -> None:
        self.arrays = arrays
        self.last: dict[int, int] = {}
        self.changes: list[tuple[int, int | None]] = []  # (position, memory or None: all)
        made = {s for ins in instrs for s in ins.outs}
        self.outside = {memory_owner(a) for s, a in enumerate(arrays) if s not in made}
        for i, ins in enumerate(instrs):
            for r in ins.refs:
                if type(r) is int:
                    self.last[r] = i
            if ins.kind == "host":
                self.changes.append((i, None))
            elif ins.target is not None:
                m = memory_owner(arrays[ins.target])
                self.changes.append((i, None if m in self.outside else m))

    def __call__(self, x: int, i: int, out: int) -> bool:
        mem: int | None = memory_owner(self.arrays[x])
        end = self.last.get(out, i)
        if mem in self.outside:
            mem = None  # any change may reach it
        return not any(i < j <= end and (m is None or mem is None or m == mem)
                       for j, m in self.changes)


def memory_owner(a: Any) -> int:
    """The id of the object owning ``a``'s memory (the end of its ``.base`` chain)."""
    while getattr(a, "base", None) is not None:
        a = a.base
    return id(a)


def _pinned_memory(instrs: list[Instr], arrays: list[Any], returned: list[int]) -> set[int]:
    """The memory that is written in place, held by a tensor, or returned."""
    slots = set(returned)
    for ins in instrs:
        if ins.target is not None:
            slots.add(ins.target)
        if ins.kind in ("bind", "grad"):
            slots.update(r for r in ins.refs if type(r) is int)
    return {memory_owner(arrays[s]) for s in slots}


def _key(ins: Instr) -> tuple | None:
    """What makes two ``Op`` instructions compute the same thing; None where a parameter
    cannot be compared (an unhashable object)."""
    try:
        params = tuple(sorted((k, _value(v)) for k, v in ins.params.items()))
        key = (ins.fn, id(ins.b), ins.fix, ins.npos, len(ins.outs),
               tuple(r if type(r) is int else ("k", _value(r[1])) for r in ins.refs), params)
        hash(key)
    except TypeError:
        return None
    return key


def _value(v: Any) -> Any:
    """``v`` with its type, so that ``1``, ``1.0`` and ``True`` (and ``0.0``, ``-0.0``)
    stay apart; containers elementwise."""
    if type(v) in (tuple, list):
        return (type(v), tuple(_value(x) for x in v))
    if type(v) is float and (v == 0 or not math.isfinite(v)):
        return (float, repr(v))
    return (type(v), v)


def _implicit_broadcast(ins: Instr, arrays: list[Any], made_by: dict[int, Instr],
                        same: dict[int, int]) -> Instr:
    """``ins`` (``+ - * /``) reading the arrays its ``broadcast_to`` operands broadcast,
    where that leaves the result's shape as it was and another operand has that shape
    (under the name ``same`` gives it: a broadcast array may itself have been merged)."""
    if ins.fn not in _BROADCASTING or len(ins.outs) != 1:
        return ins
    shape = tuple(arrays[ins.outs[0]].shape)
    refs = list(ins.refs)
    for j, r in enumerate(refs):
        maker = made_by.get(r) if type(r) is int else None
        if maker is None or maker.fn is not BroadcastTo or type(maker.refs[0]) is not int:
            continue
        others = [tuple(arrays[o].shape) for k, o in enumerate(refs) if k != j and type(o) is int]
        if shape in others and _broadcast(others + [tuple(arrays[maker.refs[0]].shape)]) == shape:
            refs[j] = same.get(maker.refs[0], maker.refs[0])
    return ins if tuple(refs) == ins.refs else dataclasses.replace(ins, refs=tuple(refs))


def _broadcast(shapes: list[tuple]) -> tuple | None:
    """The standard's broadcast of ``shapes``; None where they do not broadcast."""
    n = max(len(s) for s in shapes)
    out = []
    for dims in zip(*[(1,) * (n - len(s)) + s for s in shapes]):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)
