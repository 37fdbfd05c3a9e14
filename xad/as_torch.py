"""Run PyTorch programs on xad: ``python -m xad.as_torch [--backend NAME] script.py [args]``,
or ``xad.as_torch.install()`` in a notebook, makes ``import torch`` (and ``torch.nn``,
``torch.nn.functional``, ``torch.optim``, ``torch.optim.lr_scheduler``, ``torch.utils.data``,
``torch.autograd``) give xad's modules. Importing xad alone never does this.

The ``torch`` namespace is xad's, plus PyTorch's names for xad's dtypes (``torch.long``,
``torch.float``) and PyTorch-shaped functions (``torch.sum(x, dim=1)``, ``torch.cat``);
where a name means one thing in the Array API standard and another in PyTorch (``split``,
``sort``, ``nonzero``, ``equal``, ``meshgrid``, ``torch.Tensor``, ``can_cast``, ...) it is
PyTorch's (the tensor method, or :mod:`xad.torch_functions`), with ``torch.amp`` and
``torch.cuda.amp`` taking PyTorch's arguments; a name outside the subset raises, pointing
at docs/PORTING.md (its table lists every name whose meaning differs).
"""

from __future__ import annotations

import argparse
import builtins
import functools
import os
import runpy
import sys
import types
from collections.abc import Sequence
from typing import Any

from . import autograd, data, distributed, dtypes, nn, optim, torch_fft
from . import function as _function
from . import memory_format as _memory_format
from . import ops as _ops
from . import torch_activation_checkpoint as _activation_checkpoint
from . import torch_anomaly as _anomaly
from . import torch_autograd_functional as _autograd_functional
from . import torch_copies as _copies
from . import torch_forward_ad as _forward_ad
from . import torch_func as _func
from . import torch_functions as _tf
from . import torch_gradcheck as _gradcheck
from . import torch_ldl as _ldl
from . import torch_linalg as _linalg
from . import torch_nn_functions as _nn_functions
from . import torch_objects as _objects
from . import torch_script_modules as _script_modules
from . import torch_sequences as _sequences
from .backend import set_backend
from .nn import functional, init
from .ops import torch_conventions as _conventions
from .optim import lr_scheduler
from .torch_out import accepting_out

__all__ = ["install", "uninstall", "namespace", "main"]

# torch.f(x, ...) is x.f(...): the tensor methods carry PyTorch's keywords and meanings
_AS_METHOD = ("sum", "mean", "var", "std", "max", "min", "prod", "argmax", "argmin",
              "cumsum", "softmax", "log_softmax", "logsumexp", "reshape", "flatten",
              "squeeze", "unsqueeze", "permute", "transpose", "t", "gather", "scatter_add",
              "index_select", "masked_fill", "clamp", "numel", "any", "all", "repeat",
              "split", "sort", "argsort", "nonzero", "equal", "clip", "atan2", "norm", "mm",
              "narrow", "cumprod", "amax", "amin", "nansum", "nanmean", "median", "nanmedian",
              "quantile", "nanquantile", "mode", "index_add", "index_fill", "scatter",
              "copysign", "select", "aminmax", "msort", "isneginf", "isposinf", "isreal",
              "is_signed", "is_same_size", "bitwise_not", "broadcast_to")
# torch.f_(x, ...) is x.f_(...) (torch's in-place forms), and tensor methods torch also has
_INPLACE_AS_METHOD = (
    "abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_ "
    "atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ conj_physical_ cos_ cosh_ deg2rad_ "
    "detach_ erf_ erfc_ exp2_ exp_ expm1_ fill_ fix_ floor_ frac_ gcd_ i0_ lcm_ ldexp_ log10_ "
    "log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ relu_ "
    "resize_as_ round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ "
    "xlogy_ zero_ detach conj_physical resolve_conj resolve_neg is_conj is_neg "
    "is_inference get_device unsafe_chunk unsafe_split unsafe_split_with_sizes").split()
# torch.special's names that are xad's functions of the same name
_SPECIAL = ("erf", "erfc", "erfinv", "digamma", "log1p", "expm1", "exp2", "xlogy", "logit",
            "ndtr", "log_ndtr", "erfcx", "xlog1py", "entr", "i0", "i0e", "i1", "i1e", "zeta",
            "polygamma", "ndtri", "multigammaln", "gammainc", "gammaincc", "bessel_j0",
            "bessel_j1", "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
            "scaled_modified_bessel_k1", "bessel_y0", "bessel_y1", "spherical_bessel_j0", "airy_ai",
            *_ops.torch_special_polynomials.__all__)
