"""Multi-tensor optimiser steps on a device (PyTorch's ``foreach``): a parameter group's
update in two kernels where the backend fuses (CuPy), not one per parameter.

While an optimiser's ``step`` runs (:func:`batching`, opened by ``Optimizer``'s step
wrapper), :func:`~xad.optim.optimizer._apply` on a fusing backend queues each parameter's
update (:func:`queue`) instead of launching its kernel; when the step ends :func:`flush`
sorts the queued updates into runs that can share one kernel (same backend and device,
dtype, rule, fixed arguments, state layout, scalar values and ``maximize``) and runs each
run of more than 8 parameters as

- one ``concat`` of the raveled gradients (CuPy 14 joins more than 8 arrays of one dtype
  averaging under 2 MiB in *one* kernel, uploading a table of their pointers;
  :data:`_JOIN_BYTES`), negated once for ``maximize``;
- one fused kernel of the rule (:func:`.fused.kernel_for`: the kernel the per-parameter
  path runs, elementwise, so the same bits) over a flat parameter buffer, the flat
  gradient and flat state buffers.

The flat buffers: the first time a run goes this way, its parameters' and state tensors'
values are copied (one ``concat`` each) into flat buffers and each tensor's data set to a
view of its piece (``Tensor._relocate``: the same values, so the same version, as a
compiled step's, which does not flatten; its ``detach()``/``.data``/view tensors follow:
:func:`~xad.ops.inplace._refresh_views`), as
PyTorch's RNN ``flatten_parameters``. Every step checks by identity that each tensor still
holds its view; where one does not (``p.data = ...``, ``Module.to``/``half``, the
optimiser's ``load_state_dict``, ``add_param_group`` joining a run), the run is flattened
again from the current values. A step where some of a flat run's parameters have no
gradient updates the others one kernel each (as PyTorch, one without a gradient is
skipped), leaving the buffers as they are. Runs of at most 8 parameters (whose gradients
CuPy copies one kernel each: no gain), of more than 2 MiB per parameter on average, runs
with a parameter that is a view of another tensor, and runs with a parameter already in
another optimiser's flat run (one parameter in two optimisers) keep the per-parameter
kernel.

Memory: the flat buffers replace the parameters' and states' own arrays (nothing extra once
the old ones are freed); a step costs one transient flat copy of the run's gradients.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from typing import Any, NamedTuple

from ..ops.inplace import _refresh_views
from ..tensor import Tensor
from .fused import _split, fused_update, fuses, kernel_for

__all__ = ["Update", "batching", "flush", "fusing", "joins_in_one", "queue"]

_JOIN_BYTES = 2 * 1024 * 1024  # CuPy's _concatenate: threshold_size per array
_local = threading.local()
# id(parameter) -> the flat run whose buffer it is a view of (one optimiser's at a time)
_OWNERS: dict[int, weakref.ref] = {}


class Update(NamedTuple):
    """One parameter's queued update: ``rule(p, state, g, *args)`` (``-g``: ``maximize``)."""

    p: Tensor
    rule: Any
    state: list
    g: Any
    args: tuple
    maximize: bool


class _Flat:
    """A run's flat buffers: ``x`` (the parameters), ``bufs`` (one per state slot) and the
    tensors (``params``, ``states``) whose data are views of them (``views``, ``sviews``)."""

    def __init__(self, run: list[Update]) -> None:
        b = run[0].p._backend
        self.params = [u.p for u in run]
        self.x, self.views = _flatten(b, self.params)
        self.states, self.bufs, self.sviews = [], [], []
        self.slots = [j for j, s in enumerate(run[0].state) if s is not None]
        for j in self.slots:
            held = [u.state[j] for u in run]
            buf, views = _flatten(b, held)
            self.states.append(held)
            self.bufs.append(buf)
            self.sviews.append(views)

    def intact(self) -> bool:
        """Whether every tensor still holds its view of the flat buffers."""
        if any(p._array is not v for p, v in zip(self.params, self.views)):
            return False
        return all(t._array is v for held, views in zip(self.states, self.sviews)
                   for t, v in zip(held, views))

    def holds(self, run: list[Update]) -> bool:
        """Whether ``run`` updates exactly this flat run's tensors, all still flat."""
        if len(run) != len(self.params) or any(u.p is not p for u, p in zip(run, self.params)):
            return False
        if [j for j, s in enumerate(run[0].state) if s is not None] != self.slots:
            return False  # (a momentum set from 0 since: a buffer more)
        for j, held in zip(self.slots, self.states):
            if any(u.state[j] is not t for u, t in zip(run, held)):
                return False
        return self.intact()


def queue(scratch: dict) -> list[Update] | None:
    """The queue of updates of the step of the optimiser whose scratch dict is ``scratch``
    (``None`` outside its :func:`batching`, and for the functional updates, ``adam(...)``,
    which run at once)."""
    q = getattr(_local, "queue", None)
    return q[1] if q is not None and q[0] is scratch else None


@contextlib.contextmanager
def batching(opt: Any) -> Iterator[None]:
    """Queue the fusing updates ``opt``'s step makes, and run them when it ends (also when
    it raises: the updates queued so far, as the per-parameter path would have made)."""
    outer = getattr(_local, "queue", None)
    pending: list[Update] = []
    _local.queue = (opt._scratch, pending)
    try:
        yield
    finally:
        _local.queue = outer
        flush(opt, pending)


