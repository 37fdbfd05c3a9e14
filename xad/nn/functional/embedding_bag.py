"""Bags of embeddings and the bilinear map as functions: ``embedding_bag`` (sum, mean, max
per bag) and ``bilinear`` (``x1^T A x2 + b``)."""

from __future__ import annotations

from ... import ops as _ops
from ...factories import arange, full
from ...tensor import Tensor
from .layers import embedding

__all__ = ["embedding_bag", "bilinear"]

_MODES = ("sum", "mean", "max")


def _membership(input: Tensor, offsets: Tensor | None, include_last: bool) -> Tensor:
    """The ``(B, L)`` boolean table of which of the ``L`` looked-up rows each bag holds,
    built on the device (offsets are never read back)."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"embedding_bag: offsets must be None for 2-d input (shape "
                             f"{input.shape}); each row is a bag")
        b, n = input.shape
        rows = arange(b, backend=input._backend).reshape(b, 1)
        return rows == arange(b * n, backend=input._backend).reshape(1, b * n) // n
    if input.ndim != 1 or offsets is None or offsets.ndim != 1:
        raise ValueError(f"embedding_bag: expected 2-d input, or 1-d input with 1-d offsets; "
                         f"got input {input.shape} and offsets "
                         f"{None if offsets is None else offsets.shape}")
    n = input.shape[0]
    ends = full((1,), n, dtype=offsets.dtype, backend=offsets._backend)
    # PyTorch's last bag runs to the end of the input, whatever the last offset says
    bounds = _ops.concat([offsets[:-1] if include_last else offsets, ends])
    start, stop = bounds[:-1].reshape(-1, 1), bounds[1:].reshape(-1, 1)
    pos = arange(n, dtype=offsets.dtype, backend=offsets._backend).reshape(1, n)
    return (pos >= start) & (pos < stop)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2.0,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """The sum, mean or max of each bag of embedding rows: rows of 2-d ``input`` are bags,
    or 1-d ``input`` is cut into bags at ``offsets``. Entries equal to ``padding_idx`` are
    left out; an empty bag gives zeros; ``per_sample_weights`` scale rows (``sum`` only);
    ``max_norm`` and ``scale_grad_by_freq`` as in :func:`embedding`.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> w = xad.tensor([[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]])
        >>> F.embedding_bag(xad.tensor([0, 1, 2]), w, xad.tensor([0, 2]), mode="sum").tolist()
        [[1.0, 2.0], [4.0, 4.0]]
    """
    if mode not in _MODES:
        raise ValueError(f"embedding_bag: mode must be one of {_MODES}, got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise ValueError(f"embedding_bag: per_sample_weights needs mode='sum', got {mode!r}")
    if scale_grad_by_freq and mode == "max":  # PyTorch refuses it too
        raise ValueError("embedding_bag: scale_grad_by_freq=True needs mode='sum' or 'mean', "
                         "got mode='max'")
    member = _membership(input, offsets, include_last_offset)
    flat = input.reshape(-1)
    if padding_idx is not None:
        member = member & (flat != padding_idx % weight.shape[0]).reshape(1, -1)
    rows = embedding(flat, weight, max_norm=max_norm, norm_type=norm_type,
                     scale_grad_by_freq=scale_grad_by_freq)  # (L, D)
    if mode == "max":
        big = _ops.where(member.expand_dims(-1), rows.expand_dims(0), -float("inf"))
        out = _ops.reduce.max_indexed(big, 1)
        return _ops.where(_ops.any(member, axis=1, keepdims=True), out, 0.0)
    m = member.astype(weight.dtype)
    if per_sample_weights is not None:
        m = m * per_sample_weights.reshape(1, -1).astype(weight.dtype)
    out = _ops.matmul(m, rows)
    if mode == "mean":
        count = member.astype(weight.dtype).sum(axis=1, keepdims=True)
        out = out / _ops.maximum(count, 1.0)
    return out


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None
             ) -> Tensor:
    """``y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.bilinear(xad.ones(1, 2), xad.ones(1, 3), xad.ones(4, 2, 3)).tolist()
        [[6.0, 6.0, 6.0, 6.0]]
    """
    o, i, j = weight.shape if weight.ndim == 3 else (None, None, None)
    if o is None or input1.shape[-1] != i or input2.shape[-1] != j or \
            input1.shape[:-1] != input2.shape[:-1]:
        raise ValueError(f"bilinear: expected inputs (*, in1) and (*, in2) with weight "
                         f"(out, in1, in2); got {input1.shape}, {input2.shape} and weight "
                         f"{weight.shape}")
    lead = input1.shape[:-1]
    a = _ops.reshape(input1, (-1, i))
    wt = _ops.reshape(_ops.permute_dims(weight, (1, 0, 2)), (i, o * j))
    t = _ops.reshape(_ops.matmul(a, wt), (-1, o, j))
    y = _ops.sum(t * _ops.reshape(input2, (-1, 1, j)), axis=-1)
    if bias is not None:
        y = y + bias
    return _ops.reshape(y, (*lead, o))



