"""PyTorch's ``scatter_reduce`` (``sum``, ``prod``, ``mean``, ``amax``, ``amin``, with or
without the tensor's own values: ``include_self``) and ``index_put``/``index_put_``
(``accumulate``: repeated indices add up), composed of xad's scatter-add and gather
primitives, so their gradients are PyTorch's:

- ``prod``: each group's product by a segmented scan over the sources sorted by target
  (``log2(n)`` steps of multiplications: exact at zeros, no division);
- ``amax``/``amin``: the extreme found on the device by sorting (by target, then value),
  the gradient shared evenly among the values equal to it (the tensor's own included),
  as PyTorch's;
- ``mean``: the sum over the count (floor division for integers, as PyTorch's).
"""

from __future__ import annotations

from typing import Any

from .. import dtypes as _dt
from ..factories import arange, full
from ..tensor import Tensor
from ._apply import apply
from .axes import normalize_axis
from .elementwise import add, astype, isfinite, multiply, where
from .elementwise_math import floor_divide
from .indexing import IndexAddInto, _norm_key, getitem_raw
from .inplace import assign_result
from .manipulation import broadcast_to
from .select import _grid, _plus, fill_value, same_dtype
from .shape import concat, reshape
from .sorting import _call

__all__ = ["scatter_reduce", "index_put", "index_put_"]

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _placed(x: Tensor, key: tuple, v: Tensor) -> Tensor:
    """Zeros of ``x``'s shape with ``v`` added at ``key`` (repeats add up)."""
    return apply(IndexAddInto, v, shape=tuple(x.shape), key=key, advanced=True)


def _sorted_targets(b: Any, v: Any, *key: Any, size: int, strides: tuple,
                    descending: bool) -> tuple:
    """``(order, flat targets in that order, slots, counts)``: the sources sorted by their
    flat target, and by value within one (``descending``: the smallest last); ``slots[t]``
    the sorted position of target ``t``'s last source (0 where none: masked by the caller),
    ``counts[t]`` how many it has (integer scatter-adds, exact on every backend)."""
    xp = b.xp
    p = xp.reshape(sum(k * s for k, s in zip(key, strides)), (-1,))
    v = xp.reshape(v, (-1,))
    if v.dtype == xp.bool:
        v = xp.astype(v, xp.int8)  # (the standard sorts no bools)
    if descending and xp.isdtype(v.dtype, "real floating"):
        v, descending = -v, False  # a NaN sorts last either way: it is the group's amin
    order = xp.argsort(v, descending=descending, stable=True)
    order = xp.take(order, xp.argsort(xp.take(p, order), stable=True))
    ps = xp.take(p, order)
    n, i64, dev = ps.shape[0], xp.int64, b.device
    last = xp.concat([ps[1:] != ps[:-1], xp.ones((1,), dtype=xp.bool, device=dev)])
    pos = xp.arange(n, dtype=i64, device=dev)
    slots = b.scatter_add_flat(xp.zeros((size + 1,), dtype=i64, device=dev),
                               xp.where(last, ps, size), xp.where(last, pos, 0))
    counts = b.scatter_add_flat(xp.zeros((size,), dtype=i64, device=dev), ps,
                                xp.ones((n,), dtype=i64, device=dev))
    return order, ps, slots[:size], counts


def _strides(shape: tuple) -> tuple:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


def _groups(x: Tensor, src: Tensor, key: tuple, descending: bool) -> tuple:
    return _call(_sorted_targets, "scatter_reduce", src.detach(), *key, size=int(x.size),
                 strides=_strides(tuple(x.shape)), descending=descending)


def _per_group(x: Tensor, src: Tensor, groups: tuple, combine: Any = None,
               identity: int = 0) -> Tensor:
    """Each target's ``combine``-scan over its sources in ``groups``' order (``None``: no
    scan, its last source), read at each target (anything where it has none)."""
    order, ps, slots, _ = groups
    v = getitem_raw(reshape(src, (-1,)), (order._array,))  # in range: no check, no read
    n, s = v.shape[0], 1
    while s < n and combine is not None:
        same = ps[s:] == ps[:n - s]
        v = concat([v[:s], combine(v[s:], where(same, v[:n - s], identity))], axis=0)
        s *= 2
    return reshape(getitem_raw(v, (slots._array,)), tuple(x.shape))


