"""``weight_norm``, ``spectral_norm`` and ``orthogonal`` as parametrizations
(``torch.nn.utils.parametrizations``): registered with :func:`~xad.nn.parametrize.
register_parametrization`, with PyTorch's state keys (``parametrizations.weight.original0``,
``parametrizations.weight.0._u``, ``parametrizations.weight.0.base``)."""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
from .. import dtypes as _dt
from .. import linalg as _la
from .. import ops as _ops
from ..factories import eye, ones_like, randn, zeros
from ..ops.inverses import _mH
from ..tensor import Tensor
from . import functional as F
from . import parametrize
from .conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .module import Module

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

_ORTH_MAPS = ("matrix_exp", "cayley", "householder")


def norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every axis but ``dim``, kept as size-1 axes (PyTorch's
    ``norm_except_dim``); ``dim=-1`` means over all axes, a 0-d tensor (its quirk: ``-1``
    stands for ``dim=None``, not for the last axis)."""
    if dim == -1:
        return _la.vector_norm(v)
    d = dim % v.ndim
    axes = tuple(a for a in range(v.ndim) if a != d)
    return _la.vector_norm(v, axis=axes, keepdims=True) if axes else _ops.abs(v)


class _WeightNorm(Module):
    """``weight = g * v / ||v||`` (norm over every axis but ``dim``)."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_v * (weight_g / norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Split ``module.<name>`` into a magnitude ``original0`` (``g``) and a direction
    ``original1`` (``v``): ``weight = g * v / ||v||``, the norm over every axis but ``dim``
    (all of them for ``dim=None``), as ``torch.nn.utils.parametrizations.weight_norm``.

    Example:
        >>> import xad
        >>> m = xad.nn.utils.parametrizations.weight_norm(xad.nn.Linear(3, 2))
        >>> [(k[-9:], v.shape) for k, v in m.state_dict().items()]
        [('bias', (2,)), ('original0', (2, 1)), ('original1', (2, 3))]
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """``weight / sigma``, ``sigma`` the largest singular value estimated by power
    iteration on the buffers ``_u``, ``_v`` (one step per call in training)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if not -ndim <= dim < ndim:
            raise IndexError(f"spectral_norm: dim {dim} is out of range for a weight of "
                             f"{ndim} dimensions (shape {tuple(weight.shape)})")
        if n_power_iterations <= 0:
            raise ValueError(f"spectral_norm: n_power_iterations must be positive, got "
                             f"{n_power_iterations}")
        self.dim, self.eps = dim % ndim, eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._matrix(weight)
            h, w = mat.shape
            opts: dict[str, Any] = {"dtype": weight.dtype, "backend": weight.backend}
            self.register_buffer("_u", F.normalize(randn(h, **opts), dim=0, eps=eps))
            self.register_buffer("_v", F.normalize(randn(w, **opts), dim=0, eps=eps))
            self._power_method(mat, 15)

    def _matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = _ops.permute_dims(weight, (self.dim, *(d for d in range(weight.ndim)
                                                            if d != self.dim)))
        return weight.reshape(weight.shape[0], -1)

    def _power_method(self, mat: Tensor, n: int) -> None:
        with _ag.no_grad():
            mat = mat.detach()
            for _ in range(n):
                self._u.copy_(F.normalize(mat @ self._v, dim=0, eps=self.eps))
                self._v.copy_(F.normalize(_mH(mat) @ self._u, dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (_ops.conj(u) * (mat @ v)).sum() if u.dtype.is_complex else (u * (mat @ v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm, estimated by ``n_power_iterations``
    steps of power iteration per call in training (buffers ``_u``, ``_v``; eval reuses
    them), as ``torch.nn.utils.parametrizations.spectral_norm``; ``dim`` (the output axis:
    1 for ``ConvTranspose``, else 0) is the axis kept as rows of the matrix.

    Example:
        >>> import xad
        >>> m = xad.nn.utils.parametrizations.spectral_norm(xad.nn.Linear(4, 3))
        >>> round(float(xad.linalg.matrix_norm(m.weight.detach(), ord=2).item()), 3)
        1.0
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"spectral_norm: {type(module).__name__} has no parameter or buffer "
                         f"named {name!r}")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) \
            else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of ``a``'s QR with R's diagonal positive (PyTorch's, through geqrf)."""
    q, r = _la.qr(a)
    return q * _ops.expand_dims(_ops.sign(_la.diagonal(r)), axis=-2)


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    ident = eye(k, dtype=q.dtype, backend=q.backend)
    atol = 10.0 * n * _ops.finfo(q.dtype).eps
    return bool((_ops.abs(_mH(q) @ q - ident) <= atol + 1e-5 * ident).all().item())


def _geqrf(a: Tensor) -> tuple[Tensor, Tensor]:
    """LAPACK's ``geqrf`` of ``a`` (m x n, ``m >= n``, real): R on and above the diagonal,
    the Householder vectors (unit first entry implied) below it, and their ``tau``."""
    r, taus = a.clone(), []
    for j in range(a.shape[-1]):
        x = r[..., j:, j]
        alpha, rest = x[..., 0], x[..., 1:]
        flat = (rest * rest).sum(axis=-1) == 0  # H = I (LAPACK's dlarfg)
        beta = -_ops.sqrt(alpha * alpha + (rest * rest).sum(axis=-1)).copysign(alpha)
        tau = _ops.where(flat, 0.0 * alpha, (beta - alpha) / beta)
        scale = _ops.where(flat, 0.0 * alpha, 1.0 / (alpha - beta + flat.astype(a.dtype)))
        v = _ops.concat([ones_like(alpha)[..., None], rest * scale[..., None]], axis=-1)
        sub = r[..., j:, j + 1:]
        r[..., j:, j + 1:] = sub - tau[..., None, None] * (v[..., :, None] @ (
            v[..., None, :] @ sub))
        r[..., j, j] = _ops.where(flat, alpha, beta)
        r[..., j + 1:, j] = v[..., 1:]
        taus.append(tau)
    return r, _ops.stack(taus, axis=-1)


