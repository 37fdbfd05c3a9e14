"""An ``nn.Module`` classifier with DataLoader, momentum SGD, StepLR and argmax accuracy,
written as PyTorch users write it (run it with PyTorch, or on xad with
``python -m xad.as_torch classifier.py``)."""

import json
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 8
t0 = time.perf_counter()
torch.manual_seed(0)
g = torch.Generator().manual_seed(1234)


def spirals(n_per_class, n_classes=3):
    """Three interleaved spirals in the plane (the CS231n toy set)."""
    xs, ys = [], []
    for c in range(n_classes):
        r = torch.linspace(0.0, 1.0, n_per_class)
        theta = torch.linspace(c * 4.0, (c + 1) * 4.0, n_per_class)
        theta = theta + torch.randn(n_per_class, generator=g) * 0.2
        xs.append(torch.stack([r * torch.sin(theta), r * torch.cos(theta)], dim=1))
        ys.append(torch.full((n_per_class,), c, dtype=torch.long))
    return torch.cat(xs, dim=0), torch.cat(ys, dim=0)


class MLP(nn.Module):
    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        self.fc1 = nn.Linear(n_in, n_hidden)
        self.fc2 = nn.Linear(n_hidden, n_hidden)
        self.out = nn.Linear(n_hidden, n_out)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.out(x)


X, Y = spirals(200)
perm = torch.randperm(X.size(0), generator=g)
X, Y = X[perm], Y[perm]
n_train = int(0.8 * X.size(0))
train = TensorDataset(X[:n_train], Y[:n_train])
test_x, test_y = X[n_train:], Y[n_train:]
loader = DataLoader(train, batch_size=32, shuffle=True, generator=g)

model = MLP(2, 64, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
sched = StepLR(opt, step_size=max(1, epochs // 2), gamma=0.3)
for _epoch in range(epochs):
    model.train()
    total, count = 0.0, 0
    for xb, yb in loader:
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        total += loss.item() * xb.size(0)
        count += xb.size(0)
    sched.step()

model.eval()
with torch.no_grad():
    logits = model(test_x)
    test_loss = F.cross_entropy(logits, test_y).item()
    _, pred = logits.max(dim=1)
    acc = (pred == test_y).float().mean().item()
    assert pred.eq(logits.argmax(dim=1)).all().item()

print(json.dumps({"program": "classifier", "train_loss": total / count, "test_loss": test_loss,
                  "test_accuracy": acc, "lr": opt.param_groups[0]["lr"],
                  "finite": math.isfinite(test_loss), "seconds": time.perf_counter() - t0}))
