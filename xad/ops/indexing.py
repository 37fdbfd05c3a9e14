"""Indexing: reading (``x[key]``), its scatter-add gradient, and the recorded form of item
assignment (``index_put``), on every backend, with the standard alone where needed."""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any

from .. import dtypes as _dt
from ..factories import zeros_like
from ..tensor import Tensor
from ._apply import Op, apply, unary
from .batching import unbatched_error
from .shape import broadcast_to, permute_dims, reshape
from .tangent import linear_jvp

__all__ = ["getitem"]


def _host_integer(k: Any) -> bool:
    """A NumPy integer scalar or 0-d integer host array: an integer index, as in NumPy."""
    return (hasattr(k, "__index__") and getattr(k, "shape", ()) == ()
            and getattr(getattr(k, "dtype", None), "kind", "i") != "b")


def _norm_key(x: Tensor, key: Any) -> tuple[tuple, bool]:
    """Turn an index into a tuple of slices, ints, None, Ellipsis and backend arrays."""
    if not isinstance(key, tuple):
        key = (key,)
    out: list[Any] = []
    advanced = False
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, slice):
            out.append(k)
        elif isinstance(k, Tensor):
            if k.dtype is _dt.bool_ and k.ndim != k._array.ndim:  # batched by xad.vmap
                raise unbatched_error("getitem", "a bool mask that is batched (the "
                                      "selection's size would differ by example)")
            if k._backend is not x._backend:
                raise RuntimeError(f"indexing: the index is on {k._backend.label} but the "
                                   f"tensor (shape {x.shape}) is on {x._backend.label}; "
                                   f"move the index with .to(...)")
            out.append(k._array)
            advanced = True
        elif k is True and not any(isinstance(j, (Tensor, list)) or hasattr(j, "shape")
                                   for j in key):
            out.append(None)  # x[True] is x[None], as in NumPy and PyTorch
        elif isinstance(k, bool):
            raise TypeError(f"indexing: a Python bool {k} in {key!r} is supported only as "
                            "x[True] or x[False], or True among slices; use a bool tensor")
        elif isinstance(k, int) or _host_integer(k):
            out.append(operator.index(k))
        elif isinstance(k, (list, tuple)) or hasattr(k, "shape"):
            # host lists and arrays move to the tensor's backend (an explicit copy); an empty
            # list selects nothing (an int64 index, as PyTorch)
            b = x._backend
            out.append(b.asarray(k) if len(k) else b.asarray([], dtype=b.xp.int64))
            advanced = True
        else:
            raise TypeError(f"indexing: unsupported index of type {type(k).__name__}")
    out = _checked(x, out)
    if not advanced and not any(k is Ellipsis for k in out):
        out.append(Ellipsis)  # the standard wants every axis indexed, or a trailing ...
    return tuple(out), advanced


def _clamped(k: slice, n: int) -> slice:
    """A slice with its bounds inside an axis of length ``n`` (Python's meaning: the
    standard leaves out-of-range bounds unspecified, and array_api_strict refuses them)."""
    start, stop, step = k.indices(n)
    if step < 0 and stop < 0:
        return slice(start, None, step)  # runs down through index 0
    return slice(start, stop, step)


def _checked(x: Tensor, key: list) -> list:
    """The key with slices clamped; raises for index arrays that are not integer or bool,
    bool masks of the wrong shape, and integers out of range (one reduction and one
    explicit host read per index array)."""
    b, shape = x._backend, x.shape
    used = builtins.sum(k.ndim if _is_array(k) and _is_bool(b, k) else 1
                        for k in key if k is not None and k is not Ellipsis)
    axis, out = 0, []
    for k in key:
        out.append(k)
        if k is None:
            continue
        if k is Ellipsis:
            axis += len(shape) - used
            continue
        if axis >= len(shape) and not (_is_array(k) and _is_bool(b, k) and k.ndim == 0):
            raise IndexError(f"indexing: too many indices for a tensor of shape {shape}")
        if isinstance(k, slice):
            out[-1] = _clamped(k, shape[axis])
        elif _is_array(k) and _is_bool(b, k):
            if tuple(k.shape) != shape[axis:axis + k.ndim]:
                raise IndexError(f"indexing: a bool mask of shape {tuple(k.shape)} does not "
                                 f"match axes {axis}.. of the indexed shape {shape}")
            axis += k.ndim
            continue
        elif _is_array(k):
            with b.on_device():
                _check_ints(b, k, axis, shape[axis])
        elif isinstance(k, int) and not -shape[axis] <= k < shape[axis]:
            raise IndexError(f"indexing: index {k} is out of bounds for axis {axis} with size "
                             f"{shape[axis]}")
        axis += 1
    return out


