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
and ``cupy.where(c, x, y)`` (which CuPy turns into its ``_where_ufunc`` while fusing), and
one reduction (below); CuPy also takes a few routines, which xad never fuses.

Without a reduction, as CuPy's elementwise kernel, every output has the broadcast shape of
all the array arguments (a fused output of a smaller shape would come back broadcast: a
wrong region boundary shows as a wrong result).

Writing into an argument, as CuPy's ``_FusionVarArray``: ``a[...] = v`` (or ``a[:] = v``;
any other key raises CuPy's ``ValueError``) and the in-place operators (``a += v``) make
argument ``a`` an output of the kernel. The writes land when the kernel ends (each thread
has read all its inputs first, so an argument that aliases another reads its old value);
stricter than CuPy, a written value must already have the argument's dtype (CuPy casts: a
silently promoted update would be cast back). A value made inside the kernel is not an
array: ``v[...] = w`` on it raises, ``v += w`` rebinds, as in CuPy.

One reduction, as CuPy 14's old fusion (``cupy/_core/fusion.pyx`` at tag v14.2.0, the
fusion ``cupy.fuse`` tries first): ``cupy.sum``/``prod``/``max``/``min`` (``amax``, ``amin``)
of a value made from the arguments, ``axis`` an int, a tuple or None (``_call_reduction``,
l. 926-961), makes the function one ``ReductionKernel`` (``get_fusion``, l. 743-785): every
operation before it is the pre-map, evaluated at each index of the broadcast shape of *all*
arguments (``ReductionKernel.__call__`` broadcasts its inputs, ``_reduction.pyx`` l. 776-832),
and every operation after it the post-map, run once per reduced element on the reduced value
and number literals only: ``_get_fusion_var`` (l. 498-518) raises ``Exception('Shape
mismatch')`` for an argument or a pre-map value read there. Every result has the reduced
shape, without kept axes. The emulator computes the pre-map with NumPy over the broadcast
shape, reduces with NumPy's ``sum``/``max``/... over ``axis`` and runs the post-map on the
result, so the bits are those of the same calls made one by one *here*; a real GPU sums in
another order (a block tree, ``_reduction.pyx``; CUB's for one input) than NumPy's pairwise
sum and than CuPy's own unfused ``cupy.sum``, so there fused and unfused sums may differ in
the last bits. One launch, or two where CuPy takes CUB's two-pass full reduction (its
default ``CUPY_ACCELERATORS=cub``; one argument, one result, a C- or F-contiguous argument
reduced over every axis: ``_cub_reduction.pyx`` l. 287-347, 528-545).

Refused as by CuPy: ``keepdims=True`` (``cupy.sum`` and ``cupy.amax`` raise
``NotImplementedError("cupy.sum does not support `keepdims` in fusion yet.")`` while fusing,
``cupy/_math/sumprod.py``, ``cupy/_statistics/order.py``). Refused where CuPy does something
the emulator does not model: a second reduction (``NotImplementedError('Multiple reduction is
not implemented yet')``, l. 938-941), an argument or pre-map value read after the reduction
(``Shape mismatch``), a pre-map result returned, a write into an argument in a function that
reduces: CuPy's ``Fusion.__call__`` (l. 860-874) catches the first three and hands the function
to its experimental new fusion (``new_fusion.pyx``: one cooperative-groups kernel with a grid
sync between steps, launched with one multiprocessor's worth of blocks), and its pre-map
takes arguments by value, so a write is lost. Also refused: ``dtype=`` and ``out=`` (the old
fusion drops ``dtype`` silently, l. 931-935), a reduction of a value of fewer axes than the
broadcast arguments, and one through ``array_api_compat.cupy``.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import numpy as np

from . import core, streams

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
        if core._local.fusing is not None:  # a fused function inside one
            return self.func(*args)
        if not any(type(a) is core.ndarray for a in args):
            return self.func(*args)
        if not all(type(a) is core.ndarray or isinstance(a, _SCALARS) for a in args):
            types = ", ".join(repr(type(a)) for a in args)
            raise TypeError(f"Invalid argument type for '{self.name}': ({types})")
        dev = core.current_device()
        self._two_pass = False
        out = core.launch(f"fuse:{self.name}", self._kernel, core.unwrap(args, dev), {}, dev)
        if self._two_pass and streams.capturing() is None:  # CUB's second pass
            streams.COUNTS.kernels += 1
        return out

    def _kernel(self, *args: Any) -> Any:
        shape = np.broadcast_shapes(*(a.shape for a in args if isinstance(a, np.ndarray)))
        trace = core._local.fusing = _Trace(shape)
        try:
            result = self.func(*(FusionVar(a, trace.writes) if isinstance(a, np.ndarray) else
                                 FusionVar(a) if isinstance(a, np.generic) else a
                                 for a in args))
        finally:
            core._local.fusing = None
        if trace.reduced is not None:
            outs = _reduced_results(result, trace)
            self._two_pass = (len(args) == 1 and len(outs) == 1 and trace.reduced == ()
                              and (args[0].flags.c_contiguous or args[0].flags.f_contiguous))
            return outs if type(result) is tuple else outs[0]
        for target, value in trace.writes:  # when the kernel ends
            target[...] = np.broadcast_to(value, shape)
        if result is None:
            return None
        outs = result if type(result) is tuple else (result,)
        for o in outs:
            if type(o) is not FusionVar:
                raise TypeError(f"Fusion function can't return {type(o)}")
        arrays = tuple(np.array(np.broadcast_to(o._a, shape), order="C") for o in outs)
        return arrays if type(result) is tuple else arrays[0]


_NEW_FUSION = ("CuPy's old fusion gives up there and hands the function to its experimental "
               "new fusion, which the emulator does not model")


def _reduced_results(result: Any, trace: _Trace) -> tuple[np.ndarray, ...]:
    """A reducing function's results: post-map values, of the reduced shape."""
    if trace.writes:
        raise NotImplementedError("cupy.fuse: a function that reduces cannot write into its "
                                  "arguments (CuPy's reduction kernel takes them by value: "
                                  "the write would be lost)")
    outs = result if type(result) is tuple else (result,)
    for o in outs:
        if type(o) is not FusionVar:
            raise TypeError(f"Fusion function can't return {type(o)}")
        if not o._post:
            raise NotImplementedError(f"cupy.fuse: a function that reduces returns only "
                                      f"values made after its reduction ({_NEW_FUSION})")
    return tuple(np.array(np.broadcast_to(o._a, trace.reduced), order="C") for o in outs)


def _operand(x: Any) -> Any:
    if type(x) is FusionVar:
        return x._a
    if isinstance(x, _SCALARS):
        return x
    raise TypeError(f"Unsupported type {type(x)}")


# CuPy's reductions that fuse (their name in CuPy's messages: max is amax)
_REDUCTIONS = {"sum": "sum", "prod": "prod", "max": "amax", "amax": "amax", "min": "amin",
               "amin": "amin"}


class _Trace:
    """One call's trace: the writes into arguments; the reduced shape once it reduces."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.writes: list[tuple[np.ndarray, np.ndarray]] = []
        self.reduced: tuple[int, ...] | None = None

    def __call__(self, ns: str, name: str, fn: Any, args: tuple, kwargs: dict) -> FusionVar:
        """A call through the emulated modules inside the fused function, traced."""
        core.record(ns, name, args, kwargs)
        if name in _REDUCTIONS and ns in ("cupy", "compat"):
            return self.reduce(ns, name, fn, args, kwargs)
        if name == "where" and len(args) == 3 and not kwargs:  # a ufunc in fusion (CuPy's)
            return _apply(np.where, args)
        if not (isinstance(fn, np.ufunc) or getattr(fn, "ufunc", False)) or kwargs:
            raise TypeError(f"{ns}.{name}{'(..., ' + ', '.join(kwargs) + '=)' if kwargs else ''}"
                            f" inside cupy.fuse: the emulator fuses ufuncs, operators and one "
                            f"reduction only")
        return _apply(fn, args)

    def reduce(self, ns: str, name: str, fn: Any, args: tuple, kwargs: dict) -> FusionVar:
        """The function's one reduction (see the module docstring)."""
        if kwargs.get("keepdims"):
            raise NotImplementedError(f"cupy.{_REDUCTIONS[name]} does not support `keepdims` "
                                      f"in fusion yet.")
        extra = sorted(k for k, v in kwargs.items() if k not in ("axis", "keepdims")
                       and v is not None)
        if ns != "cupy" or extra or len(args) != 1 or type(args[0]) is not FusionVar:
            raise TypeError(f"{ns}.{name}(one fusion value, axis=) is the reduction the "
                            f"emulator fuses; got {len(args)} arguments, keywords {extra}")
        if self.reduced is not None:
            raise NotImplementedError(f"Multiple reduction is not implemented yet ({_NEW_FUSION}"
                                      f")")
        a = args[0]._a
        if a.ndim != len(self.shape):
            raise NotImplementedError(f"cupy.fuse reduces the broadcast of all its arguments "
                                      f"{self.shape}; this value has {a.ndim} axes")
        out = np.asarray(fn(a if a.shape == self.shape else np.broadcast_to(a, self.shape),
                            axis=kwargs.get("axis")))
        self.reduced = out.shape
        return FusionVar(out, post=True)


def _apply(fn: Any, operands: tuple) -> FusionVar:
    """``fn`` of the operands' values: a pre-map value before the reduction, a post-map one
    after it, where it may read no pre-map value (CuPy's ``Shape mismatch``)."""
    post = core._local.fusing.reduced is not None
    if any(type(o) is FusionVar and o._post != post for o in operands):
        raise NotImplementedError(f"cupy.fuse: after its reduction a fused function reads "
                                  f"only the reduced value and number literals, not an "
                                  f"argument or a value made before ({_NEW_FUSION})")
    return FusionVar(fn(*(_operand(o) for o in operands)), post=post)


class FusionVar:
    """A value inside a fused function (CuPy's ``_FusionVarArray``): ``dtype``, ``ndim``,
    operators; no shape, no host read, no truth value."""

    __slots__ = ("_a", "_arg", "_writes", "_post")
    __array_ufunc__ = None  # a NumPy scalar on the left defers to the reflected operator

    def __init__(self, a: Any, writes: list | None = None, post: bool = False) -> None:
        self._a = np.asarray(a)
        self._post = post  # made after the function's reduction (CuPy's ``_is_postmap``)
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
        return _apply(lambda a: a.astype(dtype), (self,))

    def __bool__(self) -> bool:
        raise Exception("Can't cast to bool")  # noqa: TRY002 - CuPy's own exception

    def __neg__(self) -> FusionVar:
        return _apply(operator.neg, (self,))

    def __invert__(self) -> FusionVar:
        return _apply(operator.invert, (self,))

    def __repr__(self) -> str:
        return f"<_FusionVar {self.dtype} {self.ndim}-dim array>"

    __hash__ = None  # type: ignore[assignment]


def _binary(name: str, reflected: bool) -> None:
    fn = core._OWN.get(name) or getattr(operator, name)
    setattr(FusionVar, f"__{name.rstrip('_')}__",
            lambda self, other: _apply(fn, (self, other)))
    if reflected:
        setattr(FusionVar, f"__r{name.rstrip('_')}__",
                lambda self, other: _apply(fn, (other, self)))


def _inplace(name: str) -> None:
    """``a op= v``: into argument ``a`` (CuPy's ``_FusionVarArray``), else a new value."""
    fn = core._OWN.get(name) or getattr(operator, name)

    def op(self: FusionVar, other: Any) -> FusionVar:
        result = _apply(fn, (self, other))
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
