"""The layers' functions PyTorch also has at the top level (``torch.kl_div``,
``torch.batch_norm``, ``torch.lstm_cell``, ...), with the top level's positional signatures:
``reduction`` as PyTorch's integer code (0 ``'none'``, 1 ``'mean'``, 2 ``'sum'``), dropouts'
``train`` required, ``torch.embedding(weight, indices)``, ``torch.grid_sampler``'s integer
modes. Each is :mod:`xad.nn.functional`'s computation.

Example:
    >>> from xad import as_torch
    >>> t = as_torch.namespace()["torch"]
    >>> x = t.tensor([[0.0, 2.0]]); t.kl_div(x, t.tensor([[0.5, 0.5]]), 2).shape
    ()
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from . import ops as _ops
from .nn import functional as _F
from .ops.torch_conventions import vector_norm as _vector_norm
from .tensor import Tensor

__all__ = ["conv3d", "conv_transpose1d", "conv_transpose3d", "convolution", "conv_tbc",
           "embedding", "embedding_renorm_", "batch_norm", "instance_norm", "rms_norm",
           "constant_pad_nd", "channel_shuffle", "max_pool1d_with_indices", "max_pool3d",
           "hardshrink", "rrelu", "rrelu_", "selu_", "celu_", "threshold", "threshold_",
           "alpha_dropout", "alpha_dropout_", "feature_dropout", "feature_dropout_", "dropout_",
           "affine_grid_generator", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d",
           "binary_cross_entropy_with_logits", "cosine_embedding_loss", "ctc_loss",
           "hinge_embedding_loss", "kl_div", "margin_ranking_loss", "poisson_nll_loss",
           "triplet_margin_loss", "gru_cell", "lstm_cell", "rnn_tanh_cell", "rnn_relu_cell",
           "norm_except_dim"]

conv3d, conv_transpose1d, conv_transpose3d = _F.conv3d, _F.conv_transpose1d, _F.conv_transpose3d
rms_norm, channel_shuffle, hardshrink = _F.rms_norm, _F.channel_shuffle, _F.hardshrink
max_pool1d_with_indices, max_pool3d = _F.max_pool1d_with_indices, _F.max_pool3d
rrelu, rrelu_, selu_, celu_ = _F.rrelu, _F.rrelu_, _F.selu_, _F.celu_
threshold, threshold_ = _F.threshold, _F.threshold_
_REDUCTIONS = ("none", "mean", "sum")


def _reduction(name: str, code: Any) -> str:
    """PyTorch's integer ``reduction`` code as :mod:`xad.nn.functional`'s word."""
    if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code < 3:
        raise ValueError(f"torch.{name}: reduction is PyTorch's integer code here (0 'none', "
                         f"1 'mean', 2 'sum'), got {code!r}; torch.nn.functional.{name} "
                         f"takes the words")
    return _REDUCTIONS[code]


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None,  # noqa: A002
                stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                transposed: bool, output_padding: Sequence[int], groups: int) -> Tensor:
    """``torch.convolution``: the 1-, 2- or 3-d convolution (or transposed one) that
    ``weight``'s dimensions name, every argument given."""
    nd = weight.ndim - 2
    if nd not in (1, 2, 3):
        raise ValueError(f"torch.convolution: weight of 3 to 5 dimensions, got shape "
                         f"{tuple(weight.shape)}")
    if transposed:
        f = (_F.conv_transpose1d, _F.conv_transpose2d, _F.conv_transpose3d)[nd - 1]
        return f(input, weight, bias, tuple(stride), tuple(padding), tuple(output_padding),
                 groups, tuple(dilation))
    f = (_F.conv1d, _F.conv2d, _F.conv3d)[nd - 1]
    return f(input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:  # noqa: A002
    """``torch.conv_tbc``: a 1-d convolution of a (time, batch, channels) input by a
    (width, in, out) weight, ``pad`` zeros at both ends of time."""
    out = _F.conv1d(_ops.permute_dims(input, (1, 2, 0)), _ops.permute_dims(weight, (2, 1, 0)),
                    bias, 1, pad)
    return _ops.permute_dims(out, (2, 0, 1))


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``torch.embedding(weight, indices, padding_idx=-1, ...)``: rows of ``weight`` (the
    arguments in the other order from ``F.embedding``'s; ``padding_idx=-1`` is none)."""
    return _F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                        scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def embedding_renorm_(weight: Tensor, indices: Tensor, max_norm: float,
                      norm_type: float) -> Tensor:
    """``torch.embedding_renorm_``: the rows of ``weight`` that ``indices`` name rescaled in
    place to norm at most ``max_norm`` (as ``F.embedding(max_norm=...)`` does), untracked."""
    _F.embedding(indices, weight, max_norm=max_norm, norm_type=norm_type)
    return weight


def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
               running_mean: Tensor | None, running_var: Tensor | None, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool = False) -> Tensor:
    """``torch.batch_norm``: ``F.batch_norm`` with the top level's argument order."""
    return _F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                         eps)


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
                  running_mean: Tensor | None, running_var: Tensor | None,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool = False) -> Tensor:
    """``torch.instance_norm``: ``F.instance_norm`` with the top level's argument order."""
    return _F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                            momentum, eps)


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:  # noqa: A002
    """``torch.constant_pad_nd``: ``F.pad(input, pad, 'constant', value)``."""
    return _F.pad(input, tuple(pad), "constant", value)