def flush(opt: Any, pending: list[Update]) -> None:
    """Run the queued updates: in flat runs where they allow it, one by one otherwise."""
    runs: dict[tuple, list[Update]] = {}
    parts: dict[tuple, tuple] = {}  # the same argument objects (an optimiser's constants,
    for u in pending:  # shared by its parameters) split once; all alive until the end
        b = u.p._backend
        ids = (id(b), *map(id, u.args))
        part = parts.get(ids)
        if part is None:
            leaves: list[Any] = []
            spec = _split(u.args, b.xp, leaves)
            part = parts[ids] = (spec, tuple((type(v), v) for v in leaves))
        key = (id(b), u.p._array.dtype, u.rule, part[0], tuple(s is None for s in u.state),
               u.maximize, part[1])
        try:
            runs.setdefault(key, []).append(u)
        except TypeError:  # an argument that is no number (an array): a run of its own
            runs[(id(u),)] = [u]
    flats = opt._flat
    for run in runs.values():
        if not (_fits(run) and _run_flat(flats, run)):
            for u in run:
                _one(u)


def _one(u: Update) -> None:
    b = u.p._backend
    with b.on_device():
        fused_update(u.p, u.rule, u.state, -u.g if u.maximize else u.g, u.args)


def joins_in_one(b: Any, arrays: list[Any]) -> bool:
    """Whether ``arrays`` (on backend ``b``) join in one kernel where launches are what a
    step costs: ``b`` fuses, and CuPy's ``concatenate`` copies them in one kernel (more
    than 8 of one dtype, under 2 MiB each on average)."""
    if len(arrays) <= 8 or not fusing(b):
        return False
    dtype = arrays[0].dtype
    if any(a.dtype != dtype for a in arrays):
        return False
    return sum(a.nbytes for a in arrays) < _JOIN_BYTES * len(arrays)


def _fits(run: list[Update]) -> bool:
    """Whether ``run`` gains from one flat kernel: its gradients, of the parameters' dtype,
    join in one kernel (:func:`joins_in_one`), no parameter is a view of another tensor,
    and every array (parameter, state, gradient) is its own."""
    if len(run) <= 8:
        return False
    dtype = run[0].p._array.dtype
    seen = set()
    for u in run:
        if u.p._base is not None or u.g.dtype != dtype or any(
                s is not None and (s._array.dtype != dtype or s.shape != u.p.shape)
                for s in u.state):
            return False
        seen.add(id(u.p._array))
        seen.update(id(s._array) for s in u.state if s is not None)
    arrays = len(run) * (1 + sum(s is not None for s in run[0].state))
    return len(seen) == arrays and joins_in_one(run[0].p._backend, [u.g for u in run])


def _run_flat(flats: dict, run: list[Update]) -> bool:
    """Run ``run`` as one flat update (flattening it first where needed); ``False`` where
    it is part of an intact flat run whose other parameters have no gradient this step."""
    key = tuple(id(u.p) for u in run)
    flat = flats.get(key)
    if flat is None or not flat.holds(run):
        ids = set(key)
        near = [k for k in flats if not ids.isdisjoint(k)]
        if any(ids < set(k) and flats[k].intact() for k in near):
            return False
        if any(_owned_elsewhere(u.p, flats) for u in run):
            return False
        for k in near:  # replaced by a flat run over this one's parameters
            del flats[k]
        flat = flats[key] = _Flat(run)
        ref = weakref.ref(flat, lambda r: [_OWNERS.pop(i) for i in key if _OWNERS.get(i) is r])
        for i in key:
            _OWNERS[i] = ref
    u = run[0]
    b = u.p._backend
    found = kernel_for(b, u.rule, u.state, u.args, u.p._array.dtype)
    if found is None:
        return False
    kernel, values = found
    xp = b.xp
    with b.on_device():
        g = xp.concat([xp.reshape(v.g, (-1,)) for v in run])
        if u.maximize:
            g = -g
        kernel(flat.x, g, *flat.bufs, *values)
    for held in flat.states:
        for s in held:
            s._bump_version()
    for p in flat.params:
        p._bump_version()
    return True


def _owned_elsewhere(p: Tensor, flats: dict) -> bool:
    """Whether ``p`` is a view of another optimiser's intact flat run (one parameter in two
    optimisers: flattening it again at each of their steps would copy both runs)."""
    ref = _OWNERS.get(id(p))
    f = None if ref is None else ref()
    if f is None or not any(q is p for q in f.params):
        _OWNERS.pop(id(p), None)
        return False
    return all(f is not g for g in flats.values()) and f.intact()


def _flatten(b: Any, tensors: list[Tensor]) -> tuple[Any, list[Any]]:
    """One flat buffer holding the values of ``tensors`` (one ``concat``), each tensor's
    data set to a view of its piece; the buffer and the views."""
    xp = b.xp
    with b.on_device():
        flat = xp.concat([xp.reshape(t._array, (-1,)) for t in tensors])
        views, at = [], 0
        for t in tensors:
            shape = tuple(t._array.shape)
            n = t._array.size
            views.append(xp.reshape(flat[at:at + n], shape))
            at += n
    for t, v in zip(tensors, views):
        t._relocate(v)
        _refresh_views(t)
    return flat, views


def fusing(b: Any) -> bool:
    """Whether updates on backend ``b`` are queued (mutable arrays, fused kernels)."""
    return b.mutable and fuses(b)
