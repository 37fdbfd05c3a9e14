"""Losses' gradients with respect to the *target* (distillation, soft labels) against
PyTorch (torch 2.13, float64, every backend), for targets at 0, at 1 and inside. They agree
everywhere except at three points where PyTorch's number is the ``0 * inf`` of a term its own
value drops; xad gives the derivative of the loss it computes there, and docs/PORTING.md
("Conventions", the ``kl_div``, ``poisson_nll_loss(full=True)`` and ``binary_cross_entropy``
rows) names each. These tests pin both sides, so a change in either is seen."""

from __future__ import annotations

import numpy as np
import pytest

import xad
import xad.nn as nn
import xad.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

P = np.array([0.3, 0.6, 0.8, 0.45])  # probabilities (inputs)
T01 = np.array([0.0, 1.0, 0.5, 0.0])  # targets at 0, 1 and inside
COUNTS = np.array([0.0, 1.0, 3.0, 0.5])  # Poisson targets: 0, 1, above 1 (Stirling), inside


def _grads(xf, tf, inp: np.ndarray, tgt: np.ndarray):
    """(xad's loss, input grad, target grad), (torch's), as arrays."""
    xi, xt = (xad.tensor(a, dtype=xad.float64, requires_grad=True) for a in (inp, tgt))
    ti, tt = (torch.tensor(a, requires_grad=True) for a in (inp, tgt))
    xl, tl = xf(xi, xt), tf(ti, tt)
    xl.backward()
    tl.backward()
    return ((xl.numpy(), xi.grad.numpy(), xt.grad.numpy()),
            (tl.detach().numpy(), ti.grad.numpy(), tt.grad.numpy()))


def _agree_except(got, want, where: np.ndarray) -> None:
    """Loss and input gradient agree; the target gradient agrees outside ``where``."""
    for a, b in zip(got[:2], want[:2]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[2][~where], want[2][~where], rtol=1e-12, atol=1e-12)
    assert np.isfinite(got[2]).all()


CASES = [  # id, xad loss, torch loss, input, target, where PyTorch's target gradient differs
    ("bce", lambda i, t: F.binary_cross_entropy(i, t),
     lambda i, t: TF.binary_cross_entropy(i, t), P, T01, np.zeros(4, bool)),
    ("bce-saturated-input", lambda i, t: F.binary_cross_entropy(i, t),
     lambda i, t: TF.binary_cross_entropy(i, t), np.array([0.0, 1.0, 0.0, 0.5]), T01,
     np.array([True, True, True, False])),
    ("bce-with-logits", lambda i, t: F.binary_cross_entropy_with_logits(i, t),
     lambda i, t: TF.binary_cross_entropy_with_logits(i, t), P, T01, np.zeros(4, bool)),
    *[(f"kl-log_target={lt}", lambda i, t, lt=lt: F.kl_div(i, t, "sum", log_target=lt),
       lambda i, t, lt=lt: TF.kl_div(i, t, reduction="sum", log_target=lt), np.log(P),
       np.log(np.array([1e-4, 1.0, 0.5, 0.2])) if lt else T01,
       np.array([not lt, False, False, not lt])) for lt in (False, True)],
    *[(f"poisson-full={full}-log_input={li}",
       lambda i, t, f=full, li=li: F.poisson_nll_loss(i, t, log_input=li, full=f),
       lambda i, t, f=full, li=li: TF.poisson_nll_loss(i, t, log_input=li, full=f), P, COUNTS,
       np.array([full, False, False, False])) for full in (False, True) for li in (True, False)],
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_target_gradients_match_torch_except_where_documented(xb, case):
    _, xf, tf, inp, tgt, where = case
    got, want = _grads(xf, tf, inp, tgt)
    _agree_except(got, want, where)
    assert not np.isfinite(want[2][where]).any()  # PyTorch's inf/NaN there (torch 2.13)


def test_documented_target_gradients_are_the_derivatives_of_the_computed_loss(xb):
    """xad's numbers at those points: the clamped logs' (BCE: ``(max(log(1-p), -100) -
    max(log p, -100)) / n``), Poisson without the Stirling term it drops at ``t <= 1``, and
    ``kl_div``'s ``-input`` (``t log t`` taken as its limit 0)."""
    p, t = np.array([0.0, 1.0, 0.0, 0.5]), T01
    got, _ = _grads(lambda i, y: F.binary_cross_entropy(i, y), TF.binary_cross_entropy, p, t)
    np.testing.assert_allclose(got[2], [100 / 4, -100 / 4, 100 / 4, 0.0], atol=1e-12)
    got, _ = _grads(lambda i, y: F.poisson_nll_loss(i, y, full=True),
                    lambda i, y: TF.poisson_nll_loss(i, y, full=True), P, COUNTS)
    assert got[2][0] == pytest.approx(-P[0] / 4)
    got, _ = _grads(lambda i, y: F.kl_div(i, y, "sum"),
                    lambda i, y: TF.kl_div(i, y, reduction="sum"), np.log(P), T01)
    assert got[2][[0, 3]] == pytest.approx(-np.log(P[[0, 3]]))


@pytest.mark.parametrize("make", [lambda: nn.BCELoss(), lambda: nn.PoissonNLLLoss(full=True),
                                  lambda: nn.KLDivLoss(reduction="sum")],
                         ids=["BCELoss", "PoissonNLLLoss", "KLDivLoss"])
def test_loss_modules_give_their_functions_target_gradients(xb, make):
    inp, tgt = (np.log(P), T01) if isinstance(make(), nn.KLDivLoss) else (P, T01)
    loss = make()
    xi, xt = (xad.tensor(a, dtype=xad.float64, requires_grad=True) for a in (inp, tgt))
    yi, yt = (xad.tensor(a, dtype=xad.float64, requires_grad=True) for a in (inp, tgt))
    loss(xi, xt).backward()
    fn = {nn.BCELoss: lambda i, t: F.binary_cross_entropy(i, t),
          nn.PoissonNLLLoss: lambda i, t: F.poisson_nll_loss(i, t, full=True),
          nn.KLDivLoss: lambda i, t: F.kl_div(i, t, "sum")}[type(loss)]
    fn(yi, yt).backward()
    np.testing.assert_array_equal(xt.grad.numpy(), yt.grad.numpy())
    assert np.isfinite(xt.grad.numpy()).all()
