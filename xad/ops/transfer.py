"""Moving a tensor to another backend or device (an explicit copy, differentiable)."""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
from ..backend import Backend, backend_names
from ..backend import _make as _make_backend
from ..tensor import Tensor
from ._apply import Op

__all__ = ["to_backend"]


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
    elif isinstance(target, str) and (device is not None or target in backend_names()):
        tb = _make_backend(target, device)
    else:  # a device of the tensor's own backend
        tb = _make_backend(x._backend.name, target)
    src = x._backend
    if tb is src:
        return x
    data = tb.from_numpy(src.to_numpy(x._array))
    out = Tensor._make(data, tb)
    if x.requires_grad and _ag._mode.enabled:
        node = _ag.Node(ToBackend, (x if x._node is None else (x._node, x._idx),),
                        (x.shape,), tb)
        node.params = {"source": src}
        out._node, out.requires_grad = node, True
    return out
