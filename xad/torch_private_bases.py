"""PyTorch's private base classes that scripts subclass and test with ``isinstance``:
``torch.nn.modules.loss._Loss``/``_WeightedLoss`` and
``torch.nn.modules.batchnorm._NormBase``/``_BatchNorm``, with PyTorch's constructor
arguments. xad's own losses and normalisation layers count as instances of them
(``isinstance(nn.BatchNorm2d(3), _BatchNorm)`` is true, as in PyTorch).
"""

from __future__ import annotations

from typing import Any

from .nn import instancenorm, losses, normalization
from .nn.functional.legacy_reduction import legacy_get_string
from .tensor import Tensor

__all__ = ["_Loss", "_WeightedLoss", "_NormBase", "_BatchNorm"]


class _CountsXadClasses(type):
    """A base whose ``_xad_roles`` (xad's classes that play its part in PyTorch's class tree)
    also pass ``isinstance``/``issubclass``; a user's subclass of the base does not widen."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return type.__instancecheck__(cls, obj) or isinstance(obj, cls.__dict__.get(
            "_xad_roles", ()))

    def __subclasscheck__(cls, sub: type) -> bool:
        return type.__subclasscheck__(cls, sub) or issubclass(sub, cls.__dict__.get(
            "_xad_roles", ()))


class _Loss(losses._Loss, metaclass=_CountsXadClasses):
    """``torch.nn.modules.loss._Loss(size_average=None, reduce=None, reduction='mean')``.

    Example:
        >>> import xad
        >>> from xad.torch_private_bases import _Loss
        >>> class Twice(_Loss):
        ...     def forward(self, a, b): return 2 * (a - b).abs().mean()
        >>> Twice()(xad.ones(2), xad.zeros(2)).item(), isinstance(xad.nn.MSELoss(), _Loss)
        (2.0, True)
    """

    _xad_roles: tuple[type, ...] = (losses._Loss,)
    _legacy_keywords = False  # (torch's own positional size_average, reduce, reduction)

    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        if size_average is not None or reduce is not None:
            reduction = legacy_get_string(size_average, reduce)
        super().__init__(reduction)


class _WeightedLoss(_Loss):
    """``torch.nn.modules.loss._WeightedLoss``: a ``_Loss`` with a ``weight`` buffer."""

    _xad_roles = (losses.NLLLoss, losses.CrossEntropyLoss, losses.BCELoss,
                  losses.BCEWithLogitsLoss, losses.MultiLabelSoftMarginLoss,
                  losses.MultiMarginLoss)

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class _NormBase(normalization.BatchNorm1d, metaclass=_CountsXadClasses):
    """``torch.nn.modules.batchnorm._NormBase``: batch normalisation whose input check is the
    subclass's ``_check_input_dim(input)`` (PyTorch's hook; the base raises)."""

    _xad_roles: tuple[type, ...] = (normalization.BatchNorm1d, instancenorm._InstanceNorm)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype)

    def _check_input(self, x: Tensor) -> None:
        self._check_input_dim(x)

    def _check_input_dim(self, x: Tensor) -> None:
        raise NotImplementedError(f"{type(self).__name__}: a subclass of _BatchNorm defines "
                                  f"_check_input_dim(input), as in PyTorch")


class _BatchNorm(_NormBase):
    """``torch.nn.modules.batchnorm._BatchNorm`` (see :class:`_NormBase`)."""

    _xad_roles = (normalization.BatchNorm1d,)
