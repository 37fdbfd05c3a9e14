"""``xad.nn.utils``: gradient clipping and flattening parameters into one vector here; the
weight/spectral-norm hooks, batch-norm fusion, ``skip_init`` and the parametrizations
(``parametrize``, ``parametrizations``) from their own files, under PyTorch's names."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

from .. import autograd as _ag
from .. import dtypes as _dt
from .. import ops as _ops
from ..context import context
from ..ops.inplace import _refresh_views
from ..optim.multi_tensor import joins_in_one
from ..tensor import Tensor
from . import parametrizations, parametrize
from .fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .norm_hooks import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm
from .skip_init import (
    convert_conv2d_weight_memory_format,
    convert_conv3d_weight_memory_format,
    skip_init,
)

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_",
           "parameters_to_vector", "vector_to_parameters", "clip_grad_norm",
           "parametrize", "parametrizations", "weight_norm", "remove_weight_norm",
           "spectral_norm", "remove_spectral_norm", "fuse_conv_bn_eval", "fuse_conv_bn_weights",
           "fuse_linear_bn_eval", "fuse_linear_bn_weights", "skip_init",
           "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _as_list(parameters: Iterable[Tensor] | Tensor) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float,
                    norm_type: float | str = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Scale the gradients so that their joint ``norm_type``-norm is at most ``max_norm``.

    Returns the norm before clipping (a 0-d tensor, on the device). Each ``.grad`` tensor is
    scaled in place, as PyTorch's (a reference to it taken before sees the clipped values):
    on a device where more than 8 gradients join in one kernel (CuPy), each takes its piece
    of one scaled copy of them all as its new data (one reduction and one product, not two
    launches per gradient). ``norm_type`` may be ``"inf"``; ``foreach`` is PyTorch's
    implementation flag, accepted and ignored (xad picks the path per backend).

    Example:
        >>> import xad
        >>> w = xad.ones(4, requires_grad=True); (w * 3).sum().backward()
        >>> xad.nn.utils.clip_grad_norm_([w], 1.0).item(), round(w.grad.tolist()[0], 4)
        (6.0, 0.5)
    """
    params = [p for p in _as_list(parameters) if p.grad is not None]
    norm_type = float(norm_type)
    if max_norm < 0:
        raise ValueError(f"clip_grad_norm_: max_norm must be non-negative, got {max_norm}")
    if not params:
        from ..factories import zeros
        return zeros(())
    with _ag.no_grad():
        grads = [g for p in params if (g := p.grad) is not None]  # all of them
        flat = _joined(grads) if norm_type != 0 else None  # order 0 counts per gradient
        total = _total_norm(grads if flat is None else [flat], norm_type)
        _check_finite("clip_grad_norm_", total, norm_type, error_if_nonfinite)
        coef = _ops.minimum(max_norm / (total + 1e-6), 1.0)
        if flat is not None and context.recorder is None:
            _scale_joined(params, flat, coef)
        else:
            _scale_each(params, coef)
    return total


