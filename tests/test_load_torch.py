"""xad.load_torch: PyTorch files load into xad models with PyTorch's numbers; hostile pickles
are refused without running anything."""

from __future__ import annotations

import os
import pickle
import struct
import zipfile

import numpy as np
import pytest
import torch

import xad
from xad import as_torch
from xad.utils.torch_checkpoint import torch_load


class _TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3)
        self.bn = torch.nn.BatchNorm2d(3)
        self.lstm = torch.nn.LSTM(4, 5, batch_first=True)
        self.fc = torch.nn.Linear(5, 2)

    def forward(self, x):
        h = torch.relu(self.bn(self.conv(x))).mean(dim=2)  # (N, 3, 4): 3 steps of 4
        out, _ = self.lstm(h)
        return self.fc(out[:, -1])


class _XadNet(xad.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = xad.nn.Conv2d(2, 3, 3)
        self.bn = xad.nn.BatchNorm2d(3)
        self.lstm = xad.nn.LSTM(4, 5, batch_first=True)
        self.fc = xad.nn.Linear(5, 2)

    def forward(self, x):
        h = xad.relu(self.bn(self.conv(x))).mean(dim=2)
        out, _ = self.lstm(h)
        return self.fc(out[:, -1])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A model's state dict saved by torch (after training steps: BatchNorm buffers move)."""
    torch.manual_seed(0)
    net = _TorchNet().double()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        net(torch.randn(4, 2, 6, 6, dtype=torch.float64)).pow(2).sum().backward()
        opt.step()
    net.eval()
    x = torch.randn(5, 2, 6, 6, dtype=torch.float64)
    path = tmp_path_factory.mktemp("pt") / "net.pt"
    torch.save(net.state_dict(), path)
    with torch.no_grad():
        return path, x.numpy(), net(x).numpy()


def test_state_dict_loads_into_the_same_model(xb, trained):
    path, x, expected = trained
    state = xad.load_torch(path)
    assert list(state) == list(_TorchNet().state_dict())
    assert int(state["bn.num_batches_tracked"].item()) == 3
    net = _XadNet().double()
    net.load_state_dict(state)
    net.eval()
    out = net(xad.tensor(x))
    assert out.backend is xb
    np.testing.assert_allclose(xb.to_numpy(out._array), expected, rtol=1e-12, atol=1e-12)


def test_views_shared_storage_dtypes_and_parameters(xb, tmp_path):
    base = torch.arange(12, dtype=torch.float64).reshape(3, 4)
    obj = {"t": base.t(), "row": base[1], "col": base[:, 2], "base": base,
           "i": torch.tensor([[1, -2]], dtype=torch.int64), "b": torch.tensor([True, False]),
           "p": torch.nn.Parameter(torch.ones(2, dtype=torch.float32)), "n": 3, "s": "x",
           "l": [1.5, None, (2, "y")], "e": torch.zeros(0, 3), "z": torch.tensor(2.5)}
    torch.save(obj, tmp_path / "m.pt")
    got = xad.load_torch(tmp_path / "m.pt")
    for k in ("t", "row", "col", "base", "i", "b", "p", "e", "z"):
        assert got[k].dtype.name == str(obj[k].dtype).removeprefix("torch."), k
        np.testing.assert_array_equal(xb.to_numpy(got[k]._array), obj[k].detach().numpy())
    assert got["p"].requires_grad and not got["base"].requires_grad
    assert (got["n"], got["s"], got["l"]) == (3, "x", [1.5, None, (2, "y")])


def test_torch_load_under_as_torch(xb, trained, tmp_path):
    t = as_torch.namespace()["torch"]
    assert t.load(trained[0], map_location="cpu", weights_only=True)["fc.bias"].shape == (2,)
    t.save({"w": xad.ones(2)}, tmp_path / "w.pt")  # xad's format, read back by torch.load
    assert t.load(tmp_path / "w.pt")["w"].tolist() == [1.0, 1.0]
    assert torch_load(trained[0])["fc.weight"].shape == (2, 5)


# ----- hostile files: pickles written opcode by opcode -----------------------------------------
def _archive(path, pkl, storages=None):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", "little")
        for key, data in (storages or {}).items():
            z.writestr(f"archive/data/{key}", data)
    return path


def _u(s):  # BINUNICODE
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def _tensor_pkl(numel, offset, size, stride, storage="FloatStorage"):
    """A pickle of one tensor on storage '0' (as torch writes it), with chosen numbers."""
    ints = b"".join(b"J" + struct.pack("<i", n) for n in size)
    strides = b"".join(b"J" + struct.pack("<i", n) for n in stride)
    return (b"\x80\x02c" + b"torch._utils\n_rebuild_tensor_v2\n" + b"((" + _u("storage")
            + b"ctorch\n" + storage.encode() + b"\n" + _u("0") + _u("cpu")
            + b"J" + struct.pack("<i", numel) + b"tQ" + b"J" + struct.pack("<i", offset)
            + b"(" + ints + b"t(" + strides + b"t\x89" + b"ccollections\nOrderedDict\n)R"
            + b"tR.")


def _call(module, name, arg):
    """GLOBAL module.name, called with one string argument (REDUCE)."""
    return b"\x80\x02c" + f"{module}\n{name}\n".encode() + _u(arg) + b"\x85R."


def _hostile(marker):
    touch = f"open({str(marker)!r}, 'w').close()"
    return {
        "os.system": _call("os", "system", f"touch {marker}"),
        "posix.system": _call("posix", "system", f"touch {marker}"),
        "builtins.eval": _call("builtins", "eval", touch),
        "builtins.exec": _call("builtins", "exec", touch),
        "stack-global": (b"\x80\x04" + b"\x8c\x02os\x94\x8c\x06system\x94\x93"
                         + _u(f"touch {marker}") + b"\x85R."),
        "inst": f"(S'touch {marker}'\nios\nsystem\n.".encode(),
        "obj": b"\x80\x02(cos\nsystem\n" + _u(f"touch {marker}") + b"o.",
        "storage-called": b"\x80\x02ctorch\nFloatStorage\n)R.",
        "odict-build": (b"\x80\x02ccollections\nOrderedDict\n)R}" + _u("__class__")
                        + b"K\x01sb."),
        "fake-persid": b"\x80\x02" + _u("storage") + b"\x85Q.",
        "torch-module": b"\x80\x02ctorch.nn.modules.linear\nLinear\n)R.",
    }


@pytest.mark.parametrize("name", sorted(_hostile("m")))
def test_hostile_pickles_are_refused_without_running(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "marker"
    path = _archive(tmp_path / "evil.pt", _hostile(marker)[name])
    with pytest.raises(xad.CheckpointError, match="evil.pt") as e:
        xad.load_torch(path)
    assert not marker.exists()
    assert "refused" in str(e.value) or "not a storage" in str(e.value)


def test_the_refusal_names_the_global(tmp_path):
    path = _archive(tmp_path / "evil.pt", _call("os", "system", "true"))
    with pytest.raises(xad.CheckpointError, match=r"global os\.system was refused"):
        xad.load_torch(path)


@pytest.mark.parametrize("numel, offset, size, stride, data, match", [
    (1000, 0, (2,), (1,), b"\0" * 8, "claims 1000 float32 elements"),  # oversized storage
    (2, 1, (2,), (1,), b"\0" * 8, "reaches element 2"),                 # offset out of range
    (4, 0, (2, 2), (3, 1), b"\0" * 16, "reaches element 4"),            # stride out of range
    (2, -1, (2,), (1,), b"\0" * 8, "invalid layout"),                    # negative offset
    (2, 0, (2,), (-1,), b"\0" * 8, "invalid layout"),                    # negative stride
    (2, 0, (2,), (1,), b"\0" * 7, "file holds 7 bytes"),                  # short storage
    (1, 0, (1 << 30,), (0,), b"\0" * 4, "would materialise"),             # expansion bomb
])
def test_bad_storages_are_refused(tmp_path, numel, offset, size, stride, data, match):
    path = _archive(tmp_path / "bad.pt", _tensor_pkl(numel, offset, size, stride),
                    {"0": data})
    with pytest.raises(xad.CheckpointError, match=match):
        xad.load_torch(path)


def test_a_handmade_tensor_loads_and_unknown_storages_are_refused(tmp_path):
    data = np.array([1.0, 2.0, 3.0, 4.0], dtype="<f4").tobytes()
    good = _archive(tmp_path / "ok.pt", _tensor_pkl(4, 1, (3,), (1,)), {"0": data})
    assert xad.load_torch(good).tolist() == [2.0, 3.0, 4.0]
    bad = _archive(tmp_path / "bad.pt", _tensor_pkl(4, 0, (4,), (1,), "EvilStorage"),
                   {"0": data})
    with pytest.raises(xad.CheckpointError, match="torch.EvilStorage was refused"):
        xad.load_torch(bad)
    missing = _archive(tmp_path / "missing.pt", _tensor_pkl(4, 0, (4,), (1,)))
    with pytest.raises(xad.CheckpointError, match="storage '0' is not in the archive"):
        xad.load_torch(missing)


def test_legacy_format(xb, trained, tmp_path):
    path, x, expected = trained
    legacy = tmp_path / "legacy.pt"
    torch.save(torch.load(path), legacy, _use_new_zipfile_serialization=False)
    net = _XadNet().double()
    net.load_state_dict(xad.load_torch(legacy))
    net.eval()
    np.testing.assert_allclose(xb.to_numpy(net(xad.tensor(x))._array), expected, rtol=1e-12)
    base = torch.arange(6.0).reshape(2, 3)
    torch.save([base.t(), base], legacy, _use_new_zipfile_serialization=False)
    with open(legacy, "rb") as f:  # a file object, as torch.load takes
        t, b = xad.load_torch(f)
    np.testing.assert_array_equal(xb.to_numpy(t._array), base.t().numpy())


def test_hostile_legacy_files_are_refused(tmp_path):
    marker = tmp_path / "marker"
    head = b"".join(pickle.dumps(v, protocol=2) for v in
                    (0x1950a86a20f9469cfc6c, 1001, {"little_endian": True}))
    path = tmp_path / "evil.pt"
    path.write_bytes(head + _call("os", "system", f"touch {marker}"))
    with pytest.raises(xad.CheckpointError, match=r"global os\.system was refused"):
        xad.load_torch(path)
    assert not marker.exists()
    torch.save(torch.ones(4), path, _use_new_zipfile_serialization=False)
    data = path.read_bytes()
    path.write_bytes(data[:-3])  # a truncated storage
    with pytest.raises(xad.CheckpointError, match="truncated"):
        xad.load_torch(path)
    path.write_bytes(data.replace(struct.pack("<q", 4) + struct.pack("<f", 1.0),
                                  struct.pack("<q", 9) + struct.pack("<f", 1.0)))
    with pytest.raises(xad.CheckpointError, match="claims 4 float32 elements"):
        xad.load_torch(path)


def test_non_archives_are_refused(tmp_path):
    other = tmp_path / "other.pt"
    other.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(xad.CheckpointError, match="not a file written by torch.save"):
        xad.load_torch(other)
    with zipfile.ZipFile(tmp_path / "empty.pt", "w") as z:
        z.writestr("x.txt", "")
    with pytest.raises(xad.CheckpointError, match="data.pkl"):
        xad.load_torch(tmp_path / "empty.pt")
    assert not os.path.exists(tmp_path / "marker")


def test_a_whole_module_saved_by_torch_is_refused(tmp_path):
    torch.save(torch.nn.Linear(2, 3), tmp_path / "model.pt")
    with pytest.raises(xad.CheckpointError, match="torch.nn.modules.linear.Linear was refused"):
        xad.load_torch(tmp_path / "model.pt")


def _mutate(rng, data):
    data = bytearray(data)
    for _ in range(int(rng.integers(1, 4))):
        i = int(rng.integers(len(data)))
        op = rng.integers(3)
        if op == 0:
            data[i] = int(rng.integers(256))
        elif op == 1:
            del data[i:i + int(rng.integers(1, 8))]
        else:
            data[i:i] = bytes(rng.integers(0, 256, int(rng.integers(1, 8)), dtype=np.uint8))
    return bytes(data)


def test_fuzzed_files_load_or_raise_checkpoint_error(tmp_path, monkeypatch):
    """Mutated pickles (in a valid zip, so the CRC passes) and mutated legacy files either
    load or raise CheckpointError; nothing else escapes. XAD_FUZZ_N=10000 for a long run."""
    monkeypatch.chdir(tmp_path)
    state = {"w": torch.arange(6.0).reshape(2, 3).t(), "b": torch.ones(2, dtype=torch.int64),
             "meta": [1, 2.5, "x", None]}
    torch.save(state, tmp_path / "ok.pt")
    torch.save(state, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    with zipfile.ZipFile(tmp_path / "ok.pt") as z:
        entries = {n: z.read(n) for n in z.namelist()}
    pkl = next(n for n in entries if n.endswith("data.pkl"))
    legacy = (tmp_path / "legacy.pt").read_bytes()
    rng = np.random.default_rng(int(os.environ.get("XAD_FUZZ_SEED", "0")))
    path = tmp_path / "fuzz.pt"
    counts = {"loaded": 0, "refused": 0}
    for _ in range(int(os.environ.get("XAD_FUZZ_N", "150"))):
        if rng.integers(2):
            with zipfile.ZipFile(path, "w") as z:
                for n, data in entries.items():
                    z.writestr(n, _mutate(rng, data) if n == pkl else data)
        else:
            path.write_bytes(_mutate(rng, legacy))
        try:
            xad.load_torch(path)
            counts["loaded"] += 1
        except xad.CheckpointError:
            counts["refused"] += 1
    print(f"load_torch fuzz: {counts}")
    assert counts["refused"] > 0
    assert sorted(os.listdir(tmp_path)) == ["fuzz.pt", "legacy.pt", "ok.pt"]


def test_a_program_under_as_torch_loads_pytorch_weights(trained):
    """``import torch`` in user code under as_torch: torch.load and torch.distributions."""
    path, x, expected = trained
    program = f"""
import torch
import torch.distributions as D
state = torch.load({str(path)!r}, map_location="cpu", weights_only=True)
bias = state["fc.bias"]
logp = D.Normal(bias, 1.0).log_prob(bias).sum()
"""
    as_torch.install()
    try:
        exec(program, user := {"__name__": "user_program"})
    finally:
        as_torch.uninstall()
    assert isinstance(user["bias"], xad.Tensor)
    assert user["logp"].item() == pytest.approx(-2 * 0.9189385332046727)


def test_pickles_that_declare_huge_sizes_allocate_nothing(tmp_path):
    """The C unpickler grows its memo to a PUT's index (LONG_BINPUT 1.6e9: 12 GB) and
    BYTEARRAY8 allocates its declared length: both found by the fuzz test."""
    memo = _archive(tmp_path / "memo.pt", b"\x80\x02Nr" + struct.pack("<I", 1_600_000_000) + b".")
    assert xad.load_torch(memo) is None
    big = _archive(tmp_path / "big.pt", b"\x80\x05\x96" + struct.pack("<Q", 1 << 40) + b".")
    with pytest.raises(xad.CheckpointError, match="BYTEARRAY8 was refused"):
        xad.load_torch(big)
    head = b"".join(pickle.dumps(v, protocol=2) for v in
                    (0x1950a86a20f9469cfc6c, 1001, {"little_endian": True}))
    frame = tmp_path / "frame.pt"  # a legacy file whose FRAME claims 2^40 bytes
    frame.write_bytes(head + b"\x80\x04\x95" + struct.pack("<Q", 1 << 40) + b"N.")
    with pytest.raises(xad.CheckpointError):
        xad.load_torch(frame)
