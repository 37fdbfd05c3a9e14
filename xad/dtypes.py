"""Backend-neutral dtype names (``xad.float32`` ...) and the default floating dtype."""

from __future__ import annotations

from typing import overload

from .context import Context, context

__all__ = [
    "DType", "float16", "bfloat16", "float32", "float64", "int32", "int64", "bool_", "uint8",
    "int8", "int16", "uint16", "uint32", "uint64", "complex64", "complex128",
    "set_default_dtype", "get_default_dtype", "as_dtype",
]


class DType:
    """A dtype name shared by every backend; each backend maps it to its own dtype object.

    Example:
        >>> import xad
        >>> xad.zeros(2, dtype=xad.float64).dtype
        xad.float64
    """

    __slots__ = ("name", "is_floating")

    def __init__(self, name: str, is_floating: bool) -> None:
        self.name = name
        self.is_floating = is_floating

    def __repr__(self) -> str:
        return f"xad.{self.name}"

    @property
    def is_complex(self) -> bool:
        """Whether this is ``complex64`` or ``complex128``."""
        return self.name.startswith("complex")

    @property
    def real(self) -> DType:
        """The real dtype of this one's precision (float64 for complex128); itself if real.

        Example:
            >>> import xad
            >>> xad.complex64.real
            xad.float32
        """
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    @property
    def itemsize(self) -> int:
        """The size of one element in bytes (PyTorch's ``dtype.itemsize``).

        Example:
            >>> import xad
            >>> xad.float16.itemsize, xad.complex128.itemsize, xad.bool_.itemsize
            (2, 16, 1)
        """
        bits = self.name[len(self.name.rstrip("0123456789")):]  # (bool has no digits)
        return int(bits) // 8 if bits else 1

    @property
    def is_floating_point(self) -> bool:
        """PyTorch's ``dtype.is_floating_point``: a real floating dtype."""
        return self.is_floating

    @property
    def is_signed(self) -> bool:
        """PyTorch's ``dtype.is_signed``: whether the dtype holds negative numbers (bool
        and the unsigned integers do not).

        Example:
            >>> import xad
            >>> xad.int8.is_signed, xad.uint8.is_signed, xad.bool_.is_signed
            (True, False, False)
        """
        return not (self.name == "bool" or self.name.startswith("uint"))

    @property
    def can_require_grad(self) -> bool:
        """Whether a tensor of this dtype may require grad: floating and complex ones, as
        PyTorch's (a complex leaf's ``.grad`` is ``dL/dRe z + i dL/dIm z``).

        Example:
            >>> import xad
            >>> xad.complex64.can_require_grad, xad.int64.can_require_grad
            (True, False)
        """
        return self.is_floating or self.is_complex

    def __reduce__(self):  # pickling (multiprocessing) keeps the singleton
        return (as_dtype, (self.name,))


float16 = DType("float16", True)
bfloat16 = DType("bfloat16", True)  # torch and JAX have it; NumPy, CuPy, array_api_strict do not
float32 = DType("float32", True)
float64 = DType("float64", True)
int32 = DType("int32", False)
int64 = DType("int64", False)
uint8 = DType("uint8", False)
bool_ = DType("bool", False)
# the rest of the Array API's dtypes; a backend without one leaves it unmapped. Complex
# dtypes are not ``is_floating`` but ``can_require_grad``.
int8, int16 = DType("int8", False), DType("int16", False)
uint16, uint32, uint64 = DType("uint16", False), DType("uint32", False), DType("uint64", False)
complex64, complex128 = DType("complex64", False), DType("complex128", False)

ALL = {d.name: d for d in (float16, bfloat16, float32, float64, int32, int64, uint8, bool_,
                           int8, int16, uint16, uint32, uint64, complex64, complex128)}
Context.dtype = float32


@overload
def as_dtype(dtype: None) -> None: ...
@overload
def as_dtype(dtype: DType | str) -> DType: ...
def as_dtype(dtype: DType | str | None) -> DType | None:
    """Turn a ``DType``, its name, or ``None`` into a ``DType`` (or ``None``)."""
    if dtype is None or isinstance(dtype, DType):
        return dtype
    name = getattr(dtype, "name", None) if not isinstance(dtype, str) else dtype
    if name is None:  # a native dtype object such as numpy.float32 (a type)
        name = getattr(dtype, "__name__", str(dtype))
    name = str(name).rsplit(".", 1)[-1]
    if name in ALL:
        return ALL[name]
    raise TypeError(f"Unsupported dtype {dtype!r}; use one of {', '.join(ALL)}")


def set_default_dtype(dtype: DType | str) -> None:
    """Set the floating dtype of new tensors made from Python floats (float32 by default).

    Example:
        >>> import xad
        >>> xad.set_default_dtype(xad.float64); xad.tensor(1.0).dtype
        xad.float64
        >>> xad.set_default_dtype(xad.float32)
    """
    d = as_dtype(dtype)
    if d is None or not d.is_floating:
        raise TypeError(f"set_default_dtype needs a floating dtype, got {dtype!r}")
    Context.dtype = d  # the process default (see xad.context for the thread rule)


def get_default_dtype() -> DType:
    """The floating dtype that new tensors get by default.

    Example:
        >>> import xad
        >>> xad.get_default_dtype()
        xad.float32
    """
    return context.dtype


def kind_bits(d: DType) -> tuple[str, int]:
    """``d``'s kind (``b``, ``i``, ``u``, ``f``, ``c``) and its bits."""
    if d.name == "bool":
        return "b", 1
    if d.name == "bfloat16":
        return "f", 16
    kind = {"i": "i", "u": "u", "f": "f", "c": "c"}[d.name[0]]
    return kind, int("".join(ch for ch in d.name if ch.isdigit()))


_RANK = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}


def promote_types(a: DType, b: DType, mixed: bool = True) -> DType:
    """The standard's promotion table; with ``mixed``, also the kinds it leaves to the
    library (bool or integer with a higher kind, float16 with bfloat16), as the operators."""
    if a is b:
        return a
    (ka, na), (kb, nb) = kind_bits(a), kind_bits(b)
    if ka == kb and {a.name, b.name} != {"float16", "bfloat16"}:
        return a if na >= nb else b
    if {ka, kb} == {"i", "u"}:
        (ni, nu) = (na, nb) if ka == "i" else (nb, na)
        if ni > nu:
            return a if ka == "i" else b
        if nu < 64:
            return ALL[f"int{2 * nu}"]
    if {ka, kb} == {"f", "c"}:
        bits = max(na if ka == "f" else na // 2, nb if kb == "f" else nb // 2)
        return complex128 if bits > 32 else complex64
    if mixed:
        ra, rb = _RANK[ka], _RANK[kb]  # a bool or integer meets a higher kind in its dtype
        if min(ra, rb) < 2 and ra != rb:
            return a if ra > rb else b
        if {a.name, b.name} == {"float16", "bfloat16"}:
            return float32
    raise TypeError(f"result_type: the standard has no promotion of {a.name} with {b.name}; "
                    f"cast one of them with xad.astype first")
