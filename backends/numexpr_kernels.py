"""Multi-threaded elementwise kernels on NumPy arrays with numexpr (the optional ``fast``
extra: ``pip install 'xad[fast]'``), for :meth:`NumpyBackend.elementwise`.

An elementwise function written over a namespace (``lambda x, m: ns.exp(x - m)``) is
*traced* once with symbolic operands (:class:`_Sym`) into one numexpr expression per result
(``exp(a0 - a1)``), compiled once per argument dtypes (``numexpr.NumExpr``, the cached
program, no string parsing per call) and run over numexpr's thread pool. Only what numexpr
computes as NumPy does is traced: ``+ - * /``, unary minus, comparisons, ``where`` and the
float functions in :data:`_FUNCTIONS`, on float32/float64 arrays of one dtype (a traced
function that uses anything else is run as it is, over NumPy). Results are those of the same
expression evaluated in the arrays' dtype: equal to NumPy's up to the rounding of the
transcendental functions (a few ulp; tests/test_numexpr_paths.py holds them to it).

Whether they run is a size threshold, :data:`MIN_SIZE`, read once from the environment
variable ``XAD_NUMEXPR``: unset or ``0``, off (NumPy only); a number ``n``, numexpr for
arrays of at least ``n`` elements. Off by default because it was measured to lose on the
machine this project is developed on (2 cores, NumPy 2.4 with AVX-512 loops): numexpr's
interpreted loops took 2-8x NumPy's CPU time on every kernel xad has, one thread or two
(bench/README.md, "numexpr kernels"); on a machine with more cores or without NumPy's
SIMD loops, measure and set it (``XAD_NUMEXPR=65536``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

try:
    import numexpr as _ne
    from numexpr import necompiler as _nc
except ImportError:  # pragma: no cover - the extra is optional
    _ne = None

__all__ = ["MIN_SIZE", "available", "kernel"]


def _min_size(text: str) -> int | None:
    """``XAD_NUMEXPR``'s threshold: None (off) for unset, empty or 0."""
    try:
        n = int(text or 0)
    except ValueError:
        raise ValueError(f"XAD_NUMEXPR must be 0 (off) or a number of elements, got {text!r}") \
            from None
    return n if n > 0 and _ne is not None else None


# elements from which numexpr runs a kernel (None: never); see the module's docstring
MIN_SIZE: int | None = _min_size(os.environ.get("XAD_NUMEXPR", ""))
_FUNCTIONS = frozenset(("exp", "expm1", "log", "log1p", "log10", "sqrt", "tanh", "sinh",
                        "cosh", "sin", "cos", "tan", "abs"))  # named as in the Array API
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_TOO_LONG = 4000  # characters: an expression past this (inlined reuse) is not worth it


def available() -> bool:
    """Whether numexpr is installed (the ``fast`` extra)."""
    return _ne is not None


class _Untraceable(Exception):
    """The function uses something numexpr does not compute as NumPy does."""


class _Sym:
    """A symbolic operand: its numexpr text, and the trace's number literals (each one a
    0-d variable ``k<i>`` of the arrays' dtype, as NumPy's weak scalars: a literal in
    numexpr's text would be a float64 constant and make a float32 expression float64)."""

    __slots__ = ("text", "numbers")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, text: str, numbers: list) -> None:
        self.text, self.numbers = text, numbers

    def _bin(self, op: str, other: Any, right: bool = False) -> _Sym:
        o = _text(other, self.numbers)
        return _Sym(f"({o} {op} {self.text})" if right else f"({self.text} {op} {o})",
                    self.numbers)

    def __add__(self, o: Any) -> _Sym: return self._bin("+", o)
    def __radd__(self, o: Any) -> _Sym: return self._bin("+", o, True)
    def __sub__(self, o: Any) -> _Sym: return self._bin("-", o)
    def __rsub__(self, o: Any) -> _Sym: return self._bin("-", o, True)
    def __mul__(self, o: Any) -> _Sym: return self._bin("*", o)
    def __rmul__(self, o: Any) -> _Sym: return self._bin("*", o, True)
    def __truediv__(self, o: Any) -> _Sym: return self._bin("/", o)
    def __rtruediv__(self, o: Any) -> _Sym: return self._bin("/", o, True)
    def __gt__(self, o: Any) -> _Sym: return self._bin(">", o)
    def __ge__(self, o: Any) -> _Sym: return self._bin(">=", o)
    def __lt__(self, o: Any) -> _Sym: return self._bin("<", o)
    def __le__(self, o: Any) -> _Sym: return self._bin("<=", o)
    def __neg__(self) -> _Sym: return _Sym(f"(-{self.text})", self.numbers)
    def __pos__(self) -> _Sym: return self

    def __getattr__(self, name: str) -> Any:
        raise _Untraceable(name)


