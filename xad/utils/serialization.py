"""``xad.save`` / ``xad.load``: checkpoints that never run code when loaded.

A file is one binary blob::

    magic     8 bytes   b"\\x89XADCKP\\n"
    length    8 bytes   little-endian uint64: the header's size in bytes
    header    JSON (UTF-8), padded with spaces to a multiple of 64 bytes
    data      each tensor's raw little-endian bytes (C order), each at a 64-byte boundary

The header holds the saved object with every container and number typed explicitly
(``{"$": "tensor", "dtype": "float32", "shape": [2, 3], "offset": 0, "nbytes": 24}``,
``{"$": "dict", "keys": [...], "values": [...]}``, floats as ``float.hex`` so they round-trip
exactly, ``inf`` and ``nan`` included). Loading parses JSON and copies bytes, nothing else:
a pickle, a truncated or padded file, a header whose sizes disagree with the file, or any
malformed entry raises :class:`CheckpointError` naming the file and the problem.

Format version 2 adds checksums (CRC-32, from the standard library's ``zlib``): one per
tensor over its bytes (``"crc32"`` in its entry) and one over the header itself (``"crc32"``
at its top, computed over the compact JSON of the other fields), so a flipped bit anywhere
is a :class:`CheckpointError` naming the entry. Version 1 files (no checksums) still load.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import secrets
import struct
import sys
import zlib
from typing import Any, BinaryIO, TypeGuard, cast

from .. import backend as _backend
from .. import dtypes as _dt
from ..tensor import Tensor
from .saved_views import encode_chain, remake, root_and_chain

__all__ = ["save", "load", "CheckpointError"]

MAGIC = b"\x89XADCKP\n"
VERSION = 3  # 3: storages shared by several tensors (written only where some are)
_READS = (1, 2, 3)
ALIGN = 64
_PREFIX = len(MAGIC) + 8
_MAX_DEPTH = 256
_ITEMSIZE = {"float16": 2, "float32": 4, "float64": 8, "int32": 4, "int64": 8, "uint8": 1,
             "bool": 1}


class CheckpointError(ValueError):
    """A file is not a valid xad checkpoint (corrupt, truncated, or something else)."""


# ----- save ---------------------------------------------------------------------------------
def save(obj: Any, path: str | os.PathLike[str] | BinaryIO) -> None:
    """Write ``obj`` to exactly ``path``, atomically (a crash never leaves half a file).

    ``obj`` may nest dicts (str or int keys), lists, tuples, tensors (also raw backend
    arrays), Python numbers, strings, bools and ``None``: a tensor, a module's or an
    optimiser's state dict, or a dict of those. Tensors are copied to the host explicitly.
    ``path`` may also be a binary file open for writing (``torch.save(obj, f)``): the
    checkpoint is written at its position, not atomically.

    Example:
        >>> import os, tempfile, xad
        >>> path = os.path.join(tempfile.mkdtemp(), "w.xad")
        >>> xad.save({"w": xad.ones(2), "step": 3}, path)
        >>> xad.load(path)["step"]
        3
    """
    header, datas = _serialize(obj)
    if hasattr(path, "write"):
        _write(cast(BinaryIO, path), header, datas)
        return
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    tmp, fd = _new_temp(path)
    try:
        with os.fdopen(fd, "wb") as f:
            _write(f, header, datas)
            f.flush()
            os.fsync(f.fileno())
        _keep_mode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)


def _serialize(obj: Any) -> tuple[bytes, list[bytes]]:
    """The padded header and each tensor's bytes (tensors that share storage: once)."""
    met: list[tuple[Tensor, dict]] = []
    encoded = _encode(obj, met, "obj", 0)
    stored, storages = _share(met)
    offset, datas = 0, []
    for t, entry in stored:
        nbytes = math.prod(t.shape) * _ITEMSIZE[t.dtype.name]
        datas.append(_tensor_bytes(t, nbytes))
        entry.update(offset=offset, nbytes=nbytes, crc32=zlib.crc32(datas[-1]))
        offset += _padded(nbytes)
    fields = {"format": "xad", "version": VERSION if storages else 2, "data_bytes": offset,
              "object": encoded, **({"storages": storages} if storages else {})}
    header = _compact({"crc32": zlib.crc32(_compact(fields)), **fields})
    header += b" " * (_padded(_PREFIX + len(header)) - _PREFIX - len(header))
    return header, datas


