"""Backends: what xad needs from an array library beyond the Array API standard.

A :class:`Backend` wraps one array namespace on one device. It resolves the namespace once,
pins creation functions to its device, and is the only code that copies arrays to or from
the host. Adapters live in the ``xad_backends`` package (the repository's ``backends/``) and
are found through the ``xad.backends`` entry-point group, so a third party adds one the same
way. The *current* backend only decides where new tensors are made; operations run on their
inputs' backend.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib
import importlib.util
import math
import os
import sys
from collections.abc import Callable, Hashable, Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, TypeVar

from . import dtypes as _dt
from .bessel_fallback import bessel_j0_generic, bessel_j1_generic
from .context import Context, context
from .einsum_fallback import einsum_generic
from .erf_fallback import erf_generic
from .incomplete_gamma_fallback import incomplete_gamma_generic
from .lu_fallback import lu_factor_generic
from .special_fallback import (
    digamma_generic,
    erfc_generic,
    erfinv_generic,
    fmod_generic,
    lgamma_generic,
    ndtri_generic,
)
from .tracing import host_call

Site = TypeVar("Site", bound=Hashable)  # where a bounds check runs, handed back to its error

__all__ = [
    "Backend", "BackendError", "set_backend", "get_backend", "use_backend",
    "available_backends", "backend_names", "resolve_backend", "manual_seed", "seed",
    "initial_seed", "get_rng_state", "set_rng_state",
]


class BackendError(RuntimeError):
    """A backend cannot be used here (not installed, no device, unknown name)."""


def strided_positions(xp: Any, device: Any, size: tuple[int, ...],
                      stride: tuple[int, ...], offset: int) -> Any:
    """The int64 array of ``size`` holding ``offset + sum(i[k] * stride[k])`` at each index
    ``i``: where ``as_strided``'s elements sit in the storage (row-major positions)."""
    at = xp.full((), offset, dtype=xp.int64, device=device)
    for k, (n, s) in enumerate(zip(size, stride)):
        step = xp.arange(n, dtype=xp.int64, device=device) * s
        at = at + xp.reshape(step, tuple(n if j == k else 1 for j in range(len(size))))
    return xp.broadcast_to(at, tuple(size))


