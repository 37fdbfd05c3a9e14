"""``ModuleDict``, ``ParameterList`` and ``ParameterDict``: containers whose entries are
registered (``state_dict`` keys ``"name.weight"``, ``"0"``, ``"name"``), as PyTorch's; and
PyTorch's deprecated ``Container``."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..tensor import Tensor
from .module import Module, Parameter

__all__ = ["ModuleDict", "ParameterList", "ParameterDict", "Container"]


def _pairs(items: Mapping | Iterable, where: str) -> Iterable[tuple[str, Any]]:
    if isinstance(items, Mapping):
        return items.items()
    out = []
    for pair in items:
        if len(pair) != 2:
            raise ValueError(f"{where}.update: expected (key, value) pairs, got {pair!r}")
        out.append(tuple(pair))
    return out


class ModuleDict(Module):
    """A dict of modules whose parameters are registered under their keys, in insertion
    order.

    Example:
        >>> import xad
        >>> d = xad.nn.ModuleDict({"enc": xad.nn.Linear(2, 3), "act": xad.nn.ReLU()})
        >>> list(d.keys()), list(d.state_dict())
        (['enc', 'act'], ['enc.weight', 'enc.bias'])
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        self._changed()
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def pop(self, key: str) -> Module:
        """Remove ``key`` and return its module."""
        self._changed()
        return self._modules.pop(key)

    def clear(self) -> None:
        self._changed()
        self._modules.clear()

    def update(self, modules: Mapping[str, Module] | Iterable) -> None:
        """Add (or replace) the modules of a mapping or of ``(key, module)`` pairs."""
        for k, m in _pairs(modules, "ModuleDict"):
            self[k] = m


def _as_parameter(value: Any) -> Any:
    """PyTorch's rule: a plain tensor becomes a Parameter; other objects stay as they are."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value, requires_grad=value.dtype.can_require_grad)
    return value


class ParameterList(Module):
    """A list of parameters registered as ``"0"``, ``"1"``, ... (tensors are wrapped in
    :class:`Parameter`).

    Example:
        >>> import xad
        >>> ps = xad.nn.ParameterList([xad.zeros(2), xad.ones(3)])
        >>> len(ps), list(ps.state_dict()), ps[1].shape
        (2, ['0', '1'], (3,))
    """

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        for v in values or ():
            self.append(v)

    def _key(self, i: int) -> str:
        if not -self._size <= i < self._size:
            raise IndexError(f"ParameterList: index {i} is out of range for {self._size} "
                             f"entries")
        return str(i % self._size)

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return ParameterList([self[j] for j in range(self._size)[i]])
        return getattr(self, self._key(i))

    def __setitem__(self, i: int, value: Any) -> None:
        setattr(self, self._key(i), _as_parameter(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(self._size))

    def append(self, value: Any) -> ParameterList:
        """Add ``value`` at the end."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Add each of ``values`` at the end."""
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"({i}): Parameter of shape {tuple(p.shape)}" for i, p in
                         enumerate(self) if isinstance(p, Tensor))


class ParameterDict(Module):
    """A dict of parameters registered under their keys (tensors are wrapped in
    :class:`Parameter`).

    Example:
        >>> import xad
        >>> pd = xad.nn.ParameterDict({"scale": xad.ones(2)})
        >>> pd["shift"] = xad.zeros(2); list(pd.state_dict())
        ['scale', 'shift']
    """

    def __init__(self, parameters: Mapping[str, Any] | Iterable | None = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self) -> Iterable[str]:
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        return [(k, self[k]) for k in self._keys]

    def values(self) -> Iterable[Any]:
        return [self[k] for k in self._keys]

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self._keys else default

    def pop(self, key: str) -> Any:
        """Remove ``key`` and return its value."""
        v = self[key]
        del self[key]
        return v

    def update(self, parameters: Mapping[str, Any] | Iterable) -> None:
        """Add (or replace) the entries of a mapping or of ``(key, value)`` pairs."""
        for k, v in _pairs(parameters, "ParameterDict"):
            self[k] = v


class Container(Module):
    """PyTorch's deprecated ``nn.Container``: a ``Module`` holding the modules given as
    keywords (its ``FutureWarning`` included; subclass ``Module`` instead).

    Example:
        >>> import warnings, xad
        >>> with warnings.catch_warnings(record=True):
        ...     c = xad.nn.Container(fc=xad.nn.Linear(2, 1))
        >>> sorted(c.state_dict())
        ['fc.bias', 'fc.weight']
    """

    def __init__(self, **kwargs: Module) -> None:
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now "
                      "implemented in `nn.Module`. Subclass that instead.", FutureWarning,
                      stacklevel=2)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)
