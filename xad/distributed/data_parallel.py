"""``DataParallel``: one model replica per rank, gradients averaged over ranks in buckets.

As PyTorch's ``DistributedDataParallel``: the ranks first check they wrap the same model
(names, shapes, dtypes, ``requires_grad``), then the parameters and buffers are broadcast
from rank 0; the parameters are grouped, in reverse registration order (the
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
backward runs once every later use of the parameter has sent its gradient. Several
forwards before one backward make one identity each, all counted (``_Reducer``). A use
outside them (before the owning module's first call, or outside the forward, as an L2 term
in the loss) reaches the parameter's leaf hook beside the identities' share: the hook sees
that the leaf's gradient is not the identities' own and averages the difference at once
(a parameter used only that way counts as unused).
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
from ..utils.checkpoint import recomputing
from .agreement import Disagreement, agree, describe, layout_code
from .collectives import all_reduce, broadcast_from_first
from .world import comm, world_size

__all__ = ["DataParallel"]

_ITEMSIZE = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}


class _Ready(Function):
    """Identity on a parameter; its backward reports the parameter's complete gradient."""

    @staticmethod
    def forward(ctx: Any, reducer: _Reducer, p: Tensor, counted: bool = True) -> Tensor:
        ctx.reducer, ctx.param, ctx.step = reducer, p, reducer.step
        if counted:  # not when a checkpointed region re-runs: it replaces a counted one
            reducer.expect(p)
        return p

    @staticmethod  # one output, so one gradient: narrower than Function's *grads, as documented
    def backward(ctx: Any, g: Tensor) -> tuple:  # type: ignore[override]
        ctx.reducer.ready(ctx.param, g, ctx.step)
        return None, g, None


class _Bucket:
    """Parameters of one dtype and backend (device), all-reduced as one flat array."""

    def __init__(self, params: list[Tensor]) -> None:
        self.params = params
        self.values: list[Any] = [None] * len(params)
        self.missing = len(params)
        self.pending: Any = None
        self.numel = sum(p.size for p in params)


def _make_buckets(params: list[Tensor], limit: int) -> list[_Bucket]:
    buckets: list[list[Tensor]] = []
    size = 0
    for p in reversed(params):
        nbytes = p.size * _ITEMSIZE.get(p.dtype.name, 8)
        last = buckets[-1][0] if buckets else None
        if last is None or size + nbytes > limit or last.dtype != p.dtype or \
                last._backend is not p._backend:  # one dtype and device per bucket
            buckets.append([])
            size = 0
        buckets[-1].append(p)
        size += nbytes
    return [_Bucket(b) for b in buckets]


_STALE = ("DataParallel: this backward() reaches the output of a forward whose gradients were "
          "already averaged by an earlier backward() (a second backward through one forward's "
          "output, or through a forward made before the last synchronised backward); call the "
          "model again before each backward(), or, to run several backward() calls before "
          "one averaging, make all but the last inside model.no_sync()")


class _Reducer:
    """The buckets of one DataParallel and the state of the current step.

    A step opens at the first synced forward after the previous step's backward and may
    span several forwards: each parameter then has one identity per forward, and its
    gradient is complete once every identity made in the step has reported (a forward
    whose output is never backpropagated only delays its buckets to the end of backward).
    """

    def __init__(self, params: list[Tensor], names: dict[int, str], bucket_bytes: int,
                 find_unused: bool, overlap: bool) -> None:
        self.comm, self.names = comm(), names
        self.buckets = _make_buckets(params, bucket_bytes)
        self.slot = {id(p): (i, j) for i, bk in enumerate(self.buckets)
                     for j, p in enumerate(bk.params)}
        self.layout = layout_code([[(names[id(p)], p.size) for p in bk.params]
                                   for bk in self.buckets])
        self.find_unused, self.overlap = find_unused, overlap
        self.armed = False
        self.reduced: dict[int, Tensor] | None = None
        self.next = self.step = 0
        self.expected: dict[int, int] = {}
        self.arrived: dict[int, int] = {}
        self.local: dict[int, Tensor] = {}
        self.wait_seconds = 0.0
        self.hooks = {id(p): self.leaf_hook(p) for p in params}
        for p in params:
            p.register_hook(self.hooks[id(p)])

    def is_open(self) -> bool:
        """Whether a step has been prepared and none of its buckets started yet."""
        return self.armed and self.reduced is None and self.next == 0

    def prepare(self) -> None:
        """Start a synced step: no gradient seen yet."""
        for bk in self.buckets:
            bk.values, bk.missing, bk.pending = [None] * len(bk.params), len(bk.params), None
        self.armed, self.reduced, self.next = True, None, 0
        self.step += 1
        self.expected, self.arrived, self.local = {}, {}, {}
        for bk in self.buckets:  # hooks registered after the wrapper see the local gradient
            for p in bk.params:
                hooks, mine = p._hooks, self.hooks[id(p)]
                if hooks is not None and hooks[-1] is not mine and mine in hooks:
                    hooks.remove(mine)
                    hooks.append(mine)

    def expect(self, p: Tensor) -> None:
        """One more identity on ``p`` in this step."""
        self.expected[id(p)] = self.expected.get(id(p), 0) + 1

    def ready(self, p: Tensor, g: Tensor, step: int) -> None:
        """One identity's share ``g`` of ``p``'s gradient; once all of this step's have
        come (with what ``no_sync`` accumulated), start the all-reduces of the buckets now
        complete (in bucket order, the same on every rank)."""
        if step != self.step or not self.armed or self.reduced is not None:
            raise RuntimeError(_STALE)
        i, j = self.slot[id(p)]
        bk, k = self.buckets[i], id(p)
        n = self.arrived[k] = self.arrived.get(k, 0) + 1
        if n == 1:
            self.local[k] = g
            bk.values[j] = g if p.grad is None else p.grad + g
        else:
            self.local[k] = self.local[k] + g
            bk.values[j] = bk.values[j] + g
        if n == self.expected[k]:
            bk.missing -= 1
        if self.overlap:
            self._launch(lambda m: self.buckets[m].missing == 0)

    def _launch(self, ok: Any) -> None:
        for bk in self.buckets[:self.next]:  # let MPI progress the ones in flight
            if bk.pending is not None:
                bk.pending.test()
        while self.next < len(self.buckets) and ok(self.next):
            if self.next == 0 and self.comm.check and self.comm.size > 1:
                agree(self.comm, "DataParallel backward",
                      describe("DataParallel backward",
                               count=sum(bk.numel for bk in self.buckets), code=self.layout))
            bk = self.buckets[self.next]
            b = bk.params[0]._backend
            flat = self._share(b.xp.concat([b.xp.reshape(v._array, (-1,)) for v in bk.values]),
                               b)
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
            self.buckets[i].values[j] = p.grad if p.grad is not None else \
                Tensor._make(p._backend.zeros(p.shape, p._array.dtype), p._backend)
        start = time.perf_counter()
        self._launch(lambda k: True)
        idle = self._idle(unused) if self.find_unused else set()
        self.reduced = {}
        for bk in self.buckets:
            flat = bk.pending.wait()
            offset = 0
            for p in bk.params:
                b = p._backend
                piece = flat[offset:offset + p.size]
                self.reduced[id(p)] = Tensor._make(b.xp.reshape(piece, p.shape), b)
                offset += p.size
        self.wait_seconds += time.perf_counter() - start
        for p in unused:  # their leaf hooks may not run: store here
            averaged = self.reduced.pop(id(p))
            if self.slot[id(p)] not in idle:
                p.grad = averaged

    def _idle(self, unused: list[Tensor]) -> set[tuple[int, int]]:
        """The slots of the parameters that no rank gave a gradient, in this step or
        accumulated: their ``.grad`` stays ``None``, as with one process (and as PyTorch's
        DDP leaves a globally unused parameter's gradient untouched), so an optimiser skips
        them instead of applying momentum or weight decay to a zero gradient. One small
        exchange per step, after every bucket has started (the same order on every rank)."""
        mine = {self.slot[id(p)] for p in unused if p.grad is None}
        if self.comm.size == 1:
            return mine
        return set.intersection(*map(set, self.comm.gather_objects(sorted(mine))))

    def _share(self, flat: Any, b: Any) -> Any:
        """The fresh bucket ``flat`` divided by the world size, before the sum (in place
        where arrays allow), as PyTorch's DDP: N float16 gradients can overflow their sum
        where their average does not."""
        n = self.comm.size
        if n == 1:
            return flat
        if b.mutable:
            flat /= n
            return flat
        return flat / n

    def _mean(self, g: Tensor) -> Tensor:
        """``g`` (a fresh tensor) averaged over the ranks, at once (blocking)."""
        return g if self.comm.size == 1 else all_reduce(g, op="mean")

    def leaf_hook(self, p: Tensor) -> Any:
        """At the end of backward: ``p``'s averaged gradient replaces the local one. A
        share that did not pass through this step's identities (``p`` used outside the
        wrapper's forward, e.g. a regulariser in the loss, or before its module's first
        call) is averaged on its own, at once; so is what a user's hook on ``p`` changed
        (it runs first, on the local gradient, as in PyTorch: ``prepare`` keeps this hook
        last)."""
        def hook(g: Tensor) -> Tensor | None:
            if not self.armed:
                return None  # no_sync, or a backward not through the wrapper
            self.finish()
            assert self.reduced is not None  # finish keeps the averaged gradients there
            out = self.reduced.pop(id(p), None)
            if out is None:  # no share through the identities: p.grad holds finish's zeros
                out = self._mean(g.clone())
            else:
                p.grad = None  # the averaged value already includes the accumulated one
                local = self.local[id(p)]
                if g is not local:
                    out = out + self._mean(g - local)
            self.armed = bool(self.reduced)
            return out
        return hook


