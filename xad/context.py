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

__all__ = ["Context", "context"]


class Context(threading.local):
    """Per-thread settings over process-wide defaults (the class attributes).

    An attribute set on :data:`context` holds for the calling thread only; one set on the
    class is the default every thread falls back to.
    """

    backend: Any = None           # the Backend new tensors are made on (None: numpy, lazily)
    dtype: Any = None             # the default floating DType (set by xad.dtypes)
    grad_enabled: bool = True     # whether operations record graph nodes
    anomaly: bool = False         # whether detect_anomaly checks every result
    backward_node: Any = None     # the node whose rule runs (for anomaly messages)
    autocast: Any = None          # the low DType of xad.amp.autocast, None outside it
    recorder: Any = None          # xad.compile's recorder while a first call records
    transform: Any = None         # the innermost xad.jvp / xad.vmap level, None outside
    hooked: bool = False          # any of anomaly, recorder, transform, autocast set (below)

    def __setattr__(self, name: str, value: Any) -> None:
        # ``hooked`` lets the per-operation path test one attribute instead of three
        super().__setattr__(name, value)
        if name in _HOOKS:
            super().__setattr__("hooked", bool(self.anomaly) or self.recorder is not None
                                or self.transform is not None or self.autocast is not None)


_HOOKS = frozenset({"anomaly", "recorder", "transform", "autocast"})
context = Context()