def _share(met: list[tuple[Tensor, dict]]) -> tuple[list[tuple[Tensor, dict]], list[dict]]:
    """The tensors whose bytes are written, with their entries, and the storages: the
    tensors of ``met`` that share one storage with another of ``met`` become views of it
    (``{"$": "view", "storage": j, "chain": [...]}``), as ``torch.save`` keeps them."""
    groups: dict[int, list] = {}
    for t, entry in met:
        root, chain = root_and_chain(t)
        groups.setdefault(id(root), [root]).append((t, entry, encode_chain(chain)))
    stored: list[tuple[Tensor, dict]] = []
    storages: list[dict] = []
    for root, *members in groups.values():
        shared = [m for m in members if m[2] is not None]
        if len(shared) < 2:
            shared = []
        stored += [(t, entry) for t, entry, _ in members if not any(
            entry is e for _, e, _ in shared)]
        if shared:
            storage = {"$": "tensor", "dtype": root.dtype.name, "shape": list(root.shape),
                       "requires_grad": any(t is root and t.requires_grad
                                            for t, _, _ in shared)}
            stored.append((root, storage))
            first: dict[int, int] = {}  # one tensor met twice loads as one tensor
            for k, (t, entry, chain) in enumerate(shared):
                entry.update({"$": "view", "storage": len(storages), "chain": chain,
                              "object": first.setdefault(id(t), k)})
            storages.append(storage)
    return stored, storages


def _write(f: BinaryIO, header: bytes, datas: list[bytes]) -> None:
    f.write(MAGIC)
    f.write(struct.pack("<Q", len(header)))
    f.write(header)
    for data in datas:
        f.write(data)
        f.write(b"\0" * (_padded(len(data)) - len(data)))


