"""Folding an eval-mode batch normalisation into the convolution or linear layer before it
(``fuse_conv_bn_eval``, ``fuse_linear_bn_eval`` and their ``_weights`` forms), as
``torch.nn.utils.fusion``."""

from __future__ import annotations

import copy
from typing import Any

from .. import ops as _ops
from ..factories import zeros_like
from ..tensor import Tensor
from .module import Module, Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def _eval_bn(layer: Module, bn: Module, what: str) -> None:
    if layer.training or bn.training:
        raise AssertionError(f"{what}: fusion is only for eval mode; call .eval() on both "
                             f"modules first")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError(f"{what}: the batch norm tracks no running statistics "
                             f"(track_running_stats=False); there is nothing to fold")


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor,
                         bn_eps: float, bn_w: Tensor | None, bn_b: Tensor | None,
                         transpose: bool = False) -> tuple[Parameter, Parameter]:
    """The weight and bias of a convolution followed by an eval-mode batch norm, folded
    into one (``transpose``: the convolution is transposed, channels on axis 1).

    Example:
        >>> import xad
        >>> w, b = xad.nn.utils.fuse_conv_bn_weights(
        ...     xad.ones(2, 1, 1, 1), None, xad.zeros(2), xad.full((2,), 3.0), 1.0,
        ...     None, xad.ones(2))
        >>> w.reshape(-1).tolist(), b.tolist()
        ([0.5, 0.5], [1.0, 1.0])
    """
    bias_dtype = conv_b.dtype if conv_b is not None else conv_w.dtype
    b = zeros_like(bn_rm) if conv_b is None else conv_b
    scale = (1.0 / _ops.sqrt(bn_rv + bn_eps)) * (1.0 if bn_w is None else bn_w)
    shape = ((1, -1) if transpose else (-1, 1)) + (1,) * (conv_w.ndim - 2)
    w = (conv_w * scale.reshape(shape)).astype(conv_w.dtype)
    fused_b = (b - bn_rm) * scale + (0.0 if bn_b is None else bn_b)
    return (Parameter(w.detach(), conv_w.requires_grad),
            Parameter(fused_b.astype(bias_dtype).detach(), b.requires_grad))


def fuse_conv_bn_eval(conv: Any, bn: Any, transpose: bool = False) -> Any:
    """A copy of ``conv`` (eval mode) that computes ``bn(conv(x))`` for ``bn`` in eval mode.

    Example:
        >>> import xad
        >>> conv, bn = xad.nn.Conv2d(1, 2, 3).eval(), xad.nn.BatchNorm2d(2).eval()
        >>> x = xad.randn(1, 1, 5, 5)
        >>> fused = xad.nn.utils.fuse_conv_bn_eval(conv, bn)
        >>> bool(xad.allclose(fused(x), bn(conv(x)), atol=1e-5))
        True
    """
    _eval_bn(conv, bn, "fuse_conv_bn_eval")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor,
                           bn_rv: Tensor, bn_eps: float, bn_w: Tensor, bn_b: Tensor
                           ) -> tuple[Parameter, Parameter]:
    """The weight and bias of a linear layer followed by an eval-mode batch norm, folded.

    Example:
        >>> import xad
        >>> w, b = xad.nn.utils.fuse_linear_bn_weights(
        ...     xad.ones(2, 3), None, xad.zeros(2), xad.full((2,), 3.0), 1.0,
        ...     xad.ones(2), xad.ones(2))
        >>> w.tolist()[0], b.tolist()
        ([0.5, 0.5, 0.5], [1.0, 1.0])
    """
    bias_dtype = linear_b.dtype if linear_b is not None else linear_w.dtype
    b = zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * (1.0 / _ops.sqrt(bn_rv + bn_eps))
    w = linear_w * scale[:, None].astype(linear_w.dtype)
    fused_b = ((b - bn_rm) * scale + bn_b).astype(bias_dtype)
    return Parameter(w.detach(), linear_w.requires_grad), \
        Parameter(fused_b.detach(), b.requires_grad)


def fuse_linear_bn_eval(linear: Any, bn: Any) -> Any:
    """A copy of ``linear`` (eval mode) that computes ``bn(linear(x))`` for ``bn`` in eval
    mode (``bn.num_features`` is ``linear.out_features`` or 1).

    Example:
        >>> import xad
        >>> fc, bn = xad.nn.Linear(3, 2).eval(), xad.nn.BatchNorm1d(2).eval()
        >>> x = xad.randn(4, 3)
        >>> bool(xad.allclose(xad.nn.utils.fuse_linear_bn_eval(fc, bn)(x), bn(fc(x)), atol=1e-5))
        True
    """
    _eval_bn(linear, bn, "fuse_linear_bn_eval")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(f"fuse_linear_bn_eval: linear.out_features "
                             f"({linear.out_features}) must equal bn.num_features "
                             f"({bn.num_features}), or bn.num_features be 1")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused
