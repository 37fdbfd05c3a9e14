"""``dist``, ``pdist`` and ``renorm`` (PyTorch's; added for autocast's float32 list, which
names them): values, gradients and second derivatives against torch 2.13 in float64."""

from __future__ import annotations

import numpy as np
import pytest
from torch_check import check_against_torch

import xad
import xad.nn.functional as F

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
def test_dist_pdist_and_renorm_match_torch(xb, p):
    check_against_torch(lambda a, b: xad.dist(a, b, p), lambda a, b: torch.dist(a, b, p),
                        [(3, 4), (4,)], f"dist p={p}")
    check_against_torch(lambda a: F.pdist(a, p), lambda a: _pdist(a, p), [(4, 3)],
                        f"pdist p={p}")
    a = np.random.default_rng(3).standard_normal((5, 3))
    x, t = xad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, want = xad.pdist(x, p), torch.pdist(t, p)  # (torch's own: no second derivative)
    np.testing.assert_allclose(y.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    (y * y.detach()).sum().backward()
    (want * want.detach()).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)
    if p != float("inf"):  # (torch's renorm takes a finite p)
        for dim in (0, 1, -1):
            check_against_torch(lambda a, d=dim: xad.renorm(a, p, d, 1.5),
                                lambda a, d=dim: torch.renorm(a, p, d, 1.5),
                                [(3, 4)], f"renorm p={p} dim={dim}")


def _pdist(a, p):
    i, j = torch.triu_indices(a.shape[0], a.shape[0], 1)
    return torch.linalg.vector_norm(a[i] - a[j], p, -1)


def test_pdist_of_one_row_and_bad_shapes(xb):
    assert tuple(xad.pdist(xad.ones(1, 3)).shape) == (0,)
    with pytest.raises(ValueError, match="pdist"):
        xad.pdist(xad.ones(3))
    with pytest.raises(ValueError, match="renorm"):
        xad.renorm(xad.ones(3), 2, 0, 1.0)