def _state_of(module: Module) -> list[tuple]:
    """What every rank's replica must agree on: each parameter's and buffer's name, shape,
    dtype and ``requires_grad``, in registration order."""
    return [(n, tuple(p.shape), p.dtype.name, p.requires_grad)
            for n, p in module.named_parameters()] + \
        [(n, tuple(t.shape), t.dtype.name, None) for n, t in module.named_buffers()]


def _check_replicas(module: Module) -> None:
    """Raise on every rank, naming the first parameter that differs and the ranks, when the
    ranks' models differ (as DDP's check of parameter shapes across processes)."""
    c, state = comm(), _state_of(module)
    if c.size == 1:
        return
    try:
        agree(c, "DataParallel", describe("DataParallel construction", count=len(state),
                                          code=layout_code(state)))
    except Disagreement as e:
        if not e.all_in("DataParallel construction"):
            raise
        every = c.gather_objects(state)
        raise RuntimeError(_replica_difference(every)) from None


def _replica_difference(every: list[list[tuple]]) -> str:
    def show(item: tuple | None) -> str:
        if item is None:
            return "nothing"
        grad = "" if item[3] is None else f", requires_grad={item[3]}"
        return f"{item[0]!r} of shape {item[1]}, {item[2]}{grad}"

    for i in range(max(map(len, every))):
        at = [s[i] if i < len(s) else None for s in every]
        if any(a != at[0] for a in at):
            groups: dict[str, list[str]] = {}
            for r, a in enumerate(at):
                groups.setdefault(show(a), []).append(str(r))
            held = "; ".join(f"rank{'s' * (len(rs) > 1)} {', '.join(rs)}: {h}"
                             for h, rs in groups.items())
            break
    counts = ", ".join(f"rank {r}: {len(s)}" for r, s in enumerate(every))
    return (f"DataParallel: the ranks hold different models (parameters and buffers: "
            f"{counts}); at position {i}: {held}. Every rank must wrap the same model, with "
            f"the same parameters, shapes, dtypes and requires_grad, else gradients land on "
            f"the wrong parameters")


