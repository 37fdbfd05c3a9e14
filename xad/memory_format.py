"""PyTorch's memory formats (``torch.contiguous_format``, ``channels_last``,
``channels_last_3d``, ``preserve_format``): the ``memory_format=`` of ``clone``,
``contiguous``, ``to``, ``cuda``, the ``*_like`` factories and ``Module.to`` accepts them.
They change no values; xad leaves an array's layout to its backend, so a channels-last
request keeps the layout the result already has.

Example:
    >>> import xad
    >>> from xad.memory_format import channels_last
    >>> xad.ones(1, 2, 3, 3).contiguous(memory_format=channels_last).shape
    (1, 2, 3, 3)
"""

from __future__ import annotations

from typing import Any

__all__ = ["MemoryFormat", "contiguous_format", "channels_last", "channels_last_3d",
           "preserve_format", "checked"]


class MemoryFormat:
    """One of PyTorch's memory formats, by name (``torch.memory_format``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self) -> Any:  # (pickling keeps the singleton)
        return (_named, (self.name,))


def _named(name: str) -> MemoryFormat:
    return globals()[name]


contiguous_format = MemoryFormat("contiguous_format")
channels_last = MemoryFormat("channels_last")
channels_last_3d = MemoryFormat("channels_last_3d")
preserve_format = MemoryFormat("preserve_format")


def checked(memory_format: Any, where: str) -> MemoryFormat | None:
    """``memory_format`` itself when it is one of the four (or ``None``), else a TypeError
    naming ``where``."""
    if memory_format is None or isinstance(memory_format, MemoryFormat):
        return memory_format
    raise TypeError(f"{where}: memory_format must be torch.contiguous_format, "
                    f"torch.channels_last, torch.channels_last_3d or torch.preserve_format, "
                    f"got {memory_format!r}")
