"""A PyTorch training script's first lines (seeding, backend flags, version check, Size
checks, a custom _Loss, a jit.script'ed function); prints what it saw as JSON, so that
tests/test_torch_script_header.py runs it under PyTorch and under xad and compares."""

import json
import random
import warnings

import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn
from torch.nn.modules.loss import _Loss
from torch.optim.lr_scheduler import _LRScheduler
from torch.utils.data.distributed import DistributedSampler


def seed_everything(seed):
    random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    cudnn.deterministic = True
    cudnn.benchmark = False


class ScaledMSE(_Loss):
    def __init__(self, scale=2.0, reduction="mean"):
        super().__init__(reduction=reduction)
        self.scale = scale

    def forward(self, a, b):
        d = self.scale * (a - b) ** 2
        return d.mean() if self.reduction == "mean" else d.sum()


@torch.jit.script
def gelu_ish(x):
    return x * torch.sigmoid(1.702 * x)


seed_everything(0)
torch.backends.cuda.matmul.allow_tf32 = True
tf32 = torch.get_float32_matmul_precision()
torch.backends.cuda.matmul.allow_tf32 = False
assert torch.__version__ >= "1.10" and torch.__version__ >= (2, 0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
loss = ScaledMSE()(gelu_ish(x), torch.zeros(2, 3))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    torch.nn.init.constant(torch.empty(3), 0.5)
print(json.dumps({
    "size_is_size": isinstance(x.size(), torch.Size), "shape_eq": x.shape == torch.Size([2, 3]),
    "size_repr": repr(x.size()), "numel": torch.Size([2, 3, 4]).numel(),
    "cudnn": [cudnn.benchmark, cudnn.deterministic, cudnn.enabled, cudnn.is_available()],
    "tf32": tf32, "mps": torch.backends.mps.is_available(), "cuda_version": torch.version.cuda,
    "loss": round(float(loss.item()), 5), "device": str(device),
    "memory": torch.cuda.memory_allocated(), "bf16": torch.cuda.is_bf16_supported(),
    "warning": [c.category.__name__ for c in caught], "is_scripting": torch.jit.is_scripting(),
    "bases": [issubclass(DistributedSampler, torch.utils.data.Sampler),
              isinstance(_LRScheduler, type), issubclass(ScaledMSE, nn.Module)],
    "dist": torch.distributed.is_available(), "default_device": str(torch.get_default_device()),
}))
