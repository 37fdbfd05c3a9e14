"""Sliding windows: ``im2col`` (the patches of an image, by strided slicing) and its adjoint
``col2im`` (patches added back into an image). Each is the other's gradient, so both are
linear and differentiable to any order; convolutions and pooling are built from them and
``matmul`` (in ``xad.nn.functional``).

Layouts: an image is ``(N, C, H, W)``; its patches are ``(C, kh, kw, Ho, Wo, N)``, so that
``reshape(cols, (C*kh*kw, Ho*Wo*N))`` is the matrix of one convolution GEMM with no copy, and
the batch axis is innermost: every strided copy moves runs of ``N`` (or ``Wo*N``) contiguous
numbers, not of ``Wo`` (5-10x faster in NumPy on small images). A convolution's output
``(O, Ho, Wo, N)`` viewed as ``(N, O, Ho, Wo)`` is then already in the layout the next
``im2col`` reads. ``pads`` is ``(top, bottom, left, right)``; ``value`` fills the padding
(``-inf`` for max pooling).

The reference path uses only the standard (strided slices, ``stack``, ``concat``); arrays are
written in place where the backend allows and rebuilt where it does not (JAX). A backend may
answer :meth:`xad.Backend.im2col` / :meth:`xad.Backend.col2im` with a faster native result
(the same numbers); ``None`` means "use the reference path".
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from ._apply import Op, unary
from .manipulation import moveaxis
from .shape import reshape
from .tangent import linear_jvp

__all__ = ["im2col", "col2im"]

Pair = tuple[int, int]


def _out_size(n: int, k: int, s: int, d: int, lo: int, hi: int) -> int:
    return (n + lo + hi - d * (k - 1) - 1) // s + 1


def _pad_axis(b: Any, x: Any, axis: int, lo: int, hi: int, value: float) -> Any:
    if lo == 0 and hi == 0:
        return x
    xp = b.xp

    def block(n: int) -> Any:
        shape = list(x.shape)
        shape[axis] = n
        return xp.full(tuple(shape), value, dtype=x.dtype, device=b.device)

    parts = ([block(lo)] if lo else []) + [x] + ([block(hi)] if hi else [])
    return xp.concat(parts, axis=axis)


def _window(start: int, count: int, step: int) -> slice:
    return slice(start, start + step * (count - 1) + 1, step)


class Im2col(Op):
    """``(N, C, H, W)`` -> ``(C, kh, kw, Ho, Wo, N)``: one strided slice per kernel tap."""

    name = "im2col"

    @staticmethod
    def forward(b, x, kernel, stride, dilation, pads, value):
        fast = b.im2col(x, kernel, stride, dilation, pads, value)
        if fast is not None:
            return fast
        xp = b.xp
        xt = xp.permute_dims(x, (1, 2, 3, 0))
        xt = _pad_axis(b, _pad_axis(b, xt, 1, pads[0], pads[1], value), 2, pads[2], pads[3],
                       value)
        (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
        ho = (xt.shape[1] - dh * (kh - 1) - 1) // sh + 1
        wo = (xt.shape[2] - dw * (kw - 1) - 1) // sw + 1
        taps = [xt[:, _window(i * dh, ho, sh), _window(j * dw, wo, sw), :]
                for i in range(kh) for j in range(kw)]
        cols = xp.stack(taps, axis=1)
        return xp.reshape(cols, (x.shape[1], kh, kw, ho, wo, x.shape[0]))

    @staticmethod
    def backward(node, g):
        p = node.params
        return col2im(g, node.in_shapes[0], p["kernel"], p["stride"], p["dilation"], p["pads"])

    @staticmethod
    def jvp(primals, tangents, out, **params):
        return unary(Im2col, tangents[0], **{**params, "value": 0})  # affine: pads add nothing

    @staticmethod
    def batch(args, batched, **params):
        """The vmap batch joins the image batch: ``(B, N, ...)`` as ``B*N`` images, the
        windows' last axis split back and the batch axis moved first."""
        x = args[0]
        nb, n = x.shape[0], x.shape[1]
        cols = unary(Im2col, reshape(x, (nb * n,) + tuple(x.shape[2:])), **params)
        cols = reshape(cols, tuple(cols.shape[:5]) + (nb, n))
        return moveaxis(cols, 5, 0), True


