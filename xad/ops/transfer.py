"""Moving a tensor to another backend or device (an explicit copy, differentiable)."""

from __future__ import annotations

from typing import Any

from ..backend import Backend, backend_names, resolve_backend
from ..context import context
from ..graph import record
from ..tensor import Tensor
from ._apply import Op

__all__ = ["to_backend"]


class ToBackend(Op):
    name = "to_backend"

    @staticmethod
    def backward(node, g):
        return to_backend(g, node.params["source"])

    @staticmethod
    def batch(args, batched, target):
        return to_backend(args[0], target), True

    @staticmethod
    def jvp(primals, tangents, out, target):
        return to_backend(tangents[0], target)


def _transfer(op: type[Op], x: Tensor, target: Backend) -> Tensor:
    return to_backend(x, target)


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
    elif isinstance(target, str) and (device is not None or target in backend_names()):
        tb = resolve_backend(target, device)
    else:  # a device of the tensor's own backend
        tb = resolve_backend(x._backend.name, target)
    src = x._backend
    if tb is src or (tb.name, repr(tb.device)) == (src.name, repr(src.device)):
        return x  # (another instance of the same backend and device: stay)
    if context.transform is not None:  # xad.jvp / xad.vmap: the transform runs it
        return context.transform.process(_transfer, ToBackend, (x,), {"target": tb})
    data = tb.from_numpy(src.to_numpy(x._array))
    if x.requires_grad and context.grad_enabled:
        return record(ToBackend, (x,), data, tb, {"source": src})
    return Tensor._make(data, tb)
