"""Layers as functions: linear maps, activations, dropout, normalisation, embeddings."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ... import autograd as _ag
from ... import dtypes as _dt
from ... import ops as _ops
from ...context import HOOKED, context
from ...factories import arange, ones_like, rand, zeros_like
from ...ops.amp_cast import HALF, autocast_float32
from ...ops.device_checks import report_bounds
from ...ops.fused import dropout_mask, range_ends
from ...ops.indexing import getitem_raw
from ...ops.linalg import linear_act
from ...ops.normalization import FULL_PRECISION, layer_norm_node
from ...ops.normalization import layer_norm as layer_norm_op
from ...ops.norms import vector_norm
from ...tensor import Tensor
from .activations import in_place

__all__ = [
    "linear", "linear_activation", "relu", "tanh", "sigmoid", "gelu", "softplus", "softmax",
    "log_softmax",
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
    "layer_norm",
    "batch_norm", "group_norm", "embedding",
    "embedding_renorm_", "one_hot",
    "flatten",
]


def _axis(axis: int | None, dim: int | None, default: int = -1) -> int:
    if axis is not None and dim is not None and axis != dim:
        raise TypeError(f"pass axis or dim, not both (got axis={axis}, dim={dim})")
    a = axis if axis is not None else dim
    return default if a is None else a


def _softmax_axis(name: str, x: Tensor, axis: int | None, dim: int | None) -> int:
    """``axis`` or ``dim``; else the last axis, where PyTorch's implicit choice agrees (an
    input of at most 2 dimensions). A larger input must say which: PyTorch's deprecated
    implicit ``dim`` is 0 for 3 dimensions and 1 beyond, not the last axis."""
    if axis is None and dim is None and x.ndim >= 3:
        raise ValueError(f"{name}: pass dim= for an input of shape {tuple(x.shape)}: "
                         f"PyTorch's implicit (deprecated) choice would be dim="
                         f"{0 if x.ndim == 3 else 1}, xad's the last axis; dim=-1 is the last")
    return _axis(axis, dim)


def _check_in_range(t: Tensor, n: int, where: str, what: str, bound: str,
                    ignore: int | None = None) -> None:
    """Raise IndexError unless every value of ``t`` (other than ``ignore``) is in
    ``[0, n)``. Two reductions on the device; :meth:`Backend.check_bounds` reads them at
    once on the CPU and at the next host read on CuPy (no sync inside a training step)."""
    if 0 in t.shape:
        return
    if t.dtype.name.startswith("uint"):  # (-t and a negative ignore wrap in an unsigned dtype)
        t = t.astype(_dt.int64)
    site = (where, what, bound, n, ignore)
    b = t._backend
    if b.is_host and not context.mode & HOOKED:  # nothing records or maps: the host reads at once
        exc = _range_message(site, *_host_range(b, t._array, ignore, n))
        if exc is not None:
            raise exc
        return
    worst = range_ends(t, ignore).astype(_dt.int64)  # [-min, max], ignore read as 0
    report_bounds(worst, site, _range_error)


def _host_range(b: Any, a: Any, ignore: int | None, n: int) -> tuple[int, int]:
    """``(min, max)`` of the host integer array ``a``, each ``ignore`` read as 0 (which
    matters only when it is out of ``[0, n)``: looked at only then)."""
    xp = b.xp
    lo, hi = b.item(xp.min(a)), b.item(xp.max(a))
    if ignore is not None and not (0 <= lo and hi < n):
        a = xp.where(a == ignore, xp.zeros_like(a), a)
        lo, hi = b.item(xp.min(a)), b.item(xp.max(a))
    return int(lo), int(hi)


def _range_error(site: tuple, worst: Any) -> IndexError | None:
    """The error of :func:`_check_in_range` for the host values ``[-min, max]`` (shape
    ``(..., 2)``: vmap's batch), if any."""
    return _range_message(site, -int(worst[..., 0].max()), int(worst[..., 1].max()))


def _range_message(site: tuple, lo: int, hi: int) -> IndexError | None:
    """The error for targets from ``lo`` to ``hi``, if any (``site``: as for
    :func:`_range_error`)."""
    where, what, bound, n, ignore = site
    if 0 <= lo and hi < n:
        return None
    return IndexError(f"{where}: {what} {hi if hi >= n else lo} is out of bounds for {bound} "
                      f"= {n}" + (f" (ignore_index is {ignore})" if ignore is not None else "")
                      + f"; valid values are 0 to {n - 1}")


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias`` with ``weight`` of shape ``(out, in)``, as in PyTorch.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.linear(xad.ones(2, 3), xad.ones(4, 3), xad.zeros(4)).shape
        (2, 4)
    """
    if x.shape[-1:] != weight.shape[-1:]:
        raise ValueError(f"linear: the input's last axis has size {x.shape[-1:]} but the "
                         f"weight has shape {weight.shape} (out_features, in_features); "
                         f"they must agree on in_features")
    if x.dtype is not weight.dtype and context.autocast is None:
        raise TypeError(f"linear: the input has dtype {x.dtype} but the weight {weight.dtype} "
                        f"(input shape {x.shape}, weight {weight.shape}); PyTorch's layers do "
                        f"not promote: cast the input (x.to(weight.dtype)) or the layer "
                        f"(.double(), .to(dtype))")
    return _ops.linear(x, weight, bias)


def linear_activation(x: Tensor, weight: Tensor, bias: Tensor | None, act: str) -> Tensor:
    """``act(linear(x, weight, bias))`` for ``act`` ``"relu"`` or ``"gelu"`` (exact): with a
    bias, outside autocast, one node whose bias and activation are one kernel on CuPy
    (``Linear`` then ``ReLU``/``GELU`` in a ``Sequential``, a Transformer's feed-forward
    block); the same numbers as the two calls.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.linear_activation(xad.ones(1, 2), -xad.ones(3, 2), xad.ones(3), "relu").tolist()
        [[0.0, 0.0, 0.0]]
    """
    if bias is None or context.autocast is not None or weight.ndim != 2 or x.ndim == 0 \
            or not x.dtype.is_floating or not (x.dtype is weight.dtype is bias.dtype) \
            or x.shape[-1] != weight.shape[1] or bias.shape != weight.shape[:1]:
        return (relu if act == "relu" else gelu)(linear(x, weight, bias))
    return linear_act(x, weight, bias, act)


def relu(x: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)``; with ``inplace``, written into ``x`` (PyTorch's ``inplace=True``)."""
    if inplace:
        return in_place(_ops.relu, x, "relu_")
    return _ops.relu(x)


def tanh(x: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return _ops.tanh(x)


def sigmoid(x: Tensor) -> Tensor:
    """Logistic sigmoid."""
    return _ops.sigmoid(x)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU (exact, or ``approximate="tanh"``)."""
    return _ops.gelu(x, approximate=approximate)


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, stably; ``x`` itself where ``beta x > threshold``
    (PyTorch's; with the defaults the stable form alone, equal to rounding there).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> [round(v, 4) for v in F.softplus(xad.tensor([-1.0, 30.0]), beta=2.0).tolist()]
        [0.0635, 30.0]
    """
    if beta == 1.0 and threshold == 20.0:
        return _ops.softplus(x)
    bx = x * beta
    return _ops.where(bx > threshold, x, _ops.softplus(bx) / beta)


def softmax(x: Tensor, axis: int | None = None, *, dim: int | None = None,
            dtype: Any = None) -> Tensor:
    """Softmax along ``axis`` (or PyTorch's ``dim``; given neither, the last axis of an
    input of at most 2 dimensions, and an error for more: PyTorch's implicit choice differs);
    ``dtype`` casts the input first, as PyTorch's.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.softmax(xad.zeros(1, 2), axis=-1).tolist()
        [[0.5, 0.5]]
    """
    x = x if dtype is None else x.astype(dtype)
    return _ops.softmax(x, axis=_softmax_axis("softmax", x, axis, dim))


def log_softmax(x: Tensor, axis: int | None = None, *, dim: int | None = None,
                dtype: Any = None) -> Tensor:
    """Log of the softmax along ``axis`` (``dim``; the default as :func:`softmax`'s),
    computed stably; ``dtype`` casts the input first."""
    x = x if dtype is None else x.astype(dtype)
    return _ops.log_softmax(x, axis=_softmax_axis("log_softmax", x, axis, dim))


def dropout(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``, when
    ``training``. The mask is drawn from the backend's seeded generator. ``inplace=True``
    writes the result into ``x`` (its version bumps; a leaf that requires grad refuses) and
    returns ``x``, as PyTorch's.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.dropout(xad.ones(3), 0.5, training=False).tolist()
        [1.0, 1.0, 1.0]
        >>> x = xad.ones(4); F.dropout(x, 1.0, inplace=True) is x, x.tolist()
        (True, [0.0, 0.0, 0.0, 0.0])
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return x.mul_(0.0) if inplace else x * 0.0
    u = rand(*x.shape, dtype=x.dtype if x.dtype.is_floating else None, backend=x._backend)
    mask = dropout_mask(u, p)  # (u >= p) / (1 - p): one kernel on CuPy
    mask = mask if mask.dtype is x.dtype else mask.astype(x.dtype)
    return x.mul_(mask) if inplace else x * mask


def _feature_dropout(name: str, x: Tensor, p: float, training: bool, inplace: bool,
                     spatial: int) -> Tensor:
    """Zero whole channels (the ``spatial`` trailing axes at once) of batched or unbatched
    input with probability ``p``; scale the rest by ``1/(1-p)``."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: p must be in [0, 1], got {p}")
    if x.ndim not in (spatial + 1, spatial + 2):
        what = ("L", "H, W", "D, H, W")[spatial - 1]
        raise ValueError(f"{name}: expected (N, C, {what}) or (C, {what}) input, got "
                         f"shape {x.shape}")
    if not training or p == 0.0:
        return x
    mask_shape = x.shape[:-spatial] + (1,) * spatial
    u = rand(*mask_shape, dtype=x.dtype if x.dtype.is_floating else None, backend=x._backend)
    mask = (u >= p).astype(x.dtype) * (1.0 / (1.0 - p) if p < 1.0 else 0.0)
    return x.mul_(mask) if inplace else x * mask


def dropout1d(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,
              ) -> Tensor:
    """Zero whole channels of ``(N, C, L)`` (or ``(C, L)``) input with probability ``p`` and
    scale the rest by ``1/(1-p)``, when ``training`` (``inplace``: into ``x``).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.dropout1d(xad.ones((1, 2, 3)), 0.5, training=False).shape
        (1, 2, 3)
    """
    return _feature_dropout("dropout1d", x, p, training, inplace, 1)


def dropout2d(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,
              ) -> Tensor:
    """Zero whole channels of ``(N, C, H, W)`` (or ``(C, H, W)``) input with probability
    ``p`` and scale the rest by ``1/(1-p)``, when ``training`` (``inplace``: into ``x``).

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.dropout2d(xad.ones((1, 2, 2, 2)), 0.5, training=False).shape
        (1, 2, 2, 2)
    """
    return _feature_dropout("dropout2d", x, p, training, inplace, 2)


def dropout3d(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,
              ) -> Tensor:
    """Zero whole channels of ``(N, C, D, H, W)`` (or ``(C, D, H, W)``) input with
    probability ``p`` and scale the rest by ``1/(1-p)``, when ``training``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.dropout3d(xad.ones((1, 2, 1, 2, 2)), 0.5, training=False).shape
        (1, 2, 1, 2, 2)
    """
    return _feature_dropout("dropout3d", x, p, training, inplace, 3)


_ALPHA = 1.7580993408473766  # SELU's scale * alpha: the value a dropped unit takes, negated


def alpha_dropout(x: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False,
                  ) -> Tensor:
    """Dropout for SELU networks, when ``training`` (PyTorch's default here is ``False``):
    each element is dropped to SELU's negative saturation with probability ``p``, then an
    affine map ``a * y + b`` keeps a zero-mean, unit-variance input's mean and variance.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.alpha_dropout(xad.ones(3), 0.5).tolist()
        [1.0, 1.0, 1.0]
    """
    return _alpha_dropout("alpha_dropout", x, p, training, inplace, x.shape)


def feature_alpha_dropout(x: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """:func:`alpha_dropout` of whole channels of ``(N, C, ...)`` input (one draw for each
    ``(n, c)``), when ``training``; as PyTorch's, the first two axes are ``N`` and ``C``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.feature_alpha_dropout(xad.ones(1, 2, 3), 0.5).shape
        (1, 2, 3)
    """
    if x.ndim < 2:
        raise ValueError(f"feature_alpha_dropout: needs (N, C, ...) input with at least 2 "
                         f"dimensions, got shape {x.shape}")
    return _alpha_dropout("feature_alpha_dropout", x, p, training, inplace,
                          x.shape[:2] + (1,) * (x.ndim - 2))


def _alpha_dropout(name: str, x: Tensor, p: float, training: bool, inplace: bool,
                   mask_shape: tuple[int, ...]) -> Tensor:
    """Alpha dropout with one draw for each element of ``mask_shape`` (broadcast to ``x``)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:  # PyTorch's: everything zero
        return x.mul_(0.0) if inplace else x * 0.0
    u = rand(*mask_shape, dtype=x.dtype if x.dtype.is_floating else None, backend=x._backend)
    keep = (u >= p).astype(x.dtype)
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1.0) * (1.0 - p))
    b = (keep - 1.0) * (_ALPHA * a) + _ALPHA * a * p
    return x.mul_(keep * a).add_(b) if inplace else x * (keep * a) + b


def group_norm(x: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise ``(N, C, ...)`` input over each group of ``C / num_groups`` channels (and
    all the other axes but the batch), then scale and shift per channel.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> y = F.group_norm(xad.randn(2, 4, 3), 2); abs(y[0, :2].mean().item()) < 1e-5
        True
    """
    if x.ndim < 2 or num_groups < 1 or x.shape[1] % num_groups:
        raise ValueError(f"group_norm: num_groups={num_groups} must divide the channels of "
                         f"an (N, C, ...) input, got shape {x.shape}")
    x, weight, bias = autocast_float32(x, weight, bias, op="group_norm")  # as layer_norm
    y = _ops.standardize(x.reshape((x.shape[0], num_groups, -1)), -1, eps).reshape(x.shape)
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def _shape_tuple(s: int | Sequence[int]) -> tuple[int, ...]:
    return (int(s),) if isinstance(s, int) else tuple(int(n) for n in s)


def layer_norm(x: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` axes (mean 0, variance 1), then scale
    and shift.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> y = F.layer_norm(xad.tensor([[1.0, 3.0]]), 2); [round(v, 3) for v in y.tolist()[0]]
        [-1.0, 1.0]
    """
    shape = _shape_tuple(normalized_shape)
    if not shape:
        raise ValueError("layer_norm: normalized_shape must hold at least one axis, got ()")
    if tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise ValueError(f"layer_norm: normalized_shape {shape} does not match the trailing "
                         f"axes of an input of shape {x.shape}")
    x, weight, bias = autocast_float32(x, weight, bias, op="layer_norm")
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    d = x.dtype
    if weight is not None and bias is not None and weight.shape == bias.shape == shape \
            and d is weight.dtype is bias.dtype:  # one node, fewer kernels
        return layer_norm_node(x, weight, bias, axes, eps) if d in FULL_PRECISION else \
            layer_norm_op(x, axes, weight, bias, eps)  # (half precision: widened there)
    y = _ops.standardize(x, axes, eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def batch_norm(x: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float | Tensor | None = 0.1,
               eps: float = 1e-5
               ) -> Tensor:
    """Batch normalisation per channel ``C`` of ``(N, C, ...)`` input, over every other axis.

    In training, normalises with the batch's statistics and updates ``running_mean`` and
    ``running_var`` in place (``running = (1 - momentum) * running + momentum * batch``,
    with the unbiased batch variance; ``momentum`` may be a 0-d tensor, as
    :class:`xad.nn.BatchNorm1d` passes for a cumulative average). Otherwise it uses the
    running statistics.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> x = xad.tensor([[1.0], [3.0]])
        >>> [round(v[0], 3) for v in F.batch_norm(x, None, None, training=True).tolist()]
        [-1.0, 1.0]
    """
    if x.ndim < 2:
        raise ValueError(f"batch_norm: expected input of shape (N, C, ...), got {x.shape}")
    x, weight, bias = autocast_float32(x, weight, bias, op="batch_norm")
    low = x.dtype if x.dtype in HALF else None  # in float32, rounded once, as PyTorch's
    if low is not None:  # (a float16 d * d overflowed: a channel of 0.2 and 1e4 gave 0)
        x = x.astype(_dt.float32)
        weight, bias = (t if t is None else t.astype(_dt.float32) for t in (weight, bias))
    axes = (0, *range(2, x.ndim))
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if training:
        n = math.prod(x.shape[a] for a in axes)
        if n <= 1:
            raise ValueError(f"batch_norm: expected more than 1 value per channel when "
                             f"training, got input of shape {x.shape}")
        mu = x.mean(axis=axes, keepdims=True)
        if low is not None:  # PyTorch's mean of a half input is half: x - mu from it
            mu = mu.astype(low).astype(_dt.float32)
        d = x - mu
        var = (d * d).mean(axis=axes, keepdims=True)
        if running_mean is not None and running_var is not None:
            m = 0.1 if momentum is None else momentum
            with _ag.no_grad():
                bm = mu.detach().reshape(-1).astype(running_mean.dtype)
                bv = (var.detach().reshape(-1) * (n / (n - 1))).astype(running_var.dtype)
                running_mean._set_data((running_mean * (1 - m) + bm * m)._array)
                running_var._set_data((running_var * (1 - m) + bv * m)._array)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: evaluation needs running_mean and running_var "
                             "(or pass training=True)")
        mu = running_mean.reshape(shape)
        d = x - mu
        var = running_var.reshape(shape)
    scale = 1 / _ops.sqrt(var + eps)  # per channel: one full-size product, not two
    if weight is not None:
        scale = scale * weight.reshape(shape)
    y = d * scale
    if bias is not None:
        y = y + bias.reshape(shape)
    return (y if low is None else y.astype(low)).contiguous()  # (PyTorch's: contiguous)


def embedding(indices: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by integer ``indices`` (output ``indices.shape + (dim,)``);
    the gradient scatter-adds into the picked rows (repeated indices accumulate). The row at
    ``padding_idx`` is looked up as any other (``Embedding`` starts it at zeros) but receives
    no gradient (PyTorch's). ``max_norm`` first rescales, in place, the picked rows whose
    ``norm_type``-norm exceeds it (:func:`embedding_renorm_`); ``scale_grad_by_freq``
    divides each row's gradient by how often ``indices`` picks it. ``sparse`` changes
    nothing: the gradient is dense, with the same numbers.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.embedding(xad.tensor([[0, 2]]), xad.eye(3)).tolist()
        [[[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]]
    """
    if not isinstance(indices, Tensor):
        from ..factories import tensor
        indices = tensor(indices, backend=weight._backend)
    if indices.dtype.is_floating or indices.dtype is _dt.bool_:
        raise TypeError(f"embedding: indices must be an integer tensor, got {indices.dtype}")
    _check_in_range(indices, weight.shape[0], "embedding", "index", "num_embeddings")
    if max_norm is not None:
        embedding_renorm_(weight, indices, max_norm, norm_type)
    # every axis indexed by an integer array: the form the Array API standard guarantees;
    # the indices were checked just above, so indexing need not read them back again
    cols = arange(weight.shape[1], dtype=indices.dtype, backend=weight._backend)
    out = getitem_raw(weight, (indices.expand_dims(-1)._array, cols._array))
    if padding_idx is not None:
        pad = padding_idx % weight.shape[0]
        keep = (indices != pad).expand_dims(-1)
        out = _ops.where(keep, out, out.detach())
    if scale_grad_by_freq:  # the value exactly as it is; the gradient divided by the count
        flat = indices.reshape(-1)
        ones = ones_like(flat, dtype=weight.dtype)
        counts = zeros_like(weight[:, 0]).index_add(0, flat, ones)
        out = out.detach() + (out - out.detach()) * (1.0 / counts[indices]).expand_dims(-1)
    return out


def embedding_renorm_(weight: Tensor, indices: Tensor, max_norm: float,
                      norm_type: float = 2.0) -> Tensor:
    """PyTorch's ``max_norm``: each row of ``weight`` that ``indices`` picks whose
    ``norm_type``-norm exceeds ``max_norm`` is scaled, in place and without gradient, by
    ``max_norm / (norm + 1e-7)``.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> w = xad.tensor([[3.0, 4.0], [6.0, 8.0]])
        >>> F.embedding_renorm_(w, xad.tensor([1]), 5.0).tolist()
        [[3.0, 4.0], [3.0, 4.0]]
    """
    with _ag.no_grad():
        used = zeros_like(weight[:, 0])
        used[indices.reshape(-1)] = 1.0
        norms = vector_norm(weight, norm_type, axis=1)
        scale = _ops.where((used > 0) & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
        weight *= scale.expand_dims(-1)
    return weight


def one_hot(indices: Tensor, num_classes: int = -1, dtype: _dt.DType | None = None) -> Tensor:
    """``indices.shape + (num_classes,)`` with a 1 at each index, int64 unless ``dtype`` is
    given (PyTorch's; by comparison, so it works on every backend); ``num_classes=-1`` takes
    the largest index plus one (read from the device). Out-of-range indices give a row of
    zeros.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.one_hot(xad.tensor([1, 0]), 3).tolist()
        [[0, 1, 0], [1, 0, 0]]
    """
    if num_classes < 0:
        num_classes = int(indices.max().item()) + 1 if indices.size else 0  # explicit read
    classes = arange(num_classes, dtype=indices.dtype, backend=indices._backend)
    eq = indices.expand_dims(-1) == classes
    return eq.astype(dtype or _dt.int64)


def flatten(x: Tensor, start_dim: int = 1, end_dim: int = -1) -> Tensor:
    """Merge axes ``start_dim..end_dim`` into one.

    Example:
        >>> import xad
        >>> import xad.nn.functional as F
        >>> F.flatten(xad.zeros(2, 3, 4)).shape
        (2, 12)
    """
    nd = x.ndim
    if nd == 0:
        return x.reshape(1)
    s, e = start_dim % nd, end_dim % nd
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} is after end_dim {end_dim} for a "
                         f"tensor of shape {x.shape}")
    merged = math.prod(x.shape[s:e + 1])
    return x.reshape(x.shape[:s] + (merged,) + x.shape[e + 1:])
