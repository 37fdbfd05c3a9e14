"""Real programs as the test: PyTorch's own examples (examples/pytorch/, vendored unchanged)
and a lecture-style character GPT run with real PyTorch and through ``python -m
xad.as_torch``, and must agree within the noise of their random seeds; then the pieces of
the PyTorch subset that those programs were missing, each checked on its own.

Whole programs run once (not per backend): they run xad on its default backend, NumPy. The
two libraries draw different random numbers for the same seed (initial weights, batches,
dropout), so the runs cannot agree bit for bit; each tolerance below is the spread measured
over several seeds of each library (in the comments), widened a little, plus a bound that
shows learning. A wrong gradient or optimiser step moves a result far outside it.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import xad
from xad import as_torch

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "pytorch" /
                       "local"))
import programs  # noqa: E402

sys.path.pop(0)
PROGRAMS = {p.name: p for p in programs.programs()}


def _both(name: str, tmp_path: Path) -> tuple[dict[str, float], dict[str, float]]:
    """Run a program with PyTorch and with xad side by side; their printed results."""
    prog = PROGRAMS[name]
    with ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(programs.run, prog, use_xad, tmp_path / str(use_xad))
                for use_xad in (False, True)]
        (out_t, _), (out_x, _) = (r.result() for r in runs)
    return programs.metrics(name, out_t), programs.metrics(name, out_x)


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None,
                    reason="the MNIST stand-in is made from scikit-learn's digits")
def test_mnist(tmp_path):
    # 20 Adadelta steps (lr 1, batches of 32) on 640 digits, 200 held out; seeds 1-4 gave
    # test accuracy 76-90% with PyTorch and 76-87% with xad (losses 0.50-0.93, 0.50-0.80)
    t, x = _both("mnist", tmp_path)
    assert min(t["accuracy"], x["accuracy"]) >= 0.65, (t, x)
    assert abs(t["accuracy"] - x["accuracy"]) <= 0.2, (t, x)
    assert max(t["test_loss"], x["test_loss"]) < 1.3, (t, x)


def test_regression(tmp_path):
    # unseeded, runs until a batch's loss < 1e-3: 400-900 batches, coefficients within 0.06
    t, x = _both("regression", tmp_path)
    for r in (t, x):
        assert r["loss"] < 1e-3 and r["coef_error"] <= 0.2 and r["batches"] < 5000, (t, x)


def test_time_sequence_prediction(tmp_path):
    # one LBFGS step (20 evaluations) of the two-LSTMCell model on 9 sine waves of 120
    # points; eight seeds of the model's initial weights give a training loss of
    # 0.0019-0.019 with PyTorch and 0.0021-0.012 with xad (from 0.5 before the step)
    t, x = _both("time_sequence_prediction", tmp_path)
    for r in (t, x):
        assert 1e-3 < r["train_loss"] < 3e-2 and r["test_loss"] < 3e-2, (t, x)


@pytest.mark.parametrize("model", ["LSTM", "GRU"])
def test_word_language_model(tmp_path, model):
    # one epoch (2-layer, 32 units, lr 5), then torch.save(model) / torch.load of the whole
    # model and the test set; seeds 1-3 give test losses 3.47-3.49 on both libraries
    # (ln of the 47-word vocabulary is 3.85)
    t, x = _both(f"word_language_model ({model})", tmp_path)
    assert abs(t["test_loss"] - x["test_loss"]) <= 0.1, (t, x)
    assert max(t["test_loss"], x["test_loss"]) < 3.7, (t, x)


def test_char_gpt(tmp_path):
    # 100 AdamW steps of a 2-block, 4-head character GPT: validation loss from 3.30 (ln 26)
    # to 1.43-1.51 on both libraries over seeds 1, 2 and 1337
    t, x = _both("char_gpt", tmp_path)
    assert abs(t["val_loss"] - x["val_loss"]) <= 0.15, (t, x)
    assert max(t["val_loss"], x["val_loss"]) < 1.8, (t, x)


# ----- the pieces of the subset that the programs were missing ---------------------------
@pytest.fixture
def T():
    """xad's ``torch`` namespace, as a script under as_torch sees it."""
    return as_torch.namespace()["torch"]


