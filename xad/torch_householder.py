"""PyTorch's Householder-reflector functions, for ``python -m xad.as_torch``: ``torch.geqrf``
(LAPACK's ``geqrf`` layout: ``R`` on and above the diagonal, the reflectors' vectors below
it, their scales ``tau``), ``torch.ormqr`` (a product with ``Q`` without forming it) and the
tensor methods ``x.geqrf()``, ``x.orgqr(tau)``, ``x.ormqr(tau, other)``.

``geqrf`` is a Householder QR of xad's own on the backend, with LAPACK's ``larfg``
conventions (``beta = -sign(Re alpha) |(alpha, x)|``, ``tau = (beta - alpha) / beta``, no
reflection where the column below the diagonal is already 0), so its numbers are LAPACK's
(PyTorch's) up to rounding. Not differentiable, as PyTorch's; ``ormqr`` is composed from
xad's operations and differentiable in all three inputs.
"""

from __future__ import annotations

from typing import NamedTuple

from . import ops as _ops
from .factories import eye, ones_like, zeros
from .ops.complex_parts import conj
from .ops.inverses import _mH
from .tensor import Tensor, install_methods
from .torch_linalg import householder_product

__all__ = ["geqrf", "ormqr"]


class GeqrfResult(NamedTuple):
    """``torch.geqrf``'s result."""

    a: Tensor
    tau: Tensor


def _reflector(col: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """LAPACK's ``larfg`` on the columns ``col`` (``(*, r)``): ``beta`` (the new diagonal),
    ``tau``, and the vector's part below its leading 1."""
    alpha, x = col[..., 0], col[..., 1:]
    xnorm2 = _ops.sum(_ops.real(x * conj(x)) if x.dtype.is_complex else x * x, axis=-1)
    re = _ops.real(alpha) if alpha.dtype.is_complex else alpha
    im2 = _ops.imag(alpha) ** 2 if alpha.dtype.is_complex else 0 * re
    keep = (xnorm2 == 0) & (im2 == 0)  # H = I: nothing to annihilate
    beta = _ops.where(re >= 0, -1.0, 1.0) * _ops.sqrt(re * re + im2 + xnorm2)
    beta = _ops.where(keep, 1.0, beta)  # (a placeholder where H = I)
    tau = _ops.where(keep, 0.0, (beta - alpha) / beta)
    scale = _ops.where(keep, 1.0, 1.0 / (alpha - beta))
    v = x * _ops.expand_dims(scale, axis=-1)
    return _ops.where(keep, alpha, beta), tau, v


def geqrf(input: Tensor) -> GeqrfResult:  # noqa: A002
    """``torch.geqrf``: the QR factorisation of a (batch of) m x n matrices in LAPACK's
    packed form, ``(a, tau)``; ``torch.linalg.householder_product(a, tau)`` is ``Q``.

    Example:
        >>> import xad
        >>> from xad.torch_householder import geqrf
        >>> a, tau = geqrf(xad.tensor([[3.0, 1.0], [4.0, 2.0]], dtype=xad.float64))
        >>> a.tolist()[0], tau.tolist()
        ([-5.0, -2.2], [1.6, 0.0])
    """
    if input.ndim < 2:
        raise RuntimeError(f"torch.geqrf: The input tensor A must have at least 2 dimensions, "
                           f"got shape {tuple(input.shape)}")
    a = input.detach()
    m, n = a.shape[-2], a.shape[-1]
    taus = []
    for i in range(min(m, n)):
        top, bottom = a[..., :i, :], a[..., i:, :]
        diag, tau, v = _reflector(bottom[..., i])
        vec = _ops.concat([ones_like(diag[..., None]), v], axis=-1)[..., None]
        rest = bottom[..., i + 1:]
        rest = rest - conj(tau)[..., None, None] * (vec @ (_mH(vec) @ rest))
        col = _ops.concat([diag[..., None], v], axis=-1)[..., None]
        a = _ops.concat([top, _ops.concat([bottom[..., :i], col, rest], axis=-1)], axis=-2)
        taus.append(tau)
    tau_all = _ops.stack(taus, axis=-1) if taus else \
        zeros((*a.shape[:-2], 0), dtype=a.dtype, backend=a.backend)
    return GeqrfResult(a, tau_all)


def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True,  # noqa: A002
          transpose: bool = False) -> Tensor:
    """``torch.ormqr``: ``other`` (``input3``) multiplied by ``Q = H_1 ... H_k`` of
    :func:`geqrf`'s reflectors (``input``, ``tau`` = ``input2``): ``Q C`` (``left``) or
    ``C Q``, with ``Q^H`` where ``transpose``; differentiable.

    Example:
        >>> import xad
        >>> from xad.torch_householder import geqrf, ormqr
        >>> a, tau = geqrf(xad.tensor([[3.0, 1.0], [4.0, 2.0]], dtype=xad.float64))
        >>> [round(v, 6) for v in ormqr(a, tau, xad.eye(2, dtype=xad.float64))[:, 0].tolist()]
        [-0.6, -0.8]
    """
    a, tau, c = input, input2, input3
    _ormqr_check(a, tau, c, left)
    mn, k = a.shape[-2], tau.shape[-1]
    v = _ops.tril(a[..., :k], k=-1) + eye(mn, k, dtype=a.dtype, backend=a.backend)
    order = range(k) if left == transpose else reversed(range(k))
    for i in order:
        vi = v[..., i:i + 1]
        t = _ops.expand_dims(tau[..., i:i + 1], axis=-1)
        t = conj(t) if transpose else t
        c = c - t * (vi @ (_mH(vi) @ c)) if left else c - t * ((c @ vi) @ _mH(vi))
    return c


def _ormqr_check(a: Tensor, tau: Tensor, c: Tensor, left: bool) -> None:
    """PyTorch's refusals."""
    if a.ndim < 2 or c.ndim < 2:
        raise RuntimeError(f"torch.ormqr: input and other must have at least 2 dimensions, got "
                           f"shapes {tuple(a.shape)} and {tuple(c.shape)}")
    rows = c.shape[-2] if left else c.shape[-1]
    if a.shape[-2] != rows:
        raise RuntimeError(f"torch.ormqr: input.shape[-2] must be equal to other.shape"
                           f"[{-2 if left else -1}], got input {tuple(a.shape)} and other "
                           f"{tuple(c.shape)}")
    if tau.shape[-1] > a.shape[-1] or tau.shape[-1] > a.shape[-2]:
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be less than or equal to "
                           f"input.shape[-1] and input.shape[-2], got tau {tuple(tau.shape)}, "
                           f"input {tuple(a.shape)}")
    if tuple(tau.shape[:-1]) != tuple(a.shape[:-2]) or \
            tuple(c.shape[:-2]) != tuple(a.shape[:-2]):
        raise RuntimeError(f"torch.ormqr: the batch dimensions of input {tuple(a.shape)}, tau "
                           f"{tuple(tau.shape)} and other {tuple(c.shape)} must be equal")
    if not (a.dtype == tau.dtype == c.dtype):
        raise RuntimeError(f"torch.ormqr: input ({a.dtype}), tau ({tau.dtype}) and other "
                           f"({c.dtype}) must have the same dtype")


install_methods({"geqrf": geqrf, "ormqr": ormqr, "orgqr": householder_product})
