"""``GradScaler``: dynamic loss scaling with PyTorch's semantics, decided on the device.

Per step: ``scale(loss)`` multiplies by the scale (a 0-d float32 tensor on the loss's
device); ``unscale_(opt)`` multiplies every gradient by ``1/scale`` and combines
"all finite" over every gradient into one 0-d bool on the device; ``step(opt)`` reads that
one bool to the host (**the one explicit host read per optimizer step**, as PyTorch's
``found_inf.item()``) and calls ``opt.step()`` only when every gradient is finite;
``update()`` then changes the scale on the device with factors chosen on the host from that
same bool (no further read):

* a step with Inf/NaN: ``scale *= backoff_factor`` and the growth count restarts;
* ``growth_interval`` finite steps in a row: ``scale *= growth_factor`` (kept when finite).

Gradients are rebound (``p.grad = g * inv_scale``), never written in place, so immutable
arrays (JAX) work. ``get_scale()`` and ``state_dict()`` read the scale to the host.

**Device mode** (no host read at all, so a CUDA graph holds the whole step): from the first
step that ``xad.compile(..., cuda_graphs=True)`` records with an optimiser that keeps its
numbers on the device (:mod:`xad.optim.capturable`), for good, the growth count lives on
the device too, ``step`` runs the optimiser inside :func:`xad.optim.fused.skipping` (its
kernels keep every value where the flag is true, its counts do not advance: PyTorch's
``found_inf`` given to a ``fused`` optimiser) and ``update`` is PyTorch's
``_amp_update_scale_`` as device operations, the same numbers. Elsewhere ``unscale_``,
``step`` and ``update`` are host calls of ``xad.compile`` (Python at each replay); a
disabled scaler's methods pass through.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterable
from typing import Any

from .. import dtypes as _dt
from ..autograd import no_grad
from ..context import context
from ..factories import full
from ..ops import isfinite, stack, where
from ..optim.fused import skipping
from ..optim.optimizer import Optimizer
from ..tensor import Tensor
from ..tracing import host_call, unrecorded

__all__ = ["GradScaler"]

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


def _times(scale: Tensor, factor: float, reciprocal: bool = False) -> Tensor:
    """``scale * factor`` (or ``1 / scale``) in float64, rounded to float32: PyTorch's
    arithmetic (the factor is a double there; in float32 it would be rounded first, and
    the scale would drift from PyTorch's in the last bits: 3 * 0.3)."""
    with no_grad():
        wide = scale.astype(_dt.float64)
        return (1.0 / wide if reciprocal else wide * factor).astype(_dt.float32)


class GradScaler:
    """Scale the loss so float16 gradients keep their small values; skip steps whose
    gradients overflowed and adapt the scale (PyTorch's ``torch.amp.GradScaler``).

    Example:
        >>> import xad
        >>> w = xad.ones(2, requires_grad=True)
        >>> opt = xad.optim.SGD([w], lr=0.5); scaler = xad.amp.GradScaler(init_scale=4.0)
        >>> scaler.scale((w * w).sum()).backward()   # w.grad is 4 * 2w
        >>> scaler.step(opt); scaler.update(); w.tolist(), scaler.get_scale()
        ([0.0, 0.0], 4.0)
    """

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        if not init_scale > 0:
            raise ValueError(f"GradScaler: init_scale must be positive, got {init_scale}")
        if not growth_factor > 1.0:
            raise ValueError(f"GradScaler: growth_factor must be > 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"GradScaler: backoff_factor must be in (0, 1), got "
                             f"{backoff_factor}")
        if not (isinstance(growth_interval, int) and growth_interval >= 1):
            raise ValueError(f"GradScaler: growth_interval must be a positive int, got "
                             f"{growth_interval!r}")
        self._enabled = bool(enabled)
        self._init_scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = growth_interval
        self._growth_tracker = 0          # finite steps in a row (known on the host)
        self._tracker: Tensor | None = None  # the same on the device, in device mode
        self._scale: Tensor | None = None  # made on the first loss's device
        self._per_opt: dict[int, dict[str, Any]] = {}

    def is_enabled(self) -> bool:
        """Whether scaling is on (``enabled=False`` makes every method a pass-through)."""
        return self._enabled

    def scale(self, outputs: Tensor | Iterable[Tensor]) -> Any:
        """``outputs * scale`` (a tensor, or a list/tuple of them); call ``.backward()`` on
        the result."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._scale = full((), self._init_scale, dtype=_dt.float32,
                                   backend=outputs._backend)
            if outputs.ndim and outputs.dtype in (_dt.float16, _dt.bfloat16):
                # PyTorch's promotion: a 0-d scale keeps a low tensor low (and Inf on overflow)
                return outputs * self._scale.astype(outputs.dtype)
            return outputs * self._scale
        same_kind: Any = type(outputs)  # a list or tuple, made again of the scaled
        return same_kind(self.scale(o) for o in outputs)

    def _state(self, optimizer: Optimizer) -> dict[str, Any]:
        return self._per_opt.setdefault(id(optimizer), {"stage": _READY, "found_inf": None,
                                                        "skip": None})

    def _on_device(self, optimizer: Optimizer) -> bool:
        """Whether this scaler decides on the device (device mode, module docstring); it
        enters it when a recording with CUDA graphs steps an optimiser that can."""
        if self._tracker is not None:
            return True
        rec = context.recorder
        if rec is None or rec.paused or not rec.graphs or self._scale is None or not (
                optimizer._skips_on_device() and optimizer._on_device()):
            return False
        with unrecorded():  # state made before the call, as the scale
            self._tracker = full((), self._growth_tracker, dtype=_dt.int32,
                                 backend=self._scale._backend)
        return True

    def unscale_(self, optimizer: Optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale (in place of ``.grad``, by
        rebinding) and record on the device whether any is Inf/NaN. At most once per step;
        ``step`` calls it when you have not (e.g. before gradient clipping)."""
        if self._enabled and not self._on_device(optimizer):
            return self._unscale_hosted(optimizer)
        return self._unscale(optimizer)

    def _unscale(self, optimizer: Optimizer) -> None:
        if not self._enabled:
            return
        self._watch()
        st = self._state(optimizer)
        if st["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if st["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        if self._scale is None:
            raise RuntimeError("GradScaler.unscale_: no scale yet; call "
                               "scaler.scale(loss).backward() earlier in the iteration")
        params = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
        if not params:
            raise RuntimeError("GradScaler: no inf checks were recorded for this optimizer "
                               "(none of its parameters has a gradient); call "
                               "scaler.scale(loss).backward() before step()")
        st["found_inf"] = self._unscale_grads(params, self._scale)
        st["stage"] = _UNSCALED

    _unscale_hosted = host_call(_unscale)

    def _watch(self) -> None:
        """In a recording of device mode (not a host call): replay only from the state the
        call started from (no ``unscale_``/``step`` pending from outside, whose Python a
        replay would not see), and record only a call that ends with ``update()`` (a replay
        does not redo the per-step state its Python keeps)."""
        rec = context.recorder
        if rec is None or rec.paused:
            return
        ref = weakref.ref(self)
        if not self._per_opt:  # (the first of the scaler's calls in this recording)
            rec.value_guard(functools.partial(_pending, ref))
        rec.at_end(functools.partial(_left_pending, ref))

    def _unscale_grads(self, params: list[Tensor], scale: Tensor) -> Tensor:
        """Rebind each gradient to ``grad / scale``; return "some gradient is not finite"
        as a 0-d bool on the device (one reduction over the per-gradient flags)."""
        with no_grad():
            inv = _times(scale, 1.0, reciprocal=True)
            oks = []
            for p in params:
                g = p.grad
                assert g is not None  # params keeps those with a gradient; a quotient stays one
                if g.dtype is _dt.float16:
                    raise ValueError(f"GradScaler: attempting to unscale float16 gradients "
                                     f"(a parameter of shape {p.shape}); keep parameters "
                                     f"in float32 and let autocast make float16 copies")
                g = g * (inv if g.dtype is _dt.float32 else inv.astype(g.dtype))
                p.grad = g
                oks.append(isfinite(g).all())
            return ~stack(oks).all()

    def _found_inf(self, st: dict[str, Any]) -> bool:
        """Whether the optimizer's gradients held Inf/NaN: the one explicit host read per
        optimizer step, made at most once."""
        if st["skip"] is None:
            st["skip"] = bool(st["found_inf"].item())
        return st["skip"]

    def step(self, optimizer: Optimizer, *args: Any, **kwargs: Any) -> Any:
        """Unscale (if not done), then ``optimizer.step(*args, **kwargs)`` unless some
        gradient is Inf/NaN; returns what ``step`` returned, or ``None`` when skipped (in
        device mode, what ``step`` returned: the skip is decided on the device)."""
        if self._enabled and not self._on_device(optimizer):
            return self._step_hosted(optimizer, *args, **kwargs)
        return self._step(optimizer, *args, **kwargs)

    def _step(self, optimizer: Optimizer, *args: Any, **kwargs: Any) -> Any:
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        self._watch()
        if "closure" in kwargs:
            raise RuntimeError("GradScaler.step: a closure is not supported while the "
                               "scaler is enabled")
        st = self._state(optimizer)
        if st["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st["stage"] == _READY:
            self.unscale_(optimizer)
        st["stage"] = _STEPPED
        if self._tracker is not None and optimizer._skips_on_device() and \
                optimizer._on_device():  # (another optimiser: the host decision)
            with skipping(st["found_inf"]):
                return optimizer.step(*args, **kwargs)
        if self._found_inf(st):  # skipped: each parameter the step would have written
            for g in optimizer.param_groups:  # counts a version, as in device mode, where
                for p in g["params"]:  # the kernels write its values back (and PyTorch's
                    if p.grad is not None:  # fused optimisers, given found_inf)
                        p._bump_version()
            return None
        return optimizer.step(*args, **kwargs)

    _step_hosted = host_call(_step)

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Adapt the scale from this step's Inf/NaN checks (or set it to ``new_scale``);
        call once per iteration, after every ``step``."""
        if self._enabled and self._tracker is None:
            return self._update_hosted(new_scale)
        return self._update(new_scale)

    def _update(self, new_scale: float | Tensor | None = None) -> None:
        if not self._enabled:
            return
        if new_scale is not None:
            self._set_scale(new_scale)
        else:
            checked = [st for st in self._per_opt.values() if st["found_inf"] is not None]
            if not checked:
                raise RuntimeError("GradScaler.update: no inf checks were recorded prior to "
                                   "update(); call step(optimizer) (or unscale_) first")
            if self._tracker is not None:
                self._update_on_device([st["found_inf"] for st in checked])
            else:
                found = [self._found_inf(st) for st in checked]
                self._keep_scale(self._next_scale(any(found)))
        self._per_opt.clear()

    _update_hosted = host_call(_update)

    def _update_on_device(self, flags: list[Tensor]) -> None:
        """:meth:`_next_scale` with the branches as selections on the device (PyTorch's
        ``_amp_update_scale_``): the same numbers, no host read; a recording is guarded on
        the factors and the interval, which it holds as constants."""
        rec = context.recorder
        if rec is not None and not rec.paused:
            rec.value_guard(functools.partial(_factors, weakref.ref(self)))
        scale, tracker = self._scale, self._tracker
        assert scale is not None and tracker is not None  # device mode has both
        with no_grad():
            found = flags[0] if len(flags) == 1 else stack(flags).any()
            count = where(found, 0, tracker + 1)
            grow = ~found & (count >= self._growth_interval)
            grown = _times(scale, self._growth_factor)
            grown = where(isfinite(grown), grown, scale)
            self._keep_scale(where(found, _times(scale, self._backoff_factor),
                                   where(grow, grown, scale)))
            tracker._set_data(where(grow, 0, count)._array)

    def _next_scale(self, found_inf: bool) -> Tensor:
        """PyTorch's ``_amp_update_scale_``, with the branch known on the host."""
        scale = self._scale
        assert scale is not None  # update's checks came from unscale_, which needs a scale
        if found_inf:
            self._growth_tracker = 0
            return _times(scale, self._backoff_factor)
        self._growth_tracker += 1
        if self._growth_tracker < self._growth_interval:
            return scale
        self._growth_tracker = 0
        with no_grad():
            grown = _times(scale, self._growth_factor)
            return where(isfinite(grown), grown, scale)

    def _set_scale(self, value: float | Tensor) -> None:
        if isinstance(value, Tensor):
            if value.size != 1 or not value.dtype.is_floating:
                raise ValueError(f"GradScaler.update: new_scale must be a one-element "
                                 f"floating tensor, got shape {value.shape} {value.dtype}")
            self._keep_scale(value.detach().reshape(()).astype(_dt.float32) * 1.0)
            return
        b = self._scale._backend if self._scale is not None else None
        self._keep_scale(full((), float(value), dtype=_dt.float32, backend=b))

    def _keep_scale(self, new: Tensor) -> None:
        """Make ``new`` the scale, in the same tensor (a compiled step reads that one)."""
        if self._scale is None or new._backend is not self._scale._backend:
            self._scale = new
        elif new is not self._scale:
            self._scale._set_data(new._array)

    def get_scale(self) -> float:
        """The current scale as a Python float (an explicit host read; 1.0 when disabled).

        Example:
            >>> import xad
            >>> xad.amp.GradScaler(init_scale=8.0).get_scale()
            8.0
        """
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        """The factor the scale grows by after ``growth_interval`` finite steps."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the growth factor.

        Example:
            >>> import xad
            >>> s = xad.amp.GradScaler(); s.set_growth_factor(4.0); s.get_growth_factor()
            4.0
        """
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        """The factor the scale shrinks by after a step with Inf/NaN."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the backoff factor."""
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        """Finite steps in a row before the scale grows."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set the growth interval."""
        self._growth_interval = int(new_interval)

    def state_dict(self) -> dict[str, Any]:
        """PyTorch's keys: ``scale``, ``growth_factor``, ``backoff_factor``,
        ``growth_interval``, ``_growth_tracker`` (empty when disabled).

        Example:
            >>> import xad
            >>> sorted(xad.amp.GradScaler().state_dict())[:2]
            ['_growth_tracker', 'backoff_factor']
        """
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker if self._tracker is None
                else int(self._tracker.item())}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (from xad or from PyTorch)."""
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("GradScaler.load_state_dict: the state dict is empty, "
                               "possibly because it was saved from a disabled GradScaler")
        self._init_scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
        if self._tracker is not None:
            self._tracker._set_data(full((), self._growth_tracker, dtype=_dt.int32,
                                         backend=self._tracker._backend)._array)
        if self._scale is not None:
            self._set_scale(self._init_scale)


def _factors(ref: Any) -> Any:
    """What a recorded device-mode update holds fixed of the scaler ``ref()``."""
    s = ref()
    return None if s is None else (s._growth_factor, s._backoff_factor, s._growth_interval)


def _pending(ref: Any) -> Any:
    """The stages of the scaler ``ref()``'s optimisers since its last ``update()``."""
    s = ref()
    return None if s is None else sorted(st["stage"] for st in s._per_opt.values())


def _left_pending(ref: Any) -> str | None:
    if _pending(ref):
        return ("GradScaler: unscale_() or step() without update() in the compiled step, "
                "where the scaler decides on the device (CUDA graphs); call all three in it")
    return None