class Backend:
    """One array library on one device. Subclasses set ``name`` and fill in the gaps.

    Attributes: ``name``; ``xp`` (the standard namespace); ``device``; ``mutable`` (whether
    arrays can be written in place; JAX's cannot); ``is_host`` (arrays live in host memory
    and may be viewed as NumPy arrays without a copy); ``scope`` (``None``, or a context
    manager that operations on this backend's arrays run inside: CuPy's device, since a
    CuPy kernel runs on the *current* device, not on its inputs'); ``sums_by_product``
    (float32/float64 sums over a row are faster as a product with ones, one BLAS call:
    NumPy's, whose row reductions are 4x slower; on a GPU it would add a launch).

    Example:
        >>> import xad
        >>> b = xad.get_backend(); b.name
        'numpy'
    """

    name: str = "?"
    mutable: bool = True
    is_host: bool = False
    array_type: type = object
    scope: Any = None
    sums_by_product: bool = False

    def __init__(self, xp: Any, device: Any = None) -> None:
        self.xp = xp
        self.device = device
        self._dtypes = {d: getattr(xp, "bool" if d.name == "bool" else d.name, None)
                        for d in _dt.ALL.values()}
        self._from_native = {v: k for k, v in self._dtypes.items() if v is not None}
        self._seed = 0
        # read by every operation: as instance attributes, which Python 3.11 reads by a
        # specialised instruction (a class attribute read through an instance is looked up)
        self.array_type, self.scope, self.mutable = self.array_type, self.scope, self.mutable

    # ----- identity -------------------------------------------------------------------
    def __deepcopy__(self, memo: dict) -> Backend:
        """A backend is shared, never copied: ``copy.deepcopy(model)`` gives tensors on the
        same backend object, which operations with the original's tensors require."""
        return self

    def __repr__(self) -> str:
        return f"Backend({self.name!r}, device={self.device!r})"

    @property
    def label(self) -> str:
        """``name`` or ``name:device`` for messages."""
        return self.name if self.device is None or self.is_host else f"{self.name}:{self.device}"

    def row_major(self, a: Any) -> Any:
        """``a``, or a row-major copy of it where its elements lie in another order: the
        layout of PyTorch's results of softmax, layer norm, scans and joins (each writes a
        new contiguous tensor where an elementwise result keeps its input's layout)."""
        if not self.mutable:
            return a
        n = math.prod(a.shape)
        if self.reshapes_in_place(a, (n,)):
            return a
        xp = self.xp  # flat, then shaped: a library's copy may keep a transposed layout
        return xp.reshape(xp.reshape(a, (n,), copy=True), a.shape)

    def reshapes_in_place(self, a: Any, shape: tuple[int, ...]) -> bool:
        """Whether ``reshape(a, shape)`` can share ``a``'s memory. A mutable backend's
        result keeps its input's layout, as PyTorch's (NumPy's ``exp(x.T)`` is in ``x.T``'s
        order, and its reshape to one axis copies); an immutable one has no layout."""
        if not self.mutable:
            return True
        try:
            self.xp.reshape(a, shape, copy=False)
        except (ValueError, AttributeError, RuntimeError):  # (the libraries' three errors)
            return False
        return True

    def on_device(self) -> Any:
        """``scope`` as a ``with`` block: this backend's device made current, or a no-op."""
        return _NO_SCOPE if self.scope is None else self.scope

    # ----- dtypes -----------------------------------------------------------------------
    def dtype(self, dtype: _dt.DType) -> Any:
        """The native dtype for an xad dtype."""
        native = self._dtypes.get(dtype)
        if native is None:
            have = ", ".join(d.name for d, v in self._dtypes.items() if v is not None)
            raise TypeError(f"backend {self.name!r} has no dtype {dtype!r} (it has {have}); "
                            f"use one of those, or a backend that has {dtype.name}")
        return native

    def xad_dtype(self, native: Any) -> _dt.DType:
        """The xad dtype of a native dtype."""
        d = self._from_native.get(native)
        if d is None:
            d = _dt.as_dtype(native)
            self._from_native[native] = d
        return d

    # ----- creation (pinned to the device) ---------------------------------------------
    def asarray(self, obj: Any, dtype: Any = None) -> Any:
        """Make an array on this backend's device from Python data or a host array."""
        return self.xp.asarray(obj, dtype=dtype, device=self.device)

    def ensure_array(self, x: Any) -> Any:
        """Turn what an operation returned (a NumPy scalar, say) into an array."""
        return x

    def zeros(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self.xp.zeros(shape, dtype=dtype, device=self.device)

    def full(self, shape: tuple[int, ...], value: Any, dtype: Any) -> Any:
        return self.xp.full(shape, value, dtype=dtype, device=self.device)

    def from_dlpack(self, x: Any, copy: bool | None = None) -> Any:
        """An array on this backend's device from an object with ``__dlpack__``, sharing its
        memory unless ``copy=True`` (or the library must copy)."""
        return self.xp.from_dlpack(x, device=self.device, copy=copy)

    # ----- host copies: the only way arrays reach the host ------------------------------
    def to_numpy(self, x: Any) -> Any:
        """An explicit copy of ``x`` as a NumPy array."""
        raise NotImplementedError

    def from_numpy(self, a: Any) -> Any:
        """An explicit copy of the NumPy array ``a`` onto this backend's device."""
        return self.xp.asarray(a, device=self.device)

    def item(self, x: Any) -> float | int | bool:
        """The Python number held by a one-element array (an explicit host read)."""
        if math.prod(x.shape) != 1:
            raise ValueError(f"item(): only a one-element tensor converts to a Python number, "
                             f"got shape {tuple(x.shape)}")
        return self.to_numpy(x).reshape(-1)[0].item()

    def synchronize(self) -> None:
        """Wait for queued device work (for honest timings); a no-op on the CPU."""

    def check_bounds(self, site: Site, worst: Any,
                     error: Callable[[Site, Any], Exception | None]) -> None:
        """Raise ``error(site, w)`` (unless ``None``) for ``w`` the host copy of the 1-d int64
        array ``worst``, whose larger entries are worse (an index check passes ``[-min,
        max]``): here, at once, with one explicit read. CuPy keeps the running maximum per
        ``site`` on the device instead and reports at its next host read (docs/GPU.md)."""
        exc = error(site, self.to_numpy(worst))
        if exc is not None:
            raise exc

    # ----- what the standard lacks -------------------------------------------------------
    def index_add(self, x: Any, key: Any, values: Any) -> Any:
        """Return ``x`` with ``values`` added at ``x[key]``; repeated indices accumulate.

        The generic version finds the flat positions that ``key`` selects by indexing an
        ``arange`` and adds with :meth:`scatter_add_flat`. May write into ``x``.
        """
        xp = self.xp
        n = math.prod(x.shape)
        pos = xp.reshape(xp.arange(n, dtype=xp.int64, device=self.device), x.shape)[key]
        vals = xp.broadcast_to(values, pos.shape)
        flat = self.scatter_add_flat(xp.reshape(x, (n,)), xp.reshape(pos, (-1,)),
                                     xp.reshape(vals, (-1,)))
        return xp.reshape(flat, x.shape)

    def scatter_add_flat(self, target: Any, index: Any, values: Any) -> Any:
        """1-D scatter-add with the standard alone: sort, sums per index, ``searchsorted``.
        Integers are summed as differences of prefix sums (exact); floating values by a
        segmented scan, so that a value is never the difference of two large sums (``1.0``
        beside ``1e20`` at another index came out 0)."""
        xp = self.xp
        order = xp.argsort(index)
        sidx = xp.take(index, order)
        svals = xp.take(values, order)
        slots = xp.arange(target.shape[0], dtype=sidx.dtype, device=self.device)
        lo = xp.searchsorted(sidx, slots, side="left")
        hi = xp.searchsorted(sidx, slots, side="right")
        if not xp.isdtype(svals.dtype, ("real floating", "complex floating")):
            # (in the values' own dtype: a wrapped prefix sum's differences wrap as theirs)
            csum = xp.cumulative_sum(svals, dtype=svals.dtype, include_initial=True)
            return target + (xp.take(csum, hi) - xp.take(csum, lo))
        if svals.shape[0] == 0:
            return target
        run = _segmented_sums(xp, sidx, svals)  # run[k]: the sum of k's index up to k
        last = xp.take(run, xp.clip(hi - 1, 0, None))
        return target + xp.where(hi > lo, last, xp.zeros_like(last))

    def set_at(self, x: Any, key: Any, values: Any) -> Any:
        """Return ``x`` with ``x[key] = values``: written in place where arrays are mutable,
        through JAX-style ``x.at[key].set(values)`` where they are not."""
        if self.mutable:
            with self.on_device():
                x[key] = values
            return x
        return x.at[key].set(values)

    def outer(self, x: Any, y: Any) -> Any:
        """``matmul(x, y)`` for ``x`` of shape ``(..., m, 1)`` and ``y`` of ``(..., 1, n)``:
        each element one product, by broadcasting (a BLAS call with k = 1 is slower)."""
        return x * y

    def einsum(self, subscripts: str, *operands: Any) -> Any:
        """Einstein summation; native where the library has it, else a generic contraction."""
        return einsum_generic(self.xp, subscripts, *operands)

    def erf(self, x: Any) -> Any:
        """The error function, elementwise (the standard has none)."""
        return erf_generic(self.xp, x)

    # special functions the standard lacks (xad.special_fallback's; native where there is one)
    def erfc(self, x: Any) -> Any:
        """``1 - erf(x)``, exact in the tail, elementwise."""
        return erfc_generic(self.xp, x)

    def erfinv(self, x: Any) -> Any:
        """The inverse error function on ``[-1, 1]``, elementwise."""
        return erfinv_generic(self.xp, x)

    def ndtri(self, x: Any) -> Any:
        """The inverse of the standard normal CDF on ``[0, 1]``, elementwise."""
        return ndtri_generic(self.xp, x)

    def gammainc(self, a: Any, x: Any, upper: bool = False) -> Any:
        """The regularized lower incomplete gamma function ``P(a, x)`` (``Q = 1 - P`` where
        ``upper``), elementwise, of two floating arrays of one dtype (broadcast)."""
        a, x = self.xp.broadcast_arrays(a, x)
        return incomplete_gamma_generic(self.xp, a, x, upper, self.lgamma, self.erfc)

    def bessel_j0(self, x: Any) -> Any:
        """The Bessel function of the first kind of order 0, elementwise."""
        return bessel_j0_generic(self.xp, x)

    def bessel_j1(self, x: Any) -> Any:
        """The Bessel function of the first kind of order 1, elementwise."""
        return bessel_j1_generic(self.xp, x)

    def lgamma(self, x: Any) -> Any:
        """``log |Gamma(x)|`` for every real ``x``, elementwise."""
        return lgamma_generic(self.xp, x)

    def digamma(self, x: Any) -> Any:
        """``d/dx log Gamma(x)``, elementwise (PyTorch's values at poles)."""
        return digamma_generic(self.xp, x)

    def fmod(self, x: Any, y: Any) -> Any:
        """C's ``fmod`` (the remainder of truncated division, exact; sign of ``x``)."""
        return fmod_generic(self.xp, x, y)

    def complex(self, re: Any, im: Any, dtype: Any) -> Any:
        """The complex array ``re + i im`` of ``dtype`` (``re`` and ``im`` real, of its
        precision, broadcast), each part exactly the one given: infinities, NaNs and signed
        zeros included (``re + 1j * im`` made ``0 * inf``, NaN, of ``(0, inf)``'s real
        part); native where the library has it. The standard has no such function: here
        ``conj(re + 0j) + (-0 + i im)``, whose parts add to ``re`` and ``im`` exactly where
        ``+`` adds part by part (NumPy, CuPy, JAX; torch's multiplies by ``alpha``); the
        second is ``-conj(1j * |im|)`` (real part ``-0``), conjugated where ``im``'s sign
        bit is set, with constants where ``im`` is not finite."""
        xp, fin = self.xp, self.xp.isfinite(im)
        b = -xp.conj(1j * xp.astype(xp.where(fin, xp.abs(im), 0.0), dtype))
        b = xp.where(fin, b, xp.where(xp.isnan(im), self.full((), complex(-0.0, math.nan), dtype),
                                      self.full((), complex(-0.0, math.inf), dtype)))
        return xp.conj(xp.astype(re, dtype)) + xp.where(xp.signbit(im), xp.conj(b), b)

    def bitcast(self, x: Any, dtype: Any) -> Any:
        """``x``'s bits read as ``dtype``, sharing its memory where arrays are mutable
        (PyTorch's ``view(dtype)``: of another element size, the last axis, contiguous,
        scales by the ratio of the sizes). The standard has no bit reinterpretation: NumPy
        and CuPy use ``ndarray.view``, torch ``Tensor.view``, array_api_strict its wrapped
        NumPy array, JAX ``lax.bitcast_convert_type`` (a copy: JAX arrays never share)."""
        raise NotImplementedError(f"backend {self.name!r} cannot reinterpret an array's bits "
                                  f"(view(dtype)): the Array API has no such function; cast "
                                  f"the values with .to(dtype), or add 'bitcast' to the "
                                  f"backend")

    def as_strided(self, x: Any, size: tuple[int, ...], stride: tuple[int, ...],
                   offset: int) -> Any:
        """The elements of ``x``'s row-major order at ``offset + sum(i[k] * stride[k])`` for
        each index ``i`` of ``size`` (PyTorch's ``as_strided`` of the storage ``x`` holds).
        Where arrays are mutable it must be a view of ``x``'s memory (NumPy's, CuPy's and
        torch's own; array_api_strict's through its wrapped NumPy array), so that a later
        change of either shows in the other; where they are immutable (JAX) a gathered copy,
        which xad remakes after every change. A mutable backend without a strided view
        raises: a copy would go stale."""
        if self.mutable:
            raise NotImplementedError(f"backend {self.name!r} has no strided view of an "
                                      f"array's memory (as_strided; the Array API has none), "
                                      f"and a copy would not follow later changes: add "
                                      f"'as_strided' to the backend")
        xp = self.xp
        at = xp.reshape(strided_positions(xp, self.device, size, stride, offset), (-1,))
        return xp.reshape(xp.take(xp.reshape(x, (-1,)), at), size)

    def lu_factor(self, x: Any) -> tuple[Any, Any, Any]:
        """``(lu, perm, odd)`` of a (batch of) m x n matrices as LAPACK's ``getrf``
        computes them (no error at a singular matrix): ``L`` and ``U`` in ``lu``,
        ``x[..., perm, :] == L @ U`` (``perm`` of all m rows), whether the row swaps are
        odd; native where the library has one."""
        return lu_factor_generic(self.xp, x, self.device)

    def solve_triangular(self, a: Any, b: Any, upper: bool) -> Any:
        """``X`` with ``a @ X == b`` for a (batch of) triangular ``a`` with no zero on its
        diagonal (upper or lower; the other triangle is ignored where native): LAPACK's
        ``trsm`` where the library has it; ``solve`` here (which pivots no row of a
        triangular matrix: the same substitution, at an LU's cost)."""
        return self.xp.linalg.solve(a, b)

    # ----- optional fast paths: None means "run xad's standard-only reference" ------------
    def im2col(self, x: Any, kernel: tuple[int, int], stride: tuple[int, int],
               dilation: tuple[int, int], pads: tuple[int, int, int, int],
               value: float) -> Any | None:
        """The sliding windows of an ``(N, C, H, W)`` array as a new ``(C, kh, kw, Ho, Wo,
        N)`` array (``xad.ops.convolution.im2col``'s forward; ``pads`` is ``(top, bottom,
        left, right)`` filled with ``value``), or ``None`` to use the reference path."""
        return None

    def col2im(self, cols: Any, shape: tuple[int, int, int, int], kernel: tuple[int, int],
               stride: tuple[int, int], dilation: tuple[int, int],
               pads: tuple[int, int, int, int]) -> Any | None:
        """``(C, kh, kw, Ho, Wo, N)`` windows added back into an ``(N, C, H, W)`` image of
        ``shape`` (the adjoint of :meth:`im2col`), or ``None`` to use the reference path."""
        return None

    def attention(self, q: Any, k: Any, v: Any, scale: float) -> tuple | None:
        """``(softmax(q @ k^T * scale) @ v, softmax(q @ k^T * scale))`` over the last two
        axes (``xad.ops.attention``'s forward; the leading axes and dtypes agree), or
        ``None`` to use the reference path."""
        return None

    def attention_grad(self, q: Any, k: Any, v: Any, g: Any, p: Any,
                       scale: float) -> tuple | None:
        """``(dq, dk, dv)`` of :meth:`attention` for the output gradient ``g`` and the
        weights ``p`` it made (read, never changed), or ``None`` to use the reference path."""
        return None

    def scalar(self, value: float, dtype: Any) -> Any:
        """``value`` as a scalar of ``dtype`` for operators and fused kernels: a 0-d array
        here (operators take it faster than a Python number, NumPy and torch); CuPy's is a
        NumPy scalar, a kernel argument that needs no device copy and no fill kernel."""
        return self.asarray(value, dtype=dtype)

    def float_operand(self, value: float, dtype: _dt.DType) -> Any:
        """The Python float ``value`` as an operand of ``+ - * /`` beside an array of real
        floating ``dtype``: the float itself here; NumPy's backend gives a cached 0-d
        array (the same bits under the weak-scalar rule, taken 2.5x faster)."""
        return value

    def elementwise(self, make: Callable[[Any], Callable], name: str) -> Callable:
        """The elementwise function ``make(ns)``, written over ``ns`` (this library's
        ufuncs and ``where``; operators on its arguments, which are arrays and
        :meth:`scalar` s), as one kernel named ``name`` where the backend fuses (CuPy's
        ``cupy.fuse``, made once per name); here, run as it is over :attr:`xp`."""
        return make(self.xp)

    def reduction(self, make: Callable[[Any], Callable], name: str) -> Callable:
        """The function ``make(ns)``, written over ``ns`` as for :meth:`elementwise` with one
        reduction (``ns.sum``/``ns.max``/``ns.min`` of a value of the broadcast arguments'
        shape, ``axis=`` fixed by ``make``, no ``keepdims``), after which it reads only the
        reduced value and number literals and returns reduced values only; as one kernel
        named ``name`` where the backend fuses (CuPy's ``cupy.fuse``: a reduction kernel
        with pre- and post-map); here, run as it is over :attr:`xp`."""
        return make(self.xp)

    def fuse(self, make: Callable[[Any], Callable], name: str) -> Callable | None:
        """One kernel for the elementwise function ``make(ns)`` returns, written over ``ns``,
        a namespace of this library's ufuncs (``ns.tanh``; operators on its arguments), and
        called with arrays and Python scalars (``xad.compile(fn, fuse=True)``); or ``None``:
        this backend does not fuse (the default; CuPy's is ``cupy.fuse``)."""
        return None

    # ----- random numbers ----------------------------------------------------------------
    def manual_seed(self, seed: int) -> None:
        """Reseed this backend's generator."""
        raise NotImplementedError

    def randn(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """Standard normal samples."""
        raise NotImplementedError

    def rand(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """Uniform samples in [0, 1)."""
        raise NotImplementedError

    def permutation(self, n: int) -> Any:
        """A random permutation of ``range(n)`` as an int64 array on the device."""
        xp = self.xp
        return xp.argsort(self.rand((n,), xp.float32))

    def get_rng_state(self) -> Any:
        """An opaque copy of the generator's state."""
        raise NotImplementedError

    def set_rng_state(self, state: Any) -> None:
        """Restore a state from :meth:`get_rng_state`."""
        raise NotImplementedError

    # ----- availability ----------------------------------------------------------------
    @classmethod
    def check_available(cls) -> None:
        """Raise :class:`BackendError` saying why this backend cannot run here."""


_NO_SCOPE = contextlib.nullcontext()


@functools.cache  # (per namespace: asked per optimiser kernel; ufunc.types builds a list)
def takes_out(xp: Any) -> bool:
    """Whether namespace ``xp``'s elementwise functions are ufuncs that take ``out=`` (NumPy;
    CuPy's reach xad wrapped to run on their device, so not yet): ``xad.compile`` then writes
    results into dead buffers and the optimisers into their scratch arrays. JAX's functions
    are ufunc-shaped too (``nout``) but have no loop table (``types``) and refuse ``out=``."""
    f = getattr(xp, "multiply", None)
    return getattr(f, "nout", 0) == 1 and hasattr(f, "types")


# ----- registry ---------------------------------------------------------------------------
_BUILTIN = {
    "numpy": "xad_backends.numpy_backend:NumpyBackend",
    "array_api_strict": "xad_backends.strict_backend:StrictBackend",
    "torch": "xad_backends.torch_backend:TorchBackend",
    "jax": "xad_backends.jax_backend:JaxBackend",
    "cupy": "xad_backends.cupy_backend:CupyBackend",
}
_instances: dict[tuple[str, str], Backend] = {}


def _ensure_xad_backends() -> None:
    """Make ``xad_backends`` importable when xad runs from a source tree (not installed)."""
    if "xad_backends" in sys.modules or importlib.util.find_spec("xad_backends") is not None:
        return
    src = Path(__file__).resolve().parent.parent / "backends"
    spec = importlib.util.spec_from_file_location(
        "xad_backends", src / "__init__.py", submodule_search_locations=[str(src)])
    if spec is None or spec.loader is None:
        raise BackendError(f"cannot find the xad_backends package (looked in {src})")
    module = importlib.util.module_from_spec(spec)
    sys.modules["xad_backends"] = module
    spec.loader.exec_module(module)


def _targets() -> dict[str, str]:
    found = dict(_BUILTIN)
    for ep in entry_points(group="xad.backends"):
        found[ep.name] = ep.value
    return found


def backend_names() -> list[str]:
    """Every backend name xad knows, whether or not it can run here."""
    return sorted(_targets())


def _load_class(name: str) -> type[Backend]:
    targets = _targets()
    if name not in targets:
        raise BackendError(f"unknown backend {name!r}; known backends: "
                           f"{', '.join(sorted(targets))}. A third-party backend registers "
                           f"itself in the 'xad.backends' entry-point group.")
    _ensure_xad_backends()
    module_name, _, attr = targets[name].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise BackendError(f"backend {name!r} is not installed ({e}); install it, e.g. "
                           f"`pip install 'xad[{name}]'`") from e
    return getattr(module, attr)


def resolve_backend(name: str | Backend, device: Any = None) -> Backend:
    """The Backend for a name (and device), made once and shared; a Backend passes through.

    Raises :class:`BackendError` saying why when it cannot run here.

    Example:
        >>> import xad
        >>> xad.resolve_backend("numpy") is xad.resolve_backend("numpy")
        True
    """
    if isinstance(name, Backend):
        return name
    key = (name, repr(device))
    b = _instances.get(key)
    if b is None:
        cls = _load_class(name)
        cls.check_available()
        # a concrete backend's constructor takes only (device): its xp is its own
        b = cls(device) if device is not None else cls()  # type: ignore[call-arg]
        b.manual_seed(_seed)
        _instances[key] = b
        _instances[(name, repr(b.device))] = b
    return b


def set_backend(name: str | Backend, device: Any = None) -> Backend:
    """Choose where new tensors are made: ``"numpy"`` (default), ``"cupy"``, ...

    This sets the process default, which every thread sees unless it is inside a
    ``use_backend`` block (see :mod:`xad.context` for the thread rule). Raises
    :class:`BackendError` at once, saying why and how to fix it, when the backend cannot run
    here (for CuPy: not installed, no GPU or driver, kernels that cannot compile).

    Example:
        >>> import xad
        >>> xad.set_backend("numpy").name
        'numpy'
    """
    b = resolve_backend(name, device)
    Context.backend = b
    return b


def get_backend() -> Backend:
    """The backend new tensors are made on (this thread's ``use_backend``, else the process
    default).

    Example:
        >>> import xad
        >>> xad.get_backend().name
        'numpy'
    """
    b = context.backend
    return b if b is not None else set_backend("numpy")


@contextlib.contextmanager
def use_backend(name: str | Backend, device: Any = None) -> Iterator[Backend]:
    """Make new tensors on another backend inside a ``with`` block (this thread only).

    Example:
        >>> import xad
        >>> with xad.use_backend("array_api_strict"):
        ...     xad.zeros(2).backend.name
        'array_api_strict'
    """
    b = resolve_backend(name, device)
    had = "backend" in context.__dict__
    prev = context.backend
    context.backend = b
    try:
        yield b
    finally:
        if had:
            context.backend = prev
        else:
            del context.backend


def available_backends() -> list[str]:
    """Names of the backends that can run here (``cupy`` only with a usable GPU).

    Example:
        >>> import xad
        >>> "numpy" in xad.available_backends()
        True
    """
    names = []
    for name in backend_names():
        try:
            resolve_backend(name)
        except BackendError:
            continue
        names.append(name)
    return names


_seed = 0


@host_call
def manual_seed(seed: int) -> None:
    """Seed the random generators of every backend (those made later too).

    Example:
        >>> import xad
        >>> xad.manual_seed(0); a = xad.randn(2); xad.manual_seed(0)
        >>> bool((a == xad.randn(2)).all())
        True
    """
    global _seed
    _seed = int(seed)
    for b in set(_instances.values()):
        b.manual_seed(_seed)


def initial_seed() -> int:
    """The seed the last :func:`manual_seed` (or :func:`seed`) gave, 0 before any.

    Example:
        >>> import xad
        >>> xad.manual_seed(7); xad.initial_seed()
        7
    """
    return _seed


def seed() -> int:
    """Seed every backend's generator from the operating system's randomness; returns the
    seed (then also :func:`initial_seed`).

    Example:
        >>> import xad
        >>> s = xad.seed(); s == xad.initial_seed()
        True
    """
    s = int.from_bytes(os.urandom(8), "little") >> 1  # (PyTorch's seeds are below 2**63)
    manual_seed(s)
    return s


@host_call
def get_rng_state() -> dict[tuple[str, str], Any]:
    """A copy of the random state of every backend in use (a dict by backend and device, not
    PyTorch's byte tensor), for :func:`set_rng_state`.

    Example:
        >>> import xad
        >>> state = xad.get_rng_state(); a = xad.randn(2)
        >>> xad.set_rng_state(state); bool((a == xad.randn(2)).all())
        True
    """
    made = [*_instances.values(), get_backend()]  # the current one (made if need be) last:
    return {(b.name, repr(b.device)): copy.deepcopy(b.get_rng_state()) for b in made}  # it wins


@host_call
def set_rng_state(state: dict[tuple[str, str], Any]) -> None:
    """Restore the random state :func:`get_rng_state` gave: the draws that followed it are
    drawn again (on each backend it names)."""
    if not isinstance(state, dict):
        raise TypeError(f"set_rng_state: expected the dict xad.get_rng_state() gives, got "
                        f"{type(state).__name__} (a PyTorch byte tensor does not carry over)")
    for b in {*_instances.values(), get_backend()}:  # every instance of each place named
        s = state.get((b.name, repr(b.device)))
        if s is not None:
            b.set_rng_state(copy.deepcopy(s))


def _segmented_sums(xp: Any, keys: Any, values: Any) -> Any:
    """Inclusive sums of ``values`` within runs of equal sorted ``keys`` (1-d), by doubling:
    each step adds the partial sum ``k`` places back where the key is the same."""
    n, k = values.shape[0], 1
    while k < n:
        back = xp.concat([xp.zeros((k,), dtype=values.dtype, device=values.device),
                          values[:-k]])
        same = xp.concat([xp.zeros((k,), dtype=xp.bool, device=keys.device),
                          keys[k:] == keys[:-k]])
        values = xp.where(same, values + back, values)
        k *= 2
    return values