_DTYPES = {"float": dtypes.float32, "float32": dtypes.float32, "double": dtypes.float64,
           "float64": dtypes.float64, "half": dtypes.float16, "float16": dtypes.float16,
           "long": dtypes.int64, "int64": dtypes.int64, "int": dtypes.int32,
           "int32": dtypes.int32, "bool": dtypes.bool_, "uint8": dtypes.uint8,
           "short": dtypes.int16, "cfloat": dtypes.complex64, "cdouble": dtypes.complex128}
# PyTorch's meaning or signature where xad's function of the same name has the standard's
_PYTORCH_SIGNATURES = {n: getattr(_tf, n) for n in _tf.__all__ if n not in ("TorchTensor",
                                                                             "cuda_usable")}
_PYTORCH_SIGNATURES["range"] = _sequences.range  # (kept out of torch_functions: a builtin there)
_FACTORIES = ("tensor", "zeros", "ones", "full", "empty", "arange", "linspace", "eye",
              "rand", "randn", "randint", "randperm", "zeros_like", "ones_like", "full_like",
              "hann_window", "hamming_window", "blackman_window", "bartlett_window",
              "kaiser_window", "empty_like", "rand_like", "randn_like", "randint_like")
# packages that use the real torch themselves (a torch backend): their imports are left alone
_LIBRARIES = {"torch", "functorch", "torchgen", "array_api_compat", "xad", "xad_backends"}
_NN_MODULES = ("activation", "batchnorm", "container", "conv", "dropout", "flatten", "linear",
               "loss", "module", "normalization", "pooling", "rnn", "sparse", "transformer")
_SAFE_GLOBALS = ("safe_globals", "add_safe_globals", "get_safe_globals", "clear_safe_globals")
_saved: dict[str, Any] = {}
_active: dict[str, types.ModuleType] = {}
_real_import = builtins.__import__


