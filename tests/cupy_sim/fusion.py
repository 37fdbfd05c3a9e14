"""``cupy.fuse`` emulated, after CuPy 14's ``cupy/_core/fusion.pyx``.

``fuse(f)`` or ``fuse(kernel_name=...)(f)`` gives a :class:`Fusion`. Called with at least
one device array, it runs as *one kernel* (one launch in ``COUNTS.kernels``; captured like
any kernel): ``f`` is traced with each array argument replaced by a :class:`FusionVar`,
whose operators and whose ufunc calls (``cupy.tanh(v)``) compute with NumPy on the argument
data, in the order ``f`` makes them, so a fused chain gives the bits of the same ufuncs called
one by one. Called with no device array, ``f`` runs as plain Python, as in CuPy.

A NumPy scalar argument (a kernel parameter of its dtype, as CuPy's ``_FusionVarScalar``)
is a :class:`FusionVar` too, so Python control flow or ``math`` on it fails as in CuPy.

Refused as by CuPy: an argument that is not an array or a scalar (``TypeError: Invalid
argument type``); a ``cupy.ndarray`` reached inside ``f`` other than through the arguments
(``Unsupported type``); Python control flow on a value (``bool(v)``: ``Can't cast to
bool``); a host read (``float(v)``); returning anything but fusion values. Stricter than
CuPy: inside ``f`` only ufuncs (``cupyx.scipy.special.erf`` is one, as in CuPy), operators
and ``cupy.where(c, x, y)`` (which CuPy turns into its ``_where_ufunc`` while fusing; CuPy
also takes reductions such as ``cupy.sum`` and a few routines, which xad's fusion never
generates).

Like CuPy's elementwise kernel, every output has the broadcast shape of all the array
arguments (a fused output of a smaller shape would come back broadcast: a wrong region
boundary shows as a wrong result).

Writing into an argument, as CuPy's ``_FusionVarArray``: ``a[...] = v`` (or ``a[:] = v``;
any other key raises CuPy's ``ValueError``) and the in-place operators (``a += v``) make
argument ``a`` an output of the kernel. The writes land when the kernel ends (each thread
has read all its inputs first, so an argument that aliases another reads its old value);
stricter than CuPy, a written value must already have the argument's dtype (CuPy casts: a
silently promoted update would be cast back). A value made inside the kernel is not an
array: ``v[...] = w`` on it raises, ``v += w`` rebinds, as in CuPy.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import numpy as np

from . import core

_SCALARS = (int, float, bool, complex, np.generic)


def fuse(*args: Any, **kwargs: Any) -> Any:
    """``cupy.fuse``: a decorator, bare or with ``kernel_name=``."""
    def wrapper(f: Any, kernel_name: str | None = None) -> Fusion:
        return Fusion(f, kernel_name)

    core.record("cupy", "fuse", args, kwargs)
    if len(args) == 1 and not kwargs and callable(args[0]):
        return functools.update_wrapper(wrapper(args[0]), args[0])
    return lambda f: functools.update_wrapper(wrapper(f, *args, **kwargs), f)


class Fusion:
    """A fused function: one kernel per call (see the module docstring)."""

    def __init__(self, func: Any, name: str | None = None) -> None:
        self.func = func
        self.name = name or func.__name__

    def __repr__(self) -> str:
        return f"<Fusion '{self.name}'>"

    def __call__(self, *args: Any) -> Any:
        if getattr(core._local, "fusing", None) is not None:  # a fused function inside one
            return self.func(*args)
        if not any(type(a) is core.ndarray for a in args):
            return self.func(*args)
        if not all(type(a) is core.ndarray or isinstance(a, _SCALARS) for a in args):
            types = ", ".join(repr(type(a)) for a in args)
            raise TypeError(f"Invalid argument type for '{self.name}': ({types})")
        dev = core.current_device()
        return core.launch(f"fuse:{self.name}", self._kernel, core.unwrap(args, dev), {},
                           dev)

    def _kernel(self, *args: Any) -> Any:
        shape = np.broadcast_shapes(*(a.shape for a in args if isinstance(a, np.ndarray)))
        core._local.fusing = _traced
        writes: list[tuple[np.ndarray, np.ndarray]] = []
        try:
            result = self.func(*(FusionVar(a, writes) if isinstance(a, np.ndarray) else
                                 FusionVar(a) if isinstance(a, np.generic) else a
                                 for a in args))
        finally:
            core._local.fusing = None
        for target, value in writes:  # when the kernel ends
            target[...] = np.broadcast_to(value, shape)
        if result is None:
            return None
        outs = result if type(result) is tuple else (result,)
        for o in outs:
            if type(o) is not FusionVar:
                raise TypeError(f"Fusion function can't return {type(o)}")
        arrays = tuple(np.array(np.broadcast_to(o._a, shape)) for o in outs)
        return arrays if type(result) is tuple else arrays[0]


def _operand(x: Any) -> Any:
    if type(x) is FusionVar:
        return x._a
    if isinstance(x, _SCALARS):
        return x
    raise TypeError(f"Unsupported type {type(x)}")


def _traced(ns: str, name: str, fn: Any, args: tuple, kwargs: dict) -> FusionVar:
    """A call through the emulated modules inside a fused function: a ufunc, traced."""
    core.record(ns, name, args, kwargs)
    if name == "where" and len(args) == 3 and not kwargs:  # CuPy's where: a ufunc in fusion
        return FusionVar(np.where(*(_operand(a) for a in args)))
    if not (isinstance(fn, np.ufunc) or getattr(fn, "ufunc", False)) or kwargs:
        raise TypeError(f"{ns}.{name}{'(..., ' + ', '.join(kwargs) + '=)' if kwargs else ''} "
                        f"inside cupy.fuse: the emulator fuses ufuncs and operators only")
    return FusionVar(fn(*(_operand(a) for a in args)))


class FusionVar:
    """A value inside a fused function (CuPy's ``_FusionVarArray``): ``dtype``, ``ndim``,
    operators; no shape, no host read, no truth value."""

    __slots__ = ("_a", "_arg", "_writes")
    __array_ufunc__ = None  # a NumPy scalar on the left defers to the reflected operator

    def __init__(self, a: Any, writes: list | None = None) -> None:
        self._a = np.asarray(a)
        self._arg = self._a  # the argument's own array, or None for a value made inside
        self._writes = writes
        if writes is None:
            self._arg = None

    def __setitem__(self, key: Any, value: Any) -> None:
        if not (key is Ellipsis or key == slice(None)):
            raise ValueError("The fusion supports `[...]` or `[:]`.")
        if self._arg is None:
            raise TypeError("cupy.fuse writes only into an argument array (this value was "
                            "made inside the fused function)")
        v = np.asarray(_operand(value))
        if v.dtype != self._arg.dtype:
            raise TypeError(f"a fused write of {v.dtype} into a {self._arg.dtype} argument "
                            f"(CuPy would cast it silently; the emulator refuses)")
        self._writes.append((self._arg, v))
        self._a = v  # later reads in the kernel see the new value

    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)

    def astype(self, dtype: Any, order: Any = None, casting: Any = None, subok: Any = None,
               copy: bool = True) -> FusionVar:
        """CuPy's ``_FusionVarScalar.astype``: a cast, inside the kernel."""
        return FusionVar(self._a.astype(dtype))

    def __bool__(self) -> bool:
        raise Exception("Can't cast to bool")  # noqa: TRY002 - CuPy's own exception

    def __neg__(self) -> FusionVar:
        return FusionVar(-self._a)

    def __invert__(self) -> FusionVar:
        return FusionVar(~self._a)

    def __repr__(self) -> str:
        return f"<_FusionVar {self.dtype} {self.ndim}-dim array>"

    __hash__ = None  # type: ignore[assignment]


def _binary(name: str, reflected: bool) -> None:
    fn = getattr(operator, name)
    setattr(FusionVar, f"__{name.rstrip('_')}__",
            lambda self, other: FusionVar(fn(self._a, _operand(other))))
    if reflected:
        setattr(FusionVar, f"__r{name.rstrip('_')}__",
                lambda self, other: FusionVar(fn(_operand(other), self._a)))


def _inplace(name: str) -> None:
    """``a op= v``: into argument ``a`` (CuPy's ``_FusionVarArray``), else a new value."""
    fn = getattr(operator, name)

    def op(self: FusionVar, other: Any) -> FusionVar:
        result = FusionVar(fn(self._a, _operand(other)))
        if self._arg is None:
            return result
        self[...] = result
        return self

    setattr(FusionVar, f"__i{name.rstrip('_')}__", op)


for _n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "lshift", "rshift", "and_",
           "or_", "xor"):
    _binary(_n, True)
    _inplace(_n)
_inplace("pow")
for _n in ("pow", "lt", "le", "eq", "ne", "gt", "ge"):  # CuPy has no __rpow__ here
    _binary(_n, False)
