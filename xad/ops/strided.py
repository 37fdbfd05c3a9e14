"""``as_strided``: a view of a tensor's storage by sizes, strides and an offset, as PyTorch's.

A tensor's storage is the row-major order of the tensor its chain of views starts from
(``layout.py``: strides and offsets count in its elements). ``as_strided`` is one more view
of that tensor (``Tensor._adopt_view``): on NumPy, CuPy, torch and array_api_strict the
backend's own strided view of its memory, so a change of the storage by any route shows in
it at once; on JAX, whose arrays are immutable, a gathered copy that xad remakes from the
base after every change, as JAX's other views. A write through it reaches the storage
positions behind the written elements (``inplace._write_expanded``, as for ``expand``);
where several of them are one position (a stride of 0, sliding windows) it raises, where
PyTorch writes in an undefined order (filling with a number is allowed).

Its gradient is the result's gradient summed into the storage positions it reads (windows
that overlap add up), as PyTorch's, also at positions outside the tensor it was taken from
(``x[2:].as_strided((3,), (1,), 0)`` reads ``x[0]``), where PyTorch gives none until the
storage is next changed in place (docs/PORTING.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ..backend import strided_positions
from ..tensor import Tensor
from . import layout as _layout
from ._apply import Op, apply, unary
from .indexing import IndexAddInto
from .shape import reshape

__all__ = ["as_strided", "as_strided_", "as_strided_scatter"]


class AsStrided(Op):
    """The storage ``x`` holds (row-major), read at ``offset + sum(i[k] * stride[k])``."""

    name = "as_strided"
    view = True

    @staticmethod
    def forward(b, x, size, stride, offset):
        return b.as_strided(x, size, stride, offset)

    @staticmethod
    def backward(node, g):
        p = node.params
        shape = node.in_shapes[0]
        n = math.prod(shape)
        return reshape(_scatter(reshape(g, (-1,)), n, p["size"], p["stride"], p["offset"]),
                       shape)

    @classmethod
    def jvp(cls, primals, tangents, out, **params):
        t = tangents[0]
        return None if t is None else apply(cls, t.contiguous(), **params)

    @staticmethod
    def batch(args, batched, size, stride, offset):
        x = args[0].contiguous()  # the batch axis leads: each example's storage in turn
        n, per = x.shape[0], math.prod(x.shape[1:])
        return apply(AsStrided, x, size=(n,) + tuple(size), stride=(per,) + tuple(stride),
                     offset=offset), True


def _scatter(v: Tensor, n: int, size: tuple, stride: tuple, offset: int) -> Tensor:
    """Zeros of ``(n,)`` with the flat ``v`` added in at the positions of a strided view."""
    b = v._backend
    with b.on_device():
        at = b.xp.reshape(strided_positions(b.xp, b.device, size, stride, offset), (-1,))
    return unary(IndexAddInto, v, shape=(n,), key=(at,), advanced=True)


def _ints(what: str, v: Any) -> tuple[int, ...]:
    try:
        return tuple(int(k) for k in v)
    except TypeError:
        raise TypeError(f"as_strided: {what} must be a sequence of ints, got "
                        f"{type(v).__name__}") from None


def _start(x: Tensor, what: str) -> Tensor:
    """The tensor whose storage ``x`` views and whose graph a view of it joins: where its
    chain of views starts, or the nearest ``detach()``/``.data``; it must hold the whole
    storage in row-major order."""
    t = x
    while t._base is not None and t._view_fn is not None:
        if t._view_fn[0].name in ("view_dtype", "real", "imag", "view_as_real",
                                  "view_as_complex"):
            raise NotImplementedError(f"{what}: a view through {t._view_fn[0].name} (of "
                                      f"another element type than its storage's) is not "
                                      f"supported (element positions are not tracked across "
                                      f"dtypes); take it of x.clone()")
        t = t._base
    top = t
    while top._base is not None:
        top = top._base
    nbytes = t.numel() * t.dtype.itemsize
    if _layout.storage_offset(t) or nbytes != top.numel() * top.dtype.itemsize:
        raise NotImplementedError(f"{what}: the tensor views part of a storage through "
                                  f"detach() or .data, whose other elements xad does not "
                                  f"reach; take it of a clone(), or of the whole tensor")
    if not _layout.is_contiguous(t):
        raise RuntimeError(f"{what}: the storage is not in row-major order (its tensor of "
                           f"shape {t.shape} keeps another layout, as x.T.exp() keeps x.T's), "
                           f"so its positions are not xad's strides; take it of "
                           f"x.contiguous()")
    return t


def _check(size: tuple, stride: tuple, offset: int, numel: int, what: str) -> None:
    """PyTorch's conditions on the geometry, in its order."""
    if len(size) != len(stride):
        raise RuntimeError(f"{what}: mismatch in length of strides and shape")
    if any(n < 0 for n in size):
        raise RuntimeError(f"{what}: sizes must not be negative")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"{what}: negative strides are not supported, got {list(stride)}")
    if offset < 0:
        raise RuntimeError(f"{what}: invalid storage offset {offset}")
    need = 0 if 0 in size else offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
    if need > numel:
        raise RuntimeError(f"{what}: it reads storage elements up to {need - 1}, but the "
                           f"storage has {numel} (PyTorch's 'out of bounds for storage'); "
                           f"make the sizes, strides or offset smaller")


