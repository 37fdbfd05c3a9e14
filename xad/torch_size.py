"""``torch.Size``: the tuple of dimensions that ``x.size()`` returns (a tuple subclass)."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from typing import Any, SupportsIndex

__all__ = ["TorchSize"]


class TorchSize(tuple):
    """PyTorch's ``torch.Size``: a tuple of ints that prints as ``torch.Size([...])``, whose
    slices are sizes again, with ``numel()``; ``x.size()`` gives one.

    Example:
        >>> from xad.torch_size import TorchSize
        >>> s = TorchSize([2, 3]); s, s.numel(), s[1:], s == (2, 3)
        (torch.Size([2, 3]), 6, torch.Size([3]), True)
    """

    __slots__ = ()

    def __new__(cls, sizes: Iterable[SupportsIndex] = ()) -> TorchSize:
        dims = []
        for d in sizes:
            try:
                dims.append(operator.index(d))
            except TypeError:
                raise TypeError(f"torch.Size() takes an iterable of 'int' (item {len(dims)} "
                                f"is '{type(d).__name__}')") from None
        return super().__new__(cls, dims)

    def numel(self) -> int:
        """The number of elements of a tensor of this size (1 for ``torch.Size([])``)."""
        return math.prod(self)

    def __getitem__(self, key: Any) -> Any:
        got = super().__getitem__(key)
        return TorchSize(got) if isinstance(key, slice) else got

    def __add__(self, other: Any) -> TorchSize:
        if not isinstance(other, tuple):
            return NotImplemented
        return TorchSize(tuple(self) + other)

    def __radd__(self, other: Any) -> TorchSize:
        if not isinstance(other, tuple):
            return NotImplemented
        return TorchSize(other + tuple(self))

    def __mul__(self, n: SupportsIndex) -> TorchSize:
        return TorchSize(tuple(self) * n)

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    def __reduce__(self) -> tuple:
        return (TorchSize, (tuple(self),))
