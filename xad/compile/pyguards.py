"""Guards on the Python values a compiled function's first call reads: the closure cells and
globals its code (and every Python function it calls outside xad and the libraries) names,
and what those hold (dict entries, list and tuple items, attributes of plain objects and
modules), to a few levels.

A replay freezes every Python value the recording used (``x * scale`` records ``scale`` as a
number). So, while a call is recorded, :class:`Reads` watches each Python frame it enters
(``sys.settrace``, as each frame starts; the frames of xad, the standard library and site-
packages are skipped, and so are host calls, which run again anyway) and notes, *as the
frame starts*, the value of every global the frame's code names, of its closure cells, and,
below the objects so reached (and the frame's arguments that are such objects: ``self``),
the entries and attributes its code can read: attribute names its code names, dict keys and
indices that are its constants, and every entry (up to :data:`WHOLE` per container) where it
iterates or subscripts with a computed key. Each is a *guard*: a C-level read (``dict.get``
of a globals dict, an instance ``__dict__`` or a dict; a cell's contents; a list item) and
the value it gave, compared at every later call by identity, and where the identity differs,
Python scalars (and tuples of them) by type and exact bits (``-0.0`` is not ``0.0``);
anything else by identity only. A call that no longer matches records again, as
``torch.compile`` does on its guards.

What the guards do not see: attributes read with a computed name outside ``getattr``/``vars``
in the frame's own code, entries past :data:`WHOLE` of a container read with a computed key,
anything more than :data:`DEPTH` levels below a global, a cell or an argument, the closure of
a function reached only through a local variable or a ``functools.partial``, objects without
an instance ``__dict__`` (``__slots__``, C types), what objects hold past :data:`MOST`
guards, and state that code outside the user's
changes during the call before a frame first reads it, where no host call ran before. A
value that the call itself changes (``counter["n"] += 1``, a global assigned) cannot be
replayed: see :meth:`Reads.changed`.
"""

from __future__ import annotations

import dis
import functools
import importlib.util
import operator
import os
import struct
import sys
import sysconfig
import types
import weakref
from collections.abc import Callable
from typing import Any

from ..tensor import Tensor

__all__ = ["Reads", "stale", "library", "scalar_key"]

WHOLE = 64  # entries guarded of a container read with computed keys (or iterated)
DEPTH = 3  # levels guarded below a global, a cell or an argument
MOST = 256  # guards per program; past them, what objects hold is not guarded (by identity)
_MISSING = object()
_SCALARS = (int, float, bool, str, bytes, complex, type(None))
_ITERATES = frozenset(("GET_ITER", "DICT_MERGE", "DICT_UPDATE", "LIST_EXTEND",
                       "UNPACK_SEQUENCE", "UNPACK_EX", "CALL_FUNCTION_EX"))
_WHOLE_NAMES = frozenset(("items", "values", "keys", "get", "getattr", "vars", "copy",
                          "pop", "setdefault", "__getitem__"))


