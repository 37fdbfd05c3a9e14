"""``AdaptiveLogSoftmaxWithLoss``: the adaptive softmax of Grave et al. (2016), PyTorch's
layers (``head``, ``tail``), arguments and outputs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from .. import dtypes as _dt
from .. import ops as _ops
from ..backend import Backend
from ..factories import zeros_like
from ..tensor import Tensor
from . import functional as F
from .functional.layers import _check_in_range
from .linear import Linear
from .module import Module, ModuleList, Sequential

__all__ = ["AdaptiveLogSoftmaxWithLoss"]


class _ASMoutput(NamedTuple):
    """``AdaptiveLogSoftmaxWithLoss``'s output: each target's log-probability, and the loss
    (their negated mean)."""

    output: Tensor
    loss: Tensor


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-probabilities of ``n_classes`` classes split at ``cutoffs`` into a shortlist
    (scored by ``head`` with one more logit per cluster) and clusters (each scored by a
    ``tail`` projection of size ``in_features // div_value ** (i + 1)``), as PyTorch's.

    ``forward(input, target)`` gives ``(output, loss)``: each target's log-probability and
    their negated mean; ``log_prob(input)`` every class's; ``predict(input)`` the most likely
    class. Every row goes through every cluster (no host read of which rows need which:
    the same numbers as PyTorch's, and a target out of range raises as ``nll_loss``'s).

    Example:
        >>> import xad
        >>> asm = xad.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 7])
        >>> out, loss = asm(xad.randn(3, 8), xad.tensor([0, 5, 9]))
        >>> out.shape, loss.shape, asm.log_prob(xad.randn(3, 8)).shape
        ((3,), (), (3, 10))
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False,
                 dtype: _dt.DType | None = None, backend: Backend | str | None = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of "
                             "length larger than 0")
        if cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1 \
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs):
            raise ValueError(f"AdaptiveLogSoftmaxWithLoss: cutoffs should be a sequence of "
                             f"unique, positive integers sorted in an increasing order, where "
                             f"each value is between 1 and n_classes-1 ({n_classes - 1}); got "
                             f"{cutoffs}")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, dtype=dtype,
                           backend=backend)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(
                Linear(in_features, hsz, bias=False, dtype=dtype, backend=backend),
                Linear(hsz, osz, bias=False, dtype=dtype, backend=backend)))

    def reset_parameters(self) -> None:
        """New random weights for ``head`` and every ``tail`` projection (as at creation)."""
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection.children():
                layer.reset_parameters()

    def forward(self, input: Tensor, target: Tensor) -> _ASMoutput:
        where = "AdaptiveLogSoftmaxWithLoss"
        if target.ndim > 1 or input.ndim != target.ndim + 1 or \
                (target.ndim == 1 and input.shape[0] != target.shape[0]):
            raise ValueError(f"{where}: expected (N, in_features) input with (N,) targets or "
                             f"(in_features,) input with a 0-d target; got input "
                             f"{input.shape} and target {target.shape}")
        batched = target.ndim == 1
        x, t = (input, target) if batched else (input.expand_dims(0), target.expand_dims(0))
        _check_in_range(t, self.n_classes, where, "target", "n_classes")
        head = F.log_softmax(self.head(x), dim=1)
        short = t < self.shortlist_size
        head_index = _ops.where(short, t, 0)
        output = zeros_like(head[:, 0])
        for i, (low, high) in enumerate(zip(self.cutoffs, self.cutoffs[1:])):
            inside = (t >= low) & (t < high)
            local = F.log_softmax(self.tail[i](x), dim=1)
            picked = _ops.take_along_axis(local, _ops.where(inside, t - low, 0)[:, None],
                                          axis=1)[:, 0]
            output = _ops.where(inside, picked, output)
            head_index = _ops.where(inside, self.shortlist_size + i, head_index)
        output = output + _ops.take_along_axis(head, head_index[:, None], axis=1)[:, 0]
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, x: Tensor) -> Tensor:
        head = F.log_softmax(self.head(x), dim=1)
        parts = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](x), dim=1)
            parts.append(cluster + head[:, self.shortlist_size + i:self.shortlist_size + i + 1])
        return _ops.concat(parts, axis=1)

    def log_prob(self, input: Tensor) -> Tensor:
        """The log-probability of every class, ``(N, n_classes)`` (or ``(n_classes,)``).

        Example:
            >>> import xad
            >>> asm = xad.nn.AdaptiveLogSoftmaxWithLoss(4, 5, [2])
            >>> round(asm.log_prob(xad.randn(4)).exp().sum().item(), 5)
            1.0
        """
        x = input if input.ndim > 1 else input.expand_dims(0)
        out = self._full_log_prob(x)
        return out if input.ndim > 1 else out.squeeze(0)

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row (the head's choice where it is in the
        shortlist, else the largest full log-probability, as PyTorch's).

        Example:
            >>> import xad
            >>> asm = xad.nn.AdaptiveLogSoftmaxWithLoss(4, 5, [2])
            >>> asm.predict(xad.randn(3, 4)).shape
            (3,)
        """
        x = input if input.ndim > 1 else input.expand_dims(0)
        head = _ops.argmax(self.head(x), axis=1)
        full = _ops.argmax(self._full_log_prob(x), axis=1)
        out = _ops.where(head < self.shortlist_size, head, full)
        return out if input.ndim > 1 else out.squeeze(0)
