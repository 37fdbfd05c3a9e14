"""Lazy modules: layers whose input size is read from the first input
(``LazyLinear``, ``LazyConv1d/2d/3d``, ``LazyConvTranspose1d/2d/3d``,
``LazyBatchNorm1d/2d/3d``, ``LazyInstanceNorm1d/2d/3d``), and the placeholders they hold
until then (``UninitializedParameter``, ``UninitializedBuffer``), as PyTorch's.

The first call (or a ``load_state_dict``) gives the placeholders their shapes; the first call
then draws the initial values from xad's generator and turns the module into the plain
layer (``LazyLinear`` becomes ``Linear``). The Parameter objects stay the same, but build
the optimiser after that dry run, as in PyTorch.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from .. import autograd as _ag
from .. import dtypes as _dt
from ..backend import Backend
from ..factories import ones, zeros
from ..tensor import Tensor
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear, _resolve
from .module import Parameter
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d

__all__ = ["UninitializedParameter", "UninitializedBuffer", "LazyModuleMixin", "LazyLinear",
           "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
           "is_lazy"]


def _materialize(t: Any, cls: type, shape: int | Sequence[int],
                 backend: Backend | str | None, dtype: _dt.DType | None) -> None:
    """Give the placeholder ``t`` ``shape`` (zeros, for the layer to initialise) and make
    it a plain ``cls`` (``Parameter``, or ``Tensor`` for a buffer)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    b = t._backend if backend is None else _resolve(backend)
    with _ag.no_grad():
        t._set_data(zeros(shape, dtype=dtype or t.dtype, backend=b)._array, b)
    t.__class__ = cls


class UninitializedParameter(Parameter):
    """A parameter without a shape yet (a lazy module's, until its first call).

    Example:
        >>> import xad
        >>> p = xad.nn.UninitializedParameter(); p.materialize((2, 3))
        >>> type(p).__name__, p.shape
        ('Parameter', (2, 3))
    """

    __slots__ = ()

    def __init__(self, requires_grad: bool = True, dtype: _dt.DType | None = None,
                 backend: Backend | str | None = None) -> None:
        Parameter.__init__(self, zeros(0, dtype=dtype, backend=_resolve(backend)),
                           requires_grad)

    def materialize(self, shape: int | Sequence[int], backend: Backend | str | None = None,
                    dtype: _dt.DType | None = None) -> None:
        """Give it ``shape`` (zeros until the layer initialises it); it becomes a
        ``Parameter``."""
        _materialize(self, Parameter, shape, backend, dtype)

    def __repr__(self) -> str:
        return "<UninitializedParameter>"


class UninitializedBuffer(Tensor):
    """A buffer without a shape yet (a lazy batch norm's running statistics).

    Example:
        >>> import xad
        >>> b = xad.nn.UninitializedBuffer(); b.materialize(3)
        >>> type(b).__name__, b.shape
        ('Tensor', (3,))
    """

    __slots__ = ()

    def __init__(self, requires_grad: bool = False, dtype: _dt.DType | None = None,
                 backend: Backend | str | None = None) -> None:
        t = zeros(0, dtype=dtype, backend=_resolve(backend))
        Tensor.__init__(self, t._array, requires_grad=requires_grad, backend=t._backend)

    def materialize(self, shape: int | Sequence[int], backend: Backend | str | None = None,
                    dtype: _dt.DType | None = None) -> None:
        """Give it ``shape`` (zeros until the layer fills it); it becomes a ``Tensor``."""
        _materialize(self, Tensor, shape, backend, dtype)

    def __repr__(self) -> str:
        return "<UninitializedBuffer>"


def is_lazy(t: Any) -> bool:
    """Whether ``t`` is a placeholder still waiting for its shape."""
    return isinstance(t, (UninitializedParameter, UninitializedBuffer))


