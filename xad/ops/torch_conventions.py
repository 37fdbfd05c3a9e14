"""PyTorch's gradient conventions where they differ from the standard's functions.

``xad.f(...)`` follows the Array API standard and JAX's conventions at ties, kinks and zeros
(``xad.max`` shares the gradient among tied maxima, ``xad.std`` of a constant and
``xad.atan2(0, 0)`` give NaN gradients). Tensor methods, ``nn.functional`` and everything
``python -m xad.as_torch`` reaches follow PyTorch's, which live here: ``max(dim)`` gives
all of the gradient to the index it returns; ``std``, ``norm`` and ``atan2`` give 0, not
NaN, where their derivative is 0/0; ``cholesky``'s complex gradient keeps PyTorch's
non-Hermitian part. docs/PORTING.md tables each difference.
"""

from __future__ import annotations

from typing import Any

from ..factories import eye
from ..tensor import Tensor
from ._apply import apply, binary, unary
from .amp_cast import in_float32
from .axes import normalize_axis
from .batching import elementwise_batch
from .decompositions import Cholesky, _cholesky_grad, svdvals
from .elementwise import sign as _sign
from .elementwise import where
from .elementwise_math import Atan2, Copysign, Remainder, _remainder
from .inverses import _call, _check, _mH, solve
from .linalg import matmul
from .manipulation import moveaxis, tril
from .norms import sqrt_zero_grad
from .norms import vector_norm as _vector_norm
from .reduce import MaxDim, half_root, variance
from .shape import expand_dims

__all__ = ["max_dim", "var", "std", "norm", "vector_norm", "atan2", "copysign", "cholesky",
           "sign", "remainder"]


def max_dim(x: Tensor, dim: int, keepdim: bool = False, *,
            largest: bool = True) -> tuple[Tensor, Tensor]:
    """PyTorch's ``x.max(dim)`` (``largest=False``: ``x.min(dim)``): the values and their
    indices along ``dim``; the gradient goes all to the returned index, not shared among
    ties as :func:`xad.max` shares it.

    Example:
        >>> import xad
        >>> from xad.ops.torch_conventions import max_dim
        >>> x = xad.tensor([[1.0, 3.0, 3.0]], requires_grad=True)
        >>> v, i = max_dim(x, 1); v.sum().backward(); x.grad.tolist(), i.tolist()
        ([[0.0, 1.0, 0.0]], [1])
    """
    where_ = "max" if largest else "min"
    if x.ndim == 0:
        normalize_axis(dim, 1, where_)  # PyTorch's 0-d rule: dim 0 or -1
        return x * 1, (x.detach() == x.detach()).astype("int64") * 0  # (inf * 0 is NaN)
    a = normalize_axis(dim, x.ndim, where_)
    return apply(MaxDim, x, axis=(a,), keepdims=keepdim, largest=largest)


def var(x: Tensor, axis: Any = None, correction: float = 1, keepdims: bool = False) -> Tensor:
    """PyTorch's ``var`` (``correction=1`` by default): inf (NaN with no spread), not the
    standard's NaN, where ``N - correction <= 0``.

    Example:
        >>> import xad
        >>> from xad.ops import torch_conventions as tc
        >>> tc.var(xad.tensor([1.0, 2.0]), correction=2).item()
        inf
    """
    return variance(x, axis, correction, keepdims, pytorch=True)


def std(x: Tensor, axis: Any = None, correction: float = 1, keepdims: bool = False) -> Tensor:
    """PyTorch's ``std`` (``correction=1`` by default): 0, not NaN, the gradient of a
    constant; inf where ``N - correction <= 0`` as :func:`var`.

    Example:
        >>> import xad
        >>> from xad.ops import torch_conventions as tc
        >>> x = xad.ones(3, requires_grad=True)
        >>> tc.std(x).backward(); x.grad.tolist()
        [0.0, 0.0, 0.0]
    """
    if half_root(x):
        return in_float32(std, x, axis, correction, keepdims)
    return sqrt_zero_grad(var(x, axis, correction, keepdims))


