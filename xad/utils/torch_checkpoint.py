"""``xad.load_torch``: read a PyTorch ``torch.save`` file (``.pt`` / ``.pth``) without running
code from it.

A PyTorch file is a zip archive holding ``<name>/data.pkl`` (a pickle of the saved object)
and one raw little-endian storage per tensor (``<name>/data/<key>``). The pickle is read by
a restricted unpickler that accepts what PyTorch's ``torch.load(weights_only=True)`` accepts
for weights: tensors rebuilt from storages (``torch._utils._rebuild_tensor_v2`` /
``_rebuild_parameter``), ``collections.OrderedDict``, dicts, lists, tuples, numbers,
strings, ``None`` and ``torch.Size``. Unpickling makes only inert placeholders; a second,
checked pass turns them into xad tensors on the current backend. Any other global (say
``os.system`` or ``builtins.eval``), a call of anything else, a storage whose size
disagrees with the file or a tensor that reaches past its storage raises
:class:`CheckpointError` naming what was refused.
"""

from __future__ import annotations

import collections
import io
import math
import os
import pickle
import struct
import sys
import zipfile
from collections.abc import Callable
from typing import Any, BinaryIO, ClassVar

from .. import backend as _backend
from .. import dtypes as _dt
from ..tensor import Tensor
from .serialization import MAGIC, CheckpointError
from .serialization import load as _xad_load

__all__ = ["load_torch", "torch_load"]

# storage class name -> (dtype name, bytes per element)
_STORAGES = {"FloatStorage": ("float32", 4), "DoubleStorage": ("float64", 8),
             "HalfStorage": ("float16", 2), "LongStorage": ("int64", 8),
             "IntStorage": ("int32", 4), "ShortStorage": ("int16", 2),
             "CharStorage": ("int8", 1), "ByteStorage": ("uint8", 1),
             "BoolStorage": ("bool", 1), "BFloat16Storage": ("bfloat16", 2),
             "ComplexFloatStorage": ("complex64", 8), "ComplexDoubleStorage": ("complex128", 16)}
_TORCH_DTYPES = {"float32": "float32", "float": "float32", "float64": "float64",
                 "double": "float64", "float16": "float16", "half": "float16",
                 "bfloat16": "bfloat16", "int64": "int64", "long": "int64", "int32": "int32",
                 "int": "int32", "int16": "int16", "int8": "int8", "uint8": "uint8",
                 "bool": "bool"}
_MAX_DEPTH = 256


class _StorageType:
    """What the global ``torch.FloatStorage`` (etc.) unpickles to: a name, not a class."""
    __slots__ = ("dtype", "itemsize")

    def __init__(self, dtype: str, itemsize: int) -> None:
        self.dtype, self.itemsize = dtype, itemsize


class _Storage:
    """A storage's ``numel`` elements; ``data`` arrives later in the legacy format."""
    __slots__ = ("dtype", "itemsize", "numel", "data", "key")

    def __init__(self, kind: _StorageType, numel: int, key: str) -> None:
        self.dtype, self.itemsize, self.numel, self.key = kind.dtype, kind.itemsize, numel, key
        self.data: bytearray | None = None


class _Pending:
    """A tensor still to be built (unpickling makes only these inert records)."""
    __slots__ = ("storage", "offset", "size", "stride", "requires_grad")

    def __init__(self, storage: Any, offset: Any, size: Any, stride: Any,
                 requires_grad: Any) -> None:
        if not isinstance(storage, _Storage):
            raise CheckpointError(f"a tensor rebuilt from {type(storage).__name__}, not from "
                                  f"a storage")
        ints = (offset, *_ints(size, "size"), *_ints(stride, "stride"))
        if len(size) != len(stride) or len(size) > 64 or any(n < 0 for n in ints):
            raise CheckpointError(f"a tensor with an invalid layout: offset {offset!r}, size "
                                  f"{size!r}, stride {stride!r}")
        numel = storage.numel
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
        if math.prod(size) and last >= numel:
            raise CheckpointError(f"a tensor of size {tuple(size)} (offset {offset}, stride "
                                  f"{tuple(stride)}) reaches element {last} of storage "
                                  f"{storage.key!r}, which holds {numel}")
        if math.prod(size) > max(64 * numel, 1 << 20):  # stride-0 views expand on loading
            raise CheckpointError(f"a tensor of size {tuple(size)} (stride {tuple(stride)}) "
                                  f"over storage {storage.key!r} of {numel} elements was "
                                  f"refused: xad would materialise {math.prod(size)} elements")
        self.storage, self.offset = storage, offset
        self.size, self.stride = tuple(size), tuple(stride)
        self.requires_grad = requires_grad is True

    def __setstate__(self, state: Any) -> None:
        raise CheckpointError("a BUILD (setstate) of a tensor was refused")


