"""PyTorch's deprecated linear-algebra spellings that still run, for ``python -m xad.as_torch``:
``torch.lu`` (``get_infos``), ``torch.lu_solve``, ``torch.triangular_solve`` (its
``(solution, cloned_coefficient)`` form), ``torch.chain_matmul``, ``torch.nuclear_norm``
and ``torch.frobenius_norm``, each over :mod:`xad.torch_linalg` with PyTorch's deprecation
warning, and the tensor methods of those names; and the removed ones (``torch.solve``,
``lstsq``, ``eig``, ``symeig``, ``matrix_rank``), which raise PyTorch's error naming the
replacement."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple, NoReturn

from . import linalg as _la
from . import torch_linalg as _tl
from .ops import torch_conventions as _conventions
from .tensor import Tensor, install_methods

__all__ = ["lu", "lu_solve", "triangular_solve", "chain_matmul", "nuclear_norm",
           "frobenius_norm", "solve", "lstsq", "eig", "symeig", "matrix_rank"]

_REMOVED = "This function was deprecated since version 1.9 and is now removed. "


def _deprecated(what: str) -> None:
    warnings.warn(what, UserWarning, stacklevel=3)


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False) -> tuple[Tensor, ...]:  # noqa: N803
    """``torch.lu``: ``(LU, pivots)`` of :func:`xad.torch_linalg.lu_factor`, and ``info``
    with ``get_infos``; a singular matrix gives its factors without an error, as PyTorch's.

    Example:
        >>> import warnings, xad
        >>> from xad.torch_legacy_linalg import lu
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     lu(xad.tensor([[1.0, 2.0], [3.0, 4.0]]))[1].tolist()
        [2, 2]
    """
    _deprecated("torch.lu is deprecated in favor of torch.linalg.lu_factor / "
                "torch.linalg.lu_factor_ex and will be removed in a future PyTorch release.")
    out = _tl.lu_factor_ex(A, pivot=pivot)
    return tuple(out) if get_infos else (out.LU, out.pivots)


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:  # noqa: N803
    """``torch.lu_solve(b, LU_data, LU_pivots)``: :func:`xad.torch_linalg.lu_solve` with
    the right-hand side first.

    Example:
        >>> import xad
        >>> from xad import torch_linalg
        >>> from xad.torch_legacy_linalg import lu_solve
        >>> LU, piv = torch_linalg.lu_factor(xad.tensor([[2.0, 0.0], [0.0, 4.0]]))
        >>> lu_solve(xad.tensor([[2.0], [4.0]]), LU, piv).tolist()
        [[1.0], [1.0]]
    """
    return _tl.lu_solve(LU_data, LU_pivots, b)


class TriangularSolveResult(NamedTuple):
    """``torch.triangular_solve``'s result."""

    solution: Tensor
    cloned_coefficient: Tensor


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,  # noqa: N803
                     unitriangular: bool = False) -> TriangularSolveResult:
    """``torch.triangular_solve``: ``X`` with ``A X = b`` (``transpose``: ``A^T X = b``)
    reading ``A``'s upper (or lower) triangle, and a copy of ``A``; differentiable.

    Example:
        >>> import warnings, xad
        >>> from xad.torch_legacy_linalg import triangular_solve
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     x = triangular_solve(xad.ones(2, 1), xad.tensor([[1.0, 2.0], [0.0, 4.0]]))
        >>> x.solution.tolist()
        [[0.5], [0.25]]
    """
    _deprecated("torch.triangular_solve is deprecated in favor of "
                "torch.linalg.solve_triangular and will be removed in a future PyTorch release.")
    if transpose:  # A^T is lower where A is upper
        t = _tl.solve_triangular(A, b.mT, upper=upper, left=False,
                                 unitriangular=unitriangular)
        return TriangularSolveResult(t.mT, A.clone())
    x = _tl.solve_triangular(A, b, upper=upper, unitriangular=unitriangular)
    return TriangularSolveResult(x, A.clone())


