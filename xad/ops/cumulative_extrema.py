"""PyTorch's ``cummax``, ``cummin`` and ``logcumsumexp``, as scans of ``log2(n)`` steps
(Hillis and Steele: each element combined with the one ``1, 2, 4, ...`` places before).

``cummax``/``cummin`` find the running extremum's index with one non-differentiable scan
(PyTorch's choice at ties: the latest index; a NaN counts as the largest, so it spreads)
and take the values at those indices, so the gradient goes to the arg position, as
PyTorch's. ``logcumsumexp`` scans with ``logaddexp`` written in xad's operations: stable at
``-inf`` and at large values, and every order differentiable.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from ..tensor import Tensor
from .axes import normalize_axis
from .elementwise import astype
from .elementwise_math import logaddexp
from .manipulation import moveaxis, take_along_axis
from .shape import concat
from .sorting import _call

__all__ = ["cummax", "cummin", "logcumsumexp"]

Cummax = namedtuple("Cummax", ["values", "indices"])
Cummin = namedtuple("Cummin", ["values", "indices"])


def _arg_scan(b: Any, x: Any, axis: int, largest: bool) -> Any:
    """The index of the running maximum (minimum) along ``axis``: the latest at ties, the
    latest NaN once there is one."""
    xp = b.xp
    v = xp.moveaxis(x, axis, -1)
    if v.dtype == xp.bool:
        v = xp.astype(v, xp.int8)
    n = v.shape[-1]
    i = xp.broadcast_to(xp.arange(n, dtype=xp.int64, device=b.device), v.shape)
    s = 1
    while s < n:
        a, c = v[..., :n - s], v[..., s:]  # a: the earlier partial result, c: the later
        later = (c >= a) if largest else (c <= a)
        take = xp.isnan(c) | (~xp.isnan(a) & later)
        v = xp.concat([v[..., :s], xp.where(take, c, a)], axis=-1)
        i = xp.concat([i[..., :s], xp.where(take, i[..., s:], i[..., :n - s])], axis=-1)
        s *= 2
    return xp.moveaxis(i, -1, axis)


def _cumulative_extremum(x: Tensor, dim: int, largest: bool) -> tuple[Tensor, Tensor]:
    where_ = "cummax" if largest else "cummin"
    if x.ndim == 0:
        normalize_axis(dim, 1, where_)
        return x * 1, (x.detach() * 0).astype("int64")
    axis = normalize_axis(dim, x.ndim, where_)
    idx = _call(_arg_scan, where_, x.detach(), axis=axis, largest=largest).contiguous()
    return take_along_axis(x, idx, axis=axis).contiguous(), idx  # (PyTorch's: contiguous)


def cummax(input: Tensor, dim: int) -> Cummax:  # noqa: A002
    """PyTorch's ``cummax``: the running maximum along ``dim`` and its index (the latest
    at ties); the gradient goes to that index.

    Example:
        >>> import xad
        >>> v, i = xad.cummax(xad.tensor([1.0, 3.0, 3.0, 2.0]), 0)
        >>> v.tolist(), i.tolist()
        ([1.0, 3.0, 3.0, 3.0], [0, 1, 2, 2])
    """
    return Cummax(*_cumulative_extremum(input, dim, True))


def cummin(input: Tensor, dim: int) -> Cummin:  # noqa: A002
    """PyTorch's ``cummin``: the running minimum along ``dim`` and its index (the latest
    at ties); the gradient goes to that index.

    Example:
        >>> import xad
        >>> xad.cummin(xad.tensor([3, 1, 1, 2]), 0).indices.tolist()
        [0, 1, 2, 2]
    """
    return Cummin(*_cumulative_extremum(input, dim, False))


def logcumsumexp(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    """PyTorch's ``logcumsumexp``: ``log(cumsum(exp(input)))`` along ``dim``, computed
    stably (no overflow at large values; ``-inf`` where every term so far is ``-inf``).

    Example:
        >>> import xad
        >>> xad.logcumsumexp(xad.tensor([0.0, 0.0, 1000.0]), 0).tolist()
        [0.0, 0.6931471824645996, 1000.0]
    """
    x = input if input.dtype.is_floating else astype(input, "float32")
    if x.ndim == 0:
        normalize_axis(dim, 1, "logcumsumexp")
        return x * 1
    axis = normalize_axis(dim, x.ndim, "logcumsumexp")
    v = moveaxis(x, axis, -1)
    n, s = v.shape[-1], 1
    while s < n:
        v = concat([v[..., :s], logaddexp(v[..., s:], v[..., :n - s])], axis=-1)
        s *= 2
    return moveaxis(v, -1, axis).contiguous()  # (PyTorch's result is contiguous)
