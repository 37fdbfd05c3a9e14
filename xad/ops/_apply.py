"""The per-operation path: run a primitive's forward and, when needed, record its node.

Every primitive is an :class:`Op` subclass with a static ``forward(backend, *arrays,
**params)`` on raw arrays and a static ``backward(node, *grads)`` written with xad's own
operations (so it can itself be recorded). ``apply`` is the hot path of the whole library,
with ``unary`` and ``binary`` as its short forms for the commonest calls: keep them lean.
"""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
from ..backend import get_backend
from ..tensor import Tensor

__all__ = ["Op", "apply", "unary", "binary", "REGISTRY"]

_SCALARS = (int, float, bool)
_mode = _ag._mode
_Node = _ag.Node
_make = Tensor._make
_new = object.__new__
REGISTRY: dict[str, type[Op]] = {}


class Op:
    """A primitive operation with its gradient rule beside it.

    Class attributes: ``name``; ``save_inputs`` (keep the inputs for backward);
    ``save_output`` (keep the result's array); ``differentiable`` (False for comparisons).
    """

    name = "op"
    save_inputs = False
    save_output = False
    differentiable = True
    view = False  # the result may share the input's memory (it shares its version counter)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            REGISTRY[cls.name] = cls

    @staticmethod
    def forward(b: Any, *arrays: Any, **params: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def backward(node: _ag.Node, *grads: Tensor) -> Any:
        raise NotImplementedError


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
        from ..factories import tensor
        if like is None:
            return tensor(a)
        t = tensor(a, backend=like._backend)
        if t.dtype.is_floating and like.dtype.is_floating and t.dtype is not like.dtype:
            t = t.astype(like.dtype)
        return t
    raise TypeError(f"{op.name}: unsupported operand of type {type(a).__name__}; pass xad "
                    f"tensors or Python numbers (make arrays into tensors with xad.tensor(...))")


def _plain(op: type[Op], out: Any, b: Any) -> Tensor:
    """Wrap a result that needs no node (``out`` already an array of ``b``)."""
    if _mode.anomaly:
        from ..utils.anomaly import check_forward
        check_forward(op.name, b, out, None)
    t = _new(Tensor)
    t._array = out
    t._backend = b
    return t


def _recorded(op: type[Op], out: Any, b: Any, edges: tuple, shapes: tuple, args: tuple,
              versions: tuple, params: Any) -> Tensor:
    """Wrap a result and record the node that made it."""
    node = _Node(op, edges, shapes, b, params)
    if op.save_inputs:
        node.saved = args
        node.versions = versions
    t = _new(Tensor)
    t._array = out
    t._backend = b
    if op.save_output:  # the saved result is checked against in-place changes through views
        node.out = out
        t._vc = node.out_vc = [0]
    t._node = node
    t.requires_grad = True
    if _mode.anomaly:
        from ..utils.anomaly import check_forward
        check_forward(op.name, b, out, node)
    return t


def unary(op: type[Op], x: Tensor, **params: Any) -> Tensor:
    """``apply`` for one tensor input."""
    if not isinstance(x, Tensor):
        return apply(op, x, **params)
    b = x._backend
    out = op.forward(b, x._array, **params)
    if type(out) is not b.array_type:
        out = b.ensure_array(out)
    if not (x.requires_grad and _mode.enabled and op.differentiable):
        t = _plain(op, out, b)
    else:
        t = _recorded(op, out, b, (x if x._node is None else (x._node, x._idx),),
                      (x._array.shape,), (x,), (_version(x),), params)
    if op.view and not (params and params.get("advanced")):
        x._share_version(t)
        t._view = True
    return t


def binary(op: type[Op], x: Any, y: Any) -> Tensor:
    """``apply`` for two inputs, at least one a tensor, the other maybe a Python scalar."""
    if isinstance(x, Tensor):
        b = x._backend
        if isinstance(y, Tensor):
            if y._backend is not b:
                raise _mixed(op, (x, y))
            out = op.forward(b, x._array, y._array)
            needs = x.requires_grad or y.requires_grad
        elif type(y) in _SCALARS:
            out = op.forward(b, x._array, y)
            needs = x.requires_grad
        else:
            return binary(op, x, _operand(op, y, x))
    elif isinstance(y, Tensor) and type(x) in _SCALARS:
        b = y._backend
        out = op.forward(b, x, y._array)
        needs = y.requires_grad
    else:
        like = y if isinstance(y, Tensor) else None
        x, y = _operand(op, x, like), _operand(op, y, like)
        if not isinstance(x, Tensor) and not isinstance(y, Tensor):
            return apply(op, x, y)
        return binary(op, x, y)
    if type(out) is not b.array_type:
        out = b.ensure_array(out)
    if not (needs and _mode.enabled and op.differentiable):
        return _plain(op, out, b)
    # edges, shapes and versions written out for two inputs: the hottest path of all
    if isinstance(x, Tensor):
        ex = (x if x._node is None else (x._node, x._idx)) if x.requires_grad else None
        sx, vx = x._array.shape, (0 if x._vc is None else x._vc[0])
    else:
        ex, sx, vx = None, (), None
    if isinstance(y, Tensor):
        ey = (y if y._node is None else (y._node, y._idx)) if y.requires_grad else None
        sy, vy = y._array.shape, (0 if y._vc is None else y._vc[0])
    else:
        ey, sy, vy = None, (), None
    return _recorded(op, out, b, (ex, ey), (sx, sy), (x, y), (vx, vy), None)


def _edge(a: Any) -> Any:
    if not isinstance(a, Tensor) or not a.requires_grad:
        return None
    return a if a._node is None else (a._node, a._idx)


def _shape(a: Any) -> tuple:
    return a._array.shape if isinstance(a, Tensor) else ()


def _version(a: Any) -> int | None:
    if not isinstance(a, Tensor):
        return None
    vc = a._vc  # Tensor._version, without the property call (this is the hot path)
    return 0 if vc is None else vc[0]


def apply(op: type[Op], *args: Any, **params: Any) -> Any:
    """Run ``op`` on tensors and Python scalars; record a node when a gradient is needed."""
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
    out = op.forward(backend, *datas, **params)
    record = needs and _mode.enabled and op.differentiable
    multi = type(out) is tuple
    outs = [o if type(o) is backend.array_type else backend.ensure_array(o)
            for o in (out if multi else (out,))]
    if not record:
        res = tuple(_plain(op, o, backend) for o in outs)
        return res if multi else res[0]
    edges = tuple(_edge(a) for a in args)
    shapes = tuple(_shape(a) for a in args)
    versions = tuple(_version(a) for a in args)
    if not multi:
        return _recorded(op, outs[0], backend, edges, shapes, args, versions, params)
    # several outputs share one node
    res = tuple(_recorded(op, o, backend, edges, shapes, args, versions, params)
                for o in outs[:1])
    node = res[0]._node
    node.n_out = len(outs)
    node.out_meta = tuple((o.shape, o.dtype) for o in outs)
    if op.save_output:
        node.out = tuple(outs)
    res = res + tuple(_plain(op, o, backend) for o in outs[1:])
    for i, r in enumerate(res):
        r._node, r._idx, r.requires_grad = node, i, True
    return res
