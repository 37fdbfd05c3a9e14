"""PyTorch's meanings of names the Array API standard gives others (split, sort, nonzero,
equal, meshgrid, torch.Tensor, one_hot, integer sums, DataLoader dtypes, to(), format specs,
autocast/GradScaler without a GPU), written as PyTorch users write them; run with PyTorch or
``python -m xad.as_torch meanings.py``: the JSON line printed must be the same."""

import json
import warnings

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

warnings.simplefilter("ignore")
x = torch.arange(10).reshape(5, 2)
values, indices = torch.sort(torch.tensor([3.0, 1.0, 2.0]), descending=True)
gx, gy = torch.meshgrid(torch.arange(2), torch.arange(3))


class Pairs(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.ones(2) * i, i * 0.5


_, yb = next(iter(DataLoader(Pairs(), batch_size=4)))
loss = torch.tensor(2.0) / 3
scaler = torch.amp.GradScaler("cuda" if torch.cuda.is_available() else "cpu")
with torch.autocast("cpu", dtype=torch.float16):
    low = torch.ones(2, 3) @ torch.ones(3, 1)
out = {
    "split": [t.tolist() for t in torch.split(x, 2)],
    "split_sizes": [t.shape[0] for t in x.split([1, 4])],
    "sort": [values.tolist(), indices.tolist()],
    "nonzero": torch.nonzero(torch.tensor([[0, 1], [2, 0]])).tolist(),
    "equal": [torch.equal(x, x), x.equal(x + 1)],
    "meshgrid": [list(gx.shape), gx.tolist()],
    "Tensor": [list(torch.Tensor(5).shape), str(torch.Tensor([1, 2]).dtype)],
    "one_hot": [str(F.one_hot(torch.tensor([0, 2])).dtype),
                F.one_hot(torch.tensor([1]), 3).tolist()],
    "uint8_sum": [torch.tensor([200, 100], dtype=torch.uint8).sum().item(),
                  str(torch.tensor([200, 100], dtype=torch.uint8).sum().dtype)],
    "loader": [str(yb.dtype), yb.tolist()],
    "to": [str(x.to(torch.zeros(1, dtype=torch.float64)).dtype),
           str(x.to("cpu", torch.float32).dtype), str(x.to(dtype=torch.float16).dtype),
           str(x.to(device="cpu").dtype)],
    "format": [f"{loss:.4f}", "%.3f" % loss, f"{loss.item():.2f}"],  # noqa: UP031
    "amp": [scaler.is_enabled(), str(low.dtype)],
}
print(json.dumps(out))