def _text(v: Any, numbers: list) -> str:
    if isinstance(v, _Sym):
        return v.text
    if type(v) in (int, float) and np.isfinite(v):
        numbers.append(v)
        return f"k{len(numbers) - 1}"
    raise _Untraceable(type(v).__name__)


class _Namespace:
    """The ``ns`` a traced function sees: numexpr's functions, ``where``."""

    def __init__(self, numbers: list) -> None:
        self.numbers = numbers

    def __getattr__(self, name: str) -> Any:
        if name not in _FUNCTIONS:
            raise _Untraceable(name)
        return lambda x: _Sym(f"{name}({_text(x, self.numbers)})", self.numbers)

    def where(self, c: Any, x: Any, y: Any) -> _Sym:
        t = [_text(v, self.numbers) for v in (c, x, y)]
        return _Sym(f"where({t[0]}, {t[1]}, {t[2]})", self.numbers)


def _trace(make: Callable[[Any], Callable], n: int) -> tuple[list[str], list] | None:
    """The numexpr texts of ``make(ns)``'s results over ``n`` arguments and the number
    literals they read, else None."""
    numbers: list = []
    try:
        out = make(_Namespace(numbers))(*[_Sym(f"a{i}", numbers) for i in range(n)])
        texts = [_text(o, numbers) for o in (out if isinstance(out, tuple) else (out,))]
    except (_Untraceable, TypeError):  # TypeError: an operator _Sym lacks (``**``, ``&``)
        return None
    return (texts, numbers) if max(map(len, texts)) <= _TOO_LONG else None


class _Kernel:
    """``make``'s function: numexpr programs for large float arrays, NumPy otherwise."""

    def __init__(self, make: Callable[[Any], Callable], plain: Callable) -> None:
        self.make, self.plain = make, plain
        self.programs: dict[tuple, tuple | None] = {}  # argument dtypes -> programs, numbers

    def __call__(self, *arrays: Any) -> Any:
        a0, n = arrays[0], MIN_SIZE
        if n is None or a0.size < n or a0.dtype not in _FLOATS:
            return self.plain(*arrays)
        key = tuple(a.dtype for a in arrays)
        if key not in self.programs:
            self.programs[key] = _compile(self.make, arrays)
        found = self.programs[key]
        if found is None:
            return self.plain(*arrays)
        progs, numbers = found
        outs = tuple(p(*arrays, *numbers, order="K", casting="safe", ex_uses_vml=v)
                     for p, v in progs)
        return outs if len(outs) > 1 else outs[0]


def _compile(make: Callable[[Any], Callable], arrays: tuple) -> tuple | None:
    """One compiled program per result and the literals as 0-d arrays, or None:
    untraceable, mixed dtypes, or a result whose dtype is not the arrays' (NumPy's)."""
    dtype = arrays[0].dtype
    if any(type(a) is not np.ndarray or a.dtype != dtype for a in arrays):
        return None
    traced = _trace(make, len(arrays))
    if traced is None:
        return None
    texts, numbers = traced
    consts = [np.asarray(v, dtype) for v in numbers]
    operands = [*arrays, *consts]
    names = [f"a{i}" for i in range(len(arrays))] + [f"k{i}" for i in range(len(consts))]
    sig = [(name, _nc.getType(a)) for name, a in zip(names, operands)]
    progs = []
    for t in texts:
        try:
            prog = _ne.NumExpr(t, sig)
        except (KeyError, TypeError, ValueError, NotImplementedError):
            return None
        _, vml = _nc.getExprNames(t, _nc.getContext({}))
        probe = prog(*[a.reshape(-1)[:1] for a in operands], order="K", casting="safe",
                     ex_uses_vml=vml)
        if probe.dtype != dtype:
            return None
        progs.append((prog, vml))
    return progs, consts


def kernel(make: Callable[[Any], Callable], xp: Any) -> _Kernel:
    """``make``'s elementwise function: numexpr over float arrays of :data:`MIN_SIZE`
    elements and more (where installed), ``make(xp)`` (its ``plain``) otherwise."""
    return _Kernel(make, make(xp))
