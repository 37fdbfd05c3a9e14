"""Complex numbers in and out: ``real``, ``imag``, ``conj``, ``complex_from_parts``,
``view_as_real`` and ``view_as_complex``, each a primitive with its gradient, so a real loss of
a complex result (an FFT's) differentiates.

The gradient of a complex tensor ``z`` is PyTorch's convention: ``dL/dRe(z) + i dL/dIm(z)``
for a real loss ``L``. A real tensor's gradient stays real.
"""

from __future__ import annotations

from .. import dtypes as _dt
from ..tensor import Tensor
from ._apply import Op, apply, unary
from .batching import elementwise_batch
from .layout import storage_offset, strides
from .tangent import linear_jvp

__all__ = ["real", "imag", "conj", "complex_from_parts", "view_as_real", "view_as_complex"]

_COMPLEX = {"float32": _dt.complex64, "float64": _dt.complex128}
_REAL = {"complex64": _dt.float32, "complex128": _dt.float64}


def _is_complex(x: Tensor) -> bool:
    return x.dtype.is_complex


def _part(b, x, which: str):
    """The backend's ``real``/``imag`` of a complex array: a view of its memory on NumPy,
    torch, CuPy and array_api_strict. (Another dtype's array, the element numbers that
    ``inplace._positions`` maps through a chain of views, passes as it is.)"""
    if not b.xad_dtype(x.dtype).name.startswith("complex"):
        return x
    return getattr(b.xp, which)(x)


class Real(Op):
    """The real part, a view as PyTorch's: a write into it reaches the complex tensor
    (``inplace._onto_base``), whose later changes it sees."""

    name = "real"
    view = True

    @staticmethod
    def forward(b, x):
        return _part(b, x, "real")

    @staticmethod
    def backward(node, g):
        return complex_from_parts(g, g * 0.0)

    batch = classmethod(elementwise_batch)

    jvp = classmethod(linear_jvp)


class Imag(Op):
    """The imaginary part, a view as :class:`Real`."""

    name = "imag"
    view = True

    @staticmethod
    def forward(b, x):
        return _part(b, x, "imag")

    @staticmethod
    def backward(node, g):
        return complex_from_parts(g * 0.0, g)

    batch = classmethod(elementwise_batch)

    jvp = classmethod(linear_jvp)


class Conj(Op):
    name = "conj"

    @staticmethod
    def forward(b, x):
        return b.xp.conj(x)

    @staticmethod
    def backward(node, g):
        return conj(g)

    batch = classmethod(elementwise_batch)

    jvp = classmethod(linear_jvp)


class ComplexFromParts(Op):
    name = "complex_from_parts"

    @staticmethod
    def forward(b, re, im, dtype):
        return b.complex(re, im, dtype)  # (``re + 1j * im`` made NaN of ``0 * inf``)

    @staticmethod
    def backward(node, g):
        return real(g), imag(g)

    batch = classmethod(elementwise_batch)

    jvp = classmethod(linear_jvp)


class ViewAsReal(Op):
    """``z``'s memory read as pairs of its real dtype, as PyTorch's ``view_as_real``: through
    the backend's ``bitcast`` of ``z`` with a trailing axis of length one (which any layout
    allows)."""

    name = "view_as_real"
    view = True

    @staticmethod
    def forward(b, z, dtype):
        return b.bitcast(b.xp.reshape(z, z.shape + (1,)), dtype)

    @staticmethod
    def backward(node, g):
        return view_as_complex(g)

    @staticmethod
    def batch(args, batched, dtype):
        return apply(ViewAsReal, args[0], dtype=dtype), True  # the batch axis leads

    jvp = classmethod(linear_jvp)


class ViewAsComplex(Op):
    """Pairs ``(..., 2)`` of a real floating tensor read as one complex element each."""

    name = "view_as_complex"
    view = True

    @staticmethod
    def forward(b, x, dtype):
        return b.xp.reshape(b.bitcast(x, dtype), x.shape[:-1])

    @staticmethod
    def backward(node, g):
        return view_as_real(g)

    @staticmethod
    def batch(args, batched, dtype):
        return apply(ViewAsComplex, args[0], dtype=dtype), True

    jvp = classmethod(linear_jvp)