def vector_norm(x: Tensor, ord: float = 2, dim: Any = None, keepdim: bool = False) -> Tensor:
    """PyTorch's ``torch.linalg.vector_norm``: gradient 0, not NaN, at a zero vector.

    Example:
        >>> import xad
        >>> from xad.ops import torch_conventions as tc
        >>> x = xad.zeros(2, requires_grad=True)
        >>> tc.vector_norm(x).backward(); x.grad.tolist()
        [0.0, 0.0]
    """
    return _vector_norm(x, ord, dim, keepdim, zero_grad=True)


def norm(x: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False) -> Tensor:
    """PyTorch's ``Tensor.norm``: ``p="fro"`` (the 2-norm of all elements or over ``dim``),
    ``"nuc"`` (the sum of singular values of a 2-D input or over two ``dim``) or a number,
    as :func:`vector_norm`.

    Example:
        >>> import xad
        >>> xad.tensor([3.0, 4.0]).norm().item()
        5.0
    """
    if p == "fro" or p is None:
        p = 2
    if p == "nuc":
        return _nuclear_norm(x, dim, keepdim)
    if isinstance(p, str):
        raise ValueError(f"norm: p={p!r} is not supported; use 'fro', 'nuc' or a number")
    if isinstance(dim, (tuple, list)) and not dim:
        dim = None  # PyTorch's: an empty dim is every dimension
    return vector_norm(x, p, dim, keepdim)


def _nuclear_norm(x: Tensor, dim: Any, keepdim: bool) -> Tensor:
    """The sum of the singular values of the matrices over ``dim`` (two axes; the last two
    of a 2-D input where ``dim`` is None, as PyTorch's)."""
    dims = (0, 1) if dim is None and x.ndim == 2 else dim
    if not isinstance(dims, (tuple, list)) or len(dims) != 2:
        raise ValueError(f"norm: p='nuc' needs a 2-D input or two dims, got shape "
                         f"{tuple(x.shape)} and dim={dim!r}")
    d0, d1 = (normalize_axis(d, x.ndim, "norm") for d in dims)
    out = svdvals(moveaxis(x, (d0, d1), (-2, -1))).sum(axis=-1)
    if keepdim:
        out = expand_dims(expand_dims(out, axis=min(d0, d1)), axis=max(d0, d1))
    return out


class _Atan2ZeroOrigin(Atan2):
    """``atan2`` whose gradient at ``(0, 0)`` is 0 (PyTorch's), not NaN."""

    zero_origin = True


def atan2(input: Any, other: Any) -> Tensor:
    """PyTorch's ``torch.atan2``: gradient 0 at ``(0, 0)`` (:func:`xad.atan2` gives NaN,
    as JAX).

    Example:
        >>> import xad
        >>> y = xad.zeros(1, requires_grad=True)
        >>> y.atan2(xad.zeros(1)).sum().backward(); y.grad.tolist()
        [0.0]
    """
    return binary(_Atan2ZeroOrigin, input, other)


class _RemainderZeroSignOfX(Remainder):
    """``remainder`` whose zero takes the sign of ``x`` (PyTorch's), not ``y``'s."""

    @staticmethod
    def forward(b, x, y):
        return _remainder(b, x, y, zero_sign_of_x=True)


