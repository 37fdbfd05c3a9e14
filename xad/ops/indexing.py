"""Indexing, item assignment, in-place arithmetic, and moving tensors between backends."""

from __future__ import annotations

import operator
from typing import Any

from .. import autograd as _ag
from ..backend import Backend
from ..backend import _make as _make_backend
from ..tensor import Tensor
from ._apply import Op, apply
from .elementwise import add, divide, multiply, subtract

__all__ = ["getitem", "setitem_", "inplace", "to_backend"]


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
            if k._backend is not x._backend:
                raise RuntimeError(f"indexing: the index is on {k._backend.label} but the "
                                   f"tensor (shape {x.shape}) is on {x._backend.label}; "
                                   f"move the index with .to(...)")
            out.append(k.data)
            advanced = True
        elif isinstance(k, bool):
            raise TypeError("indexing with a Python bool is not supported; use a bool tensor")
        elif hasattr(k, "__index__") and not hasattr(k, "shape") or isinstance(k, int):
            out.append(operator.index(k))
        elif isinstance(k, (list, tuple)) or hasattr(k, "shape"):
            # host lists and arrays move to the tensor's backend (an explicit copy)
            out.append(x._backend.asarray(k))
            advanced = True
        else:
            raise TypeError(f"indexing: unsupported index of type {type(k).__name__}")
    return tuple(out), advanced


class GetItem(Op):
    name = "getitem"

    @staticmethod
    def forward(b, x, key, advanced):
        return x[key]

    @staticmethod
    def backward(node, g):
        p = node.params
        return apply(IndexAddInto, g, shape=node.in_shapes[0], key=p["key"],
                     advanced=p["advanced"])


class IndexAddInto(Op):
    """Scatter ``g`` into zeros of ``shape`` at ``key``; repeated indices add up."""

    name = "index_add"

    @staticmethod
    def forward(b, g, shape, key, advanced):
        z = b.zeros(shape, g.dtype)
        if not advanced and b.mutable:
            z[key] = g
            return z
        return b.index_add(z, key, g)

    @staticmethod
    def backward(node, gg):
        p = node.params
        return apply(GetItem, gg, key=p["key"], advanced=p["advanced"])


class IndexPut(Op):
    """``x`` with ``x[key] = v`` as a new array (the recorded form of item assignment)."""

    name = "index_put"

    @staticmethod
    def forward(b, x, v, key):
        out = b.xp.asarray(x, copy=True) if b.mutable else x
        if not isinstance(v, (int, float, bool)) and v.dtype != x.dtype:
            v = b.xp.astype(v, x.dtype)
        return b.set_at(out, key, v)

    @staticmethod
    def backward(node, g):
        key = node.params["key"]
        gv = getitem_raw(g, key) if node.edges[1] is not None else None
        return apply(IndexPut, g, 0.0, key=key), gv


def getitem_raw(x: Tensor, key: tuple) -> Tensor:
    advanced = any(not (k is None or k is Ellipsis or isinstance(k, (int, slice))) for k in key)
    return apply(GetItem, x, key=key, advanced=advanced)


