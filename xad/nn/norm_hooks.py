"""The forward-pre-hook forms of weight and spectral normalisation
(``torch.nn.utils.weight_norm``/``remove_weight_norm``, ``spectral_norm``/
``remove_spectral_norm``; PyTorch keeps them beside the parametrizations), with PyTorch's
state keys: ``weight_g``/``weight_v``, and ``weight_orig``/``weight_u``/``weight_v``."""

from __future__ import annotations

from typing import Any

from .. import autograd as _ag
from ..factories import randn
from ..ops.inverses import _mH
from ..tensor import Tensor
from . import functional as F
from .conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .module import Module, Parameter
from .parametrizations import norm_except_dim

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "SpectralNorm", "spectral_norm",
           "remove_spectral_norm"]


def _uninitialized(t: Any, what: str) -> None:
    if type(t).__name__ in ("UninitializedParameter", "UninitializedBuffer"):
        raise ValueError(f"{what}: the module has uninitialized parameters; run a dry forward "
                         f"pass of the lazy module first")


def _hook_of(module: Module, kind: type, name: str) -> Any:
    for hook in module._forward_pre_hooks or ():
        if isinstance(hook, kind) and getattr(hook, "name", None) == name:
            return hook
    return None


def _take_hook(module: Module, kind: type, name: str, what: str) -> Any:
    """The ``kind`` hook of ``name``, taken off ``module`` (an error where there is none)."""
    fn = _hook_of(module, kind, name)
    if fn is None:
        raise ValueError(f"remove_{what}: no {what} of {name!r} in {type(module).__name__}")
    hooks: Any = module._forward_pre_hooks
    hooks.remove(fn)
    return fn


class WeightNorm:
    """The hook of :func:`weight_norm`: sets ``module.<name>`` from ``<name>_g`` and
    ``<name>_v`` before each forward."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, self.dim))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Replace ``module.<name>`` by parameters ``<name>_g`` (magnitude) and ``<name>_v``
    (direction), recombined before each forward (PyTorch's deprecated hook form; the
    parametrization is :func:`xad.nn.utils.parametrizations.weight_norm`).

    Example:
        >>> import xad
        >>> m = xad.nn.utils.weight_norm(xad.nn.Linear(3, 2))
        >>> list(m.state_dict())
        ['bias', 'weight_g', 'weight_v']
    """
    if _hook_of(module, WeightNorm, name) is not None:
        raise RuntimeError(f"weight_norm: {name!r} already has a weight_norm hook")
    fn = WeightNorm(name, dim)
    weight = getattr(module, name)
    _uninitialized(weight, "weight_norm")
    del module._parameters[name]
    with _ag.no_grad():
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, fn.dim)))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`weight_norm`: ``module.<name>`` a parameter again, of the current value.

    Example:
        >>> import xad
        >>> m = xad.nn.utils.remove_weight_norm(xad.nn.utils.weight_norm(xad.nn.Linear(3, 2)))
        >>> list(m.state_dict())
        ['bias', 'weight']
    """
    fn = _take_hook(module, WeightNorm, name, "weight_norm")
    with _ag.no_grad():
        weight = fn.compute_weight(module)
    delattr(module, name)
    del module._parameters[name + "_g"], module._parameters[name + "_v"]
    setattr(module, name, Parameter(weight))
    return module


class SpectralNorm:
    """The hook of :func:`spectral_norm`: sets ``module.<name>`` to ``<name>_orig`` over its
    spectral norm before each forward (one power-iteration step in training)."""

    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        if n_power_iterations <= 0:
            raise ValueError(f"spectral_norm: n_power_iterations must be positive, got "
                             f"{n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = \
            name, n_power_iterations, dim, eps

    def matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        mat = self.matrix(weight)
        if do_power_iteration:
            with _ag.no_grad():
                for _ in range(self.n_power_iterations):  # v first, then u (PyTorch's)
                    v.copy_(F.normalize(_mH(mat.detach()) @ u, dim=0, eps=self.eps))
                    u.copy_(F.normalize(mat.detach() @ v, dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()
        return weight / (u * (mat @ v)).sum()

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its spectral norm before each forward, by power iteration
    on buffers ``<name>_u``, ``<name>_v`` (the parameter becomes ``<name>_orig``): PyTorch's
    hook form (the parametrization is :func:`xad.nn.utils.parametrizations.spectral_norm`).

    Example:
        >>> import xad
        >>> m = xad.nn.utils.spectral_norm(xad.nn.Linear(3, 2))
        >>> list(m.state_dict())
        ['bias', 'weight_orig', 'weight_u', 'weight_v']
    """
    if _hook_of(module, SpectralNorm, name) is not None:
        raise RuntimeError(f"spectral_norm: {name!r} already has a spectral_norm hook")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) \
            else 0
    fn = SpectralNorm(name, n_power_iterations, dim, eps)
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"spectral_norm: {type(module).__name__} has no parameter {name!r}")
    _uninitialized(weight, "spectral_norm")
    with _ag.no_grad():
        h, w = fn.matrix(weight).shape
        opts: dict[str, Any] = {"dtype": weight.dtype, "backend": weight.backend}
        u = F.normalize(randn(h, **opts), dim=0, eps=eps)
        v = F.normalize(randn(w, **opts), dim=0, eps=eps)
    delattr(module, name)
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(fn)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`spectral_norm`: ``module.<name>`` a parameter of the normalised value.

    Example:
        >>> import xad
        >>> m = xad.nn.utils.remove_spectral_norm(xad.nn.utils.spectral_norm(xad.nn.Linear(3, 2)))
        >>> list(m.state_dict())
        ['bias', 'weight']
    """
    fn = _take_hook(module, SpectralNorm, name, "spectral_norm")
    with _ag.no_grad():
        weight = fn.compute_weight(module, do_power_iteration=False)
    for k in (name, name + "_u", name + "_v", name + "_orig"):
        delattr(module, k)
    module.register_parameter(name, Parameter(weight.detach()))
    return module
