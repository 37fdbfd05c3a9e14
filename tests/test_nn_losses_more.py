"""The losses beyond MSE/L1/Huber/cross-entropy against PyTorch in float64 on every backend:
values, first and second derivatives (``torch_check``) for every reduction, the modules'
defaults, and argument errors."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402
from torch_check import check_against_torch  # noqa: E402

import xad  # noqa: E402
import xad.nn as nn  # noqa: E402
import xad.nn.functional as F  # noqa: E402

f64 = xad.float64
RNG = np.random.default_rng(7)
PROB = RNG.uniform(0.1, 0.9, (4, 3))
BITS = (RNG.uniform(size=(4, 3)) > 0.5).astype(float)
SIGN = np.array([1.0, -1.0, -1.0, 1.0])
COUNTS = RNG.integers(0, 5, (4, 3)).astype(float)
DIST = RNG.dirichlet(np.ones(3), 4)
DIST[0, 1] = 0.0  # a zero of the target: its term is 0


def _c(lib, a):
    return xad.tensor(a, dtype=f64) if lib == "x" else torch.tensor(a)


def _sig(lib, x):
    return xad.sigmoid(x) if lib == "x" else torch.sigmoid(x)


# name, shapes, f(lib, functional module, *inputs)
CASES = [
    ("bce", [(4, 3)], lambda L, M, x, r: M.binary_cross_entropy(_sig(L, x), _c(L, PROB),
                                                                 reduction=r)),
    ("bce_weight", [(4, 3)], lambda L, M, x, r: M.binary_cross_entropy(
        _sig(L, x), _c(L, BITS), weight=_c(L, PROB[0]), reduction=r)),
    ("kl_div", [(4, 3)], lambda L, M, x, r: M.kl_div(x, _c(L, DIST), reduction=r)),
    ("kl_div_log_target", [(4, 3), (4, 3)], lambda L, M, x, t, r: M.kl_div(
        x, t, reduction=r, log_target=True)),
    ("smooth_l1", [(4, 3), (4, 3)], lambda L, M, x, t, r: M.smooth_l1_loss(
        x, t, reduction=r, beta=0.7)),
    ("poisson_nll", [(4, 3)], lambda L, M, x, r: M.poisson_nll_loss(x, _c(L, COUNTS),
                                                                    reduction=r)),
    ("poisson_nll_full_rate", [(4, 3)], lambda L, M, x, r: M.poisson_nll_loss(
        x * x + 0.5, _c(L, COUNTS), log_input=False, full=True, reduction=r)),
    ("gaussian_nll", [(4, 3), (4, 3), (4, 3)], lambda L, M, x, t, v, r: M.gaussian_nll_loss(
        x, t, v * v + 0.1, full=True, reduction=r)),
    ("gaussian_nll_homoscedastic", [(4, 3), (4, 3), (4,)], lambda L, M, x, t, v, r:
     M.gaussian_nll_loss(x, t, v * v + 0.1, reduction=r)),
    ("margin_ranking", [(4,), (4,)], lambda L, M, a, b, r: M.margin_ranking_loss(
        a, b, _c(L, SIGN), margin=0.3, reduction=r)),
    ("hinge_embedding", [(4,)], lambda L, M, x, r: M.hinge_embedding_loss(
        x, _c(L, SIGN), margin=0.5, reduction=r)),
    ("cosine_embedding", [(4, 3), (4, 3)], lambda L, M, a, b, r: M.cosine_embedding_loss(
        a, b, _c(L, SIGN), margin=-0.2, reduction=r)),
    ("triplet_margin", [(4, 3), (4, 3), (4, 3)], lambda L, M, a, p, n, r:
     M.triplet_margin_loss(a, p, n, margin=2.0, reduction=r)),
    ("triplet_margin_swap_p3", [(4, 3), (4, 3), (4, 3)], lambda L, M, a, p, n, r:
     M.triplet_margin_loss(a, p, n, margin=2.5, p=3.0, swap=True, reduction=r)),
    ("triplet_margin_with_distance", [(4, 3), (4, 3), (4, 3)], lambda L, M, a, p, n, r:
     M.triplet_margin_with_distance_loss(a, p, n, margin=1.5, reduction=r)),
    ("triplet_margin_with_l1_distance_swap", [(4, 3), (4, 3), (4, 3)], lambda L, M, a, p, n, r:
     M.triplet_margin_with_distance_loss(a, p, n, distance_function=lambda x, y: (
         (x - y) ** 2).sum(-1), margin=2.0, swap=True, reduction=r)),
    ("multilabel_soft_margin", [(4, 3), (3,)], lambda L, M, x, w, r:
     M.multilabel_soft_margin_loss(x, _c(L, BITS), weight=w, reduction=r)),
]


@pytest.mark.filterwarnings("ignore:.*reduction.*mean:UserWarning")
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,shapes,f", CASES, ids=[c[0] for c in CASES])
def test_loss_matches_torch(xb, name, shapes, f, reduction):
    check_against_torch(lambda *a: f("x", F, *a, reduction), lambda *a: f("t", TF, *a, reduction),
                        shapes, f"{name}:{reduction}")


def test_kl_div_batchmean_matches_torch(xb):
    check_against_torch(lambda x: F.kl_div(x, _c("x", DIST), "batchmean"),
                        lambda x: TF.kl_div(x, _c("t", DIST), reduction="batchmean"),
                        [(4, 3)], "kl_div:batchmean")


def test_gaussian_nll_variance_clamp_passes_the_gradient(xb):
    """PyTorch clamps var at eps for the value only: the gradient reaches var unchanged."""
    v = np.array([1e-9, 0.5])
    x = xad.tensor(v, dtype=f64, requires_grad=True)
    t = torch.tensor(v, requires_grad=True)
    F.gaussian_nll_loss(xad.zeros(2, dtype=f64), xad.ones(2, dtype=f64), x).backward()
    TF.gaussian_nll_loss(torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64),
                         t).backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


MODULES = [("BCELoss", {}), ("KLDivLoss", {"reduction": "batchmean"}),
           ("SmoothL1Loss", {"beta": 0.5}), ("PoissonNLLLoss", {"full": True}),
           ("GaussianNLLLoss", {"eps": 1e-3}), ("MarginRankingLoss", {"margin": 0.1}),
           ("HingeEmbeddingLoss", {}), ("CosineEmbeddingLoss", {}),
           ("TripletMarginLoss", {"swap": True}), ("MultiLabelSoftMarginLoss", {}),
           ("TripletMarginWithDistanceLoss", {"margin": 2.0, "swap": True})]


@pytest.mark.parametrize("name,kw", MODULES, ids=[m[0] for m in MODULES])
def test_modules_match_torch(xb, name, kw):
    xm, tm = getattr(nn, name)(**kw), getattr(torch.nn, name)(**kw)
    assert xm.reduction == tm.reduction
    args = {"BCELoss": (PROB, BITS), "KLDivLoss": (np.log(PROB), DIST),
            "SmoothL1Loss": (PROB, BITS), "PoissonNLLLoss": (PROB, COUNTS),
            "GaussianNLLLoss": (PROB, BITS, PROB), "MarginRankingLoss": (SIGN, -SIGN, SIGN),
            "HingeEmbeddingLoss": (SIGN * 0.3, SIGN), "CosineEmbeddingLoss": (PROB, BITS, SIGN),
            "TripletMarginLoss": (PROB, BITS, DIST),
            "TripletMarginWithDistanceLoss": (PROB, BITS, DIST),
            "MultiLabelSoftMarginLoss": (PROB, BITS)}[name]
    a = xm(*(xad.tensor(v, dtype=f64) for v in args)).item()
    b = tm(*(torch.tensor(v) for v in args)).item()
    assert abs(a - b) <= 1e-12 * max(1.0, abs(b)), (a, b)


def test_errors(xb):
    with pytest.raises(ValueError, match="shape"):
        F.binary_cross_entropy(xad.zeros(3), xad.zeros(2))
    with pytest.raises(ValueError, match="var of shape"):
        F.gaussian_nll_loss(xad.zeros(3, 2), xad.zeros(3, 2), xad.ones(2))
    with pytest.raises(ValueError, match="reduction"):
        F.smooth_l1_loss(xad.zeros(2), xad.zeros(2), "average")


INF, NAN = float("inf"), float("nan")
# name, f(functional module, x, constant maker), x: values at kinks, ties and infinities
EDGES = [
    ("huber_at_infinities", lambda M, x, c: M.huber_loss(x, c([0.0, 0.0, 0.0, 1.0]),
                                                         reduction="none", delta=2.0),
     [INF, -INF, 1.0, 3.0]),
    ("smooth_l1_at_infinities", lambda M, x, c: M.smooth_l1_loss(x, c([0.0, 0.0, 0.0, 1.0]),
                                                                 reduction="sum", beta=0.5),
     [INF, -INF, 0.25, 3.0]),
    ("margin_ranking_at_ties", lambda M, x, c: M.margin_ranking_loss(
        x, c([0.0, 0.5, 0.0, 1.0]), c([1.0, 1.0, -1.0, 1.0]), reduction="none"),
     [0.0, 0.5, 0.0, NAN]),
    ("hinge_embedding_at_the_margin", lambda M, x, c: M.hinge_embedding_loss(
        x, c([-1.0, -1.0, 1.0, -1.0]), margin=0.5, reduction="none"), [0.5, 0.2, 0.5, NAN]),
    ("cosine_embedding_at_the_margin", lambda M, x, c: M.cosine_embedding_loss(
        x.reshape(2, 2), c([[1.0, 2.0], [1.0, 0.0]]), c([-1.0, -1.0]), reduction="none"),
     [0.0, 0.0, NAN, 1.0]),
    ("gaussian_nll_of_an_infinite_variance", lambda M, x, c: M.gaussian_nll_loss(
        c([0.0, 1.0, 0.0, 2.0]), c([1.0, 1.0, 0.0, 0.0]), x, reduction="none"),
     [INF, 1e-9, 0.5, INF]),
    ("triplet_of_nan", lambda M, x, c: M.triplet_margin_loss(
        x.reshape(2, 2), c([[1.0, 2.0], [1.0, 0.0]]), c([[0.0, 0.0], [3.0, 0.0]]),
        reduction="none"), [0.0, NAN, 0.5, 1.0]),
]


@pytest.mark.parametrize("name,f,x", EDGES, ids=[e[0] for e in EDGES])
def test_kinks_and_infinities_match_torch(xb, name, f, x):
    # the gradient of max(z, 0) passes at z == 0 and NaN stays NaN, as PyTorch's clamp_min
    # (the four losses used a where(z > 0) that gave 0 for both: a tie of equal scores never
    # learned); Huber's and smooth L1's square no longer gives inf * 0 = NaN at an infinity
    xs = xad.tensor(x, dtype=f64, requires_grad=True)
    ts = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    a = f(F, xs, lambda v: xad.tensor(v, dtype=f64))
    b = f(TF, ts, lambda v: torch.tensor(v, dtype=torch.float64))
    np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-13)
    w = np.arange(1.0, b.numel() + 1).reshape(tuple(b.shape))
    (a * xad.tensor(w, dtype=f64)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), ts.grad.numpy(), rtol=1e-8)  # (eps)


def test_inputs_outside_the_support_give_nan(xb):
    # PyTorch refuses a probability outside [0, 1] and a negative variance after reading the
    # device, and its kl_div of a negative target is NaN (xlogy); xad gave finite numbers
    # (log(1 - p) clamped to -100, var clamped to eps, t log t taken as 0)
    x = lambda v: xad.tensor(v, dtype=f64)  # noqa: E731
    bce = F.binary_cross_entropy(x([1.5, 0.5, -0.25, 1.0]), x([1.0, 1.0, 0.0, 1.0]), None, "none")
    assert np.isnan(bce.numpy()).tolist() == [True, False, True, False]
    kl = F.kl_div(x([-1.0, -2.0, -0.5]), x([-0.3, 0.0, 0.5]), reduction="none")
    tkl = TF.kl_div(torch.tensor([-1.0, -2.0, -0.5], dtype=torch.float64),
                    torch.tensor([-0.3, 0.0, 0.5], dtype=torch.float64), reduction="none")
    np.testing.assert_allclose(kl.numpy(), tkl.numpy(), rtol=1e-15)
    g = F.gaussian_nll_loss(x([0.0, 0.0]), x([1.0, 1.0]), x([2.0, -1.0]), reduction="none")
    assert np.isnan(g.numpy()).tolist() == [False, True]
    with pytest.raises(ValueError, match="negative"):
        TF.gaussian_nll_loss(torch.zeros(2), torch.ones(2), torch.tensor([2.0, -1.0]))
