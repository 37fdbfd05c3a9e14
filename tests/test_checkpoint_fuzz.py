"""Corrupt and hostile checkpoint files: each is a CheckpointError or loads the exact
original content (the issue "No silent wrong answers", items 8, 9, 12), plus the mutation
fuzzer that found them. ``XAD_FUZZ_BUDGET=40000`` runs a long fuzz (``XAD_FUZZ_SEED`` its
seed); the default is small."""

from __future__ import annotations

import json
import os
import random
import struct
import threading

import numpy as np
import pytest

import xad
from xad.utils import serialization as ser
from xad.utils.serialization import CheckpointError

BUDGET = int(os.environ.get("XAD_FUZZ_BUDGET", "300"))


def _objects():
    xad.manual_seed(0)
    with xad.use_backend("numpy"):
        yield {"0.weight": xad.randn(4, 3), "0.bias": xad.zeros(4, dtype=xad.float64),
               "steps": xad.arange(5), "mask": xad.tensor([True, False]),
               "scalar": xad.tensor(2.5), "empty": xad.zeros((0, 3))}
        yield {"state": {0: {"step": 3, "exp_avg": xad.randn(2, 2)}},
               "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "name": "fc", "x": None}]}


def _same(a, b) -> bool:
    if isinstance(a, xad.Tensor):
        return (isinstance(b, xad.Tensor) and a.dtype is b.dtype and a.shape == b.shape
                and np.array_equal(a.numpy(), b.numpy(), equal_nan=True))
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a == b


def _mutate(raw: bytes, rng: random.Random) -> bytes:
    b = bytearray(raw)
    kind = rng.randrange(5)
    i = rng.randrange(len(b))
    if kind == 0:                                     # one bit flip anywhere
        b[i] ^= 1 << rng.randrange(8)
    elif kind == 1:                                   # a bit flip in the tensor bytes
        hlen = struct.unpack("<Q", raw[8:16])[0]
        j = 16 + hlen + rng.randrange(max(1, len(raw) - 16 - hlen))
        b[min(j, len(b) - 1)] ^= 1 << rng.randrange(8)
    elif kind == 2:                                   # truncate or insert
        return bytes(b[:i]) if rng.random() < 0.5 else bytes(b[:i] + b"\0" + b[i:])
    elif kind == 3:                                   # overwrite a run of bytes
        for k in range(i, min(len(b), i + rng.randrange(1, 9))):
            b[k] = rng.randrange(256)
    else:                                             # a digit changed inside the header
        hlen = struct.unpack("<Q", raw[8:16])[0]
        digits = [k for k in range(16, 16 + hlen) if chr(b[k]).isdigit()]
        if digits:
            k = rng.choice(digits)
            b[k] = ord(str((int(chr(b[k])) + rng.randrange(1, 10)) % 10))
    return bytes(b)


def test_mutated_checkpoints_raise_or_load_the_original(tmp_path):
    rng = random.Random(int(os.environ.get("XAD_FUZZ_SEED", "1234")))
    counts = {"rejected": 0, "identical": 0}
    for n, obj in enumerate(_objects()):
        path = tmp_path / f"orig{n}.xad"
        xad.save(obj, path)
        raw = path.read_bytes()
        for k in range(BUDGET):
            bad = tmp_path / "m.xad"
            bad.write_bytes(_mutate(raw, rng))
            try:
                got = xad.load(bad, backend="numpy")
            except CheckpointError:
                counts["rejected"] += 1
                continue
            assert _same(obj, got), f"mutant {k} of object {n} loaded different content"
            counts["identical"] += 1
    assert counts["rejected"] > counts["identical"]
    print(f"checkpoint fuzz: {2 * BUDGET} mutants, {counts}")


def test_bitflip_in_array_bytes_raises_naming_the_entry(tmp_path):
    path = tmp_path / "w.xad"
    xad.save({"w": xad.ones(16)}, path)
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 0x10  # inside w's bytes (64-aligned: 64 bytes of data, no padding)
    path.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match=r"tensor at obj\['w'\].*checksum"):
        xad.load(path)


def _rewrite(path, edit):
    raw = path.read_bytes()
    hlen = struct.unpack("<Q", raw[8:16])[0]
    header = json.loads(raw[16:16 + hlen])
    edit(header["object"]["values"][0])
    h = json.dumps(header).encode()
    h += b" " * (ser._padded(16 + len(h)) - 16 - len(h))
    path.write_bytes(raw[:8] + struct.pack("<Q", len(h)) + h + raw[16 + hlen:])


@pytest.mark.parametrize("edit", [
    lambda e: e.update(dtype=["float32"]), lambda e: e.update(dtype={"a": 1}),
    lambda e: e.update(shape=[0, 10 ** 30]), lambda e: e.update(shape=[True, 4]),
    lambda e: e.update(shape=[-1, 4]), lambda e: e.update(offset="0"),
    lambda e: e.clear() or e.update({"$": "float", "hex": "0x1p99999"})],
    ids=["dtype-list", "dtype-dict", "huge-dim", "bool-dim", "negative-dim", "str-offset",
         "float-overflow"])
def test_hostile_header_fields_are_checkpoint_errors(tmp_path, edit):
    path = tmp_path / "h.xad"
    xad.save({"w": xad.ones(4)}, path)
    _rewrite(path, edit)
    with pytest.raises(CheckpointError):
        xad.load(path)


def test_version_1_files_without_checksums_still_load(tmp_path):
    path = tmp_path / "old.xad"
    xad.save({"w": xad.arange(3.0)}, path)
    raw = path.read_bytes()
    hlen = struct.unpack("<Q", raw[8:16])[0]
    header = json.loads(raw[16:16 + hlen])
    header.pop("crc32")
    header["version"] = 1
    del header["object"]["values"][0]["crc32"]
    h = json.dumps(header).encode()
    h += b" " * (ser._padded(16 + len(h)) - 16 - len(h))
    path.write_bytes(raw[:8] + struct.pack("<Q", len(h)) + h + raw[16 + hlen:])
    assert xad.load(path)["w"].tolist() == [0.0, 1.0, 2.0]


def test_concurrent_saves_respect_the_umask(tmp_path):
    umask = os.umask(0o022)
    os.umask(umask)
    paths = [tmp_path / f"t{i}.xad" for i in range(64)]

    def work(chunk):
        for p in chunk:
            xad.save({"a": 1}, p)

    threads = [threading.Thread(target=work, args=(paths[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {os.stat(p).st_mode & 0o777 for p in paths} == {0o666 & ~umask}
