"""Collectives on tensors: ``all_reduce``, ``broadcast``, ``all_gather``, ``reduce_scatter``.

Each returns its result as a new tensor (not recorded: collectives have no gradient here)
and, where the result has the argument's shape, also copies it into the argument, as
``torch.distributed`` does (on JAX, whose arrays are immutable, the argument is rebound to
a new array). ``op`` is ``"sum"``, ``"mean"`` (floating dtypes) or ``"max"``. Unless
``init(check=False)``, the ranks first agree on the call, dtype, shape, op and root
(agreement.py) and raise on every rank, naming what each holds, when they differ.
"""

from __future__ import annotations

from typing import Any

from ..grad_mode import no_grad
from ..tensor import Tensor
from .agreement import agree, describe, layout_code
from .world import comm

__all__ = ["all_reduce", "broadcast", "all_gather", "reduce_scatter"]

_OPS = ("sum", "mean", "max")


def _check(name: str, t: Tensor, op: str = "sum") -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"xad.distributed.{name}: expected an xad tensor, got "
                        f"{type(t).__name__}")
    if op not in _OPS:
        raise ValueError(f"xad.distributed.{name}: op must be one of {_OPS}, got {op!r}")
    if op == "mean" and not t.dtype.is_floating:
        raise TypeError(f"xad.distributed.{name}: op='mean' needs a floating tensor, got "
                        f"{t.dtype} of shape {t.shape}; use op='sum' or cast first")


def _comm(name: str, t: Tensor, op: str = "", root: int = -1) -> Any:
    """The communicator, once every rank has agreed on this call (unless checks are off)."""
    c = comm()
    if c.check and c.size > 1:
        agree(c, name, describe(name, t, op, root))
    return c


def _write_back(t: Tensor, array: object) -> Tensor:
    out = Tensor._make(array, t._backend)
    with no_grad():
        t.copy_(out)
    return out


def all_reduce(t: Tensor, op: str = "sum") -> Tensor:
    """Reduce ``t`` over every rank (``"sum"``, ``"mean"`` or ``"max"``); every rank gets
    the result, which is also copied into ``t``.

    Example:
        >>> import xad, xad.distributed as dist
        >>> dist.init(); dist.all_reduce(xad.tensor([1.0, 2.0]), op="mean").tolist()
        [1.0, 2.0]
    """
    _check("all_reduce", t, op)
    c = _comm("all_reduce", t, op)
    a = t._array
    if op == "mean":  # divided first, as NCCL's average: a float16 sum may overflow
        with t._backend.on_device():
            a = a / c.size
    return _write_back(t, c.allreduce(a, t._backend, "sum" if op == "mean" else op))


def broadcast(t: Tensor, root: int = 0) -> Tensor:
    """Rank ``root``'s ``t`` on every rank (also copied into ``t``).

    Example:
        >>> import xad, xad.distributed as dist
        >>> dist.init(); dist.broadcast(xad.tensor([3.0]), root=0).tolist()
        [3.0]
    """
    _check("broadcast", t)
    size = comm().size
    if not 0 <= root < size:
        raise ValueError(f"xad.distributed.broadcast: root must be a rank in [0, "
                         f"{size - 1}], got {root}")
    c = _comm("broadcast", t, root=root)
    return _write_back(t, c.broadcast(t._array, t._backend, root))


def broadcast_from_first(tensors: list[Tensor], what: str) -> None:
    """Rank 0's value of each tensor, copied into it on every rank, after one agreement on
    them all (``what`` names the caller in errors), as DataParallel's start and buffers."""
    c = comm()
    if c.size == 1 or not tensors:
        return
    if c.check:
        agree(c, what, describe("broadcast", count=len(tensors), root=0,
                                code=layout_code([(tuple(t.shape), t.dtype.name)
                                                  for t in tensors])))
    for t in tensors:
        _write_back(t, c.broadcast(t._array, t._backend, 0))


def all_gather(t: Tensor) -> list[Tensor]:
    """Every rank's ``t`` (all of the same shape and dtype), in rank order.

    Example:
        >>> import xad, xad.distributed as dist
        >>> dist.init(); [g.tolist() for g in dist.all_gather(xad.tensor([1, 2]))]
        [[1, 2]]
    """
    _check("all_gather", t)
    c, b = _comm("all_gather", t), t._backend
    stacked = c.all_gather(t._array, b)
    return [Tensor._make(stacked[i, ...], b) for i in range(c.size)]


def reduce_scatter(t: Tensor, op: str = "sum") -> Tensor:
    """Reduce ``t`` over every rank and give rank ``r`` the ``r``-th of ``world_size``
    equal blocks of the result along axis 0 (``t.shape[0]`` must divide evenly).

    Example:
        >>> import xad, xad.distributed as dist
        >>> dist.init(); dist.reduce_scatter(xad.tensor([1.0, 2.0])).tolist()
        [1.0, 2.0]
    """
    _check("reduce_scatter", t, op)
    c = _comm("reduce_scatter", t, op)
    if t.ndim == 0 or t.shape[0] % c.size:
        raise ValueError(f"xad.distributed.reduce_scatter: the first axis of a tensor of "
                         f"shape {t.shape} must split into {c.size} equal blocks (one per "
                         f"rank); pad it to a multiple of {c.size}")
    a = t._array
    if op == "mean":  # divided first, as all_reduce's
        with t._backend.on_device():
            a = a / c.size
    return Tensor._make(c.reduce_scatter(a, t._backend, "sum" if op == "mean" else op),
                        t._backend)
