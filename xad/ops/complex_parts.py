"""Complex numbers in and out: ``real``, ``imag``, ``conj`` and ``complex_from_parts``, each a
primitive with its gradient, so a real loss of a complex result (an FFT's) differentiates.

The gradient of a complex tensor ``z`` is PyTorch's convention: ``dL/dRe(z) + i dL/dIm(z)``
for a real loss ``L``. A real tensor's gradient stays real.
"""

from __future__ import annotations

from .. import dtypes as _dt
from ..tensor import Tensor
from ._apply import Op, apply, unary
from .batching import elementwise_batch
from .tangent import linear_jvp

__all__ = ["real", "imag", "conj", "complex_from_parts"]

_COMPLEX = {"float32": _dt.complex64, "float64": _dt.complex128}


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

