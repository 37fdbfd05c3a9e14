"""PyTorch's older linear-algebra spellings, ``torch.svd`` (``V``, not ``Vh``),
``torch.qr``, ``torch.cholesky``, ``torch.inverse``, ``torch.det``, ``torch.slogdet``,
``torch.logdet``, ``torch.matrix_power``, ``torch.pinverse``, ``torch.cholesky_solve`` and
``torch.cholesky_inverse``, over :mod:`xad.linalg`;
and the tensor methods of those names (``x.svd()``, ``x.det()``, ...), given to
:class:`xad.Tensor` here because it sits below ``linalg``."""

from __future__ import annotations

from typing import Any, NamedTuple

from . import linalg
from .factories import eye, zeros
from .ops import torch_conventions as _conventions
from .ops.complex_parts import conj
from .ops.elementwise import where
from .ops.inverses import _mH
from .tensor import Tensor, install_methods
from .torch_linalg import solve_triangular

__all__ = ["SVD", "svd", "qr", "cholesky", "inverse", "det", "slogdet", "logdet",
           "matrix_power", "pinverse", "cholesky_solve", "cholesky_inverse"]


def det(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.det``: :func:`xad.linalg.det`."""
    return linalg.det(input)


def inverse(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.inverse``: :func:`xad.linalg.inv`."""
    return linalg.inv(input)


def slogdet(input: Tensor) -> Any:  # noqa: A002
    """``torch.slogdet``: ``(sign, logabsdet)`` of :func:`xad.linalg.slogdet`."""
    return linalg.slogdet(input)


def logdet(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.logdet``: ``log(det)``, NaN for a negative determinant, -inf for 0.

    Example:
        >>> import xad
        >>> from xad.torch_matrix_functions import logdet
        >>> logdet(xad.tensor([[2.0, 0.0], [0.0, -1.0]])).tolist()
        nan
    """
    sign, logabs = linalg.slogdet(input)
    return where(sign < 0, float("nan"), logabs)


class SVD(NamedTuple):
    """``torch.svd``'s result: ``V``, not ``Vh``."""

    U: Tensor
    S: Tensor
    V: Tensor


def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> SVD:  # noqa: A002
    """``torch.svd``: ``(U, S, V)`` with ``input = U diag(S) V^H`` (``V``, not
    :func:`xad.linalg.svd`'s ``Vh``); ``some=False``: the full ``U`` and ``V``;
    ``compute_uv=False``: ``U`` and ``V`` zero-filled, of shapes ``(m, m)`` and ``(n, n)``.

    Example:
        >>> import xad
        >>> from xad.torch_matrix_functions import svd
        >>> u, s, v = svd(xad.tensor([[3.0, 0.0], [0.0, -4.0]])); s.tolist()
        [4.0, 3.0]
    """
    if not compute_uv:
        *lead, m, n = input.shape
        z = [zeros((*lead, k, k), dtype=input.dtype, backend=input._backend)
             for k in (m, n)]
        return SVD(z[0], linalg.svdvals(input), z[1])
    u, s_, vh = linalg.svd(input, full_matrices=not some)
    return SVD(u, s_, conj(vh).mT)


def qr(input: Tensor, some: bool = True) -> Any:  # noqa: A002
    """``torch.qr``: :func:`xad.linalg.qr`, ``some=False`` its ``mode="complete"``.

    Example:
        >>> import xad
        >>> from xad.torch_matrix_functions import qr
        >>> qr(xad.eye(2)).R.tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    return linalg.qr(input, mode="reduced" if some else "complete")


def cholesky(input: Tensor, upper: bool = False) -> Tensor:  # noqa: A002
    """``torch.cholesky``: ``torch.linalg.cholesky`` (``upper=True`` reads the upper
    triangle and gives ``U``; PyTorch's gradient, :func:`xad.ops.torch_conventions.cholesky`)."""
    return _conventions.cholesky(input, upper=upper)


def matrix_power(input: Tensor, n: int) -> Tensor:  # noqa: A002
    """``torch.matrix_power``: :func:`xad.linalg.matrix_power`."""
    return linalg.matrix_power(input, n)


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:  # noqa: A002
    """``torch.pinverse``: :func:`xad.linalg.pinv` dropping singular values below ``rcond``
    times the largest."""
    return linalg.pinv(input, rtol=rcond)


def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:  # noqa: A002
    """``torch.cholesky_solve``: ``X`` with ``A X = B`` (``B`` is ``input``) from the Cholesky
    factor ``input2`` of ``A`` (``A = L L^H``, or ``U^H U`` when ``upper``), by two triangular
    solves; batches broadcast; differentiable in both.

    Example:
        >>> import xad
        >>> from xad.torch_matrix_functions import cholesky_solve
        >>> L = xad.tensor([[2.0, 0.0], [1.0, 1.0]])
        >>> cholesky_solve(xad.tensor([[4.0], [3.0]]), L).tolist()
        [[0.5], [1.0]]
    """
    b, f = input, input2
    if b.ndim < 2 or f.ndim < 2 or f.shape[-1] != f.shape[-2] or b.shape[-2] != f.shape[-1]:
        raise RuntimeError(f"cholesky_solve: the right-hand side (shape {b.shape}) must be "
                           f"(*, n, k) and the Cholesky factor (shape {f.shape}) (*, n, n)")
    if b.dtype != f.dtype:
        raise RuntimeError(f"cholesky_solve: the right-hand side is {b.dtype.name} and the "
                           f"factor {f.dtype.name}; cast one to the other's dtype")
    lower = _mH(f) if upper else f
    return solve_triangular(_mH(lower), solve_triangular(lower, b, upper=False), upper=True)


def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:  # noqa: A002
    """``torch.cholesky_inverse``: ``A^-1`` from the Cholesky factor ``input`` of ``A``.

    Example:
        >>> import xad
        >>> from xad.torch_matrix_functions import cholesky_inverse
        >>> cholesky_inverse(xad.tensor([[2.0, 0.0], [0.0, 0.5]])).tolist()
        [[0.25, 0.0], [0.0, 4.0]]
    """
    n = input.shape[-1] if input.ndim else 0
    return cholesky_solve(eye(n, dtype=input.dtype, backend=input.backend), input, upper)


install_methods({n: globals()[n] for n in __all__[1:]})