class LazyModuleMixin:
    """Makes a layer lazy: before the first forward, ``initialize_parameters(*args)`` gives
    its placeholders their shapes and values, then the module's class becomes
    ``cls_to_become``; ``load_state_dict`` shapes the placeholders from the saved tensors."""

    cls_to_become: type | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        me: Any = self
        me._initialize_hook = me.register_forward_pre_hook(self._infer_parameters,
                                                           with_kwargs=True)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{type(self).__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer is still a placeholder."""
        me: Any = self
        return any(is_lazy(t) for t in [*me._parameters.values(), *me._buffers.values()])

    def _infer_parameters(self, module: Any, args: tuple, kwargs: dict | None = None) -> None:
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {type(module).__name__} has not been fully initialized")
        module._initialize_hook.remove()
        delattr(module, "_initialize_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _lazy_load(self, state_dict: Mapping[str, Any], prefix: str) -> None:
        """Shape each placeholder whose key ``state_dict`` holds (``load_state_dict`` calls
        it first; the values are then copied in as for any module)."""
        me: Any = self
        for name, t in [*me._parameters.items(), *me._buffers.items()]:
            given = state_dict.get(prefix + name)  # (an empty one: another lazy module's)
            if is_lazy(t) and given is not None and tuple(given.shape) != (0,):
                t.materialize(tuple(given.shape))


class _LazyLayer(LazyModuleMixin):
    """Lazy ``Linear`` and convolutions: the input size is ``_in_size(x)``; the weight's
    shape ``_weight_shape()``; initialised by the layer's own ``reset_parameters``."""

    def reset_parameters(self) -> None:
        me: Any = self
        if not self.has_uninitialized_params() and getattr(me, self._in_name) != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, x: Tensor, *args: Any, **kwargs: Any) -> None:
        me: Any = self
        if getattr(me, self._in_name) == 0:  # also after a load_state_dict (PyTorch: 0)
            setattr(me, self._in_name, self._in_size(x))
        if not self.has_uninitialized_params():
            return
        with _ag.no_grad():
            me.weight.materialize(self._weight_shape())
            if me.bias is not None:
                me.bias.materialize((getattr(me, self._out_name),))
            self.reset_parameters()

    _in_name, _out_name = "in_features", "out_features"

    def _in_size(self, x: Tensor) -> int:
        raise NotImplementedError

    def _weight_shape(self) -> tuple[int, ...]:
        raise NotImplementedError

    def _placeholders(self, bias: bool, dtype: Any, backend: Any) -> None:
        me: Any = self
        me.weight = UninitializedParameter(dtype=dtype, backend=backend)
        if bias:
            me.bias = UninitializedParameter(dtype=dtype, backend=backend)


class LazyLinear(_LazyLayer, Linear):
    """``Linear`` whose ``in_features`` is the last size of its first input.

    Example:
        >>> import xad
        >>> fc = xad.nn.LazyLinear(2); y = fc(xad.ones(4, 3))
        >>> type(fc).__name__, fc.in_features, fc.weight.shape
        ('Linear', 3, (2, 3))
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, dtype: _dt.DType | None = None,
                 backend: Backend | str | None = None) -> None:
        super().__init__(0, 0, False, dtype=dtype, backend=backend)
        self.out_features = out_features
        self._placeholders(bias, dtype, backend)

    def _in_size(self, x: Tensor) -> int:
        return x.shape[-1]

    def _weight_shape(self) -> tuple[int, ...]:
        return (self.out_features, self.in_features)


class _LazyConv(_LazyLayer):
    """Lazy convolutions: ``in_channels`` is axis 1 of a batch (axis 0 of one sample)."""

    _in_name, _out_name = "in_channels", "out_channels"

    def _in_size(self, x: Tensor) -> int:
        me: Any = self
        d = me._dims
        if x.ndim not in (d + 1, d + 2):
            raise RuntimeError(f"{type(self).__name__}: expected {d + 1}-d (unbatched) or "
                               f"{d + 2}-d (batched) input to infer in_channels, got shape "
                               f"{tuple(x.shape)}")
        c = x.shape[1] if x.ndim == d + 2 else x.shape[0]
        if c % me.groups:
            raise ValueError(f"{type(self).__name__}: the inferred in_channels {c} is not "
                             f"divisible by groups={me.groups}")
        return c

    def _weight_shape(self) -> tuple[int, ...]:
        me: Any = self
        i, o, g = me.in_channels, me.out_channels, me.groups
        return ((i, o // g) if me._transposed else (o, i // g)) + me.kernel_size


def _lazy_conv(base: type, example: str) -> type:
    """``Lazy<base>``: ``base``'s arguments without ``in_channels``."""
    sig = inspect.signature(base)

    def __init__(self: Any, out_channels: int, *args: Any, **kwargs: Any) -> None:
        bound = sig.bind(0, 0, *args, **kwargs)
        bias = bound.arguments.get("bias", True)
        bound.arguments["bias"] = False
        _LazyConv.__init__(self, *bound.args, **bound.kwargs)
        self.out_channels = out_channels
        self._placeholders(bias, bound.arguments.get("dtype"), bound.arguments.get("backend"))

    name = "Lazy" + base.__name__
    doc = (f"``{base.__name__}`` whose ``in_channels`` is read from its first input (axis 1 "
           f"of a batch); the arguments are ``{base.__name__}``'s without it.\n\n"
           f"    Example:\n        >>> import xad\n        >>> m = xad.nn.{name}(4, 3)\n"
           f"        >>> {example}\n")
    return type(name, (_LazyConv, base), {"__init__": __init__, "cls_to_become": base,
                                          "__doc__": doc, "__module__": __name__})


LazyConv1d = _lazy_conv(Conv1d, "m(xad.ones(2, 5, 8)).shape, type(m).__name__\n"
                                "        ((2, 4, 6), 'Conv1d')")
