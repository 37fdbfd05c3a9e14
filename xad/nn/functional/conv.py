"""Convolutions as functions: ``conv1d``, ``conv2d``, ``conv_transpose2d`` and ``unfold``.

Each is ``im2col`` (strided slices) and one matrix product through ``xad.matmul`` (the one
place a mixed-precision cast applies), so gradients of every order come from those two
operations: the input gradient of a convolution is ``col2im``, a transposed convolution.
Layouts are PyTorch's: input ``(N, C, H, W)``, weight ``(out, in/groups, kh, kw)`` (for the
transposed convolution ``(in, out/groups, kh, kw)``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Literal, overload

from ... import ops as _ops
from ...ops.amp_cast import autocast_low
from ...ops.convolution import col2im, im2col
from ...tensor import Tensor
from .padding import pad

__all__ = ["conv1d", "conv2d", "conv_transpose2d", "unfold", "fold"]

IntPair = int | Sequence[int]


@overload
def _pair(v: IntPair, what: str, where: str, n: Literal[2] = 2) -> tuple[int, int]: ...
@overload
def _pair(v: IntPair, what: str, where: str, n: int) -> tuple[int, ...]: ...
def _pair(v: IntPair, what: str, where: str, n: int = 2) -> tuple[int, ...]:
    t = (v,) * n if isinstance(v, int) else tuple(int(a) for a in v)
    if len(t) != n:
        raise ValueError(f"{where}: {what} must be an int or {n} ints, got {v!r}")
    return t


def _padding(padding: str | IntPair, kernel: tuple[int, ...], dilation: tuple[int, ...],
             stride: tuple[int, ...], where: str) -> tuple[int, int, int, int]:
    """``(top, bottom, left, right)`` from an int, a pair, ``"valid"`` or ``"same"``."""
    if padding == "valid":
        return (0, 0, 0, 0)
    if padding == "same":
        if any(s != 1 for s in stride):
            raise ValueError(f"{where}: padding='same' needs stride 1, got stride {stride}")
        tot = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return (tot[0] // 2, tot[0] - tot[0] // 2, tot[1] // 2, tot[1] - tot[1] // 2)
    if isinstance(padding, str):
        raise ValueError(f"{where}: padding must be an int, a pair, 'same' or 'valid', "
                         f"got {padding!r}")
    ph, pw = _pair(padding, "padding", where)
    if ph < 0 or pw < 0:
        raise ValueError(f"{where}: padding must be non-negative, got {padding!r}")
    return (ph, ph, pw, pw)


def _check(x: Tensor, w: Tensor, groups: int, cin: int, where: str) -> None:
    if x.ndim != 4 or w.ndim != 4:
        raise ValueError(f"{where}: expected a 4-d input (N, C, H, W) and a 4-d weight, got "
                         f"shapes {x.shape} and {w.shape}")
    if groups < 1 or x.shape[1] % groups or w.shape[0] % groups:
        raise ValueError(f"{where}: groups={groups} must divide the input channels "
                         f"({x.shape[1]}) and the weight's first axis ({w.shape[0]})")
    if x.shape[1] != cin:
        raise ValueError(f"{where}: the input has {x.shape[1]} channels (shape {x.shape}) but "
                         f"the weight of shape {w.shape} with groups={groups} expects {cin}")


def _one_sample(f: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """Let ``f`` take unbatched input (one axis fewer than its weight), as PyTorch's."""
    @functools.wraps(f)
    def g(input: Tensor, weight: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if input.ndim == weight.ndim - 1:
            return _ops.squeeze(f(_ops.expand_dims(input, 0), weight, *args, **kwargs), axis=0)
        return f(input, weight, *args, **kwargs)
    return g


@_one_sample
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntPair = 1,
           padding: str | IntPair = 0, dilation: IntPair = 1, groups: int = 1) -> Tensor:
    """2-d convolution (cross-correlation, as PyTorch) of ``(N, C, H, W)`` (or ``(C, H, W)``)
    by ``(O, C/groups, kh, kw)``, giving ``(N, O, Ho, Wo)``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.conv2d(xad.ones((1, 2, 5, 5)), xad.ones((4, 2, 3, 3)), padding=1).shape
        (1, 4, 5, 5)
    """
    _check(input, weight, groups, weight.shape[1] * groups, "conv2d")
    o, cg, kh, kw = weight.shape
    s, d = _pair(stride, "stride", "conv2d"), _pair(dilation, "dilation", "conv2d")
    pads = _padding(padding, (kh, kw), d, s, "conv2d")
    cols = im2col(input, (kh, kw), s, d, pads)
    ho, wo, n = cols.shape[3:]
    g = (groups,) if groups > 1 else ()  # one plain GEMM without groups: BLAS's best case
    cols = _ops.reshape(cols, (*g, cg * kh * kw, ho * wo * n))
    out = _ops.matmul(_ops.reshape(weight, (*g, o // groups, cg * kh * kw)), cols)
    out = _ops.reshape(out, (o, ho, wo, n))
    if bias is not None:  # in the product's dtype under autocast (PyTorch's), not float32
        (bias,) = autocast_low(bias, op="conv2d")
        out = out + _ops.reshape(bias, (o, 1, 1, 1))
    return _ops.permute_dims(out, (3, 0, 1, 2))  # a view: the next im2col reads it as is


@_one_sample
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntPair = 1,
           padding: str | IntPair = 0, dilation: IntPair = 1, groups: int = 1) -> Tensor:
    """1-d convolution of ``(N, C, L)`` by ``(O, C/groups, k)``, giving ``(N, O, Lo)``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.conv1d(xad.ones((1, 2, 7)), xad.ones((3, 2, 3)), padding="same").shape
        (1, 3, 7)
    """
    if input.ndim != 3 or weight.ndim != 3:
        raise ValueError(f"conv1d: expected a 3-d input (N, C, L) and a 3-d weight, got "
                         f"shapes {input.shape} and {weight.shape}")
    pad = padding if isinstance(padding, str) else (0, _pair(padding, "padding", "conv1d", 1)[0])
    stride2 = (1, *_pair(stride, "stride", "conv1d", 1))
    dilation2 = (1, *_pair(dilation, "dilation", "conv1d", 1))
    out = conv2d(_ops.expand_dims(input, 2), _ops.expand_dims(weight, 2), bias, stride2, pad,
                 dilation2, groups)
    return _ops.squeeze(out, axis=2)


@_one_sample
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntPair = 1, padding: IntPair = 0, output_padding: IntPair = 0,
                     groups: int = 1, dilation: IntPair = 1) -> Tensor:
    """Transposed 2-d convolution (the gradient of ``conv2d`` with respect to its input) of
    ``(N, C, H, W)`` by ``(C, O/groups, kh, kw)``, giving ``(N, O, Ho, Wo)`` with
    ``Ho = (H - 1) * stride - 2 * padding + dilation * (kh - 1) + output_padding + 1``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.conv_transpose2d(xad.ones((1, 2, 4, 4)), xad.ones((2, 3, 3, 3)), stride=2).shape
        (1, 3, 9, 9)
    """
    where = "conv_transpose2d"
    _check(input, weight, groups, weight.shape[0], where)
    cin, og, kh, kw = weight.shape
    s, d = _pair(stride, "stride", where), _pair(dilation, "dilation", where)
    p, op = _pair(padding, "padding", where), _pair(output_padding, "output_padding", where)
    if any(a >= max(b, c) for a, b, c in zip(op, s, d)):
        raise ValueError(f"{where}: output_padding {op} must be smaller than the stride {s} "
                         f"or the dilation {d}")
    n, _, h, w = input.shape
    size = [(i - 1) * st - 2 * pa + di * (k - 1) + o + 1
            for i, st, pa, di, k, o in zip((h, w), s, p, d, (kh, kw), op)]
    if size[0] < 1 or size[1] < 1:
        raise ValueError(f"{where}: the output would be {size[0]}x{size[1]} for input {input.shape}"
                         f", weight {weight.shape}, padding {p}; use less padding")
    g = (groups,) if groups > 1 else ()
    x = _ops.reshape(_ops.permute_dims(input, (1, 2, 3, 0)), (*g, cin // groups, h * w * n))
    wt = _ops.matrix_transpose(_ops.reshape(weight, (*g, cin // groups, og * kh * kw)))
    cols = _ops.reshape(_ops.matmul(wt, x), (og * groups, kh, kw, h, w, n))
    extra = [max(o - a, 0) for o, a in zip(op, p)]  # output rows past the bottom padding
    pads = (p[0], p[0] - op[0] + extra[0], p[1], p[1] - op[1] + extra[1])
    shape = (n, og * groups, size[0] - extra[0], size[1] - extra[1])
    out = col2im(cols, shape, (kh, kw), s, d, pads)
    if extra[0] or extra[1]:
        out = pad(out, (0, extra[1], 0, extra[0]))
    if bias is not None:
        (bias,) = autocast_low(bias, op="conv_transpose2d")
        out = out + _ops.reshape(bias, (og * groups, 1, 1))
    return out


def unfold(input: Tensor, kernel_size: IntPair, dilation: IntPair = 1, padding: IntPair = 0,
           stride: IntPair = 1) -> Tensor:
    """PyTorch's ``unfold`` (im2col): the sliding blocks of ``(N, C, H, W)`` as
    ``(N, C*kh*kw, L)`` (of ``(C, H, W)`` as ``(C*kh*kw, L)``).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.unfold(xad.ones((2, 3, 4, 4)), 2).shape
        (2, 12, 9)
    """
    if input.ndim == 3:  # one (C, H, W) sample: (C*kh*kw, L)
        return _ops.squeeze(unfold(_ops.expand_dims(input, 0), kernel_size, dilation,
                                   padding, stride), axis=0)
    k = _pair(kernel_size, "kernel_size", "unfold")
    ph, pw = _pair(padding, "padding", "unfold")
    cols = im2col(input, k, _pair(stride, "stride", "unfold"),
                  _pair(dilation, "dilation", "unfold"), (ph, ph, pw, pw))
    c, n = input.shape[1], input.shape[0]
    cols = _ops.permute_dims(cols, (5, 0, 1, 2, 3, 4))
    return _ops.reshape(cols, (n, c * k[0] * k[1], cols.shape[4] * cols.shape[5]))


def fold(input: Tensor, output_size: IntPair, kernel_size: IntPair, dilation: IntPair = 1,
         padding: IntPair = 0, stride: IntPair = 1) -> Tensor:
    """PyTorch's ``fold`` (col2im), the adjoint of :func:`unfold`: blocks ``(N, C*kh*kw, L)``
    (or ``(C*kh*kw, L)``) summed into ``(N, C) + output_size``; overlaps add up.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.fold(xad.ones((1, 4, 4)), (3, 3), 2)[0, 0].tolist()
        [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """
    w = "fold"
    if input.ndim == 2:
        return _ops.squeeze(fold(_ops.expand_dims(input, 0), output_size, kernel_size,
                                 dilation, padding, stride), axis=0)
    k, out = _pair(kernel_size, "kernel_size", w), _pair(output_size, "output_size", w)
    ph, pw = _pair(padding, "padding", w)
    if input.ndim != 3 or input.shape[1] % (k[0] * k[1]):
        raise ValueError(f"fold: expected (N, C*kh*kw, L) input with C*kh*kw divisible by "
                         f"the kernel's {k[0] * k[1]} elements, got shape {input.shape}")
    n, c = input.shape[0], input.shape[1] // (k[0] * k[1])
    cols = _ops.reshape(input, (n, c, k[0], k[1], -1))
    s, d = _pair(stride, "stride", w), _pair(dilation, "dilation", w)
    ho = (out[0] + 2 * ph - d[0] * (k[0] - 1) - 1) // s[0] + 1
    wo = (out[1] + 2 * pw - d[1] * (k[1] - 1) - 1) // s[1] + 1
    if ho < 1 or wo < 1 or ho * wo != input.shape[2]:
        raise ValueError(f"fold: {input.shape[2]} blocks do not tile output_size {out} with "
                         f"kernel {k}, dilation {d}, padding {(ph, pw)}, stride {s} "
                         f"({max(ho, 0) * max(wo, 0)} expected)")
    cols = _ops.permute_dims(_ops.reshape(cols, (n, c, k[0], k[1], ho, wo)),
                             (1, 2, 3, 4, 5, 0))
    return col2im(cols, (n, c, *out), k, s, d, (ph, ph, pw, pw))