def _dropout(name: str, f: Any, inplace: bool) -> Any:
    def dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
        return f(input, p, train, inplace=inplace)
    dropout.__name__ = dropout.__qualname__ = name
    dropout.__doc__ = (f"``torch.{name}(input, p, train)``: ``F.{f.__name__}(input, p, train"
                       f"{', inplace=True' if inplace else ''})``.")
    return dropout


def _feature_dropout(x: Tensor, p: float, training: bool, inplace: bool = False) -> Tensor:
    """Whole channels (dimension 1) dropped: ``F.dropout1d``/``2d``/``3d`` by rank."""
    f = _F.dropout1d if x.ndim <= 3 else _F.dropout2d if x.ndim == 4 else _F.dropout3d
    return f(x, p, training, inplace)


alpha_dropout = _dropout("alpha_dropout", _F.alpha_dropout, False)
alpha_dropout_ = _dropout("alpha_dropout_", _F.alpha_dropout, True)
feature_dropout = _dropout("feature_dropout", _feature_dropout, False)
feature_dropout_ = _dropout("feature_dropout_", _feature_dropout, True)
dropout_ = _dropout("dropout_", _F.dropout, True)


def affine_grid_generator(theta: Tensor, size: Sequence[int], align_corners: bool) -> Tensor:
    """``torch.affine_grid_generator``: ``F.affine_grid`` (``align_corners`` required)."""
    return _F.affine_grid(theta, list(size), align_corners)


_MODES, _PADDINGS = ("bilinear", "nearest", "bicubic"), ("zeros", "border", "reflection")


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int,  # noqa: A002
                 padding_mode: int, align_corners: bool) -> Tensor:
    """``torch.grid_sampler``: ``F.grid_sample`` with PyTorch's integer codes (mode 0
    bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection)."""
    if interpolation_mode not in (0, 1, 2) or padding_mode not in (0, 1, 2):
        raise ValueError(f"torch.grid_sampler: interpolation_mode and padding_mode are "
                         f"PyTorch's codes 0, 1, 2, got {interpolation_mode!r}, "
                         f"{padding_mode!r}")
    return _F.grid_sample(input, grid, _MODES[interpolation_mode], _PADDINGS[padding_mode],
                          align_corners)


