"""Results that PyTorch writes new and contiguous whatever its input's layout: softmax,
log_softmax, the norms, the scans, masked_fill, roll, renorm, pad and the joins. NumPy keeps
an F-ordered input's order through the same arithmetic, so on a transposed input xad's
result was not contiguous there: ``y.view(-1)`` raised where PyTorch's works, and
``y.reshape(-1)`` was a copy where PyTorch's is a view, so a write through it was lost
(16 of 58 ops of a transposed input differed from torch 2.13). Elementwise results keep the
input's layout in PyTorch and in xad (CuPy's are row-major: docs/PORTING.md)."""

from __future__ import annotations

import numpy as np
import pytest

from xad import as_torch

torch = pytest.importorskip("torch")
T = as_torch.namespace()["torch"]

OPS = {
    "softmax": lambda m, x: m.softmax(x, 1), "log_softmax": lambda m, x: m.log_softmax(x, 0),
    "layer_norm": lambda m, x: m.nn.functional.layer_norm(x, (4,)),
    "layer_norm_affine": lambda m, x: m.nn.functional.layer_norm(
        x, (4,), m.ones(4, dtype=m.float64), m.zeros(4, dtype=m.float64)),
    "cumsum": lambda m, x: m.cumsum(x, 0), "cumprod": lambda m, x: m.cumprod(x, 1),
    "logcumsumexp": lambda m, x: m.logcumsumexp(x, 0),
    "cummax": lambda m, x: m.cummax(x, 0)[0], "cummin_indices": lambda m, x: m.cummin(x, 1)[1],
    "masked_fill": lambda m, x: x.masked_fill(x > 0, 0.0), "roll": lambda m, x: m.roll(x, 1, 0),
    "renorm": lambda m, x: m.renorm(x, 2, 0, 1.0),
    "pad": lambda m, x: m.nn.functional.pad(x, (1, 1)),
    "cat": lambda m, x: m.cat([x, x], 0), "stack": lambda m, x: m.stack([x, x], 0),
    "batch_norm": lambda m, x: m.nn.functional.batch_norm(x, None, None, training=True),
    "group_norm": lambda m, x: m.nn.functional.group_norm(x.unsqueeze(-1), 1),
    "rms_norm": lambda m, x: m.nn.functional.rms_norm(x, (4,)),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_results_pytorch_writes_contiguous_are_contiguous(xb, name):
    a = np.random.default_rng(3).standard_normal((4, 5))
    theirs = OPS[name](torch, torch.tensor(a).T)
    ours = OPS[name](T, T.tensor(a, dtype=T.float64).T)
    assert theirs.is_contiguous() and ours.is_contiguous()
    ours.view(-1)  # (raised on NumPy before: "without a copy")
    for y in (theirs, ours):
        r = y.reshape(-1)
        r[0] = 100  # a view in PyTorch: the write reaches y
    assert ours.reshape(-1)[0].item() == theirs.reshape(-1)[0].item() == 100
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