class Col2im(Op):
    """``(C, kh, kw, Ho, Wo, N)`` -> ``(N, C, H, W)``: each tap's slice added back."""

    name = "col2im"

    @staticmethod
    def forward(b, cols, shape, kernel, stride, dilation, pads):
        fast = b.col2im(cols, shape, kernel, stride, dilation, pads)
        if fast is not None:
            return fast
        xp = b.xp
        n, c, h, w = shape
        (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
        ho, wo = cols.shape[3], cols.shape[4]
        if (sh, sw) == (kh, kw) and (dh, dw) == (1, 1) and (ho * kh, wo * kw) == (h, w) \
                and not any(pads):  # windows tile the image: a transpose, no sums
            tiles = xp.permute_dims(cols, (0, 3, 1, 4, 2, 5))
            return xp.permute_dims(xp.reshape(tiles, (c, h, w, n)), (3, 0, 1, 2))
        z = xp.zeros((c, h + pads[0] + pads[1], w + pads[2] + pads[3], n), dtype=cols.dtype,
                     device=b.device)
        for i in range(kh):
            for j in range(kw):
                key = (slice(None), _window(i * dh, ho, sh), _window(j * dw, wo, sw), ...)
                if b.mutable:
                    z[key] += cols[:, i, j, ...]
                else:
                    z = b.index_add(z, key, cols[:, i, j, ...])
        z = z[:, pads[0]:pads[0] + h, pads[2]:pads[2] + w, :]
        return xp.permute_dims(z, (3, 0, 1, 2))

    @staticmethod
    def backward(node, g):
        p = node.params
        return im2col(g, p["kernel"], p["stride"], p["dilation"], p["pads"])

    jvp = classmethod(linear_jvp)

    @staticmethod
    def batch(args, batched, shape, **params):
        """As :meth:`Im2col.batch`: the vmap batch joins the windows' image batch."""
        cols = moveaxis(args[0], 0, 5)
        nb = cols.shape[5]
        cols = reshape(cols, tuple(cols.shape[:5]) + (nb * shape[0],))
        out = unary(Col2im, cols, shape=(nb * shape[0],) + tuple(shape[1:]), **params)
        return reshape(out, (nb,) + tuple(shape)), True


def im2col(x: Tensor, kernel: Pair, stride: Pair = (1, 1), dilation: Pair = (1, 1),
           pads: tuple[int, int, int, int] = (0, 0, 0, 0), value: float = 0.0) -> Tensor:
    """The sliding windows of an ``(N, C, H, W)`` tensor as ``(C, kh, kw, Ho, Wo, N)``.

    Example:
        >>> import xad
        >>> from xad.ops.convolution import im2col
        >>> im2col(xad.ones((2, 3, 5, 5)), (3, 3), pads=(1, 1, 1, 1)).shape
        (3, 3, 3, 5, 5, 2)
    """
    if x.ndim != 4:
        raise ValueError(f"im2col: expected an (N, C, H, W) input, got shape {x.shape}")
    ho = _out_size(x.shape[2], kernel[0], stride[0], dilation[0], pads[0], pads[1])
    wo = _out_size(x.shape[3], kernel[1], stride[1], dilation[1], pads[2], pads[3])
    if ho < 1 or wo < 1:
        raise ValueError(f"im2col: a kernel of {tuple(kernel)} (dilation {tuple(dilation)}) "
                         f"is larger than the padded input {x.shape[2] + pads[0] + pads[1]}x"
                         f"{x.shape[3] + pads[2] + pads[3]} (input shape {x.shape}, padding "
                         f"{tuple(pads)}); use a smaller kernel or more padding")
    return unary(Im2col, x, kernel=tuple(kernel), stride=tuple(stride),
                 dilation=tuple(dilation), pads=tuple(pads), value=value)


def col2im(cols: Tensor, shape: tuple[int, int, int, int], kernel: Pair,
           stride: Pair = (1, 1), dilation: Pair = (1, 1),
           pads: tuple[int, int, int, int] = (0, 0, 0, 0)) -> Tensor:
    """Add ``(C, kh, kw, Ho, Wo, N)`` windows back into an image of ``shape`` (the adjoint
    of :func:`im2col`).

    Example:
        >>> import xad
        >>> from xad.ops.convolution import col2im, im2col
        >>> col2im(im2col(xad.ones((1, 1, 3, 3)), (2, 2)), (1, 1, 3, 3), (2, 2)).tolist()
        [[[[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]]]
    """
    want = (shape[1], *kernel,
            _out_size(shape[2], kernel[0], stride[0], dilation[0], pads[0], pads[1]),
            _out_size(shape[3], kernel[1], stride[1], dilation[1], pads[2], pads[3]), shape[0])
    if tuple(cols.shape) != want:
        raise ValueError(f"col2im: windows of shape {cols.shape} do not fit an image of shape "
                         f"{tuple(shape)} with kernel {tuple(kernel)}; expected {want}")
    return unary(Col2im, cols, shape=tuple(shape), kernel=tuple(kernel), stride=tuple(stride),
                 dilation=tuple(dilation), pads=tuple(pads))
