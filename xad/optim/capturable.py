"""An optimiser's numbers on the device, so that a CUDA graph can hold its whole step
(PyTorch's ``capturable=True``).

On the host path an optimiser computes its step's numbers in Python (Adam's bias
corrections from the step count, the learning rate) and passes them to its kernels as
arguments; a captured graph would freeze them. Here they live in device memory, per
parameter group (:class:`DeviceScalars`):

- ``lr``: a 0-d float64 array, written from ``group["lr"]`` by one host-to-device copy
  (:meth:`CupyBackend.upload`, no kernel) whenever it differs from the value last written:
  at every step, in eager mode and before the graph that reads it in a replay
  (``host_upload``), so a scheduler's change, or a user's ``group["lr"] = ...``, reaches
  the next step; so are the hyperparameters an optimiser names in ``uploaded`` (Adam's
  ``betas``, which ``OneCycleLR`` and ``CyclicLR`` change at every step), one 0-d array
  per number (SGD's and RMSprop's ``momentum`` too);
- ``steps``: one float64 count per parameter of the group; each parameter's
  ``state["step"]`` is a 0-d view of it (a tensor, as PyTorch's capturable state; SGD,
  which counts no steps, keeps no ``"step"``);
- carried numbers an optimiser keeps per parameter besides its count (NAdam's
  ``mu_product``, ASGD's ``eta`` and ``mu``): one float64 each per parameter, its state
  entry a 0-d view, as ``"step"``;
- the derived numbers (Adam's ``step_size``, ``eps_hat``, weight-decay factor), one row
  each per dtype of the group's parameters, computed with the counts advanced by *one*
  fused kernel per group per step from the same formula the host path evaluates in Python
  (:func:`xad.optim.adam._adam_numbers`; its ``ns`` is :data:`HOST` there, CuPy's fused
  namespace here, so a switch such as RAdam's rectification is a select on the device),
  in float64, then cast to the parameter's dtype.

Each parameter's update is then its optimiser's rule as one fused kernel (:mod:`.fused`)
reading 0-d views of those rows: no number of the step is a host value. Hyperparameters a
kernel takes as constants (eps, weight decay, flags, and betas or momentum where not
uploaded) are guarded by ``xad.compile``: a change records the step again.

A backend takes this path where it fuses kernels and can upload (CuPy); an optimiser, when
its group asks for ``capturable=True`` or when ``xad.compile(..., cuda_graphs=True)``
records its step, and from then on.
"""

from __future__ import annotations

import functools
import math
import types
import weakref
from collections.abc import Callable
from typing import Any

from .. import autograd as _ag
from ..context import context
from ..tensor import Tensor
from ..tracing import host_upload, unrecorded
from .fused import fuses, run_kernel, skip_flag

__all__ = ["HOST", "DeviceScalars", "device_backend", "learning_rate", "rate_and_momentum",
           "watch_hyperparameters"]

HOST = types.SimpleNamespace(sqrt=math.sqrt, maximum=max, power=pow,
                             where=lambda c, a, b: a if c else b)
"""The functions an optimiser's formula for its numbers uses (``ns`` in ``derive(t, lr,
..., ns)``), on Python numbers: what CuPy's fused namespace gives on the device."""


def device_backend(params: list[Tensor]) -> Any:
    """The one backend of ``params`` where it can keep an optimiser's numbers on the device
    (it fuses kernels and uploads numbers: CuPy), else None."""
    backends = {id(p._backend): p._backend for p in params}
    if len(backends) != 1:
        return None
    b = next(iter(backends.values()))
    return b if hasattr(b, "upload") and b.mutable and fuses(b) else None


class _Group:
    """One parameter group's device numbers (see the module docstring)."""

    def __init__(self, b: Any, params: list[Tensor], state: dict, k: int,
                 counts: bool, carry: tuple[tuple[str, float], ...], uploads: int) -> None:
        xp = b.xp
        self.b, self.host_lr = b, None
        self.host_hyper: tuple[float, ...] | None = None
        self.index = {id(p): i for i, p in enumerate(params)}
        n = len(params)
        with b.on_device():
            self.lr = Tensor._make(xp.zeros((), dtype=xp.float64), b)
            self.hyper = [Tensor._make(xp.zeros((), dtype=xp.float64), b)
                          for _ in range(uploads)]
            self.steps, self.step_views = _carried(b, params, state, "step", 0.0)
            self.carried = [_carried(b, params, state, key, v) for key, v in carry]
            self.ones = Tensor._make(xp.ones((n,), dtype=xp.float64), b)
            dtypes = sorted({p._array.dtype for p in params}, key=str)
            rows = {dt: xp.zeros((k, n), dtype=dt) for dt in dtypes}
            self.rows = [Tensor._make(rows[dt][j], b) for dt in dtypes for j in range(k)]
            self.views = {id(p): tuple(Tensor._make(rows[p._array.dtype][j, i], b)
                                       for j in range(k)) for i, p in enumerate(params)}
        self.masks: dict[tuple, Tensor] = {}
        self.keys = (("step",) if counts else ()) + tuple(key for key, _ in carry)
        self.place(state, [p for p in params if p in state])

    def place(self, state: dict, params: list[Tensor]) -> None:
        """The counts and carried numbers of ``params`` into their state, as 0-d views."""
        carried = ([self.step_views] if "step" in self.keys else []) + [
            views for _, views in self.carried]
        for p in params:
            i = self.index[id(p)]
            for key, views in zip(self.keys, carried):
                state[p][key] = views[i]

    def mask(self, active: tuple[bool, ...]) -> Tensor:
        """1.0 where a parameter is updated this step (it has a gradient), else 0.0."""
        if all(active):
            return self.ones
        m = self.masks.get(active)
        if m is None:
            b = self.b
            m = self.masks[active] = Tensor._make(b.asarray(
                [1.0 if a else 0.0 for a in active], dtype=b.xp.float64), b)
        return m


