"""The example scripts run, on NumPy, with few epochs, and learn."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import xad

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _load(name: str):
    sys.path.insert(0, str(EXAMPLES))
    try:
        spec = importlib.util.spec_from_file_location(f"xad_example_{name}",
                                                      EXAMPLES / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(EXAMPLES))
    return mod


@pytest.fixture(autouse=True)
def _numpy_afterwards():
    yield
    xad.set_backend("numpy")


def test_linear_regression(capsys):
    mse = _load("linear_regression").main(["--epochs", "3", "--quiet"])
    out = capsys.readouterr().out
    assert mse < 0.012  # the noise variance is 0.01
    assert "true coefficient" in out
    err = float(out.split("largest coefficient error ")[1].split(";")[0])
    assert err < 2e-2


def test_fit_nonlinear(tmp_path, capsys):
    mod = _load("fit_nonlinear")
    xad.manual_seed(0)
    x = xad.rand(1000, 1) * 2 - 1
    start = float(((mod.target(x) - mod.target(x).mean()) ** 2).mean().item())
    plot = tmp_path / "fit.png"
    args = ["--epochs", "15", "--quiet", "--plot", str(plot)]
    if importlib.util.find_spec("matplotlib") is None:
        args = args[:-2]
    mse = mod.main(args)
    assert mse < 0.5 * start  # falls well below the variance of the data
    if importlib.util.find_spec("matplotlib") is not None:
        assert plot.stat().st_size > 1000
    assert "final training MSE" in capsys.readouterr().out


def test_digits():
    pytest.importorskip("sklearn")
    acc = _load("digits").main(["--epochs", "4", "--quiet"])
    assert acc > 0.85


def test_cnn_digits():
    pytest.importorskip("sklearn")
    acc = _load("cnn_digits").main(["--epochs", "2", "--quiet"])
    assert acc > 0.85


def test_transformer_addition(capsys):
    acc = _load("transformer_addition").main(["--epochs", "1", "--quiet"])
    assert acc > 0.02  # chance is 1 in 1000 (one epoch gives about 7%; eight reach 100%)
    out = capsys.readouterr().out
    assert "held-out exact match" in out and "+" in out.split("e.g. ")[1]


def test_array_api_generic(capsys):
    r = _load("array_api_generic").main(["--steps", "150", "--quiet"])
    assert r["nll_final"] < r["nll_start"] - 50  # 89.7 -> 16.0 with the default seed
    for name, truth in r["truth"].items():  # the fit is the truth within 3 standard errors
        gap = abs(np.log(r["fitted"][name] / truth))
        assert gap < 3 * r["log_se"][name] and gap < np.log(2.5), (name, r["fitted"][name])
    assert "noise variance" in capsys.readouterr().out


def test_per_example_gradients(capsys):
    acc = _load("per_example_gradients").main(["--epochs", "2", "--quiet"])
    out = capsys.readouterr().out
    diff = float(out.split("largest difference ")[1].split()[0])
    assert diff < 1e-5
    assert acc > 0.6
