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
from bench_harness import Workload, to_np

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


def _grads(named: list) -> dict[str, Any]:
    return {f"grad/{n}": to_np(g) for n, g in named}


class XadLSTM:
    """``xad.nn.LSTM`` + ``Linear`` + ``xad.optim.SGD`` on the numpy backend."""

    def __init__(self, s: LSTMSpec) -> None:
        import xad
        xad.set_backend("numpy")
        self.lstm, self.head = xad.nn.LSTM(s.inputs, s.hidden, s.layers), xad.nn.Linear(s.hidden,
                                                                                       1)
        state = s.torch_model().state_dict()
        for name, m in (("lstm", self.lstm), ("head", self.head)):
            m.load_state_dict({k[len(name) + 1:]: xad.tensor(v.detach().numpy())
                               for k, v in state.items() if k.startswith(name + ".")})
        self.params = [(f"lstm.{n}", p) for n, p in self.lstm.named_parameters()] + \
                      [(f"head.{n}", p) for n, p in self.head.named_parameters()]
        self.opt = xad.optim.SGD([p for _, p in self.params], lr=LR)
        self.x, self.y = (xad.tensor(a) for a in s.data())

    def _loss(self) -> Any:
        d = self.head(self.lstm(self.x)[0]) - self.y
        return (d * d).mean()

    def step(self) -> None:
        self.opt.zero_grad()
        self._loss().backward()
        self.opt.step()

    def check(self) -> dict:
        self.opt.zero_grad()
        loss = self._loss()
        loss.backward()
        return {"loss": loss.item(), **_grads([(n, p.grad.numpy()) for n, p in self.params])}


class TorchLSTM:
    """``torch.nn.LSTM`` + ``Linear`` + ``torch.optim.SGD`` (eager, CPU)."""

    def __init__(self, s: LSTMSpec) -> None:
        import torch
        self.model = s.torch_model()
        self.params = list(self.model.named_parameters())
        self.opt = torch.optim.SGD(self.model.parameters(), lr=LR)
        self.x, self.y = (torch.from_numpy(a) for a in s.data())

    def _loss(self) -> Any:
        return ((self.model["head"](self.model["lstm"](self.x)[0]) - self.y) ** 2).mean()

    def step(self) -> None:
        self.opt.zero_grad()
        self._loss().backward()
        self.opt.step()

    def check(self) -> dict:
        self.opt.zero_grad()
        loss = self._loss()
        loss.backward()
        return {"loss": loss.item(),
                **_grads([(n, p.grad.detach().numpy()) for n, p in self.params])}


_IMPLS = {"xad": XadLSTM, "torch": TorchLSTM}

WORKLOADS = [
    Workload("lstm", "LSTM: 2 layers, hidden 128, input 64, sequence 64 x batch 32, linear "
             "head, MSE: one SGD step", "ms/step",
             lambda impl, size: _IMPLS[impl](spec(size)), scale=lambda s: 1e3,
             impls=("xad", "torch"), target="<= 1.5x torch", rtol=1e-3),
]
