"""The per-operation path: run a primitive's forward and, when needed, record its node.

Every primitive is an :class:`Op` subclass with a static ``forward(backend, *arrays,
**params)`` on raw arrays and a static ``backward(node, *grads)`` written with xad's own
operations (so it can itself be recorded). ``apply`` is the hot path of the whole library:
keep it short.
"""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
from ..backend import get_backend
from ..tensor import Tensor

__all__ = ["Op", "apply", "REGISTRY"]

_SCALARS = (int, float, bool)
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
        elif a is None or isinstance(a, _SCALARS):
            datas.append(a)
        else:
            raise TypeError(f"{op.name}: unsupported operand of type {type(a).__name__}; "
                            f"pass xad tensors or Python numbers (make arrays into tensors "
                            f"with xad.tensor(...))")
    if backend is None:
        backend = get_backend()
    out = op.forward(backend, *datas, **params)
    record = needs and _ag._mode.enabled and op.differentiable
    multi = type(out) is tuple
    if record:
        node = _ag.Node(op, tuple(
            (a if a._node is None else (a._node, a._idx))
            if isinstance(a, Tensor) and a.requires_grad else None for a in args),
            tuple(a.shape if isinstance(a, Tensor) else () for a in args), backend)
        node.params = params
        if op.save_inputs:
            node.saved = args
            node.versions = tuple(a._version if isinstance(a, Tensor) else None for a in args)
    else:
        node = None
    if multi:
        res = tuple(_wrap(o, backend, node, i) for i, o in enumerate(out))
        if node is not None:
            node.n_out = len(out)
            node.out_meta = tuple((o.shape, o.dtype) for o in out)
            if op.save_output:
                node.out = tuple(r.data for r in res)
    else:
        res = _wrap(out, backend, node, 0)
        if node is not None and op.save_output:
            node.out = res.data
    if _ag._mode.anomaly:
        from ..utils.anomaly import check_forward
        for r in (res if multi else (res,)):
            check_forward(op.name, backend, r.data, node)
    return res


def _wrap(data: Any, backend: Any, node: Any, idx: int) -> Tensor:
    if type(data) is not backend.array_type:
        data = backend.ensure_array(data)
    t = Tensor._make(data, backend)
    if node is not None:
        t._node = node
        t._idx = idx
        t.requires_grad = True
    return t
