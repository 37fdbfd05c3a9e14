"""``Optimizer``: the base of every optimiser: parameter groups, ``zero_grad``, state dicts.

Subclasses give their defaults and a ``_validate`` of one group's hyperparameters, and write
``step`` (and the functional form, ``sgd``, ``adam``, ...) as a loop over the parameters with
a gradient that calls :func:`_apply` with the module's update rule, written once as a pure
function of arrays (what immutable arrays run; on a backend that fuses, CuPy, it runs as one
kernel per parameter, :mod:`.fused`, or, queued during ``step``, one kernel over flat
buffers for a run of parameters, :mod:`.multi_tensor`), and a ``kernel`` working in place on
host arrays
(chunked for large parameters, for the CPU's cache); the shared L2 weight-decay step is
:func:`_decay`. State per parameter is a dict of Python
numbers and :class:`~xad.Tensor` s (no gradient) on the parameter's backend, device and dtype;
an update rewrites a state tensor's array in place where the backend's arrays are mutable and
rebinds ``._array`` where they are not (JAX).

On mutable backends the updates use in-place operators only (``*=``, ``+=``, ``**=``,
``buf[...] = a``; ``out=`` where the backend's functions are ufuncs: :mod:`.scratch`),
with scratch arrays kept per parameter across steps (``_scratch``, not part of the state
dict): fresh temporaries the size of each parameter at every step cost page faults and
allocator work, and the Array API has no ``out=``. Gradients are only read.

The state-dict layout is PyTorch's: ``{"state": {index: {...}}, "param_groups": [{...,
"params": [indices]}]}`` with parameters numbered in order across the groups.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .. import autograd as _ag
from ..backend import takes_out
from ..context import context
from ..ops.inplace import _refresh_views
from ..tensor import Tensor
from ..tracing import host_call
from .capturable import DeviceScalars, device_backend, watch_hyperparameters
from .fused import fused_update
from .multi_tensor import Update, batching, fusing, queue

__all__ = ["Optimizer"]

ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]]


class Optimizer:
    """Base class: holds ``param_groups`` (dicts with ``"params"`` and hyperparameters),
    ``defaults`` and ``state`` (a dict from parameter to its state dict).

    Example:
        >>> import xad
        >>> w = xad.zeros(2, requires_grad=True)
        >>> opt = xad.optim.SGD([{"params": [w], "lr": 0.5}], lr=0.1)
        >>> opt.param_groups[0]["lr"], opt.defaults["lr"]
        (0.5, 0.1)
    """

    # (derive, k) where the optimiser can keep its numbers on the device (capturable.py)
    _device_numbers: tuple[Any, ...] | None = None  # (derive, k[, counts[, carry]])
    _device: DeviceScalars | None = None
    # state entries that are one number per parameter (a 0-d tensor when kept on a device or
    # loaded from PyTorch); every other state tensor has its parameter's shape
    _scalar_state: frozenset[str] = frozenset({"step", "mu_product", "eta", "mu"})
    # whether the step takes complex parameters as PyTorch's: its rule run on their real and
    # imaginary parts (_apply_parts, torch._view_as_real), tested against PyTorch
    _complex_params: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:  # xad.compile replays a step (see _step_call)
            cls.step = _step_call(cls.__dict__["step"])  # type: ignore[method-assign]

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.state: dict[Tensor, dict[str, Any]] = {}
        # parameter -> [its array when made, scratch arrays...] (mutable backends only)
        self._scratch: dict[Tensor, list[Any]] = {}
        self._flat: dict[tuple, Any] = {}  # flat runs of a multi-tensor step (multi_tensor)
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor) or isinstance(params, Mapping):
            raise TypeError(f"params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {type(params).__name__}; wrap it in "
                            f"a list: [{type(params).__name__.lower()}]")
        groups: list[Any] = list(params)  # tensors, or group dicts
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], Mapping):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    # ----- groups ---------------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyperparameters (the rest from defaults).

        Example:
            >>> import xad
            >>> a, b = xad.zeros(1, requires_grad=True), xad.zeros(1, requires_grad=True)
            >>> opt = xad.optim.SGD([a], lr=0.1); opt.add_param_group({"params": [b], "lr": 1})
            >>> [g["lr"] for g in opt.param_groups]
            [0.1, 1]
        """
        if not isinstance(param_group, Mapping):
            raise TypeError(f"a parameter group must be a dict, got "
                            f"{type(param_group).__name__}")
        group = dict(param_group)
        if "params" not in group:
            raise ValueError("a parameter group needs a 'params' entry")
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params "
                                f"is {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError(f"can't optimize a non-leaf Tensor (shape {p.shape}, made by "
                                 f"{p.grad_fn!r}); optimise the leaf it comes from, or "
                                 f"detach it and set requires_grad=True")
            if p.dtype.is_complex and not self._complex_params:
                raise TypeError(f"{type(self).__name__}: a parameter (shape {p.shape}) has "
                                f"dtype {p.dtype}; this optimiser does not take complex "
                                f"parameters yet (the others in xad.optim do); optimise "
                                f"its real and imaginary parts as two real parameters")
            if not p.dtype.can_require_grad:
                raise TypeError(f"optimizer: a parameter has dtype {p.dtype}; only floating "
                                f"tensors can be optimised")
        if len({id(p) for p in params}) != len(params):
            raise ValueError("a parameter group contains the same parameter more than once")
        group["params"] = params
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        _refuse_tensor_numbers(type(self).__name__, group)
        self._validate(group)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)
        self._init_group_state(group)

    def _validate(self, group: dict[str, Any]) -> None:
        """Raise ``ValueError`` for an invalid hyperparameter in ``group``."""

    def _init_group_state(self, group: dict[str, Any]) -> None:
        """Create state eagerly for a new group (Adagrad does; most create it lazily)."""

    def _host_state(self) -> tuple:
        """Which parameters each group holds: ``xad.compile`` replays a program calling
        this optimiser only while they are the same (``zero_grad`` then clears the same
        gradients)."""
        return tuple(tuple(map(id, g["params"])) for g in self.param_groups)

    # ----- gradients ------------------------------------------------------------------------
    @host_call
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients: ``None`` (default), or new zero tensors.

        Never writes into a gradient's array (gradients may alias other arrays).

        Example:
            >>> import xad
            >>> w = xad.ones(2, requires_grad=True); (w * w).sum().backward()
            >>> opt = xad.optim.SGD([w], lr=0.1); opt.zero_grad(); w.grad is None
            True
        """
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:  # also where None: a compiled step then knows it is None
                    p.grad = None
                elif p.grad is not None:
                    b = p._backend
                    p.grad = Tensor._make(b.xp.zeros_like(p.grad._array), b)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; returns ``closure()`` if given."""
        raise NotImplementedError

    def _on_device(self) -> bool:
        """Whether this step keeps its numbers on the device (:mod:`.capturable`): once it
        has, and from the step where a group asks for ``capturable=True`` or
        ``xad.compile(..., cuda_graphs=True)`` records it, on a backend that can (CuPy)."""
        if self._device is not None:
            return True
        rule = type(self)._device_numbers
        rec = context.recorder
        if rule is None or not (rec is not None and rec.graphs or any(
                g.get("capturable") for g in self.param_groups)):
            return False
        if any(device_backend(g["params"]) is None for g in self.param_groups):
            return False
        if any(p.dtype.is_complex for g in self.param_groups for p in g["params"]):
            raise NotImplementedError(f"{type(self).__name__}: capturable=True (or a step "
                                      f"recorded with cuda_graphs=True) with a complex "
                                      f"parameter is not written yet; step it uncaptured")
        self._device = DeviceScalars(*rule)
        return True

    def _skips_on_device(self) -> bool:
        """Whether a skipped step (``GradScaler``'s, on the device: :func:`.fused.skipping`)
        leaves this optimiser as a step never taken would: its state made but unchanged."""
        return True

    def _device_groups(self, init: Callable[[Tensor, dict[str, Any], Any], Any]
                       ) -> list[tuple[int, dict[str, Any], list[Tensor]]]:
        """The device path's start (:mod:`.capturable`): each group's numbers, the state of
        its parameters with a gradient made by ``init(p, group, count)``, the learning rates
        uploaded and the hyperparameters guarded; then ``(index, group, parameters with a
        gradient)`` for each group that has any."""
        groups, ds = self.param_groups, self._device
        assert ds is not None  # a step comes here once _on_device() made it
        ds.prepare(groups, self.state, init)
        ds.upload(groups)
        watch_hyperparameters(self)
        found = ([p for p in g["params"] if p.grad is not None] for g in groups)
        return [(gi, g, ps) for gi, (g, ps) in enumerate(zip(groups, found)) if ps]

    def _closure(self, closure: Callable[[], Any] | None) -> Any:
        if closure is None:
            return None
        with _ag.enable_grad():
            return closure()

    # ----- state dicts ----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The optimiser's state as ``{"state": {index: {...}}, "param_groups": [...]}``.

        State tensors are copies (a snapshot that later steps do not change); parameters are
        named by their index in the order of the groups.

        Example:
            >>> import xad
            >>> w = xad.ones(2, requires_grad=True); opt = xad.optim.Adam([w], lr=0.1)
            >>> (w * w).sum().backward(); opt.step(); sd = opt.state_dict()
            >>> sorted(sd["state"][0]), sd["param_groups"][0]["params"]
            (['exp_avg', 'exp_avg_sq', 'step'], [0])
        """
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            g = {k: v for k, v in group.items() if k != "params"}
            g["params"] = ids
            groups.append(g)
        state = {}
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state.get(p)
                if st is not None:
                    state[index[id(p)]] = {k: _snapshot(v) for k, v in st.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore a state from :meth:`state_dict` (of this optimiser type, same groups).

        State tensors are copied onto each parameter's backend and device, and floating ones
        cast to its dtype, so a state saved on one backend resumes on another.

        Example:
            >>> import xad
            >>> w = xad.ones(2, requires_grad=True); opt = xad.optim.SGD([w], lr=0.1)
            >>> opt.load_state_dict({"state": {}, "param_groups": [{**opt.defaults,
            ...                      "lr": 0.5, "params": [0]}]})
            >>> opt.param_groups[0]["lr"]
            0.5
        """
        if not isinstance(state_dict, Mapping) or "state" not in state_dict \
                or "param_groups" not in state_dict:
            raise ValueError("load_state_dict: expected a dict with 'state' and 'param_groups' "
                             "(as made by Optimizer.state_dict())")
        saved_groups = list(state_dict["param_groups"])
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"loaded state dict has a different number of parameter groups "
                             f"({len(saved_groups)}) than the optimizer "
                             f"({len(self.param_groups)})")
        id_map: dict[Any, Tensor] = {}
        for i, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(f"loaded state dict contains a parameter group ({i}) that "
                                 f"doesn't match the size of optimizer's group: "
                                 f"{len(saved['params'])} vs {len(group['params'])} params")
            for k, p in zip(saved["params"], group["params"]):
                id_map[k] = p
        new_groups = []
        for saved, group in zip(saved_groups, self.param_groups):
            g = {k: v for k, v in saved.items() if k != "params"}
            if isinstance(group.get("betas"), tuple) and isinstance(g.get("betas"), list):
                g["betas"] = tuple(g["betas"])
            g["params"] = group["params"]
            _refuse_tensor_numbers(type(self).__name__, g)
            # the saved lr is not checked: chained schedulers drive it below 0 (cosine after
            # a decay), which a step takes, as PyTorch's (whose load checks nothing)
            self._validate({**self.defaults, **g, "lr": self.defaults["lr"]})
            new_groups.append(g)
        new_state: dict[Tensor, dict[str, Any]] = {}
        for k, st in state_dict["state"].items():
            p = id_map.get(k)
            if p is None:
                p = id_map.get(str(k)) if not isinstance(k, str) else _int_key(id_map, k)
            if p is None:
                continue  # as PyTorch: state of an unknown index is dropped
            new_state[p] = {name: _restore(v, p, name, k, name in self._scalar_state)
                            for name, v in st.items()}
        self.param_groups[:] = new_groups
        self.state = new_state
        self._scratch = {}
        self._flat = {}  # (the old state's flat buffers freed; flattened again at the step)
        rule = type(self)._device_numbers
        if rule is not None and (self._device is not None or any(
                isinstance(st.get("step"), Tensor) for st in new_state.values())):
            self._device = None  # rebuilt from the loaded counts at the next step
            if all(device_backend(g["params"]) is not None for g in self.param_groups):
                self._device = DeviceScalars(*rule)  # counts on the device stay there
            else:  # a host's counts are ints (one read each, here, not at every step)
                for st in new_state.values():
                    if isinstance(st.get("step"), Tensor):
                        st["step"] = int(st["step"].item())

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)

    # ----- helpers for subclasses -----------------------------------------------------------
    def _state(self, p: Tensor) -> dict[str, Any]:
        st = self.state.get(p)
        if st is None:
            st = self.state[p] = {}
        return st


