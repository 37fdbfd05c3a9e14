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
from bench_harness import TrainStep, Workload

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


def small_spec(size: str) -> EncoderSpec:
    """``attention-small``: the same 4-layer encoder at sizes where host time is the step
    (an eager GPU step's proxy on the CPU: each kernel costs little, each operation's
    Python the same)."""
    if size == "tiny":
        return spec(size)
    return EncoderSpec(layers=4, d_model=16, heads=4, d_ff=32, batch=2, seq=4)


def xad_encoder(s: EncoderSpec) -> TrainStep:
    """``xad.nn.TransformerEncoder`` + ``xad.optim.Adam`` on the numpy backend."""
    import xad
    from xad import nn
    xad.set_backend("numpy")
    layer = nn.TransformerEncoderLayer(s.d_model, s.heads, s.d_ff, dropout=0.0,
                                       batch_first=True)
    model = nn.TransformerEncoder(layer, s.layers)
    model.load_state_dict({k: xad.tensor(v.detach().numpy())
                           for k, v in s.torch_model().state_dict().items()})
    x, y = (xad.tensor(a) for a in s.data())

    def loss() -> Any:
        d = model(x) - y
        return (d * d).mean()
    return TrainStep(loss, xad.optim.Adam(model.parameters(), lr=LR),
                     list(model.named_parameters()), adam_lr=LR)


def torch_encoder(s: EncoderSpec) -> TrainStep:
    """``torch.nn.TransformerEncoder`` + ``torch.optim.Adam`` (eager, CPU)."""
    import torch
    model = s.torch_model()
    x, y = (torch.from_numpy(a) for a in s.data())
    return TrainStep(lambda: ((model(x) - y) ** 2).mean(),
                     torch.optim.Adam(model.parameters(), lr=LR),
                     list(model.named_parameters()), adam_lr=LR)


_IMPLS = {"xad": xad_encoder, "torch": torch_encoder}

WORKLOADS = [
    Workload("attention", "TransformerEncoder: 4 layers, d_model 128, 4 heads, d_ff 512, "
             "batch 32 x sequence 64, MSE: one Adam step", "ms/step",
             lambda impl, size: _IMPLS[impl](spec(size)), scale=lambda s: 1e3,
             impls=("xad", "torch"), target="<= 1.2x torch", rtol=1e-3),
    Workload("attention-small", "the attention encoder at d_model 16, 4 heads, d_ff 32, "
             "batch 2 x sequence 4 (host-bound: an eager GPU step's proxy): one Adam step",
             "us/step", lambda impl, size: _IMPLS[impl](small_spec(size)),
             scale=lambda s: 1e6, impls=("xad", "torch"), target="<= 1.0x torch", rtol=1e-3),
]
