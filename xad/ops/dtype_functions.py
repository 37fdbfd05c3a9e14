"""The Array API's data-type functions: ``finfo``, ``iinfo``, ``isdtype``, ``result_type``
and ``can_cast``, with the standard's promotion table (Python scalars are weak)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import dtypes as _dt
from ..backend import get_backend
from ..dtypes import kind_bits as _kind_bits
from ..dtypes import promote_types
from ..tensor import Tensor

__all__ = ["finfo", "iinfo", "isdtype", "result_type", "can_cast"]

_KINDS = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float16", "bfloat16", "float32", "float64"),
    "complex floating": ("complex64", "complex128"),
}
_KINDS["integral"] = _KINDS["signed integer"] + _KINDS["unsigned integer"]
_KINDS["numeric"] = _KINDS["integral"] + _KINDS["real floating"] + _KINDS["complex floating"]


@dataclass(frozen=True)
class finfo_object:  # noqa: N801  (the standard's name)
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: _dt.DType


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801
    bits: int
    max: int
    min: int
    dtype: _dt.DType


def _dtype_of(x: Any, where_: str) -> _dt.DType:
    if isinstance(x, Tensor):
        return x.dtype
    try:
        return _dt.as_dtype(x)
    except TypeError:
        raise TypeError(f"{where_}: expected a dtype or a tensor, got {x!r}") from None


def finfo(type: Any) -> finfo_object:
    """Machine limits of a floating dtype (of the current backend's arrays).

    Example:
        >>> import xad
        >>> xad.finfo(xad.float32).bits
        32
    """
    d = _dtype_of(type, "finfo")
    f = get_backend().xp.finfo(get_backend().dtype(d))
    real = {"complex64": _dt.float32, "complex128": _dt.float64}.get(d.name, d)
    return finfo_object(int(f.bits), float(f.eps), float(f.max), float(f.min),
                        float(f.smallest_normal), real)


def iinfo(type: Any) -> iinfo_object:
    """Machine limits of an integer dtype.

    Example:
        >>> import xad
        >>> xad.iinfo(xad.int32).max
        2147483647
    """
    d = _dtype_of(type, "iinfo")
    i = get_backend().xp.iinfo(get_backend().dtype(d))
    return iinfo_object(int(i.bits), int(i.max), int(i.min), d)


def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether ``dtype`` is of ``kind`` (a kind name such as ``"real floating"``, a dtype, or
    a tuple of those).

    Example:
        >>> import xad
        >>> xad.isdtype(xad.float32, ("integral", "real floating"))
        True
    """
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    d = _dtype_of(dtype, "isdtype")
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"isdtype: unknown kind {kind!r}; use one of {', '.join(_KINDS)}")
        return d.name in _KINDS[kind]
    return d is _dtype_of(kind, "isdtype")


def _weak(d: _dt.DType, s: Any) -> _dt.DType:
    """The dtype of ``d`` combined with the Python scalar ``s`` (a weak type), as the
    operators compute it: a float with a bool or integer dtype gives the default floating
    dtype, a complex number a complex dtype, an int with bool int64."""
    k = _kind_bits(d)[0]
    if isinstance(s, complex) and k != "c":
        wide = d is _dt.float64 or (k != "f" and _dt.get_default_dtype() is _dt.float64)
        return _dt.complex128 if wide else _dt.complex64
    if isinstance(s, float) and k in "iub":
        return _dt.get_default_dtype()
    if type(s) is int and k == "b":
        return _dt.int64
    return d


def result_type(*arrays_and_dtypes: Any) -> _dt.DType:
    """The dtype the standard's promotion rules give for these tensors, dtypes and scalars;
    where the standard leaves a mix to the library, the one xad's operations give (as
    PyTorch and JAX: a bool or integer dtype with a floating one gives the floating one).

    Example:
        >>> import xad
        >>> xad.result_type(xad.int8, xad.uint8), xad.result_type(xad.int32, xad.float32)
        (xad.int16, xad.float32)
    """
    scalars = [a for a in arrays_and_dtypes if isinstance(a, (bool, int, float, complex))]
    typed = [_dtype_of(a, "result_type") for a in arrays_and_dtypes
             if not isinstance(a, (bool, int, float, complex))]
    if not typed:
        raise ValueError("result_type: needs at least one tensor or dtype")
    out = typed[0]
    for d in typed[1:]:
        out = promote_types(out, d)
    for s in scalars:
        out = _weak(out, s)
    return out


def can_cast(from_: Any, to: Any, /) -> bool:
    """Whether the promotion rules allow casting ``from_`` (a dtype or tensor) to ``to``.

    Example:
        >>> import xad
        >>> xad.can_cast(xad.int8, xad.int32), xad.can_cast(xad.float64, xad.float32)
        (True, False)
    """
    a, b = _dtype_of(from_, "can_cast"), _dtype_of(to, "can_cast")
    try:
        return promote_types(a, b, mixed=False) is b  # the standard's table: int32 -> float32 no
    except TypeError:
        return False
