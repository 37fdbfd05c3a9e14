"""In-place changes of a tensor: item assignment (``x[key] = v``) and ``x op= y``.

Recorded when a gradient is needed (the tensor then points at a new node, and its old value
stays with the nodes that saved it); otherwise written into the tensor's array.

Views: a change through a view reaches its base, and a changed base reaches its views, as in
PyTorch. Where the view shares the base's memory and no graph is involved, writing into the
view's array does it. Otherwise (a recorded change, a base in a graph, JAX's immutable
arrays) the change is made on the base (``base[key] = new view value``; for a reshape,
permutation or flip, which covers every element once, the whole base takes the new value
mapped back) and the views are remade from the base. A change through ``broadcast_to``'s
view of a tensor in a graph raises, saying so (its elements repeat).
"""

from __future__ import annotations

import operator
from typing import Any

from .. import grad_mode
from ..context import context
from ..tensor import Tensor
from ._apply import apply, unary
from .elementwise import add, divide, multiply, subtract
from .indexing import IndexPut, _norm_key, _set
from .shape import flip, permute_dims, reshape

__all__ = ["setitem_", "inplace"]


def _leaf_error(x: Tensor, what: str) -> RuntimeError:
    return RuntimeError(f"{what}: the tensor (shape {x.shape}) is a leaf that requires grad; "
                        f"changing it in place would lose its gradient. Do it under "
                        f"xad.no_grad() (as optimisers do) or change a clone.")


def _value(x: Tensor, value: Any, what: str) -> Any:
    """The right-hand side as a tensor on ``x``'s backend, or a Python number."""
    if isinstance(value, (int, float, bool)):
        return value
    v = value if isinstance(value, Tensor) else Tensor(value, backend=x._backend)
    if v._backend is not x._backend:
        raise RuntimeError(f"{what}: the value is on {v._backend.label} but the tensor is on "
                           f"{x._backend.label}; move it with .to(...)")
    return v


def _recorded(x: Tensor, v: Any) -> bool:
    if context.transform is not None:  # xad.jvp / xad.vmap see the change as an operation
        return True
    return context.grad_enabled and (x.requires_grad or (isinstance(v, Tensor)
                                                          and v.requires_grad))


def _through_base(x: Tensor, v: Any) -> bool:
    """Whether a change of the view ``x`` must be made on its base (writing into the view's
    array would not reach it, or would bypass the graph)."""
    b = x._base
    return b is not None and (b._node is not None or _recorded(x, v)
                              or not x._backend.mutable)


def _onto_base(op: Any, params: dict, new: Tensor, base: Tensor) -> tuple | None:
    """``(key, value)`` that assigns the view's new value into its base, or None for a view
    whose elements repeat (``broadcast_to``)."""
    if op.name == "getitem":
        return params["key"], new
    if op.name == "reshape":
        return ..., reshape(new, base.shape)
    if op.name == "permute_dims":
        inverse = [0] * len(params["axes"])
        for i, a in enumerate(params["axes"]):
            inverse[a] = i
        return ..., permute_dims(new, tuple(inverse))
    if op.name == "flip":
        return ..., flip(new, axis=params["axis"])
    return None


def _write_view(x: Tensor, new: Tensor, what: str) -> None:
    """Set the view ``x`` to ``new`` by assigning into its base, then remake it."""
    op, params = x._view_fn  # type: ignore[misc]
    base = x._base
    onto = _onto_base(op, params, new, base)
    if onto is None:
        raise RuntimeError(f"{what}: the tensor (shape {x.shape}) is a {op.name} view of a "
                           f"tensor of shape {base.shape} that is part of a graph; in-place "
                           f"changes through {op.name} views are not supported (its elements "
                           f"repeat). Change the base tensor, or take a copy of the view first "
                           f"(.clone()).")
    key, value = onto
    if x._data_of:  # PyTorch's .data: the change reaches the base outside any graph
        with grad_mode.no_grad():
            setitem_(base, key, value.detach())
        x._follow(unary(op, base.detach(), **params))
        return
    if base._node is None and base.requires_grad and context.grad_enabled:
        raise _leaf_error(base, f"{what} through a view of it")
    setitem_(base, key, value)
    with grad_mode.enable_grad():
        x._follow(unary(op, base, **params))


