"""JAX backend: immutable ``jax.Array``s on one device; ``jax.numpy`` is the namespace.

Constructing it turns on JAX's float64 support (``jax_enable_x64``), as the design asks.
That is a process-wide JAX setting (JAX has no other): after the first JAX backend is made,
every JAX program in the process may make float64 arrays; it happens here and nowhere else.
Arrays cannot be written in place (``mutable = False``): ``index_add`` returns a new array.
Random numbers come from a ``jax.random`` key held by the backend and split for every draw.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.linalg  # noqa: F401 - solve_triangular
import jax.scipy.special as jsp
import numpy as np

from xad.backend import Backend


def _device(device: Any) -> Any:
    """A ``jax.Device`` from ``None`` (the first CPU), ``"cpu"``, ``"gpu:1"`` or a Device."""
    if device is None:
        return jax.devices("cpu")[0]
    if isinstance(device, str):
        platform, _, index = device.partition(":")
        platform = {"cuda": "gpu"}.get(platform, platform)
        return jax.devices(platform)[int(index or 0)]
    return device


def _nan_kept(reduce: Any) -> Any:
    """``reduce`` (``jnp.max``/``jnp.min``) with NaN propagated: NaN where the reduced slice
    holds one."""
    def nan_kept(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
        r = reduce(x, axis=axis, keepdims=keepdims)
        if not jnp.issubdtype(x.dtype, jnp.floating):
            return r
        return jnp.where(jnp.isnan(x).any(axis=axis, keepdims=keepdims), jnp.nan, r)
    return nan_kept


@jax.jit
def _int_power(x1: Any, x2: Any) -> Any:
    """Integer powers by squaring over every bit of the exponent, wrapping in the result's
    dtype as NumPy's and PyTorch's: ``jnp.power`` reads only an exponent's low six bits
    (JAX 0.10: ``2 ** 70`` is 64, ``int16(3) ** 127`` is ``3 ** 63``). Negative exponents
    are the caller's (``xad.ops.elementwise._int_pow``)."""
    dtype = jnp.result_type(x1, x2)
    base, e = x1.astype(dtype), x2.astype(dtype)
    acc = jnp.ones_like(base)
    for _ in range(8 * jnp.dtype(dtype).itemsize):
        acc = jnp.where((e & 1) == 1, acc * base, acc)
        base, e = base * base, e >> 1
    return acc


def _power(x1: Any, x2: Any, /) -> Any:
    """``jnp.power``, with :func:`_int_power` for two integer arrays."""
    if all(isinstance(a, jax.Array) and jnp.issubdtype(a.dtype, jnp.integer) for a in (x1, x2)):
        return _int_power(x1, x2)
    return jnp.power(x1, x2)


def _astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    """``jnp.astype``, with floats cast to 8- and 16-bit integers through int64, as
    PyTorch's (``-2.5`` to ``uint8`` is 254 and ``300.0`` is 44, as on NumPy): XLA's
    conversion saturates (0 and 255)."""
    if (jnp.issubdtype(x.dtype, jnp.floating) and jnp.issubdtype(dtype, jnp.integer)
            and jnp.dtype(dtype).itemsize < 4):
        x = x.astype(jnp.int64)
    return jnp.astype(x, dtype, copy=copy, device=device)


class _Linalg:
    """``jax.numpy.linalg`` whose ``eigh``, ``eigvalsh`` and ``cholesky`` read the lower
    triangle only, as LAPACK's (NumPy, torch, CuPy) and xad's documentation: JAX's
    symmetrize the input by default (``(x + x^H) / 2``), other numbers for a
    non-symmetric matrix (seen 2026-11-27: ``eigvalsh`` and ``cholesky`` of an SPD matrix
    with one upper element moved differed from NumPy's in the second digit)."""

    __name__ = jnp.linalg.__name__
    eigh = staticmethod(functools.partial(jnp.linalg.eigh, symmetrize_input=False))
    eigvalsh = staticmethod(functools.partial(jnp.linalg.eigvalsh, symmetrize_input=False))
    cholesky = staticmethod(functools.partial(jnp.linalg.cholesky, symmetrize_input=False))

    def __getattr__(self, name: str) -> Any:
        value = getattr(jnp.linalg, name)
        setattr(self, name, value)  # found once
        return value


