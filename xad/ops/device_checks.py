"""Checks on values that live on the device, raised without a sync per call.

A check reduces its condition to a small int64 array on the device (larger is worse) and
hands it to :meth:`xad.Backend.check_bounds`: the host reads it at once, CuPy keeps the
running maximum per site and reports it at the next host read (as CUDA reports a
device-side assert), and a compiled replay runs the check again on that replay's tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..dtypes import int64
from ..tensor import Tensor
from ..tracing import host_check
from .elementwise import astype
from .reduce import any as _any
from .shape import reshape

__all__ = ["report_bounds", "report_flag"]


@host_check
def report_bounds(worst: Tensor, site: tuple,
                  error: Callable[[tuple, Any], Exception | None]) -> None:
    """Hand ``worst`` (1-d int64) to the backend's check: ``error(site, w)`` of its host
    copy ``w`` is raised unless ``None`` (the only part of a check a replay runs as Python:
    its reductions are recorded as array calls)."""
    worst.backend.check_bounds(site, worst.array, error)


def report_flag(bad: Tensor, message: str) -> None:
    """Raise ``RuntimeError(message)`` where any element of the boolean ``bad`` is true:
    at once on the host, at the next host read on CuPy."""
    report_bounds(reshape(astype(_any(bad), int64), (1,)), (message,), _flag_error)


def _flag_error(site: tuple, worst: Any) -> RuntimeError | None:
    """The error of :func:`report_flag` (``worst.max()``: vmap's batch, if any)."""
    return RuntimeError(site[0]) if int(worst.max()) > 0 else None
