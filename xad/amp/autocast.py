"""``autocast``: run the operations PyTorch's autocast lists name in a low dtype.

Inside ``with autocast(dtype)`` (this thread only; the state is ``context.autocast``):

* **low dtype** (float32 and low-dtype floating inputs cast to ``dtype``): ``matmul``
  (``@``), ``linear`` (``nn.Linear``), ``einsum``, ``tensordot``, and convolutions;
* **float32** (float16/bfloat16 inputs cast up): ``softmax``, ``log_softmax``,
  ``logsumexp``, ``sum``, ``mean``, ``var``/``std``, ``prod``, ``cumsum``, ``layer_norm``,
  ``group_norm``, ``batch_norm``, every loss in ``xad.nn.functional``, and PyTorch's CUDA
  list of elementwise functions: ``exp``, ``expm1``, ``log``, ``log1p``, ``log2``,
  ``log10``, ``tan``, ``asin``, ``acos``, ``sinh``, ``cosh``, ``softplus``, ``pow`` (``**``)
  and a number divided by a tensor (``2 / x``, ``reciprocal``);
* **everything else** runs in its inputs' widest dtype (the array libraries' promotion,
  PyTorch's "promote"); a composition on neither list whose parts are on one (``elu``,
  ``mish``, ``dot``) runs with autocast off (:func:`xad.ops.amp_cast.autocast_off`).

``F.prelu``, ``addmm`` and ``linalg.vecdot`` are on the low list too.

float64 tensors are never cast. Casts are recorded through ``astype``, so every gradient
comes back in its input's dtype: a float32 parameter gets a float32 ``.grad``. Backward
rules run with autocast off, in the dtypes their forward used. Operations call
:func:`xad.ops.amp_cast.autocast_low` / ``autocast_float32`` to join a list.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .. import dtypes as _dt
from ..backend import get_backend
from ..context import context

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype"]

_LOW = (_dt.float16, _dt.bfloat16)


class autocast:  # noqa: N801 (PyTorch's name)
    """Compute matrix products in ``dtype`` (float16, or bfloat16 on torch and JAX) and
    precision-sensitive operations in float32; a context manager and a decorator.

    ``enabled=False`` turns autocast off inside an enclosing one. Raises ``TypeError`` on
    entry when the current backend has no ``dtype`` (array_api_strict has no float16).

    Example:
        >>> import xad
        >>> x, w = xad.ones(2, 3), xad.ones(4, 3, requires_grad=True)
        >>> with xad.amp.autocast(xad.float16):
        ...     y = xad.linear(x, w)
        ...     p = xad.softmax(y)
        >>> y.dtype, p.dtype
        (xad.float16, xad.float32)
        >>> p.sum().backward(); w.grad.dtype
        xad.float32
    """

    def __init__(self, dtype: _dt.DType | str = _dt.float16, enabled: bool = True) -> None:
        d = _dt.as_dtype(dtype)
        if d not in _LOW:
            raise ValueError(f"autocast: dtype must be xad.float16 or xad.bfloat16, got "
                             f"{dtype!r}")
        self.dtype = d
        self.enabled = bool(enabled)
        self._prev: list[Any] = []

    def __enter__(self) -> autocast:
        if self.enabled:
            b = get_backend()
            if b._dtypes.get(self.dtype) is None:
                raise TypeError(f"autocast(dtype={self.dtype!r}): backend {b.name!r} has no "
                                f"{self.dtype.name}; use a backend that has it (float16: "
                                f"numpy, torch, jax, cupy; bfloat16: torch, jax) or "
                                f"autocast(enabled=False)")
        self._prev.append(context.autocast)
        context.autocast = self.dtype if self.enabled else None
        return self

    def __exit__(self, *exc: Any) -> None:
        context.autocast = self._prev.pop()

    def __call__(self, fn: Callable) -> Callable:
        """Use as a decorator: every call of ``fn`` runs inside a fresh ``autocast``."""
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.dtype, self.enabled):
                return fn(*args, **kwargs)
        return wrapper


def is_autocast_enabled() -> bool:
    """Whether this thread is inside an enabled :class:`autocast`.

    Example:
        >>> import xad
        >>> with xad.amp.autocast():
        ...     xad.amp.is_autocast_enabled()
        True
    """
    return context.autocast is not None


def get_autocast_dtype() -> _dt.DType | None:
    """The low dtype of this thread's autocast, or ``None`` outside one.

    Example:
        >>> import xad
        >>> xad.amp.get_autocast_dtype() is None
        True
    """
    return context.autocast
