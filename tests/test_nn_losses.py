"""Losses of xad.nn: gradients (first and second order) on every backend, values against
PyTorch on the NumPy backend, stability and argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import xad
import xad.nn as nn
import xad.nn.functional as F

f64 = xad.float64


def _x(*shape):
    return xad.randn(*shape, dtype=f64, requires_grad=True)


def test_regression_losses_gradients(xb):
    x, y = _x(3, 4), xad.randn(3, 4, dtype=f64)
    for loss in (nn.MSELoss(), nn.L1Loss(reduction="sum"), nn.HuberLoss(delta=0.7),
                 nn.HuberLoss(reduction="none")):
        assert xad.gradcheck(lambda a, loss=loss: loss(a, y), [x]), repr(loss)
    assert xad.gradgradcheck(lambda a: F.mse_loss(a, y), [x])
    # the target is differentiable too
    t = _x(3, 4)
    assert xad.gradcheck(lambda a, b: F.huber_loss(a, b, delta=0.5), [x, t])


def test_cross_entropy_gradients(xb):
    logits = _x(4, 3)
    target = xad.tensor([0, 2, 2, 1])
    assert xad.gradcheck(lambda z: F.cross_entropy(z, target), [logits])
    assert xad.gradgradcheck(lambda z: F.cross_entropy(z, target), [logits])
    w = xad.tensor([0.2, 1.0, 3.0], dtype=f64)
    assert xad.gradcheck(lambda z: nn.CrossEntropyLoss(weight=w, reduction="none")(z, target),
                         [logits])
    z3 = _x(2, 3, 2)  # (N, C, d)
    t3 = xad.tensor([[0, 2], [1, 1]])
    assert xad.gradgradcheck(lambda z: F.cross_entropy(z, t3, ignore_index=1), [z3])
    probs = F.softmax(xad.randn(4, 3, dtype=f64), axis=1)
    assert xad.gradcheck(lambda z: F.cross_entropy(z, probs), [logits])


def test_bce_with_logits_gradients(xb):
    x = _x(5)
    y = (xad.rand(5, dtype=f64) > 0.5).astype(f64)
    pw = xad.tensor([2.0], dtype=f64)
    assert xad.gradcheck(lambda a: nn.BCEWithLogitsLoss(pos_weight=pw)(a, y), [x])
    assert xad.gradgradcheck(lambda a: F.binary_cross_entropy_with_logits(a, y), [x])


def test_cross_entropy_is_stable(xb):
    z = xad.tensor([[1000.0, 0.0, -1000.0], [-1000.0, 1000.0, 0.0]], requires_grad=True)
    loss = F.cross_entropy(z, xad.tensor([0, 2]))
    loss.backward()
    assert abs(loss.item() - 500.0) < 1e-3
    assert bool(xad.isfinite(z.grad).all().item())
    b = F.binary_cross_entropy_with_logits(xad.tensor([800.0, -800.0]), xad.tensor([0.0, 1.0]))
    assert abs(b.item() - 800.0) < 1e-3


def test_loss_errors(xb):
    z = xad.zeros(4, 3)
    with pytest.raises(TypeError, match="integer"):
        F.cross_entropy(z, xad.zeros(4))
    with pytest.raises(ValueError, match=r"target of shape \(4,\)"):
        F.cross_entropy(z, xad.tensor([0, 1]))
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss(reduction="avg")
    with pytest.raises(ValueError, match="shape"):
        F.mse_loss(xad.zeros(3, 1), xad.zeros(3))


def test_loss_float32(xb):
    z = xad.randn(4, 3, requires_grad=True)
    for v in (F.cross_entropy(z, xad.tensor([0, 1, 2, 0])), F.mse_loss(z, xad.zeros(4, 3)),
              F.binary_cross_entropy_with_logits(z, xad.ones(4, 3)),
              F.huber_loss(z, xad.zeros(4, 3))):
        assert v.dtype == xad.float32


# ----- against PyTorch (NumPy backend) ---------------------------------------------------
@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_match_torch(torch, reduction):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 3)) * 2
    A, B, tA, tB = xad.tensor(a), xad.tensor(b), torch.tensor(a), torch.tensor(b)
    tF = torch.nn.functional
    cases = [
        (F.mse_loss(A, B, reduction), tF.mse_loss(tA, tB, reduction=reduction)),
        (F.l1_loss(A, B, reduction), tF.l1_loss(tA, tB, reduction=reduction)),
        (F.huber_loss(A, B, reduction, 0.8), tF.huber_loss(tA, tB, reduction=reduction,
                                                           delta=0.8)),
    ]
    y = (rng.random((5, 3)) > 0.5).astype(np.float64)
    pw = np.array([0.5, 2.0, 1.0])
    cases.append((F.binary_cross_entropy_with_logits(A, xad.tensor(y), reduction=reduction,
                                                     pos_weight=xad.tensor(pw)),
                  tF.binary_cross_entropy_with_logits(tA, torch.tensor(y), reduction=reduction,
                                                      pos_weight=torch.tensor(pw))))
    t = np.array([0, 2, 1, 1, 0])
    w = np.array([0.3, 1.0, 2.5])
    T, tT = xad.tensor(t), torch.tensor(t)
    cases += [
        (F.cross_entropy(A, T, reduction=reduction), tF.cross_entropy(tA, tT,
                                                                      reduction=reduction)),
        (F.cross_entropy(A, T, weight=xad.tensor(w), reduction=reduction),
         tF.cross_entropy(tA, tT, weight=torch.tensor(w), reduction=reduction)),
        (F.cross_entropy(A, T, ignore_index=1, reduction=reduction),
         tF.cross_entropy(tA, tT, ignore_index=1, reduction=reduction)),
        (F.cross_entropy(A, T, label_smoothing=0.2, reduction=reduction),
         tF.cross_entropy(tA, tT, label_smoothing=0.2, reduction=reduction)),
        (F.nll_loss(F.log_softmax(A, axis=1), T, reduction=reduction),
         tF.nll_loss(tF.log_softmax(tA, dim=1), tT, reduction=reduction)),
    ]
    p = rng.random((5, 3))
    p /= p.sum(1, keepdims=True)
    cases.append((F.cross_entropy(A, xad.tensor(p), reduction=reduction, label_smoothing=0.1),
                  tF.cross_entropy(tA, torch.tensor(p), reduction=reduction,
                                   label_smoothing=0.1)))
    z = rng.standard_normal((3, 4, 2))
    t3 = np.array([[0, 3], [2, 2], [1, 0]])
    cases.append((F.cross_entropy(xad.tensor(z), xad.tensor(t3), reduction=reduction),
                  tF.cross_entropy(torch.tensor(z), torch.tensor(t3), reduction=reduction)))
    for i, (ours, theirs) in enumerate(cases):
        assert ours.shape == tuple(theirs.shape), i
        assert np.allclose(ours.numpy(), theirs.numpy(), atol=1e-10), i


def test_cross_entropy_gradient_matches_torch(torch):
    rng = np.random.default_rng(1)
    z = rng.standard_normal((6, 4))
    t = np.array([3, 0, 1, 1, 2, 0])
    Z = xad.tensor(z, requires_grad=True)
    F.cross_entropy(Z, xad.tensor(t), label_smoothing=0.05).backward()
    tZ = torch.tensor(z, requires_grad=True)
    torch.nn.functional.cross_entropy(tZ, torch.tensor(t), label_smoothing=0.05).backward()
    assert np.allclose(Z.grad.numpy(), tZ.grad.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_one_node_gives_the_composed_bits(xb, dtype):
    """``cross_entropy``'s common case (2-D logits, the mean, no weights: one node,
    xad/ops/cross_entropy.py) gives the bits of ``nll_loss(log_softmax(x))``, loss and
    gradient, with and without an ignored class, at -inf logits too."""
    rng = np.random.default_rng(3)
    for n, c, ignore in ((16, 10, -100), (7, 5, 2), (300, 33, 0)):
        logits = rng.standard_normal((n, c)).astype(dtype) * 4
        logits[0, 1] = -np.inf
        t = rng.integers(0, c, n)
        t[1] = ignore if ignore >= 0 else t[1]
        got = []
        for fn in (lambda x, t, i=ignore: F.cross_entropy(x, t, ignore_index=i),
                   lambda x, t, i=ignore: F.nll_loss(xad.log_softmax(x, axis=1), t,
                                                     ignore_index=i)):
            x = xad.tensor(logits, requires_grad=True)
            loss = fn(x, xad.tensor(t))
            loss.backward()
            got.append((loss.numpy(), x.grad.numpy()))
        for a, b in zip(*got):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case", ["cross_entropy", "nll", "nll_ignore", "nll_weight",
                                  "nll_3d", "ce_sum"])
def test_masked_logits_give_pytorchs_loss_not_nan(xb, torch, case):
    # -inf at classes other than the target's (a masked vocabulary): PyTorch's loss and
    # gradient are finite; xad's one-hot product gave -inf * 0 = nan (fixed 2026-11-26)
    rng = np.random.default_rng(7)
    shape = (4, 5, 3) if case == "nll_3d" else (4, 5)
    a = rng.standard_normal(shape)
    t = np.array([[0, 2, 1], [4, 4, 0], [1, 3, 3], [2, 0, 4]]) if case == "nll_3d" \
        else np.array([0, 2, 4, 1])
    mask = np.ones(shape, bool)
    for k in np.ndindex(t.shape):  # one masked non-target class per target
        mask[(k[0], (t[k] + 1) % 5, *k[1:])] = False
    a = np.where(mask, a, -np.inf)
    kw = {"reduction": "sum"} if case == "ce_sum" else {}
    kw.update({"nll_ignore": {"ignore_index": 2},
               "nll_weight": {"weight": np.array([0.5, 1.0, 2.0, 0.0, 1.5])}}.get(case, {}))

    def loss(lib, x, tt):
        args = {k: (lib.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        if case.startswith("nll"):
            x = lib.nn.functional.log_softmax(x, dim=1) if lib is torch else \
                F.log_softmax(x, axis=1)
            return lib.nn.functional.nll_loss(x, tt, **args)
        return lib.nn.functional.cross_entropy(x, tt, **args)

    x = xad.tensor(a, requires_grad=True)
    got = loss(xad, x, xad.tensor(t))
    got.backward()
    tx = torch.tensor(a, requires_grad=True)
    want = loss(torch, tx, torch.tensor(t))
    want.backward()
    assert np.isfinite(got.item())
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_uint8_class_targets_are_the_int64_ones(xb):
    # PyTorch takes Byte class targets; xad's range check wrapped -t (and ignore_index -100)
    # in uint8 (IndexError "target -255" on torch, OverflowError on CuPy), and a target of
    # 156 compared with ignore_index -100 in uint8 would have been ignored
    rng = np.random.default_rng(3)
    x = xad.tensor(rng.standard_normal((3, 160)), dtype=xad.float64)
    w = xad.tensor(rng.uniform(0.5, 2.0, 160), dtype=xad.float64)
    t64 = xad.tensor([156, 3, 0])
    t8 = t64.astype(xad.uint8)
    for kw in ({}, {"reduction": "sum"}, {"weight": w}, {"label_smoothing": 0.2},
               {"weight": w, "label_smoothing": 0.3, "ignore_index": 3}):
        want = F.cross_entropy(x, t64, **kw).item()
        assert F.cross_entropy(x, t8, **kw).item() == pytest.approx(want, rel=1e-14), kw
    assert F.nll_loss(x, t8, w).item() == pytest.approx(F.nll_loss(x, t64, w).item(), 1e-14)
    with pytest.raises(IndexError, match="target 200 is out of bounds"):
        F.nll_loss(x, xad.tensor([200, 3, 0], dtype=xad.uint8)).item()  # (CuPy: read here)