def as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int],  # noqa: A002
               storage_offset: int | None = None) -> Tensor:
    """PyTorch's ``as_strided``: a view of ``input``'s storage whose element ``i`` is the
    storage's element ``storage_offset + sum(i[k] * stride[k])`` (strides and offset in
    elements of the storage, which starts where ``input``'s chain of views starts;
    ``storage_offset`` defaults to ``input``'s own). Changes of the storage show in it,
    and writes through it reach the storage, except where its elements overlap (a stride
    of 0, sliding windows): such writes raise. Differentiable (overlapping windows add up).

    Example:
        >>> import xad
        >>> x = xad.arange(5.0)
        >>> w = xad.as_strided(x, (3, 3), (1, 1)); w.tolist()
        [[0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [2.0, 3.0, 4.0]]
        >>> x[2] = 9.0; w[:, 0].tolist()
        [0.0, 1.0, 9.0]
    """
    size, stride = _ints("size", size), _ints("stride", stride)
    offset = _layout.storage_offset(input) if storage_offset is None else int(storage_offset)
    what = (f"as_strided(size={list(size)}, stride={list(stride)}, storage_offset={offset}) "
            f"of a tensor of shape {tuple(input.shape)}")
    base = _start(input, what)
    _check(size, stride, offset, base.numel(), what)
    return unary(AsStrided, base, size=size, stride=stride, offset=offset)


def as_strided_(input: Tensor, size: Sequence[int], stride: Sequence[int],  # noqa: A002
                storage_offset: int | None = None) -> Tensor:
    """PyTorch's ``x.as_strided_(size, stride, storage_offset)``: ``x`` itself becomes that
    view of its storage (:func:`as_strided`); refused for a leaf that requires grad (as
    PyTorch; also under ``no_grad``, where its gradient would go to its storage), a tensor
    with views (they would keep its old geometry) and a ``detach()``/``.data`` tensor.

    Example:
        >>> import xad
        >>> x = xad.arange(6.0); x.as_strided_((3,), (2,)).tolist()
        [0.0, 2.0, 4.0]
    """
    return inplace_view(input, "as_strided_", "as_strided()",
                        lambda base: as_strided(base, size, stride, storage_offset))


def inplace_view(input: Tensor, name: str, instead: str,  # noqa: A002
                 make: Callable[[Tensor], Tensor]) -> Tensor:
    """``input`` itself becomes ``make(t)``, a view of ``t``, the tensor holding its storage
    (PyTorch's in-place view methods: ``as_strided_``, ``squeeze_``, ``t_``, ...); refused
    where xad would give a wrong answer later, each error naming ``instead``."""
    what = f"{name} of a tensor of shape {tuple(input.shape)}"
    if input.requires_grad and input._node is None:  # (under no_grad too)
        raise RuntimeError(f"{what}: a leaf that requires grad cannot change in place "
                           f"(xad would move its gradient to its storage); take "
                           f"{instead} of it, or change a clone()")
    if input._live_views():
        raise RuntimeError(f"{what}: it has views, which would keep its old geometry in xad; "
                           f"take {instead} instead")
    if input._base is not None and input._view_fn is None:
        raise NotImplementedError(f"{what}: a detach()/.data tensor; take {instead} of it")
    base = input
    if input._base is None:  # its storage (and graph) move to a tensor it then views
        base = Tensor._result(input._array, input._backend, input._node, input._idx,
                              input._vc)
        base.requires_grad = input.requires_grad
    input._become_view(make(base))
    return input


def as_strided_scatter(input: Tensor, src: Tensor, size: Sequence[int],  # noqa: A002
                       stride: Sequence[int], storage_offset: int | None = None) -> Tensor:
    """PyTorch's ``as_strided_scatter``: a copy of ``input`` with ``src`` written at the
    elements ``as_strided(size, stride, storage_offset)`` of it selects (positions in the
    copy's own row-major storage). Differentiable in both.

    Example:
        >>> import xad
        >>> xad.as_strided_scatter(xad.zeros(4), xad.ones(2), (2,), (2,), 1).tolist()
        [0.0, 1.0, 0.0, 1.0]
    """
    what = f"as_strided_scatter of a tensor of shape {tuple(input.shape)}"
    if tuple(src.shape) != tuple(size):
        raise RuntimeError(f"{what}: expected src to have the size of the slice, {list(size)}; "
                           f"got {list(src.shape)}")
    if not _layout.is_contiguous(input):
        raise NotImplementedError(f"{what}: PyTorch's result keeps the input's layout, whose "
                                  f"storage order xad does not follow; pass "
                                  f"input.contiguous()")
    out = input.clone()
    as_strided(out, size, stride, storage_offset).copy_(src)
    return out

