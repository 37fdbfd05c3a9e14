"""The Array API's inspection object (``xad.__array_namespace_info__()``: capabilities,
default dtypes, dtypes and devices of the current backend) and its constants."""

from __future__ import annotations

import math
from typing import Any

from .. import dtypes as _dt
from ..backend import get_backend
from ..factories import default_complex_dtype
from .dtype_functions import isdtype

__all__ = ["__array_namespace_info__", "e", "pi", "inf", "nan", "newaxis"]

e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None


class Info:
    """What the current backend offers, in the standard's terms."""

    def capabilities(self) -> dict[str, Any]:
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": 64}

    def default_device(self) -> Any:
        return get_backend().device

    def devices(self) -> list[Any]:
        return [get_backend().device]

    def default_dtypes(self, *, device: Any = None) -> dict[str, _dt.DType]:
        real = _dt.get_default_dtype()
        return {"real floating": real,
                "complex floating": default_complex_dtype(),
                "integral": _dt.int64, "indexing": _dt.int64}

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, _dt.DType]:
        b = get_backend()
        have = {n: d for n, d in _dt.ALL.items() if b._dtypes.get(d) is not None
                and n not in ("float16", "bfloat16")}  # not the standard's
        return {n: d for n, d in have.items() if kind is None or isdtype(d, kind)}


def __array_namespace_info__() -> Info:  # noqa: N807  (the standard's name)
    """The namespace's inspection object.

    Example:
        >>> import xad
        >>> xad.__array_namespace_info__().default_dtypes()["indexing"]
        xad.int64
    """
    return Info()