def _check_ints(b: Any, k: Any, axis: int, n: int) -> None:
    xp = b.xp
    if not xp.isdtype(k.dtype, "integral"):
        raise IndexError(f"indexing: index arrays must be integer or bool, got dtype "
                         f"{b.xad_dtype(k.dtype)}; convert with .astype(xad.int64)")
    if 0 in k.shape or not b.item(xp.any((k < -n) | (k >= n))):  # explicit host read
        return
    bad = xp.where((k < -n) | (k >= n), k, xp.zeros_like(k))
    lo, hi = b.item(xp.min(bad)), b.item(xp.max(bad))
    raise IndexError(f"indexing: index {hi if hi >= n else lo} is out of bounds for axis "
                     f"{axis} with size {n}")


# ----- advanced indexing with the standard alone ------------------------------------------
# The standard (and array_api_strict) allows integer arrays only when every index is an
# integer or an integer array, a bool mask only as the sole index, and no None or integer
# arrays in item assignment. Where a library refuses a NumPy-style key, the key is turned
# into the flat positions it selects (arange, reshape, take: standard functions only) and
# the operation is done on the flattened array.
def _positions(b: Any, shape: tuple[int, ...], key: tuple) -> Any:
    """The flat positions (int64, shaped as NumPy's ``x[key]``) that ``key`` selects."""
    xp, dev = b.xp, b.device
    n_used = sum(0 if k is None or k is Ellipsis else
                 (k.ndim if _is_array(k) and _is_bool(b, k) else 1) for k in key)
    full: list[Any] = []
    for k in key:
        if k is Ellipsis:
            full.extend([slice(None)] * (len(shape) - n_used))
        else:
            full.append(k)
    if not any(k is Ellipsis for k in key):
        full.extend([slice(None)] * (len(shape) - n_used))
    # stage 1, basic: slices and None; integers and arrays keep their axes for stage 2
    basic: list[Any] = []
    stage2: list[Any] = []
    for k in full:
        if k is None or isinstance(k, slice):
            basic.append(k)
            stage2.append(None)
        elif _is_array(k) and _is_bool(b, k):
            basic.extend([slice(None)] * k.ndim)
            stage2.extend(xp.nonzero(k))
        else:
            basic.append(slice(None))
            stage2.append(xp.asarray(k, dtype=xp.int64, device=dev) if not _is_array(k)
                          else k)
    n = 1
    for s in shape:
        n *= s
    pos = xp.reshape(xp.arange(n, dtype=xp.int64, device=dev), shape)[tuple(basic)]
    # stage 2: broadcast the index arrays; the other axes stay, NumPy's placement rule
    s1 = tuple(pos.shape)
    arr_dims = [d for d, k in enumerate(stage2) if k is not None]
    if not arr_dims:
        return pos
    arrs = xp.broadcast_arrays(*[stage2[d] for d in arr_dims])
    bshape = tuple(arrs[0].shape)
    others = [d for d in range(len(s1)) if d not in arr_dims]
    contiguous = arr_dims == list(range(arr_dims[0], arr_dims[-1] + 1))
    at = arr_dims[0] if contiguous else 0  # where the broadcast axes go in the result
    out_dims: dict[int, int] = {}
    r = 0
    for d in others:
        if r == at:
            r += len(bshape)
        out_dims[d] = r
        r += 1
    rank = len(others) + len(bshape)
    out_shape = [1] * rank
    strides = [1] * len(s1)
    for d in range(len(s1) - 2, -1, -1):
        strides[d] = strides[d + 1] * s1[d + 1]
    flat = None
    for d in range(len(s1)):
        if d in out_dims:
            shp = [1] * rank
            shp[out_dims[d]] = s1[d]
            out_shape[out_dims[d]] = s1[d]
            idx = xp.reshape(xp.arange(s1[d], dtype=xp.int64, device=dev), tuple(shp))
        else:
            a = arrs[arr_dims.index(d)]
            a = xp.where(a < 0, a + s1[d], a)
            idx = xp.reshape(a, (1,) * at + bshape + (1,) * (rank - at - len(bshape)))
        term = idx * strides[d]
        flat = term if flat is None else flat + term
    out_shape[at:at + len(bshape)] = bshape
    flat = xp.broadcast_to(flat, tuple(out_shape))
    return xp.reshape(xp.take(xp.reshape(pos, (-1,)), xp.reshape(flat, (-1,))),
                      tuple(out_shape))


