"""``F.normalize``, ``F.cosine_similarity``, ``F.softmin`` and the layers ``CosineSimilarity``,
``Softmin``, ``PairwiseDistance`` against PyTorch 2.13 (values and gradients, zero vectors
and norms below ``eps`` included), and their gradients against finite differences in
float64, on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import xad
import xad.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _data(seed: int, *shapes: tuple[int, ...]) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = [rng.standard_normal(s) for s in shapes]
    out[0][0] = 0.0  # a zero vector (along the last axis) ...
    out[0][-1] *= 1e-10  # ... and one whose norm is below eps
    return out


def _both(fx, ft, arrays):
    """Values and gradients (of a fixed weighting of the output) from xad and torch."""
    xs = [xad.tensor(a, dtype=xad.float64, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, ty = fx(*xs), ft(*ts)
    w = np.linspace(-1.0, 2.0, int(np.prod(ty.shape))).reshape(tuple(ty.shape))
    (y * xad.tensor(w, dtype=xad.float64)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    return y.numpy(), ty.detach().numpy(), [x.grad.numpy() for x in xs], \
        [t.grad.numpy() for t in ts]


def _check(fx, ft, arrays):
    y, ty, gs, tgs = _both(fx, ft, arrays)
    np.testing.assert_allclose(y, ty, rtol=1e-10, atol=1e-12)
    for g, tg in zip(gs, tgs):
        np.testing.assert_allclose(g, tg, rtol=1e-8, atol=1e-6)


NORMALIZE = [{}, {"dim": 0}, {"p": 1.0}, {"p": 3.0, "dim": -1}, {"eps": 1e-3}]


@pytest.mark.parametrize("kw", NORMALIZE, ids=str)
def test_normalize_matches_torch(xb, kw):
    _check(lambda x: F.normalize(x, **kw), lambda t: TF.normalize(t, **kw), _data(0, (4, 3)))


COSINE = [((4, 3), (4, 3), {}), ((4, 3), (1, 3), {}), ((3, 4), (3, 4), {"dim": 0}),
          ((2, 3, 4), (3, 4), {"dim": -1}), ((4, 3), (4, 3), {"eps": 0.5}),
          ((4, 1), (4, 3), {})]  # broadcast along dim itself: the norms of the broadcast


@pytest.mark.parametrize("s1,s2,kw", COSINE, ids=str)
def test_cosine_similarity_matches_torch(xb, s1, s2, kw):
    _check(lambda a, b: F.cosine_similarity(a, b, **kw),
           lambda a, b: TF.cosine_similarity(a, b, **kw), _data(1, s1, s2))


def test_cosine_similarity_of_zero_vectors_matches_torch(xb):
    """Both norms below eps: each divides by eps (PyTorch's eps semantics, not the old
    ``max(||x1|| ||x2||, eps)``); the gradient still reaches both inputs."""
    a = np.array([[0.0, 0.0, 0.0], [1e-9, 0.0, 2e-9]])
    _check(lambda x, y: F.cosine_similarity(x, y), lambda x, y: TF.cosine_similarity(x, y),
           [a, a[::-1].copy()])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmin_matches_torch(xb, dim):
    _check(lambda x: F.softmin(x, dim=dim), lambda t: TF.softmin(t, dim=dim),
           _data(2, (3, 4)))


def test_softmin_dtype_casts_first(xb):
    x = xad.tensor([[1.0, 2.0]], dtype=xad.float32)
    y = F.softmin(x, dim=1, dtype=xad.float64)
    assert y.dtype == xad.float64
    np.testing.assert_allclose(y.numpy(), TF.softmin(torch.tensor([[1.0, 2.0]]), dim=1,
                                                     dtype=torch.float64).numpy())


def test_gradients_match_finite_differences(xb):
    rng = np.random.default_rng(3)
    a, b = (xad.tensor(rng.standard_normal((3, 4)), dtype=xad.float64, requires_grad=True)
            for _ in range(2))
    for f in (lambda x, y: F.normalize(x) * y, lambda x, y: F.normalize(x, p=1.5, dim=0) + y,
              lambda x, y: F.cosine_similarity(x, y), lambda x, y: F.softmin(x * y, dim=1)):
        assert xad.gradcheck(f, [a, b])
        assert xad.gradgradcheck(f, [a, b])


def test_layers_match_torch(xb):
    a, b = _data(4, (4, 3), (4, 3))
    pairs = [(xad.nn.CosineSimilarity(), torch.nn.CosineSimilarity()),
             (xad.nn.CosineSimilarity(dim=0, eps=1e-3), torch.nn.CosineSimilarity(0, 1e-3)),
             (xad.nn.PairwiseDistance(), torch.nn.PairwiseDistance()),
             (xad.nn.PairwiseDistance(p=1.0, keepdim=True),
              torch.nn.PairwiseDistance(p=1.0, keepdim=True))]
    for ours, theirs in pairs:
        _check(ours, theirs, [a, b])
        assert repr(ours) == repr(theirs)
    _check(xad.nn.Softmin(dim=0), torch.nn.Softmin(dim=0), [a])
    assert repr(xad.nn.Softmin(dim=0)) == repr(torch.nn.Softmin(dim=0))


def test_zero_dimensional_input_is_refused(xb):
    with pytest.raises(ValueError, match="normalize: .*0-d"):
        F.normalize(xad.tensor(1.0))
    with pytest.raises(ValueError, match="cosine_similarity: .*0-d"):
        F.cosine_similarity(xad.tensor(1.0), xad.tensor(2.0))
