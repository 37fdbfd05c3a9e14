"""Making tensors: from Python data, filled, ranges, random (on the current backend)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

from . import dtypes as _dt
from .backend import Backend, get_backend
from .context import context
from .generator import Generator, drawing
from .tensor import Tensor
from .tracing import traced_draw

__all__ = ["tensor", "zeros", "ones", "full", "arange", "linspace", "eye", "zeros_like",
           "ones_like", "full_like", "randn", "rand", "randint", "randperm", "multinomial", "empty",
           "batched_draw"]


def _shape(shape: tuple) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(n) for n in shape)


def _on(backend: Backend | None, device: Any, op: str) -> Backend:
    """The backend to create on: ``backend`` or the current one; ``device`` (the Array
    API's keyword) must be that backend's device (xad places tensors by backend)."""
    b = backend or get_backend()
    if device is not None and device != b.device:
        raise ValueError(f"{op}: device {device!r} is not the backend's ({b.label}, device "
                         f"{b.device!r}); choose the backend with xad.set_backend(...) or "
                         f"move the result with .to(...)")
    return b


def _native(b: Backend, dtype: Any) -> Any:
    return b.dtype(_dt.as_dtype(dtype) or _dt.get_default_dtype())


def default_complex_dtype() -> _dt.DType:
    """The complex dtype paired with the default floating dtype (complex64 for float32)."""
    return _dt.complex128 if _dt.get_default_dtype() is _dt.float64 else _dt.complex64


def _python_default(native: _dt.DType) -> _dt.DType | None:
    """The dtype Python numbers of this kind become (floats and complex follow the default
    dtype, as in PyTorch), or ``None`` to keep the backend's."""
    if native.is_floating:
        return _dt.get_default_dtype()
    return default_complex_dtype() if native in (_dt.complex64, _dt.complex128) else None


def _holds_tensor(data: Any) -> bool:
    return isinstance(data, Tensor) or (isinstance(data, (list, tuple))
                                        and any(_holds_tensor(v) for v in data))


def _values(data: Any) -> Any:
    """Nested lists with each tensor's values in place of the tensor."""
    if isinstance(data, Tensor):
        return data.tolist()
    return [_values(v) for v in data] if isinstance(data, (list, tuple)) else data


def _listed_dtype(data: Any) -> _dt.DType:
    """PyTorch's dtype for a list holding tensors: their dtypes and the Python numbers'
    (bool, int64, the default floating and complex dtypes) promoted together."""
    if isinstance(data, Tensor):
        return data.dtype
    if isinstance(data, (list, tuple)):
        out = None
        for v in data:
            d = _listed_dtype(v)
            out = d if out is None else _dt.promote_types(out, d)
        return out or _dt.get_default_dtype()
    if isinstance(data, bool):
        return _dt.bool_
    if isinstance(data, int):
        return _dt.int64
    return default_complex_dtype() if isinstance(data, complex) else _dt.get_default_dtype()


def _static(*values: Any) -> bool:
    """Whether ``values`` are Python data only (numbers, strings, None, nested lists and
    tuples of them): what a factory makes from them is the same at every call."""
    for v in values:
        if type(v) in (list, tuple):
            if not _static(*v):
                return False
        elif v is not None and type(v) not in (int, float, bool, complex, str):
            return False
    return True


def _finish(data: Any, b: Backend, requires_grad: bool, static: bool = False) -> Tensor:
    """The factory's tensor (a constant of an ``xad.compile`` recording where ``static``:
    made from shapes, dtypes and Python numbers only)."""
    t = Tensor._constant(data, b) if static else Tensor._make(data, b)
    if requires_grad:
        if not t.dtype.can_require_grad:
            raise TypeError(f"requires_grad=True needs a floating or complex dtype, got "
                            f"{t.dtype}")
        t.requires_grad = True
    return t


def tensor(data: Any, dtype: _dt.DType | str | None = None, requires_grad: bool = False,
           backend: Backend | None = None) -> Tensor:
    """A new leaf tensor from Python data or an array (copied onto the current backend).

    Python floats become the default dtype (float32), complex numbers its complex pair
    (complex64); arrays keep their dtype.

    Example:
        >>> import xad
        >>> xad.tensor([[1.0, 2.0]]).shape
        (1, 2)
    """
    b = backend or get_backend()
    d = _dt.as_dtype(dtype)
    if isinstance(data, Tensor) and data._backend is b:  # a recorded copy
        t = data.detach()._copy()
        if d is not None and b.dtype(d) != t._array.dtype:
            t = t.astype(d)
        return _finish(t._array, b, requires_grad) if requires_grad else t
    arr: Any
    static = False  # (made of Python numbers only: a constant of an xad.compile recording)
    if isinstance(data, Tensor):
        data = data._backend.to_numpy(data._array)
        arr = b.asarray(data) if not isinstance(data, b.array_type) else data
    elif isinstance(data, b.array_type):
        arr = b.xp.asarray(data, copy=True)
    else:
        static = _static(data)
        if isinstance(data, (list, tuple)) and _holds_tensor(data):
            # tensors in a list: their values, read explicitly (PyTorch's torch.tensor([t0,
            # 1]) reads them too; a backend's asarray would call len() on a 0-d tensor), in
            # the dtype PyTorch infers (a float64 one is not rounded to float32)
            d = _listed_dtype(data) if d is None else d
            data = _values(data)
        arr = b.asarray(data, dtype=None if d is None else b.dtype(d))
        if d is None and not hasattr(data, "dtype"):
            d = _python_default(b.xad_dtype(arr.dtype))  # Python floats: float32 by default
            if d is not None:  # convert the Python numbers again, straight to that dtype
                arr = b.asarray(data, dtype=b.dtype(d))
    if d is not None and b.dtype(d) != arr.dtype:
        arr = b.xp.astype(arr, b.dtype(d))
    return _finish(arr, b, requires_grad, static=static)


def zeros(shape: int | Sequence[int] = (), *more: int, dtype: Any = None,
          requires_grad: bool = False, backend: Backend | None = None,
          device: Any = None) -> Tensor:
    """A tensor of zeros: ``zeros((2, 3))`` (the standard's one ``shape``) or PyTorch's
    ``zeros(2, 3)``.

    Example:
        >>> import xad
        >>> xad.zeros(2, 3).shape
        (2, 3)
    """
    b = _on(backend, device, "zeros")
    return _finish(b.zeros(_shape((shape, *more)), _native(b, dtype)), b, requires_grad, True)


def ones(shape: int | Sequence[int] = (), *more: int, dtype: Any = None,
         requires_grad: bool = False, backend: Backend | None = None,
         device: Any = None) -> Tensor:
    """A tensor of ones (``ones((2, 3))`` or ``ones(2, 3)``).

    Example:
        >>> import xad
        >>> xad.ones(2).tolist()
        [1.0, 1.0]
    """
    return full(_shape((shape, *more)), 1, dtype=dtype or _dt.get_default_dtype(),
                requires_grad=requires_grad, backend=_on(backend, device, "ones"))


def empty(shape: int | Sequence[int] = (), *more: int, dtype: Any = None,
          backend: Backend | None = None, device: Any = None) -> Tensor:
    """An uninitialised tensor (zeros here; ``empty((2, 3))`` or ``empty(2, 3)``)."""
    return zeros(shape, *more, dtype=dtype, backend=_on(backend, device, "empty"))


def full(shape: Sequence[int] | int, fill_value: Any, dtype: Any = None,
         requires_grad: bool = False, backend: Backend | None = None,
         device: Any = None) -> Tensor:
    """A tensor filled with ``fill_value``.

    Example:
        >>> import xad
        >>> xad.full((2,), 7.0).tolist()
        [7.0, 7.0]
    """
    b = _on(backend, device, "full")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    static = _static(fill_value)
    if isinstance(fill_value, Tensor) and fill_value.ndim == 0:
        fill_value = fill_value.item()  # (PyTorch's Scalar: its dtype rule, as a number's)
    if dtype is None and isinstance(fill_value, bool):
        dtype = _dt.bool_
    elif dtype is None and isinstance(fill_value, int):
        dtype = _dt.int64 if not requires_grad else None
    elif dtype is None and isinstance(fill_value, complex):
        dtype = default_complex_dtype()
    _check_fill(fill_value, _dt.as_dtype(dtype) or _dt.get_default_dtype())
    return _finish(b.full(shape, fill_value, _native(b, dtype)), b, requires_grad, static)


_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
              "float32": 3.4028234663852886e38}