def _extremum(x: Tensor, src: Tensor, key: tuple, groups: tuple, hit: Tensor,
              largest: bool, include_self: bool) -> Tensor:
    xd, sd = x.detach(), src.detach()
    m = _per_group(xd, sd, groups)
    if include_self:
        pick = (xd > m) if largest else (xd < m)
        m = where(pick | (xd != xd), xd, m)  # NaN of x propagates
    m = where(hit, m, xd)
    if not x.dtype.is_floating:
        return m
    eq_src = astype(sd == getitem_raw(m, key), x.dtype)
    eq_self = astype((xd == m) & hit, x.dtype) if include_self else full(
        tuple(x.shape), 0, dtype=x.dtype, backend=x.backend)
    count = eq_self + _placed(x, key, eq_src)
    own = where(eq_self > 0, x, 0)  # (not x * eq_self: an infinite x times 0 is NaN)
    c = (own + _placed(x, key, src * eq_src)) / where(hit, count, 1)
    cd = c.detach()
    return where(hit, m + where(isfinite(cd), c - cd, 0), x)  # m's value, c's gradient


def _last_writes(b: Any, index: Any, *key: Any, strides: tuple) -> Any:
    """Whether each source is the last one (in order along ``dim``) written to its place."""
    xp = b.xp
    p = xp.reshape(sum(k * s for k, s in zip(key, strides)), (-1,))
    order = xp.argsort(p, stable=True)
    ps = xp.take(p, order)
    last = xp.concat([ps[1:] != ps[:-1], xp.ones((1,), dtype=xp.bool, device=b.device)])
    return xp.reshape(xp.take(last, xp.argsort(order, stable=True)), index.shape)


def scatter(x: Tensor, dim: int, index: Tensor, src: Any) -> Tensor:
    """``x`` with ``src`` (a tensor of ``x``'s dtype, or one number) written at the places
    ``index`` names along ``dim``: PyTorch's out-of-place ``scatter``; where an index
    repeats, the last write along ``dim`` stays (PyTorch's CPU order; its GPU leaves it
    unspecified), and only it gets a gradient.

    Example:
        >>> import xad
        >>> xad.zeros(3).scatter(0, xad.tensor([2, 0, 2]), xad.tensor([5.0, 6.0, 7.0])).tolist()
        [6.0, 0.0, 7.0]
    """
    axis = normalize_axis(dim, x.ndim, "scatter")
    same_dtype(x, src, "scatter", "src")
    key = _grid(x, axis, index, "scatter")
    ones = full(tuple(index.shape), 1, dtype=_dt.int32, backend=x._backend)
    hit = _placed(x, key, ones) > 0
    if not isinstance(src, Tensor):
        return where(hit, fill_value(x, src), x)
    if src.shape != index.shape:
        src = getitem_raw(src, tuple(slice(0, n) for n in index.shape))
    last = _call(_last_writes, "scatter", index, *key, strides=_strides(tuple(x.shape)))
    return where(hit, _placed(x, key, where(last, src, 0)), x)


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor,  # noqa: A002
                   reduce: str, *, include_self: bool = True) -> Tensor:
    """PyTorch's ``scatter_reduce``: ``src``'s values reduced (``"sum"``, ``"prod"``,
    ``"mean"``, ``"amax"``, ``"amin"``) into ``input`` at the places ``index`` names along
    ``dim``, with ``input``'s own value as one of them where ``include_self``.

    Example:
        >>> import xad
        >>> x = xad.tensor([1.0, 5.0, 0.0])
        >>> x.scatter_reduce(0, xad.tensor([0, 0, 2]), xad.tensor([4.0, 2.0, 3.0]),
        ...                  "amax").tolist()
        [4.0, 5.0, 3.0]
    """
    if reduce not in _REDUCTIONS:
        raise ValueError(f"scatter_reduce: reduce must be one of {_REDUCTIONS}, got "
                         f"{reduce!r}")
    x = input
    axis = normalize_axis(dim, x.ndim, "scatter_reduce")
    key = _grid(x, axis, index, "scatter_reduce")
    if src.shape != index.shape:
        src = getitem_raw(src, tuple(slice(0, n) for n in index.shape))
    same_dtype(x, src, "scatter_reduce", "src")  # a cast would truncate floats into ints
    if index.size == 0:
        return x * 1
    groups = _groups(x, src, key, descending=reduce == "amin")
    counts = reshape(groups[3], tuple(x.shape))
    hit = counts > 0
    if reduce in ("amax", "amin"):
        return _extremum(x, src, key, groups, hit, reduce == "amax", include_self)
    if reduce == "prod":
        return where(hit, (x if include_self else 1) * _per_group(x, src, groups, multiply, 1), x)
    own = x if include_self else where(hit, 0, x)
    # floating sums by the scatter-add primitive; integer ones by the scan (its order is
    # fixed, and CuPy's atomics lack the small integer dtypes), exact either way
    total = own + (_placed(x, key, src) if x.dtype.is_floating else where(
        hit, _per_group(x, src, groups, add), 0))
    if reduce == "sum":
        return total != 0 if x.dtype is _dt.bool_ else total  # (PyTorch's: any True)
    n = where(hit, astype(counts, x.dtype) + (1 if include_self else 0), 1)
    return where(hit, total / n if x.dtype.is_floating else floor_divide(total, n), x)


