"""Parametrizations: a module's parameter or buffer computed from other tensors on each
access (``register_parametrization``, ``remove_parametrizations``, ``cached``), as
``torch.nn.utils.parametrize``.

The module's class is replaced by a subclass (``ParametrizedLinear``) whose property of the
tensor's name runs ``module.parametrizations[name]``; the tensors it reads live in that
:class:`ParametrizationList` as ``original`` (or ``original0``, ``original1``, ... when the
first parametrization's ``right_inverse`` returns several), so ``state_dict`` keys are
PyTorch's (``parametrizations.weight.original``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from .. import autograd as _ag
from ..tensor import Tensor
from .containers import ModuleDict
from .module import Module, ModuleList, Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_depth = [0]
_cache: dict[tuple[int, str], Tensor] = {}


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Compute each parametrized tensor once inside the block (the first access), not on
    every access; the values are dropped on leaving the outermost block.

    Example:
        >>> import xad
        >>> from xad.nn.utils import parametrize as P
        >>> m = xad.nn.Linear(2, 2); _ = P.register_parametrization(m, "weight", xad.nn.Tanh())
        >>> with P.cached():
        ...     m.weight is m.weight
        True
    """
    _cache_depth[0] += 1
    try:
        yield
    finally:
        _cache_depth[0] -= 1
        if not _cache_depth[0]:
            _cache.clear()


def _register(module: Module, name: str, t: Tensor) -> None:
    if isinstance(t, Parameter):
        module.register_parameter(name, t)
    else:
        module.register_buffer(name, t)


def _set(dest: Tensor, src: Tensor) -> None:
    """``dest`` takes ``src``'s values (and shape), as PyTorch's ``set_``: one object."""
    if src is not dest:
        dest._set_data(src._array, src._backend)