class _OrderedDict(collections.OrderedDict):
    """``collections.OrderedDict`` during unpickling: keeps only a state dict's ``_metadata``."""

    def __setstate__(self, state: Any) -> None:
        if not isinstance(state, dict) or set(state) - {"_metadata"}:
            raise CheckpointError(f"a BUILD of an OrderedDict with state "
                                  f"{_describe(state)} was refused")
        self.metadata = state.get("_metadata")


def _ints(x: Any, what: str) -> tuple[int, ...]:
    if not isinstance(x, tuple) or not all(type(n) is int for n in x):
        raise CheckpointError(f"a tensor {what} of {_describe(x)}, not a tuple of ints")
    return x


def _describe(x: Any) -> str:
    return f"{type(x).__name__} {str(x)[:80]!r}"


def _rebuild_tensor_v2(storage: Any, offset: Any, size: Any, stride: Any,
                       requires_grad: Any = False, backward_hooks: Any = None,
                       metadata: Any = None) -> _Pending:
    if type(offset) is not int:
        raise CheckpointError(f"a tensor storage offset of {_describe(offset)}")
    if backward_hooks:
        raise CheckpointError("a tensor with backward hooks (code) was refused")
    return _Pending(storage, offset, size, stride, requires_grad)


def _rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any) -> _Pending:
    if not isinstance(data, _Pending):
        raise CheckpointError(f"a parameter rebuilt from {_describe(data)}")
    if backward_hooks:
        raise CheckpointError("a parameter with backward hooks (code) was refused")
    data.requires_grad = requires_grad is True
    return data


def _size(dims: Any = ()) -> tuple[int, ...]:
    return _ints(tuple(dims) if isinstance(dims, (tuple, list)) else dims, "torch.Size")


_GLOBALS: dict[tuple[str, str], Any] = {
    ("collections", "OrderedDict"): _OrderedDict,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch", "Size"): _size,
    **{("torch", k): _StorageType(*v) for k, v in _STORAGES.items()},
    **{("torch", k): _dt.ALL[v] for k, v in _TORCH_DTYPES.items()},
}


class _Unpickler(pickle._Unpickler):
    """Resolves only the globals in ``_GLOBALS``; storages become ``_Storage`` records.

    The standard library's pure-Python unpickler, not the C one: the C unpickler grows its
    memo to the largest index a PUT names, so a six-byte ``LONG_BINPUT 1600000000`` asks for
    12 GB (found by the fuzz test); the Python one keeps its memo in a dict. It reads from
    memory, so a declared length reads at most what is there, and BYTEARRAY8 (which
    allocates its declared length first) is refused: weights never need it.
    """

    dispatch: ClassVar[dict[int, Callable[..., Any]]] = dict(pickle._Unpickler.dispatch)

    def _refuse_bytearray8(self) -> None:
        raise CheckpointError("the opcode BYTEARRAY8 was refused")

    dispatch[pickle.BYTEARRAY8[0]] = _refuse_bytearray8

    def __init__(self, f: BinaryIO, legacy: bool = False) -> None:
        super().__init__(f)
        self.legacy = legacy
        self.storages: dict[str, _Storage] = {}

    def find_class(self, module: str, name: str) -> Any:
        found = _GLOBALS.get((module, name))
        if found is None:
            raise CheckpointError(f"the global {module}.{name} was refused: a weights file "
                                  f"may hold only tensors, containers and numbers")
        return found

    def persistent_load(self, pid: Any) -> _Storage:
        size = 6 if self.legacy else 5
        if not (isinstance(pid, tuple) and len(pid) == size and pid[0] == "storage"
                and isinstance(pid[1], _StorageType) and isinstance(pid[2], str)
                and type(pid[4]) is int and pid[4] >= 0 and pid[5:] in ((), (None,))):
            raise CheckpointError(f"the persistent id {_describe(pid)} was refused (not a "
                                  f"storage)")
        kind, key, numel = pid[1], pid[2], pid[4]
        known = self.storages.setdefault(key, _Storage(kind, numel, key))
        if (known.dtype, known.numel) != (kind.dtype, numel):
            raise CheckpointError(f"storage {key!r} is declared twice, differently")
        return known


def _zip_storages(unpickler: _Unpickler, archive: zipfile.ZipFile, prefix: str) -> None:
    for key, st in unpickler.storages.items():
        name = f"{prefix}data/{key}"
        try:
            info = archive.getinfo(name)
        except KeyError:
            raise CheckpointError(f"storage {key!r} is not in the archive") from None
        if info.file_size != st.numel * st.itemsize:
            raise CheckpointError(f"storage {key!r} claims {st.numel} {st.dtype} elements "
                                  f"({st.numel * st.itemsize} bytes) but the file holds "
                                  f"{info.file_size} bytes")
        st.data = bytearray(archive.read(name))  # writable: backends may keep views


