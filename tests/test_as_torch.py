"""``python -m xad.as_torch``: PyTorch programs (tests/torch_programs/) run unchanged on xad
and reach PyTorch's loss and accuracy (within noise: the random streams differ)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from xad import as_torch

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "torch_programs"
# program -> (arguments, {metric: (largest gap to PyTorch, bound every run must meet)})
CHECKS = {"makemore_mlp.py": (["400"], {"loss": (0.2, lambda v: v < 2.4)}),
          "classifier.py": (["6"], {"test_accuracy": (0.1, lambda v: v > 0.8)}),
          "regression.py": (["20"], {"val_mse": (0.03, lambda v: v < 0.12)})}


def _run(*args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                         timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@functools.cache
def _pytorch(program: str) -> dict:
    pytest.importorskip("torch")
    return _run(str(PROGRAMS / program), *CHECKS[program][0])


@pytest.mark.parametrize("backend", ["numpy", "array_api_strict", "torch"])
@pytest.mark.parametrize("program", sorted(CHECKS))
def test_program_runs_unchanged_and_matches_pytorch(program, backend):
    ref = _pytorch(program)
    got = _run("-m", "xad.as_torch", "--backend", backend, str(PROGRAMS / program),
               *CHECKS[program][0])
    for metric, (gap, bound) in CHECKS[program][1].items():
        assert bound(ref[metric]) and bound(got[metric]), (ref, got)
        assert abs(got[metric] - ref[metric]) < gap, (metric, ref, got)


def test_importing_xad_leaves_torch_alone():
    code = "import sys, xad, xad.as_torch; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert out.stdout.strip() == "False", out.stderr


def test_install_gives_xad_modules_to_user_code():
    as_torch.install()
    try:
        ns: dict = {}
        exec("import torch, torch.nn as nn\nimport torch.nn.functional as F\n"
             "from torch.optim.lr_scheduler import StepLR\n"
             "from torch.utils.data import DataLoader, TensorDataset, random_split\n"
             "x = torch.tensor([[1, 2], [3, 4]], dtype=torch.long)\n", ns)
        torch = ns["torch"]
        assert type(ns["x"]).__module__ == "xad.tensor" and ns["x"].dtype == torch.long
        assert ns["nn"].Linear.__module__.startswith("xad.") and ns["F"].cross_entropy
        assert ns["StepLR"].__module__ == "xad.optim.lr_scheduler"
        with pytest.raises(AttributeError, match="PORTING.md"):
            torch.fft_not_there  # noqa: B018
        with pytest.raises(NotImplementedError, match="--backend cupy"):
            torch.zeros(2, device="cuda")
    finally:
        as_torch.uninstall()
    assert "torch" not in sys.modules or sys.modules["torch"].__name__ == "torch"


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_pytorch_meanings_under_as_torch(backend):
    """split, sort, nonzero, equal, meshgrid, torch.Tensor, one_hot, integer sums, DataLoader
    dtypes, to(), format specs, amp without a GPU: the same answers as PyTorch's."""
    program = str(PROGRAMS / "meanings.py")
    ref = _pytorch_json(program)
    got = _run("-m", "xad.as_torch", "--backend", backend, program)
    assert json.loads(json.dumps(got).replace('"xad.', '"torch.')) == ref


@functools.cache
def _pytorch_json(program: str) -> dict:
    pytest.importorskip("torch")
    return _run(program)


def test_recurrent_layers_new_optimisers_and_torch_linalg_under_as_torch():
    """torch.nn.LSTM, torch.nn.utils.rnn, the optimisers added beside the first five, and
    torch.linalg.vector_norm with PyTorch's gradient at 0 (0, where the standard's gives NaN)."""
    as_torch.install()
    try:
        ns: dict = {}
        exec("import torch\nfrom torch.nn.utils.rnn import pad_sequence\n"
             "seqs = [torch.ones(3, 2), torch.ones(1, 2)]\n"
             "padded = pad_sequence(seqs, batch_first=True)\n"
             "lstm = torch.nn.LSTM(2, 4, batch_first=True)\n"
             "out, (h, c) = lstm(padded)\n"
             "opt = torch.optim.NAdam(lstm.parameters(), lr=1e-3)\n"
             "x = torch.zeros(3, requires_grad=True)\n"
             "torch.linalg.vector_norm(x).backward()\n", ns)
        assert tuple(ns["padded"].shape) == (2, 3, 2) and tuple(ns["out"].shape) == (2, 3, 4)
        assert type(ns["lstm"]).__module__.startswith("xad.nn")
        assert type(ns["opt"]).__module__.startswith("xad.optim")
        assert ns["x"].grad.tolist() == [0.0, 0.0, 0.0]
    finally:
        as_torch.uninstall()
