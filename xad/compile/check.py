"""``xad.compile(f, check=True)`` (or ``XAD_COMPILE_CHECK=1``): every replay checked against
eager mode.

A replay is right exactly when the call, run eagerly, would have made the same recording:
the same instructions on the same slots (arguments by position, the same tensors from
outside, the same constants bit for bit, the same Python numbers and parameters). So each
call a program fits runs eagerly under a new recording (the eager call is the one whose
results and effects count), and that recording's :func:`trace` is compared with the
program's; the first instruction that differs is named in a ``RuntimeError``. A program
without effects (no writes to tensors, host calls, random draws or in-place changes) is
also replayed first on the same arguments, and its results compared with eager's bit for
bit.
"""

from __future__ import annotations

import weakref
from typing import Any

from ..tensor import Tensor
from .program import _DYNAMIC
from .recorder import ArgRef, Recorder, recording

__all__ = ["trace", "check_call", "RETRACE"]

RETRACE = object()  # a replay stopped at a data-dependent shape it was not recorded with


def trace(rec: Recorder, outs: Any = None) -> tuple[list, dict]:
    """The recording ``rec`` as comparable steps ``(description, key, data-dependent result
    shapes or None)`` (returned slots last, where ``outs`` is given) and its constants
    ``{slot: (array, backend)}``."""
    backend = {id(t._array): t._backend for t in rec.fresh.values()}
    steps: list[tuple] = []
    for k, ins in enumerate(rec.instrs):
        refs = tuple(_slot(rec, r) if type(r) is int else ("k", _canon(r[1], rec))
                     for r in ins.refs)
        target = None if ins.target is None else _slot(rec, ins.target)
        key = (ins.kind, _canon(ins.fn, rec), ins.label, refs, _canon(ins.params, rec),
               len(ins.outs), target, _holder(ins.holder))
        steps.append((f"instruction {k}: {ins.label or ins.kind}", key, _shapes(rec, ins)))
    if outs is not None:
        steps.append(("the returned values", tuple(
            None if o is None else _slot(rec, rec.ref(o)) for o in outs), None))
    consts = {s: (a, backend.get(id(a))) for s, (a, kind) in
              enumerate(zip(rec.arrays, rec.kinds)) if kind[0] == "const"}
    return steps, consts


def check_call(cf: Any, e: Any, tensors: Any, args: tuple, kwargs: dict,
               flatten: Any) -> Any:
    """Run compiled function ``cf``'s call eagerly beside its program ``e`` (see the module
    docstring; ``flatten(tree, leaves)`` lists a result's leaves); return the eager result
    or raise on the first difference."""
    p = e.program
    pure = not any(i.kind in ("bind", "grad", "host", "draw") or i.target is not None
                   for i in p.instrs)
    replayed = e.replay(tensors, cf._warn) if pure else None
    if replayed is RETRACE:
        replayed = None
    rec = Recorder(list(tensors), graphs=cf.cuda_graphs)  # the recording's flag: an
    # optimiser takes the same path (its numbers on the device under CUDA graphs)
    prev = recording(rec)
    try:
        result = cf.fn(*args, **kwargs)
    finally:
        recording(prev)
    outs: list = []
    flatten(result, outs)
    name = getattr(cf.fn, "__qualname__", repr(cf.fn))
    steps, consts = trace(rec, [o if isinstance(o, Tensor) else None for o in outs])
    if rec.problem is not None:
        raise RuntimeError(f"xad.compile check: {name}: this call's eager run could not be "
                           f"recorded ({rec.problem}), but a program was replayed for it")
    diff = _first_difference(e.trace, (steps, consts))
    if diff is RETRACE:  # a replay would have stopped there and recorded again
        return result
    if diff is None and replayed is not None:
        diff = _results_differ(replayed, result, flatten)
    if diff is not None:
        raise RuntimeError(f"xad.compile check: {name}: the replay differs from eager mode "
                           f"at {diff}")
    return result