def load_torch(f: str | os.PathLike[str] | BinaryIO, map_location: Any = None) -> Any:
    """Read a file written by PyTorch's ``torch.save`` (a state dict, a tensor, or containers
    of them) without running code from it; tensors are made on the current backend.

    ``map_location`` is accepted for PyTorch's signature and ignored (xad places tensors by
    backend). Anything but tensors, ``OrderedDict``/dict/list/tuple, numbers, strings and
    ``None`` raises :class:`CheckpointError`, as PyTorch's ``weights_only=True``. Both the
    zip format (PyTorch 1.6 and later) and the legacy one are read.

    Example:
        >>> import os, tempfile, xad
        >>> path = os.path.join(tempfile.mkdtemp(), "m.pt")
        >>> with open(path, "wb") as f:
        ...     _ = f.write(b"not a checkpoint")
        >>> xad.load_torch(path)
        Traceback (most recent call last):
        ...
        xad.utils.serialization.CheckpointError: xad.load_torch(...m.pt'): not a file written...
    """
    where = repr(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else "<file>"
    try:
        if isinstance(f, (str, os.PathLike)):
            with open(f, "rb") as fh:
                return _load_file(fh)
        return _load_file(f)
    except CheckpointError as e:
        raise CheckpointError(f"xad.load_torch({where}): {e}") from None
    except zipfile.BadZipFile as e:
        raise CheckpointError(f"xad.load_torch({where}): not a file written by torch.save "
                              f"(neither its zip format nor its legacy one: {e})") from None
    except (pickle.PickleError, struct.error, ValueError, TypeError, EOFError, KeyError,
            IndexError, AttributeError, RecursionError, MemoryError, OverflowError) as e:
        raise CheckpointError(f"xad.load_torch({where}): the file is corrupt or refused "
                              f"({type(e).__name__}: {str(e)[:200]})") from None


def _load_file(f: BinaryIO) -> Any:
    start = f.tell()
    head = f.read(len(_LEGACY_MAGIC))
    f.seek(start)
    if head == _LEGACY_MAGIC:  # read from memory: no declared length reads past the end
        obj, swap = _load_legacy(io.BytesIO(f.read()))
    else:
        with zipfile.ZipFile(f) as archive:
            obj, swap = _load_archive(archive)
    return _Builder(_backend.get_backend(), swap).build(obj, "obj", 0)


def _load_archive(archive: zipfile.ZipFile) -> tuple[Any, bool]:
    pkls = [n for n in archive.namelist() if n.endswith("data.pkl") and n.count("/") == 1]
    if len(pkls) != 1:
        raise CheckpointError(f"expected one '<name>/data.pkl' in the archive, found "
                              f"{len(pkls)}")
    prefix = pkls[0][:-len("data.pkl")]
    order = "little"
    if f"{prefix}byteorder" in archive.namelist():
        order = archive.read(f"{prefix}byteorder").decode("ascii", "replace").strip()
        if order not in ("little", "big"):
            raise CheckpointError(f"unknown byte order {order[:20]!r}")
    unpickler = _Unpickler(io.BytesIO(archive.read(pkls[0])))
    obj = unpickler.load()
    _zip_storages(unpickler, archive, prefix)
    return obj, order != sys.byteorder


# PyTorch's legacy format: pickles of a magic number, a protocol version and system info,
# then the object, then the list of storage keys, then each storage as an 8-byte element
# count and its raw bytes
_LEGACY_MAGIC = pickle.dumps(0x1950a86a20f9469cfc6c, protocol=2)


def _load_legacy(f: BinaryIO) -> tuple[Any, bool]:
    header = [_Unpickler(f).load() for _ in range(3)]
    if header[1] != 1001 or not isinstance(header[2], dict):
        raise CheckpointError(f"an unknown legacy format (protocol {header[1]!r})")
    little = header[2].get("little_endian", True)
    unpickler = _Unpickler(f, legacy=True)
    obj = unpickler.load()
    keys = _Unpickler(f).load()
    if not isinstance(keys, list) or sorted(keys) != sorted(unpickler.storages):
        raise CheckpointError("the storage list does not match the storages the object uses")
    for key in keys:
        st = unpickler.storages[key]
        count = f.read(8)
        numel = int.from_bytes(count, "little" if little else "big")
        if len(count) != 8 or numel != st.numel:
            raise CheckpointError(f"storage {key!r} claims {st.numel} {st.dtype} elements but "
                                  f"the file gives {numel if len(count) == 8 else 'none'}")
        st.data = bytearray(f.read(numel * st.itemsize))
        if len(st.data) != numel * st.itemsize:
            raise CheckpointError(f"storage {key!r} is truncated: {len(st.data)} of "
                                  f"{numel * st.itemsize} bytes")
    return obj, little != (sys.byteorder == "little")


class _Builder:
    """The checked pass: placeholders to xad tensors, anything unexpected refused."""

    def __init__(self, target: _backend.Backend, swap: bool) -> None:
        self.target, self.swap = target, swap
        self.xp = _backend.resolve_backend("numpy").xp  # host arrays, as xad.load builds them

    def build(self, obj: Any, where: str, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise CheckpointError(f"the object nests deeper than {_MAX_DEPTH} levels")
        if obj is None or type(obj) in (bool, int, float, str, bytes, complex, _dt.DType):
            return obj
        if isinstance(obj, _Pending):
            return self.tensor(obj, where)
        if type(obj) in (dict, _OrderedDict):
            out: Any = collections.OrderedDict() if type(obj) is _OrderedDict else {}
            for k, v in obj.items():
                if type(k) not in (str, int, float, bool, tuple) and k is not None:
                    raise CheckpointError(f"a dict key {_describe(k)} at {where}")
                out[k] = self.build(v, f"{where}[{k!r}]", depth + 1)
            if getattr(obj, "metadata", None) is not None:
                out._metadata = self.build(obj.metadata, f"{where}._metadata", depth + 1)
            return out
        if type(obj) in (list, tuple):
            items = [self.build(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(obj)]
            return items if type(obj) is list else tuple(items)
        raise CheckpointError(f"an object of type {type(obj).__name__} at {where} was refused")

    def tensor(self, p: _Pending, where: str) -> Tensor:
        dtype = _dt.ALL[p.storage.dtype]
        if p.storage.dtype == "bfloat16" or self.target._dtypes.get(dtype) is None:
            raise CheckpointError(f"the tensor at {where} is {p.storage.dtype}, which backend "
                                  f"{self.target.name!r} cannot load from a file; convert it "
                                  f"in PyTorch (e.g. .float()) before saving")
        if p.storage.data is None:  # pragma: no cover - every loader fills them or raises
            raise CheckpointError(f"the storage of the tensor at {where} was never read")
        xp = self.xp
        flat = xp.frombuffer(p.storage.data, dtype=getattr(xp, p.storage.dtype))
        if self.swap:
            flat = flat.byteswap()
        numel = math.prod(p.size)
        if numel == 0:
            host = xp.zeros(p.size, dtype=flat.dtype)
        elif p.stride == _contiguous(p.size):
            host = xp.reshape(flat[p.offset:p.offset + numel], p.size)
        else:  # a view: gather its elements by their storage positions
            index = xp.asarray(p.offset)
            for axis, (n, s) in enumerate(zip(p.size, p.stride)):
                shape = [1] * len(p.size)
                shape[axis] = n
                index = index + xp.reshape(xp.arange(n) * s, tuple(shape))
            host = xp.reshape(xp.take(flat, xp.reshape(index, (-1,))), p.size)
        arr = self.target.from_numpy(host)
        if tuple(arr.shape) != p.size:
            arr = self.target.xp.reshape(arr, p.size)
        t = Tensor._make(arr, self.target)
        if p.requires_grad and t.dtype.is_floating:
            t.requires_grad_()
        return t


def _contiguous(size: tuple[int, ...]) -> tuple[int, ...]:
    stride, acc = [], 1
    for n in reversed(size):
        stride.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(stride))


def torch_load(f: Any, map_location: Any = None, pickle_module: Any = None, *,
               weights_only: Any = None, mmap: Any = None, **pickle_load_args: Any) -> Any:
    """``torch.load`` under ``xad.as_torch``: an xad checkpoint (``torch.save`` there) through
    :func:`xad.load`, a PyTorch file through :func:`load_torch` (never running its code).

    Example:
        >>> import os, tempfile, xad
        >>> path = os.path.join(tempfile.mkdtemp(), "w.pt")
        >>> xad.save({"w": xad.ones(2)}, path)
        >>> torch_load(path)["w"].tolist()
        [1.0, 1.0]
    """
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            head = fh.read(len(MAGIC))
        if head == MAGIC:
            return _xad_load(f)
    elif hasattr(f, "read") and hasattr(f, "seek"):  # an open binary file
        start = f.tell()
        head = f.read(len(MAGIC))
        f.seek(start)
        if head == MAGIC:
            return _xad_load(f)
    return load_torch(f, map_location)