class _Namespace:
    """``jax.numpy`` with ``max`` and ``min`` that give NaN for a slice holding one at every
    size: XLA's CPU reductions drop the NaN from about a thousand rows on (JAX 0.10.2, seen
    2026-11-26: ``jnp.max`` of a (2048, 8) array with one NaN is finite), where NumPy, PyTorch
    and the standard give NaN; integer powers and float-to-small-integer casts that wrap
    as NumPy's and PyTorch's; and :class:`_Linalg`. Everything else is ``jax.numpy``'s
    own."""

    __name__ = jnp.__name__  # (array_api_compat and xad tell namespaces by name)
    max = staticmethod(_nan_kept(jnp.max))
    min = staticmethod(_nan_kept(jnp.min))
    pow = staticmethod(_power)
    astype = staticmethod(_astype)
    linalg = _Linalg()

    def __getattr__(self, name: str) -> Any:
        value = getattr(jnp, name)
        setattr(self, name, value)  # found once
        return value


def _bytes(a: Any) -> Any:
    """``a``'s bytes, one more axis (``lax.bitcast_convert_type`` adds none for 1-byte
    elements)."""
    raw = jax.lax.bitcast_convert_type(a, jnp.uint8)
    return raw if a.dtype.itemsize > 1 else raw[..., None]


def _from_bytes(raw: Any, dtype: Any) -> Any:
    """The elements of ``dtype`` whose bytes lie along ``raw``'s last axis."""
    return jax.lax.bitcast_convert_type(raw if dtype.itemsize > 1 else raw[..., 0], dtype)


