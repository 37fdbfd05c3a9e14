"""Run PyTorch's examples (and the character GPT) with real PyTorch or through
``python -m xad.as_torch``, on local data, and read their results from what they print.

Used by tests/test_pytorch_examples.py (short runs) and bench/pytorch_examples.py (the longer
runs of docs/PORTING.md's table). Each program runs as a subprocess in a scratch folder,
unchanged; the data it would download is written there first (make_mnist.py,
small_sine_wave.py). Threads are pinned to one (OMP_NUM_THREADS=1) on both sides.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent


@dataclass
class Program:
    name: str
    script: str                          # relative to examples/pytorch
    args: list[str]
    prepare: list[list[str]] = field(default_factory=list)  # commands run by the same runner
    data: list[str] = field(default_factory=list)          # plain Python, run before


def _floats(pattern: str, out: str) -> list[float]:
    return [float(v) for v in re.findall(pattern, out)]


def metrics(name: str, out: str) -> dict[str, float]:
    """The numbers a program's output reports (see each program's print statements)."""
    if name == "mnist":
        loss, correct, total = re.findall(r"Average loss: ([\d.]+), Accuracy: (\d+)/(\d+)",
                                          out)[-1]
        return {"test_loss": float(loss), "accuracy": int(correct) / int(total)}
    if name == "regression":
        learned = _floats(r"([+-][\d.]+)", out.split("Learned function:")[1].split("\n")[0])
        actual = _floats(r"([+-][\d.]+)", out.split("Actual function:")[1].split("\n")[0])
        return {"loss": _floats(r"Loss: ([\d.]+)", out)[0],
                "batches": _floats(r"after (\d+) batches", out)[0],
                "coef_error": max(abs(a - b) for a, b in zip(learned, actual))}
    if name == "time_sequence_prediction":
        return {"train_loss": _floats(r"\nloss: ([\d.e-]+)", out)[-1],
                "test_loss": _floats(r"test loss: ([\d.e-]+)", out)[-1]}
    if name.startswith("word_language_model"):
        return {"valid_loss": _floats(r"valid loss\s+([\d.]+)", out)[-1],
                "test_loss": _floats(r"test loss\s+([\d.]+)", out)[-1]}
    if name == "char_gpt":
        return {"train_loss": _floats(r"train loss ([\d.]+)", out)[-1],
                "val_loss": _floats(r"val loss ([\d.]+)", out)[-1]}
    raise KeyError(name)


def programs(long: bool = False) -> list[Program]:
    """Each program with its arguments: short runs for the test, ``long`` for the table."""
    py = sys.executable
    mnist_n = ["1500", "297"] if long else ["640", "200"]
    # lr 5, not the default 20: at 20 one epoch of the tiny corpus ends anywhere between
    # losses 4.0 and 6.7 by seed (on both libraries), at 5 within 0.02
    wlm = ["--data", str(EXAMPLES / "word_language_model" / "data" / "tiny"), "--lr", "5",
           "--save", "model.pt"]
    wlm += ["--epochs", "4"] if long else ["--emsize", "32", "--nhid", "32", "--epochs", "1",
                                           "--bptt", "20"]
    return [
        Program("mnist", "mnist/main.py",
                ["--epochs", "3" if long else "1", "--batch-size", "32",
                 "--test-batch-size", "200", "--log-interval", "10"],
                data=[[py, str(HERE / "make_mnist.py"), "../data", *mnist_n]]),
        Program("regression", "regression/main.py", []),
        Program("time_sequence_prediction", "time_sequence_prediction/train.py",
                ["--steps", "3" if long else "1"],
                prepare=[[str(EXAMPLES / "time_sequence_prediction" /
                              "generate_sine_wave.py")] if long else
                         [str(HERE / "small_sine_wave.py")]]),
        Program("word_language_model (LSTM)", "word_language_model/main.py",
                ["--model", "LSTM", *wlm]),
        Program("word_language_model (GRU)", "word_language_model/main.py",
                ["--model", "GRU", *wlm]),
        Program("char_gpt", "char_gpt/train.py",
                ["--max-iters", "500" if long else "100",
                 "--eval-interval", "100" if long else "50", "--sample", "50"]),
    ]


def run(program: Program, xad: bool, workdir: Path, timeout: float = 900) -> tuple[str, float]:
    """Run ``program`` with real PyTorch (``xad=False``) or through ``python -m
    xad.as_torch``; return its output and the seconds the program itself took."""
    run_dir = workdir / "run"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
           # PyTorch >= 2.6 refuses the NumPy array that time_sequence_prediction saves
           # (the example pins torch < 2.6); this is PyTorch's own switch back
           "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}
    runner = [sys.executable, "-m", "xad.as_torch"] if xad else [sys.executable]
    for cmd in program.data:
        subprocess.run(cmd, cwd=run_dir, env=env, check=True, timeout=timeout)
    for cmd in program.prepare:
        subprocess.run(runner + cmd, cwd=run_dir, env=env, check=True, timeout=timeout,
                       capture_output=True)
    t0 = time.perf_counter()
    done = subprocess.run(runner + [str(EXAMPLES / program.script), *program.args],
                          cwd=run_dir, env=env, timeout=timeout, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode:
        raise RuntimeError(f"{program.name} ({'xad' if xad else 'torch'}) failed:\n"
                           f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return done.stdout, seconds