def _is_array(k: Any) -> bool:
    return hasattr(k, "shape") and hasattr(k, "dtype")


def _is_bool(b: Any, k: Any) -> bool:
    return k.dtype == b.xp.bool


def _split_ints(key: tuple) -> bool:
    """Whether integers and index arrays are separated by a slice, None or ``...``: NumPy
    then puts the broadcast axes first, PyTorch does not (such keys go by flat positions)."""
    adv = [i for i, k in enumerate(key) if not (k is None or k is Ellipsis
                                                  or isinstance(k, slice))]
    has_int = any(isinstance(key[i], int) for i in adv)
    return has_int and len(adv) > 1 and adv[-1] - adv[0] + 1 != len(adv)


def _get(b: Any, x: Any, key: tuple) -> Any:
    """``x[key]``; by flat positions where the library refuses the key."""
    try:
        if _split_ints(key):
            raise IndexError
        return x[key]
    except IndexError:
        with b.on_device():  # array operators run on the current device
            pos = _positions(b, tuple(x.shape), key)
    xp = b.xp
    return xp.reshape(xp.take(xp.reshape(x, (-1,)), xp.reshape(pos, (-1,))), pos.shape)


def _index_add(b: Any, z: Any, key: tuple, g: Any) -> Any:
    """``z`` with ``g`` added at ``z[key]`` (repeats accumulate); on bools, whether any
    is True (PyTorch's bool sum), counted in int32 (JAX, the standard and CuPy's atomics
    add no bools)."""
    xp = b.xp
    if b.xad_dtype(z.dtype) is _dt.bool_:
        n = _index_add(b, xp.astype(z, xp.int32), key, xp.astype(xp.asarray(g), xp.int32))
        return n != 0
    try:
        if _split_ints(key):
            raise IndexError
        return b.index_add(z, key, g)
    except IndexError:
        with b.on_device():  # array operators run on the current device
            pos = _positions(b, tuple(z.shape), key)
    vals = xp.reshape(xp.broadcast_to(g, pos.shape), (-1,))
    flat = b.scatter_add_flat(xp.reshape(z, (-1,)), xp.reshape(pos, (-1,)), vals)
    return xp.reshape(flat, z.shape)


def _set(b: Any, x: Any, key: tuple, v: Any) -> Any:
    """``x`` with ``x[key] = v`` (in place where the library can); a position set more than
    once gets the last of its values, as NumPy's and PyTorch's (CPU) assignments. A value
    with extra leading 1-dims (``z[0] = v`` with ``v`` of shape ``(1, n)``) loses them, as
    NumPy allows."""
    if not isinstance(v, (int, float, bool)) and v.ndim and v.shape[0] == 1:
        slot = tuple(_get(b, x, key).shape)
        if v.ndim > len(slot):
            lead = v.ndim - len(slot)
            if any(n != 1 for n in v.shape[:lead]):
                raise ValueError(_shape_error(tuple(v.shape), slot))
            v = b.xp.reshape(v, tuple(v.shape[lead:]))
    try:
        return _set_raw(b, x, key, v)
    except Exception as e:
        if isinstance(v, (int, float, bool)):
            raise
        vs, slot = tuple(v.shape), tuple(_get(b, x, key).shape)
        if len(vs) <= len(slot) and all(a in (1, c) for a, c in zip(vs[::-1], slot[::-1])):
            raise
        raise ValueError(_shape_error(vs, slot)) from e


def _shape_error(vs: tuple, slot: tuple) -> str:
    return (f"setitem: cannot assign a value of shape {vs} to the selected elements of shape "
            f"{slot}: the value must broadcast to them (leading 1-dims may be extra)")