LazyConv2d = _lazy_conv(Conv2d, "m(xad.ones(2, 5, 8, 8)).shape, m.weight.shape\n"
                                "        ((2, 4, 6, 6), (4, 5, 3, 3))")
LazyConv3d = _lazy_conv(Conv3d, "m(xad.ones(1, 2, 4, 4, 4)).shape\n"
                                "        (1, 4, 2, 2, 2)")
LazyConvTranspose1d = _lazy_conv(ConvTranspose1d, "m(xad.ones(2, 5, 8)).shape, m.weight.shape\n"
                                                  "        ((2, 4, 10), (5, 4, 3))")
LazyConvTranspose2d = _lazy_conv(ConvTranspose2d, "m(xad.ones(1, 5, 4, 4)).shape\n"
                                                  "        (1, 4, 6, 6)")
LazyConvTranspose3d = _lazy_conv(ConvTranspose3d, "m(xad.ones(1, 2, 2, 2, 2)).shape\n"
                                                  "        (1, 4, 4, 4, 4)")


class _LazyNorm(LazyModuleMixin):
    """Lazy batch and instance norms: ``num_features`` is axis 1 of the first input
    (PyTorch's, for an unbatched instance-norm input too); weight 1, bias 0, running mean
    0 and variance 1 once shaped."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, dtype: _dt.DType | None = None,
                 backend: Backend | str | None = None) -> None:
        super().__init__(0, eps, momentum, False, False, dtype, backend)
        me: Any = self
        me.affine, me.track_running_stats = affine, track_running_stats
        opts: dict[str, Any] = {"dtype": dtype, "backend": backend}
        if affine:
            me.weight = UninitializedParameter(**opts)
            me.bias = UninitializedParameter(**opts)
        if track_running_stats:
            me.running_mean = UninitializedBuffer(**opts)
            me.running_var = UninitializedBuffer(**opts)
            me.num_batches_tracked = zeros((), dtype=_dt.int64, backend=_resolve(backend))

    def initialize_parameters(self, x: Tensor, *args: Any, **kwargs: Any) -> None:
        me: Any = self
        if me.num_features == 0:  # also after a load_state_dict or without any parameter
            me.num_features = x.shape[1]
        n = me.num_features
        with _ag.no_grad():
            for name, fill in (("weight", 1), ("bias", 0), ("running_mean", 0),
                               ("running_var", 1)):
                t = me._parameters.get(name, me._buffers.get(name))
                if is_lazy(t):
                    t.materialize((n,))
                    if fill:
                        t.copy_(ones(n, dtype=t.dtype, backend=t._backend))


class LazyBatchNorm1d(_LazyNorm, BatchNorm1d):
    """``BatchNorm1d`` whose ``num_features`` is read from its first input.

    Example:
        >>> import xad
        >>> bn = xad.nn.LazyBatchNorm1d(); _ = bn(xad.randn(4, 3))
        >>> type(bn).__name__, bn.num_features, list(bn.state_dict())[:2]
        ('BatchNorm1d', 3, ['weight', 'bias'])
    """

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNorm, BatchNorm2d):
    """``BatchNorm2d`` whose ``num_features`` is read from its first input.

    Example:
        >>> import xad
        >>> bn = xad.nn.LazyBatchNorm2d(); bn(xad.randn(2, 3, 4, 4)).shape
        (2, 3, 4, 4)
    """

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNorm, BatchNorm3d):
    """``BatchNorm3d`` whose ``num_features`` is read from its first input.

    Example:
        >>> import xad
        >>> bn = xad.nn.LazyBatchNorm3d(); bn(xad.randn(2, 3, 2, 2, 2)).shape
        (2, 3, 2, 2, 2)
    """

    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNorm, InstanceNorm1d):
    """``InstanceNorm1d`` whose ``num_features`` is read from its first input (PyTorch's
    lazy defaults: ``affine`` and ``track_running_stats`` on).

    Example:
        >>> import xad
        >>> m = xad.nn.LazyInstanceNorm1d(); m(xad.randn(2, 3, 5)).shape, m.weight.shape
        ((2, 3, 5), (3,))
    """

    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyNorm, InstanceNorm2d):
    """``InstanceNorm2d`` whose ``num_features`` is read from its first input.

    Example:
        >>> import xad
        >>> xad.nn.LazyInstanceNorm2d()(xad.randn(2, 3, 4, 4)).shape
        (2, 3, 4, 4)
    """

    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyNorm, InstanceNorm3d):
    """``InstanceNorm3d`` whose ``num_features`` is read from its first input.

    Example:
        >>> import xad
        >>> xad.nn.LazyInstanceNorm3d()(xad.randn(2, 3, 2, 2, 2)).shape
        (2, 3, 2, 2, 2)
    """

    cls_to_become = InstanceNorm3d
