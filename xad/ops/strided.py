"""``as_strided``: refused with an explanation (docs/PORTING.md).

PyTorch's ``as_strided`` is a view of the storage: a later change of the base shows in it
and a write through it reaches the base. xad's views share memory only where the backend's
own view does (a slice, a transpose, a diagonal) and are remade from the base where arrays
are replaced; the Array API has no strided view, so on NumPy, CuPy, torch and
array_api_strict an ``as_strided`` would be a gathered copy that goes stale after the next
in-place change of its base: a wrong number without an error. ``unfold`` (sliding windows)
and indexing give the common uses, as copies that say so.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..tensor import Tensor

__all__ = ["as_strided"]


def as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int],  # noqa: A002
               storage_offset: int = 0) -> Tensor:
    """PyTorch's ``as_strided``; always raises ``NotImplementedError`` naming what to use.

    Example:
        >>> import xad
        >>> xad.as_strided(xad.arange(6.0), (2, 3), (1, 1))
        Traceback (most recent call last):
        ...
        NotImplementedError: as_strided((2, 3), (1, 1), 0) of a tensor of shape (6,): ...
    """
    raise NotImplementedError(
        f"as_strided({tuple(size)}, {tuple(stride)}, {storage_offset}) of a tensor of shape "
        f"{input.shape}: xad has no strided view of memory (the Array API hides strides), "
        f"and a copy would not follow later changes of the base as PyTorch's view does. For "
        f"sliding windows use x.unfold(dim, size, step) or F.unfold; for other layouts, "
        f"index with an integer tensor (a copy); docs/PORTING.md")