def _skipped_dirs() -> tuple[str, ...]:
    """The directories whose code is not the user's: xad's, xad_backends', the standard
    library's, site-packages and what :func:`library` added."""
    paths = sysconfig.get_paths()
    dirs = {paths["stdlib"], paths["purelib"], paths["platlib"], *_LIBRARIES,
            os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    spec = importlib.util.find_spec("xad_backends")
    if spec is not None and spec.origin is not None:
        dirs.add(os.path.dirname(spec.origin))
    return tuple(os.path.join(d, "") for d in dirs) + ("<frozen",)


_SKIPPED: tuple[str, ...] | None = None
_LIBRARIES: list[str] = []
_INFO: dict[types.CodeType, tuple] = {}  # per code object seen: (its file, its _Code)


def library(path: str) -> None:
    """Treat the code under directory ``path`` as an array library's (as site-packages):
    the values it reads are not guarded (an emulator's kernel counters, a backend's own
    state, which change at every call). Used by the CuPy emulator of the tests.

    Example:
        >>> from xad.compile import pyguards
        >>> pyguards.library("/opt/my_array_emulator")
    """
    global _SKIPPED
    _LIBRARIES.append(os.path.join(os.path.abspath(path), ""))
    _SKIPPED = None
    _INFO.clear()


class _Code:
    """What one user code object can read: names, constant keys, and whether it reads
    containers whole (iterates, subscripts with a computed key)."""

    __slots__ = ("names", "consts", "whole", "free", "args")

    def __init__(self, code: types.CodeType) -> None:
        self.names = code.co_names
        self.consts = frozenset(c for c in code.co_consts if type(c) in (str, int))
        ops = list(dis.get_instructions(code))
        self.whole = any(i.opname in _ITERATES or i.opname == "BINARY_SUBSCR" and (
            k == 0 or ops[k - 1].opname != "LOAD_CONST") for k, i in enumerate(ops)) \
            or not _WHOLE_NAMES.isdisjoint(code.co_names)
        self.free = code.co_freevars
        n = code.co_argcount + code.co_kwonlyargcount
        self.args = code.co_varnames[:n + bool(code.co_flags & 4) + bool(code.co_flags & 8)]


def _skipped() -> tuple[str, ...]:
    global _SKIPPED
    if _SKIPPED is None:
        _SKIPPED = _skipped_dirs()
    return _SKIPPED


def _info(code: types.CodeType) -> _Code | None:
    """``code``'s :class:`_Code`, or None where it is not the user's."""
    seen = _INFO.get(code)  # code objects compare equal across files: check the file
    if seen is not None and seen[0] == code.co_filename:
        return seen[1]
    path = os.path.abspath(code.co_filename)  # (a sys.path entry with '..' in it)
    info = None if path.startswith(_skipped()) else _Code(code)
    _INFO[code] = (code.co_filename, info)
    return info


def scalar_key(v: Any) -> Any:
    """A Python scalar's (or a tuple of them) type and exact bits (``-0.0`` is not ``0.0``,
    a NaN's payload counts); None for other values."""
    t = type(v)
    if t is float:
        return (float, struct.pack("<d", v))
    if t is complex:
        return (complex, struct.pack("<dd", v.real, v.imag))
    if t in _SCALARS:
        return (t, v)
    if t is tuple:
        keys = tuple(scalar_key(x) for x in v)
        return None if None in keys else (tuple, keys)
    return None


def _data(seq: list | tuple) -> bool:
    """Whether ``seq`` holds Python data only (scalars, lists and tuples): code outside the
    user's that it is passed to (``xad.tensor(vals)``, ``x.reshape(shape)``) reads every
    item, so every item is guarded, as where the user's code iterates it."""
    return all(type(x) in _SCALARS or type(x) in (list, tuple) for x in seq[:WHOLE])


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return _MISSING


def _item(seq: Any, i: int) -> Any:
    return seq[i] if i < len(seq) else _MISSING


class Reads:
    """The Python values one recorded call reads, as guards (see the module docstring);
    ``roots``: objects fixed for the program (the compiled object, identity-keyed
    arguments) whose attributes are read; ``paused()``: inside a host call; ``hosted()``:
    after one; ``called(m)``: ``m`` is a module the call called (its ``forward``'s
    ``self``)."""

    def __init__(self, fn: Any, roots: list, paused: Callable[[], bool],
                 hosted: Callable[[], bool], called: Callable[[Any], bool],
                 before: Any = ()) -> None:
        self.guards: list[tuple] = []  # (read, expected, key, weak, what)
        self.where: list[tuple] = []  # per guard, what it reads (for :meth:`before`)
        self.late = False  # xad's state first read after a host call (see :meth:`changed`)
        self._owned = False  # walking what an object of xad's holds (an optimiser's groups)
        self.failed: str | None = None  # why the values it read could not be guarded
        self._hosted = hosted
        self._called = called  # a module the call called (or one below it)
        self._before = before
        self._start: dict[tuple, Any] = {}
        self._seen: dict[tuple, int] = {}
        self._known: dict[int, Any] = {}  # id -> an object whose entries are guarded
        self._funcs: dict[Any, list] = {}  # code -> functions seen (their cells)
        self._paused = paused
        self._prev: Any = None
        for r in (fn, *roots):
            self._note(r)
        if isinstance(fn, types.MethodType):
            self._note(fn.__self__)

    def _note(self, v: Any) -> None:
        if isinstance(v, types.FunctionType):
            same = self._funcs.setdefault(v.__code__, [])
            if not any(f is v for f in same):
                same.append(v)
        elif isinstance(v, types.MethodType):
            self._note(v.__func__)
        elif not isinstance(v, (Tensor, *_SCALARS)):
            self._known[id(v)] = v

    # ----- watching the call ---------------------------------------------------------------
    def __enter__(self) -> Reads:
        self._start = {where: read() for where, read in self._before}
        self._prev = sys.gettrace()
        sys.settrace(self._trace)  # called as each frame starts (its lines untraced)
        return self

    def __exit__(self, *exc: Any) -> None:
        sys.settrace(self._prev)

    def _trace(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        info = _info(frame.f_code)
        if info is not None and not self._paused() and self.failed is None:
            try:
                self._enter(frame, info)
            except Exception as e:  # noqa: BLE001 (an object whose reads raise: no guards)
                self.failed = f"{type(e).__name__}: {e}"
        return None if self._prev is None else self._prev(frame, event, arg)

    def _enter(self, frame: types.FrameType, info: _Code) -> None:
        g = frame.f_globals
        for name in info.names:
            if name in g:
                self._guard(("g", id(g), name), functools.partial(dict.get, g, name, _MISSING),
                            g[name], info, 0, name)
        if not (info.free or info.args):
            return
        local = frame.f_locals
        for f in self._funcs.get(frame.f_code, ()):
            cells = f.__closure__ or ()
            if all(_cell(c) is local.get(n, _MISSING) for n, c in zip(info.free, cells)):
                for n, c in zip(info.free, cells):
                    self._guard(("c", id(c)), functools.partial(_cell, c), _cell(c), info, 0, n)
                self._defaults(f, info)
                break
        for name in info.args:  # ``self``: an object reached before, a module called
            v = local.get(name, _MISSING)
            if self._known.get(id(v), _MISSING) is v or self._called(v):
                self._entries(v, info, 1, name)

    def _defaults(self, f: types.FunctionType, info: _Code) -> None:
        """Guard ``f``'s default values (``f.__defaults__ = (3.0,)`` between calls: a replay
        kept the first call's), as closure cells: the tuple and the keyword dict by identity,
        each value as a cell's. None (no defaults) needs no guard: every call passes those
        arguments."""
        name = f.__qualname__
        for attr in ("__defaults__", "__kwdefaults__"):
            v = getattr(f, attr)
            if v is None:
                continue
            read = functools.partial(getattr, f, attr)
            self._guard(("d", id(f), attr), read, v, info, DEPTH, f"{name}.{attr}")
            for k in (range(len(v)) if type(v) is tuple else list(v) if v else ()):
                self._guard(("d", id(f), attr, k), functools.partial(operator.getitem, v, k),
                            v[k], info, 0, f"{name}.{attr}[{k!r}]")

    def _guard(self, where: tuple, read: Callable[[], Any], v: Any, info: _Code, depth: int,
               what: str) -> None:
        key = scalar_key(v)
        if where not in self._seen:
            self._seen[where] = len(self.guards)
            self.where.append(where)
            self.late = self.late or self._owned and self._hosted()
            weak = False
            exp = v
            if key is None:
                try:
                    exp, weak = weakref.ref(v), True
                except TypeError:
                    pass
            self.guards.append((read, exp, key, weak, what))
        if depth < DEPTH and key is None:
            self._note(v)
            self._entries(v, info, depth + 1, what)

    def _entries(self, v: Any, info: _Code, depth: int, what: str) -> None:
        """Guard what ``info``'s code can read of ``v``: entries, items, attributes."""
        if len(self.guards) >= MOST:
            return
        owned = self._owned
        self._owned = owned or type(v).__module__.partition(".")[0] == "xad"
        try:
            self._held(v, info, depth, what)
        finally:
            self._owned = owned

    def _held(self, v: Any, info: _Code, depth: int, what: str) -> None:
        t = type(v)
        if isinstance(v, dict):
            keys = list(v)[:WHOLE] if info.whole else [k for k in info.consts if k in v]
            for k in keys:
                read = functools.partial(dict.get, v, k, _MISSING)
                self._guard(("i", id(v), k), read, read(), info, depth, f"{what}[{k!r}]")
        elif t is list or t is tuple:
            if t is list:
                self._guard(("n", id(v)), functools.partial(len, v), len(v), info, DEPTH,
                            f"len({what})")
            idx = {k for k in info.consts if type(k) is int and -len(v) <= k < len(v)}
            idx.update(range(min(len(v), WHOLE)) if info.whole or _data(v) else ())
            for k in idx:
                self._guard(("i", id(v), k), functools.partial(_item, v, k), v[k], info,
                            depth, f"{what}[{k}]")
        elif not isinstance(v, (Tensor, types.FunctionType, types.BuiltinFunctionType)):
            d = getattr(v, "__dict__", None)
            if type(d) is not dict and not (isinstance(v, type) and _info_of_class(v)):
                return
            if isinstance(v, types.ModuleType) and _info_of_module(v) is None:
                return  # a library's module: by identity only
            assert d is not None
            every = info.whole and ("getattr" in info.names or "vars" in info.names)
            for name in list(d)[:WHOLE] if every else info.names:
                if name in d:
                    self._guard(("a", id(v), name), functools.partial(d.get, name, _MISSING),
                                d[name], info, depth, f"{what}.{name}")
            if not isinstance(v, type) and _info_of_class(type(v)):  # its class attributes
                self._entries(type(v), info, depth, f"{what}.__class__")

    # ----- after the call ------------------------------------------------------------------
    def changed(self) -> str | None:
        """What the recorded call itself changed among the values it read (a counter, a
        global it assigns): a replay would not change it, so the recording is not reused.
        A value first read after the call's host calls ran (an optimiser's step, which may
        change what a later frame reads) is compared with its value at the start of the
        next recording of these guards (``before``: see :attr:`late`; only what objects of
        xad hold: host calls change no other state)."""
        start, self._start = self._start, {}
        for where, guard in zip(self.where, self.guards):
            if where in start and stale((((lambda v=start[where]: v), *guard[1:]),)):
                return guard[4]
        return stale(self.guards)

    def before(self) -> list[tuple]:
        """``(where, read)`` per guard: what the next recording reads as it starts."""
        return [(w, g[0]) for w, g in zip(self.where, self.guards)]


def _info_of_module(m: types.ModuleType) -> Any:
    f = getattr(m, "__file__", None)
    return None if f is None or os.path.abspath(f).startswith(_skipped()) else f


def _info_of_class(c: type) -> bool:
    m = sys.modules.get(c.__module__)
    return m is not None and _info_of_module(m) is not None


def stale(guards: Any) -> str | None:
    """The first guard whose value changed (as ``"global 'scale'"``), or None."""
    for read, exp, key, weak, what in guards:
        v = read()
        if weak:
            o = exp()
            if o is None or o is not v:  # freed: never another object (or None) after it
                return what
        elif v is not exp and (key is None or scalar_key(v) != key):
            return what
    return None
