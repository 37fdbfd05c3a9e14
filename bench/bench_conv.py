"""Convolutional workloads: one training step (forward, cross-entropy, backward, Adam) of
the digits CNN (``examples/cnn_digits.py``'s network without its dropout, batch 256 of
1x8x8) and of a LeNet-sized CNN (batch 64 of 1x28x28), in xad and PyTorch eager (CPU).

Both start from the same float32 weights (PyTorch's initialisation, copied into xad through
``load_state_dict``) and the same batch; the check compares the loss and every gradient,
and each Adam step against its closed form."""

from __future__ import annotations

from typing import Any

import numpy as np
from bench_harness import Workload, adam_first_step_error, to_np

__all__ = ["WORKLOADS", "layers"]

LR = 1e-3
# name -> (input shape without the batch, full batch, layer list)
MODELS: dict[str, tuple[tuple[int, ...], int, list[tuple]]] = {
    "digits": ((1, 8, 8), 256, [
        ("Conv2d", 1, 16, 3, 1, False), ("BatchNorm2d", 16), ("ReLU",), ("MaxPool2d", 2),
        ("Conv2d", 16, 32, 3, 1, False), ("BatchNorm2d", 32), ("ReLU",), ("MaxPool2d", 2),
        ("Flatten",), ("Linear", 128, 10)]),
    "lenet": ((1, 28, 28), 64, [
        ("Conv2d", 1, 6, 5, 0, True), ("ReLU",), ("MaxPool2d", 2),
        ("Conv2d", 6, 16, 5, 0, True), ("ReLU",), ("MaxPool2d", 2), ("Flatten",),
        ("Linear", 256, 120), ("ReLU",), ("Linear", 120, 84), ("ReLU",), ("Linear", 84, 10)]),
}


def layers(nn: Any, spec: list[tuple]) -> list[Any]:
    """The layer list built with ``nn`` (``xad.nn`` or ``torch.nn``: the same names); a
    convolution before a BatchNorm has no bias (its gradient would be zero up to rounding)."""
    out = []
    for name, *args in spec:
        if name == "Conv2d":
            out.append(nn.Conv2d(*args[:3], padding=args[3], bias=args[4]))
        else:
            out.append(getattr(nn, name)(*args))
    return out


def _data(name: str, size: str) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    import torch
    shape, batch, spec = MODELS[name]
    n = 8 if size == "tiny" else batch
    rng = np.random.default_rng(0)
    x = rng.random((n, *shape), dtype=np.float32)
    y = rng.integers(0, 10, n)
    torch.manual_seed(0)
    state = torch.nn.Sequential(*layers(torch.nn, spec)).state_dict()
    return x, y, {k: v.numpy().copy() for k, v in state.items()}


class _Runner:
    """What both implementations share: the step and the check."""

    model: Any
    opt: Any
    params: list[Any]

    def loss(self) -> Any:
        raise NotImplementedError

    def step(self) -> None:
        self.opt.zero_grad()
        self.loss().backward()
        self.opt.step()

    def check(self) -> dict:
        self.opt.zero_grad()
        loss = self.loss()
        loss.backward()
        grads = [to_np(p.grad) for p in self.params]
        before = [to_np(p).copy() for p in self.params]
        self.opt.step()
        out: dict[str, Any] = {"loss": to_np(loss.detach())}
        out.update({f"grad/{i}": g for i, g in enumerate(grads)})
        out["self/adam"] = max(adam_first_step_error(b, to_np(p), g, LR)
                               for b, p, g in zip(before, self.params, grads))
        return out


class XadCNN(_Runner):
    def __init__(self, name: str, size: str) -> None:
        import xad
        xad.set_backend("numpy")
        x, y, state = _data(name, size)
        self.model = xad.nn.Sequential(*layers(xad.nn, MODELS[name][2]))
        self.model.load_state_dict({k: xad.tensor(v) for k, v in state.items()})
        self.params = list(self.model.parameters())
        self.opt = xad.optim.Adam(self.params, lr=LR)
        self.loss_fn = xad.nn.CrossEntropyLoss()
        self.x, self.y = xad.tensor(x), xad.tensor(y)

    def loss(self) -> Any:
        return self.loss_fn(self.model(self.x), self.y)


class TorchCNN(_Runner):
    def __init__(self, name: str, size: str) -> None:
        import torch
        x, y, state = _data(name, size)
        self.model = torch.nn.Sequential(*layers(torch.nn, MODELS[name][2]))
        self.model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
        self.params = list(self.model.parameters())
        self.opt = torch.optim.Adam(self.params, lr=LR)
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.x, self.y = torch.from_numpy(x), torch.from_numpy(y)

    def loss(self) -> Any:
        return self.loss_fn(self.model(self.x), self.y)


def _build(name: str) -> Any:
    def build(impl: str, size: str) -> Any:
        return {"xad": XadCNN, "torch": TorchCNN}[impl](name, size)
    return build


WORKLOADS = [
    Workload("conv-digits", "digits CNN (2x Conv3x3+BatchNorm2d+ReLU+MaxPool, Linear), batch "
             "256 of 1x8x8: one Adam step", "ms/step", _build("digits"), scale=lambda s: 1e3,
             impls=("xad", "torch"), target="<= 1.5x torch"),
    Workload("conv-lenet", "LeNet-5 sized CNN (Conv5x5 6/16, MaxPool, 3 Linear), batch 64 of "
             "1x28x28: one Adam step", "ms/step", _build("lenet"), scale=lambda s: 1e3,
             impls=("xad", "torch"), target="<= 1.5x torch"),
]