def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]``: slices, ints, None, ``...``, bool masks and integer arrays.

    Example:
        >>> import xad
        >>> x = xad.arange(4.0, requires_grad=True)
        >>> x[[0, 0, 3]].sum().backward(); x.grad.tolist()
        [2.0, 0.0, 0.0, 1.0]
    """
    k, advanced = _norm_key(x, key)
    return apply(GetItem, x, key=k, advanced=advanced)


def _leaf_error(x: Tensor, what: str) -> RuntimeError:
    return RuntimeError(f"{what}: the tensor (shape {x.shape}) is a leaf that requires grad; "
                        f"changing it in place would lose its gradient. Do it under "
                        f"xad.no_grad() (as optimisers do) or change a clone.")


def setitem_(x: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value``, in place (recorded when a gradient is needed).

    Example:
        >>> import xad
        >>> x = xad.zeros(3); x[1] = 5.0; x.tolist()
        [0.0, 5.0, 0.0]
    """
    k, _ = _norm_key(x, key)
    v = value if isinstance(value, (Tensor, int, float, bool)) else Tensor(value,
                                                                           backend=x._backend)
    if isinstance(v, Tensor) and v._backend is not x._backend:
        raise RuntimeError(f"setitem: the value is on {v._backend.label} but the tensor is on "
                           f"{x._backend.label}; move it with .to(...)")
    needs = x.requires_grad or (isinstance(v, Tensor) and v.requires_grad)
    if needs and _ag._mode.enabled:
        if x._node is None and x.requires_grad:
            raise _leaf_error(x, "setitem")
        out = apply(IndexPut, x, v, key=k)
        x.data, x._node, x._idx, x.requires_grad = out.data, out._node, 0, True
    else:
        b = x._backend
        vd = v.data if isinstance(v, Tensor) else v
        if not isinstance(vd, (int, float, bool)) and vd.dtype != x.data.dtype:
            vd = b.xp.astype(vd, x.data.dtype)
        if x._node is None:
            x.data = b.set_at(x.data, k, vd)
        else:  # never write into an array a recorded node may have saved
            x.data = b.set_at(b.xp.asarray(x.data, copy=True) if b.mutable else x.data, k, vd)
    x._version += 1


# op name -> (recorded function, in-place array operator, out-of-place array operator)
_INPLACE = {"add": (add, operator.iadd, operator.add),
            "subtract": (subtract, operator.isub, operator.sub),
            "multiply": (multiply, operator.imul, operator.mul),
            "divide": (divide, operator.itruediv, operator.truediv)}


def inplace(x: Tensor, other: Any, op: str) -> Tensor:
    """``x op= other``: recorded when a gradient is needed, else written into ``x``'s array."""
    fn, ifn, ofn = _INPLACE[op]
    o = other if isinstance(other, (Tensor, int, float, bool)) else Tensor(other,
                                                                           backend=x._backend)
    needs = x.requires_grad or (isinstance(o, Tensor) and o.requires_grad)
    if needs and _ag._mode.enabled:
        if x._node is None and x.requires_grad:
            raise _leaf_error(x, f"in-place {op}")
        out = fn(x, o)
        if out.data.dtype != x.data.dtype:
            raise TypeError(f"in-place {op}: the result's dtype {out.dtype} differs from the "
                            f"tensor's {x.dtype}; assign the result to a new tensor instead")
        x.data, x._node, x._idx, x.requires_grad = out.data, out._node, out._idx, True
    else:
        if isinstance(o, Tensor):
            if o._backend is not x._backend:
                raise RuntimeError(f"in-place {op}: tensors on {x._backend.label} and "
                                   f"{o._backend.label}; move one with .to(...)")
            od = o.data
        else:
            od = o
        # a leaf's array is written in place where arrays are mutable; a non-leaf's array
        # may be saved by a recorded node, so it is replaced instead
        x.data = ifn(x.data, od) if x._node is None else ofn(x.data, od)
    x._version += 1
    return x


class ToBackend(Op):
    name = "to_backend"

    @staticmethod
    def backward(node, g):
        return to_backend(g, node.params["source"])


def to_backend(x: Tensor, target: str | Backend, device: Any = None) -> Tensor:
    """Copy ``x`` to another backend or device (explicitly, through the host if needed);
    differentiable.

    Example:
        >>> import xad
        >>> xad.to_backend(xad.ones(2), "array_api_strict").backend.name
        'array_api_strict'
    """
    if isinstance(target, Backend):
        tb = target
    elif isinstance(target, str) and (device is not None or target in _known_names()):
        tb = _make_backend(target, device)
    else:  # a device of the tensor's own backend
        tb = _make_backend(x._backend.name, target)
    src = x._backend
    if tb is src:
        return x
    data = tb.from_numpy(src.to_numpy(x.data))
    out = Tensor._make(data, tb)
    if x.requires_grad and _ag._mode.enabled:
        node = _ag.Node(ToBackend, (x if x._node is None else (x._node, x._idx),),
                        (x.shape,), tb)
        node.params = {"source": src}
        out._node, out.requires_grad = node, True
    return out


def _known_names() -> list[str]:
    from ..backend import backend_names
    return backend_names()


