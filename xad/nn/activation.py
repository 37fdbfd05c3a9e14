"""Activation layers: ``ReLU Tanh Sigmoid GELU Softplus Softmax LogSoftmax LeakyReLU ELU
CELU SELU SiLU Mish Hardtanh ReLU6 Hardsigmoid Hardswish LogSigmoid Softsign Tanhshrink GLU
PReLU``."""

from __future__ import annotations

from typing import Any

from .. import dtypes as _dt
from ..factories import full
from ..tensor import Tensor
from . import functional as F
from . import init as _init
from .module import Module, Parameter

__all__ = ["ReLU", "Tanh", "Sigmoid", "GELU", "Softplus", "Softmax", "LogSoftmax", "Softmin",
           "LeakyReLU", "RReLU", "ELU", "CELU", "SELU", "SiLU", "Mish", "Hardtanh", "ReLU6",
           "Hardsigmoid", "Hardswish", "LogSigmoid", "Softsign", "Tanhshrink", "GLU", "PReLU",
           "Softshrink", "Hardshrink", "Threshold", "Softmax2d"]


class ReLU(Module):
    """``max(x, 0)``; with ``inplace=True`` written into the input, which is returned
    (PyTorch's meaning).

    Example:
        >>> import xad
        >>> xad.nn.ReLU()(xad.tensor([-1.0, 2.0])).tolist()
        [0.0, 2.0]
        >>> x = xad.tensor([-1.0, 2.0]); _ = xad.nn.ReLU(inplace=True)(x); x.tolist()
        [0.0, 2.0]
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x, self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""

    def _as_activation(self) -> str | None:
        """The activation a preceding ``Linear`` may apply itself (``Linear._then``)."""
        return "relu" if type(self) is ReLU else None


class Tanh(Module):
    """Hyperbolic tangent."""

    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Sigmoid(Module):
    """Logistic sigmoid."""

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class Softplus(Module):
    """``log(1 + exp(beta x)) / beta``; ``x`` where ``beta x > threshold``.

    Example:
        >>> import xad
        >>> round(xad.nn.Softplus(beta=2.0)(xad.tensor([0.0])).item(), 4)
        0.3466
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x: Tensor) -> Tensor:
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class GELU(Module):
    """GELU, exact or with ``approximate="tanh"``.

    Example:
        >>> import xad
        >>> round(xad.nn.GELU()(xad.tensor([1.0])).item(), 4)
        0.8413
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return F.gelu(x, self.approximate)

    def _as_activation(self) -> str | None:
        """The activation a preceding ``Linear`` may apply itself (``Linear._then``)."""
        return "gelu" if type(self) is GELU and self.approximate == "none" else None

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softmax(Module):
    """Softmax along ``dim`` (PyTorch's keyword; ``None``: the last axis of an input of at
    most 2 dimensions, an error for more, as :func:`xad.nn.functional.softmax`).

    Example:
        >>> import xad
        >>> xad.nn.Softmax(dim=-1)(xad.zeros(1, 4)).tolist()
        [[0.25, 0.25, 0.25, 0.25]]
    """

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, axis=self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """Log-softmax along ``dim``, computed stably."""

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, axis=self.dim)


class Softmin(Softmax):
    """``softmax(-x)`` along ``dim``.

    Example:
        >>> import xad
        >>> [round(v, 4) for v in xad.nn.Softmin(dim=-1)(xad.tensor([0.0, 1.0])).tolist()]
        [0.7311, 0.2689]
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.softmin(x, axis=self.dim)


class _Elementwise(Module):
    """An activation without parameters: ``F.<fn>(x, **self._kw)``; with ``inplace=True``
    written into the input, which is returned (PyTorch's meaning)."""

    _fn: Any = None

    def __init__(self, inplace: bool = False, **kw: Any) -> None:
        super().__init__()
        self.inplace = inplace
        self._kw = kw
        for k, v in kw.items():
            object.__setattr__(self, k, v)

    def forward(self, x: Tensor) -> Tensor:
        kw = {k: getattr(self, k) for k in self._kw}
        return type(self)._fn(x, **kw, inplace=True) if self.inplace else type(self)._fn(x, **kw)

    def extra_repr(self) -> str:
        s = ", ".join(f"{k}={getattr(self, k)}" for k in self._kw)
        return s + (", inplace=True" if self.inplace and s else "inplace=True" if self.inplace
                    else "")


class LeakyReLU(_Elementwise):
    """``x`` where positive, else ``negative_slope * x``.

    Example:
        >>> import xad
        >>> xad.nn.LeakyReLU(0.5)(xad.tensor([-2.0, 1.0])).tolist()
        [-1.0, 1.0]
    """

    _fn = staticmethod(F.leaky_relu)

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__(inplace, negative_slope=negative_slope)