def _refresh_views(x: Tensor) -> None:
    """Remake the views of ``x`` (and theirs) after ``x``'s array was replaced."""
    stack = [x]
    with grad_mode.enable_grad():
        while stack:
            t = stack.pop()
            for v in t._live_views():
                op, params = v._view_fn
                v._follow(unary(op, t, **params))
                stack.append(v)


def setitem_(x: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value``, in place (recorded when a gradient is needed).

    Example:
        >>> import xad
        >>> x = xad.zeros(3); x[1] = 5.0; x.tolist()
        [0.0, 5.0, 0.0]
    """
    k, _ = _norm_key(x, key)
    v = _value(x, value, "setitem")
    if _through_base(x, v):
        _write_view(x, apply(IndexPut, x._alias(), v, key=k), "setitem")
        return
    if _recorded(x, v):
        if x._node is None and x.requires_grad:
            raise _leaf_error(x, "setitem")
        out = apply(IndexPut, x._alias(), v, key=k)
        x._rebind(out._array, out._node, 0)
        _refresh_views(x)
        return
    b = x._backend
    fresh = x._node is not None  # never write into an array a recorded node may have saved
    out = _raw_call(_store, b, x, v, key=k, fresh=fresh, label="setitem")
    if fresh:
        x._rebind(out)
    else:
        x._set_data(out)
    if not b.mutable or x._node is not None:
        _refresh_views(x)


def _store(b: Any, xa: Any, va: Any, key: tuple, fresh: bool) -> Any:
    """``xa[key] = va`` on arrays (a copy of ``xa`` first when ``fresh``)."""
    if not isinstance(va, (int, float, bool)) and va.dtype != xa.dtype:
        va = b.xp.astype(va, xa.dtype)
    if fresh and b.mutable:
        xa = b.xp.asarray(xa, copy=True)
    return _set(b, xa, key, va)


def _raw_call(kernel: Any, b: Any, x: Tensor, o: Any, label: str, **params: Any) -> Any:
    """``kernel(b, x's array, o's array or number, **params)``, told to xad.compile's
    recorder (an unrecorded change of ``x``: it may write into ``x``'s array)."""
    with b.on_device():
        out = kernel(b, x._array, o._array if isinstance(o, Tensor) else o, **params)
    if context.recorder is not None:
        context.recorder.call(kernel, b, (x, o), out, label, params, target=x)
    return out


def _arith(b: Any, xa: Any, oa: Any, fn: Any) -> Any:
    return fn(xa, oa)


# op name -> (recorded function, in-place array operator, out-of-place array operator)
_INPLACE = {"add": (add, operator.iadd, operator.add),
            "subtract": (subtract, operator.isub, operator.sub),
            "multiply": (multiply, operator.imul, operator.mul),
            "divide": (divide, operator.itruediv, operator.truediv)}


def inplace(x: Tensor, other: Any, op: str) -> Tensor:
    """``x op= other``: recorded when a gradient is needed, else written into ``x``'s array."""
    fn, ifn, ofn = _INPLACE[op]
    o = _value(x, other, f"in-place {op}")
    if _through_base(x, o) or _recorded(x, o):
        if x._base is None and x._node is None and x.requires_grad:
            raise _leaf_error(x, f"in-place {op}")
        out = fn(x._alias(), o)  # the node saves the alias: x's old value and version
        if out._array.dtype != x._array.dtype:
            raise TypeError(f"in-place {op}: the result's dtype {out.dtype} differs from the "
                            f"tensor's {x.dtype}; assign the result to a new tensor instead")
        if _through_base(x, o):
            _write_view(x, out, f"in-place {op}")
            return x
        x._rebind(out._array, out._node, out._idx)
    elif x._node is None:  # a leaf's array is written in place where arrays are mutable
        x._set_data(_raw_call(_arith, x._backend, x, o, f"{op}=", fn=ifn))
        if x._backend.mutable:
            return x
    else:  # a non-leaf's array may be saved by a recorded node: it is replaced instead
        x._rebind(_raw_call(_arith, x._backend, x, o, op, fn=ofn))
    _refresh_views(x)
    return x
