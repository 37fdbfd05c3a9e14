"""A strict CuPy emulator for the tests (not shipped): see :mod:`.core` and :mod:`.modules`.

``cupy-sim`` is xad's real :class:`CupyBackend` built over the emulated modules
(:class:`SimCupyBackend`); ``register()`` makes ``xad.resolve_backend("cupy-sim")`` find it.
"""

from __future__ import annotations

import os
from typing import Any

import xad.backend as B
from xad.compile import pyguards

from . import blas, core
from .core import POOLS, STATE, explicit
from .modules import compat, cupy, cupyx

B._ensure_xad_backends()
from xad_backends.cupy_backend import CupyBackend, _probe  # noqa: E402

__all__ = ["POOLS", "STATE", "SimCupyBackend", "compat", "core", "cupy", "cupyx", "register"]


class SimCupyBackend(CupyBackend):
    """The CuPy backend over the emulator. Its ``to_numpy``, ``item`` and ``synchronize``
    (xad's documented host reads) are the only places a device-to-host transfer counts as
    explicit."""

    name = "cupy-sim"

    @staticmethod
    def _modules() -> tuple[Any, Any, Any]:
        return cupy, cupyx, compat

    @staticmethod
    def _blas_modules(cp: Any) -> tuple[Any, Any]:
        return blas.cublas, blas.lib

    @classmethod
    def check_available(cls) -> None:
        strict, STATE.strict = STATE.strict, False
        try:
            _probe(cupy)
        finally:
            STATE.strict = strict

    def to_numpy(self, x: Any) -> Any:
        with explicit():
            return super().to_numpy(x)

    def item(self, x: Any) -> Any:
        with explicit():
            return super().item(x)

    def synchronize(self) -> None:  # reads the queued index checks
        with explicit():
            super().synchronize()


def register() -> None:
    """Let ``xad.resolve_backend("cupy-sim", device)`` build :class:`SimCupyBackend`."""
    B._BUILTIN.setdefault("cupy-sim", "cupy_sim:SimCupyBackend")
    pyguards.library(os.path.dirname(__file__))  # xad.compile guards no emulator state
