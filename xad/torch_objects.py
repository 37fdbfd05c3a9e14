"""``torch.save(model)`` / ``torch.load`` of whole modules under ``python -m xad.as_torch``.

PyTorch pickles a module; ``torch.load`` (``weights_only=True``, its default) rebuilds it only
when its classes are allowed with ``torch.serialization.safe_globals([...])`` or
``add_safe_globals``. xad writes no pickle: a module becomes a plain entry of an xad
checkpoint (its class's qualified name and its attributes), and loading rebuilds it only
from a class that is allowed by the same two calls (matched by name against the allowed
class objects; nothing is imported). ``weights_only=False`` also accepts any ``Module``
subclass already imported by the program. Tensors shared between modules (tied weights)
stay shared; the instance is made with ``object.__new__`` and given its attributes, as
unpickling does.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from .nn import Module, Parameter
from .tensor import Tensor
from .utils.serialization import CheckpointError, save
from .utils.torch_checkpoint import torch_load

__all__ = ["torch_save", "torch_load_objects", "safe_globals", "add_safe_globals",
           "get_safe_globals", "clear_safe_globals"]

_OBJECT, _REF, _SET, _PARAM = "__xad_object__", "__xad_ref__", "__xad_set__", "__xad_parameter__"
_allowed: list[type] = []


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def add_safe_globals(classes: Iterable[Any]) -> None:
    """``torch.serialization.add_safe_globals``: classes that loading may rebuild."""
    _allowed.extend(c for c in classes if isinstance(c, type))


def get_safe_globals() -> list[type]:
    """``torch.serialization.get_safe_globals``."""
    return list(_allowed)


def clear_safe_globals() -> None:
    """``torch.serialization.clear_safe_globals``."""
    _allowed.clear()


@contextlib.contextmanager
def safe_globals(classes: Iterable[Any]) -> Iterator[None]:
    """``torch.serialization.safe_globals``: allow ``classes`` inside the ``with`` block."""
    before = list(_allowed)
    add_safe_globals(classes)
    try:
        yield
    finally:
        _allowed[:] = before


def torch_save(obj: Any, f: str | os.PathLike[str] | BinaryIO, *args: Any, **kw: Any) -> None:
    """``torch.save`` under ``as_torch``: :func:`xad.save`, whole modules included.

    Example:
        >>> import io, xad
        >>> buf = io.BytesIO(); torch_save(xad.nn.Linear(2, 1), buf); _ = buf.seek(0)
        >>> with safe_globals([xad.nn.Linear]):
        ...     torch_load_objects(buf).weight.shape
        (1, 2)
    """
    save(_encode(obj, {}), f)


def _encode(obj: Any, seen: dict[int, int]) -> Any:
    if isinstance(obj, Tensor):
        if id(obj) in seen:
            return {_REF: seen[id(obj)]}
        seen[id(obj)] = len(seen)
        return {_PARAM: obj} if isinstance(obj, Parameter) else obj
    if isinstance(obj, Module):
        return {_OBJECT: _name(type(obj)), "state": _encode(vars(obj), seen)}
    if isinstance(obj, (set, frozenset)):
        return {_SET: [_encode(v, seen) for v in obj]}
    if isinstance(obj, dict):
        return {k: _encode(v, seen) for k, v in obj.items()}  # an OrderedDict loads as a dict
    if isinstance(obj, (list, tuple)):
        return type(obj)(_encode(v, seen) for v in obj)
    return obj


def torch_load_objects(f: Any, map_location: Any = None, pickle_module: Any = None, *,
                       weights_only: bool | None = None, **kw: Any) -> Any:
    """``torch.load`` under ``as_torch``: :func:`~xad.utils.torch_checkpoint.torch_load`,
    with whole modules rebuilt from allowed classes (see the module's docstring)."""
    obj = torch_load(f, map_location, pickle_module, weights_only=weights_only, **kw)
    allowed = {_name(c): c for c in _allowed}
    return _decode(obj, [], allowed, weights_only is False)


def _decode(obj: Any, tensors: list[Tensor], allowed: dict[str, type], any_module: bool) -> Any:
    if isinstance(obj, Tensor):
        tensors.append(obj)
        return obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(_decode(v, tensors, allowed, any_module) for v in obj)
    if not isinstance(obj, dict):
        return obj
    if len(obj) == 1 and _REF in obj:
        return tensors[obj[_REF]]
    if len(obj) == 1 and _PARAM in obj:
        p = Parameter(obj[_PARAM], requires_grad=obj[_PARAM].requires_grad)
        tensors.append(p)
        return p
    if len(obj) == 1 and _SET in obj:
        return set(_decode(obj[_SET], tensors, allowed, any_module))
    if len(obj) == 2 and _OBJECT in obj:
        cls = _class(obj[_OBJECT], allowed, any_module)
        m: Any = object.__new__(cls)  # an instance of a class named in the file
        m.__dict__.update(_decode(obj["state"], tensors, allowed, any_module))
        return m
    return {k: _decode(v, tensors, allowed, any_module) for k, v in obj.items()}


def _class(name: str, allowed: dict[str, type], any_module: bool) -> type:
    cls = allowed.get(name)
    if cls is None and any_module:  # weights_only=False: a class the program has imported
        mod, _, qual = name.rpartition(".")
        found: Any = sys.modules.get(mod)
        for part in qual.split(".") if found is not None else ():
            found = getattr(found, part, None)
        cls = found if isinstance(found, type) and issubclass(found, Module) else None
    if cls is None:
        raise CheckpointError(
            f"torch.load: the file holds a {name} module, whose class is not allowed; "
            f"load it inside `with torch.serialization.safe_globals([{name.split('.')[-1]}, "
            f"...])` (as PyTorch's weights_only load), or save model.state_dict() instead")
    return cls
