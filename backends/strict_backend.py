"""array_api_strict backend: the standard and nothing more, on any of its devices.

Used by the tests to prove xad needs nothing outside the standard (and the backend). Its
``device1`` refuses conversion to NumPy, which catches implicit host copies. Random numbers
are drawn with NumPy on the host and copied onto the device explicitly.
"""

from __future__ import annotations

from typing import Any

import array_api_strict as xps
import numpy as np

from xad.backend import Backend

from .numpy_backend import strided_view


class StrictBackend(Backend):
    """array_api_strict arrays; ``device`` is a name (``"CPU_DEVICE"``, ``"device1"``).

    Example:
        >>> import xad
        >>> xad.set_backend("array_api_strict", device="device1").device
        array_api_strict.Device('device1')
        >>> _ = xad.set_backend("numpy")
    """

    name = "array_api_strict"
    mutable = True
    is_host = False
    array_type = type(xps.asarray(0))

    def __init__(self, device: Any = None) -> None:
        if device is None or device == "CPU_DEVICE":
            dev = xps.Device("CPU_DEVICE")
        elif isinstance(device, str):
            dev = xps.Device(device)
        else:
            dev = device
        super().__init__(xps, dev)
        self._rng = np.random.default_rng(0)

    def to_numpy(self, x: Any) -> Any:
        cpu = xps.Device("CPU_DEVICE")
        return np.asarray(x if x.device == cpu else x.to_device(cpu))

    def from_numpy(self, a: Any) -> Any:
        return xps.asarray(np.array(a, order="C"), device=self.device)  # a private copy

    def asarray(self, obj: Any, dtype: Any = None) -> Any:
        if type(obj).__module__ == "numpy":
            obj = np.array(obj, order="C")  # a private copy: never share the caller's memory
        return xps.asarray(obj, dtype=dtype, device=self.device)

    def bitcast(self, x: Any, dtype: Any) -> Any:
        """Through the wrapped NumPy array (private to array_api_strict), on ``x``'s device:
        the result shares its memory, as NumPy's view."""
        return type(x)._new(x._array.view(dtype._np_dtype), device=x.device)

    def as_strided(self, x: Any, size: tuple[int, ...], stride: tuple[int, ...],
                   offset: int) -> Any:
        """NumPy's strided view of the wrapped array (private to array_api_strict), on
        ``x``'s device: it shares its memory."""
        return type(x)._new(strided_view(x._array, size, stride, offset), device=x.device)

    def manual_seed(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def randn(self, shape: tuple[int, ...], dtype: Any) -> Any:
        a = self._rng.standard_normal(shape)
        return xps.asarray(a, dtype=dtype, device=self.device)

    def rand(self, shape: tuple[int, ...], dtype: Any) -> Any:
        a = self._rng.random(shape)
        return xps.asarray(a, dtype=dtype, device=self.device)

    def permutation(self, n: int) -> Any:
        return xps.asarray(self._rng.permutation(n), device=self.device)

    def get_rng_state(self) -> Any:
        return self._rng.bit_generator.state

    def set_rng_state(self, state: Any) -> None:
        self._rng.bit_generator.state = state
