"""``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d``: PyTorch's parameter shapes, state_dict
keys and default initialisation (Kaiming-uniform with ``a = sqrt(5)``, bias from
``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``)."""

from __future__ import annotations

from collections.abc import Sequence

from .. import dtypes as _dt
from ..backend import Backend
from ..factories import zeros
from ..tensor import Tensor
from . import functional as F
from . import init
from .linear import _resolve
from .module import Module, Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]

_PAD_MODES = {"zeros": None, "reflect": "reflect", "replicate": "replicate",
              "circular": "circular"}


def _tuple(v: int | Sequence[int], n: int) -> tuple[int, ...]:
    return (v,) * n if isinstance(v, int) else tuple(v)


class _ConvNd(Module):
    """The parameters and checks the convolution layers share."""

    _dims = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | Sequence[int],
                 stride: int | Sequence[int] = 1, padding: str | int | Sequence[int] = 0,
                 dilation: int | Sequence[int] = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", dtype: _dt.DType | None = None,
                 backend: Backend | str | None = None) -> None:
        super().__init__()
        name = type(self).__name__
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: groups={groups} must divide in_channels "
                             f"({in_channels}) and out_channels ({out_channels})")
        if padding_mode not in _PAD_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {list(_PAD_MODES)}, got "
                             f"{padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple(kernel_size, self._dims)
        self.stride, self.dilation = _tuple(stride, self._dims), _tuple(dilation, self._dims)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, self._dims)
        self.padding_mode = padding_mode
        if self.padding == "same" and self.stride != (1,) * self._dims:
            raise ValueError(f"{name}: padding='same' needs stride 1, got stride "
                             f"{self.stride}")
        shape = ((in_channels, out_channels // groups) if self._transposed
                 else (out_channels, in_channels // groups)) + self.kernel_size
        b = _resolve(backend)
        self.weight = Parameter(zeros(shape, dtype=dtype, backend=b))
        if bias:
            self.bias = Parameter(zeros(out_channels, dtype=dtype, backend=b))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Redraw the parameters with PyTorch's default initialisation."""
        init._default_reset(self.weight, self.bias)

    def _check(self, x: Tensor) -> None:
        if x.ndim not in (self._dims + 1, self._dims + 2) or \
                x.shape[-self._dims - 1] != self.in_channels:  # (N, C, ...) or (C, ...)
            axes = {1: "L", 2: "H, W", 3: "D, H, W"}[self._dims]
            raise ValueError(f"{type(self).__name__}({self.in_channels}, {self.out_channels}): "
                             f"expected input of shape (N, {self.in_channels}, {axes}), got "
                             f"{x.shape} (one sample may be ({self.in_channels}, {axes}))")

    def _padded(self, x: Tensor) -> tuple[Tensor, str | int | tuple[int, ...]]:
        """The input padded by ``padding_mode`` (then the convolution pads no more); with zero
        padding a string ``padding`` goes to the convolution, which checks it. ``'same'``
        pads ``dilation * (kernel - 1)`` per axis, the odd one on the right (PyTorch's)."""
        mode = _PAD_MODES[self.padding_mode]
        if mode is None or isinstance(self.padding, str) and self.padding != "same":
            return x, self.padding
        if self.padding == "same":
            totals = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            pairs = [(t // 2, t - t // 2) for t in totals]
        else:
            pairs = [(int(p), int(p)) for p in self.padding]
        amounts = [a for pair in reversed(pairs) for a in pair]
        return F.pad(x, amounts, mode=mode), 0

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding not in ((0,) * self._dims, "valid"):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._dims:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        return s + ("" if self.bias is not None else ", bias=False")


class Conv2d(_ConvNd):
    """2-d convolution of ``(N, in_channels, H, W)`` input; ``weight`` is ``(out_channels,
    in_channels/groups, kh, kw)``.

    Example:
        >>> import xad
        >>> conv = xad.nn.Conv2d(3, 8, 3, padding=1)
        >>> conv.weight.shape, conv(xad.ones((2, 3, 6, 6))).shape
        ((8, 3, 3, 3), (2, 8, 6, 6))
    """

    def forward(self, x: Tensor) -> Tensor:
        self._check(x)
        x, padding = self._padded(x)
        return F.conv2d(x, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class Conv1d(_ConvNd):
    """1-d convolution of ``(N, in_channels, L)`` input; ``weight`` is ``(out_channels,
    in_channels/groups, k)``.

    Example:
        >>> import xad
        >>> xad.nn.Conv1d(2, 4, 3)(xad.ones((5, 2, 10))).shape
        (5, 4, 8)
    """

    _dims = 1

    def forward(self, x: Tensor) -> Tensor:
        self._check(x)
        x, padding = self._padded(x)
        return F.conv1d(x, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class Conv3d(_ConvNd):
    """3-d convolution of ``(N, in_channels, D, H, W)`` input; ``weight`` is
    ``(out_channels, in_channels/groups, kd, kh, kw)``.

    Example:
        >>> import xad
        >>> xad.nn.Conv3d(2, 4, 3, padding=1)(xad.ones((1, 2, 4, 5, 5))).shape
        (1, 4, 4, 5, 5)
    """

    _dims = 3

    def forward(self, x: Tensor) -> Tensor:
        self._check(x)
        x, padding = self._padded(x)
        return F.conv3d(x, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class ConvTranspose2d(_ConvNd):
    """Transposed 2-d convolution; ``weight`` is ``(in_channels, out_channels/groups, kh,
    kw)`` as in PyTorch.

    Example:
        >>> import xad
        >>> up = xad.nn.ConvTranspose2d(4, 2, 2, stride=2)
        >>> up.weight.shape, up(xad.ones((1, 4, 3, 3))).shape
        ((4, 2, 2, 2), (1, 2, 6, 6))
    """

    _transposed = True
    padding: tuple[int, ...]  # no string padding here

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | Sequence[int],
                 stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0,
                 output_padding: int | Sequence[int] = 0, groups: int = 1, bias: bool = True,
                 dilation: int | Sequence[int] = 1, padding_mode: str = "zeros",
                 dtype: _dt.DType | None = None, backend: Backend | str | None = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f"{type(self).__name__}: only padding_mode='zeros' is supported, "
                             f"got {padding_mode!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, dtype, backend)
        self.output_padding = _tuple(output_padding, self._dims)

    def forward(self, x: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        """``output_size`` (spatial sizes, or with the batch and channel sizes in front)
        picks the output padding in place of ``output_padding``, as PyTorch's."""
        self._check(x)
        fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[self._dims]
        extra = self.output_padding if output_size is None else self._extra(x, output_size)
        return fn(x, self.weight, self.bias, self.stride, self.padding, extra, self.groups,
                  self.dilation)

    def _extra(self, x: Tensor, output_size: Sequence[int]) -> tuple[int, ...]:
        """The output padding that makes the spatial output ``output_size``."""
        d = self._dims
        size = [int(s) for s in output_size]
        if len(size) == x.ndim:
            size = size[x.ndim - d:]
        lows = [(n - 1) * s - 2 * p + dl * (k - 1) + 1 for n, s, p, dl, k in
                zip(x.shape[x.ndim - d:], self.stride, self.padding, self.dilation,
                    self.kernel_size)]
        if len(size) != d or not all(lo <= n < lo + s for n, lo, s in
                                     zip(size, lows, self.stride)):
            raise ValueError(f"{type(self).__name__}: output_size {tuple(output_size)} for "
                             f"input {x.shape} must give {d} sizes, each from the smallest "
                             f"output {tuple(lows)} up to it plus stride - 1 "
                             f"{tuple(lo + s - 1 for lo, s in zip(lows, self.stride))}")
        return tuple(n - lo for n, lo in zip(size, lows))


class ConvTranspose1d(ConvTranspose2d):
    """Transposed 1-d convolution; ``weight`` is ``(in_channels, out_channels/groups, k)``.

    Example:
        >>> import xad
        >>> xad.nn.ConvTranspose1d(4, 2, 3, stride=2)(xad.ones((1, 4, 5))).shape
        (1, 2, 11)
    """

    _dims = 1


class ConvTranspose3d(ConvTranspose2d):
    """Transposed 3-d convolution; ``weight`` is ``(in_channels, out_channels/groups, kd, kh,
    kw)``.

    Example:
        >>> import xad
        >>> xad.nn.ConvTranspose3d(4, 2, 2, stride=2)(xad.ones((1, 4, 2, 3, 3))).shape
        (1, 2, 4, 6, 6)
    """

    _dims = 3
