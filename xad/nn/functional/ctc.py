"""The connectionist temporal classification loss (PyTorch's ``ctc_loss``): the forward
(alpha) recursion in log space over the blank-extended targets, one step per time frame,
composed from elementwise ops, so its gradient comes from theirs. Lengths stay on the
device (frames and labels past a sequence's length are masked), except that 1-d
concatenated targets need their lengths on the host to be cut apart."""

from __future__ import annotations

from collections.abc import Sequence

from ... import ops as _ops
from ...factories import arange, full_like, tensor, zeros_like
from ...tensor import Tensor

__all__ = ["ctc_loss"]

_NEG = -float("inf")


def _lengths(v: Tensor | Sequence[int] | int, like: Tensor) -> Tensor:
    if isinstance(v, Tensor):
        return v.reshape(-1)  # (a 0-d length of an unbatched sequence: one of them)
    return tensor(list(v) if isinstance(v, Sequence) else [int(v)], backend=like._backend)


def _padded_targets(targets: Tensor, lengths: Tensor, n: int) -> Tensor:
    """``(N, S)`` targets; 1-d concatenated targets are cut at their (host-read) lengths."""
    if targets.ndim == 2:
        return targets
    sizes = [int(k) for k in lengths.tolist()]  # explicit host read, to cut the 1-d targets
    s = max(sizes, default=0)
    rows, start = [], 0
    for k in sizes:
        row = targets[start:start + k]
        rows.append(_ops.concat([row, zeros_like(targets[:s - k])]) if k < s else row)
        start += k
    return _ops.stack(rows) if rows else targets.reshape(n, 0)


def _logsumexp3(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    """``log(e^a + e^b + e^c)`` that is ``-inf`` (with a zero, not NaN, gradient) where all
    three are ``-inf``."""
    m = _ops.maximum(_ops.maximum(a, b), c)
    dead = m == _NEG
    m = _ops.where(dead, 0.0, m)
    s = _ops.exp(a - m) + _ops.exp(b - m) + _ops.exp(c - m)
    return _ops.where(dead, _NEG, m + _ops.log(_ops.where(dead, 1.0, s)))


def _shift(a: Tensor, k: int) -> Tensor:
    pad = full_like(a[:, :k], _NEG)
    return _ops.concat([pad, a[:, :-k]], axis=1)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Tensor | Sequence[int],
             target_lengths: Tensor | Sequence[int], blank: int = 0, reduction: str = "mean",
             zero_infinity: bool = False) -> Tensor:
    """CTC loss of ``(T, N, C)`` log-probabilities against ``(N, S)`` padded (or 1-d
    concatenated) targets; ``"mean"`` divides each loss by its target length, then averages.
    An unbatched ``(T, C)`` input takes ``(S,)`` targets and one length each (PyTorch's).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> lp = xad.log_softmax(xad.zeros(3, 1, 2), axis=-1)
        >>> round(F.ctc_loss(lp, xad.tensor([[1]]), [3], [1], reduction="sum").item(), 4)
        0.2877
    """
    if log_probs.ndim not in (2, 3) or reduction not in ("mean", "sum", "none"):
        raise ValueError(f"ctc_loss: expected (T, N, C) or (T, C) log_probs and reduction "
                         f"'mean', 'sum' or 'none'; got shape {log_probs.shape} and "
                         f"{reduction!r}")
    if log_probs.ndim == 2:  # one sequence: a batch of one, its loss 0-d
        loss = ctc_loss(log_probs.expand_dims(1), targets.reshape(1, -1), input_lengths,
                        target_lengths, blank, reduction, zero_infinity)
        return loss.reshape(())
    t_max, n, _ = log_probs.shape
    in_len = _lengths(input_lengths, log_probs)
    tg_len = _lengths(target_lengths, log_probs)
    tg = _padded_targets(targets, tg_len, n).astype(in_len.dtype)
    s = tg.shape[1]
    big = 2 * s + 1
    pos = arange(big, dtype=tg.dtype, backend=tg._backend)
    idx = _ops.broadcast_to(_ops.maximum((pos - 1) // 2, 0).reshape(1, -1), (n, big))
    lab = _ops.take_along_axis(tg, idx, axis=1) if s else zeros_like(idx)
    ext = _ops.where((pos % 2 == 1).reshape(1, -1), lab, blank)  # (N, 2S+1)
    skip = (ext != blank) & (ext != _ops.concat([ext[:, :2], ext[:, :-2]], axis=1))
    skip = skip & (pos >= 2).reshape(1, -1)
    lp = _ops.take_along_axis(log_probs, _ops.broadcast_to(ext.reshape(1, n, big),
                                                           (t_max, n, big)), axis=2)
    alpha = _ops.where((pos < 2).reshape(1, -1), lp[0], _NEG)
    for t in range(1, t_max):
        step = _logsumexp3(alpha, _shift(alpha, 1), _ops.where(skip, _shift(alpha, 2), _NEG))
        alpha = _ops.where((t < in_len).reshape(-1, 1), step + lp[t], alpha)
    end = (2 * tg_len).reshape(-1, 1)
    last = _ops.take_along_axis(alpha, end, axis=1)
    prev = _ops.where(end > 0, _ops.take_along_axis(alpha, _ops.maximum(end - 1, 0), axis=1),
                      _NEG)
    loss = -_logsumexp3(last, prev, full_like(last, _NEG)).reshape(n)
    if zero_infinity:
        loss = _ops.where(loss == float("inf"), 0.0, loss)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return (loss / _ops.maximum(tg_len, 1).astype(loss.dtype)).mean()
