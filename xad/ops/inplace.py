"""In-place changes of a tensor: item assignment (``x[key] = v``) and ``x op= y``.

Recorded when a gradient is needed (the tensor then points at a new node, and its old value
stays with the nodes that saved it); otherwise written into the tensor's array.

Views have PyTorch's storage semantics: a change through a view reaches its base, and a
changed base reaches its views, for their whole life. Where the view shares the base's
memory and no graph is involved, writing into the view's array does it. Otherwise (a
recorded change, a base in a graph, JAX's immutable arrays, an expanded view) the change is
made on the base (``base[key] = new view value``; for a reshape or permutation, which covers
every element once, the whole base takes the new value mapped back) and the views are
remade from the base. ``detach()`` and ``.data`` are views of the whole tensor that never
join its graph: a change through them reaches the base's values outside the graph (counted
in the base's version for ``detach()``, not for ``.data``, as PyTorch's). A view whose
elements share memory (``broadcast_to``, ``expand``) can be filled with a number
(``zero_``, ``fill_``); other changes of elements that share memory raise, as PyTorch's,
and changes of elements that do not (``e[0] = t``) reach the storage behind them.
"""

from __future__ import annotations

import math
import operator
from typing import Any

from .. import dtypes as _dt
from .. import grad_mode
from ..context import context
from ..tensor import Tensor
from . import elementwise_math as _em
from ._apply import _HALF, _beyond_half, apply, unary
from .bitcast import ViewDtype
from .complex_parts import ViewAsReal, complex_from_parts, imag, real
from .elementwise import add, divide, multiply, pow, subtract
from .indexing import IndexPut, _get, _norm_key, _set
from .layout import overlaps, region_overlaps
from .shape import broadcast_to, permute_dims, reshape

__all__ = ["setitem_", "inplace", "assign_result"]


def _leaf_error(x: Tensor, what: str) -> RuntimeError:
    return RuntimeError(f"{what}: the tensor (shape {x.shape}) is a leaf that requires grad; "
                        f"changing it in place would lose its gradient. Do it under "
                        f"xad.no_grad() (as optimisers do) or change a clone.")


def _strided(x: Tensor) -> bool:
    """Whether ``x`` is an ``as_strided`` view or a view of one."""
    t: Tensor | None = x
    while t is not None and t._view_fn is not None:
        if t._view_fn[0].name == "as_strided":
            return True
        t = t._base
    return False


def _overlap_error(x: Tensor, what: str) -> RuntimeError:
    kind = ("an as_strided view (or a view of one) whose windows overlap in its storage, so "
            "the change is ambiguous (PyTorch writes them in an undefined order)"
            if _strided(x) else "an expanded view (broadcast_to/expand, or a view of one) "
            "whose elements share memory, so the change is ambiguous (PyTorch raises here too)")
    return RuntimeError(f"{what}: the tensor (shape {x.shape}) is {kind}. Change a copy "
                        f"(.clone()) or the base tensor; filling it with a number (fill_, "
                        f"zero_) is allowed.")


def _graph_overlap_error(x: Tensor, base: Tensor, what: str) -> RuntimeError:
    if _strided(x):
        return RuntimeError(f"{what}: the tensor (shape {x.shape}) is an as_strided view of "
                            f"a tensor of shape {base.shape} whose windows overlap, and it "
                            f"would join a graph: not supported (writes to elements that "
                            f"share a position are refused in a graph). Change the base "
                            f"tensor or a clone.")
    return RuntimeError(f"{what}: the tensor (shape {x.shape}) is an expanded view of a "
                        f"tensor of shape {base.shape} that would join a graph; PyTorch "
                        f"fails at backward there (several elements share one memory "
                        f"location), xad refuses it now. Change the base tensor or a clone.")


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


def _through_base(x: Tensor, v: Any, fresh: bool = False) -> bool:
    """Whether a change of the view ``x`` must be made on its base (writing into the view's
    array would not reach it, or would bypass the graph, or its memory must stay as it is:
    ``fresh``)."""
    b = x._base
    return b is not None and (fresh or b._node is not None or x._node is not None
                              or _recorded(x, v) or x._expanded or not x._backend.mutable)