def _method(name: str) -> Any:
    def f(x: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(x, sys.modules["xad"].Tensor):  # (was "'float' has no attribute")
            raise TypeError(f"torch.{name}: its first argument must be a tensor, got "
                            f"{type(x).__name__} (PyTorch refuses it too); make it one with "
                            f"torch.tensor(...)")
        return getattr(x, name)(*args, **kwargs)
    f.__name__ = name
    f.__doc__ = f"``torch.{name}(x, ...)``: ``x.{name}(...)`` (PyTorch's keywords)."
    return f


def _factory(name: str) -> Any:
    xf = _PYTORCH_SIGNATURES.get(name) or getattr(sys.modules["xad"], name)

    def f(*args: Any, device: Any = None, memory_format: Any = None, **kwargs: Any) -> Any:
        _memory_format.checked(memory_format, f"torch.{name}")
        kind = str(device).split(":")[0]
        if device is not None and kind != "cpu" and not (kind == "cuda" and _tf.cuda_usable()):
            raise NotImplementedError(
                f"torch.{name}(device={device!r}): xad places tensors by backend, not by "
                f"device; run with `python -m xad.as_torch --backend cupy` for a GPU")
        return xf(*args, **kwargs)
    f.__name__ = name
    f.__doc__ = xf.__doc__
    return f


def _onnx_export(*args: Any, **kwargs: Any) -> None:
    raise NotImplementedError("torch.onnx.export: xad does not export ONNX graphs; save "
                              "model.state_dict() and export from PyTorch")


def _cat(tensors: Sequence[Any], dim: int = 0, *, axis: int | None = None) -> Any:
    return _ops.concat(tensors, axis=dim if axis is None else axis)


def _stack(tensors: Sequence[Any], dim: int = 0, *, axis: int | None = None) -> Any:
    return _ops.stack(tensors, axis=dim if axis is None else axis)


class _Namespace(types.ModuleType):
    """A module whose missing names say that they are outside xad's PyTorch subset."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"{self.__name__}.{name} is not part of the PyTorch subset that xad runs "
            f"(python -m xad.as_torch); docs/PORTING.md lists what is and what to write instead")


def _module(name: str, *sources: Any, **extra: Any) -> types.ModuleType:
    m = _Namespace(name)
    for src in sources:
        names = getattr(src, "__all__", None) or [k for k in vars(src) if not k.startswith("_")]
        for k in names:
            setattr(m, k, getattr(src, k))
    for k, v in extra.items():
        setattr(m, k, v)
    return m


_DISTRIBUTION_MODULES: tuple[str, ...] = (
    "kl", "normal", "uniform", "categorical", "bernoulli", "gamma", "beta", "dirichlet",
    "multivariate_normal", "independent")
_TRANSFORMED_MODULES = ("transformed_distribution", "log_normal", "half_normal", "half_cauchy",
                        "gumbel", "weibull", "pareto", "inverse_gamma", "kumaraswamy",
                        "logistic_normal", "relaxed_bernoulli", "relaxed_categorical")
_DISTRIBUTION_OWN_MODULES = ("constraints", "constraint_registry", "transforms")


def _autograd_modules() -> dict[str, types.ModuleType]:
    """``torch.autograd`` with ``Function``, ``function``, ``functional`` and ``forward_ad``."""
    function = _module("torch.autograd.function", _function)
    functional = _module("torch.autograd.functional", _autograd_functional)
    forward_ad = _module("torch.autograd.forward_ad", _forward_ad)
    return {"torch.autograd.function": function, "torch.autograd.functional": functional,
            "torch.autograd.forward_ad": forward_ad,
            "torch.autograd": _module("torch.autograd", autograd, _gradcheck, _anomaly,
                                      Function=_function.Function, function=function,
                                      functional=functional, forward_ad=forward_ad)}


def _training_modules() -> dict[str, types.ModuleType]:
    """``torch.optim`` (with ``lr_scheduler`` and ``swa_utils``), ``torch.utils.data`` and
    ``torch.utils.checkpoint``."""
    utils_data = _module("torch.utils.data", data)
    sched = _module("torch.optim.lr_scheduler", lr_scheduler)
    swa = _module("torch.optim.swa_utils", nn.averaged_model, SWALR=optim.SWALR)
    ckpt = _module("torch.utils.checkpoint", _activation_checkpoint)
    return {"torch.optim": _module("torch.optim", optim, lr_scheduler=sched, swa_utils=swa),
            "torch.optim.lr_scheduler": sched, "torch.optim.swa_utils": swa,
            "torch.utils": _module("torch.utils", data=utils_data, checkpoint=ckpt),
            "torch.utils.data": utils_data, "torch.utils.checkpoint": ckpt}


def _nn_modules() -> dict[str, types.ModuleType]:
    """``torch.nn`` with ``functional``, ``init``, ``utils`` (``rnn``) and ``modules``."""
    mods = {"torch.nn.functional": _module("torch.nn.functional", functional),
            "torch.nn.init": _module("torch.nn.init", init, _calculate_fan_in_and_fan_out=(
                init._calculate_fan_in_and_fan_out)),  # (private, but scripts call it)
            "torch.nn.utils.rnn": _module("torch.nn.utils.rnn", nn.rnn_utils)}
    mods.update(_nn_utils_modules())
    mods["torch.nn.utils"] = _module("torch.nn.utils", nn.utils, **{
        k[15:]: m for k, m in mods.items() if k.startswith("torch.nn.utils.")})
    # torch.nn.modules.rnn.LSTM and the like (safe_globals lists name them): xad's nn
    subs = {s: _module(f"torch.nn.modules.{s}", nn) for s in _NN_MODULES}
    subs["lazy"] = _module("torch.nn.modules.lazy", nn.lazy)  # LazyModuleMixin
    mods["torch.nn.parameter"] = _module(
        "torch.nn.parameter", Parameter=nn.Parameter, Buffer=nn.Buffer,
        UninitializedParameter=nn.UninitializedParameter,
        UninitializedBuffer=nn.UninitializedBuffer, is_lazy=nn.lazy.is_lazy)
    mods.update({f"torch.nn.modules.{s}": m for s, m in subs.items()})
    mods["torch.nn.modules"] = _module("torch.nn.modules", nn, **subs)
    mods["torch.nn"] = _module("torch.nn", nn, functional=mods["torch.nn.functional"],
                               init=mods["torch.nn.init"], utils=mods["torch.nn.utils"],
                               modules=mods["torch.nn.modules"],
                               parameter=mods["torch.nn.parameter"])
    # torch.nn.SyncBatchNorm is xad.distributed's (one process: BatchNorm)
    for name in ("torch.nn", "torch.nn.modules", "torch.nn.modules.batchnorm"):
        mods[name].SyncBatchNorm = distributed.SyncBatchNorm  # type: ignore[attr-defined]
    return mods


def _nn_utils_modules() -> dict[str, types.ModuleType]:
    """``torch.nn.utils``'s submodules: ``parametrize``, ``parametrizations``, ``stateless``,
    ``fusion``, ``convert_parameters``, ``init`` (``skip_init``), ``memory_format``."""
    u = nn.utils
    parts = {"parametrize": (u.parametrize,), "parametrizations": (u.parametrizations,),
             "fusion": (nn.fusion,), "stateless": ({"functional_call": nn.functional_call},),
             "convert_parameters": ({"parameters_to_vector": u.parameters_to_vector,
                                     "vector_to_parameters": u.vector_to_parameters},),
             "init": ({"skip_init": u.skip_init},), "memory_format": (nn.skip_init,)}
    return {f"torch.nn.utils.{k}": _module(f"torch.nn.utils.{k}", *(
        types.SimpleNamespace(**src) if isinstance(src, dict) else src for src in srcs))
        for k, srcs in parts.items()}


def namespace() -> dict[str, types.ModuleType]:
    """The modules that stand for ``torch`` and its submodules, by name.

    Example:
        >>> from xad import as_torch
        >>> t = as_torch.namespace()["torch"]
        >>> t.tensor([1, 2], dtype=t.long).sum(dim=0).item()
        3
    """
    xad = sys.modules["xad"]
    fns = {n: _method(n) for n in (*_AS_METHOD, *_INPLACE_AS_METHOD)}
    fns.update(_PYTORCH_SIGNATURES)
    fns.update({n: getattr(m, n) for m in (_copies, _nn_functions) for n in m.__all__})
    fns.update({n: _factory(n) for n in _FACTORIES})
    mods = {**_training_modules(), **_autograd_modules(), **_nn_modules()}
    mods["torch.distributions"] = _module("torch.distributions", xad.distributions)
    for sub in _DISTRIBUTION_MODULES:  # torch.distributions.normal.Normal and the like
        mods[f"torch.distributions.{sub}"] = _module(f"torch.distributions.{sub}",
                                                     xad.distributions)
        setattr(mods["torch.distributions"], sub, mods[f"torch.distributions.{sub}"])
    for sub in _TRANSFORMED_MODULES + _DISTRIBUTION_OWN_MODULES:  # constraints: its own names
        src = (getattr(xad.distributions, sub) if sub in _DISTRIBUTION_OWN_MODULES
               else xad.distributions)
        mods[f"torch.distributions.{sub}"] = _module(f"torch.distributions.{sub}", src)
        setattr(mods["torch.distributions"], sub, mods[f"torch.distributions.{sub}"])
    mods["torch.serialization"] = _module("torch.serialization", save=_objects.torch_save,
                                          load=_objects.torch_load_objects, **{
                                              n: getattr(_objects, n) for n in _SAFE_GLOBALS})
    mods["torch.onnx"] = _module("torch.onnx", export=_onnx_export)
    mods["torch.accelerator"] = _module(
        "torch.accelerator", is_available=_tf.cuda_usable,
        current_accelerator=lambda: "cuda" if _tf.cuda_usable() else None)
    # torch.linalg's norms give 0, not NaN, as gradient at 0 (PyTorch's convention)
    mods["torch.linalg"] = _module("torch.linalg", xad.linalg, _linalg, _ldl,
                                   vector_norm=_conventions.vector_norm)
    mods["torch.fft"] = _module("torch.fft", torch_fft)
    mods["torch.special"] = _module("torch.special", **{n: getattr(xad, n) for n in _SPECIAL},
        gammaln=xad.lgamma, psi=xad.digamma, expit=xad.sigmoid, sinc=xad.sinc,
        modified_bessel_i0=xad.i0, modified_bessel_i1=xad.i1,
        **{n: fns[n] for n in ("logsumexp", "softmax", "log_softmax", "round")})
    mods["torch.func"] = _module("torch.func", _func)
    amp = _module("torch.amp", autocast=_tf.autocast, GradScaler=_tf.GradScaler)
    mods["torch.amp"] = amp
    torch: Any  # a module built here: its attributes are set below
    torch = _module("torch", xad, _ops, Tensor=_tf.TorchTensor, Generator=xad.Generator,
                    manual_seed=xad.manual_seed, no_grad=xad.no_grad,
                    enable_grad=xad.enable_grad, set_grad_enabled=xad.set_grad_enabled,
                    is_grad_enabled=xad.is_grad_enabled, multinomial=xad.multinomial,
                    cat=_cat, concat=_cat, concatenate=_cat, row_stack=xad.vstack,
                    stack=_stack, from_numpy=xad.tensor,
                    is_tensor=lambda x: isinstance(x, xad.Tensor), load=_objects.torch_load_objects,
                    save=_objects.torch_save, is_anomaly_enabled=_anomaly.is_anomaly_enabled,
                    is_anomaly_check_nan_enabled=_anomaly.is_anomaly_check_nan_enabled,
                    **_DTYPES, **fns)
    for full, m in mods.items():
        if full.count(".") == 1:
            setattr(torch, full.split(".")[1], m)
    # "cuda" is available exactly when the backend is a device's (--backend cupy)
    cuda_amp = _module("torch.cuda.amp", autocast=functools.partial(_tf.autocast, "cuda"),
                       GradScaler=functools.partial(_tf.GradScaler, "cuda"))
    torch.cuda = _module("torch.cuda", is_available=_tf.cuda_usable,
                         device_count=lambda: int(_tf.cuda_usable()),
                         amp=cuda_amp)
    mods["torch.cuda"], mods["torch.cuda.amp"] = torch.cuda, cuda_amp
    torch.device = str
    torch.memory_format = _memory_format.MemoryFormat
    for name in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
        setattr(torch, name, getattr(_memory_format, name))
    mods["torch"] = torch
    for full in ("torch", "torch.linalg", "torch.special", "torch.fft"):
        _take_out(mods[full])
    _script_modules.add_script_modules(torch, mods, _module)
    return mods


def _take_out(module: types.ModuleType) -> None:
    """PyTorch's ``out=`` on the module's functions (:mod:`xad.torch_out`)."""
    for k, v in vars(module).items():
        if isinstance(v, (types.FunctionType, functools.partial)) and not k.startswith("_"):
            setattr(module, k, accepting_out(k, v))


def _import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
            level: int = 0) -> Any:
    """``import torch...`` in user code gives xad's modules; libraries get the real one."""
    if level == 0 and name in _active:
        importer = str((globals or {}).get("__name__", "")).split(".")[0]
        if importer not in _LIBRARIES:
            return _active[name] if fromlist else _active["torch"]
    return _real_import(name, globals, locals, fromlist, level)


def install(backend: str | None = None) -> None:
    """Make ``import torch`` give xad (``backend``: the xad backend to select first).

    Example:
        >>> from xad import as_torch
        >>> as_torch.install()
        >>> exec("import torch; x = torch.zeros(1, dtype=torch.long)", notebook := {})
        >>> type(notebook["x"]).__module__, notebook["x"].dtype
        ('xad.tensor', xad.int64)
        >>> as_torch.uninstall()
    """
    if backend is not None:
        set_backend(backend)  # first: a torch backend imports the real torch now
    _active.update(namespace())
    builtins.__import__ = _import
    if "torch" in sys.modules and "torch" not in _saved:
        return  # the real torch is in use (a torch backend): only user imports are redirected
    for name, m in _active.items():
        if name not in _saved:
            _saved[name] = sys.modules.get(name)
        sys.modules[name] = m


def uninstall() -> None:
    """Undo :func:`install` (the real ``torch``, if it was imported, comes back)."""
    builtins.__import__ = _real_import
    _active.clear()
    for name, m in _saved.items():
        if m is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = m
    _saved.clear()


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m xad.as_torch [--backend NAME] script.py [args...]``."""
    p = argparse.ArgumentParser(prog="python -m xad.as_torch",
                                description="Run a PyTorch script on xad.")
    p.add_argument("--backend", default=None, help="xad backend (numpy, cupy, torch, ...)")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    install(a.backend)
    sys.argv = [a.script, *a.args]
    # as `python script.py`: the script's folder (not the working directory) comes first
    sys.path[0] = os.path.dirname(os.path.abspath(a.script))
    runpy.run_path(a.script, run_name="__main__")


if __name__ == "__main__":
    main()
_DISTRIBUTION_MODULES += ("exponential", "laplace", "cauchy", "studentT", "chi2",
                          "fishersnedecor", "poisson", "binomial", "geometric",
                          "negative_binomial", "multinomial", "one_hot_categorical",
                          "continuous_bernoulli", "von_mises", "generalized_pareto",
                          "lowrank_multivariate_normal", "mixture_same_family")