def _check_fill(v: Any, d: _dt.DType) -> None:
    """Refuse a Python number that ``d`` cannot hold, as PyTorch's ``full`` does (the
    backends gave a wrapped integer, ``inf``, the real part or INT_MIN, each their own)."""
    t = type(v)
    if d is _dt.bool_ or t not in (int, float, complex) or (t is complex and d.is_complex):
        return
    if t is complex:
        raise TypeError(f"full: the complex fill value {v!r} does not fit dtype {d} (PyTorch "
                        f"refuses too); give a complex dtype or the real part")
    if d.is_floating or d.is_complex:
        top = _FLOAT_MAX.get(d.real.name if d.is_complex else d.name, math.inf)
        fits = not math.isfinite(v) or abs(v) <= top
    else:
        bits, signed = int(d.name.lstrip("uint")), not d.name.startswith("u")
        lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2 ** bits - 1)
        fits = math.isfinite(v) and lo <= math.trunc(v) <= hi
    if not fits:
        raise OverflowError(f"full: the fill value {v!r} is outside the range of {d} "
                            f"(PyTorch refuses too); give a wider dtype")


def zeros_like(x: Tensor, dtype: Any = None, requires_grad: bool = False, *,
               device: Any = None) -> Tensor:
    """Zeros with ``x``'s shape, dtype and backend."""
    return zeros(x.shape, dtype=dtype or x.dtype, requires_grad=requires_grad,
                 backend=_on(x._backend, device, "zeros_like"))


