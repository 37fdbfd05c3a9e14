"""Convolutions as functions: ``conv1d/2d/3d``, ``conv_transpose1d/2d/3d``, ``unfold``, ``fold``.

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

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold"]

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
             stride: tuple[int, ...], where: str) -> tuple[tuple[int, int], ...]:
    """``(before, after)`` per spatial axis from an int, ints, ``"valid"`` or ``"same"``."""
    nd = len(kernel)
    if padding == "valid":
        return ((0, 0),) * nd
    if padding == "same":
        if any(s != 1 for s in stride):
            raise ValueError(f"{where}: padding='same' needs stride 1, got stride {stride}")
        tot = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in tot)
    if isinstance(padding, str):
        many = "a pair" if nd == 2 else f"{nd} ints"
        raise ValueError(f"{where}: padding must be an int, {many}, 'same' or 'valid', "
                         f"got {padding!r}")
    ps = _pair(padding, "padding", where, nd)
    if any(p < 0 for p in ps):
        raise ValueError(f"{where}: padding must be non-negative, got {padding!r}")
    return tuple((p, p) for p in ps)


def _check(x: Tensor, w: Tensor, groups: int, cin: int, where: str, nd: int = 2) -> None:
    if x.ndim != nd + 2 or w.ndim != nd + 2:
        raise ValueError(f"{where}: expected a {nd + 2}-d input (N, C, {_AXES[nd]}) and a "
                         f"{nd + 2}-d weight, got shapes {x.shape} and {w.shape}")
    if groups < 1 or x.shape[1] % groups or w.shape[0] % groups:
        raise ValueError(f"{where}: groups={groups} must divide the input channels "
                         f"({x.shape[1]}) and the weight's first axis ({w.shape[0]})")
    if x.shape[1] != cin:
        raise ValueError(f"{where}: the input has {x.shape[1]} channels (shape {x.shape}) but "
                         f"the weight of shape {w.shape} with groups={groups} expects {cin}")


_AXES = {1: "L", 2: "H, W", 3: "D, H, W"}


def _one_sample(f: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """Let ``f`` take unbatched input (one axis fewer than its weight), as PyTorch's."""
    @functools.wraps(f)
    def g(input: Tensor, weight: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if input.ndim == weight.ndim - 1:
            return _ops.squeeze(f(_ops.expand_dims(input, 0), weight, *args, **kwargs), axis=0)
        return f(input, weight, *args, **kwargs)
    return g


def _columns(x: Tensor, k: tuple[int, ...], s: tuple[int, ...], d: tuple[int, ...],
             pads: tuple[tuple[int, int], ...], sizes: list[int]) -> Tensor:
    """The windows of ``(N, C, *S)`` as ``(C, *k, Ho, Wo, M)``: 2-d, one ``im2col``; more
    axes, one window per tap of the first axis, its output positions joined to the batch
    (``M = D1o * N``, recursively ``D2o * D1o * N``...) so the GEMM stays one plain matrix
    product over ``C * prod(k)``."""
    if len(k) == 2:
        return im2col(x, (k[0], k[1]), (s[0], s[1]), (d[0], d[1]), pads[0] + pads[1])
    if pads[0] != (0, 0):
        x = pad(x, (0, 0) * (len(k) - 1) + pads[0])
    n, c, o = x.shape[0], x.shape[1], sizes[0]
    taps = []
    for i in range(k[0]):
        xs = x[:, :, i * d[0]:i * d[0] + s[0] * (o - 1) + 1:s[0]]
        xs = _ops.reshape(_ops.moveaxis(xs, 2, 0), (o * n, c, *x.shape[3:]))
        taps.append(_columns(xs, k[1:], s[1:], d[1:], pads[1:], sizes[1:]))
    return _ops.stack(taps, axis=1)


def _conv(input: Tensor, weight: Tensor, bias: Tensor | None, stride: IntPair,
          padding: str | IntPair, dilation: IntPair, groups: int, nd: int, where: str) -> Tensor:
    """An ``nd``-d (2 or more) convolution: :func:`_columns` and one (grouped) matrix
    product."""
    _check(input, weight, groups, weight.shape[1] * groups, where, nd)
    o, cg, *k = weight.shape
    s, d = _pair(stride, "stride", where, nd), _pair(dilation, "dilation", where, nd)
    pads = _padding(padding, tuple(k), d, s, where)
    sizes = [(n + lo + hi - di * (ke - 1) - 1) // st + 1
             for n, (lo, hi), di, ke, st in zip(input.shape[2:], pads, d, k, s)]
    if min(sizes) < 1:
        padded = "x".join(str(n + lo + hi) for n, (lo, hi) in zip(input.shape[2:], pads))
        raise ValueError(f"{where}: a kernel of {tuple(k)} (dilation {d}) is larger than the "
                         f"padded input {padded} (input shape {input.shape}, padding "
                         f"{pads}); use a smaller kernel or more padding")
    cols = _columns(input, tuple(k), s, d, pads, sizes)
    ck = cg * functools.reduce(lambda a, b: a * b, k)
    g = (groups,) if groups > 1 else ()  # one plain GEMM without groups: BLAS's best case
    cols = _ops.reshape(cols, (*g, ck, -1))
    out = _ops.matmul(_ops.reshape(weight, (*g, o // groups, ck)), cols)
    out = _ops.reshape(out, (o, *sizes[-2:], *reversed(sizes[:-2]), input.shape[0]))
    if bias is not None:  # in the product's dtype under autocast (PyTorch's), not float32
        (bias,) = autocast_low(bias, op=where)
        out = out + _ops.reshape(bias, (o,) + (1,) * (nd + 1))
    # (O, Ho, Wo, ..., D1o, N) to (N, O, D1o, ..., Ho, Wo): a view the next im2col reads
    return _ops.permute_dims(out, (nd + 1, 0, *(nd + 1 - j for j in range(1, nd - 1)), 1, 2))


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
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


@_one_sample
def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: IntPair = 1,
           padding: str | IntPair = 0, dilation: IntPair = 1, groups: int = 1) -> Tensor:
    """3-d convolution of ``(N, C, D, H, W)`` (or ``(C, D, H, W)``) by ``(O, C/groups, kd,
    kh, kw)``, giving ``(N, O, Do, Ho, Wo)``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.conv3d(xad.ones((1, 2, 4, 5, 5)), xad.ones((3, 2, 3, 3, 3)), padding=1).shape
        (1, 3, 4, 5, 5)
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


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


def _transposed_sizes(x: Tensor, k: Sequence[int], s: tuple[int, ...], p: tuple[int, ...],
                      d: tuple[int, ...], op: tuple[int, ...], where: str) -> list[int]:
    """A transposed convolution's output sizes ``(i - 1) * s - 2 * p + d * (k - 1) + op + 1``,
    checked as PyTorch checks them."""
    if any(a >= max(b, c) for a, b, c in zip(op, s, d)):
        raise ValueError(f"{where}: output_padding {op} must be smaller than the stride {s} "
                         f"or the dilation {d}")
    size = [(i - 1) * st - 2 * pa + di * (ke - 1) + o + 1
            for i, st, pa, di, ke, o in zip(x.shape[2:], s, p, d, k, op)]
    if min(size) < 1:
        raise ValueError(f"{where}: the output would be {'x'.join(map(str, size))} for input "
                         f"{x.shape}, weight of kernel {tuple(k)}, padding {p}; use less "
                         f"padding")
    return size


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
    size = _transposed_sizes(input, (kh, kw), s, p, d, op, where)
    n, _, h, w = input.shape
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


@_one_sample
def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntPair = 1, padding: IntPair = 0, output_padding: IntPair = 0,
                     groups: int = 1, dilation: IntPair = 1) -> Tensor:
    """Transposed 1-d convolution of ``(N, C, L)`` by ``(C, O/groups, k)`` (as
    :func:`conv_transpose2d` over a height-1 image).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.conv_transpose1d(xad.ones((1, 1, 3)), xad.ones((1, 1, 2)), stride=2).tolist()
        [[[1.0, 1.0, 1.0, 1.0, 1.0, 1.0]]]
    """
    w = "conv_transpose1d"
    if input.ndim != 3 or weight.ndim != 3:
        raise ValueError(f"{w}: expected a 3-d input (N, C, L) and a 3-d weight, got "
                         f"shapes {input.shape} and {weight.shape}")
    s, d = _pair(stride, "stride", w, 1), _pair(dilation, "dilation", w, 1)
    p, op = _pair(padding, "padding", w, 1), _pair(output_padding, "output_padding", w, 1)
    out = conv_transpose2d(_ops.expand_dims(input, 2), _ops.expand_dims(weight, 2), bias,
                           (1, *s), (0, *p), (0, *op), groups, (1, *d))
    return _ops.squeeze(out, axis=2)


def _dilated(x: Tensor, stride: tuple[int, ...]) -> Tensor:
    """``x`` with ``stride - 1`` zeros between neighbours along each spatial axis."""
    for a, st in enumerate(stride, start=2):
        if st > 1:
            n = x.shape[a]
            y = _ops.expand_dims(x, a + 1)
            y = pad(y, (0, 0) * (y.ndim - a - 2) + (0, st - 1))
            x = _ops.reshape(y, (*x.shape[:a], n * st, *x.shape[a + 1:]))
            x = _ops.moveaxis(_ops.moveaxis(x, a, 0)[:(n - 1) * st + 1], 0, a)
    return x


@_one_sample
def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: IntPair = 1, padding: IntPair = 0, output_padding: IntPair = 0,
                     groups: int = 1, dilation: IntPair = 1) -> Tensor:
    """Transposed 3-d convolution of ``(N, C, D, H, W)`` by ``(C, O/groups, kd, kh, kw)``:
    the input spread by ``stride``, padded by ``dilation * (k - 1) - padding`` (and
    ``output_padding`` after), convolved with the flipped weight.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> x, w = xad.ones((1, 2, 2, 3, 3)), xad.ones((2, 4, 2, 2, 2))
        >>> F.conv_transpose3d(x, w, stride=2).shape
        (1, 4, 4, 6, 6)
    """
    where = "conv_transpose3d"
    _check(input, weight, groups, weight.shape[0], where, 3)
    cin, og, *k = weight.shape
    s, d = _pair(stride, "stride", where, 3), _pair(dilation, "dilation", where, 3)
    p = _pair(padding, "padding", where, 3)
    op = _pair(output_padding, "output_padding", where, 3)
    _transposed_sizes(input, k, s, p, d, op, where)
    wt = _ops.reshape(weight, (groups, cin // groups, og, *k))
    wt = _ops.reshape(_ops.permute_dims(wt, (0, 2, 1, 3, 4, 5)), (groups * og, cin // groups, *k))
    amounts = [a for j in (2, 1, 0) for a in (d[j] * (k[j] - 1) - p[j],
                                              d[j] * (k[j] - 1) - p[j] + op[j])]
    x = pad(_dilated(input, s), amounts)
    return conv3d(x, _ops.flip(wt, axis=(2, 3, 4)), bias, 1, 0, d, groups)


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
