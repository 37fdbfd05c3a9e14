"""xad.save / xad.load: round trips across backends, atomic writes, hostile files."""

from __future__ import annotations

import json
import math
import os
import pickle
import struct
import subprocess
import sys

import numpy as np
import pytest

import xad
from xad.utils import serialization as ser
from xad.utils.serialization import CheckpointError

NESTED_DTYPES = [xad.float16, xad.float32, xad.float64, xad.int32, xad.int64, xad.uint8,
                 xad.bool]


def _obj(*backends):
    dtypes = [d for d in NESTED_DTYPES if all(b._dtypes.get(d) is not None for b in backends)]
    return {
        "w": xad.reshape(xad.arange(6, dtype=xad.float32), (2, 3)),
        3: [xad.tensor([1.5, -2.0], dtype=xad.float64), 0.1, -7, True, None, "txt"],
        "t": (xad.zeros(0, 4), math.inf, math.nan, -0.0, 2 ** 70),
        "empty": {},
        "scalar": xad.tensor(4.25, dtype=xad.float64),
        "dtypes": {d.name: xad.ones(3, dtype=d) for d in dtypes},
        "grad": xad.ones(2, requires_grad=True),
    }


def _check(loaded, original, backend):
    if isinstance(original, xad.Tensor):
        assert isinstance(loaded, xad.Tensor) and loaded.backend is backend
        assert loaded.dtype == original.dtype and loaded.shape == original.shape
        assert loaded.requires_grad == original.requires_grad and loaded.is_leaf
        np.testing.assert_array_equal(loaded.numpy(), original.numpy())
    elif isinstance(original, dict):
        assert type(loaded) is dict and list(loaded) == list(original)
        for k in original:
            _check(loaded[k], original[k], backend)
    elif isinstance(original, (list, tuple)):
        assert type(loaded) is type(original) and len(loaded) == len(original)
        for a, b in zip(loaded, original):
            _check(a, b, backend)
    elif isinstance(original, float) and math.isnan(original):
        assert isinstance(loaded, float) and math.isnan(loaded)
    else:
        assert type(loaded) is type(original) and loaded == original
        if isinstance(original, float):
            assert math.copysign(1, loaded) == math.copysign(1, original)


@pytest.mark.parametrize("target", ["numpy", "array_api_strict", "torch", "jax"])
def test_round_trip_across_backends(xb, tmp_path, target):
    try:
        tb = xad.resolve_backend(target)
    except xad.BackendError as e:
        pytest.skip(str(e))
    obj = _obj(xb, tb)
    path = tmp_path / "ckpt.xad"
    xad.save(obj, path)
    assert os.listdir(tmp_path) == ["ckpt.xad"]  # exactly path; no temp file left behind
    _check(xad.load(path, backend=target), obj, tb)
    _check(xad.load(str(path), backend=tb), obj, tb)


def test_missing_dtype_on_target(tmp_path):
    xad.save(xad.ones(2, dtype=xad.float16, backend=xad.resolve_backend("numpy")), tmp_path / "h")
    with pytest.raises(TypeError, match="float16, which backend 'array_api_strict'"):
        xad.load(tmp_path / "h", backend="array_api_strict")


def test_load_defaults_to_current_backend(xb, tmp_path):
    with xad.use_backend("numpy"):
        xad.save({"a": xad.ones(2)}, tmp_path / "a")
    loaded = xad.load(tmp_path / "a")
    assert loaded["a"].backend is xb


def test_loaded_arrays_are_writable_and_private(xb, tmp_path):
    w = xad.ones(3, dtype=xad.float64)
    xad.save(w, tmp_path / "w")
    a, b = xad.load(tmp_path / "w"), xad.load(tmp_path / "w")
    with xad.no_grad():
        a += 1
    assert a.tolist() == [2.0, 2.0, 2.0] and b.tolist() == [1.0, 1.0, 1.0]


def test_raw_arrays_and_numpy_scalars(tmp_path):
    xad.save({"raw": np.arange(3.0), "f": np.float32(1.5), "i": np.int64(4)}, tmp_path / "r")
    d = xad.load(tmp_path / "r", backend="numpy")
    assert d["raw"].tolist() == [0.0, 1.0, 2.0] and d["f"] == 1.5 and d["i"] == 4


def test_raw_array_saved_before_any_tensor(tmp_path):
    """A NumPy array is the current backend's even before its first tensor (a fresh process
    whose first xad call is save, as `torch.save(np_array, f)` under as_torch)."""
    code = ("import numpy as np, sys, xad; xad.save(np.arange(3.0), sys.argv[1]); "
            "print(xad.load(sys.argv[1]).tolist())")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "a")], check=True,
                         capture_output=True, text=True).stdout
    assert out.strip() == "[0.0, 1.0, 2.0]"


