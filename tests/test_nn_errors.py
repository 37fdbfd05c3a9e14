"""Layers and losses that once dropped data or crashed (the issue "No silent wrong answers":
out-of-range class targets and embedding indices, zero-width layers), on every backend."""

from __future__ import annotations

import warnings

import pytest

import xad
import xad.nn.functional as F
from xad import nn


@pytest.mark.parametrize("bad", [5, -1, 3])
def test_out_of_range_class_target_raises_instead_of_dropping_the_sample(xb, bad):
    x = xad.randn(2, 3)
    for loss in (lambda: F.cross_entropy(x, xad.tensor([0, bad])),
                 lambda: F.nll_loss(F.log_softmax(x), xad.tensor([0, bad])),
                 lambda: nn.CrossEntropyLoss()(x, xad.tensor([0, bad]))):
        with pytest.raises(IndexError, match=f"target {bad} is out of bounds"):
            loss().item()  # on CuPy the check runs on the device and is read here


@pytest.mark.parametrize("targets,ignore,bad", [([-100, 0, 5], -100, 5), ([-100, -3], -100, -3),
                                                ([1, 7, 1], 1, 7), ([-100, 2, -100], -9, -100)])
def test_an_ignored_target_beside_an_out_of_range_one(xb, targets, ignore, bad):
    """The ignored class is read as 0 by the range check (NumPy reads the targets on the
    host at once, other backends reduce them on the device): the bad value is named."""
    x = xad.randn(len(targets), 3)
    with pytest.raises(IndexError, match=f"target {bad} is out of bounds for the number of "
                                         f"classes = 3 \\(ignore_index is {ignore}\\)"):
        F.cross_entropy(x, xad.tensor(targets), ignore_index=ignore).item()


def test_ignore_index_still_drops_its_samples(xb):
    x = xad.randn(2, 3, dtype=xad.float64)
    full = F.cross_entropy(x[:1], xad.tensor([2]))
    assert F.cross_entropy(x, xad.tensor([2, -100])).item() == pytest.approx(full.item())
    assert F.cross_entropy(x, xad.tensor([2, 1]), ignore_index=1).item() == \
        pytest.approx(full.item())


@pytest.mark.parametrize("bad", [-7, -1, 3])
def test_out_of_range_embedding_index_raises(xb, bad):
    with pytest.raises(IndexError, match=f"index {bad} is out of bounds for num_embeddings"):
        F.embedding(xad.tensor([0, bad]), xad.eye(3)).sum().item()
    with pytest.raises(IndexError, match="out of bounds"):
        nn.Embedding(3, 2)(xad.tensor([bad])).sum().item()


def test_linear_with_no_inputs_is_its_bias_like_pytorch(xb):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = nn.Linear(0, 2)
    assert m.weight.shape == (2, 0)
    assert m(xad.ones((3, 0))).tolist() == [m.bias.tolist()] * 3
    with pytest.warns(UserWarning, match="zero-element"):
        nn.init.xavier_uniform_(xad.zeros((2, 0)))