def _onto_base(op: Any, params: dict, new: Tensor, base: Tensor) -> tuple | None:
    """``(key, value)`` that assigns the view's new value into its base, or None for a view
    whose elements repeat (``broadcast_to``)."""
    if op.name == "getitem":
        return params["key"], new
    if op.name == "reshape":
        return ..., reshape(new, base.shape)
    if op.name == "real":  # the complex base's other part unchanged
        return ..., complex_from_parts(new, imag(base))
    if op.name == "imag":
        return ..., complex_from_parts(real(base), new)
    if op.name == "view_as_real":
        return ..., complex_from_parts(new[..., 0], new[..., 1])
    if op.name == "view_as_complex":
        return ..., unary(ViewAsReal, new, dtype=base._array.dtype)
    if op.name == "view_dtype":  # the same bits, read back in the base's dtype
        return ..., unary(ViewDtype, new, dtype=base._array.dtype)
    if op.name == "permute_dims":
        inverse = [0] * len(params["axes"])
        for i, a in enumerate(params["axes"]):
            inverse[a] = i
        return ..., permute_dims(new, tuple(inverse))
    return None


def _write_untracked(base: Tensor, key: Any, value: Any, counted: bool, fresh: bool) -> None:
    """``base[key] = value`` outside any graph (through ``detach()``, or ``.data`` when not
    ``counted``): the base keeps its node; ``fresh``: its memory gets a new array (a node
    saved the old one)."""
    old, version = base._vc, base._version
    _outside(base, lambda: _setitem(base, key, value, fresh))
    if not counted:
        base._untracked(old, version)


def _outside(base: Tensor, write: Any) -> None:
    """Run ``write`` (a change of ``base``'s values through ``detach()``/``.data``) without
    recording it; inside ``xad.jvp`` ``base`` keeps its tangent, as PyTorch's."""
    level = context.transform
    with grad_mode.no_grad():
        if level is None:
            write()
            return
        try:
            level.untracked(base, write)
        finally:
            context.transform = level  # (a level outside that ran it left its own)


def _write_detached(x: Tensor, new: Tensor, fresh: bool) -> None:
    """Set ``x`` (a ``detach()`` or ``.data`` of its base) to ``new``: the base's values
    change outside the graph; ``x`` itself joins the graph when ``new`` is recorded (its
    node saved the old memory, which must then stay as it is)."""
    base = x._base
    assert base is not None  # a detach()/.data keeps the tensor it was taken from
    fresh = fresh or new._node is not None
    if context.transform is not None:  # xad.jvp: x's tangent is new's (read before the write
        context.transform.rooted(x, new)  # may give base new's array); base keeps its own
    _write_untracked(base, (...,), new.detach(), not x._data_of, fresh)
    x._follow_values(base)
    if x._data_of:
        x._bump_version()
    if new._node is not None:
        x._join(new._node, new._idx)
    _refresh_views(x)


def _write_view(x: Tensor, new: Tensor, what: str, fresh: bool = False) -> None:
    """Set the view ``x`` to ``new`` by assigning into its base, then remake it."""
    if x._view_fn is None:
        _write_detached(x, new, fresh)
        return
    op, params = x._view_fn
    base = x._base
    assert base is not None  # callers write through the base only for a view
    onto = _onto_base(op, params, new, base)
    if onto is None:
        raise _overlap_error(base, f"{what} through a {op.name} view of shape {x.shape}")
    key, value = onto
    if base._node is None and base.requires_grad and context.grad_enabled:
        raise _leaf_error(base, f"{what} through a view of it")
    # a view_dtype's base is a detach(): the view joins new's graph, as PyTorch's
    node = new._node if op.name == "view_dtype" else None
    level = context.transform  # (forward_ad's duals keep their tangents apart from their
    if level is not None:      # bases': JVPLevel.written)
        level.writing(x)
    try:
        _setitem(base, key, value, fresh or node is not None)
        with grad_mode.enable_grad():
            x._follow(unary(op, base, **params))
    finally:
        if level is not None:
            level.written(x, new)
    if node is not None:
        x._join(node, new._idx)


def _refresh_views(x: Tensor) -> None:
    """Remake the views of ``x`` (and theirs) after ``x``'s array was replaced."""
    if context.recorder is not None:  # a replay remakes the views its caller holds then
        context.recorder.refreshed(x)
    if not x._views:  # the common case (an optimiser's step on JAX): nothing to remake
        return
    stack = [x]
    with grad_mode.enable_grad():
        while stack:
            t = stack.pop()
            for v in t._live_views():
                if v._view_fn is None:
                    v._follow_values(t)
                else:
                    op, params = v._view_fn
                    v._follow(unary(op, t, **params))
                stack.append(v)


