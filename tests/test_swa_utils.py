"""``torch.optim.swa_utils`` under ``xad.as_torch`` against PyTorch: ``AveragedModel`` (SWA's
running mean, EMA through ``get_ema_multi_avg_fn``, a custom ``avg_fn``, ``use_buffers``),
``SWALR``'s rates (both strategies, ``anneal_epochs`` 0, several groups, state dicts) and
``update_bn`` (the BatchNorm statistics of a pass over a loader, momenta restored)."""

from __future__ import annotations

import numpy as np
import pytest

from xad import as_torch

torch = pytest.importorskip("torch")
T = as_torch.namespace()["torch"]

_G = np.random.default_rng(5)
STEPS = [_G.standard_normal(19) for _ in range(4)]


def _model(L):
    m = L.nn.Sequential(L.nn.Linear(3, 2), L.nn.BatchNorm1d(2), L.nn.Linear(2, 1))
    return m.double()


def _load(m, L, flat):
    """Every parameter set from ``flat`` in turn; the BatchNorm statistics from it too."""
    i = 0
    with L.no_grad():
        for t in [*m.parameters(), m[1].running_mean, m[1].running_var]:
            n = t.numel()
            t.copy_(L.tensor(np.abs(flat[i:i + n]) if t is m[1].running_var else flat[i:i + n],
                             dtype=L.float64).reshape(t.shape))
            i += n


def _averaged(L, kind):
    model = _model(L)
    swa_utils = L.optim.swa_utils
    kw = {"ema": {"multi_avg_fn": swa_utils.get_ema_multi_avg_fn(0.9)},
          "ema_buffers": {"multi_avg_fn": swa_utils.get_ema_multi_avg_fn(0.75),
                          "use_buffers": True},
          "avg_fn": {"avg_fn": lambda a, w, n: a * 0.5 + w * 0.5 + n * 0.01},
          "swa": {}, "swa_one_fn": {"avg_fn": swa_utils.get_swa_avg_fn()},
          "ema_one_fn": {"avg_fn": swa_utils.get_ema_avg_fn(0.8)},
          "swa_multi": {"multi_avg_fn": swa_utils.get_swa_multi_avg_fn()}}[kind]
    avg = swa_utils.AveragedModel(model, **kw)
    for flat in STEPS:
        _load(model, L, flat)
        avg.update_parameters(model)
    out = avg(L.tensor(STEPS[0][:6].reshape(2, 3), dtype=L.float64))
    return [*avg.parameters(), *avg.buffers(), out]


@pytest.mark.parametrize("kind", ["swa", "swa_one_fn", "swa_multi", "ema", "ema_buffers",
                                  "ema_one_fn", "avg_fn"])
def test_averaged_model_is_pytorchs(kind, xb):
    got, want = _averaged(T, kind), _averaged(torch, kind)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-13, atol=1e-14)
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]


def _swalr(L, strategy, anneal, resume):
    w = [L.zeros(1, requires_grad=True), L.zeros(1, requires_grad=True)]
    opt = L.optim.SGD([{"params": [w[0]]}, {"params": [w[1]], "lr": 0.3}], lr=1.0)
    sched = L.optim.swa_utils.SWALR(opt, swa_lr=[0.05, 0.1], anneal_epochs=anneal,
                                    anneal_strategy=strategy)
    lrs = [sched.get_last_lr()]
    for i in range(7):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
        if resume and i == 2:
            state = sched.state_dict()
            sched = L.optim.swa_utils.SWALR(opt, swa_lr=0.5, anneal_strategy="linear")
            sched.load_state_dict(state)
    return lrs


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal", [0, 1, 4])
def test_swalr_rates_are_pytorchs(strategy, anneal, xb):
    for resume in (False, True):
        np.testing.assert_allclose(_swalr(T, strategy, anneal, resume),
                                   _swalr(torch, strategy, anneal, resume), rtol=1e-14)


def test_swalr_errors(xb):
    opt = T.optim.SGD([T.zeros(1, requires_grad=True)], lr=1.0)
    with pytest.raises(ValueError, match="anneal_strategy must be one of"):
        T.optim.swa_utils.SWALR(opt, 0.1, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        T.optim.swa_utils.SWALR(opt, 0.1, anneal_epochs=-1)
    with pytest.raises(ValueError, match="Invalid decay value"):
        T.optim.swa_utils.get_ema_multi_avg_fn(1.5)


def _update_bn(L):
    model = _model(L)
    _load(model, L, STEPS[1])
    model.eval()
    model[1].momentum = 0.3
    data = [L.tensor(_G_DATA[i], dtype=L.float64) for i in range(3)]
    L.optim.swa_utils.update_bn([(x, 0) for x in data], model)
    bn = model[1]
    assert not model.training and bn.momentum == 0.3
    return [bn.running_mean, bn.running_var, bn.num_batches_tracked]


_G_DATA = np.random.default_rng(9).standard_normal((3, 5, 3))


def test_update_bn_is_pytorchs(xb):
    for a, b in zip(_update_bn(T), _update_bn(torch), strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-13)