def _set_raw(b: Any, x: Any, key: tuple, v: Any) -> Any:
    try:  # a lone index goes by itself (array_api_strict unwraps no arrays inside tuples)
        if _split_ints(key):
            raise IndexError
        return b.set_at(x, key[0] if len(key) == 1 else key, v)
    except IndexError:
        with b.on_device():  # array operators run on the current device
            pos = _positions(b, tuple(x.shape), key)
    xp = b.xp
    p = xp.reshape(pos, (-1,))
    vals = xp.broadcast_to(xp.asarray(v, dtype=x.dtype, device=b.device), pos.shape)
    if p.shape[0] == 0:
        return x
    order = xp.argsort(p, stable=True)  # a position's writes in order: the last one wins
    sp = xp.take(p, order)
    slots = xp.arange(math.prod(x.shape), dtype=sp.dtype, device=b.device)
    lo = xp.searchsorted(sp, slots, side="left")
    hi = xp.searchsorted(sp, slots, side="right")
    last = xp.take(order, xp.clip(hi - 1, 0, None))
    new = xp.take(xp.reshape(vals, (-1,)), last)
    return xp.reshape(xp.where(hi > lo, new, xp.reshape(x, (-1,))), x.shape)


class GetItem(Op):
    name = "getitem"
    view = True

    @classmethod
    def is_view(cls, params: dict) -> bool:
        return not params["advanced"]  # integer arrays and masks copy

    @staticmethod
    def forward(b, x, key, advanced):
        return _get(b, x, key) if advanced else x[key]

    @staticmethod
    def backward(node, g):
        p = node.params
        return unary(IndexAddInto, g, shape=node.in_shapes[0], key=p["key"],
                     advanced=p["advanced"])

    @staticmethod
    def batch(args, batched, key, advanced, batched_params=None):
        if not advanced:
            return apply(GetItem, args[0], key=(slice(None),) + tuple(key),
                         advanced=False), True
        flags = (batched_params or {}).get("key") or (False,) * len(key)
        return _batched_gather(args[0], batched[0], key, flags), True

    jvp = classmethod(linear_jvp)


def _batched_gather(x: Tensor, fx: bool, key: tuple, flags: tuple) -> Tensor:
    """``x[key]`` for every example (``vmap``): the key's index arrays (a batched one with
    the batch axis first) joined by an index of the batch axis broadcast against them, so
    one gather serves the batch; where NumPy's rule would put the broadcast axes first but
    the per-example key does not, they are moved back."""
    b = x._backend
    xp = b.xp
    n = x.shape[0] if fx else next(k.shape[0] for k, f in zip(key, flags) if f)
    if not fx:
        x = broadcast_to(x, (n,) + tuple(x.shape))
    parts, pflags = _expanded(b, key, flags, x.ndim - 1)
    adv = [i for i, k in enumerate(parts) if isinstance(k, int) or _is_array(k)]
    rank = builtins.max((k.ndim - f if _is_array(k) else 0) for k, f in zip(parts, pflags))
    phys: list[Any] = [xp.reshape(xp.arange(n, dtype=xp.int64, device=b.device),
                                  (n,) + (1,) * rank)]
    for k, f in zip(parts, pflags):
        if f and k.ndim - 1 < rank:  # unit axes after the batch axis: broadcast as logical
            k = xp.reshape(k, (n,) + (1,) * (rank - k.ndim + 1) + tuple(k.shape[1:]))
        phys.append(k)
    y = apply(GetItem, x, key=tuple(phys), advanced=True)
    at = builtins.sum(1 for k in parts[:adv[0]] if k is None or isinstance(k, slice))
    if at and adv == list(range(adv[0], adv[-1] + 1)):  # NumPy put them first: move back
        perm = [0, *range(1 + rank, 1 + rank + at), *range(1, 1 + rank),
                *range(1 + rank + at, y.ndim)]
        y = permute_dims(y, perm)
    return y


