"""Transformer workload ``attention``: one training step of a ``TransformerEncoder``, in xad
and torch (no hand-written NumPy version).

4 post-norm layers (PyTorch's defaults but for ``dim_feedforward=512``, 4 x d_model, and
``dropout=0`` so both runs compute the same thing), d_model 128, 4 heads, ``batch_first``,
input ``(32, 64, 128)``; loss ``mean((encoder(x) - y)**2)``; Adam (lr 1e-3). Both start
from the same float32 weights (torch's initialisation, loaded into xad by ``load_state_dict``
from arrays) and see the same data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from bench_harness import Workload, adam_first_step_error, to_np

__all__ = ["WORKLOADS"]

LR = 1e-3


@dataclass
class EncoderSpec:
    layers: int
    d_model: int
    heads: int
    d_ff: int
    batch: int
    seq: int

    def torch_model(self) -> Any:
        import torch
        torch.manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(self.d_model, self.heads, self.d_ff,
                                                 dropout=0.0, batch_first=True)
        return torch.nn.TransformerEncoder(layer, self.layers, enable_nested_tensor=False)

    def data(self) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(0)
        shape = (self.batch, self.seq, self.d_model)
        return (rng.standard_normal(shape).astype(np.float32),
                rng.standard_normal(shape).astype(np.float32))


def spec(size: str) -> EncoderSpec:
    if size == "tiny":
        return EncoderSpec(layers=1, d_model=16, heads=2, d_ff=32, batch=2, seq=4)
    return EncoderSpec(layers=4, d_model=128, heads=4, d_ff=512, batch=32, seq=64)


def _check(loss: Any, named_grads: list, before: list, after: list) -> dict[str, Any]:
    out: dict[str, Any] = {"loss": to_np(loss)}
    for name, g in named_grads:
        out[f"grad/{name}"] = to_np(g)
    out["self/adam"] = max(adam_first_step_error(b, a, to_np(g), LR)
                           for b, a, (_, g) in zip(before, after, named_grads))
    return out


class XadEncoder:
    """``xad.nn.TransformerEncoder`` + ``xad.optim.Adam`` on the numpy backend."""

    def __init__(self, s: EncoderSpec) -> None:
        import xad
        from xad import nn
        xad.set_backend("numpy")
        layer = nn.TransformerEncoderLayer(s.d_model, s.heads, s.d_ff, dropout=0.0,
                                           batch_first=True)
        self.model = nn.TransformerEncoder(layer, s.layers)
        self.model.load_state_dict({k: xad.tensor(v.detach().numpy())
                                    for k, v in s.torch_model().state_dict().items()})
        self.params = list(self.model.named_parameters())
        self.opt = xad.optim.Adam(self.model.parameters(), lr=LR)
        self.x, self.y = (xad.tensor(a) for a in s.data())

    def _loss(self) -> Any:
        d = self.model(self.x) - self.y
        return (d * d).mean()

    def step(self) -> None:
        self.opt.zero_grad()
        self._loss().backward()
        self.opt.step()

    def check(self) -> dict:
        self.opt.zero_grad()
        loss = self._loss()
        loss.backward()
        grads = [(n, p.grad.numpy().copy()) for n, p in self.params]
        before = [p.numpy().copy() for _, p in self.params]
        self.opt.step()
        return _check(loss.item(), grads, before, [p.numpy().copy() for _, p in self.params])


class TorchEncoder:
    """``torch.nn.TransformerEncoder`` + ``torch.optim.Adam`` (eager, CPU)."""

    def __init__(self, s: EncoderSpec) -> None:
        import torch
        self.torch = torch
        self.model = s.torch_model()
        self.params = list(self.model.named_parameters())
        self.opt = torch.optim.Adam(self.model.parameters(), lr=LR)
        self.x, self.y = (torch.from_numpy(a) for a in s.data())

    def _loss(self) -> Any:
        return ((self.model(self.x) - self.y) ** 2).mean()

    def step(self) -> None:
        self.opt.zero_grad()
        self._loss().backward()
        self.opt.step()

    def check(self) -> dict:
        self.opt.zero_grad()
        loss = self._loss()
        loss.backward()
        grads = [(n, p.grad.detach().numpy().copy()) for n, p in self.params]
        before = [p.detach().numpy().copy() for _, p in self.params]
        self.opt.step()
        after = [p.detach().numpy().copy() for _, p in self.params]
        return _check(loss.item(), grads, before, after)


_IMPLS = {"xad": XadEncoder, "torch": TorchEncoder}

WORKLOADS = [
    Workload("attention", "TransformerEncoder: 4 layers, d_model 128, 4 heads, d_ff 512, "
             "batch 32 x sequence 64, MSE: one Adam step", "ms/step",
             lambda impl, size: _IMPLS[impl](spec(size)), scale=lambda s: 1e3,
             impls=("xad", "torch"), target="<= 1.2x torch", rtol=1e-3),
]
