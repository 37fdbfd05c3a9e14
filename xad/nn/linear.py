"""``Linear``, ``Identity``, ``Flatten`` and ``Unflatten``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .. import dtypes as _dt
from ..backend import Backend, resolve_backend
from ..context import context
from ..factories import zeros
from ..tensor import Tensor
from . import functional as F
from . import init, module_hooks
from .module import Module, Parameter

__all__ = ["Linear", "Identity", "Flatten", "Unflatten"]


class Linear(Module):
    """``y = x @ weight.T + bias`` with ``weight`` of shape ``(out_features, in_features)``.

    Initialised as in PyTorch: ``weight`` and ``bias`` from ``U(-1/sqrt(in), 1/sqrt(in))``
    (Kaiming-uniform with ``a = sqrt(5)``), drawn from the backend's seeded generator.

    Example:
        >>> import xad
        >>> fc = xad.nn.Linear(3, 2)
        >>> fc.weight.shape, fc(xad.ones(5, 3)).shape
        ((2, 3), (5, 2))
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype: _dt.DType | None = None, backend: Backend | str | None = None
                 ) -> None:
        super().__init__()
        if in_features < 0 or out_features < 0:
            raise ValueError(f"Linear: feature counts must be non-negative, got "
                             f"in_features={in_features}, out_features={out_features}")
        b = _resolve(backend)
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(zeros(out_features, in_features, dtype=dtype, backend=b))
        if bias:
            self.bias = Parameter(zeros(out_features, dtype=dtype, backend=b))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Redraw the parameters with PyTorch's default initialisation."""
        init._default_reset(self.weight, self.bias)

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")

    def _then(self, nxt: Module) -> Any:
        """``x -> nxt(self(x))`` as one call when ``nxt`` is ``ReLU`` or exact ``GELU``
        (:func:`~xad.nn.functional.linear_activation`: the bias and the activation in one
        kernel on CuPy), else ``None``; ``Sequential`` asks. Never where a hook, a subclass's
        own ``forward`` or ``xad.compile``'s recorder would see the difference."""
        as_activation = getattr(nxt, "_as_activation", None)
        if as_activation is None or _hooked(nxt):
            return None
        return self._then_activation(as_activation())

    def _then_activation(self, act: str | None) -> Any:
        """``x -> act(self(x))`` as one call for ``act`` ``"relu"`` or ``"gelu"``, or
        ``None`` (see :meth:`_then`)."""
        if act is None or type(self).forward is not Linear.forward or self.bias is None \
                or context.recorder is not None or _hooked(self):
            return None
        return lambda x: F.linear_activation(x, self.weight, self.bias, act)


def _hooked(m: Module) -> bool:
    return module_hooks.hooked(m)


class Identity(Module):
    """Returns its input (a placeholder layer).

    Example:
        >>> import xad
        >>> xad.nn.Identity()(xad.ones(2)).tolist()
        [1.0, 1.0]
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, x: Any) -> Any:
        return x


class Flatten(Module):
    """Merge axes ``start_dim..end_dim`` (by default all but the batch axis).

    Example:
        >>> import xad
        >>> xad.nn.Flatten()(xad.zeros(2, 3, 4)).shape
        (2, 12)
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, x: Tensor) -> Tensor:
        return F.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split axis ``dim`` into ``unflattened_size`` (one entry may be -1), the inverse of
    ``Flatten``.

    Example:
        >>> import xad
        >>> xad.nn.Unflatten(1, (3, 4))(xad.zeros(2, 12)).shape
        (2, 3, 4)
    """

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        self.dim = dim
        self.unflattened_size = tuple(int(n) for n in unflattened_size)

    def forward(self, x: Tensor) -> Tensor:
        d, sizes = self.dim % max(x.ndim, 1), self.unflattened_size
        n = x.shape[d] if x.ndim else 1
        known = math.prod(k for k in sizes if k != -1)
        if sizes.count(-1) == 1 and known and n % known == 0:
            sizes = tuple(n // known if k == -1 else k for k in sizes)
        if math.prod(sizes) != n or any(k < 0 for k in sizes):
            raise ValueError(f"Unflatten: cannot split axis {self.dim} of size {n} (input "
                             f"shape {x.shape}) into {self.unflattened_size}")
        return x.reshape(x.shape[:d] + sizes + x.shape[d + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


def _resolve(backend: Backend | str | None) -> Backend | None:
    """A backend name as a Backend (``None`` means the current one)."""
    if isinstance(backend, str):
        name, _, dev = backend.partition(":")
        return resolve_backend(name, dev or None)
    return backend
