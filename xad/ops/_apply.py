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


def _operand(op: type[Op], a: Any) -> Any:
    """A non-tensor operand: Python scalars pass; array-likes become tensors."""
    if a is None or isinstance(a, _SCALARS):
        return a
    if isinstance(a, (list, tuple)) or hasattr(a, "shape"):
        return Tensor(a)
    raise TypeError(f"{op.name}: unsupported operand of type {type(a).__name__}; pass xad "
                    f"tensors or Python numbers (make arrays into tensors with xad.tensor(...))")


def _edge(a: Any) -> Any:
    if type(a) is not Tensor and not isinstance(a, Tensor) or not a.requires_grad:
        return None
    return a if a._node is None else (a._node, a._idx)


def _finish(op: type[Op], out: Any, b: Any, args: tuple, params: dict) -> Tensor:
    """Wrap one result; record its node."""
    if type(out) is not b.array_type:
        out = b.ensure_array(out)
    t = _make(out, b)
    node = _Node(op, tuple(_edge(a) for a in args),
                 tuple(a.data.shape if isinstance(a, Tensor) else () for a in args), b, params)
    if op.save_inputs:
        node.saved = args
        node.versions = tuple(a._version if isinstance(a, Tensor) else None for a in args)
    if op.save_output:
        node.out = out
    t._node = node
    t.requires_grad = True
    if _mode.anomaly:
        from ..utils.anomaly import check_forward
        check_forward(op.name, b, out, node)
    return t


def _plain(op: type[Op], out: Any, b: Any) -> Tensor:
    """Wrap one result that needs no node."""
    if type(out) is not b.array_type:
        out = b.ensure_array(out)
    if _mode.anomaly:
        from ..utils.anomaly import check_forward
        check_forward(op.name, b, out, None)
    return _make(out, b)


def unary(op: type[Op], x: Tensor, **params: Any) -> Tensor:
    """``apply`` for one tensor input."""
    if not isinstance(x, Tensor):
        return apply(op, x, **params)
    b = x._backend
    out = op.forward(b, x.data, **params)
    if type(out) is not b.array_type:
        out = b.ensure_array(out)
    if not (x.requires_grad and _mode.enabled and op.differentiable):
        if _mode.anomaly:
            return _plain(op, out, b)
        t = _new(Tensor)
        t.data = out
        t._backend = b
        return t
    t = _new(Tensor)
    t.data = out
    t._backend = b
    node = _Node(op, (x if x._node is None else (x._node, x._idx),), (x.data.shape,), b, params)
    if op.save_inputs:
        node.saved = (x,)
        node.versions = (x._version,)
    if op.save_output:
        node.out = out
    t._node = node
    t.requires_grad = True
    if _mode.anomaly:
        from ..utils.anomaly import check_forward
        check_forward(op.name, b, out, node)
    return t


def binary(op: type[Op], x: Any, y: Any) -> Tensor:
    """``apply`` for two inputs, at least one a tensor, the other maybe a Python scalar."""
    if isinstance(x, Tensor):
        b = x._backend
        if isinstance(y, Tensor):
            if y._backend is not b:
                raise _mixed(op, (x, y))
            out = op.forward(b, x.data, y.data)
            needs = x.requires_grad or y.requires_grad
        elif type(y) in _SCALARS:
            out = op.forward(b, x.data, y)
            needs = x.requires_grad
        else:
            return apply(op, x, _operand(op, y))
    elif isinstance(y, Tensor) and type(x) in _SCALARS:
        b = y._backend
        out = op.forward(b, x, y.data)
        needs = y.requires_grad
    else:
        return apply(op, _operand(op, x), _operand(op, y))
    if not (needs and _mode.enabled and op.differentiable):
        if type(out) is not b.array_type:
            out = b.ensure_array(out)
        if _mode.anomaly:
            return _plain(op, out, b)
        t = _new(Tensor)
        t.data = out
        t._backend = b
        return t
    # recording, written out for two inputs (the commonest case of all)
    if type(out) is not b.array_type:
        out = b.ensure_array(out)
    t = _make(out, b)
    if isinstance(x, Tensor):
        ex = (x if x._node is None else (x._node, x._idx)) if x.requires_grad else None
        sx, vx = x.data.shape, x._version
    else:
        ex, sx, vx = None, (), None
    if isinstance(y, Tensor):
        ey = (y if y._node is None else (y._node, y._idx)) if y.requires_grad else None
        sy, vy = y.data.shape, y._version
    else:
        ey, sy, vy = None, (), None
    node = _Node(op, (ex, ey), (sx, sy), b, None)
    if op.save_inputs:
        node.saved = (x, y)
        node.versions = (vx, vy)
    if op.save_output:
        node.out = out
    t._node = node
    t.requires_grad = True
    if _mode.anomaly:
        from ..utils.anomaly import check_forward
        check_forward(op.name, b, out, node)
    return t


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
            datas.append(a.data)
            if a.requires_grad:
                needs = True
        else:
            a = _operand(op, a)
            if isinstance(a, Tensor):
                return apply(op, *(_operand(op, v) for v in args), **params)
            datas.append(a)
    if backend is None:
        backend = get_backend()
    out = op.forward(backend, *datas, **params)
    record = needs and _mode.enabled and op.differentiable
    if type(out) is not tuple:
        if record:
            return _finish(op, out, backend, args, params)
        return _plain(op, out, backend)
    res = tuple(_plain(op, o, backend) for o in out)
    if record:  # several outputs share one node
        node = _Node(op, tuple(_edge(a) for a in args),
                     tuple(a.data.shape if isinstance(a, Tensor) else () for a in args),
                     backend, params)
        if op.save_inputs:
            node.saved = args
            node.versions = tuple(a._version if isinstance(a, Tensor) else None for a in args)
        node.n_out = len(res)
        node.out_meta = tuple((r.data.shape, r.data.dtype) for r in res)
        if op.save_output:
            node.out = tuple(r.data for r in res)
        for i, r in enumerate(res):
            r._node, r._idx, r.requires_grad = node, i, True
    return res
