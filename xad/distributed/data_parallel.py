"""``DataParallel``: one model replica per rank, gradients averaged over ranks in buckets.

As PyTorch's ``DistributedDataParallel``: the wrapped module's parameters and buffers are
broadcast from rank 0; the parameters are grouped, in reverse registration order (the
order their gradients complete in backward), into buckets of about ``bucket_mb``; during
``loss.backward()`` a bucket's non-blocking all-reduce starts as soon as every gradient in
it is complete, so communication overlaps the rest of the backward. The last bucket is
waited for at the end of that same ``backward()`` (the parameters' leaf hooks), so when it
returns every ``.grad`` holds the average over ranks and ``optimizer.step()`` needs nothing
more. ``no_sync()`` skips the averaging (the gradients accumulate locally); the next synced
backward averages the accumulated sums.

How a gradient is known to be complete: while the wrapper runs ``forward``, each sub-module
that owns parameters sees them, from its first call until the wrapper's forward returns,
through one identity operation made at that first call (a parameter shared by several
modules gets one); the engine runs nodes in reverse creation order, so the identity's
backward runs once every later use of the parameter has sent its gradient. A use *before*
the owning module's first call bypasses the identity: its share of the gradient is not
averaged (and a parameter used only that way counts as unused).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from ..function import Function
from ..grad_mode import is_grad_enabled, no_grad
from ..nn.module import Module
from ..tensor import Tensor
from .collectives import broadcast
from .world import comm, world_size

__all__ = ["DataParallel"]

_ITEMSIZE = {"float16": 2, "float32": 4, "float64": 8}


class _Ready(Function):
    """Identity on a parameter; its backward reports the parameter's complete gradient."""

    @staticmethod
    def forward(ctx: Any, reducer: _Reducer, p: Tensor) -> Tensor:
        ctx.reducer, ctx.param = reducer, p
        return p

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        ctx.reducer.ready(ctx.param, g)
        return None, g


class _Bucket:
    """Parameters of one dtype whose gradients are all-reduced as one flat array."""

    def __init__(self, params: list[Tensor]) -> None:
        self.params = params
        self.values: list[Any] = [None] * len(params)
        self.missing = len(params)
        self.pending: Any = None


def _make_buckets(params: list[Tensor], limit: int) -> list[_Bucket]:
    buckets: list[list[Tensor]] = []
    size = 0
    for p in reversed(params):
        nbytes = p.size * _ITEMSIZE.get(p.dtype.name, 8)
        if not buckets or size + nbytes > limit or buckets[-1][0].dtype != p.dtype:
            buckets.append([])
            size = 0
        buckets[-1].append(p)
        size += nbytes
    return [_Bucket(b) for b in buckets]


class _Reducer:
    """The buckets of one DataParallel and the state of the current step."""

    def __init__(self, params: list[Tensor], names: dict[int, str], bucket_bytes: int,
                 find_unused: bool, overlap: bool) -> None:
        self.comm, self.names = comm(), names
        self.buckets = _make_buckets(params, bucket_bytes)
        self.slot = {id(p): (i, j) for i, bk in enumerate(self.buckets)
                     for j, p in enumerate(bk.params)}
        self.find_unused, self.overlap = find_unused, overlap
        self.armed = False
        self.reduced: dict[int, Tensor] | None = None
        self.next = 0
        self.wait_seconds = 0.0

    def prepare(self) -> None:
        """Start a synced step: no gradient seen yet."""
        for bk in self.buckets:
            bk.values, bk.missing, bk.pending = [None] * len(bk.params), len(bk.params), None
        self.armed, self.reduced, self.next = True, None, 0

    def ready(self, p: Tensor, g: Tensor) -> None:
        """``p``'s gradient ``g`` is complete: add what ``no_sync`` accumulated, and start
        the all-reduces of the buckets now complete (in bucket order, the same on every
        rank)."""
        i, j = self.slot[id(p)]
        bk = self.buckets[i]
        if bk.values[j] is None:
            bk.missing -= 1
        bk.values[j] = (g if p.grad is None else p.grad + g)._array
        if self.overlap:
            self._launch(lambda k: self.buckets[k].missing == 0)

    def _launch(self, ok: Any) -> None:
        for bk in self.buckets[:self.next]:  # let MPI progress the ones in flight
            if bk.pending is not None:
                bk.pending.test()
        while self.next < len(self.buckets) and ok(self.next):
            bk = self.buckets[self.next]
            b = bk.params[0]._backend
            flat = b.xp.concat([b.xp.reshape(v, (-1,)) for v in bk.values])
            bk.pending = self.comm.iallreduce(flat, b)
            self.next += 1

    def finish(self) -> None:
        """Wait for every bucket (once per step) and keep the averaged gradients."""
        if self.reduced is not None:
            return
        unused = [p for bk in self.buckets for j, p in enumerate(bk.params)
                  if bk.values[j] is None]
        if unused and not self.find_unused:
            missing = {id(p) for p in unused}
            names = ", ".join(n for i, n in self.names.items() if i in missing)
            raise RuntimeError(f"DataParallel: parameters got no gradient in this step: "
                               f"{names}. Pass find_unused_parameters=True when some "
                               f"parameters are not used in every forward")
        for p in unused:  # a locally unused parameter adds zeros (or what no_sync kept)
            i, j = self.slot[id(p)]
            self.buckets[i].values[j] = (p.grad._array if p.grad is not None else
                                         p._backend.zeros(p.shape, p._array.dtype))
        start = time.perf_counter()
        self._launch(lambda k: True)
        self.reduced = {}
        for bk in self.buckets:
            flat = self._average(bk.pending.wait(), bk.params[0]._backend)
            offset = 0
            for p in bk.params:
                b = p._backend
                piece = flat[offset:offset + p.size]
                self.reduced[id(p)] = Tensor._make(b.xp.reshape(piece, p.shape), b)
                offset += p.size
        self.wait_seconds += time.perf_counter() - start
        for p in unused:  # their leaf hooks do not run: store here
            p.grad = self.reduced.pop(id(p))

    def _average(self, flat: Any, b: Any) -> Any:
        """The summed bucket divided by the world size (in place where arrays allow)."""
        n = self.comm.size
        if n == 1:
            return flat
        if b.mutable:
            flat /= n
            return flat
        return flat / n

    def leaf_hook(self, p: Tensor) -> Any:
        def hook(g: Tensor) -> Tensor | None:
            if not self.armed:
                return None  # no_sync, or a backward not through the wrapper
            self.finish()
            p.grad = None  # the averaged value already includes the accumulated one
            g = self.reduced.pop(id(p))
            self.armed = bool(self.reduced)
            return g
        return hook


