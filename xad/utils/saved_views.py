"""Storage sharing inside one checkpoint, as ``torch.save`` keeps it: tensors of one file that
share memory (a tensor and its views, two ``detach()`` of a tied weight, one tensor twice)
are written as one storage and loaded as views of it, so a change through one reaches the
others after ``xad.load`` as before ``xad.save``.

A view is saved as the chain of view operations that makes it from the tensor its storage
starts from (``[["getitem", {...}], ["detach"]]``), in JSON; a chain with a parameter JSON
cannot hold is saved as a tensor of its own (its values, without the sharing)."""

from __future__ import annotations

from typing import Any

from .. import grad_mode
from ..ops._apply import unary
from ..ops.diagonal import Diagonal
from ..ops.indexing import GetItem
from ..ops.shape import BroadcastTo, PermuteDims, Reshape
from ..ops.strided import AsStrided
from ..tensor import Tensor

__all__ = ["root_and_chain", "encode_chain", "remake"]

_OPS = {op.name: op for op in (GetItem, Reshape, PermuteDims, BroadcastTo, Diagonal,
                                AsStrided)}


def root_and_chain(t: Tensor) -> tuple[Tensor, list]:
    """The tensor whose storage ``t`` views and the steps from it to ``t``: ``(op, params)``
    of a view operation, or the string ``"detach"`` / ``"data"``."""
    chain: list = []
    while t._base is not None:
        chain.append(t._view_fn if t._view_fn is not None
                     else ("data" if t._data_of else "detach"))
        t = t._base
    chain.reverse()
    return t, chain


def _json(v: Any) -> Any:
    """A view parameter as JSON (``ValueError`` where it has no such form: an array)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if v is Ellipsis:
        return {"...": 1}
    if isinstance(v, slice):
        return {"slice": [_json(v.start), _json(v.stop), _json(v.step)]}
    if isinstance(v, (tuple, list)):
        return {"tuple": [_json(e) for e in v]}
    raise ValueError(f"a view parameter of type {type(v).__name__}")


def _unjson(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    if "..." in v:
        return Ellipsis
    if "slice" in v:
        return slice(*(_unjson(e) for e in v["slice"]))
    return tuple(_unjson(e) for e in v["tuple"])


def encode_chain(chain: list) -> list | None:
    """``chain`` as JSON, or None where a step cannot be written."""
    out: list = []
    for step in chain:
        if isinstance(step, str):
            out.append([step])
            continue
        op, params = step
        if op.name not in _OPS:
            return None
        try:
            out.append([op.name, {k: _json(v) for k, v in params.items()}])
        except ValueError:
            return None
    return out


def remake(storage: Tensor, chain: list, requires_grad: bool) -> Tensor:
    """The view ``chain`` (as :func:`encode_chain` wrote it) of ``storage``, a leaf that
    requires grad where ``requires_grad`` (as ``torch.load`` gives a saved view);
    ``KeyError``, ``TypeError`` or ``ValueError`` for a malformed chain."""
    t = storage
    with grad_mode.no_grad():
        for step in chain:
            if step == ["detach"]:
                t = t.detach()
            elif step == ["data"]:
                t = t.data
            else:
                name, params = step
                t = unary(_OPS[name], t, **{k: _unjson(v) for k, v in params.items()})
    if requires_grad and not t.requires_grad and t.dtype.is_floating:
        t.requires_grad_()
    return t