class RReLU(Module):
    """Randomized leaky ReLU (:func:`xad.nn.functional.rrelu`): a random negative slope
    in ``[lower, upper]`` per element in training, their mean in evaluation.

    Example:
        >>> import xad
        >>> xad.nn.RReLU(0.25, 0.75).eval()(xad.tensor([-2.0, 1.0])).tolist()
        [-1.0, 1.0]
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.rrelu(x, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace
                                                           else "")


class ELU(_Elementwise):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""

    _fn = staticmethod(F.elu)

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__(inplace, alpha=alpha)


class CELU(_Elementwise):
    """``x`` where positive, else ``alpha * (exp(x / alpha) - 1)``."""

    _fn = staticmethod(F.celu)

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__(inplace, alpha=alpha)


class SELU(_Elementwise):
    """Scaled ELU with the self-normalising constants."""

    _fn = staticmethod(F.selu)


class SiLU(_Elementwise):
    """``x * sigmoid(x)``."""

    _fn = staticmethod(F.silu)


class Mish(_Elementwise):
    """``x * tanh(softplus(x))``."""

    _fn = staticmethod(F.mish)


class Hardtanh(_Elementwise):
    """``x`` clamped to ``[min_val, max_val]``.

    Example:
        >>> import xad
        >>> xad.nn.Hardtanh(-2.0, 2.0)(xad.tensor([-3.0, 3.0])).tolist()
        [-2.0, 2.0]
    """

    _fn = staticmethod(F.hardtanh)

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
                 ) -> None:
        super().__init__(inplace, min_val=min_val, max_val=max_val)


class ReLU6(_Elementwise):
    """``min(max(x, 0), 6)``."""

    _fn = staticmethod(F.relu6)


class Hardsigmoid(_Elementwise):
    """``relu6(x + 3) / 6``."""

    _fn = staticmethod(F.hardsigmoid)


class Hardswish(_Elementwise):
    """``x * relu6(x + 3) / 6``."""

    _fn = staticmethod(F.hardswish)


class LogSigmoid(_Elementwise):
    """``log(sigmoid(x))``, stably."""

    _fn = staticmethod(F.logsigmoid)

    def __init__(self) -> None:  # PyTorch's has no inplace
        super().__init__()


class Softsign(_Elementwise):
    """``x / (1 + |x|)``."""

    _fn = staticmethod(F.softsign)

    def __init__(self) -> None:  # PyTorch's has no inplace
        super().__init__()


class Tanhshrink(_Elementwise):
    """``x - tanh(x)``."""

    _fn = staticmethod(F.tanhshrink)

    def __init__(self) -> None:  # PyTorch's has no inplace
        super().__init__()


class _Shrink(_Elementwise):
    """A shrinking activation of one parameter, ``lambd`` (PyTorch's have no inplace)."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__(lambd=lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(_Shrink):
    """``x -+ lambd`` outside ``[-lambd, lambd]``, else 0.

    Example:
        >>> import xad
        >>> xad.nn.Softshrink(1.0)(xad.tensor([-3.0, 0.5, 2.0])).tolist()
        [-2.0, 0.0, 1.0]
    """

    _fn = staticmethod(F.softshrink)


class Hardshrink(_Shrink):
    """``x`` outside ``[-lambd, lambd]``, else 0.

    Example:
        >>> import xad
        >>> xad.nn.Hardshrink(1.0)(xad.tensor([-3.0, 0.5, 2.0])).tolist()
        [-3.0, 0.0, 2.0]
    """

    _fn = staticmethod(F.hardshrink)


class Threshold(_Elementwise):
    """``x`` where ``x > threshold``, else ``value``.

    Example:
        >>> import xad
        >>> xad.nn.Threshold(0.5, -1.0)(xad.tensor([0.0, 2.0])).tolist()
        [-1.0, 2.0]
    """

    _fn = staticmethod(F.threshold)

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__(inplace, threshold=threshold, value=value)


class Softmax2d(Module):
    """Softmax over the channels of ``(N, C, H, W)`` or ``(C, H, W)`` input (axis -3).

    Example:
        >>> import xad
        >>> xad.nn.Softmax2d()(xad.zeros(1, 2, 1, 1)).flatten().tolist()
        [0.5, 0.5]
    """

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected (N, C, H, W) or (C, H, W) input, got "
                             f"shape {x.shape}")
        return F.softmax(x, axis=-3)


class GLU(Module):
    """Gated linear unit along ``dim``: ``a * sigmoid(b)`` for the two halves ``a, b``.

    Example:
        >>> import xad
        >>> xad.nn.GLU()(xad.zeros(2, 4)).shape
        (2, 2)
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.glu(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """``x`` where positive, else ``weight * x`` with a learnt ``weight`` of
    ``num_parameters`` entries (one, or one per channel), initialised to ``init``.

    Example:
        >>> import xad
        >>> m = xad.nn.PReLU(2)
        >>> m(xad.tensor([[-1.0, 2.0]])).tolist(), m.weight.shape
        ([[-0.25, 2.0]], (2,))
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25,
                 dtype: _dt.DType | None = None, backend: Any = None) -> None:
        super().__init__()
        from .linear import _resolve
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(full((num_parameters,), init, dtype=dtype,
                                     backend=_resolve(backend)))

    def reset_parameters(self) -> None:
        """Set every slope back to ``init``."""
        _init.constant_(self.weight, self.init)

    def forward(self, x: Tensor) -> Tensor:
        return F.prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"