def clip_grad_norm(parameters: Iterable[Tensor] | Tensor, max_norm: float,
                   norm_type: float | str = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """PyTorch's deprecated name of :func:`clip_grad_norm_` (it warns, as PyTorch's does).

    Example:
        >>> import warnings, xad
        >>> w = xad.ones(4, requires_grad=True); (w * 3).sum().backward()
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     xad.nn.utils.clip_grad_norm([w], 1.0).item()
        6.0
    """
    warnings.warn("torch.nn.utils.clip_grad_norm is now deprecated in favor of "
                  "torch.nn.utils.clip_grad_norm_", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def get_total_norm(tensors: Iterable[Tensor] | Tensor, norm_type: float | str = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The ``norm_type``-norm of ``tensors`` together (gradients, say), as
    ``torch.nn.utils.get_total_norm``: a 0-d tensor on their device (``foreach``: ignored).

    Example:
        >>> import xad
        >>> xad.nn.utils.get_total_norm([xad.tensor([3.0]), xad.tensor([4.0])]).item()
        5.0
    """
    ts = _as_list(tensors)
    norm_type = float(norm_type)
    if not ts:
        from ..factories import zeros
        return zeros(())
    with _ag.no_grad():
        total = _total_norm(ts, norm_type)
        _check_finite("get_total_norm", total, norm_type, error_if_nonfinite)
    return total


def clip_grads_with_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float,
                          total_norm: Tensor, foreach: bool | None = None) -> None:
    """Scale the gradients by ``min(max_norm / (total_norm + 1e-6), 1)``, as
    ``torch.nn.utils.clip_grads_with_norm_`` (with :func:`get_total_norm`, the two halves
    of :func:`clip_grad_norm_`; ``foreach``: ignored).

    Example:
        >>> import xad
        >>> w = xad.ones(4, requires_grad=True); (w * 3).sum().backward()
        >>> xad.nn.utils.clip_grads_with_norm_([w], 1.0, xad.tensor(6.0))
        >>> round(w.grad.tolist()[0], 4)
        0.5
    """
    params = [p for p in _as_list(parameters) if p.grad is not None]
    if max_norm < 0:
        raise ValueError(f"clip_grads_with_norm_: max_norm must be non-negative, got "
                         f"{max_norm}")
    if params:
        with _ag.no_grad():
            _scale_each(params, _ops.minimum(max_norm / (total_norm + 1e-6), 1.0))


def _check_finite(name: str, total: Tensor, norm_type: float, error: bool) -> None:
    if error and not bool(_ops.isfinite(total).item()):
        raise RuntimeError(f"{name}: the total norm of order {norm_type} of the gradients is "
                           f"not finite; pass error_if_nonfinite=False to clip anyway")


def _scale_each(params: list[Tensor], coef: Tensor) -> None:
    """Each parameter's gradient multiplied by ``coef`` in place (cast once per gradient
    dtype)."""
    cast = {coef.dtype: coef}
    for p in params:
        g = p.grad
        assert g is not None  # the caller's params all have a gradient
        c = cast.get(g.dtype)
        if c is None:
            c = cast[g.dtype] = coef.astype(g.dtype)
        g.mul_(c)


def _total_norm(grads: list[Tensor], norm_type: float) -> Tensor:
    """The ``norm_type``-norm of all ``grads`` together, as PyTorch's (the norm of the
    per-gradient norms: of order 0 the number of gradients with a non-zero entry, of order
    -inf the least magnitude), on the device: one reduction per gradient (``g * g`` for the
    2-norm, no ``abs``), one over their stacked results (no concatenated copy of the
    gradients: that would double their memory for a moment). float16/bfloat16 gradients are
    reduced in float32, as PyTorch's norms are (``g * g`` overflows float16 from 256), and
    the total rounded to their dtype. Complex gradients count by their magnitudes, and the
    total is real (PyTorch's)."""
    out = (grads[0].dtype if len(grads) == 1 else _ops.result_type(*grads)).real
    if norm_type in (math.inf, -math.inf):
        pick = _ops.max if norm_type > 0 else _ops.min
        norms = [pick(_ops.abs(w)) for w in map(_wide, grads)]
        total = pick(_ops.stack(norms)) if len(norms) > 1 else norms[0]
    elif norm_type == 0:
        found = [_ops.any(g != 0) for g in grads]
        total = _ops.stack(found).astype(out).sum()
    else:
        if norm_type == 2:
            sums = [(w * w).sum() for w in map(_wide, grads)]
        elif norm_type == 1:
            sums = [_ops.abs(w).sum() for w in map(_wide, grads)]
        else:
            sums = [(_ops.abs(w) ** norm_type).sum() for w in map(_wide, grads)]
        total = _ops.stack(sums).sum() if len(sums) > 1 else sums[0]
        total = total ** (1.0 / norm_type) if norm_type != 1 else total
    return total if total.dtype is out else total.astype(out)


def _wide(g: Tensor) -> Tensor:
    """``g``, in float32 where its dtype is narrower (reduced there, as PyTorch's norms);
    a complex ``g``'s magnitudes."""
    if g.dtype.is_complex:
        return _ops.abs(g)
    return g.astype(_dt.float32) if g.dtype in (_dt.float16, _dt.bfloat16) else g


def _joined(grads: list[Tensor]) -> Tensor | None:
    """All ``grads`` raveled into one tensor, where a device joins them in one kernel
    (:func:`xad.optim.multi_tensor.joins_in_one`: a transient copy of the gradients, for
    one reduction and one product instead of two launches per gradient) and no gradient
    is a view (whose new data would not reach its base); else ``None``. ``xad.compile``
    records the join and the reduction, for eager mode's bits (a sum per gradient rounds
    otherwise), and scales each gradient in place (the same products)."""
    b = grads[0]._backend
    if any(g._backend is not b for g in grads) \
            or any(g.dtype.is_complex for g in grads) \
            or any(g._base is not None for g in grads) \
            or not joins_in_one(b, [g._array for g in grads]):
        return None
    pieces = [g.reshape(-1) for g in grads]
    if context.recorder is not None:  # joined 8 at a time: CuPy uploads a table of pointers
        while len(pieces) > 8:  # to join more, which a CUDA graph's capture refuses
            pieces = [_ops.concat(pieces[i:i + 8]) for i in range(0, len(pieces), 8)]
    return _ops.concat(pieces)


def _scale_joined(params: list[Tensor], flat: Tensor, coef: Tensor) -> None:
    """Each parameter's gradient given its piece of ``flat * coef`` (one product) as its new
    data: an in-place change of it (one more version; its views follow)."""
    scaled = (flat * coef)._array
    xp, at = flat._backend.xp, 0
    for p in params:
        g = p.grad
        assert g is not None  # the caller's params all have a gradient, as each piece does
        n = g.size
        g._set_data(xp.reshape(scaled[at:at + n], g.shape))
        _refresh_views(g)
        at += n


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clip every gradient entry to ``[-clip_value, clip_value]``, in place (``foreach``:
    accepted and ignored, as in :func:`clip_grad_norm_`).

    Example:
        >>> import xad
        >>> w = xad.ones(2, requires_grad=True); (w * 3).sum().backward()
        >>> xad.nn.utils.clip_grad_value_([w], 1.0); w.grad.tolist()
        [1.0, 1.0]
    """
    v, params = float(clip_value), _as_list(parameters)
    for p in params:
        if p.grad is not None and p.grad.dtype.is_complex:
            raise NotImplementedError(f"clip_grad_value_: a gradient has dtype {p.grad.dtype} "
                                      f"(shape {p.grad.shape}); clamping is not defined for "
                                      f"complex numbers (PyTorch refuses it too): use "
                                      f"clip_grad_norm_")
    with _ag.no_grad():
        for p in params:
            if p.grad is not None:
                p.grad.clamp_(-v, v)


def parameters_to_vector(parameters: Iterable[Tensor] | Tensor) -> Tensor:
    """All parameters flattened and joined into one 1-d tensor (differentiable).

    Example:
        >>> import xad
        >>> xad.nn.utils.parameters_to_vector(xad.nn.Linear(3, 2).parameters()).shape
        (8,)
    """
    return _ops.concat([p.reshape(-1) for p in _as_list(parameters)])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor] | Tensor) -> None:
    """Copy consecutive slices of the 1-d ``vec`` into the parameters (not recorded).

    Example:
        >>> import xad
        >>> fc = xad.nn.Linear(2, 1)
        >>> xad.nn.utils.vector_to_parameters(xad.zeros(3), fc.parameters())
        >>> fc.bias.tolist()
        [0.0]
    """
    params = _as_list(parameters)
    total = sum(p.size for p in params)
    if vec.ndim != 1 or vec.shape[0] != total:
        raise ValueError(f"vector_to_parameters: expected a 1-d tensor of {total} values, "
                         f"got shape {vec.shape}")
    i = 0
    with _ag.no_grad():
        for p in params:
            piece = vec[i:i + p.size].reshape(p.shape)
            p._set_data((piece.astype(p.dtype) if piece.dtype != p.dtype
                         else piece.clone())._array)
            i += p.size