class DeviceScalars:
    """The device numbers of an optimiser's groups; ``derive(t, lr, *carried, *uploaded,
    *consts, *flags, ns)`` gives its ``k`` derived numbers from the counts ``t``, the rate
    ``lr``, the carried numbers before the step and the numbers of the hyperparameters
    named in ``uploaded`` (each a number or a tuple of numbers), then the carried numbers
    after it."""

    def __init__(self, derive: Callable[..., tuple], k: int, counts: bool = True,
                 carry: tuple[tuple[str, float], ...] = (),
                 uploaded: tuple[str, ...] = ()) -> None:
        self.derive, self.k, self.counts = derive, k, counts  # counts: state["step"]
        self.carry = carry  # (state key, first value) of each carried number
        self.uploaded = uploaded  # group keys held in device memory, as lr
        self.groups: list[_Group | None] = []
        self._kernels: dict[Any, Callable] = {}

    def prepare(self, groups: list[dict[str, Any]], state: dict,
                init: Callable[[Tensor, dict, Tensor], None]) -> None:
        """Make what a step needs and lacks, outside any recording (for ``xad.compile``
        these are tensors from before the call): each group's numbers, the mask of the
        parameters with a gradient, their state (``init(p, group, count)``)."""
        with unrecorded(), _ag.no_grad():
            while len(self.groups) < len(groups):
                self.groups.append(None)
            for gi, group in enumerate(groups):
                gs = self.groups[gi]
                if gs is None or len(gs.index) != len(group["params"]) or any(
                        gs.index.get(id(p)) != i for i, p in enumerate(group["params"])):
                    b = device_backend(group["params"])
                    if b is None:
                        raise ValueError(f"parameter group {gi}: an optimiser keeping "
                                         f"its numbers on the device (capturable, or "
                                         f"inside xad.compile(cuda_graphs=True)) needs "
                                         f"all of a group's parameters on one CuPy "
                                         f"device; move them there with .to()")
                    gs = self.groups[gi] = _Group(b, group["params"], state, self.k,
                                                  self.counts, self.carry,
                                                  len(self._hyper(group)))
                gs.mask(tuple(p.grad is not None for p in group["params"]))
                for i, p in enumerate(group["params"]):
                    if p.grad is not None:
                        init(p, group, gs.step_views[i])
                        gs.place(state, [p])

    def _hyper(self, group: dict[str, Any]) -> tuple[float, ...]:
        """The numbers of ``group``'s uploaded hyperparameters, in order."""
        return tuple(x for key in self.uploaded for x in _numbers(group[key]))

    @host_upload
    def upload(self, groups: list[dict[str, Any]]) -> None:
        """Each group's ``lr`` and uploaded hyperparameters into their device numbers, where
        they changed (no kernel)."""
        for gs, group in zip(self.groups, groups):
            if gs is None:
                continue
            lr = group["lr"]
            if gs.host_lr != lr:
                gs.b.upload(gs.lr._array, lr)
                gs.host_lr = lr
            hyper = self._hyper(group)
            if gs.host_hyper != hyper:
                for t, v in zip(gs.hyper, hyper):
                    gs.b.upload(t._array, v)
                gs.host_hyper = hyper

    def advance(self, gi: int, group: dict[str, Any], consts: tuple[float, ...],
                flags: tuple) -> None:
        """One kernel: the counts of the group's parameters that have a gradient go up by
        one, and the derived numbers are computed from them, ``lr``, the uploaded
        hyperparameters and ``consts`` (the others the derivation reads)."""
        gs = self.groups[gi]
        assert gs is not None  # prepare, earlier in the step, made every group's
        b = gs.b
        active = gs.mask(tuple(p.grad is not None for p in group["params"]))
        carried = [c for c, _ in gs.carried]
        numbers: tuple[Any, ...] = (*gs.hyper, *consts)  # the uploaded ones first
        skip = skip_flag()
        key = (id(b), len(gs.rows), len(numbers), flags, skip is not None)
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = b.fuse(
                lambda ns: _advance_body(self.derive, self.k, len(carried), len(numbers),
                                         flags, ns, skip is not None), "xad_step_numbers")
        f64 = b.xp.float64
        n = 3 + len(carried) + len(numbers)
        tail = [] if skip is None else [skip]
        run_kernel(b, kernel, [gs.steps, active, gs.lr, *carried,
                               *[c if isinstance(c, Tensor) else b.scalar(c, f64)
                                 for c in numbers], *gs.rows, *tail],
                   (0, *range(3, 3 + len(carried)), *range(n, n + len(gs.rows))),
                   "xad_step_numbers")

    def numbers(self, gi: int, p: Tensor) -> tuple[Tensor, ...]:
        """``p``'s derived numbers: 0-d views in its dtype."""
        gs = self.groups[gi]
        assert gs is not None  # prepare, earlier in the step, made every group's
        return gs.views[id(p)]