def ones_like(x: Tensor, dtype: Any = None, requires_grad: bool = False, *,
              device: Any = None) -> Tensor:
    """Ones with ``x``'s shape, dtype and backend."""
    return ones(x.shape, dtype=dtype or x.dtype, requires_grad=requires_grad,
                backend=_on(x._backend, device, "ones_like"))


def full_like(x: Tensor, fill_value: Any, dtype: Any = None, *, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """``fill_value`` with ``x``'s shape, dtype and backend."""
    return full(x.shape, fill_value, dtype=dtype or x.dtype, requires_grad=requires_grad,
                backend=_on(x._backend, device, "full_like"))


def arange(start: float, stop: float | None = None, step: float = 1, dtype: Any = None,
           requires_grad: bool = False, backend: Backend | None = None,
           device: Any = None) -> Tensor:
    """Evenly spaced values in ``[start, stop)``; integers unless a float is given.

    Example:
        >>> import xad
        >>> xad.arange(3).tolist()
        [0, 1, 2]
    """
    b = _on(backend, device, "arange")
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        ints = all(isinstance(v, int) for v in (start, stop, step))
        dtype = _dt.int64 if ints else _dt.get_default_dtype()
    data = b.xp.arange(start, stop, step, dtype=_native(b, dtype), device=b.device)
    return _finish(data, b, requires_grad, True)


def linspace(start: float, stop: float, num: int, dtype: Any = None,
             endpoint: bool = True, requires_grad: bool = False,
             backend: Backend | None = None, device: Any = None) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop``; complex ends (the default
    complex dtype then) are spaced part by part.

    Example:
        >>> import xad
        >>> xad.linspace(0, 1, 3).tolist(), xad.linspace(0, 2j, 3).tolist()
        ([0.0, 0.5, 1.0], [0j, 1j, 2j])
    """
    b = _on(backend, device, "linspace")
    cplx = any(isinstance(v, numbers.Complex) and not isinstance(v, numbers.Real)
               for v in (start, stop))
    d = _dt.as_dtype(dtype) or (default_complex_dtype() if cplx else _dt.get_default_dtype())
    if cplx and not d.is_complex:
        raise TypeError(f"linspace: complex ends ({start!r}, {stop!r}) need a complex dtype, "
                        f"got {d} (the imaginary parts would be dropped)")
    if not d.is_complex:
        data = b.xp.linspace(start, stop, num, dtype=b.dtype(d), device=b.device,
                             endpoint=endpoint)
        return _finish(data, b, requires_grad, True)
    # part by part: CuPy's linspace takes no complex ends (it calls float(stop - start))
    part = b.dtype(_dt.float32 if d is _dt.complex64 else _dt.float64)
    s, e = complex(start), complex(stop)
    re, im = (b.xp.linspace(a, z, num, dtype=part, device=b.device, endpoint=endpoint)
              for a, z in ((s.real, e.real), (s.imag, e.imag)))
    with b.on_device():  # (its operators run on the current device)
        data = b.complex(re, im, b.dtype(d))
    return _finish(data, b, requires_grad, True)


def eye(n: int, m: int | None = None, dtype: Any = None, requires_grad: bool = False,
        backend: Backend | None = None, *, k: int = 0, device: Any = None) -> Tensor:
    """The identity matrix (``n`` by ``m``; ones on diagonal ``k``).

    Example:
        >>> import xad
        >>> xad.eye(2).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    b = _on(backend, device, "eye")
    data = b.xp.eye(n, m, k=k, dtype=_native(b, dtype), device=b.device)
    return _finish(data, b, requires_grad, True)


def batched_draw(fname: str, shape: tuple, make: Callable[[tuple], Tensor]) -> Tensor:
    """``make(shape)``, a new random tensor; inside ``xad.vmap`` its level decides, by its
    ``randomness``: an error, one draw per example, or one draw for the whole batch."""
    lvl = context.transform
    return make(shape) if lvl is None else lvl.random(fname, shape, make)


def _sampler(name: str, b: Backend, dtype: Any, requires_grad: bool,
             generator: Generator | None) -> Callable[[tuple], Tensor]:
    d = _dt.as_dtype(dtype)
    if d is not None and not d.is_floating:  # (integers were all 0, complex without imag)
        raise TypeError(f"{name}: samples need a real floating dtype, got {d} (PyTorch "
                        f"refuses integers too); draw in float32 and cast, or use randint")
    def make(shape: tuple) -> Tensor:
        with drawing(generator, b):
            data = getattr(b, name)(shape, _native(b, dtype))
        return _finish(data, b, requires_grad)
    return make


@traced_draw
def randn(*shape: Any, dtype: Any = None, requires_grad: bool = False,
          backend: Backend | None = None, generator: Generator | None = None) -> Tensor:
    """Standard normal samples from the backend's seeded generator (or ``generator``).

    Example:
        >>> import xad
        >>> xad.manual_seed(0); xad.randn(2, 3).shape
        (2, 3)
    """
    make = _sampler("randn", backend or get_backend(), dtype, requires_grad, generator)
    return batched_draw("randn", _shape(shape), make)


@traced_draw
def rand(*shape: Any, dtype: Any = None, requires_grad: bool = False,
         backend: Backend | None = None, generator: Generator | None = None) -> Tensor:
    """Uniform samples in ``[0, 1)``.

    Example:
        >>> import xad
        >>> bool((xad.rand(5) < 1).all())
        True
    """
    make = _sampler("rand", backend or get_backend(), dtype, requires_grad, generator)
    return batched_draw("rand", _shape(shape), make)


@traced_draw
def randint(low: int, high: Any = None, size: Sequence[int] | None = None, *,
            generator: Generator | None = None, dtype: Any = None,
            backend: Backend | None = None) -> Tensor:
    """Uniform integers in ``[low, high)`` (int64): ``randint(low, high, size)`` or, as
    PyTorch allows, ``randint(high, size)``.

    Example:
        >>> import xad
        >>> int(xad.randint(0, 3, (10,)).max().item()) < 3
        True
    """
    if size is None:
        if high is None:
            raise TypeError("randint needs a size: randint(low, high, size) or "
                            "randint(high, size)")
        low, high, size = 0, low, high
    b = backend or get_backend()

    def make(shape: tuple) -> Tensor:
        with drawing(generator, b):
            u = b.rand(shape, b.dtype(_dt.float64))
        with b.on_device():
            data = b.xp.astype(b.xp.floor(u * (high - low)) + low,
                               _native(b, dtype or _dt.int64))
        return Tensor._make(data, b)
    return batched_draw("randint", tuple(size), make)


@traced_draw
def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None,
             backend: Backend | None = None) -> Tensor:
    """A random permutation of ``0 .. n-1`` (int64).

    Example:
        >>> import xad
        >>> sorted(xad.randperm(4).tolist())
        [0, 1, 2, 3]
    """
    b = backend or get_backend()
    with drawing(generator, b):
        p = b.permutation(int(n))
    return Tensor._make(b.xp.astype(p, _native(b, dtype or _dt.int64)), b)


