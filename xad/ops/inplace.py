"""In-place changes of a tensor: item assignment (``x[key] = v``) and ``x op= y``.

Recorded when a gradient is needed (the tensor then points at a new node, and its old value
stays with the nodes that saved it); otherwise written into the tensor's array.
"""

from __future__ import annotations

import operator
from typing import Any

from .. import autograd as _ag
from ..tensor import Tensor
from ._apply import apply
from .elementwise import add, divide, multiply, subtract
from .indexing import IndexPut, _norm_key, _set

__all__ = ["setitem_", "inplace"]


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
        out = apply(IndexPut, _alias(x), v, key=k)
        x._rebind(out._array, out._node, 0)
        return
    else:
        b = x._backend
        vd = v._array if isinstance(v, Tensor) else v
        if not isinstance(vd, (int, float, bool)) and vd.dtype != x._array.dtype:
            vd = b.xp.astype(vd, x._array.dtype)
        if x._node is None:
            x._set_data(_set(b, x._array, k, vd))
        else:  # never write into an array a recorded node may have saved
            x._rebind(_set(b, b.xp.asarray(x._array, copy=True) if b.mutable else x._array,
                           k, vd))


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
        out = fn(_alias(x), o)  # the node saves the alias: x's old value and version
        if out._array.dtype != x._array.dtype:
            raise TypeError(f"in-place {op}: the result's dtype {out.dtype} differs from the "
                            f"tensor's {x.dtype}; assign the result to a new tensor instead")
        x._rebind(out._array, out._node, out._idx)
        return x
    else:
        if isinstance(o, Tensor):
            if o._backend is not x._backend:
                raise RuntimeError(f"in-place {op}: tensors on {x._backend.label} and "
                                   f"{o._backend.label}; move one with .to(...)")
            od = o._array
        else:
            od = o
        # a leaf's array is written in place where arrays are mutable; a non-leaf's array
        # may be saved by a recorded node, so it is replaced instead
        if x._node is None:
            x._set_data(ifn(x._array, od))
        else:
            x._rebind(ofn(x._array, od))
    return x


def _alias(x: Tensor) -> Tensor:
    """Another tensor object for x's current value, array, node and version counter."""
    a = Tensor._make(x._array, x._backend)
    a._node, a._idx, a.requires_grad, a._vc = x._node, x._idx, x.requires_grad, x._vc
    return a
