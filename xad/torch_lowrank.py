"""PyTorch's randomised low-rank decompositions, ``torch.svd_lowrank`` and
``torch.pca_lowrank``, for ``python -m xad.as_torch``: Halko, Martinsson and Tropp's range
finder (their algorithm 4.4, ``niter`` power iterations with a QR after each product) and
an SVD of the small projected matrix, as ``torch._lowrank``; the Gaussian test matrix
comes from xad's generator (so the draws are not PyTorch's). Composed from xad's
differentiable operations: gradients flow through the QR and SVD, as PyTorch's."""

from __future__ import annotations

from . import linalg as _la
from . import ops as _ops
from .factories import randn
from .ops.inverses import _mH
from .tensor import Tensor

__all__ = ["svd_lowrank", "pca_lowrank"]


def _basis(A: Tensor, q: int, niter: int, M: Tensor | None) -> Tensor:  # noqa: N803
    """An orthonormal ``(*, m, q)`` basis approximately spanning the range of ``A - M``."""
    def times(x: Tensor, adjoint: bool = False) -> Tensor:
        a, m = (_mH(A), None if M is None else _mH(M)) if adjoint else (A, M)
        return a @ x if m is None else a @ x - m @ x
    r = randn(A.shape[-1], q, dtype=A.dtype, backend=A.backend)
    basis = _la.qr(times(r)).Q
    for _ in range(niter):
        basis = _la.qr(times(_la.qr(times(basis, adjoint=True)).Q)).Q
    return basis


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int = 2,  # noqa: N803
                M: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:  # noqa: N803
    """``torch.svd_lowrank``: ``(U, S, V)`` with ``A - M ~= U diag(S) V^H`` of rank ``q``
    (``M`` broadcast to ``A``'s shape; default none), from ``niter`` power iterations.

    Example:
        >>> import xad
        >>> from xad.torch_lowrank import svd_lowrank
        >>> a = xad.tensor([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=xad.float64)
        >>> [round(s, 9) for s in svd_lowrank(a, q=2)[1].tolist()]
        [2.0, 1.0]
    """
    q = 6 if q is None else q
    m, n = A.shape[-2], A.shape[-1]
    if M is not None:
        M = _ops.broadcast_to(M, tuple(A.shape))  # noqa: N806
    if m < n:  # the range of the thinner side
        A, M = _mH(A), None if M is None else _mH(M)  # noqa: N806
    basis = _basis(A, q, niter, M)
    b = _mH(basis) @ A if M is None else _mH(basis) @ A - _mH(basis) @ M
    u, s, vh = _la.svd(b, full_matrices=False)
    u, v = basis @ u, _mH(vh)
    return (v, s, u) if m < n else (u, s, v)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True,  # noqa: N803
                niter: int = 2) -> tuple[Tensor, Tensor, Tensor]:
    """``torch.pca_lowrank``: :func:`svd_lowrank` of ``A`` less its column means (``center``)
    with ``q`` defaulting to ``min(6, m, n)``: principal directions in ``V``.

    Example:
        >>> import xad
        >>> from xad.torch_lowrank import pca_lowrank
        >>> a = xad.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], dtype=xad.float64)
        >>> round(pca_lowrank(a, q=1)[1].item() ** 2 / 2, 9)  # the variance along (1, 1)
        2.0
    """
    m, n = A.shape[-2], A.shape[-1]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)"
                         f"={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter)
    return svd_lowrank(A - _ops.mean(A, axis=-2, keepdims=True), q, niter=niter)