def learning_rate(step: Any, lr: Any, ns: Any) -> tuple[Any]:
    """The device numbers of an optimiser whose step needs only its learning rate (cast to
    each parameter's dtype): Adadelta, Rprop."""
    return (lr,)


def rate_and_momentum(step: Any, lr: Any, momentum: Any, ns: Any) -> tuple[Any, Any]:
    """The device numbers of an optimiser whose step needs its learning rate and its
    uploaded ``momentum`` (which ``OneCycleLR`` cycles), each cast to the parameter's
    dtype: SGD, RMSprop."""
    return (lr, momentum)


def watch_hyperparameters(opt: Any) -> None:
    """Inside an ``xad.compile`` recording, guard ``opt``'s hyperparameters but the
    learning rate and the uploaded ones (its kernels hold the others as constants) and its
    groups' parameters: a change records the step again."""
    rec = context.recorder
    if rec is not None and not rec.paused:
        rec.value_guard(functools.partial(_hyperparameters, weakref.ref(opt),
                                          opt._device.uploaded))


def _hyperparameters(ref: Any, uploaded: tuple[str, ...]) -> Any:
    """What a recorded step holds fixed of ``ref()``'s groups: the hyperparameters but the
    rate and the uploaded ones, of which only whether each is 0 (a momentum of 0 keeps no
    buffer), and the parameters."""
    opt = ref()
    skip = ("lr", "initial_lr", "params", *uploaded)
    return None if opt is None else [
        (sorted((k, v) for k, v in g.items() if k not in skip),
         [[x == 0 for x in _numbers(g[k])] for k in uploaded],
         tuple(id(p) for p in g["params"])) for g in opt.param_groups]


def _numbers(v: Any) -> tuple:
    """A hyperparameter's numbers: ``betas``' pair, or the one number."""
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


def _carried(b: Any, params: list[Tensor], state: dict, key: str,
             first: float) -> tuple[Tensor, list[Tensor]]:
    """One float64 per parameter, from its ``state[key]`` (a number or a device tensor;
    ``first`` where it has none), and a 0-d view of each."""
    xp = b.xp
    with b.on_device():
        a = xp.full((len(params),), first, dtype=xp.float64)
        for i, p in enumerate(params):
            v = state.get(p, {}).get(key)
            if isinstance(v, Tensor):
                a[i] = v._array
            elif v is not None:
                a[i] = float(v)
        return Tensor._make(a, b), [Tensor._make(a[i], b) for i in range(len(params))]


def _advance_body(derive: Callable[..., tuple], k: int, n_carried: int, n_consts: int,
                  flags: tuple, ns: Any, skips: bool = False) -> Callable[..., None]:
    """The fused function of :meth:`DeviceScalars.advance`: counts, then derived rows and
    carried numbers (those of parameters without a gradient kept; every one where
    ``skips`` and the last argument, :func:`.fused.skipping`'s flag, is true)."""
    def advance(steps: Any, active: Any, lr: Any, *rest: Any) -> None:
        if skips:
            rest, skip = rest[:-1], rest[-1]
            active = ns.where(skip, 0.0, active)
        carried = rest[:n_carried]
        consts, rows = rest[n_carried:n_carried + n_consts], rest[n_carried + n_consts:]
        t = steps + active
        steps[...] = t
        # a parameter never stepped (count 0: no gradient yet) gets unused numbers, kept
        # finite (1 - beta ** 0 would divide by zero)
        values = derive(ns.maximum(t, 1.0), lr, *carried, *consts, *flags, ns)
        for j, row in enumerate(rows):
            row[...] = values[j % k].astype(row.dtype)
        for c, v in zip(carried, values[k:]):
            c[...] = ns.where(active > 0, v, c)

    return advance
