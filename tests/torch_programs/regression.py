"""A regression with a custom ``Dataset``, ``random_split``, ``nn.Sequential``, Adam, a cosine
schedule and gradient clipping, written as PyTorch users write it (run it with PyTorch, or
on xad with ``python -m xad.as_torch regression.py``)."""

import json
import math
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, random_split

epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
t0 = time.perf_counter()
g = torch.Generator().manual_seed(7)


class Waves(Dataset):
    """y = sin(3 x0) * cos(2 x1) + noise, one sample at a time (a Python float target)."""

    def __init__(self, n):
        self.x = torch.rand(n, 2, generator=g) * 2 - 1
        clean = torch.sin(3 * self.x[:, 0]) * torch.cos(2 * self.x[:, 1])
        self.y = (clean + 0.05 * torch.randn(n, generator=g)).tolist()

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


train_set, val_set = random_split(Waves(400), [0.75, 0.25], generator=g)
loader = DataLoader(train_set, batch_size=50, shuffle=True, generator=g)
val_x = torch.stack([val_set[i][0] for i in range(len(val_set))])
val_y = torch.tensor([val_set[i][1] for i in range(len(val_set))])

model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                      nn.Linear(32, 1))
for m in model.modules():
    if isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight, generator=g)
        nn.init.zeros_(m.bias)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
loss_fn = nn.MSELoss()
for _epoch in range(epochs):
    for xb, yb in loader:
        opt.zero_grad()
        loss = loss_fn(model(xb).squeeze(-1), yb.float())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    sched.step()

with torch.no_grad():
    val_mse = loss_fn(model(val_x).squeeze(1), val_y).item()
print(json.dumps({"program": "regression", "val_mse": val_mse, "finite": math.isfinite(val_mse),
                  "variance": val_y.var().item(), "seconds": time.perf_counter() - t0}))