class JaxBackend(Backend):
    """jax arrays on ``device`` (the first CPU device by default).

    Example:
        >>> from xad_backends.jax_backend import JaxBackend
        >>> b = JaxBackend()
        >>> b.to_numpy(b.index_add(b.zeros((2,), b.xp.float64), [0, 0], 1.0))
        array([2., 0.])
    """

    name = "jax"
    mutable = False
    is_host = False
    array_type = jax.Array

    def __init__(self, device: Any = None) -> None:
        # process-wide: see the module docstring
        jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]
        super().__init__(_Namespace(), _device(device))
        self.manual_seed(0)

    # ----- creation ----------------------------------------------------------------------
    def asarray(self, obj: Any, dtype: Any = None) -> Any:
        if type(obj) is np.ndarray:  # a host array: one copy onto the device, where
            # jnp.asarray would compile a conversion and a placement for every new shape
            return jax.device_put(np.array(obj, dtype=dtype, copy=True), self.device)
        return jnp.asarray(obj, dtype=dtype, device=self.device)

    # ----- host copies -------------------------------------------------------------------
    def to_numpy(self, x: Any) -> Any:
        return np.array(jax.device_get(x), copy=True)

    def from_numpy(self, a: Any) -> Any:
        return jax.device_put(np.array(a, copy=True), self.device)

    def item(self, x: Any) -> Any:
        if x.size != 1:
            return super().item(x)
        return x.item()

    def synchronize(self) -> None:
        jax.effects_barrier()  # type: ignore[no-untyped-call]

    # ----- what the standard lacks -------------------------------------------------------
    def index_add(self, x: Any, key: Any, values: Any) -> Any:
        return x.at[_key(key)].add(jnp.asarray(values, dtype=x.dtype))

    def einsum(self, subscripts: str, *operands: Any) -> Any:
        return jnp.einsum(subscripts, *operands)

    def erf(self, x: Any) -> Any:
        return jsp.erf(x)

    def erfc(self, x: Any) -> Any:
        return jsp.erfc(x)

    def erfinv(self, x: Any) -> Any:
        return jsp.erfinv(x)

    def lgamma(self, x: Any) -> Any:
        return jsp.gammaln(x)

    def digamma(self, x: Any) -> Any:
        """``jax.scipy.special.digamma``, with PyTorch's values at 0 (JAX gives NaN)."""
        r = jsp.digamma(x)
        return jnp.where(x == 0, -1.0 / x, r)

    def fmod(self, x: Any, y: Any) -> Any:
        return jnp.fmod(x, y)

    def complex(self, re: Any, im: Any, dtype: Any) -> Any:
        return jax.lax.complex(*jnp.broadcast_arrays(re, im))

    def bitcast(self, x: Any, dtype: Any) -> Any:
        """Through bytes: ``lax.bitcast_convert_type`` to uint8 adds a trailing axis of the
        element size, whose bytes are regrouped into the new dtype's (PyTorch's shapes).
        It has no bool (a byte of 0 or 1) nor complex (the parts' bytes in turn, as in
        memory): those are taken apart and put together here. A new array: JAX's never
        share memory (xad remakes the view from its base)."""
        new = jnp.dtype(dtype)
        s, t = x.dtype.itemsize, new.itemsize
        if x.dtype == jnp.bool_:
            raw = x.astype(jnp.uint8)[..., None]
        elif jnp.issubdtype(x.dtype, jnp.complexfloating):
            raw = _bytes(jnp.stack([x.real, x.imag], -1)).reshape(x.shape + (s,))
        else:
            raw = _bytes(x)
        lead = x.shape[:-1] + ((x.shape[-1] * s // t,) if x.ndim else ())
        raw = raw.reshape(lead + (t,))
        if new == jnp.bool_:
            return raw[..., 0] != 0
        if jnp.issubdtype(new, jnp.complexfloating):
            parts = _from_bytes(raw.reshape(lead + (2, t // 2)), jnp.dtype(f"float{4 * t}"))
            return jax.lax.complex(parts[..., 0], parts[..., 1])
        return _from_bytes(raw, new)

    def lu_factor(self, x: Any) -> tuple[Any, Any, Any]:
        lu, piv, perm = jax.lax.linalg.lu(x)
        return lu, perm, jnp.count_nonzero(piv != jnp.arange(piv.shape[-1]), axis=-1) % 2 == 1

    def solve_triangular(self, a: Any, b: Any, upper: bool) -> Any:
        return jax.scipy.linalg.solve_triangular(a, b, lower=not upper)

    # ----- random numbers ----------------------------------------------------------------
    def manual_seed(self, seed: int) -> None:
        self._key = jax.device_put(jax.random.key(int(seed)), self.device)

    def _next(self) -> Any:
        self._key, sub = jax.random.split(self._key)
        return sub

    def randn(self, shape: tuple[int, ...], dtype: Any) -> Any:
        fdt = dtype if dtype is not None and jnp.issubdtype(dtype, jnp.floating) else jnp.float64
        r = jax.random.normal(self._next(), tuple(shape), dtype=fdt)
        return jax.device_put(r if dtype is None else r.astype(dtype), self.device)

    def rand(self, shape: tuple[int, ...], dtype: Any) -> Any:
        fdt = dtype if dtype is not None and jnp.issubdtype(dtype, jnp.floating) else jnp.float64
        r = jax.random.uniform(self._next(), tuple(shape), dtype=fdt)
        return jax.device_put(r if dtype is None else r.astype(dtype), self.device)

    def permutation(self, n: int) -> Any:
        p = jax.random.permutation(self._next(), int(n)).astype(jnp.int64)
        return jax.device_put(p, self.device)

    def get_rng_state(self) -> Any:
        return self._key  # keys are immutable: the key itself is a safe snapshot

    def set_rng_state(self, state: Any) -> None:
        self._key = jax.device_put(state, self.device)


def _key(key: Any) -> Any:
    """JAX refuses Python lists as indices: turn them (also inside a tuple) into arrays."""
    if isinstance(key, list):
        return jnp.asarray(key)
    if isinstance(key, tuple):
        return tuple(jnp.asarray(k) if isinstance(k, list) else k for k in key)
    return key
