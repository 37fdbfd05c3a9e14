"""The per-operation path: run a primitive's forward and, when a gradient is needed, have
:func:`xad.graph.record` make its node.

Every primitive is an :class:`Op` subclass with a static ``forward(backend, *arrays,
**params)`` on raw arrays and a static ``backward(node, *grads)`` written with xad's own
operations (so it can itself be recorded). ``apply`` runs any primitive; ``unary`` and
``binary`` are its short forms for the commonest calls (the hot path: keep them lean).
"""

from __future__ import annotations

import math
import struct
from typing import Any

from .. import dtypes as _dt
from ..backend import get_backend
from ..context import HOOKED, NO_GRAD, context, quiet
from ..factories import tensor
from ..graph import installed, record
from ..tensor import Tensor
from .dtype_functions import promote_types

__all__ = ["Op", "apply", "unary", "binary", "REGISTRY"]

_SCALARS = (int, float, bool, complex)
_COMPLEX = (_dt.complex64, _dt.complex128)
_result = Tensor._result
REGISTRY: dict[str, type[Op]] = {}


class Op:
    """A primitive operation with its gradient rule beside it.

    Class attributes: ``name``; ``save_inputs`` (keep the inputs for backward);
    ``save_output`` (keep the result's array); ``differentiable`` (False for comparisons);
    ``view`` (the result may share the input's memory: it shares its version counter);
    ``materialize_grads`` (False: a several-output rule gets ``None``, not zeros, for an
    output no gradient reached, as PyTorch's ``ctx.set_materialize_grads(False)``);
    ``floating`` (the function is defined on floating and complex numbers: integer and bool
    inputs are cast to the default floating dtype first, as PyTorch's ``exp(int)`` and
    ``int / int``; the standard leaves these to the library);
    ``library`` (the forward calls a vendor library, cuBLAS or cuSOLVER on CuPy, which CuPy
    refuses inside a CUDA-graph capture: ``xad.compile(cuda_graphs=True)`` runs it between
    the graphs; ``"matmul"``: its only vendor calls are ``b.xp.matmul``, which a backend
    may run inside the capture, CuPy by a cuBLAS handle of xad's own);
    ``float_as_0d`` (a Python float operand beside a real floating tensor gives the same
    bits as that float in a 0-d array of the tensor's dtype, the standard's rule for
    ``+ - * /``: the backend may pass it so, :meth:`xad.Backend.float_operand`);
    ``amp_float32`` (on autocast's float32 list, PyTorch's CUDA one: under
    :class:`xad.amp.autocast` float16/bfloat16 tensor inputs are computed in float32;
    ``"reflected"``: only where a Python number comes first, as ``2 / x``);
    ``user_rule`` (False: the rule's gradients are the engine's own, never tensors a user
    holds; :class:`xad.Function` adapters set it); ``operator`` (a binary ``forward`` that
    is exactly one built-in call on the two arrays, ``operator.mul`` for ``x * y``: the
    per-operation path calls it, one Python frame fewer).
    An Op whose ``forward`` converts Python-scalar operands itself may also give
    ``array_forward``, the same computation as one expression for operands that are all
    arrays of one dtype: ``xad.compile`` writes that inline where it passes scalars as 0-d
    arrays (``Where``).
    """

    name = "op"
    save_inputs = False
    save_output = False
    differentiable = True
    view = False
    materialize_grads = True
    library: bool | str = False  # "matmul": a matrix product (see xad/compile/cuda_graph.py)
    floating = False
    float_as_0d = False
    amp_float32: bool | str = False
    user_rule = False
    operator: Any = None  # (Any: mypy reads a Callable class attribute as a method)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            REGISTRY[cls.name] = cls

    @staticmethod
    def forward(b: Any, *arrays: Any, **params: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def backward(node: Any, *grads: Tensor) -> Any:
        raise NotImplementedError

    @classmethod
    def is_view(cls, params: dict) -> bool:
        """Whether this call's result may share its input's memory."""
        return cls.view


def _mixed(op: type[Op], args: tuple) -> RuntimeError:
    parts = [f"input {i} on {a._backend.label} (shape {tuple(a.shape)}, dtype {a.dtype})"
             for i, a in enumerate(args) if isinstance(a, Tensor)]
    return RuntimeError(f"{op.name}: tensors on different backends or devices: "
                        f"{'; '.join(parts)}. Move them to one with .to(backend_or_device), "
                        f"e.g. x.to(y.backend).")


def _operand(op: type[Op], a: Any, like: Tensor | None = None) -> Any:
    """A non-tensor operand: Python scalars pass; a NumPy scalar becomes its Python number
    (it is already on the host); array-likes become tensors on ``like``'s backend, floats
    in ``like``'s floating dtype (the standard's rule for scalars, applied to lists)."""
    if a is None or type(a) in _SCALARS or isinstance(a, Tensor):
        return a
    if type(a).__module__ == "numpy" and getattr(a, "shape", None) == ():
        return a.item()  # a NumPy scalar (host memory): np.float64 would promote float32
    if isinstance(a, _SCALARS):
        return a
    if isinstance(a, (list, tuple)) or hasattr(a, "shape"):
        if like is None:
            return tensor(a)
        t = tensor(a, backend=like._backend)
        if t.dtype.is_floating and like.dtype.is_floating and t.dtype is not like.dtype:
            t = t.astype(like.dtype)
        return t
    raise TypeError(f"{op.name}: unsupported operand of type {type(a).__name__}; pass xad "
                    f"tensors or Python numbers (make arrays into tensors with xad.tensor(...))")


def _no_none(op: type[Op], x: Any, y: Any) -> TypeError:
    return TypeError(f"{op.name}: unsupported operand types {type(x).__name__} and "
                     f"{type(y).__name__}; pass xad tensors or Python numbers")


def _promote(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """Two dtypes meet in the one :func:`xad.result_type` gives, each input cast through
    ``astype`` first, so a floating input's gradient comes back in its own dtype (PyTorch's
    "promote", which mixed precision relies on) and every backend promotes alike (PyTorch's
    own rule would keep ``int16[3] - int64[]`` in int16). Where the standard leaves mixed
    kinds to the library, a bool or integer meets a floating or complex tensor in that
    tensor's dtype (PyTorch's and JAX's ``int32 + float32 -> float32``); float16 with
    bfloat16 meet at float32."""
    dx, dy = x.dtype, y.dtype
    if dx is dy:
        return x, y
    try:
        d = promote_types(dx, dy)
    except TypeError:
        raise TypeError(f"no promotion of {dx.name} with {dy.name}: the standard has none "
                        f"(NumPy gives float64, PyTorch refuses); cast one with "
                        f".astype(...)") from None
    return x.astype(d), y.astype(d)


_COMPARISONS = frozenset({"equal", "not_equal", "less", "less_equal", "greater",
                          "greater_equal"})
_RANGES = {f"{u}int{n}": (0, 2**n - 1) if u else (-(2**(n - 1)), 2**(n - 1) - 1)
           for u in ("", "u") for n in (8, 16, 32, 64)}


def _beyond(t: Tensor, s: int, d: _dt.DType, op: str) -> tuple[Tensor, Any]:
    """``t`` and ``s`` for a Python int outside the range of ``t``'s integer dtype ``d``:
    a comparison is made in int64 (float64 beyond it), as the numbers compare, where
    PyTorch and JAX wrapped ``s`` into the dtype (``int32_t < 2**31`` was all False); any
    other operation raises, on every backend (NumPy's OverflowError)."""
    lo, hi = _RANGES[d.name]
    if op in _COMPARISONS:
        if d is not _dt.uint64 and -(2**63) <= s < 2**63:
            return t.astype(_dt.int64), s
        return t.astype(_dt.float64), float(s)
    raise OverflowError(f"{op or 'an operation'}: the Python integer {s} is outside the range "
                        f"[{lo}, {hi}] of the tensor's {d.name}; cast the tensor to a wider "
                        f"dtype first (.astype(xad.int64))")


def _weak(t: Tensor, s: Any, op: str = "") -> tuple[Tensor, Any]:
    """``t`` and ``s`` such that the Python scalar ``s`` meets ``t`` as a weak type: a float
    with a bool or integer tensor gives the default floating dtype (PyTorch's rule; the
    standard allows a float result or an error, never truncating the float); a complex
    number with a real tensor gives complex (complex128 from float64, else complex64, as the
    default dtype); an int with a bool tensor gives int64; a bool with a number tensor is
    the int it stands for."""
    k = type(s)
    d = t._backend.xad_dtype(t._array.dtype)
    if k is bool:
        return t, (s if d is _dt.bool_ else int(s))
    if k is int:
        if d is _dt.bool_:
            return t.astype(_dt.int64), s
        r = _RANGES.get(d.name)
        if r is not None and not r[0] <= s <= r[1]:
            return _beyond(t, s, d, op)
        return t, s
    if k is float:
        return (t if d.is_floating or d in _COMPLEX else t.astype(context.dtype)), s
    if d in _COMPLEX:
        return t, s
    wide = d is _dt.float64 or (not d.is_floating and context.dtype is _dt.float64)
    return t.astype(_dt.complex128 if wide else _dt.complex64), s


def _inexact(t: Any) -> bool:
    """Whether ``t`` is a floating or complex tensor."""
    if not isinstance(t, Tensor):
        return False
    d = t._backend.xad_dtype(t._array.dtype)
    return d.is_floating or d in _COMPLEX


_HALF = {_dt.float16: (2.0**-14, 65504.0), _dt.bfloat16: (2.0**-126, 3.3895313892515355e38)}


# PyTorch's CPU kernels of these read a Python number at float32 ("opmath", its own value,
# not rounded to the tensor's half dtype first); its others (+ - ** % comparisons clamp
# where, and ``s // t``) round it first, as the arrays do. ``s / t`` is PyTorch's
# ``t.reciprocal() * s`` in every dtype (docs/PORTING.md).
_OPMATH = ("multiply", "divide", "floor_divide")
_OPMATH_REFLECTED = ("multiply",)


def _exact_half(d: Any, s: Any) -> bool:
    """Whether the finite number ``s``, in range, is exactly a value of ``d`` (a half)."""
    f = float(s)
    if d is _dt.float16:
        return struct.unpack("e", struct.pack("e", f))[0] == f
    return struct.unpack("<f", struct.pack("<f", f))[0] == f and \
        struct.unpack("<I", struct.pack("<f", f))[0] & 0xFFFF == 0  # bfloat16: float32's top


def _beyond_half(d: Any, s: Any, name: str = "", opmath: tuple = _OPMATH) -> bool:
    """Whether the half-precision dtype ``d`` meets the Python number ``s`` in float32
    (``_in_float32``): ``s`` is outside d's normal range (nonzero, finite, too large or too
    small for it), or, for an operation ``name`` in ``opmath``, not exactly a value of ``d``
    (PyTorch's float32 "opmath": ``x * 0.1`` rounds once, from float32); ``floor_divide``
    always."""
    if type(s) not in (int, float) or d not in _HALF:
        return False
    lo, hi = _HALF[d]
    a = abs(s)
    if a != 0 and (a < lo or hi < a < math.inf):
        return True
    return name in opmath and a < math.inf and (name == "floor_divide" or  # (JAX floors in
                                                 not _exact_half(d, s))    # half otherwise)


def _in_float32(op: type[Op], x: Any, y: Any) -> Tensor:
    """``op`` of a half-precision tensor and a Python number (``_beyond_half``), computed in
    float32 and rounded back, as PyTorch's: the number rounded to float16 first made
    ``mask * -1e9`` NaN where ``mask`` is 0 (``0 * -inf``), ``x / 1e5`` zero, and ``x * 0.1``
    differ from PyTorch's by an ulp in a quarter of the elements."""
    d = (x if isinstance(x, Tensor) else y).dtype
    out = binary(op, *(a.astype(_dt.float32) if isinstance(a, Tensor) else a for a in (x, y)))
    return out.astype(d) if out.dtype is _dt.float32 else out


def _up(t: Any) -> Any:
    """A float16/bfloat16 tensor in float32 (autocast's float32 list), anything else as is."""
    if isinstance(t, Tensor) and t._backend.xad_dtype(t._array.dtype) in _HALF:
        return t.astype(_dt.float32)  # (xad_dtype: its cache may not hold this dtype yet)
    return t


def _to_floating(t: Any) -> Any:
    """A bool or integer tensor in the default floating dtype (for ``Op.floating``)."""
    if not isinstance(t, Tensor) or _inexact(t):
        return t
    return t.astype(context.dtype)


def _plain(op: type[Op], out: Any, b: Any) -> Tensor:
    """Wrap a result that needs no node (``out`` already an array of ``b``)."""
    if context.anomaly:
        installed.check_forward(op.name, b, out, None)
    t = _result(out, b)
    if context.recorder is not None:
        context.recorder.result(t)
    return t


def unary(op: type[Op], x: Tensor, **params: Any) -> Tensor:
    """``apply`` for one tensor input."""
    mode = 0 if quiet.on else context.mode  # one read for all of the thread's settings
    hooked = mode & HOOKED  # anomaly, recorder, transform or autocast
    if hooked:
        if op.amp_float32 and context.autocast is not None:
            x = _up(x)
        if context.transform is not None:
            return context.transform.process(unary, op, (x,), params)
    if not isinstance(x, Tensor):
        return apply(op, x, **params)
    b = x._backend
    if op.floating:
        d = b._from_native.get(x._array.dtype)  # xad_dtype's cache, read inline
        if d is None or not d.is_floating:
            x = _to_floating(x)
    if b.scope is None:
        out = op.forward(b, x._array, **params)
    else:
        with b.scope:
            out = op.forward(b, x._array, **params)
    raw = out
    if type(out) is not b.array_type:
        out = b.ensure_array(out)
    if hooked and context.recorder is not None:
        context.recorder.op(op, b, (x,), params, out, out is not raw)
    if x.requires_grad and not mode & NO_GRAD and op.differentiable:
        t = record(op, (x,), out, b, params)
    elif hooked:
        t = _plain(op, out, b)
    else:
        t = _result(out, b)
    if op.view and op.is_view(params):
        x._adopt_view(t, op, params)
    return t


def binary(op: type[Op], x: Any, y: Any) -> Tensor:
    """``apply`` for two inputs, at least one a tensor, the other maybe a Python scalar."""
    mode = 0 if quiet.on else context.mode  # one read for all of the thread's settings
    hooked = mode & HOOKED  # anomaly, recorder, transform or autocast
    if hooked:
        if op.amp_float32 and context.autocast is not None and (
                op.amp_float32 is True or not isinstance(x, Tensor)):
            x, y = _up(x), _up(y)
        if context.transform is not None:
            return context.transform.process(binary, op, (x, y), {})
    if op.floating and not (_inexact(x) or _inexact(y)):  # (int8 / float16: float16)
        x, y = _to_floating(x), _to_floating(y)
    if isinstance(x, Tensor):
        b = x._backend
        if isinstance(y, Tensor):
            if y._backend is not b:
                raise _mixed(op, (x, y))
            if x._array.dtype is not y._array.dtype:
                x, y = _promote(x, y)
            xa, ya = x._array, y._array
            needs = x.requires_grad or y.requires_grad
        elif type(y) in _SCALARS:
            d = b._from_native.get(x._array.dtype) or b.xad_dtype(x._array.dtype)
            if d in _HALF and _beyond_half(d, y, op.name):
                return _in_float32(op, x, y)
            if type(y) is not float or d is None or not d.is_floating:
                x, y = _weak(x, y, op.name)  # (a float with a floating tensor: no change)
                ya = y
            else:
                ya = b.float_operand(y, d) if op.float_as_0d else y
            xa = x._array
            needs = x.requires_grad
        elif y is None:
            raise _no_none(op, x, y)
        else:
            return binary(op, x, _operand(op, y, x))
    elif isinstance(y, Tensor) and type(x) in _SCALARS:
        b = y._backend
        d = b._from_native.get(y._array.dtype) or b.xad_dtype(y._array.dtype)
        if d in _HALF and _beyond_half(d, x, op.name, _OPMATH_REFLECTED):
            return _in_float32(op, x, y)
        y, x = _weak(y, x, op.name)
        xa, ya = x, y._array
        if type(x) is float and op.float_as_0d:
            d = b.xad_dtype(ya.dtype)  # (after _weak: an integer y is floating now)
            xa = x if d is None or not d.is_floating else b.float_operand(x, d)
        needs = y.requires_grad
    else:
        if x is None or y is None:
            raise _no_none(op, x, y)
        like = y if isinstance(y, Tensor) else None
        x, y = _operand(op, x, like), _operand(op, y, like)
        if not isinstance(x, Tensor) and not isinstance(y, Tensor):
            return apply(op, x, y)
        return binary(op, x, y)
    if b.scope is None:
        f = op.operator
        out = op.forward(b, xa, ya) if f is None else f(xa, ya)
    else:  # the device made current (CuPy), written out: this is the per-operation path
        with b.scope:
            out = op.forward(b, xa, ya)
    raw = out
    if type(out) is not b.array_type:
        out = b.ensure_array(out)
    if hooked and context.recorder is not None:
        context.recorder.op(op, b, (x, y), {}, out, out is not raw)
    if needs and not mode & NO_GRAD and op.differentiable:
        return record(op, (x, y), out, b)
    return _plain(op, out, b) if hooked else _result(out, b)


def apply(op: type[Op], *args: Any, **params: Any) -> Any:
    """Run ``op`` on tensors and Python scalars; record a node when a gradient is needed."""
    mode = 0 if quiet.on else context.mode  # one read for all of the thread's settings
    hooked = mode & HOOKED  # anomaly, recorder, transform or autocast
    if hooked:
        if op.amp_float32 is True and context.autocast is not None:
            args = tuple(_up(a) for a in args)
        if context.transform is not None:
            return context.transform.process(apply, op, args, params)
    backend = None
    needs = False
    datas = []
    for a in args:
        if isinstance(a, Tensor):
            if backend is None:
                backend = a._backend
            elif a._backend is not backend:
                raise _mixed(op, args)
            datas.append(a._array)
            if a.requires_grad:
                needs = True
        else:
            a = _operand(op, a)
            if isinstance(a, Tensor):
                like = next((v for v in args if isinstance(v, Tensor)), None)
                return apply(op, *(_operand(op, v, like) for v in args), **params)
            datas.append(a)
    if backend is None:
        backend = get_backend()
    if backend.scope is None:
        raw = op.forward(backend, *datas, **params)
    else:
        with backend.scope:
            raw = op.forward(backend, *datas, **params)
    kind = backend.array_type
    out: Any  # a tuple of arrays where the op returns several, else one array
    if type(raw) is tuple:  # (loops, not generators: rules' several-output kernels)
        out, changed = raw, False
        for o in raw:
            if type(o) is not kind:
                out = tuple([o if type(o) is kind else backend.ensure_array(o) for o in raw])
                changed = any([o is not r for o, r in zip(out, raw)])
                break
    else:
        out = raw if type(raw) is kind else backend.ensure_array(raw)
        changed = out is not raw
    if hooked and context.recorder is not None:
        context.recorder.op(op, backend, args, params, out, changed)
    if needs and not mode & NO_GRAD and op.differentiable:
        return record(op, args, out, backend, params)
    if type(out) is tuple:
        if hooked:
            return tuple([_plain(op, o, backend) for o in out])
        return tuple([_result(o, backend) for o in out])
    return _plain(op, out, backend) if hooked else _result(out, backend)
