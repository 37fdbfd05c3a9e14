"""Recurrent workload ``lstm``: one training step of a 2-layer ``nn.LSTM`` and a linear
head, in xad and torch (CPU; no hand-written NumPy version).

Input ``(T=64, B=32, 64)``, hidden 128, loss ``mean((head(out) - y)**2)``, SGD (lr 0.1).
Both start from the same float32 weights (torch's initialisation, loaded into xad by
``load_state_dict`` from arrays) and see the same data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from bench_harness import TrainStep, Workload

__all__ = ["WORKLOADS"]

LR = 0.1


@dataclass
class LSTMSpec:
    seq: int
    batch: int
    inputs: int
    hidden: int
    layers: int

    def torch_model(self) -> Any:
        import torch
        torch.manual_seed(0)
        return torch.nn.ModuleDict({"lstm": torch.nn.LSTM(self.inputs, self.hidden,
                                                          self.layers),
                                    "head": torch.nn.Linear(self.hidden, 1)})

    def data(self) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(0)
        return (rng.standard_normal((self.seq, self.batch, self.inputs)).astype(np.float32),
                rng.standard_normal((self.seq, self.batch, 1)).astype(np.float32))


def spec(size: str) -> LSTMSpec:
    if size == "tiny":
        return LSTMSpec(seq=5, batch=2, inputs=3, hidden=4, layers=2)
    return LSTMSpec(seq=64, batch=32, inputs=64, hidden=128, layers=2)


def xad_lstm(s: LSTMSpec) -> TrainStep:
    """``xad.nn.LSTM`` + ``Linear`` + ``xad.optim.SGD`` on the numpy backend."""
    import xad
    xad.set_backend("numpy")
    lstm, head = xad.nn.LSTM(s.inputs, s.hidden, s.layers), xad.nn.Linear(s.hidden, 1)
    state = s.torch_model().state_dict()
    for name, m in (("lstm", lstm), ("head", head)):
        m.load_state_dict({k[len(name) + 1:]: xad.tensor(v.detach().numpy())
                           for k, v in state.items() if k.startswith(name + ".")})
    params = [(f"lstm.{n}", p) for n, p in lstm.named_parameters()] + \
             [(f"head.{n}", p) for n, p in head.named_parameters()]
    x, y = (xad.tensor(a) for a in s.data())

    def loss() -> Any:
        d = head(lstm(x)[0]) - y
        return (d * d).mean()
    return TrainStep(loss, xad.optim.SGD([p for _, p in params], lr=LR), params)


def torch_lstm(s: LSTMSpec) -> TrainStep:
    """``torch.nn.LSTM`` + ``Linear`` + ``torch.optim.SGD`` (eager, CPU)."""
    import torch
    model = s.torch_model()
    x, y = (torch.from_numpy(a) for a in s.data())
    return TrainStep(lambda: ((model["head"](model["lstm"](x)[0]) - y) ** 2).mean(),
                     torch.optim.SGD(model.parameters(), lr=LR),
                     list(model.named_parameters()))


_IMPLS = {"xad": xad_lstm, "torch": torch_lstm}

WORKLOADS = [
    Workload("lstm", "LSTM: 2 layers, hidden 128, input 64, sequence 64 x batch 32, linear "
             "head, MSE: one SGD step", "ms/step",
             lambda impl, size: _IMPLS[impl](spec(size)), scale=lambda s: 1e3,
             impls=("xad", "torch"), target="<= 1.5x torch", rtol=1e-3),
]
