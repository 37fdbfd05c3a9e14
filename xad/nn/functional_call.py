"""``functional_call``: a module run with given parameters and buffers, as ``torch.func``'s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .module import Module

__all__ = ["functional_call"]


def functional_call(module: Module, params: Mapping[str, Any] | Sequence[Mapping[str, Any]],
                    args: Any = None, kwargs: Mapping[str, Any] | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the named parameters/buffers of ``params`` (names as
    ``named_parameters``/``named_buffers`` give them; a dict, or a tuple of dicts) in place
    of its own, restored afterwards: the module as a function of its parameters, for
    ``xad.grad`` and ``xad.vmap``.

    As ``torch.func.functional_call``: with ``tie_weights`` a value given for one name of a
    tensor the module holds under several names (tied weights) replaces it under all of
    them; ``strict=True`` requires a value for every parameter and buffer; ``args=None``
    calls the module without positional arguments (as ``torch.nn.utils.stateless``'s).

    Example:
        >>> import xad
        >>> lin = xad.nn.Linear(2, 1)
        >>> p = {"weight": xad.tensor([[1.0, 2.0]]), "bias": xad.tensor([0.5])}
        >>> xad.nn.functional_call(lin, p, (xad.tensor([1.0, 1.0]),)).tolist()
        [3.5]
    """
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    slots = _slots(module)
    given = _merged(params)
    for name in given:
        if name not in slots:
            raise KeyError(f"functional_call: the module has no parameter or buffer named "
                           f"{name!r}; names are those of named_parameters()/"
                           f"named_buffers()")
    if tie_weights:
        given = _tied(given, slots)
    if strict and set(slots) - set(given):
        raise RuntimeError(f"functional_call(strict=True): missing value(s) for "
                           f"{sorted(set(slots) - set(given))}")
    saved = []
    try:
        for name, value in given.items():
            store, leaf = slots[name]
            saved.append((store, leaf, store[leaf]))
            store[leaf] = value
        return module(*args, **(kwargs or {}))
    finally:
        for store, leaf, old in reversed(saved):
            store[leaf] = old


def _merged(params: Any) -> dict:
    """One dict from a dict or a tuple/list of dicts (a name in two of them is an error)."""
    if isinstance(params, Mapping):
        return dict(params)
    out: dict = {}
    for d in params:
        twice = sorted(set(out) & set(d))
        if twice:
            raise ValueError(f"functional_call: {twice} appear in more than one of the "
                             f"dicts of parameters and buffers; give each name once")
        out.update(d)
    return out


def _slots(module: Module) -> dict[str, tuple[dict, str]]:
    """Every name of every parameter and buffer (a shared module under each of its names),
    with the dict that holds it and its key there."""
    out: dict = {}
    stack: list = [("", module)]
    while stack:
        prefix, m = stack.pop()
        for store in (m._parameters, m._buffers):
            for leaf, t in store.items():
                if t is not None:
                    out[prefix + leaf] = (store, leaf)
        stack.extend((f"{prefix}{k}.", c) for k, c in m._modules.items() if c is not None)
    return out


def _tied(given: dict, slots: dict) -> dict:
    """``given`` extended to every other name of the same tensor; two different values
    for one tensor are an error."""
    names: dict[int, list[str]] = {}
    for name, (store, leaf) in slots.items():
        names.setdefault(id(store[leaf]), []).append(name)
    out = dict(given)
    for name, value in given.items():
        store, leaf = slots[name]
        for other in names[id(store[leaf])]:
            if other in given and given[other] is not value:
                raise ValueError(f"functional_call: {name!r} and {other!r} are tied (the "
                                 f"same tensor) but were given different values; give one, "
                                 f"or pass tie_weights=False")
            out[other] = value
    return out
