"""The scripts a lent GPU machine runs (ci/gpu.sh) rehearsed on the CuPy emulator, so that
they do not rot between the rare sessions with a GPU: each check passes on ``cupy-sim``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("script", ["graph_step_gpu.py", "graph_variants_gpu.py", "nccl_gpu.py"])
def test_gpu_script_passes_its_rehearsal(script):
    if script == "nccl_gpu.py":  # xad.distributed bootstraps NCCL over MPI
        pytest.importorskip("mpi4py", reason="the mpi extra is not installed: "
                                             "pip install 'xad[mpi]'")
    run = subprocess.run([sys.executable, os.path.join(_ROOT, "ci", script), "--sim"],
                         capture_output=True, text=True, timeout=300, cwd=_ROOT)
    checks = [line for line in run.stdout.splitlines() if line[:4] in ("ok  ", "FAIL")]
    assert run.returncode == 0 and checks and all(c.startswith("ok") for c in checks), \
        run.stdout[-3000:] + run.stderr[-3000:]
