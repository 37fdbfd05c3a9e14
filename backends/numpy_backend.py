"""NumPy backend: the CPU default. Host memory, mutable arrays, native einsum and add.at."""

from __future__ import annotations

import ctypes
import math
import os
import platform
import warnings
from typing import Any

import array_api_compat.numpy as _compat_numpy
import numpy as np
from numpy.lib.stride_tricks import as_strided

from xad.backend import Backend

from . import numexpr_kernels

# the compat namespace re-exports NumPy's functions by star imports mypy does not follow
cnp: Any = _compat_numpy

try:  # scipy's erf is fast and exact; the generic one is the fallback
    import scipy.special as _scipy_special
    from scipy.special import erf as _scipy_erf
except ImportError:  # pragma: no cover - depends on the environment
    _scipy_erf = _scipy_special = None
# xad's special functions -> scipy.special's (the generic ones without scipy)
_SCIPY_SPECIAL = {"erfc": "erfc", "erfinv": "erfinv", "lgamma": "gammaln", "digamma": "psi"}
try:  # LAPACK's getrf, batched; the generic (a loop over columns) is the fallback
    from scipy.linalg import LinAlgWarning as _LinAlgWarning
    from scipy.linalg import get_lapack_funcs as _get_lapack_funcs
    from scipy.linalg import lu_factor as _scipy_lu_factor
    from scipy.linalg import solve_triangular as _scipy_solve_triangular
except ImportError:  # pragma: no cover - depends on the environment
    _scipy_lu_factor = _scipy_solve_triangular = _get_lapack_funcs = None

_LAPACK: dict[tuple[str, str], Any] = {}


def _lapack(name: str, a: Any) -> Any:
    """SciPy's LAPACK routine ``name`` for ``a``'s dtype, looked up once: called directly on
    one matrix it costs ~1 us where ``scipy.linalg``'s batching wrappers cost 15-50 us (the
    bulk of a small ``det`` backward)."""
    key = (name, a.dtype.char)
    f = _LAPACK.get(key)
    if f is None:
        f = _LAPACK[key] = _get_lapack_funcs((name,), (a,))[0]
    return f


def _swaps_to_permutation(piv: Any, m: int) -> Any:
    """The permutation of ``m`` rows LAPACK's row swaps ``piv`` (rows of 0-based pivots)
    make: swapped in Python lists up to 8192 pivots (the common few matrices), else column
    by column."""
    if piv.size <= 8192:
        out = []
        for row in piv.tolist():
            q = list(range(m))
            for i, p in enumerate(row):
                q[i], q[p] = q[p], q[i]
            out.append(q)
        return np.array(out, dtype=np.int64).reshape(piv.shape[0], m)
    perm = np.tile(np.arange(m), (piv.shape[0], 1))
    rows = np.arange(piv.shape[0])
    for i in range(piv.shape[1]):
        p = piv[:, i]
        perm[rows, i], perm[rows, p] = perm[rows, p], perm[rows, i]
    return perm


class _Namespace:
    """``array_api_compat.numpy`` with the calls a training step makes most sent straight to
    NumPy: floating sums and real maxima/minima to the ufunc reductions,
    ``arange``/``astype``/``permute_dims``/``matrix_transpose`` past the compat wrappers
    (each wrapper costs about a microsecond a call, which a small model pays many times a step; the
    results are the same; ``reshape`` too where no ``copy`` is asked). Everything else is the
    compat namespace's own.
    """

    def __getattr__(self, name: str) -> Any:
        value = getattr(cnp, name)
        setattr(self, name, value)  # resolved once
        return value

    @staticmethod
    def sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
        if dtype is None and x.dtype.kind == "f":  # (NumPy's stubs: keepdims as a Literal only)
            return np.add.reduce(x, axis=axis, keepdims=keepdims)  # type: ignore[call-overload]
        return cnp.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)

    @staticmethod
    def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None,
               device: Any = None) -> Any:
        if device not in (None, "cpu"):
            return cnp.arange(start, stop, step, dtype=dtype, device=device)  # its error
        return np.arange(start, stop, step, dtype=dtype)

    @staticmethod
    def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
        return x.astype(dtype, copy=copy)

    @staticmethod
    def permute_dims(x: Any, /, axes: tuple[int, ...]) -> Any:
        return np.transpose(x, axes)

    @staticmethod
    def reshape(x: Any, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Any:
        if copy is None:
            return x.reshape(shape)
        return cnp.reshape(x, shape, copy=copy)

    @staticmethod
    def matrix_transpose(x: Any, /) -> Any:
        return np.swapaxes(x, -1, -2)

    @staticmethod
    def max(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
        if x.dtype.kind in "fiu" and x.size:
            return np.maximum.reduce(x, axis=axis, keepdims=keepdims)  # type: ignore[call-overload]
        return cnp.max(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def min(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
        if x.dtype.kind in "fiu" and x.size:
            return np.minimum.reduce(x, axis=axis, keepdims=keepdims)  # type: ignore[call-overload]
        return cnp.min(x, axis=axis, keepdims=keepdims)


    @staticmethod
    def matmul(x1: Any, x2: Any, /) -> Any:
        """N-d @ 2-D as one 2-D product when ``x1`` reshapes to 2-D as a view: NumPy loops
        over the leading axes otherwise, 1.25-1.4x slower (a ``Linear`` on a sequence)."""
        if x1.ndim > 2 and x2.ndim == 2 and x1.flags.c_contiguous:
            y = np.matmul(x1.reshape(-1, x1.shape[-1]), x2)
            return y.reshape(*x1.shape[:-1], x2.shape[-1])
        return np.matmul(x1, x2)

    @staticmethod
    def where(condition: Any, x1: Any, x2: Any, /) -> Any:
        """Large float16/float32 selects done with bit masks: ``np.where`` branches per
        element, about 10x slower than a multiply on a random mask (ReLU's and max-pool's
        gradients); the bits are the same as ``np.where``'s (inf and NaN kept, +0.0 for a
        0.0 branch). float64 measured no faster this way; small arrays neither. A Python
        number first (ReLU's gradient, ``where(y <= 0, 0, g)``: 4.0 ms at (2048, 512)) is
        the same select with the condition negated and the number in the array's dtype."""
        if type(x1) in (int, float) and type(x2) is np.ndarray and x2.dtype in _BITS \
                and type(condition) is np.ndarray and condition.dtype == np.bool_ \
                and condition.shape == x2.shape and x2.size >= 4096:
            return _Namespace.where(~condition, x2, np.asarray(x1, x2.dtype))
        if not (type(x1) is np.ndarray and type(x2) is np.ndarray and x1.dtype == x2.dtype
                and x1.dtype in _BITS and type(condition) is np.ndarray
                and condition.dtype == np.bool_
                and x2.shape in ((), x1.shape)
                and max(condition.size, x1.size) >= 4096):
            return cnp.where(condition, x1, x2)
        u = _BITS[x1.dtype]
        shape = np.broadcast_shapes(condition.shape, x1.shape)
        like = x1 if x1.shape == shape else condition if condition.shape == shape else None
        # the operand's memory order (a convolution's batch-last layout), not C order: a
        # mix of orders makes every later elementwise step a slow strided loop
        out = np.empty(shape, x1.dtype) if like is None else np.empty_like(like, x1.dtype)
        bits = out.view(u)  # one allocation: fresh temporaries cost page faults at this size
        np.subtract(0, condition, out=bits, dtype=u)  # all ones where the condition holds
        other = None if not (x2.ndim or x2.view(u)) else ~bits & x2.view(u)  # None: +0.0
        bits &= x1.view(u)
        if other is not None:
            bits |= other
        return out


_BITS = {np.dtype(np.float32): np.uint32, np.dtype(np.float16): np.uint16}
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def _keep_freed_heap() -> None:
    """Ask glibc's malloc to keep freed memory for reuse instead of handing it back to the
    kernel at every step (arrays up to 32 MiB from the heap; the heap's free top trimmed
    only past 256 MiB). A training step frees most of its arrays at its end; with glibc's
    adaptive defaults the next step faults the same pages in again: 3500 page faults a step
    (8 of 17 ms) in the digits CNN, none with this. No-op where the C library is not glibc,
    or when the environment sets ``XAD_KEEP_MALLOC=1`` (leave the process's allocator alone).
    """
    if platform.libc_ver()[0] != "glibc" or os.environ.get("XAD_KEEP_MALLOC") == "1":
        return
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # pragma: no cover - an unusual glibc install
        return
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)
    mallopt(_M_TRIM_THRESHOLD, 256 << 20)


class NumpyBackend(Backend):
    """NumPy arrays on the CPU. Making one tunes glibc's ``malloc`` to keep freed memory for
    reuse (see ``_keep_freed_heap``): a process-wide setting, as an allocator choice is.

    Example:
        >>> import xad
        >>> xad.set_backend("numpy").is_host
        True
    """

    name = "numpy"
    mutable = True
    is_host = True
    array_type = np.ndarray
    sums_by_product = True

    def __init__(self, device: Any = None) -> None:
        if device not in (None, "cpu"):
            raise ValueError(f"numpy backend: device must be 'cpu', got {device!r}")
        super().__init__(_Namespace(), "cpu")
        self._rng = np.random.default_rng(0)
        self._elementwise: dict[str, Any] = {}  # see elementwise
        self._floats: dict[tuple, Any] = {}  # see float_operand
        _keep_freed_heap()

    def asarray(self, obj: Any, dtype: Any = None) -> Any:
        return np.asarray(obj, dtype=dtype)

    def ensure_array(self, x: Any) -> Any:
        return np.asarray(x)

    def reshapes_in_place(self, a: Any, shape: tuple[int, ...]) -> bool:
        """A row-major array reshapes to any shape as a view (no trial reshape)."""
        return a.flags.c_contiguous or super().reshapes_in_place(a, shape)

    def zeros(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return np.zeros(shape, dtype=dtype)

    def full(self, shape: tuple[int, ...], value: Any, dtype: Any) -> Any:
        return np.full(shape, value, dtype=dtype)

    def to_numpy(self, x: Any) -> Any:
        return np.asarray(x)

    def from_numpy(self, a: Any) -> Any:
        return np.asarray(a)

    def item(self, x: Any) -> Any:
        if x.size != 1:
            return super().item(x)
        return x.reshape(-1)[0].item()

    def index_add(self, x: Any, key: Any, values: Any) -> Any:
        np.add.at(x, key, values)
        return x

    def outer(self, x: Any, y: Any) -> Any:
        """Large floating outer products by ``einsum``: the same products, 10-15% less time
        than broadcasting's ``x * y`` from 2**16 elements on (vmap(grad)'s per-example
        weight gradients: (256, 64, 1) times (256, 1, 784), 4.6 ms against 5.3 ms)."""
        if x.dtype is y.dtype and x.dtype.kind == "f" and x.size * y.shape[-1] >= 1 << 16:
            return np.einsum("...ij,...jk->...ik", x, y)
        return x * y

    def einsum(self, subscripts: str, *operands: Any) -> Any:
        return np.einsum(subscripts, *operands, optimize=len(operands) > 2)

    def im2col(self, x: Any, kernel: tuple[int, int], stride: tuple[int, int],
               dilation: tuple[int, int], pads: tuple[int, int, int, int],
               value: float) -> Any:
        """The windows as one strided view of the batch-last (padded) image and one copy:
        the reference path's two padding ``concat`` calls and ``stack`` of ``kh*kw`` slices
        cost 2-3 copies more (and ``stack`` may keep a strided order, making the GEMM's
        ``reshape`` copy again)."""
        n, c, h, w = x.shape
        top, bottom, left, right = pads
        xt = np.transpose(x, (1, 2, 3, 0))
        if any(pads):
            padded = np.full((c, h + top + bottom, w + left + right, n), value, x.dtype)
            padded[:, top:top + h, left:left + w] = xt
            xt = padded
        elif xt.strides[3] != x.itemsize:  # not batch-last yet (a network's input)
            xt = np.ascontiguousarray(xt)
        (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
        ho = (xt.shape[1] - dh * (kh - 1) - 1) // sh + 1
        wo = (xt.shape[2] - dw * (kw - 1) - 1) // sw + 1
        sc, sy, sx, sn = xt.strides
        view = as_strided(xt, (c, kh, kw, ho, wo, n), (sc, sy * dh, sx * dw, sy * sh, sx * sw, sn),
                          writeable=False)
        return view.copy()

    # score elements per piece of (batch, head) pairs (512 KiB of float32); measured on the
    # bench's encoder, 2**14 to 2**20 run within noise of each other (bench/README.md)
    ATTENTION_PIECE = 2 ** 17

    def attention(self, q: Any, k: Any, v: Any, scale: float) -> tuple:
        """Over pieces of the (batch, head) pairs whose scores stay in the CPU's cache, in
        place: the weights are written once, where a whole ``(..., L, S)`` scores array
        would pass through memory five times (scores, max, exp, sum, divide)."""
        (qf, kf, vf), step = _attention_pieces(q, k, v)
        out = np.empty(qf.shape[:-1] + vf.shape[-1:], q.dtype)
        p = np.empty(qf.shape[:-1] + kf.shape[-2:-1], q.dtype)
        for i in range(0, len(qf), step):
            c = slice(i, i + step)
            np.matmul(_attention_weights(qf[c] * scale, kf[c], p[c]), vf[c], out=out[c])
        return (out.reshape(q.shape[:-1] + v.shape[-1:]),
                p.reshape(q.shape[:-1] + k.shape[-2:-1]))

    def attention_grad(self, q: Any, k: Any, v: Any, g: Any, p: Any, scale: float) -> tuple:
        """The three gradients piece by piece, each piece's weights read once."""
        (qf, kf, vf, gf, pf), step = _attention_pieces(q, k, v, g, p)
        dq, dk, dv = np.empty_like(qf), np.empty_like(kf), np.empty_like(vf)
        for i in range(0, len(qf), step):
            c = slice(i, i + step)
            pc = pf[c]
            np.matmul(np.swapaxes(pc, -1, -2), gf[c], out=dv[c])
            ds = np.matmul(gf[c], np.swapaxes(vf[c], -1, -2))
            ds *= pc                                  # p * dp
            ds -= pc * _row_sums(ds)                  # - p * sum(p * dp)
            np.matmul(ds, kf[c], out=dq[c])
            dq[c] *= scale
            np.matmul(np.swapaxes(ds, -1, -2), qf[c], out=dk[c])
            dk[c] *= scale
        return dq.reshape(q.shape), dk.reshape(k.shape), dv.reshape(v.shape)

    def erf(self, x: Any) -> Any:
        if _scipy_erf is not None:
            return _scipy_erf(x).astype(x.dtype, copy=False)
        return super().erf(x)

    def _special(self, name: str, x: Any) -> Any:
        if _scipy_special is None or x.dtype.kind != "f":
            return getattr(super(), name)(x)
        return getattr(_scipy_special, _SCIPY_SPECIAL[name])(x).astype(x.dtype, copy=False)

    def erfc(self, x: Any) -> Any:
        return self._special("erfc", x)

    def erfinv(self, x: Any) -> Any:
        return self._special("erfinv", x)

    def lgamma(self, x: Any) -> Any:
        r = self._special("lgamma", x)
        return np.where(r == -np.inf, np.inf, r)  # scipy: -inf at -inf; C and torch: inf

    def digamma(self, x: Any) -> Any:
        return self._special("digamma", x)

    def fmod(self, x: Any, y: Any) -> Any:
        return np.fmod(x, y)

    def complex(self, re: Any, im: Any, dtype: Any) -> Any:
        out = np.empty(np.broadcast_shapes(re.shape, im.shape), dtype=dtype)
        out.real, out.imag = re, im  # each part copied as it is (no 0 * inf)
        return out

    def bitcast(self, x: Any, dtype: Any) -> Any:
        return x.view(dtype)

    def as_strided(self, x: Any, size: tuple[int, ...], stride: tuple[int, ...],
                   offset: int) -> Any:
        return strided_view(x, size, stride, offset)

    def lu_factor(self, x: Any) -> tuple[Any, Any, Any]:
        if _scipy_lu_factor is None or x.dtype.kind not in "fc" or x.itemsize < 4:
            return super().lu_factor(x)
        if x.ndim == 2:  # one matrix: LAPACK's getrf itself (0-based pivots, no warning)
            lu, piv, _ = _lapack("getrf", x)(x)
            piv = piv.astype(np.int64)
        else:
            with warnings.catch_warnings():  # a singular matrix is an answer, not a warning
                warnings.simplefilter("ignore", _LinAlgWarning)
                lu, piv = _scipy_lu_factor(x, check_finite=False)
        n = piv.shape[-1]
        flat = piv.reshape(-1, n)
        odd = np.count_nonzero(flat != np.arange(n), axis=-1).reshape(piv.shape[:-1]) % 2 == 1
        m = x.shape[-2]
        return lu, _swaps_to_permutation(flat, m).reshape(piv.shape[:-1] + (m,)), odd

    def solve_triangular(self, a: Any, b: Any, upper: bool) -> Any:
        if _scipy_solve_triangular is None or a.dtype.kind != "f" or a.itemsize < 4:
            return super().solve_triangular(a, b, upper)
        if a.ndim == 2 and b.ndim == 2 and a.dtype == b.dtype:  # LAPACK's trtrs itself
            out, info = _lapack("trtrs", a)(a, b, lower=not upper)
            if info == 0:
                return out
        return _scipy_solve_triangular(a, b, lower=not upper, check_finite=False)

    def float_operand(self, value: float, dtype: Any) -> Any:
        """A read-only 0-d array of ``dtype`` holding ``value``, cached (NumPy multiplies by
        one in 0.4 us, by a Python float in 1.0); zeros, NaN and values that overflow the
        dtype stay floats (-0.0 keys as 0.0, NaN never matches, an overflow warns per call)."""
        key = (value, dtype)
        a = self._floats.get(key)
        if a is not None:
            return a
        if not value or value != value:
            return value
        a = np.asarray(value, self.dtype(dtype))
        if math.isinf(a) and not math.isinf(value):
            return value
        if len(self._floats) >= 1024:  # a bound for floats that change each step
            self._floats.clear()
        a.flags.writeable = False
        self._floats[key] = a
        return a

    def elementwise(self, make: Any, name: str) -> Any:
        """``make``'s function as numexpr kernels, threaded, for float arrays of at least
        :data:`numexpr_kernels.MIN_SIZE` elements where the ``fast`` extra is installed
        (``backends/numexpr_kernels.py``; ``XAD_NUMEXPR=n`` sets the size, off by default:
        measured to lose to NumPy on the development machine); as NumPy calls
        otherwise (then the plain function itself: one call fewer per kernel). Made once
        per ``name``."""
        fn = self._elementwise.get(name)
        if fn is None:
            fn = self._elementwise[name] = numexpr_kernels.kernel(make, self.xp)
        return fn.plain if numexpr_kernels.MIN_SIZE is None else fn

    def manual_seed(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def randn(self, shape: tuple[int, ...], dtype: Any) -> Any:
        if dtype in (np.float32, np.float64):
            return self._rng.standard_normal(shape, dtype=dtype)
        return self._rng.standard_normal(shape).astype(dtype)

    def rand(self, shape: tuple[int, ...], dtype: Any) -> Any:
        if dtype in (np.float32, np.float64):
            return self._rng.random(shape, dtype=dtype)
        return self._rng.random(shape).astype(dtype)

    def permutation(self, n: int) -> Any:
        return self._rng.permutation(n)

    def get_rng_state(self) -> Any:
        return self._rng.bit_generator.state

    def set_rng_state(self, state: Any) -> None:
        self._rng.bit_generator.state = state


def _attention_pieces(*arrays: Any) -> tuple[list, int]:
    """The arrays as stacks of matrices, and how many (batch, head) pairs a piece takes."""
    q, k = arrays[0], arrays[1]
    n = math.prod(q.shape[:-2])
    flat = [a.reshape((n,) + a.shape[-2:]) for a in arrays]
    return flat, max(1, NumpyBackend.ATTENTION_PIECE // max(1, q.shape[-2] * k.shape[-2]))


def _row_sums(x: Any) -> Any:
    """Sums over the last axis as a product with ones (one BLAS call, several times
    NumPy's ``sum`` over rows of 64-128 numbers)."""
    return np.matmul(x, np.ones((x.shape[-1], 1), x.dtype))


def _attention_weights(qs: Any, k: Any, p: Any) -> Any:
    """``softmax(qs @ k^T)`` over the last axis, into ``p``."""
    np.matmul(qs, np.swapaxes(k, -1, -2), out=p)
    p -= p.max(axis=-1, keepdims=True)
    np.exp(p, out=p)
    p /= _row_sums(p)
    return p


def strided_view(x: Any, size: tuple[int, ...], stride: tuple[int, ...], offset: int) -> Any:
    """NumPy's strided view of the row-major ``x``'s memory (``Backend.as_strided``); the
    reshape raises where ``x`` is in another order (a copy would not share its memory)."""
    flat = np.reshape(x, (-1,), copy=False)
    return as_strided(flat[offset:], size, tuple(s * flat.itemsize for s in stride),
                      writeable=flat.flags.writeable)