def test_open_files(tmp_path):
    """save and load take open binary files (`torch.save(obj, open(p, 'wb'))`)."""
    import io

    from xad.utils.torch_checkpoint import torch_load
    buf = io.BytesIO(b"xx")
    buf.seek(2)
    xad.save({"w": xad.arange(3)}, buf)
    buf.seek(2)
    assert xad.load(buf)["w"].tolist() == [0, 1, 2]
    with open(tmp_path / "f.pt", "wb") as f:
        xad.save([xad.ones(2)], f)
    with open(tmp_path / "f.pt", "rb") as f:
        assert torch_load(f)[0].tolist() == [1.0, 1.0]


def test_unsupported_objects(tmp_path):
    with pytest.raises(TypeError, match=r"type set \(at obj\['a'\]\[1\]\)"):
        xad.save({"a": [1, {2}]}, tmp_path / "x")
    with pytest.raises(TypeError, match="dict keys must be str or int"):
        xad.save({(1, 2): 3}, tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_save_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "model.xad"
    xad.save({"v": 1}, path)
    os.chmod(path, 0o640)

    def boom(t, nbytes):
        raise OSError("disk full")

    monkeypatch.setattr(ser, "_tensor_bytes", boom)
    with pytest.raises(OSError, match="disk full"):
        xad.save({"v": xad.ones(1000)}, path)
    monkeypatch.undo()
    assert xad.load(path) == {"v": 1}  # the old file is intact
    assert os.listdir(tmp_path) == ["model.xad"]  # and the temp file is gone
    xad.save({"v": 2}, path)
    assert xad.load(path) == {"v": 2} and (os.stat(path).st_mode & 0o777) == 0o640


# ----- hostile and broken files ------------------------------------------------------------
def _good(tmp_path):
    path = tmp_path / "good.xad"
    xad.save({"w": xad.ones(4, dtype=xad.float64), "n": 1}, path)
    return path, path.read_bytes()


def _with_header(raw: bytes, header: dict, data: bytes | None = None) -> bytes:
    h = json.dumps(header).encode()
    hlen = struct.unpack("<Q", raw[8:16])[0]
    body = raw[16 + hlen:] if data is None else data
    return ser.MAGIC + struct.pack("<Q", len(h)) + h + body


def _header(raw: bytes) -> dict:
    hlen = struct.unpack("<Q", raw[8:16])[0]
    return json.loads(raw[16:16 + hlen])


def _corrupt(tmp_path, content: bytes, match: str):
    bad = tmp_path / "bad.xad"
    bad.write_bytes(content)
    with pytest.raises(CheckpointError, match=match) as e:
        xad.load(bad)
    assert "bad.xad" in str(e.value) and isinstance(e.value, ValueError)


def test_pickle_is_refused(tmp_path):
    _corrupt(tmp_path, pickle.dumps({"a": 1}), "pickle")


def test_foreign_files(tmp_path):
    _corrupt(tmp_path, b"", "empty")
    _corrupt(tmp_path, b"PK\x03\x04" + b"\0" * 40, "zip")
    _corrupt(tmp_path, b"\x93NUMPY" + b"\0" * 40, "npy")
    _corrupt(tmp_path, b"hello world, not a checkpoint", "wrong magic")


def test_truncated_files(tmp_path):
    _, raw = _good(tmp_path)
    _corrupt(tmp_path, raw[:5], "truncated")
    _corrupt(tmp_path, raw[:12], "truncated")
    _corrupt(tmp_path, raw[:40], "header claims")
    _corrupt(tmp_path, raw[:-1], "truncated")
    _corrupt(tmp_path, raw + b"\0", "trailing bytes")


def test_bad_headers(tmp_path):
    _, raw = _good(tmp_path)
    hlen = struct.unpack("<Q", raw[8:16])[0]
    _corrupt(tmp_path, raw[:16] + b"{" * hlen + raw[16 + hlen:], "not valid JSON")
    _corrupt(tmp_path, raw[:16] + b"\xff" * hlen + raw[16 + hlen:], "not valid JSON")
    _corrupt(tmp_path, raw[:8] + struct.pack("<Q", 2 ** 62) + raw[16:], "header claims")
    h = _header(raw)
    _corrupt(tmp_path, _with_header(raw, {**h, "version": 99}), "version 99")
    _corrupt(tmp_path, _with_header(raw, {**h, "format": "pickle"}), "does not describe")
    _corrupt(tmp_path, _with_header(raw, {**h, "object": {"$": "eval", "code": "1"}}),
             "unknown entry type 'eval'")
    deep = {"$": "list", "items": []}
    for _ in range(400):
        deep = {"$": "list", "items": [deep]}
    _corrupt(tmp_path, _with_header(raw, {**h, "object": deep}), "deeper|JSON")
    _corrupt(tmp_path, _with_header(raw, {**h, "object": {"$": "float", "hex": "NaNx"}}),
             "bad float")


def _tensor_entry(raw):
    h = _header(raw)
    i = h["object"]["keys"].index("w")
    return h, h["object"]["values"][i]


@pytest.mark.parametrize("change,match", [
    ({"shape": [10 ** 12]}, "needs 8000000000000 bytes but the header says 32"),
    ({"shape": [10 ** 12], "nbytes": 8 * 10 ** 12}, "claims bytes"),
    ({"nbytes": 31}, "needs 32 bytes"),
    ({"dtype": "object"}, "unknown dtype 'object'"),
    ({"dtype": "float32"}, "needs 16 bytes"),
    ({"shape": [-4]}, "invalid shape"),
    ({"shape": "4"}, "invalid shape"),
    ({"offset": 64}, "claims bytes"),
    ({"offset": 3}, "claims bytes"),
    ({"offset": -64}, "invalid offset"),
])
def test_inconsistent_tensor_entries(tmp_path, change, match):
    _, raw = _good(tmp_path)
    h, entry = _tensor_entry(raw)
    entry.update(change)
    _corrupt(tmp_path, _with_header(raw, h), match)


def test_data_bytes_must_match(tmp_path):
    _, raw = _good(tmp_path)
    h = _header(raw)
    h["data_bytes"] = 10 ** 15
    _corrupt(tmp_path, _with_header(raw, h), "truncated")
    h["data_bytes"] = "64"
    _corrupt(tmp_path, _with_header(raw, h), "not a byte count")


# ----- checkpoints of models and optimisers -------------------------------------------------
def test_optimizer_state_round_trip(xb, tmp_path):
    """An Adam state saved on numpy, loaded onto the backend under test, resumes exactly."""
    nb = xad.resolve_backend("numpy")
    rng = np.random.default_rng(0)
    a_np, w_np = rng.standard_normal((5, 3)), rng.standard_normal(3)

    def train(w, opt, a, steps):
        for _ in range(steps):
            opt.zero_grad()
            (xad.tanh(a @ w) ** 2).sum().backward()
            opt.step()

    a0 = xad.tensor(a_np.copy(), dtype=xad.float64, backend=nb)
    w0 = xad.tensor(w_np.copy(), dtype=xad.float64, requires_grad=True, backend=nb)
    opt0 = xad.optim.Adam([w0], lr=0.05, amsgrad=True)
    train(w0, opt0, a0, 3)
    xad.save({"params": {"w": w0}, "optim": opt0.state_dict()}, tmp_path / "ckpt")
    train(w0, opt0, a0, 4)

    ck = xad.load(tmp_path / "ckpt")
    w1 = ck["params"]["w"]
    assert w1.backend is xb and w1.requires_grad
    opt1 = xad.optim.Adam([w1], lr=1.0)
    opt1.load_state_dict(ck["optim"])
    assert opt1.param_groups[0]["betas"] == (0.9, 0.999) and opt1.param_groups[0]["lr"] == 0.05
    train(w1, opt1, xad.tensor(a_np.copy(), dtype=xad.float64), 4)
    np.testing.assert_allclose(w1.numpy(), w0.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("target", ["array_api_strict", "torch"])
def test_sequential_model_checkpoint_resumes(tmp_path, target):
    nn = xad.nn
    try:
        tb = xad.resolve_backend(target)
    except xad.BackendError as e:
        pytest.skip(str(e))
    rng = np.random.default_rng(1)
    x_np, y_np = rng.standard_normal((16, 3)), rng.standard_normal((16, 1))

    def make():
        return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 1)).to(xad.float64)

    def train(model, opt, x, y, steps):
        for _ in range(steps):
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()

    with xad.use_backend("numpy"):
        xad.manual_seed(0)
        model = make()
        opt = xad.optim.Adam(model.parameters(), lr=0.01)
        x, y = xad.tensor(x_np, dtype=xad.float64), xad.tensor(y_np, dtype=xad.float64)
        train(model, opt, x, y, 3)
        xad.save({"model": model.state_dict(), "optim": opt.state_dict()}, tmp_path / "m")
        train(model, opt, x, y, 5)
        expected = [p.numpy() for p in model.parameters()]

    ck = xad.load(tmp_path / "m", backend=target)
    with xad.use_backend(tb):
        model2 = make()
        model2.load_state_dict(ck["model"])
        assert all(p.backend is tb for p in model2.parameters())
        opt2 = xad.optim.Adam(model2.parameters(), lr=0.01)
        opt2.load_state_dict(ck["optim"])
        train(model2, opt2, xad.tensor(x_np.copy(), dtype=xad.float64),
              xad.tensor(y_np.copy(), dtype=xad.float64), 5)
    for p, e in zip(model2.parameters(), expected):
        np.testing.assert_allclose(p.numpy(), e, rtol=1e-10, atol=1e-12)
