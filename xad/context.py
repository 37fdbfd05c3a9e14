"""The one context: where new tensors go, their default dtype, whether operations record.

One object, :data:`context`, holds every setting that changes what an operation does
without being one of its arguments:

=================  ============================================  ===========================
setting            changed by                                    scope
=================  ============================================  ===========================
``backend``        ``set_backend`` / ``use_backend``             process default / thread
``dtype``          ``set_default_dtype``                         process default
``grad_enabled``   ``no_grad``, ``enable_grad``,                 thread
                   ``set_grad_enabled``
``anomaly``        ``detect_anomaly``                            thread
``autocast``       ``xad.amp.autocast``                          thread
``recorder``       ``xad.compile`` (a first call)                thread
``transform``      ``xad.jvp``, ``xad.vmap`` (while they run)    thread
=================  ============================================  ===========================

**The thread rule.** ``set_backend`` and ``set_default_dtype`` change the *process
defaults*: every thread that has not chosen its own value sees them, including threads
already running (as ``torch.set_default_dtype``). Everything scoped by a ``with`` block
(``use_backend``, ``no_grad``, ``enable_grad``, ``detect_anomaly``, ``autocast``) and
``set_grad_enabled`` belongs to the calling thread only. A new thread starts from the
process defaults with recording on and anomaly detection off (as PyTorch's grad mode).

**The per-operation path** reads ``mode`` (the ``HOOKED`` and ``NO_GRAD`` bits of the
settings above, kept by ``Context.__setattr__``) once, and not at all while ``quiet.on``:
no thread has recording off or anything hooked, so every thread has the defaults.

This module is the ground of the package: it imports nothing from xad.

Example:
    >>> import threading, xad
    >>> with xad.no_grad():
    ...     seen = []
    ...     t = threading.Thread(target=lambda: seen.append(xad.is_grad_enabled()))
    ...     t.start(); t.join()
    >>> seen        # the new thread starts with recording on
    [True]
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["Context", "context", "quiet", "HOOKED", "NO_GRAD"]

HOOKED = 1   # ``Context.mode`` bit: anomaly, recorder, transform or autocast set
NO_GRAD = 2  # ``Context.mode`` bit: recording off


class Context(threading.local):
    """Per-thread settings over process-wide defaults (the class attributes).

    An attribute set on :data:`context` holds for the calling thread only; one set on the
    class is the default every thread falls back to.
    """

    backend: Any = None           # the Backend new tensors are made on (None: numpy, lazily)
    dtype: Any = None             # the default floating DType (set by xad.dtypes)
    grad_enabled: bool = True     # whether operations record graph nodes
    anomaly: bool | str = False   # detect_anomaly: True checks every result; PyTorch's
    #                               "nan" gradients' NaN only, "trace" only records lines
    backward_node: Any = None     # the node whose rule runs (for anomaly messages)
    autocast: Any = None          # the low DType of xad.amp.autocast, None outside it
    recorder: Any = None          # xad.compile's recorder while a first call records
    transform: Any = None         # the innermost xad.jvp / xad.vmap level, None outside
    mode: int = 0                 # HOOKED | NO_GRAD: any of anomaly, recorder, transform,
    #                               autocast set; recording off (kept by __setattr__)

    def __setattr__(self, name: str, value: Any) -> None:
        # ``mode`` lets the per-operation path read one attribute, not five
        was = self.mode
        super().__setattr__(name, value)
        if name in _MODAL:
            hooked = (bool(self.anomaly) or self.recorder is not None
                      or self.transform is not None or self.autocast is not None)
            mode = (HOOKED if hooked else 0) | (0 if self.grad_enabled else NO_GRAD)
            super().__setattr__("mode", mode)
            if (was == 0) != (mode == 0):
                quiet.count(mode != 0)


class _Quiet:
    """Process-wide: ``on`` while every thread's ``mode`` is 0 (recording, nothing hooked),
    so the per-operation path may skip reading the thread's settings (a thread-local read
    costs about 40 ns, this one 5). A thread counts while its ``mode`` is not 0; a thread
    that never changed a setting has the defaults, mode 0, so ``on`` is exact for the
    reading thread whichever threads run beside it."""

    def __init__(self) -> None:
        self.on = True
        self._moded = 0  # threads whose mode is not 0
        self._lock = threading.Lock()

    def count(self, moded: bool) -> None:
        """One thread's mode left 0 (``moded``) or came back to it."""
        with self._lock:
            self._moded += 1 if moded else -1
            self.on = self._moded == 0


_MODAL = frozenset({"anomaly", "recorder", "transform", "autocast", "grad_enabled"})
quiet = _Quiet()
context = Context()
