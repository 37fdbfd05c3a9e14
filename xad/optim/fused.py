"""An optimiser's update rule, written once, run as one fused kernel per parameter on a
device (or per run of parameters over flat buffers: :mod:`.multi_tensor`).

Each optimiser states its update once, as a pure function of arrays, ``rule(x, state, g,
*args) -> (new_x, new_state)`` (``_adam_rule``, ``_sgd_rule``, ...): what immutable arrays
(JAX) run, and what every fast path is tested against. On a backend that fuses
(:meth:`xad.Backend.fuse`: CuPy's ``cupy.fuse``) :func:`fused_update` runs that same
function as *one* elementwise kernel that reads the parameter, its state and the gradient
and writes the new parameter and state back in place, where the host path
(:func:`~xad.optim.optimizer._update`) runs a dozen in-place operators over cache-sized
chunks. Of ``args``, Python numbers become the kernel's scalar arguments, typed as the
parameter's dtype by :meth:`xad.Backend.scalar` (a new learning rate or bias correction at
every step needs no new kernel and no host-to-device copy); booleans, ``None``, strings and
the backend's namespace are fixed per kernel (one kernel is made per optimiser, flags and
state layout, and reused).

A new optimiser gets its device path by writing its rule with operators and ufuncs
(``xp.maximum``, ``** 0.5``) only, no Python branch on an array value, and calling
:func:`~xad.optim.optimizer._apply`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ..context import context
from ..tensor import Tensor

__all__ = ["fused_update", "fuses", "kernel_for", "run_kernel", "skip_flag", "skipping"]

_ARG = object()  # an argument's place in the spec: a kernel argument
_XP = object()   # the backend's namespace: the fused function's own inside the kernel
_KERNELS: dict[tuple, Callable | None] = {}  # (backend, rule, spec, state layout) -> kernel
_STATIC = (bool, str, type(None))


_local = threading.local()


@contextlib.contextmanager
def skipping(found_inf: Tensor) -> Iterator[None]:
    """Inside, the optimisers' device steps (:mod:`.capturable`) leave every parameter,
    state and count as it was where ``found_inf`` (a 0-d bool on the device) is true:
    ``GradScaler``'s skipped step decided on the device, without a host read."""
    before = getattr(_local, "skip", None)
    _local.skip = found_inf
    try:
        yield
    finally:
        _local.skip = before


def skip_flag() -> Tensor | None:
    """The flag of the innermost :func:`skipping`, or None."""
    return getattr(_local, "skip", None)


def fuses(b: Any) -> bool:
    """Whether backend ``b`` runs optimiser rules as fused kernels."""
    key = (b, None)
    if key not in _KERNELS:
        _KERNELS[key] = b.fuse(lambda ns: lambda x: x, "xad_probe")
    return _KERNELS[key] is not None


def fused_update(p: Tensor, rule: Callable[..., tuple], state: list[Tensor | None], g: Any,
                 args: tuple) -> bool:
    """Update ``p`` and its ``state`` tensors in place by ``rule(p, state, g, *args)`` in one
    fused kernel, with ``p``'s device current; ``False`` (nothing done) where ``p``'s
    backend does not fuse. ``g`` is an array, or a tensor where the update is to be
    recorded by ``xad.compile`` (:func:`run_kernel`; the optimiser's numbers are then
    tensors on the device among ``args``: :mod:`.capturable`)."""
    b = p._backend
    if not fuses(b):  # (before the key: the host's per-parameter path stays cheap)
        return False
    skip = skip_flag()
    found = kernel_for(b, rule, state, args, p._array.dtype, skip is not None)
    if found is None:
        return False
    kernel, values = found
    if skip is not None:
        values.append(skip)
    if isinstance(g, Tensor):
        held = [s for s in state if s is not None]
        run_kernel(b, kernel, [p, g, *held, *values], (0, *range(2, 2 + len(held))),
                   "xad_" + rule.__name__.strip("_"))
        return True
    kernel(p._array, g, *[s._array for s in state if s is not None],
           *[v._array if isinstance(v, Tensor) else v for v in values])
    for s in state:
        if s is not None:
            s._bump_version()
    p._bump_version()
    return True