def remainder(input: Any, other: Any) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.remainder``/``x.remainder(y)``: :func:`xad.remainder`'s values and
    gradients, but a zero takes the sign of ``input`` (C's ``fmod``'s), where the standard,
    Python and ``%`` give it ``other``'s.

    Example:
        >>> import xad
        >>> from xad.ops import torch_conventions as tc
        >>> x = xad.tensor([-4.0, 4.0])
        >>> tc.remainder(x, 2.0).tolist(), (x % 2.0).tolist()
        ([-0.0, 0.0], [0.0, 0.0])
    """
    return binary(_RemainderZeroSignOfX, input, other)


def sign(input: Tensor) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.sign``/``x.sign()``: :func:`xad.sign`, refusing a complex tensor as
    PyTorch does (its complex sign is ``sgn``; :func:`xad.sign` gives ``z / |z|``, the
    standard's).

    Example:
        >>> import xad
        >>> from xad.ops import torch_conventions as tc
        >>> tc.sign(xad.tensor([True, False])).tolist()
        [True, False]
    """
    if isinstance(input, Tensor) and input.dtype.is_complex:
        raise NotImplementedError(f"sign: PyTorch's sign refuses complex tensors "
                                  f"({input.dtype.name}, shape {tuple(input.shape)}); use "
                                  f"sgn(x), z / |z| (xad.sign gives it too)")
    return _sign(input)


class _CopysignZeroGrad(Copysign):
    """``copysign`` whose gradient at ``x1 == 0`` is 0 (PyTorch's ``result / self`` with
    0 where ``self`` is 0), not the sign's +-1."""

    @staticmethod
    def backward(node, g):
        gx, _ = Copysign.backward(node, g)
        return where(node.inputs[0] == 0, 0, gx), None

    @staticmethod
    def jvp(primals, tangents, out):
        t = Copysign.jvp(primals, tangents, out)
        return None if t is None else where(primals[0] == 0, 0, t)


def copysign(input: Any, other: Any) -> Tensor:
    """PyTorch's ``torch.copysign``: gradient 0 where ``input`` is 0 (:func:`xad.copysign`
    gives the sign's +-1 there).

    Example:
        >>> import xad
        >>> x = xad.tensor([0.0, 2.0], requires_grad=True)
        >>> x.copysign(-1.0).sum().backward(); x.grad.tolist()
        [0.0, -1.0]
    """
    return binary(_CopysignZeroGrad, input, other)


class _TorchCholesky(Cholesky):
    """PyTorch's ``linalg.cholesky``: ``upper`` reads the upper triangle and gives ``U``
    (``A = U^H U``); its gradient ``L^-H P L^-1``, ``P`` the lower triangle of ``L^H gL``
    halved and mirrored (its diagonal's imaginary part kept: :class:`Cholesky`'s Hermitian
    gradient drops it), the same matrix for either triangle; its tangent ``L phi(L^-1 dA
    L^-H)`` of the whole ``dA``, as PyTorch's ``cholesky_jvp``."""

    name = "torch_cholesky"

    @staticmethod
    def forward(b, x, upper):
        xp = b.xp
        if upper:
            x = xp.conj(xp.matrix_transpose(x))
        low = _call("cholesky", b, x)
        return xp.conj(xp.matrix_transpose(low)) if upper else low

    backward = staticmethod(_cholesky_grad)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out, upper):
        low = _mH(out) if upper else out
        x = solve(low, _mH(solve(low, _mH(tangents[0]))))  # L^-1 dA L^-H
        dl = matmul(low, tril(x) - 0.5 * x * eye(x.shape[-1], dtype=x.dtype,
                                                  backend=x._backend))
        return _mH(dl) if upper else dl


def cholesky(A: Tensor, upper: bool = False) -> Tensor:  # noqa: N803
    """PyTorch's ``torch.linalg.cholesky``: ``upper=True`` reads the upper triangle and
    gives ``U`` with ``A = U^H U``; PyTorch's gradient and tangent (:class:`_TorchCholesky`).

    Example:
        >>> import xad
        >>> from xad.ops import torch_conventions as tc
        >>> tc.cholesky(xad.tensor([[4.0, 2.0], [99.0, 2.0]]), upper=True).tolist()
        [[2.0, 1.0], [0.0, 1.0]]
    """
    _check("cholesky", A)
    return unary(_TorchCholesky, A, upper=upper)
