"""Initialisers that fill a tensor in place (PyTorch's ``torch.nn.init`` names and formulas).

Random values come from the tensor's backend's seeded generator (``xad.manual_seed``), in the
tensor's dtype; the tensor keeps its identity, so an optimiser holding it is unaffected.
"""

from __future__ import annotations

import math
import warnings

from .. import autograd as _ag
from .. import dtypes as _dt
from .. import linalg as _linalg
from .. import ops as _ops
from ..factories import eye, full, rand, randn
from ..generator import Generator
from ..tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "trunc_normal_", "orthogonal_", "sparse_", "dirac_", "eye_"]


def _fill(t: Tensor, values: Tensor) -> Tensor:
    """Copy ``values`` into ``t`` in place, through to its base when ``t`` is a view (an
    initialiser of ``w[:k]`` changes ``w``, as in PyTorch)."""
    with _ag.no_grad():
        t.copy_(values)
    return t


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a non-linearity (PyTorch's table).

    Example:
        >>> import xad
        >>> round(xad.nn.init.calculate_gain("relu"), 4)
        1.4142
    """
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
              "conv_transpose2d", "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is not None and (isinstance(param, bool) or
                                  not isinstance(param, (int, float))):
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a valid number "
                             f"(leaky_relu takes an int or float slope, as PyTorch's)")
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(t: Tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight ``(out, in, *kernel)``: PyTorch's private helper of
    this name, which layers' ``reset_parameters`` call (``torch.nn.init`` under
    ``xad.as_torch`` has it)."""
    if t.ndim < 2:
        raise ValueError(f"fan in and fan out need a tensor with at least 2 dimensions, got "
                         f"shape {t.shape}")
    receptive = math.prod(t.shape[2:])
    return t.shape[1] * receptive, t.shape[0] * receptive


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0,
             generator: Generator | None = None) -> Tensor:
    """Fill with samples from ``U(a, b)``.

    Example:
        >>> import xad
        >>> w = xad.nn.init.uniform_(xad.zeros(100), -1, 1)
        >>> bool((w.abs() <= 1).all())
        True
    """
    if a > b:
        raise ValueError(f"uniform_: the range [a, b) needs a <= b, got a={a}, b={b}")
    u = rand(*tensor.shape, dtype=tensor.dtype, backend=tensor._backend, generator=generator)
    return _fill(tensor, u * (b - a) + a)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0,
            generator: Generator | None = None) -> Tensor:
    """Fill with samples from ``N(mean, std**2)``."""
    if std < 0:
        raise ValueError(f"normal_: std must be non-negative, got {std}")
    z = randn(*tensor.shape, dtype=tensor.dtype, backend=tensor._backend, generator=generator)
    return _fill(tensor, z * std + mean)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``.

    Example:
        >>> import xad
        >>> xad.nn.init.constant_(xad.zeros(2), 3.0).tolist()
        [3.0, 3.0]
    """
    return _fill(tensor, full(tensor.shape, val, dtype=tensor.dtype, backend=tensor._backend))


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0,
                    generator: Generator | None = None) -> Tensor:
    """Glorot: ``U(-b, b)`` with ``b = gain * sqrt(6 / (fan_in + fan_out))``."""
    if _zero_element(tensor):
        return tensor
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0,
                   generator: Generator | None = None) -> Tensor:
    """Glorot: ``N(0, std**2)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))``.

    Example:
        >>> import xad
        >>> xad.nn.init.xavier_normal_(xad.zeros(3, 4)).shape
        (3, 4)
    """
    if _zero_element(tensor):
        return tensor
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _zero_element(tensor: Tensor) -> bool:
    """Whether ``tensor`` has no elements (initialising it is a no-op, as in PyTorch)."""
    if 0 not in tensor.shape:
        return False
    warnings.warn(f"Initializing zero-element tensors is a no-op (shape {tensor.shape})",
                  stacklevel=3)
    return True


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"kaiming init: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    if _zero_element(tensor):
        return 0.0  # nothing to draw: the fill below is a no-op
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    """He: ``U(-b, b)`` with ``b = gain * sqrt(3 / fan)`` (``gain`` from ``nonlinearity``;
    ``a`` is the leaky-ReLU slope).

    Example:
        >>> import xad
        >>> w = xad.nn.init.kaiming_uniform_(xad.zeros(10, 6), nonlinearity="relu")
        >>> bool((w.abs() <= 1.0).all())
        True
    """
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu",
                    generator: Generator | None = None) -> Tensor:
    """He: ``N(0, std**2)`` with ``std = gain / sqrt(fan)``.

    Example:
        >>> import xad
        >>> xad.nn.init.kaiming_normal_(xad.zeros(4, 3), nonlinearity="relu").shape
        (4, 3)
    """
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def _default_reset(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's default initialisation of Linear and convolution layers: the weight by
    ``kaiming_uniform_(a=sqrt(5))``, the bias from ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in = _calculate_fan_in_and_fan_out(weight)[0]
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        uniform_(bias, -bound, bound)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator: Generator | None = None) -> Tensor:
    """Fill with samples from ``N(mean, std**2)`` truncated to ``[a, b]`` (PyTorch's inverse
    CDF method: a uniform draw between the bounds' CDF values mapped through ``erfinv``,
    then clamped to ``[a, b]`` against rounding).

    Example:
        >>> import xad
        >>> w = xad.nn.init.trunc_normal_(xad.zeros(1000), std=2.0, a=-1.0, b=3.0)
        >>> bool(((w >= -1.0) & (w <= 3.0)).all())
        True
    """
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)

    def cdf(v: float) -> float:
        return (1.0 + math.erf((v - mean) / std / math.sqrt(2.0))) / 2.0

    lo, hi = 2 * cdf(a) - 1, 2 * cdf(b) - 1
    u = rand(*tensor.shape, dtype=tensor.dtype, backend=tensor._backend, generator=generator)
    with _ag.no_grad():
        v = _ops.erfinv(u * (hi - lo) + lo) * (std * math.sqrt(2.0)) + mean
        return _fill(tensor, _ops.clip(v, a, b))


def orthogonal_(tensor: Tensor, gain: float = 1.0,
                generator: Generator | None = None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix times ``gain``: the Q of a Gaussian matrix's QR
    (signs fixed by R's diagonal, so Q is uniformly distributed), the tensor seen as
    ``(shape[0], rest)``; rows orthonormal for a wide shape, columns for a tall one.

    Example:
        >>> import xad
        >>> q = xad.nn.init.orthogonal_(xad.zeros(4, 3, dtype=xad.float64))
        >>> bool(xad.allclose(q.T @ q, xad.eye(3, dtype=xad.float64)))
        True
    """
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: only tensors with 2 or more dimensions are supported "
                         f"(got shape {tensor.shape})")
    if tensor.size == 0:
        return tensor  # PyTorch's: nothing to fill
    rows = tensor.shape[0]
    cols = tensor.size // rows
    flat = randn(rows, cols, dtype=tensor.dtype, backend=tensor._backend, generator=generator)
    with _ag.no_grad():
        if rows < cols:
            flat = _ops.matrix_transpose(flat)
        q, r = _linalg.qr(flat)
        q = q * _ops.sign(_ops.diagonal(r))
        if rows < cols:
            q = _ops.matrix_transpose(q)
        return _fill(tensor, _ops.reshape(q * gain, tuple(tensor.shape)))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01,
            generator: Generator | None = None) -> Tensor:
    """Fill a 2-d tensor from ``N(0, std**2)`` with ``ceil(sparsity * rows)`` zeros in each
    column, at rows drawn at random (PyTorch's ``sparse_``).

    Example:
        >>> import xad
        >>> w = xad.nn.init.sparse_(xad.zeros(4, 3), sparsity=0.5)
        >>> (w == 0).sum(axis=0).tolist()
        [2, 2, 2]
    """
    if tensor.ndim != 2:
        raise ValueError(f"sparse_: only tensors with 2 dimensions are supported (got shape "
                         f"{tensor.shape})")
    rows, cols = tensor.shape
    zeros = math.ceil(sparsity * rows)
    z = randn(rows, cols, dtype=tensor.dtype, backend=tensor._backend, generator=generator)
    u = rand(rows, cols, dtype=_dt.float64, backend=tensor._backend, generator=generator)
    with _ag.no_grad():
        rank = _ops.argsort(_ops.argsort(u, axis=0), axis=0)  # a random permutation per column
        return _fill(tensor, _ops.where(rank < zeros, 0.0, z * std))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-d convolution weight with the Dirac delta: each of the first
    ``min(out_channels // groups, in_channels)`` output channels of every group passes its
    input channel through unchanged (PyTorch's ``dirac_``).

    Example:
        >>> import xad
        >>> w = xad.nn.init.dirac_(xad.zeros(2, 2, 3))
        >>> w[:, :, 1].tolist(), float(w.sum())
        ([[1.0, 0.0], [0.0, 1.0]], 2.0)
    """
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"dirac_: only tensors with 3, 4, or 5 dimensions are supported "
                         f"(got shape {tensor.shape})")
    out, inp = tensor.shape[:2]
    if groups < 1 or out % groups:
        raise ValueError(f"dirac_: dim 0 ({out}) must be divisible by groups ({groups})")
    per = out // groups
    n = min(per, inp)
    rows = [g * per + d for g in range(groups) for d in range(n)]
    centre = tuple([s // 2] * len(rows) for s in tensor.shape[2:])
    key = (rows, [d for _ in range(groups) for d in range(n)], *centre)
    w = full(tuple(tensor.shape), 0, dtype=tensor.dtype, backend=tensor._backend)
    with _ag.no_grad():
        if rows:
            w[key] = 1
        return _fill(tensor, w)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-d tensor with the identity (ones on the main diagonal).

    Example:
        >>> import xad
        >>> xad.nn.init.eye_(xad.zeros(2, 3)).tolist()
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """
    if tensor.ndim != 2:
        raise ValueError(f"eye_: only tensors with 2 dimensions are supported (got shape "
                         f"{tensor.shape})")
    n, m = tensor.shape
    return _fill(tensor, eye(n, m, dtype=tensor.dtype, backend=tensor._backend))