class DataParallel(Module):
    """Data-parallel training: wrap the model, train as usual, every rank on its own shard.

    ``bucket_mb``: the size of a gradient bucket in MiB; ``find_unused_parameters``: allow
    parameters that get no gradient in a step (a rank without one adds zeros to the
    average; one unused on every rank keeps its ``.grad``, ``None`` after ``zero_grad``, as
    with one process; without the flag such a step raises, naming them);
    ``broadcast_buffers`` (as PyTorch's, on by default) copies rank 0's buffers (BatchNorm's
    running statistics) to every rank at the start of each forward in training mode, so
    the replicas stay identical; ``overlap=False`` starts the all-reduces only after the
    backward (to measure what overlapping gains). ``wait_seconds`` adds up
    the time this rank spent blocked on them. The gradients are averaged, so a loss that is a
    mean over the local shard gives the global mean gradient when the shards have equal
    sizes. Several forwards may precede one backward (their gradients add up, as with one
    process); a second backward through an already averaged forward raises.

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
        _check_replicas(module)
        broadcast_from_first([*module.parameters(), *module.buffers()], "DataParallel")
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        self._reducer = _Reducer([p for _, p in named], {id(p): n for n, p in named},
                                 int(bucket_mb * 2**20), find_unused_parameters, overlap)
        self._sync = True
        self._swapped: list[tuple[Module, str, Tensor]] = []
        self._tracking = False
        self._seen: dict[int, Tensor] = {}
        for m in module.modules():
            if any(id(p) in self._reducer.slot for p in m._parameters.values()):
                m.register_forward_pre_hook(self._see_parameters)
                m.register_forward_hook(self._restore)

    @property
    def wait_seconds(self) -> float:
        """Seconds this rank spent waiting for gradient all-reduces so far."""
        return self._reducer.wait_seconds

    def _see_parameters(self, m: Module, args: tuple) -> None:
        """Pre-hook: ``m`` sees its parameters through :class:`_Ready` for this forward, and
        when backward re-runs a checkpointed region of it (``xad.checkpoint``), so that the
        re-run builds the first run's graph (its identities replace, uncounted, the first
        run's, whose nodes checkpointing stripped)."""
        r = self._reducer
        if not is_grad_enabled():
            return  # a no_grad block
        if self._tracking:
            seen, counted = self._seen, True
        elif recomputing() and r.armed and r.reduced is None:
            seen, counted = {}, False
        else:
            return  # outside a synced forward of the wrapper
        for name, p in list(m._parameters.items()):
            if p is not None and id(p) in r.slot:
                same = seen.get(id(p))  # a shared (tied) parameter: one identity
                if same is None:
                    same = seen[id(p)] = _Ready.apply(r, p, counted)
                m._parameters[name] = same
                self._swapped.append((m, name, p))

    def _restore(self, m: Module, args: tuple, out: Any) -> None:
        """Post-hook: after a checkpointed re-run's call, ``m`` holds its parameters again
        (the wrapper's forward restores every module at its end)."""
        if self._tracking or not self._swapped:
            return
        for mod, name, p in self._swapped:
            if mod is m:
                m._parameters[name] = p
        self._swapped = [e for e in self._swapped if e[0] is not m]

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self.broadcast_buffers and self.training and world_size() > 1:
            with no_grad():
                broadcast_from_first(list(self.module.buffers()), "DataParallel buffers")
        r = self._reducer
        if not is_grad_enabled():  # evaluation: no gradient, the step (if any) stays open
            return self.module(*args, **kwargs)
        if not self._sync:
            r.armed = False
            return self.module(*args, **kwargs)
        if not r.is_open():  # else one more forward in this step (before its backward)
            r.prepare()
        self._tracking = True
        try:
            return self.module(*args, **kwargs)
        finally:
            self._tracking = False
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