_ACROSS_DTYPES = {"view_dtype": "view(dtype)", "view_as_real": "view_as_real",
                  "view_as_complex": "view_as_complex"}


def _positions(x: Tensor) -> tuple[Tensor, Any]:
    """The tensor whose storage ``x`` views (where its chain of views starts, or the
    nearest ``detach()``/``.data``, which starts a graph of its own) and the flat position
    there of each of ``x``'s elements (an int64 array of ``x``'s shape)."""
    chain, t = [], x
    while t._base is not None and t._view_fn is not None:
        name = _ACROSS_DTYPES.get(t._view_fn[0].name)
        if name is not None:
            raise NotImplementedError(
                f"in-place change of a tensor of shape {x.shape} viewing an expanded tensor "
                f"or a diagonal through {name}: not supported (its elements' positions are "
                f"not tracked across dtypes); change the base, or a clone")
        chain.append(t._view_fn)
        t = t._base
    b = x._backend
    xp = b.xp
    with b.on_device():
        p = xp.reshape(xp.arange(math.prod(t.shape), dtype=xp.int64, device=b.device),
                       t.shape)
        for op, params in reversed(chain):
            p = op.forward(b, p, **params)
    return t, p


def _unravel(b: Any, flat: Any, shape: tuple[int, ...]) -> tuple:
    """The index (one integer tensor per axis) of the flat positions ``flat`` in
    ``shape``."""
    step, out = 1, []
    with b.on_device():
        for n in reversed(shape):
            out.append(Tensor._make((flat // step) % n, b))
            step *= n
    return tuple(reversed(out)) or (...,)


def _write_expanded(x: Tensor, key: tuple, value: Any, what: str, fill: bool = False,
                    checked: bool = False) -> None:
    """``x[key] = value`` for a view of an expanded tensor: the storage elements behind
    ``x[key]`` take it, as PyTorch's; several of them at one memory location raise
    (PyTorch's rule), except for a fill with a number (``fill_``, ``zero_``); ``checked``:
    the caller has checked that."""
    base, p = _positions(x)
    b = x._backend
    advanced = any(not (k is None or k is Ellipsis or isinstance(k, (int, slice)))
                   for k in key)
    with b.on_device():
        sel = _get(b, p, key) if advanced else p[key]
    repeats = not checked and (overlaps(x) if advanced  # (a diagonal's elements never do)
                               else region_overlaps(x, key, tuple(sel.shape)))
    number = isinstance(value, (int, float, bool))
    if repeats and not (fill and number):
        raise _overlap_error(x, what)
    if base._view_fn is None and base._base is not None and base._base._expanded:
        _write_detached_expanded(base, _unravel(b, sel, base.shape), value, what, fill)
        return
    if repeats and _recorded(base, value):
        raise _graph_overlap_error(x, base, what)
    if not number:
        value = broadcast_to(value, tuple(sel.shape))
        if not base.shape:
            value = reshape(value, ())
    setitem_(base, _unravel(b, sel, base.shape), value)


def _write_detached_expanded(d: Tensor, at: tuple, value: Any, what: str, fill: bool) -> None:
    """``d[at] = value`` for ``d``, a ``detach()``/``.data`` of an expanded view: the
    storage takes the values outside any graph; ``d`` joins the graph for a recorded
    value."""
    k, _ = _norm_key(d, at)
    new = None
    if _recorded(d, value):
        if overlaps(d):
            raise _graph_overlap_error(d, d, what)
        new = apply(IndexPut, d._alias(), value, key=k)
    base = d._base
    assert base is not None  # d is a detach()/.data of an expanded view
    old, version = base._vc, base._version
    v = value.detach() if isinstance(value, Tensor) else value
    if new is not None and context.transform is not None:
        context.transform.rooted(d, new)
    _outside(base, lambda: _write_expanded(base, k, v, what, fill, checked=True))
    if d._data_of:
        base._untracked(old, version)
    d._follow_values(base)
    if d._data_of:
        d._bump_version()
    if new is not None:
        d._join(new._node, new._idx)
    _refresh_views(d)


def setitem_(x: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value``, in place (recorded when a gradient is needed).

    Example:
        >>> import xad
        >>> x = xad.zeros(3); x[1] = 5.0; x.tolist()
        [0.0, 5.0, 0.0]
    """
    _setitem(x, key, value, False)


def _setitem(x: Tensor, key: Any, value: Any, fresh: bool) -> None:
    """``setitem_``; ``fresh``: the memory behind ``x`` gets a new array, never written."""
    k, _ = _norm_key(x, key)
    v = _value(x, value, "setitem")
    if x._expanded:
        _write_expanded(x, k, v, "setitem")
        return
    if _through_base(x, v, fresh):
        _write_view(x, apply(IndexPut, x._alias(), v, key=k), "setitem", fresh)
        return
    if _recorded(x, v):
        if x._node is None and x.requires_grad and context.grad_enabled:
            raise _leaf_error(x, "setitem")
        out = apply(IndexPut, x._alias(), v, key=k)
        x._rebind(out._array, out._node, 0)
        _refresh_views(x)
        return
    b = x._backend
    fresh = fresh or x._node is not None  # never write into an array a node may have saved
    out = _raw_call(_store, b, x, _apart(x, v, k), key=k, fresh=fresh, label="setitem")
    if not fresh and b.mutable and out is not x._array:
        _replaced(x, out)  # the library could not write this key in place
    elif fresh:
        x._rebind(out)
        _refresh_views(x)
    else:
        x._set_data(out)
        if not b.mutable:
            _refresh_views(x)


def _apart(x: Tensor, o: Any, key: tuple = (...,)) -> Any:
    """``o``, or a copy of it where it is another view of ``x``'s storage (``x += x.T``,
    ``x[1:] = x[:-1]``), or ``x`` itself written at other places (``x[idx] = x``): a change
    written into ``x``'s array then reads ``o``'s values from before it on every backend
    (NumPy's meaning; CuPy's kernels would race, torch's raise)."""
    if not isinstance(o, Tensor) or not x._backend.mutable:
        return o
    if o is x:
        whole = all(k is Ellipsis or (isinstance(k, slice) and k == slice(None)) for k in key)
        return o if whole else o._copy()
    a, c = x, o
    while a._base is not None:
        a = a._base
    while c._base is not None:
        c = c._base
    return o._copy() if a is c else o


def _replaced(x: Tensor, out: Any) -> None:
    """``x`` takes the new array ``out`` (not written in place): through its base for a
    view, else with its views remade."""
    if x._base is not None:
        _write_view(x, Tensor._make(out, x._backend), "setitem")
        return
    x._set_data(out)
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
            "divide": (divide, operator.itruediv, operator.truediv),
            # the array operators of these differ from xad's functions at special values
            # (NumPy's inf // 2 is nan): the function's result is written into x
            **{f.__name__: (f, None, None) for f in (
                _em.floor_divide, _em.remainder, pow, _em.bitwise_and, _em.bitwise_or,
                _em.bitwise_xor, _em.bitwise_left_shift, _em.bitwise_right_shift)}}


def _kind(d: _dt.DType) -> int:
    """PyTorch's order of dtype categories: 0 bool, 1 integer, 2 floating, 3 complex."""
    return 0 if d is _dt.bool_ else 3 if d.name.startswith("complex") else (
        2 if d.is_floating else 1)


def _cast_back(x: Tensor, out: Tensor, what: str) -> Tensor:
    """``out``, the new value of ``x``, in ``x``'s dtype, as PyTorch's in-place operations:
    a result of a higher kind (a float for an integer tensor, a complex for a real one)
    raises rather than be truncated."""
    if out.dtype is x.dtype:
        return out
    if _kind(out.dtype) > _kind(x.dtype):
        raise TypeError(f"{what}: the result's dtype {out.dtype.name} cannot be cast back to "
                        f"the tensor's {x.dtype.name} (PyTorch refuses too); write "
                        f"x = x op y for a new tensor, or cast x first (x.astype(...))")
    return out.astype(x.dtype)


def _fits(x: Tensor, shape: tuple, what: str) -> None:
    """Refuse an in-place result of another shape than ``x``'s (PyTorch's "output with
    shape [] doesn't match the broadcast shape [1]"): written back, it would be cut or
    broadcast into ``x`` without a word."""
    t = tuple(x.shape)
    if shape != t and (len(shape) > len(t) or any(
            a not in (1, b) for a, b in zip(reversed(shape), reversed(t)))):
        raise ValueError(f"{what}: the result's shape {shape} is not the tensor's {t} (an "
                         f"operand broadcasts beyond it); write x = x op y for a new tensor")


def assign_result(x: Tensor, out: Tensor, what: str) -> Tensor:
    """Set ``x`` to ``out`` (computed from ``x``), in ``x``'s dtype (``x.clamp_(...)``)."""
    _fits(x, tuple(out.shape), what)
    setitem_(x, (...,), _cast_back(x, out, what))
    return x


def _keeps_dtype(x: Tensor, o: Any, op: str) -> bool:
    """Whether ``x op o`` computes in ``x``'s dtype, so the array's own operator gives
    xad's answer (otherwise the backend's promotion rules would decide it)."""
    d = x.dtype
    k = _kind(d)
    if op == "divide" and k < 2:
        return False
    if isinstance(o, Tensor):
        return o.dtype is d
    if d in _HALF and _beyond_half(d, o, op):  # PyTorch's float32 for x *= 0.1 (float16)
        return False
    return (0 if type(o) is bool else 1 if type(o) is int else 2) <= k


def inplace(x: Tensor, other: Any, op: str) -> Tensor:
    """``x op= other`` (``op``: a name in ``_INPLACE``; copy for ``copy_``, fill for
    ``fill_``): recorded when a gradient is needed, else written into ``x``'s array; the
    result keeps ``x``'s dtype (an error where it cannot, as PyTorch's)."""
    if x._expanded and overlaps(x) and op != "fill":
        raise _overlap_error(x, f"in-place {op}")
    if isinstance(other, Tensor):
        _fits(x, tuple(other.shape), f"in-place {op}")
    if op in ("copy", "fill"):  # x.copy_(src), x.fill_(number)
        if op == "fill" and x.dtype is _dt.bool_ and type(other) in (int, float):
            other = bool(other)  # PyTorch's cast of the number (2.5 is True in bools)
        elif op == "fill" and type(other) in (bool, float) and x.dtype is not _dt.bool_ and (
                type(other) is bool or not x.dtype.is_floating and math.isfinite(other)):
            other = int(other)  # PyTorch's cast of the number (True is 1, 2.5 is 2 in ints)
        if op == "fill" and x._expanded:
            _write_expanded(x, (...,), _value(x, other, "fill_"), "fill_", fill=True)
        else:
            setitem_(x, (...,), other)
        return x
    fn, ifn, ofn = _INPLACE[op]
    what = f"in-place {op}"
    o = _value(x, other, what)
    if type(o) is bool and x.dtype is not _dt.bool_:
        o = int(o)  # (the standard promotes a Python bool only with bool arrays)
    if x._expanded:  # a view of an expanded tensor whose own elements do not repeat
        new = _cast_back(x, fn(x._alias(), o), what)
        _write_expanded(x, (...,), new, what)
        return x
    if _through_base(x, o) or _recorded(x, o):
        if x._base is None and x._node is None and x.requires_grad and context.grad_enabled:
            raise _leaf_error(x, what)
        # the node saves the alias: x's old value and version
        out = _cast_back(x, fn(x._alias(), o), what)
        if _through_base(x, o):
            _write_view(x, out, f"in-place {op}")
            return x
        x._rebind(out._array, out._node, out._idx)
    elif ifn is None or not _keeps_dtype(x, o, op):  # xad's function, then cast back
        with grad_mode.no_grad():
            return assign_result(x, fn(x._alias(), o), what)
    elif x._node is None:  # a leaf's array is written in place where arrays are mutable
        out = _raw_call(_arith, x._backend, x, _apart(x, o), f"{op}=", fn=ifn)
        if x._backend.mutable and out is not x._array:
            _replaced(x, out)
            return x
        x._set_data(out)
        if x._backend.mutable:
            return x
    else:  # a non-leaf's array may be saved by a recorded node: it is replaced instead
        x._rebind(_raw_call(_arith, x._backend, x, o, op, fn=ofn))
    _refresh_views(x)
    return x