def _padded(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _encode(obj: Any, tensors: list[tuple[Tensor, dict]], where: str, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise ValueError(f"xad.save: the object nests deeper than {_MAX_DEPTH} levels at "
                         f"{where}")
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return {"$": "float", "hex": float(obj).hex()}
    if isinstance(obj, Tensor):
        if obj.dtype.name not in _ITEMSIZE:
            raise TypeError(f"xad.save: the tensor at {where} has dtype {obj.dtype}, which "
                            f"checkpoints do not support")
        entry = {"$": "tensor", "dtype": obj.dtype.name, "shape": list(obj.shape),
                 "requires_grad": bool(obj.requires_grad)}
        tensors.append((obj, entry))
        return entry
    if isinstance(obj, dict):
        keys, values = [], []
        for k, v in obj.items():
            if isinstance(k, bool) or not isinstance(k, (str, int)):
                raise TypeError(f"xad.save: dict keys must be str or int, found "
                                f"{type(k).__name__} key {k!r} at {where}")
            keys.append(k)
            values.append(_encode(v, tensors, f"{where}[{k!r}]", depth + 1))
        return {"$": "dict", "keys": keys, "values": values}
    if isinstance(obj, (list, tuple)):
        kind = "tuple" if isinstance(obj, tuple) else "list"
        return {"$": kind, "items": [_encode(v, tensors, f"{where}[{i}]", depth + 1)
                                     for i, v in enumerate(obj)]}
    array = _as_backend_tensor(obj)
    if array is not None:
        return _encode(array, tensors, where, depth)
    if getattr(obj, "shape", None) == () and hasattr(obj, "item"):  # a NumPy scalar
        return _encode(obj.item(), tensors, where, depth)
    raise TypeError(f"xad.save: cannot save an object of type {type(obj).__name__} (at "
                    f"{where}); a checkpoint holds dicts, lists, tuples, tensors, numbers, "
                    f"strings, bools and None")


def _as_backend_tensor(obj: Any) -> Tensor | None:
    """A raw array of a backend in use, wrapped as a tensor (no copy); else ``None``."""
    _backend.get_backend()  # the current backend counts as in use before its first tensor
    for b in list(_backend._instances.values()):
        if b.array_type is not object and isinstance(obj, b.array_type):
            return Tensor._make(obj, b)
    return None


def _tensor_bytes(t: Tensor, nbytes: int) -> bytes:
    host = t._backend.to_numpy(t._array)  # an explicit host copy: saving asked for it
    if sys.byteorder == "big":
        host = host.byteswap()
    data = host.tobytes()  # C order
    if len(data) != nbytes:  # pragma: no cover - a backend returned the wrong dtype
        raise RuntimeError(f"xad.save: a {t.dtype} tensor of shape {t.shape} gave "
                           f"{len(data)} bytes on the host, expected {nbytes}")
    return data


def _compact(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _new_temp(path: str) -> tuple[str, int]:
    """A new temporary file beside ``path``, created with mode 0o666 so that the OS applies
    the umask (reading the umask would mean changing it: a race between threads)."""
    directory, name = os.path.split(os.path.abspath(path))
    while True:
        tmp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue


def _keep_mode(path: str, tmp: str) -> None:
    """Give the new file an existing file's permissions (a new one keeps the umask's)."""
    try:
        mode = os.stat(path).st_mode & 0o7777
    except OSError:
        return
    os.chmod(tmp, mode)


def _fsync_dir(directory: str) -> None:
    """Make the rename itself durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ----- load ---------------------------------------------------------------------------------
def load(path: str | os.PathLike[str] | BinaryIO, backend: str | _backend.Backend | None = None,
         device: Any = None) -> Any:
    """Read what :func:`save` wrote; tensors are made on ``backend`` (default: the current
    backend), whatever backend saved them.

    Never executes code from the file: a corrupt, truncated or foreign file (a pickle, say)
    raises :class:`CheckpointError`. ``path`` may also be a binary file open for reading.

    Example:
        >>> import os, tempfile, xad
        >>> path = os.path.join(tempfile.mkdtemp(), "t.xad")
        >>> xad.save([xad.tensor([1.5, 2.5]), (None, "a")], path)
        >>> t, rest = xad.load(path, backend="array_api_strict")
        >>> t.backend.name, t.tolist(), rest
        ('array_api_strict', [1.5, 2.5], (None, 'a'))
    """
    if backend is None:
        target = _backend.get_backend()
        if device is not None:
            target = _backend.resolve_backend(target.name, device)
    elif isinstance(backend, _backend.Backend):
        target = backend
    else:
        target = _backend.resolve_backend(backend, device)
    if hasattr(path, "read"):  # an open binary file (torch.load(f)): read from its position
        name = str(getattr(path, "name", "<file>"))
        f: Any = contextlib.nullcontext(io.BytesIO(path.read()))
    else:
        name = path = os.fspath(path)
        f = open(path, "rb")
    with f as fh:
        try:
            return _Reader(fh, name, target).read()
        except (CheckpointError, TypeError):  # TypeError: a dtype the backend lacks
            raise
        except (ValueError, OverflowError, IndexError, KeyError, RecursionError,
                MemoryError, AttributeError) as e:  # whatever slipped past the checks
            raise CheckpointError(f"xad.load({name!r}): the file is corrupt "
                                  f"({type(e).__name__}: {str(e)[:200]})") from None


class _Reader:
    def __init__(self, f: Any, path: str, target: _backend.Backend) -> None:
        self.f = f
        self.path = path
        self.target = target
        # Host arrays are built with the NumPy *backend's* namespace (array_api_compat.numpy,
        # a re-export of NumPy, which xad depends on) so that xad never imports NumPy itself.
        # Its ``frombuffer`` views the bytes read for one tensor without another copy; the
        # standard's route, ``asarray`` of a buffer-protocol object, cannot express float16
        # (``memoryview.cast`` has no 'e' format). ``from_numpy`` then copies onto the target.
        self.host = _backend.resolve_backend("numpy").xp

    def fail(self, what: str) -> CheckpointError:
        return CheckpointError(f"xad.load({self.path!r}): {what}")

    def read(self) -> Any:
        f = self.f
        size = f.getbuffer().nbytes if isinstance(f, io.BytesIO) else os.fstat(f.fileno()).st_size
        prefix = f.read(_PREFIX)
        if prefix[:len(MAGIC)] != MAGIC:
            raise self.fail(_what_is(prefix, size))
        if len(prefix) < _PREFIX:
            raise self.fail(f"truncated: the file has {size} bytes, fewer than the "
                            f"{_PREFIX}-byte preamble")
        (hlen,) = struct.unpack("<Q", prefix[len(MAGIC):])
        if hlen > size - _PREFIX:
            raise self.fail(f"truncated or corrupt: the header claims {hlen} bytes but only "
                            f"{size - _PREFIX} follow the preamble")
        raw = f.read(hlen)
        if len(raw) != hlen:
            raise self.fail(f"truncated: read {len(raw)} of the header's {hlen} bytes")
        try:
            header = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise self.fail(f"the header is not valid JSON ({type(e).__name__}: "
                            f"{str(e)[:200]})") from None
        if not isinstance(header, dict) or header.get("format") != "xad":
            raise self.fail("the header does not describe an xad checkpoint")
        version = header.get("version")
        if isinstance(version, bool) or version not in _READS:
            raise self.fail(f"format version {version!r}; this xad reads versions "
                            f"{', '.join(map(str, _READS))} (a newer xad wrote it?)")
        self.checked = version >= 2
        self.data_start = _PREFIX + hlen
        data_bytes = header.get("data_bytes")
        if not _is_count(data_bytes):
            raise self.fail(f"the header's data_bytes is {data_bytes!r}, not a byte count")
        actual = size - self.data_start
        if data_bytes != actual:
            raise self.fail(f"{'truncated' if actual < data_bytes else 'trailing bytes'}: "
                            f"the header declares {data_bytes} bytes of tensor data but the "
                            f"file holds {actual}")
        self.data_bytes = data_bytes
        if "object" not in header:
            raise self.fail("the header has no 'object' entry")
        self.storages = header.get("storages", [])
        if not isinstance(self.storages, list):
            raise self.fail("the header's storages entry is not a list")
        self.loaded: dict[int, Tensor] = {}
        self.loaded_views: dict[tuple, Tensor] = {}
        obj = self.decode(header["object"], "obj", 0)
        if self.checked:
            crc = header.pop("crc32", None)
            if not _is_count(crc) or crc != zlib.crc32(_compact(header)):
                raise self.fail("the header's checksum does not match its contents (the file "
                                "is corrupt)")
        return obj

    def decode(self, node: Any, where: str, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise self.fail(f"the object nests deeper than {_MAX_DEPTH} levels at {where}")
        if node is None or isinstance(node, (bool, str, int)):
            return node
        if not isinstance(node, dict):
            raise self.fail(f"unexpected {type(node).__name__} entry at {where}")
        kind = node.get("$")
        if kind == "float":
            h = node.get("hex")
            try:
                return float.fromhex(h)  # type: ignore[arg-type]
            except (TypeError, ValueError, OverflowError):
                raise self.fail(f"bad float {h!r} at {where}") from None
        if kind in ("list", "tuple"):
            items = node.get("items")
            if not isinstance(items, list):
                raise self.fail(f"a {kind} without an item list at {where}")
            out = [self.decode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(items)]
            return tuple(out) if kind == "tuple" else out
        if kind == "dict":
            keys, values = node.get("keys"), node.get("values")
            if not isinstance(keys, list) or not isinstance(values, list) \
                    or len(keys) != len(values):
                raise self.fail(f"a dict whose keys and values do not pair up at {where}")
            d: dict[Any, Any] = {}
            for k, v in zip(keys, values):
                if isinstance(k, bool) or not isinstance(k, (str, int)):
                    raise self.fail(f"a dict key of type {type(k).__name__} at {where}")
                d[k] = self.decode(v, f"{where}[{k!r}]", depth + 1)
            return d
        if kind == "tensor":
            return self.tensor(node, where)
        if kind == "view":
            return self.view(node, where)
        raise self.fail(f"unknown entry type {kind!r} at {where}")

    def view(self, node: dict[str, Any], where: str) -> Tensor:
        """A tensor that shares a storage of the file with others (``saved_views``)."""
        j, chain = node.get("storage"), node.get("chain")
        if not _is_count(j) or j >= len(self.storages) or not isinstance(chain, list):
            raise self.fail(f"the view at {where} names no storage of the file")
        if j not in self.loaded:
            self.loaded[j] = self.tensor(self.storages[j], f"storage {j}")
        key = (j, node.get("object"))
        if key in self.loaded_views:
            return self.loaded_views[key]
        try:
            t = remake(self.loaded[j], chain, node.get("requires_grad") is True)
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise self.fail(f"the view at {where} has a malformed chain {chain!r} "
                            f"({type(e).__name__})") from None
        if list(t.shape) != node.get("shape") or t.dtype.name != node.get("dtype"):
            raise self.fail(f"the view at {where} does not have its declared shape/dtype")
        self.loaded_views[key] = t
        return t

    def tensor(self, node: dict[str, Any], where: str) -> Tensor:
        dtype, shape = node.get("dtype"), node.get("shape")
        offset, nbytes = node.get("offset"), node.get("nbytes")
        if not isinstance(dtype, str) or dtype not in _ITEMSIZE:
            raise self.fail(f"the tensor at {where} has unknown dtype {dtype!r}")
        if not isinstance(shape, list) or len(shape) > 64 or not all(
                _is_count(n) and n < 2 ** 48 for n in shape):
            raise self.fail(f"the tensor at {where} has an invalid shape {shape!r}")
        if not _is_count(offset) or not _is_count(nbytes):
            raise self.fail(f"the tensor at {where} has an invalid offset/size "
                            f"({offset!r}, {nbytes!r})")
        expected = math.prod(shape) * _ITEMSIZE[dtype]
        if nbytes != expected:
            raise self.fail(f"the tensor at {where} ({dtype}, shape {tuple(shape)}) needs "
                            f"{expected} bytes but the header says {nbytes}")
        if offset % ALIGN or offset + nbytes > self.data_bytes:
            raise self.fail(f"the tensor at {where} claims bytes {offset}..{offset + nbytes} "
                            f"of a {self.data_bytes}-byte data section")
        if self.target._dtypes.get(_dt.ALL[dtype]) is None:
            raise TypeError(f"xad.load({self.path!r}): the tensor at {where} is {dtype}, which "
                            f"backend {self.target.name!r} does not have; load the file onto "
                            f"another backend and cast it")
        buf = bytearray(nbytes)
        self.f.seek(self.data_start + offset)
        if self.f.readinto(buf) != nbytes:
            raise self.fail(f"truncated while reading the tensor at {where}")
        if self.checked and node.get("crc32") != zlib.crc32(buf):
            raise self.fail(f"the tensor at {where} ({dtype}, shape {tuple(shape)}) does not "
                            f"match its checksum: its bytes are corrupt")
        xp = self.host
        host = xp.reshape(xp.frombuffer(buf, dtype=getattr(xp, dtype)), tuple(shape))
        if sys.byteorder == "big":
            host = host.byteswap()
        arr = self.target.from_numpy(host)
        if tuple(arr.shape) != tuple(shape):  # a backend may return 0-d arrays as 1-d
            arr = self.target.xp.reshape(arr, tuple(shape))
        t = Tensor._make(arr, self.target)
        if node.get("requires_grad") is True and t.dtype.is_floating:
            t.requires_grad_()
        return t


def _is_count(x: Any) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _no_constant(name: str) -> Any:
    raise ValueError(f"the non-standard JSON constant {name}")


def _what_is(prefix: bytes, size: int) -> str:
    """Say what a file that lacks the magic number looks like."""
    if size == 0:
        return "the file is empty (not an xad checkpoint)"
    if prefix[:1] == b"\x80":
        return ("this looks like a pickle (e.g. a torch.save file), not an xad checkpoint; xad "
                "never loads pickles, since loading one can run arbitrary code")
    if prefix[:2] == b"PK":
        return ("this is a zip archive (a NumPy .npz or a torch.save file?), not an xad "
                "checkpoint")
    if prefix[:6] == b"\x93NUMPY":
        return "this is a NumPy .npy file, not an xad checkpoint"
    if size < len(MAGIC) and MAGIC.startswith(prefix):
        return f"truncated: the file has {size} bytes, fewer than the preamble"
    return f"not an xad checkpoint (wrong magic number {prefix[:8]!r})"