grid_sampler_2d = grid_sampler_3d = grid_sampler


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,  # noqa: A002
                                     weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None,
                                     reduction: int = 1) -> Tensor:
    """``torch.binary_cross_entropy_with_logits`` (``pos_weight`` before ``reduction``)."""
    return _F.binary_cross_entropy_with_logits(
        input, target, weight, _reduction("binary_cross_entropy_with_logits", reduction),
        pos_weight)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 1) -> Tensor:
    """``torch.cosine_embedding_loss`` (integer ``reduction``)."""
    return _F.cosine_embedding_loss(input1, input2, target, margin,
                                    _reduction("cosine_embedding_loss", reduction))


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: int = 1, zero_infinity: bool = False) -> Tensor:
    """``torch.ctc_loss`` (integer ``reduction``)."""
    return _F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                       _reduction("ctc_loss", reduction), zero_infinity)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,  # noqa: A002
                         reduction: int = 1) -> Tensor:
    """``torch.hinge_embedding_loss`` (integer ``reduction``)."""
    return _F.hinge_embedding_loss(input, target, margin,
                                   _reduction("hinge_embedding_loss", reduction))


def kl_div(input: Tensor, target: Tensor, reduction: int = 1, *,  # noqa: A002
           log_target: bool = False) -> Tensor:
    """``torch.kl_div`` (integer ``reduction``; 1 is the elementwise mean, as PyTorch's, which
    warns about it only in ``F.kl_div``)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="kl_div: reduction='mean'")
        return _F.kl_div(input, target, _reduction("kl_div", reduction), log_target)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 1) -> Tensor:
    """``torch.margin_ranking_loss`` (integer ``reduction``)."""
    return _F.margin_ranking_loss(input1, input2, target, margin,
                                  _reduction("margin_ranking_loss", reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool,  # noqa: A002
                     eps: float, reduction: int) -> Tensor:
    """``torch.poisson_nll_loss`` (every argument given; integer ``reduction``)."""
    return _F.poisson_nll_loss(input, target, log_input, full, eps,
                               _reduction("poisson_nll_loss", reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                        reduction: int = 1) -> Tensor:
    """``torch.triplet_margin_loss`` (integer ``reduction``)."""
    return _F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                  _reduction("triplet_margin_loss", reduction))


def _gates(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
           b_hh: Tensor | None) -> tuple[Tensor, Tensor]:
    """``x W_ih^T + b_ih`` and ``h W_hh^T + b_hh``."""
    return _F.linear(x, w_ih, b_ih), _F.linear(h, w_hh, b_hh)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,  # noqa: A002
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """``torch.rnn_tanh_cell``: ``tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return _ops.tanh(gi + gh)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,  # noqa: A002
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """``torch.rnn_relu_cell``: ``relu(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return _F.relu(gi + gh)


def lstm_cell(input: Tensor, hx: Sequence[Tensor], w_ih: Tensor, w_hh: Tensor,  # noqa: A002
              b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``torch.lstm_cell``: ``(h', c')`` from ``hx = (h, c)``, gates in PyTorch's order
    (input, forget, cell, output)."""
    h, c = hx
    gi, gh = _gates(input, h, w_ih, w_hh, b_ih, b_hh)
    i, f, g, o = _ops.split(gi + gh, 4, axis=-1)
    c2 = _ops.sigmoid(f) * c + _ops.sigmoid(i) * _ops.tanh(g)
    return _ops.sigmoid(o) * _ops.tanh(c2), c2


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,  # noqa: A002
             b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """``torch.gru_cell``: PyTorch's GRU step (reset, update, new gates)."""
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    i_r, i_z, i_n = _ops.split(gi, 3, axis=-1)
    h_r, h_z, h_n = _ops.split(gh, 3, axis=-1)
    r, z = _ops.sigmoid(i_r + h_r), _ops.sigmoid(i_z + h_z)
    n = _ops.tanh(i_n + r * h_n)
    return n + z * (hx - n)


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002
    """``torch.norm_except_dim``: the ``pow``-norm over every dimension but ``dim``, kept
    as size-1 dimensions (``dim=-1``: the norm of all of ``v``, 0-d)."""
    if dim == -1:
        return _vector_norm(v, pow)
    axes = tuple(a for a in range(v.ndim) if a != dim % v.ndim)
    return _vector_norm(v, pow, axes, True)