def view_as_real(z: Tensor, /) -> Tensor:
    """A complex tensor as a real one with a last axis of two (the real and imaginary
    parts), sharing its memory, as PyTorch's ``torch.view_as_real``: a write into either is
    seen by the other; differentiable.

    Example:
        >>> import xad
        >>> z = xad.complex_from_parts(xad.tensor([1.0, 3.0]), xad.tensor([2.0, 4.0]))
        >>> xad.view_as_real(z).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """
    d = _REAL.get(z.dtype.name)
    if d is None:
        raise RuntimeError(f"view_as_real is only supported for complex tensors, got one of "
                           f"dtype {z.dtype.name} and shape {z.shape}")
    return unary(ViewAsReal, z, dtype=z._backend.dtype(d))


def view_as_complex(x: Tensor, /) -> Tensor:
    """A float32/float64 tensor whose last axis has length two as a complex one (the pairs
    as real and imaginary parts), sharing its memory, as PyTorch's
    ``torch.view_as_complex``; differentiable.

    Example:
        >>> import xad
        >>> xad.view_as_complex(xad.tensor([[1.0, 2.0]])).tolist()
        [(1+2j)]
    """
    d = _COMPLEX.get(x.dtype.name)
    what = f"view_as_complex of a tensor of dtype {x.dtype.name} and shape {x.shape}"
    if d is None:
        raise RuntimeError(f"{what}: is only supported for float32 and float64 tensors; cast "
                           f"it first (x.double())")
    if x.ndim == 0 or x.shape[-1] != 2:
        raise RuntimeError(f"{what}: the tensor must have a last dimension of size 2")
    st = strides(x)
    if st[-1] != 1:
        raise RuntimeError(f"{what}: the tensor must have a last dimension with stride 1; "
                           f"make it contiguous first (x.contiguous())")
    if any(s % 2 for s in st[:-1]) or (x._base is not None and storage_offset(x) % 2):
        raise RuntimeError(f"{what}: the tensor must have a stride divisible by 2 for all but "
                           f"the last dimension and an even storage offset; view a copy "
                           f"(x.clone())")
    return unary(ViewAsComplex, x, dtype=x._backend.dtype(d))


def real(x: Tensor, /) -> Tensor:
    """The real part (a real tensor itself); differentiable. Of a complex tensor, a view as
    PyTorch's ``z.real``: a write into it changes ``z``, and it sees later changes of ``z``.

    Example:
        >>> import xad
        >>> xad.real(xad.complex_from_parts(xad.tensor([1.0]), xad.tensor([2.0]))).tolist()
        [1.0]
    """
    return unary(Real, x) if _is_complex(x) else x


def imag(x: Tensor, /) -> Tensor:
    """The imaginary part (zeros for a real tensor); differentiable. Of a complex tensor, a
    view as :func:`real`.

    Example:
        >>> import xad
        >>> xad.imag(xad.complex_from_parts(xad.tensor([1.0]), xad.tensor([2.0]))).tolist()
        [2.0]
    """
    return unary(Imag, x) if _is_complex(x) else x * 0


def conj(x: Tensor, /) -> Tensor:
    """The complex conjugate (a real tensor's own values); differentiable.

    Example:
        >>> import xad
        >>> z = xad.complex_from_parts(xad.tensor([1.0]), xad.tensor([2.0]))
        >>> xad.imag(xad.conj(z)).tolist()
        [-2.0]
    """
    return unary(Conj, x) if _is_complex(x) else x


def complex_from_parts(re: Tensor, im: Tensor, /) -> Tensor:
    """``re + i im`` from two real floating tensors of one dtype (complex64 from float32,
    complex128 from float64); differentiable in both.

    Example:
        >>> import xad
        >>> xad.complex_from_parts(xad.tensor([1.0]), xad.tensor([0.0])).dtype
        xad.complex64
    """
    d = _COMPLEX.get(re.dtype.name)
    if d is None or im.dtype is not re.dtype:
        raise TypeError(f"complex_from_parts: needs two float32 or two float64 tensors, got "
                        f"{re.dtype} and {im.dtype}; cast them first (x.astype(xad.float64))")
    return apply(ComplexFromParts, re, im, dtype=re._backend.dtype(d))