def _expanded(b: Any, key: tuple, flags: tuple, ndim: int) -> tuple[list, list]:
    """The key without ``...`` (slices instead) and with bool masks as their index arrays."""
    used = builtins.sum(0 if k is None or k is Ellipsis else
                        (k.ndim if _is_array(k) and _is_bool(b, k) else 1) for k in key)
    parts: list[Any] = []
    pflags: list[bool] = []
    for k, f in zip(key, flags):
        if k is Ellipsis:
            parts.extend([slice(None)] * (ndim - used))
            pflags.extend([False] * (ndim - used))
        elif _is_array(k) and _is_bool(b, k):
            if f or k.ndim == 0:
                raise unbatched_error("getitem", "a bool mask that is batched or 0-d (the "
                                      "selection's size would differ by example)")
            with b.on_device():
                idx = b.xp.nonzero(k)
            parts.extend(idx)
            pflags.extend([False] * len(idx))
        else:
            parts.append(k)
            pflags.append(f)
    return parts, pflags


class IndexAddInto(Op):
    """Scatter ``g`` into zeros of ``shape`` at ``key``; repeated indices add up."""

    name = "index_add"

    @staticmethod
    def forward(b, g, shape, key, advanced):
        z = b.zeros(shape, g.dtype)
        if not advanced and b.mutable:
            k = tuple(i for i in key if i is not None)  # None may not appear in setitem
            z[k] = b.xp.reshape(g, z[k].shape)
            return z
        return _index_add(b, z, key, g)

    @staticmethod
    def backward(node, gg):
        p = node.params
        return unary(GetItem, gg, key=p["key"], advanced=p["advanced"])

    jvp = classmethod(linear_jvp)


class IndexPut(Op):
    """``x`` with ``x[key] = v`` as a new array (the recorded form of item assignment)."""

    name = "index_put"

    @staticmethod
    def forward(b, x, v, key):
        out = b.xp.asarray(x, copy=True) if b.mutable else x
        if not isinstance(v, (int, float, bool)) and v.dtype != x.dtype:
            v = b.xp.astype(v, x.dtype)
        return _set(b, out, key, v)

    @staticmethod
    def backward(node, g):
        key = node.params["key"]
        gv = None
        if node.needs_grad(1):
            gv = getitem_raw(g, key)
            vshape = node.in_shapes[1]
            if len(vshape) > gv.ndim:  # the value had extra leading 1-dims
                gv = reshape(gv, (1,) * (len(vshape) - gv.ndim) + tuple(gv.shape))
        gx = apply(IndexPut, g, 0.0, key=key) if node.needs_grad(0) else None
        return gx, gv

    @staticmethod
    def batch(args, batched, key, batched_params=None):
        """Per example, for a basic key into a batched tensor (the value batched or not)."""
        (x, v), (fx, fv) = args, batched
        if batched_params or not fx or any(
                not (k is None or k is Ellipsis or isinstance(k, (int, slice))) for k in key):
            raise NotImplementedError(
                "vmap: the primitive 'index_put' has no batching rule for an integer-array or "
                "mask index, or for a batched value written into a tensor that is not "
                "batched; run that part with a Python loop")
        key = (slice(None),) + tuple(key)
        if fv:  # the value's axes line up with the selection's last ones
            rank = x.ndim - sum(type(k) is int for k in key) + sum(k is None for k in key)
            v = reshape(v, (v.shape[0],) + (1,) * (rank - v.ndim) + tuple(v.shape[1:]))
        return apply(IndexPut, x, v, key=key), True

    @staticmethod
    def jvp(primals, tangents, out, key):
        """``tx`` with ``tx[key] = tv``: a value without a tangent (a number) puts zeros."""
        (x, _), (tx, tv) = primals, tangents
        tx = zeros_like(x) if tx is None else tx
        return apply(IndexPut, tx, 0.0 if tv is None else tv, key=key)


def getitem_raw(x: Tensor, key: tuple) -> Tensor:
    advanced = any(not (k is None or k is Ellipsis or isinstance(k, (int, slice))) for k in key)
    return unary(GetItem, x, key=key, advanced=advanced)


def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]``: slices, ints, None, ``...``, bool masks and integer arrays.

    Example:
        >>> import xad
        >>> x = xad.arange(4.0, requires_grad=True)
        >>> x[[0, 0, 3]].sum().backward(); x.grad.tolist()
        [2.0, 0.0, 0.0, 1.0]
    """
    if key is False:  # an empty selection on a new axis, as NumPy's and PyTorch's x[False]
        return getitem(getitem(x, None), slice(0, 0))
    k, advanced = _norm_key(x, key)
    return unary(GetItem, x, key=k, advanced=advanced)