def kernel_for(b: Any, rule: Callable[..., tuple], state: list[Any], args: tuple,
               dtype: Any, skips: bool = False) -> tuple[Callable, list[Any]] | None:
    """The fused kernel of ``rule`` for state layout ``state`` (``None`` entries absent)
    and the fixed part of ``args``, and its scalar arguments (Python numbers as scalars of
    ``dtype``); ``None`` where backend ``b`` cannot fuse ``rule``. With ``skips``, the
    kernel takes a last argument, a flag that keeps every value where it is true."""
    leaves: list[Any] = []
    spec = _split(args, b.xp, leaves)
    layout = tuple(s is not None for s in state)
    key = (b, rule, spec, layout, skips)
    try:
        kernel = _KERNELS[key]
    except KeyError:
        name = "xad_" + rule.__name__.strip("_")
        kernel = _KERNELS[key] = b.fuse(lambda ns: _body(rule, spec, layout, ns, skips),
                                        name)
    if kernel is None:
        return None
    return kernel, [b.scalar(v, dtype) if isinstance(v, (int, float)) else v for v in leaves]


def run_kernel(b: Any, kernel: Callable, args: list[Any], writes: tuple[int, ...],
               label: str) -> None:
    """``kernel(*args)`` (a fused kernel; tensors in ``args`` passed as their arrays, other
    values as they are) with ``b``'s device current; the tensors at positions ``writes``
    are written in place. Inside ``xad.compile`` it is recorded as one call (CUDA graphs
    capture it: every number it reads is a kernel argument or in device memory)."""
    arrays = [a._array if isinstance(a, Tensor) else a for a in args]
    with b.on_device():
        kernel(*arrays)
    rec = context.recorder
    if rec is not None and not rec.paused:  # (first: it counts versions from here on)
        rec.call(_again, b, tuple(args), tuple(arrays[i] for i in writes), label,
                 {"kernel": kernel, "writes": writes}, target=args[writes[0]])
    for i in writes:
        args[i]._bump_version()


def _again(b: Any, *arrays: Any, kernel: Callable, writes: tuple[int, ...]) -> tuple:
    """A recorded :func:`run_kernel`, replayed: the written arrays are its results."""
    kernel(*arrays)
    return tuple(arrays[i] for i in writes)


def _split(args: Any, xp: Any, leaves: list[Any]) -> Any:
    """The fixed part of ``args`` (nested tuples and lists) with :data:`_ARG` where a value
    is a kernel argument (appended to ``leaves``) and :data:`_XP` for the namespace."""
    if type(args) is tuple or type(args) is list:
        return tuple(_split(a, xp, leaves) for a in args)
    if args is xp:
        return _XP
    if isinstance(args, _STATIC):
        return args
    leaves.append(args)
    return _ARG


def _join(spec: Any, values: Any, ns: Any) -> Any:
    """``args`` again from its fixed part and the kernel's scalar arguments."""
    if type(spec) is tuple:
        return tuple(_join(s, values, ns) for s in spec)
    if spec is _ARG:
        return next(values)
    return ns if spec is _XP else spec


def _body(rule: Callable[..., tuple], spec: Any, layout: tuple[bool, ...],
          ns: Any, skips: bool = False) -> Callable[..., None]:
    """The fused function: ``rule`` over the kernel's arguments, its results written into
    the parameter's and the state's arrays (``a[...] = v``, which ``cupy.fuse`` makes an
    output of argument ``a``); with ``skips``, the old values where the last argument is
    true (:func:`skipping`)."""
    n = sum(layout)

    def update(x: Any, g: Any, *rest: Any) -> None:
        keep = None
        if skips:
            rest, keep = rest[:-1], rest[-1]
        it = iter(rest[:n])
        state = [next(it) if here else None for here in layout]
        args = _join(spec, iter(rest[n:]), ns)
        new_x, new_state = rule(x, state, g, *args)
        x[...] = new_x if keep is None else ns.where(keep, x, new_x)
        for s, v in zip(state, new_state):
            if s is not None and v is not s:
                s[...] = v if keep is None else ns.where(keep, s, v)

    return update