class DataParallel(Module):
    """Data-parallel training: wrap the model, train as usual, every rank on its own shard.

    ``bucket_mb``: the size of a gradient bucket in MiB; ``find_unused_parameters``: allow
    parameters that get no gradient in a step (they count as zeros; without it such a step
    raises, naming them); ``broadcast_buffers`` (as PyTorch's, on by default) copies rank 0's
    buffers (BatchNorm's running statistics) to every rank at the start of each forward in
    training mode, so the replicas stay identical; ``overlap=False`` starts the all-reduces
    only after the backward (to measure what overlapping gains). ``wait_seconds`` adds up
    the time this rank spent blocked on them. The gradients are averaged, so a loss that is a
    mean over the local shard gives the global mean gradient when the shards have equal
    sizes.

    Example:
        >>> import xad, xad.distributed as dist
        >>> dist.init(); model = dist.DataParallel(xad.nn.Linear(3, 1))
        >>> model(xad.ones(2, 3)).sum().backward(); model.module.bias.grad.tolist()
        [2.0]
    """

    def __init__(self, module: Module, bucket_mb: float = 25, find_unused_parameters: bool = False,
                 overlap: bool = True, broadcast_buffers: bool = True) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel wraps an xad.nn.Module, got {type(module).__name__}")
        if not bucket_mb > 0:
            raise ValueError(f"DataParallel: bucket_mb must be positive, got {bucket_mb}")
        super().__init__()
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        for t in [*module.parameters(), *module.buffers()]:
            broadcast(t, root=0)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        self._reducer = _Reducer([p for _, p in named], {id(p): n for n, p in named},
                                 int(bucket_mb * 2**20), find_unused_parameters, overlap)
        self._sync = True
        self._swapped: list[tuple[Module, str, Tensor]] = []
        self._seen: dict[int, Tensor] = {}
        for _, p in named:
            p.register_hook(self._reducer.leaf_hook(p))
        for m in module.modules():
            if any(id(p) in self._reducer.slot for p in m._parameters.values()):
                m.register_forward_pre_hook(self._see_parameters)

    @property
    def wait_seconds(self) -> float:
        """Seconds this rank spent waiting for gradient all-reduces so far."""
        return self._reducer.wait_seconds

    def _see_parameters(self, m: Module, args: tuple) -> None:
        """Pre-hook: ``m`` sees its parameters through :class:`_Ready` for this forward."""
        r = self._reducer
        if not r.armed or r.reduced is not None:
            return
        for name, p in list(m._parameters.items()):
            if p is not None and id(p) in r.slot:
                seen = self._seen.get(id(p))  # a shared (tied) parameter: one identity
                if seen is None:
                    seen = self._seen[id(p)] = _Ready.apply(r, p)
                m._parameters[name] = seen
                self._swapped.append((m, name, p))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self.broadcast_buffers and self.training and world_size() > 1:
            with no_grad():
                for t in self.module.buffers():
                    broadcast(t, root=0)
        r = self._reducer
        if not (self._sync and is_grad_enabled()):
            r.armed = False
            return self.module(*args, **kwargs)
        r.prepare()
        try:
            return self.module(*args, **kwargs)
        finally:
            for m, name, p in self._swapped:
                m._parameters[name] = p
            self._swapped.clear()
            self._seen.clear()

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, backward accumulates gradients locally without communicating.

        Example:
            >>> import xad, xad.distributed as dist
            >>> dist.init(); model = dist.DataParallel(xad.nn.Linear(2, 1))
            >>> with model.no_sync():
            ...     model(xad.ones(1, 2)).sum().backward()
            >>> model(xad.ones(1, 2)).sum().backward(); model.module.bias.grad.tolist()
            [2.0]
        """
        previous, self._sync = self._sync, False
        try:
            yield
        finally:
            self._sync = previous