def index_put(input: Tensor, indices: Any, values: Any,  # noqa: A002
              accumulate: bool = False) -> Tensor:
    """PyTorch's ``index_put``: ``input`` with ``values`` written at ``input[indices]``
    (``indices`` a tuple of integer or bool tensors, as in ``x[i, j]``; a place named
    twice takes the last value, as PyTorch's on the CPU), or added there with repeated
    indices adding up (``accumulate=True``).

    Example:
        >>> import xad
        >>> i = (xad.tensor([0, 0, 2]),)
        >>> xad.index_put(xad.zeros(3), i, xad.ones(3), accumulate=True).tolist()
        [2.0, 0.0, 1.0]
    """
    x = input
    key = tuple(indices) if isinstance(indices, (tuple, list)) else (indices,)
    k, advanced = _norm_key(x, key)
    shape = tuple(getitem_raw(x.detach(), k).shape)
    v = values if isinstance(values, Tensor) else full((), values, dtype=x.dtype,
                                                       backend=x.backend)
    v = broadcast_to(astype(v, x.dtype) if v.dtype is not x.dtype else v, shape)
    if accumulate:
        return _plus(x, apply(IndexAddInto, v, shape=tuple(x.shape), key=k, advanced=advanced))
    if not advanced:  # each place once: the plain write
        out = x.clone()
        out[key] = v
        return out
    # repeated places: the last value lands (PyTorch's CPU order), never a mix of them
    m = int(x.size)
    pos = getitem_raw(reshape(arange(m, dtype=_dt.int64, backend=x.backend), tuple(x.shape)),
                      k)
    groups = _call(_sorted_targets, "index_put", pos.detach(), pos._array, size=m,
                   strides=(1,), descending=False)
    counts = reshape(groups[3], tuple(x.shape))
    return where(counts > 0, _per_group(x, v, groups), x)


def index_put_(input: Tensor, indices: Any, values: Any,  # noqa: A002
               accumulate: bool = False) -> Tensor:
    """PyTorch's ``index_put_``: :func:`index_put` written into ``input``.

    Example:
        >>> import xad
        >>> x = xad.zeros(3)
        >>> x.index_put_((xad.tensor([1]),), xad.tensor(5.0)).tolist()
        [0.0, 5.0, 0.0]
    """
    return assign_result(input, index_put(input._alias(), indices, values, accumulate),
                         "index_put_")
