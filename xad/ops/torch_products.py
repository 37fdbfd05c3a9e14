"""PyTorch's products and moments that the standard lacks: ``kron``, ``inner``, ``vdot``,
``addmv``, ``addr``, ``baddbmm``, ``addbmm``, ``cov``, ``corrcoef`` and ``trapezoid``,
composed from xad's primitives (their gradients are the primitives' rules)."""

from __future__ import annotations

import warnings
from typing import Any

from ..tensor import Tensor
from .complex_parts import conj, real
from .elementwise import clip, sqrt
from .linalg import matmul, tensordot
from .manipulation import diff
from .reduce import sum as _sum
from .shape import expand_dims, reshape
from .torch_compositions import beta_plus_alpha, diagonal, dot, outer

__all__ = ["kron", "inner", "vdot", "addmv", "addr", "baddbmm", "addbmm", "cov", "corrcoef",
           "trapezoid"]


def kron(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The Kronecker product: each element of ``input`` times the whole of ``other``,
    blocks laid out along every axis (the shorter shape padded with leading 1s).

    Example:
        >>> import xad
        >>> xad.kron(xad.tensor([1.0, 2.0]), xad.tensor([1.0, 10.0])).tolist()
        [1.0, 10.0, 2.0, 20.0]
    """
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + tuple(input.shape)
    sb = (1,) * (nd - other.ndim) + tuple(other.shape)
    a = reshape(input, tuple(d for n in sa for d in (n, 1)))
    b = reshape(other, tuple(d for n in sb for d in (1, n)))
    return reshape(a * b, tuple(m * n for m, n in zip(sa, sb)))


def inner(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The sum of products over the last axes of both (a 0-d input scales the other).

    Example:
        >>> import xad
        >>> xad.inner(xad.tensor([[1.0, 2.0]]), xad.tensor([[3.0, 4.0], [1.0, 0.0]])).tolist()
        [[11.0, 1.0]]
    """
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise ValueError(f"inner: the last axes of shapes {input.shape} and {other.shape} "
                         f"differ; they must have the same size")
    return tensordot(input, other, axes=((input.ndim - 1,), (other.ndim - 1,)))


def vdot(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """``sum(conj(input) * other)`` of two vectors of one dtype.

    Example:
        >>> import xad
        >>> xad.vdot(xad.tensor([1.0, 2.0]), xad.tensor([3.0, 4.0])).item()
        11.0
    """
    if input.dtype is not other.dtype:
        raise TypeError(f"vdot: both vectors need one dtype, got {input.dtype} and "
                        f"{other.dtype} (PyTorch refuses too); cast one with .to(...)")
    return dot(conj(input), other)


def _dims(where: str, **tensors: tuple[Tensor, int]) -> None:
    for what, (t, n) in tensors.items():
        if t.ndim != n:
            raise ValueError(f"{where}: {what} must be {n}-d, got shape {t.shape}")


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1,  # noqa: A002
          alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)`` (``beta=0`` ignores ``input``).

    Example:
        >>> import xad
        >>> xad.addmv(xad.ones(2), xad.ones(2, 3), xad.ones(3), beta=2).tolist()
        [5.0, 5.0]
    """
    _dims("addmv", mat=(mat, 2), vec=(vec, 1))
    return beta_plus_alpha(input, matmul(mat, vec), beta, alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1,  # noqa: A002
         alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)`` (``beta=0`` ignores ``input``).

    Example:
        >>> import xad
        >>> xad.addr(xad.zeros(2, 2), xad.tensor([1.0, 2.0]), xad.tensor([3.0, 4.0])).tolist()
        [[3.0, 4.0], [6.0, 8.0]]
    """
    _dims("addr", vec1=(vec1, 1), vec2=(vec2, 1))
    return beta_plus_alpha(input, outer(vec1, vec2), beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1,  # noqa: A002
            alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` for batches of matrices.

    Example:
        >>> import xad
        >>> xad.baddbmm(xad.ones(2, 1, 1), xad.ones(2, 1, 3), xad.ones(2, 3, 1)).flatten().tolist()
        [4.0, 4.0]
    """
    _dims("baddbmm", batch1=(batch1, 3), batch2=(batch2, 3))
    return beta_plus_alpha(input, matmul(batch1, batch2), beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1,  # noqa: A002
           alpha: Any = 1) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``.

    Example:
        >>> import xad
        >>> xad.addbmm(xad.zeros(1, 1), xad.ones(2, 1, 3), xad.ones(2, 3, 1)).tolist()
        [[6.0]]
    """
    _dims("addbmm", batch1=(batch1, 3), batch2=(batch2, 3))
    return beta_plus_alpha(input, _sum(matmul(batch1, batch2), axis=0), beta, alpha)


def _cov_weights(n: int, fweights: Tensor | None, aweights: Tensor | None) -> Tensor | None:
    for name, w in (("fweights", fweights), ("aweights", aweights)):
        if w is not None and (w.ndim > 1 or w.shape[-1:] != (n,)):
            raise ValueError(f"cov: {name} must be a vector of the {n} observations, got "
                             f"shape {w.shape}")
    if fweights is not None and fweights.dtype.is_floating:
        raise TypeError(f"cov: fweights must be integers, got {fweights.dtype}")
    if fweights is None:
        return aweights
    return fweights if aweights is None else fweights * aweights


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,  # noqa: A002
        aweights: Tensor | None = None) -> Tensor:
    """The covariance of the variables in the rows of ``input`` (a vector: one variable)
    over the observations in its columns, with integer frequency weights ``fweights`` and
    observation weights ``aweights`` and PyTorch's normalisation (``correction``).

    Example:
        >>> import xad
        >>> xad.cov(xad.tensor([[1.0, 2.0, 4.0], [0.0, 1.0, 2.0]]))[0, 1].item()
        1.5
    """
    if input.ndim > 2:
        raise ValueError(f"cov: expected a vector or a matrix of (variables, observations), "
                         f"got shape {input.shape}")
    x = input if input.ndim == 2 else reshape(input, (1, -1))
    if not (x.dtype.is_floating or x.dtype.name.startswith("complex")):
        x = x.float()
    n = x.shape[1]
    w = _cov_weights(n, fweights, aweights)
    if w is None:
        avg = _sum(x, axis=1) / n
        norm: Any = n - correction
    else:
        w_sum = _sum(w)
        avg = _sum(x * w, axis=1) / w_sum
        norm = w_sum if correction == 0 else w_sum - correction * (
            1 if aweights is None else _sum(w * aweights) / w_sum)
    if not isinstance(norm, Tensor) and norm <= 0:
        warnings.warn(f"cov: degrees of freedom <= 0 ({n} observations, correction "
                      f"{correction})", RuntimeWarning, stacklevel=2)
        norm = 0
    xm = x - expand_dims(avg, axis=1)
    c = matmul(xm if w is None else xm * w, conj(xm).mT) / norm
    return reshape(c, ()) if input.ndim < 2 else c


def corrcoef(input: Tensor) -> Tensor:  # noqa: A002
    """Pearson's correlation coefficients of the rows of ``input`` (``cov`` normalised by
    the standard deviations; real ones clipped to [-1, 1]).

    Example:
        >>> import xad
        >>> xad.corrcoef(xad.tensor([[1.0, 2.0, 4.0], [2.0, 4.0, 8.0]])).tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = diagonal(c)
    d = sqrt(real(d) if d.dtype.name.startswith("complex") else d)
    c = c / expand_dims(d, axis=1) / expand_dims(d, axis=0)
    return c if c.dtype.name.startswith("complex") else clip(c, -1, 1)


def trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The integral of ``y`` along ``dim`` by the trapezoidal rule: over the sample points
    ``x`` (a vector along ``dim``, or ``y``'s shape) or at spacing ``dx`` (default 1).

    Example:
        >>> import xad
        >>> xad.trapezoid(xad.tensor([1.0, 2.0, 4.0]), dx=2).item()
        9.0
    """
    if y.ndim == 0:
        raise ValueError("trapezoid: y must have at least one axis, got a 0-d tensor")
    if x is not None and dx is not None:
        raise TypeError("trapezoid: give the sample points x or the spacing dx, not both")
    axis = dim % y.ndim
    n = y.shape[axis]
    ends = y.narrow(axis, 0, max(n - 1, 0)) + y.narrow(axis, min(1, n), max(n - 1, 0))
    if not isinstance(x, Tensor):
        step = 1 if x is None and dx is None else (dx if x is None else x)
        return _sum(ends, axis=axis) * (step / 2)
    if x.ndim == 1:
        if x.shape[0] != n:
            raise ValueError(f"trapezoid: x of length {x.shape[0]} for {n} samples of y "
                             f"along axis {dim} (shape {y.shape})")
        d = reshape(diff(x), (-1,) + (1,) * (y.ndim - 1 - axis))
    else:
        d = diff(x, axis=dim)
    return _sum(d * ends, axis=axis) / 2