def _checked(what: str, x: Any, like: Tensor) -> None:
    """``x`` a tensor of ``like``'s dtype and shape (the checks of a safe registration)."""
    if not isinstance(x, Tensor):
        raise ValueError(f"register_parametrization: {what} must return a tensor, got "
                         f"{type(x).__name__}")
    if x.dtype != like.dtype or tuple(x.shape) != tuple(like.shape):
        raise ValueError(f"register_parametrization: {what} gives dtype {x.dtype} and shape "
                         f"{tuple(x.shape)}, the tensor has {like.dtype} and "
                         f"{tuple(like.shape)}; a parametrization may change them only with "
                         f"unsafe=True")


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor (``module.parametrizations.weight``), in order,
    with the tensor(s) they start from: ``original``, or ``original0``, ``original1``, ...
    Made by :func:`register_parametrization`, not by hand.

    Example:
        >>> import xad
        >>> from xad.nn.utils import parametrize as P
        >>> m = P.register_parametrization(xad.nn.Linear(2, 2), "weight", xad.nn.Tanh())
        >>> type(m.parametrizations.weight).__name__, list(m.state_dict())[0]
        ('ParametrizationList', 'bias')
    """

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False
                 ) -> None:
        if not modules:
            raise ValueError("ParametrizationList requires one or more modules")
        super().__init__(modules)
        self.unsafe = unsafe
        with _ag.no_grad():
            new: Any = original
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    with contextlib.suppress(NotImplementedError):
                        new = m.right_inverse(new)
        self.is_tensor = isinstance(new, Tensor)
        if self.is_tensor:
            if new.dtype != original.dtype:
                raise ValueError(f"register_parametrization: right_inverse returns one tensor "
                                 f"of dtype {new.dtype}, the tensor is {original.dtype}; "
                                 f"it may not change the dtype")
            with _ag.no_grad():
                _set(original, new)
            _register(self, "original", original)
        elif isinstance(new, Sequence) and all(isinstance(t, Tensor) for t in new):
            for i, t in enumerate(new):
                t = Parameter(t, original.requires_grad) if isinstance(original, Parameter) \
                    else t.requires_grad_(original.requires_grad)
                _register(self, f"original{i}", t)
        else:
            raise ValueError(f"register_parametrization: right_inverse must return a tensor "
                             f"or a sequence of tensors, got {type(new).__name__}")
        self.ntensors = 1 if self.is_tensor else len(new)
        if not unsafe:
            _checked("the parametrization", self(), original)

    def right_inverse(self, value: Tensor) -> None:
        """Set the original tensor(s) so that the parametrized value is ``value``: each
        parametrization's ``right_inverse``, last first (what ``module.weight = value``
        runs)."""
        with _ag.no_grad():
            for m in reversed(list(self)):
                if not hasattr(m, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(m).__name__} does not "
                                       f"implement right_inverse")
                value = m.right_inverse(value)
            olds = [self.original] if self.is_tensor else \
                [getattr(self, f"original{i}") for i in range(self.ntensors)]
            news = [value] if self.is_tensor else list(value)
            if self.is_tensor != isinstance(value, Tensor) or len(news) != len(olds):
                raise ValueError(f"right_inverse must return {len(olds)} tensor(s) as at "
                                 f"registration, got {type(value).__name__}")
            for old, new in zip(olds, news, strict=True):
                if new.dtype != old.dtype:
                    raise ValueError(f"right_inverse returns dtype {new.dtype} where the "
                                     f"original is {old.dtype}")
                _set(old, new)

    def forward(self) -> Tensor:
        mods = list(self)
        x = mods[0](self.original) if self.is_tensor else \
            mods[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in mods[1:]:
            x = m(x)
        return x


def _parametrized_value(module: Module, name: str) -> Tensor:
    plist = module.parametrizations[name]
    if not _cache_depth[0]:
        return plist()
    key = (id(module), name)
    if key not in _cache:
        _cache[key] = plist()
    return _cache[key]


def _setattr(self: Module, name: str, value: Any) -> None:
    """A parametrized name is set through ``right_inverse`` (the property's setter); a
    Parameter is refused there, as PyTorch's ``register_parameter`` refuses it."""
    if isinstance(getattr(type(self), name, None), property):
        if isinstance(value, Parameter):
            raise KeyError(f"attribute {name!r} already exists (it is parametrized): assign "
                           f"a tensor to set it through right_inverse, or remove the "
                           f"parametrization first")
        object.__setattr__(self, name, value)
    else:
        base: Any = type(self).__bases__[0]
        base.__setattr__(self, name, value)


def _inject(module: Module, name: str) -> None:
    """Give ``module`` a class of its own (once) with a property ``name``."""
    if not is_parametrized(module):
        cls = type(module)
        module.__class__ = type(f"Parametrized{cls.__name__}", (cls,),
                                {"__setattr__": _setattr})
        module.parametrizations = ModuleDict()
    setattr(type(module), name, property(
        lambda self: _parametrized_value(self, name),
        lambda self, value: self.parametrizations[name].right_inverse(value)))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` applied to the tensor
    it starts from, as ``torch.nn.utils.parametrize.register_parametrization``: that tensor
    moves to ``module.parametrizations.<tensor_name>.original`` (the same Parameter object,
    whose value becomes ``parametrization.right_inverse(tensor)`` where it has one); a second
    registration on the same name chains. Unless ``unsafe``, the output must keep the
    tensor's dtype and shape.

    Example:
        >>> import xad
        >>> from xad.nn.utils import parametrize as P
        >>> class Symmetric(xad.nn.Module):
        ...     def forward(self, x):
        ...         return x.triu() + x.triu(1).mT
        >>> m = P.register_parametrization(xad.nn.Linear(3, 3), "weight", Symmetric())
        >>> bool((m.weight == m.weight.mT).all()), list(m.state_dict())
        (True, ['bias', 'parametrizations.weight.original'])
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            _checked("the parametrization", x, y)
            if hasattr(parametrization, "right_inverse"):
                with contextlib.suppress(NotImplementedError):
                    _checked("right_inverse", parametrization.right_inverse(x), y)
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        _inject(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(f"register_parametrization: {type(module).__name__} has no "
                         f"parameter, buffer or parametrized tensor named {tensor_name!r}")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, or on any tensor).

    Example:
        >>> import xad
        >>> from xad.nn.utils import parametrize as P
        >>> P.is_parametrized(xad.nn.Linear(2, 2))
        False
    """
    plists = module._modules.get("parametrizations")
    if not isinstance(plists, ModuleDict):
        return False
    return len(plists) > 0 if tensor_name is None else tensor_name in plists


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo :func:`register_parametrization` on ``tensor_name``: the tensor becomes a plain
    parameter (or buffer) again, holding its parametrized value (``leave_parametrized``) or
    ``original`` (only where there is one original tensor); the class is restored when no
    parametrization is left.

    Example:
        >>> import xad
        >>> from xad.nn.utils import parametrize as P
        >>> m = P.register_parametrization(xad.nn.Linear(2, 2), "weight", xad.nn.Tanh())
        >>> m = P.remove_parametrizations(m, "weight"); type(m).__name__, list(m.state_dict())
        ('Linear', ['bias', 'weight'])
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"remove_parametrizations: {type(module).__name__} has no "
                         f"parametrization on {tensor_name!r}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with _ag.no_grad():
                _set(original, getattr(module, tensor_name))
    elif leave_parametrized:
        with _ag.no_grad():
            t = getattr(module, tensor_name)
        original = Parameter(t, t.requires_grad) if plist.original0.requires_grad else t
    else:
        raise ValueError("remove_parametrizations: cannot leave unparametrized "
                         "(leave_parametrized=False) a tensor parametrized by several "
                         "tensors")
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before parametrizations were registered on it.

    Example:
        >>> import xad
        >>> from xad.nn.utils import parametrize as P
        >>> m = P.register_parametrization(xad.nn.Linear(2, 2), "weight", xad.nn.Tanh())
        >>> P.type_before_parametrizations(m).__name__
        'Linear'
    """
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Register ``from_module``'s parametrizations (of ``tensor_name``, or all) on
    ``to_module`` too, sharing their original tensors.

    Example:
        >>> import xad
        >>> from xad.nn.utils import parametrize as P
        >>> a = P.register_parametrization(xad.nn.Linear(2, 2), "weight", xad.nn.Tanh())
        >>> b = P.transfer_parametrizations_and_params(a, xad.nn.Linear(2, 2))
        >>> bool((a.weight == b.weight).all())
        True
    """
    if not is_parametrized(from_module):
        return to_module
    for name in list(from_module.parametrizations) if tensor_name is None else [tensor_name]:
        src = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for p in src:
            register_parametrization(to_module, name, p)
        dst = to_module.parametrizations[name]
        for k in ["original"] if src.is_tensor else \
                [f"original{i}" for i in range(src.ntensors)]:
            setattr(dst, k, getattr(src, k))
    return to_module