def _householder_reflectors(q: Tensor) -> Tensor:
    """PyTorch's ``right_inverse`` of the householder map without trivialization: the
    reflectors of ``q``'s QR with R's diagonal replaced by its signs (negated where
    ``tau`` is 0)."""
    with _ag.no_grad():
        transposed = q.shape[-2] < q.shape[-1]
        a, tau = _geqrf(q.mT if transposed else q)
        d = _ops.sign(_la.diagonal(a))
        d = _ops.where(tau == 0, -d, d)
        on = eye(a.shape[-2], a.shape[-1], dtype=_dt.bool_, backend=a.backend)
        a = _ops.where(on, _ops.expand_dims(d, axis=-2), a)
        return a.mT if transposed else a


class _Orthogonal(Module):
    """An orthogonal (unitary) matrix from an unconstrained one: the exponential or Cayley
    map of its skew-symmetric part, or a product of Householder reflections; with
    ``use_trivialization`` times the buffer ``base`` (set by ``right_inverse``)."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.dtype.is_complex and orthogonal_map == "householder":
            raise ValueError("orthogonal: the householder map does not support complex "
                             f"tensors (got {weight.dtype}); use matrix_exp or cayley")
        self.shape, self.orthogonal_map = tuple(weight.shape), orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x, n, k = x.mT, k, n
        if self.orthogonal_map == "householder":
            a = _ops.tril(x, k=-1)
            q = _la._householder_product(a, 2.0 / (1.0 + (a * a).sum(axis=-2)))
            q = q * _ops.expand_dims(_ops.trunc(_la.diagonal(x).detach()), axis=-2)
        else:
            x = _ops.tril(x)
            if n != k:
                x = _ops.concat([x, zeros((*x.shape[:-2], n, n - k), dtype=x.dtype,
                                          backend=x.backend)], axis=-1)
            a = x - _mH(x)
            if self.orthogonal_map == "matrix_exp":
                q = _la.matrix_exp(a)
            else:
                ident = eye(n, dtype=a.dtype, backend=a.backend)
                q = _la.solve(ident - 0.5 * a, ident + 0.5 * a)
            q = q[..., :k] if n != k else q
        if "base" in self._buffers:
            q = self.base @ q
        return q.mT if transposed else q

    def right_inverse(self, q: Tensor) -> Tensor:
        if tuple(q.shape) != self.shape:
            raise ValueError(f"orthogonal: expected a matrix or batch of matrices of shape "
                             f"{self.shape}, got {tuple(q.shape)}")
        if "base" not in self._buffers:
            if self.orthogonal_map != "householder":
                raise NotImplementedError("orthogonal: a value cannot be assigned under the "
                                          "matrix_exp or cayley maps with "
                                          "use_trivialization=False")
            return _householder_reflectors(q)
        with _ag.no_grad():
            q0, n, k = q, q.shape[-2], q.shape[-1]
            if n < k:
                q, n, k = q.mT, k, n
            if n != k:
                extra = randn(*q.shape[:-2], n, n - k, dtype=q.dtype, backend=q.backend)
                q = _make_orthogonal(_ops.concat([q, extra], axis=-1))
            else:
                q = q.clone() if _is_orthogonal(q) else _make_orthogonal(q)
            self.base = q
            shape = tuple(q0.shape)
            return zeros(shape, dtype=q0.dtype, backend=q0.backend) - _ops.broadcast_to(
                eye(shape[-2], shape[-1], dtype=q0.dtype, backend=q0.backend), shape)


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Keep ``module.<name>`` (a matrix, or a batch of them) orthogonal, or unitary, as
    ``torch.nn.utils.parametrizations.orthogonal``: ``orthogonal_map`` is ``"matrix_exp"``
    (the default for square or complex matrices), ``"cayley"`` or ``"householder"`` (the
    default otherwise); with ``use_trivialization`` the map is taken at the identity and
    multiplied by the buffer ``base`` (the orthogonalised initial weight).

    Example:
        >>> import xad
        >>> m = xad.nn.utils.parametrizations.orthogonal(xad.nn.Linear(3, 3))
        >>> w = m.weight.detach(); bool(xad.allclose(w @ w.mT, xad.eye(3), atol=1e-5))
        True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"orthogonal: {type(module).__name__} has no parameter or buffer "
                         f"named {name!r}")
    if weight.ndim < 2:
        raise ValueError(f"orthogonal: expected a matrix or batch of matrices, got a tensor "
                         f"of shape {tuple(weight.shape)}")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.dtype.is_complex else "householder"
    if orthogonal_map not in _ORTH_MAPS:
        raise ValueError(f"orthogonal: orthogonal_map must be one of {_ORTH_MAPS}, got "
                         f"{orthogonal_map!r}")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
