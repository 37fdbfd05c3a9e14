"""Handles for registered hooks: ``handle.remove()`` takes the hook out again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["RemovableHandle", "changes"]

changes = [0]
"""How many hook registrations and removals there have been (``xad.compile`` keys its
programs by it, so a hook registered after a recording is not skipped by a replay)."""


class RemovableHandle:
    """What ``register_*hook`` returns: ``remove()`` unregisters the hook (once; later calls
    do nothing). Also a context manager that removes the hook on exit, as in PyTorch.

    Example:
        >>> from xad.hooks import RemovableHandle
        >>> hooks = []
        >>> h = RemovableHandle(hooks, print); hooks.append(print)
        >>> h.remove(); hooks
        []
    """

    __slots__ = ("_hooks", "_fn")

    def __init__(self, hooks: list[Any] | dict[int, Any], fn: Callable) -> None:
        self._hooks: list[Any] | dict[int, Any] | None = hooks
        self._fn = fn
        changes[0] += 1

    def remove(self) -> None:
        """Unregister the hook."""
        hooks, self._hooks = self._hooks, None
        if hooks is None:
            return
        changes[0] += 1
        if isinstance(hooks, dict):
            for k in [k for k, v in hooks.items() if v is self._fn]:
                del hooks[k]
        else:
            for i, h in enumerate(hooks):
                if h is self._fn:
                    del hooks[i]
                    break

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()
