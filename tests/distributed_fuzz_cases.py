"""Random DataParallel training cases for tests/test_distributed_fuzz.py (one process, every
backend) and tests/distributed_worker.py's ``fuzz`` mode (``mpiexec -n 2``/``-n 3``).

A case trains a small model for a few steps under ``DataParallel`` on this rank's shard and,
in the same process, a copy on the concatenation of every rank's shard (one process): the
parameters and buffers must agree to rounding. What a case draws: layer widths, a
tied pair of layers, a frozen parameter, a head used on some ranks only or on none
(``find_unused_parameters``), a checkpointed layer, a BatchNorm (SyncBatchNorm under
DataParallel; running statistics compared too), an L2 term outside the forward,
gradient accumulation under ``no_sync``, uneven shards (a global batch of ``n`` to 13),
``bucket_mb`` (one bucket per parameter up to one for all), ``overlap``, ranks starting from
different weights, and SGD (momentum, Nesterov, weight decay), Adam or AdamW.
"""

from __future__ import annotations

import numpy as np

import xad
from xad import nn

# Agreement: relative 1e-9, and absolute 1e-8 because a bias before a BatchNorm has a
# gradient that is rounding noise (1e-17), which Adam scales by lr / eps into steps of 1e-11.
ATOL = 1e-8


class Net(nn.Module):
    """``layers`` (tanh between, a BatchNorm after the first where ``bn``), an optional
    ``head`` added on the rows where ``use_head`` (a bool, or one 0/1 per row)."""

    def __init__(self, widths: list[int], tie: bool, head: bool, ckpt: int,
                 bn: bool) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(a, b) for a, b in zip(widths, widths[1:])])
        if tie:  # one Parameter in two layers of the same shape
            self.layers[1].weight = self.layers[0].weight
        self.head = nn.Linear(widths[0], widths[-1]) if head else None
        self.norm = nn.BatchNorm1d(widths[1], momentum=None if tie else 0.3) if bn else None
        self.ckpt, self.use_head = ckpt, False

    def forward(self, x):
        h = x
        for i, layer in enumerate(self.layers):
            h = xad.checkpoint(layer, h) if i == self.ckpt else layer(h)
            h = self.norm(h) if i == 0 and self.norm is not None else h
            h = xad.tanh(h) if i < len(self.layers) - 1 else h
        if isinstance(self.use_head, bool):
            return h + self.head(x) if self.use_head else h
        return h + self.head(x) * self.use_head


def draw(seed: int, n: int) -> dict:
    """The options of case ``seed`` for ``n`` ranks (the same on every rank)."""
    rng = np.random.default_rng(seed)
    width = int(rng.integers(2, 5))
    tie = bool(rng.random() < 0.3)
    widths = [width, width, width] if tie else [int(v) for v in rng.integers(1, 6, 3)]
    widths.append(int(rng.integers(1, 3)))
    head = bool(rng.random() < 0.5)
    steps = 3
    return dict(
        widths=widths, tie=tie, head=head,
        # per step: which ranks use the head (none, some, all)
        heads=[[bool(rng.random() < 0.5) for _ in range(n)] if head else [False] * n
               for _ in range(steps)],
        ckpt=int(rng.integers(-1, len(widths) - 1)) if rng.random() < 0.3 else -1,
        frozen=bool(rng.random() < 0.3), l2=float(rng.choice([0.0, 0.0, 0.05])),
        bn=bool(rng.random() < 0.3),
        accum=[int(rng.integers(1, 3)) for _ in range(steps)],
        batch=[[int(rng.integers(max(n, 2), 14)) for _ in range(2)] for _ in range(steps)],
        bucket_mb=float(rng.choice([1e-7, 1e-4, 25.0])), overlap=bool(rng.random() < 0.7),
        opt=str(rng.choice(["sgd", "nesterov", "adam", "adamw"])), seed=seed)


def _optimizer(kind: str, params):
    if kind == "sgd":
        return xad.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=0.05)
    if kind == "nesterov":
        return xad.optim.SGD(params, lr=0.1, momentum=0.5, nesterov=True)
    if kind == "adam":
        return xad.optim.Adam(params, lr=0.05)
    return xad.optim.AdamW(params, lr=0.05, weight_decay=0.1)


def _model(case: dict, seed: int) -> Net:
    xad.manual_seed(seed)
    m = Net(case["widths"], case["tie"], case["head"], case["ckpt"], case["bn"]).double()
    if case["frozen"]:
        m.layers[-1].bias.requires_grad_(False)
    return m


def run(case: dict, dist, rank: int, n: int) -> tuple[list, list]:
    """Train ``case`` with DataParallel (this rank) and as one process; both parameter
    lists (as float64 NumPy arrays)."""
    ddp_net = _model(case, 1000 + rank)  # ranks start apart: the wrapper broadcasts rank 0's
    dist.SyncBatchNorm.convert_sync_batchnorm(ddp_net)
    ddp = dist.DataParallel(ddp_net, bucket_mb=case["bucket_mb"], overlap=case["overlap"],
                            find_unused_parameters=case["head"])
    ref = _model(case, 7)
    ref.load_state_dict(ddp_net.state_dict())
    opts = [_optimizer(case["opt"], m.parameters()) for m in (ddp_net, ref)]
    rng = np.random.default_rng(case["seed"] + 1)
    d_in = case["widths"][0]
    for step, (accum, heads) in enumerate(zip(case["accum"], case["heads"])):
        for o in opts:
            o.zero_grad()
        for micro in range(accum):
            B = case["batch"][step][micro]
            x = rng.standard_normal((B, d_in))
            shards = np.array_split(x, n)
            last = micro == accum - 1
            _ddp_backward(ddp, ddp_net, shards[rank], heads[rank], n / B, case["l2"], last)
            _ref_backward(ref, shards, heads, 1 / B, case["l2"])
        for o in opts:
            o.step()
    return ([t.numpy().astype("float64") for t in ddp_net.state_dict().values()],
            [t.numpy().astype("float64") for t in ref.state_dict().values()])


def _loss(model, net, x, use_head, scale, l2):
    net.use_head = use_head
    out = model(xad.tensor(x))
    loss = (out ** 2).sum() * scale
    if l2:
        loss = loss + sum((p ** 2).sum() for p in net.layers[0].parameters()) * l2
    return loss


def _ddp_backward(ddp, net, x, use_head, scale, l2, last):
    if last:
        _loss(ddp, net, x, use_head, scale, l2).backward()
        return
    with ddp.no_sync():
        _loss(ddp, net, x, use_head, scale, l2).backward()


def _ref_backward(ref, shards, heads, scale, l2):
    """One process on the concatenated batch, the head on each rank's rows where that rank
    uses it, one backward (the L2 term once per rank's loss, averaged: once)."""
    rows = np.concatenate([np.full((len(x), 1), float(h)) for x, h in zip(shards, heads)])
    use = xad.tensor(rows) if any(heads) else False
    _loss(ref, ref, np.concatenate(shards), use, scale, l2).backward()