def chain_matmul(*matrices: Tensor) -> Tensor:
    """``torch.chain_matmul``: :func:`xad.linalg.multi_dot` of the arguments (one matrix
    comes back as a copy).

    Example:
        >>> import warnings, xad
        >>> from xad.torch_legacy_linalg import chain_matmul
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     chain_matmul(xad.eye(2), xad.ones(2, 2)).tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    _deprecated("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                "more tensors rather than multiple parameters.")
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    if len(matrices) == 1:
        if matrices[0].ndim != 2:
            raise RuntimeError(f"chain_matmul(): expected a 2-D matrix, got shape "
                               f"{tuple(matrices[0].shape)}")
        return matrices[0].clone()
    return _la.multi_dot(list(matrices))


def nuclear_norm(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A002
    """``torch.nuclear_norm``: ``torch.linalg.matrix_norm(input, 'nuc', dim, keepdim)``
    (without ``dim``: a 2-D ``input``).

    Example:
        >>> import warnings, xad
        >>> from xad.torch_legacy_linalg import nuclear_norm
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     nuclear_norm(xad.tensor([[3.0, 0.0], [0.0, -4.0]])).item()
        7.0
    """
    _deprecated("at::nuclear_norm is deprecated and it is just left for JIT compatibility. "
                "It will be removed in a future PyTorch release. Please use "
                "`linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead")
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim): PyTorch's other overload
        dim, keepdim = None, dim
    if dim is None and input.ndim != 2:
        raise RuntimeError(f"nuclear_norm: expected a 2-D tensor without dim, got shape "
                           f"{tuple(input.shape)}; pass dim=(-2, -1)")
    return _tl.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)


def frobenius_norm(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:  # noqa: A002
    """``torch.frobenius_norm``: ``torch.linalg.vector_norm(input, 2, dim, keepdim)`` (``dim``
    one or two dimensions; gradient 0 at a zero input, as PyTorch's).

    Example:
        >>> import warnings, xad
        >>> from xad.torch_legacy_linalg import frobenius_norm
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     frobenius_norm(xad.ones(2, 2), dim=(0, 1)).item()
        2.0
    """
    _deprecated("at::frobenius_norm is deprecated and it is just left for JIT compatibility. "
                "It will be removed in a future PyTorch release. Please use "
                "`linalg.vector_norm(A, 2., dim, keepdim)` instead")
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) not in (1, 2):
        raise RuntimeError(f"frobenius_norm: expected one or two dimensions in dim, got {dim}")
    return _conventions.vector_norm(input, 2, dims, keepdim)


# the words of PyTorch's errors for the functions it removed, each naming the replacement
_REMOVED_MESSAGES = {
    "solve": _REMOVED + "`torch.solve` is deprecated in favor of `torch.linalg.solve`. "
    "`torch.linalg.solve` has its arguments reversed and does not return the LU "
    "factorization.\n\nTo get the LU factorization see `torch.lu`, which can be used with "
    "`torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution should be "
    "replaced with:\nX = torch.linalg.solve(A, B)",
    "lstsq": _REMOVED + "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
    "`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition "
    "in the returned tuple (although it returns other information about the problem).\n\n"
    "To get the QR decomposition consider using `torch.linalg.qr`.\n\nThe returned "
    "solution in `torch.lstsq` stored the residuals of the solution in the last m - n "
    "columns of the returned value whenever m > n. In torch.linalg.lstsq, the residuals "
    "are in the field 'residuals' of the returned named tuple.\n\nThe unpacking of the "
    "solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced "
    "with:\nX = torch.linalg.lstsq(A, B).solution",
    "eig": _REMOVED + "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or "
    "`cdouble` rather than real tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) "
    "should be replaced with:\nL_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = "
    "torch.eig(A, eigenvectors=True) should be replaced with:\nL_complex, V_complex = "
    "torch.linalg.eig(A)",
    "symeig": _REMOVED + "The default behavior has changed from using the upper triangular "
    "portion of the matrix by default to using the lower triangular portion.\n\nL, _ = "
    "torch.symeig(A, upper=upper) should be replaced with:\nL = torch.linalg.eigvalsh(A, "
    "UPLO='U' if upper else 'L')\n\nand\n\nL, V = torch.symeig(A, eigenvectors=True) "
    "should be replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
    "matrix_rank": "This function was deprecated since version 1.9 and is now removed.\n"
    "Please use the `torch.linalg.matrix_rank` function instead. The parameter 'symmetric' "
    "was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.",
}


def _removed(name: str) -> Callable[..., NoReturn]:
    """``torch.<name>``, which PyTorch removed: it raises PyTorch's error."""
    def f(*args: Any, **kwargs: Any) -> NoReturn:
        raise RuntimeError(_REMOVED_MESSAGES[name])
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``torch.{name}``: removed from PyTorch; raises its error, which names the " \
                f"replacement."
    return f


solve = _removed("solve")
lstsq = _removed("lstsq")
eig = _removed("eig")
symeig = _removed("symeig")
matrix_rank = _removed("matrix_rank")


def _lu_solve_method(self: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:  # noqa: N803
    """``b.lu_solve(LU_data, LU_pivots)``: :func:`lu_solve`."""
    return lu_solve(self, LU_data, LU_pivots)


install_methods({"lu": lu, "lu_solve": _lu_solve_method, "triangular_solve": triangular_solve,
                 "solve": solve, "lstsq": lstsq, "eig": eig, "symeig": symeig})