def _step_call(step: Callable[..., Any]) -> Callable[..., Any]:
    """``step`` as ``xad.compile`` replays it: a host call (Python, run again at every
    replay) where its numbers are on the host; its kernels, recorded, where they are on the
    device (:mod:`.capturable`), so a CUDA graph holds the whole step."""
    def batched(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        with batching(self):  # a device's updates: one flat kernel per run (multi_tensor)
            return step(self, *args, **kwargs)

    hosted = host_call(functools.wraps(step)(batched))

    @functools.wraps(step)
    def call(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        rec = context.recorder
        if rec is not None and not rec.paused and rec.graphs and not args and not kwargs \
                and self._on_device():
            return step(self)
        return hosted(self, *args, **kwargs)

    return call


# Parameters with at most _SMALL elements are updated with fresh temporaries (fewer operator
# calls; small allocations are cheap). Larger ones use scratch arrays and, on the host only,
# are updated in chunks of about _CHUNK elements along the first axis, so the dozen passes of
# an update run in cache (a chunk of each of the five arrays involved fits in a 1 MiB L2
# cache); on a device a chunk is only more kernel launches.
_SMALL = 8192
_CHUNK = 49152


def _scratch_for(b: Any, x: Any, n: int) -> list[Any]:
    """A scratch entry ``[x, n, chunks]`` for the update of array ``x``: ``chunks`` is
    ``None`` for a small ``x`` (fresh temporaries: fewer calls, unless ``out=`` writes the
    scratch arrays directly), else a list of ``(key, scratch1, scratch2 or None)`` with
    ``key`` ``None`` (the whole array) or an index of one chunk along the first axis."""
    shape = tuple(x.shape)
    size = math.prod(shape)
    if size <= _SMALL and not takes_out(b.xp):
        return [x, n, None]
    rows = 0 if not shape else shape[0] if size <= 2 * _CHUNK else \
        max(1, _CHUNK // (size // shape[0]))  # (0: a 0-d parameter, updated whole)
    if len(shape) == 0 or rows >= shape[0] or not b.is_host:  # chunks: for a CPU's cache
        bufs = [b.xp.empty_like(x) for _ in range(n)] + [None]
        return [x, n, [(None, bufs[0], bufs[1])]]
    full = [b.xp.empty((rows,) + shape[1:], dtype=x.dtype, device=b.device)
            for _ in range(n)] + [None]
    chunks = []
    for i in range(0, shape[0], rows):
        k = min(rows, shape[0] - i)
        bufs = full if k == rows else [f if f is None else f[0:k, ...] for f in full]
        chunks.append(((slice(i, i + k), ...), bufs[0], bufs[1]))
    return [x, n, chunks]


def _apply(scratch: dict[Tensor, list[Any]], p: Tensor, n: int, kernel: Callable[..., None],
           rule: Callable[..., tuple], state: list[Tensor | None], g: Any, *args: Any,
           maximize: bool = False) -> None:
    """One parameter's update, reading gradient array ``g``. Each optimiser states its update
    once, as ``rule(x, state_arrays, g, *args) -> (new_x, new_state_arrays)``, a pure
    function of arrays; that is what runs on immutable arrays (JAX), and what the tests hold
    the fast path to. The fast path, where ``p``'s backend is mutable, is ``kernel``: the
    same rule written in place over the chunks (see :func:`_update`) of the arrays of ``p``
    and of its state tensors ``state`` (``None`` entries skipped), with ``p``'s entry in
    ``scratch`` (``n`` scratch arrays per chunk, kept across steps while ``p._array`` is the
    same array). It is measured to matter: bench/README.md, "optimisers in place". On a
    backend that fuses (CuPy), ``rule`` itself runs as one kernel: :mod:`.fused`.
    ``maximize``: the update reads ``-g`` (a negated copy, made on ``p``'s device)."""
    if context.recorder is not None and not context.recorder.paused:
        context.recorder.unsupported("a functional optimiser update (xad.optim.adam, sgd, ...): "
                                     "call an optimiser's step() in the compiled function")
    b = p._backend
    if p.dtype.is_complex:  # with p's device made current (CuPy), as below
        with contextlib.nullcontext() if b.scope is None else b.scope:
            return _apply_parts(p, rule, state, -g if maximize else g, *args)
    q = queue(scratch)
    if q is not None and fusing(b):  # run with the step's others when it ends
        q.append(Update(p, rule, state, g, args, maximize))
        return None
    if b.scope is not None:  # CuPy: the update's kernels run with p's device made current
        with b.scope:
            return _apply_here(scratch, p, n, kernel, rule, state, -g if maximize else g, *args)
    return _apply_here(scratch, p, n, kernel, rule, state, -g if maximize else g, *args)


def _apply_here(scratch: dict[Tensor, list[Any]], p: Tensor, n: int,
                kernel: Callable[..., None], rule: Callable[..., tuple],
                state: list[Tensor | None], g: Any, *args: Any) -> None:
    b = p._backend
    if not b.mutable:  # (JAX) new arrays, written into the tensors and their views
        x, new = rule(p._array, [None if s is None else s._array for s in state], g, *args)
        for t, a in ((p, x), *zip(state, new)):
            if t is not None:
                t._set_data(a)
                _refresh_views(t)
        return
    if fused_update(p, rule, state, g, args):  # a device: one kernel, no scratch
        return
    x = p._array
    e = scratch.get(p)
    if e is None or e[0] is not x or e[1] < n:
        e = scratch[p] = _scratch_for(b, x, n)
    rw = [x]
    for s in state:  # a loop, not a comprehension: cheaper for a few items
        rw.append(None if s is None else s._array)
    if e[2] is None:  # small: one call, no chunks (as _update, one call level less)
        kernel(rw, g, None, None, *args)
    else:
        _update(e, kernel, rw, g, *args)
    p._bump_version()


def _apply_parts(p: Tensor, rule: Callable[..., tuple], state: list[Tensor | None], g: Any,
                 *args: Any) -> None:
    """A complex parameter's update, as PyTorch's (``torch._view_as_real``): ``rule`` run on
    the real parts of ``p``, its state and ``g``, then on their imaginary parts (Adam's
    ``exp_avg_sq`` holds ``re(g)^2`` and ``im(g)^2``, not ``|g|^2``), the parts joined back
    into ``p`` and its (complex) state tensors."""
    b = p._backend
    halves = []
    for part in (b.xp.real, b.xp.imag):
        x, new = rule(part(p._array), [None if s is None else part(s._array) for s in state],
                      part(g), *args)
        halves.append([x, *new])
    for t, re, im in zip((p, *state), *halves):
        if t is None:
            continue
        joined = b.complex(re, im, t._array.dtype)
        if b.mutable:
            t._array[...] = joined
            t._bump_version()
        else:
            t._set_data(joined)
        _refresh_views(t)


def _update(e: list[Any], kernel: Callable[..., None], rw: list[Any], g: Any,
            *args: Any) -> None:
    """Run ``kernel(rw, g, scratch1, scratch2, *args)``, which updates the arrays in ``rw``
    (the parameter's first, then its state; ``None`` entries skipped) in place reading ``g``,
    over the chunks of scratch entry ``e`` (one call with ``None`` scratch for a small
    parameter). Chunks are written back with ``a[key] = part``, a no-op where slicing gives a
    view, so that the update is right whether it does or not."""
    chunks = e[2]
    if chunks is None:
        kernel(rw, g, None, None, *args)
        return
    for key, t, t2 in chunks:
        if key is None:
            kernel(rw, g, t, t2, *args)
            continue
        parts = [a if a is None else a[key] for a in rw]
        kernel(parts, g[key], t, t2, *args)
        for a, part in zip(rw, parts):
            if a is not None:
                a[key] = part


def _consts(b: Any, dtype: Any, values: tuple[float, ...], *flags: bool) -> tuple[Any, ...]:
    """``values + flags``, the Python numbers in ``values`` as scalars of ``dtype``
    (:meth:`xad.Backend.scalar`: 0-d arrays on NumPy and torch, whose operators take them
    about twice as fast as Python numbers; NumPy scalars on CuPy, kernel arguments) where
    ``b`` is mutable, with the same result (a weak scalar takes the array's dtype anyway)."""
    if b.mutable:
        xd = b.xad_dtype(dtype)
        if xd.is_complex:  # the rule runs on the real and imaginary parts (_apply_parts)
            dtype = b.dtype(xd.real)
        values = tuple(b.scalar(v, dtype) for v in values)
    return values + flags


def _decay(g: Any, x: Any, wd: Any, gw: Any) -> Any:
    """``g + wd * x`` (L2 weight decay of a gradient ``g``): a new array for a small
    parameter (``gw`` is ``None``), else written into the scratch array ``gw``."""
    if gw is None:
        return g + wd * x
    gw[...] = x
    gw *= wd
    gw += g
    return gw


def _zeros_like(p: Tensor) -> Tensor:
    """A zero state tensor with ``p``'s backend, device, shape and dtype."""
    b = p._backend
    return Tensor._make(b.xp.zeros_like(p._array), b)


def _full_like(p: Tensor, value: float) -> Tensor:
    """A state tensor like ``p`` with ``value`` in every real component: ``value + value i``
    for a complex ``p`` (its rule runs on the parts, :func:`_apply_parts`), as PyTorch's."""
    b = p._backend
    fill = complex(value, value) if p.dtype.is_complex else value
    return Tensor._make(b.xp.full_like(p._array, fill), b)


def _copy_array(b: Any, a: Any) -> Any:
    """A private copy of a backend array (the array itself where arrays are immutable)."""
    return b.xp.asarray(a, copy=True) if b.mutable else a


def _snapshot(v: Any) -> Any:
    if isinstance(v, Tensor):
        return Tensor._make(_copy_array(v._backend, v._array), v._backend)
    return v


def _int_key(id_map: dict[Any, Tensor], k: str) -> Tensor | None:
    try:
        return id_map.get(int(k))
    except ValueError:
        return None


def _restore(v: Any, p: Tensor, name: str, index: Any, scalar: bool) -> Any:
    """A state value made to match parameter ``p``: its backend, device and floating dtype
    (a 0-d number of a parameter that is not 0-d, a count or a running product kept on the
    device, keeps its dtype: float64, not rounded to a float32 parameter's). Any other state
    tensor must have ``p``'s shape: one of another shape, even of one element, is another
    model's (PyTorch fails at the step; broadcasting it would reshape ``p`` on JAX)."""
    if not isinstance(v, Tensor):
        return v
    with _ag.no_grad():
        t = v.detach()
        if t._backend is not p._backend:
            t = t.to(p._backend)
        if t.dtype.is_floating and t.dtype is not p.dtype and (t.ndim or not p.ndim):
            t = t.astype(p.dtype)
    if t.shape != p.shape and not (scalar and t.ndim == 0):
        raise ValueError(f"load_state_dict: state {name!r} of parameter {index} has shape "
                         f"{t.shape} but the parameter has shape {p.shape}; the state dict "
                         f"belongs to a different model")
    b = p._backend
    return Tensor._make(_copy_array(b, t._array), b)


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _refuse_tensor_numbers(name: str, group: Mapping[str, Any]) -> None:
    """A hyperparameter given as a tensor (PyTorch allows ``lr=torch.tensor(0.01)``) is
    refused by name: xad's optimisers take Python numbers (and keep them on the device
    themselves where a step is captured: ``capturable=True``)."""
    for key, value in group.items():
        if key != "params" and any(isinstance(v, Tensor) for v in (
                value if isinstance(value, (tuple, list)) else (value,))):
            raise TypeError(f"{name}: hyperparameter {key!r} holds a tensor ({value!r}); "
                            f"xad's optimisers take Python numbers: pass float(t) for each "
                            f"tensor t (capturable=True keeps them on the device where a "
                            f"step is captured)")


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and not math.isnan(x)


def _torch_flags(name: str, foreach: Any, maximize: bool, differentiable: bool,
                 **more: Any) -> dict[str, Any]:
    """PyTorch's implementation flags as group entries (its state-dict keys): ``maximize``
    is honoured by the optimiser; ``foreach``/``fused`` are accepted and ignored (xad has
    one update path per backend, a fused kernel where it fuses), and so is ``capturable``
    where an optimiser has no device path (its numbers on the device: :mod:`.capturable`,
    every optimiser but LBFGS);
    ``differentiable=True`` (gradients through the update) is refused."""
    if differentiable:
        raise NotImplementedError(f"{name}: differentiable=True (differentiating through the "
                                  f"optimiser step) is not supported; leave it False")
    return dict(foreach=foreach, maximize=bool(maximize), differentiable=False, **more)

