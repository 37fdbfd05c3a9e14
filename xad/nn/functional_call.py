"""``functional_call``: a module run with given parameters and buffers, as ``torch.func``'s."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .module import Module

__all__ = ["functional_call"]


def functional_call(module: Module, params: Mapping[str, Any], args: Any,
                    kwargs: Mapping[str, Any] | None = None) -> Any:
    """``module(*args, **kwargs)`` with the named parameters/buffers of ``params`` (names as
    ``named_parameters`` gives them) in place of its own, restored afterwards: the module as
    a function of its parameters, for ``xad.grad`` and ``xad.vmap``.

    Example:
        >>> import xad
        >>> lin = xad.nn.Linear(2, 1)
        >>> p = {"weight": xad.tensor([[1.0, 2.0]]), "bias": xad.tensor([0.5])}
        >>> xad.nn.functional_call(lin, p, (xad.tensor([1.0, 1.0]),)).tolist()
        [3.5]
    """
    args = args if isinstance(args, tuple) else (args,)
    modules = dict(module.named_modules())
    saved = []
    try:
        for name, value in params.items():
            owner, _, leaf = name.rpartition(".")
            m = modules.get(owner)
            store = None if m is None else next(
                (s for s in (m._parameters, m._buffers) if leaf in s), None)
            if store is None:
                raise KeyError(f"functional_call: the module has no parameter or buffer named "
                               f"{name!r}; names are those of named_parameters()/"
                               f"named_buffers()")
            saved.append((store, leaf, store[leaf]))
            store[leaf] = value
        return module(*args, **(kwargs or {}))
    finally:
        for store, leaf, old in reversed(saved):
            store[leaf] = old