@traced_draw
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Tensor:
    """Indices drawn from the categorical distribution(s) in the rows of ``input``
    (non-negative weights, not necessarily normalised); without ``replacement`` each row's
    indices are distinct (a draw ordered by exponential races).

    Example:
        >>> import xad
        >>> xad.multinomial(xad.tensor([0.0, 1.0, 0.0]), 2, replacement=True).tolist()
        [1, 1]
    """
    b, xp = input._backend, input._backend.xp
    w = input._array if input.dtype.is_floating else xp.astype(input._array, b.dtype(_dt.float64))
    rows = w if input.ndim == 2 else xp.reshape(w, (1, -1))
    n = rows.shape[-1]
    if not replacement and num_samples > n:
        raise ValueError(f"multinomial: cannot draw {num_samples} samples without replacement "
                         f"from {n} categories; pass replacement=True")
    with drawing(generator, b):
        u = b.rand((rows.shape[0], num_samples if replacement else n), rows.dtype)
    with b.on_device():  # the array operators below run on the current device
        if replacement:  # invert the cumulative distribution
            cdf = xp.cumulative_sum(rows, axis=-1)
            hit = xp.expand_dims(u, axis=-1) * cdf[:, -1:, None] >= cdf[:, None, :]
            idx = xp.minimum(xp.sum(xp.astype(hit, b.dtype(_dt.int64)), axis=-1), n - 1)
        else:  # the smallest -log(u)/w first: a weighted draw without replacement
            keys = xp.where(rows > 0, -xp.log(1 - u) / xp.where(rows > 0, rows, 1), xp.inf)
            idx = xp.argsort(keys, axis=-1)[:, :num_samples]
    idx = xp.astype(idx, b.dtype(_dt.int64))
    return Tensor._make(idx if input.ndim == 2 else xp.reshape(idx, (num_samples,)), b)