def _first_difference(old: tuple, new: tuple) -> Any:
    (steps_a, consts_a), (steps_b, consts_b) = old, new
    for k in range(max(len(steps_a), len(steps_b))):
        if k >= len(steps_a) or k >= len(steps_b):
            what = (steps_b if k >= len(steps_a) else steps_a)[k][0]
            return f"{what} (only one of the two runs has it)"
        (what, a, shapes_a), (_, b, shapes_b) = steps_a[k], steps_b[k]
        if shapes_a != shapes_b:
            return RETRACE
        if a != b:
            return f"{what} (recorded {a!r}, now {b!r})"
        for r in (*(a[3] if what.startswith("instruction") else ()),):
            if type(r) is tuple and r[0] == "const" and not _same_const(
                    consts_a[r[1]], consts_b.get(r[1])):
                return f"{what}: its constant operand v{r[1]} has other values now"
    return None


def _shapes(rec: Recorder, ins: Any) -> tuple | None:
    """``ins``'s result shapes where they depend on values (see ``Program.dynamic``)."""
    masked = ins.kind == "op" and ins.label == "getitem" and any(
        "bool" in str(rec.arrays[s].dtype) for s in ins.refs[ins.npos:] if type(s) is int)
    if ins.label in _DYNAMIC or masked:
        return tuple(tuple(rec.arrays[o].shape) for o in ins.outs)
    return None


def _same_const(a: tuple, b: tuple | None) -> bool:
    if b is None:
        return False
    (x, bx), (y, by) = a, b
    if x.shape != y.shape or x.dtype != y.dtype or bx is None or by is None:
        return x is y
    return _bits(bx, x) == _bits(by, y)


def _bits(b: Any, a: Any) -> bytes:
    return b.to_numpy(a).tobytes()


def _results_differ(replayed: Any, result: Any, flatten: Any) -> str | None:
    ra: list = []
    rb: list = []
    flatten(replayed, ra)
    flatten(result, rb)
    for j, (x, y) in enumerate(zip(ra, rb)):
        if isinstance(x, Tensor) and isinstance(y, Tensor) and (
                x.shape != y.shape or x.dtype != y.dtype
                or _bits(x._backend, x._array) != _bits(y._backend, y._array)):
            return f"returned value {j} (shape {y.shape}, {y.dtype}): its values differ"
    return None


def _slot(rec: Recorder, s: int) -> tuple:
    """Slot ``s`` as what it stands for, comparable across recordings."""
    kind = rec.kinds[s]
    if kind[0] == "live":
        return ("live", id(kind[1]()), kind[2][:3])
    if kind[0] == "grad":
        return ("grad", _holder(kind[1]))
    if kind[0] == "const":
        return ("const", s)
    return kind


def _holder(h: Any) -> Any:
    if h is None:
        return None
    if type(h) is ArgRef:
        return ("arg", h.index)
    return ("tensor", id(h()))


def _canon(v: Any, rec: Recorder) -> Any:
    """``v`` comparable with ``==`` and its type kept (``1``, ``1.0``, ``True``, ``-0.0``
    apart; a tensor by the slot of its array, a NumPy scalar by its bits, other arrays and
    objects by identity)."""
    t = type(v)
    if t in (tuple, list):
        return (t, tuple(_canon(x, rec) for x in v))
    if t is dict:
        return (dict, tuple((k, _canon(x, rec)) for k, x in v.items()))
    if t is float:
        return (float, v.hex() if v == v else repr(v))
    if isinstance(v, Tensor):
        s = rec.slot_of.get(id(v._array))
        return ("tensor", id(v) if s is None else _slot(rec, s))
    if not isinstance(v, type) and hasattr(v, "tobytes") and not hasattr(v, "__setitem__"):
        return (t, str(v.dtype), v.tobytes())  # a NumPy scalar (Backend.scalar): its bits
    if isinstance(v, weakref.ref) or hasattr(v, "__array_namespace__"):
        return ("object", id(v))
    return (t, v)