def test_script_folder_comes_first_on_the_path(tmp_path):
    """`python -m xad.as_torch dir/main.py` imports dir's modules (`import data`), as
    `python dir/main.py` does, from any working directory."""
    (tmp_path / "prog").mkdir()
    (tmp_path / "prog" / "helper.py").write_text("VALUE = 42\n")
    (tmp_path / "prog" / "main.py").write_text("import torch, helper\nprint(helper.VALUE)\n")
    out = subprocess.run([sys.executable, "-m", "xad.as_torch", "prog/main.py"],
                         cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "42"


def test_narrow_type_new_and_mm(T, xb):
    a = torch.arange(12.0, dtype=torch.float64).reshape(3, 4)
    x = xad.tensor(a.numpy())
    assert x.narrow(1, 1, 2).tolist() == a.narrow(1, 1, 2).tolist()
    assert x.narrow(0, -2, 2).tolist() == a.narrow(0, -2, 2).tolist()
    v = x.narrow(1, 1, 2)
    v.zero_()  # a view, as PyTorch's
    a.narrow(1, 1, 2).zero_()
    assert x.tolist() == a.tolist()
    with pytest.raises(IndexError, match="narrow"):
        x.narrow(1, 3, 2)
    i = xad.tensor([1, 2])
    assert i.type() == torch.tensor([1, 2]).type() == "torch.LongTensor"
    assert x.type() == "torch.DoubleTensor" and i.type(T.float32).dtype == xad.float32
    assert i.type(T.int64) is i
    z = x.new_zeros(2, 5)
    assert z.shape == (2, 5) and z.dtype == xad.float64 and z.backend.name == xb.name
    assert x.new_ones((1,)).tolist() == [1.0] and x.new_full((2,), 3).tolist() == [3.0, 3.0]
    assert x.new_zeros(2, dtype=T.long).dtype == xad.int64
    assert x.new_tensor([1, 2]).dtype == xad.float64
    w = xad.tensor([[1.0, 2.0]])
    assert w.mm(w.t()).tolist() == [[5.0]] and T.mm(w, w.t()).tolist() == [[5.0]]
    with pytest.raises(ValueError, match="mm: both operands must be 2-D"):
        w.mm(xad.ones(2))


class _Tied(xad.nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = xad.nn.Embedding(5, 3)
        self.dec = xad.nn.Linear(3, 5)
        self.dec.weight = self.enc.weight  # tied, as word_language_model --tied
        self.name = "tied"


def test_torch_save_and_load_of_a_whole_module(T, tmp_path):
    m = _Tied()
    with open(tmp_path / "m.pt", "wb") as f:
        T.save(m, f)
    with pytest.raises(xad.CheckpointError, match="_Tied module, whose class is not allowed"):
        T.load(tmp_path / "m.pt")
    nn = T.nn.modules
    with T.serialization.safe_globals([_Tied, nn.sparse.Embedding, nn.linear.Linear]):
        with open(tmp_path / "m.pt", "rb") as f:
            back = T.load(f)
    assert type(back) is _Tied and back.name == "tied" and back.training
    assert back.dec.weight is back.enc.weight  # still tied
    assert isinstance(back.enc.weight, xad.nn.Parameter) and back.enc.weight.requires_grad
    assert back.enc.weight.tolist() == m.enc.weight.tolist()
    assert [n for n, _ in back.named_parameters()] == [n for n, _ in m.named_parameters()]
    i = xad.tensor([1, 3])
    assert back.dec(back.enc(i)).tolist() == m.dec(m.enc(i)).tolist()
    # weights_only=False: any Module class the program has imported (nothing is imported)
    assert type(T.load(tmp_path / "m.pt", weights_only=False)) is _Tied
    assert T.serialization.get_safe_globals() == []
    sd = {"w": xad.ones(2)}
    T.save(sd, tmp_path / "sd.pt")  # a state dict stays a plain xad checkpoint
    assert xad.load(tmp_path / "sd.pt")["w"].tolist() == [1.0, 1.0]


def test_namespaces_the_examples_import(T):
    mods = as_torch.namespace()
    assert mods["torch.nn.modules.rnn"].LSTM is xad.nn.LSTM
    assert T.nn.modules.dropout.Dropout is xad.nn.Dropout
    assert T.accelerator.is_available() is False and T.device("cpu") == "cpu"
    with pytest.raises(NotImplementedError, match="torch.onnx.export"):
        mods["torch.onnx"].export(None, None, "m.onnx")
