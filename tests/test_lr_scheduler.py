"""Learning-rate schedulers: each one's lr (and momentum) sequence against PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest

import xad
from xad.optim import lr_scheduler as ls

torch = pytest.importorskip("torch")

CASES = [
    ("StepLR", dict(step_size=3, gamma=0.5), 12),
    ("ExponentialLR", dict(gamma=0.9), 12),
    ("CosineAnnealingLR", dict(T_max=5, eta_min=0.01), 17),
    ("CosineAnnealingLR", dict(T_max=4), 12),
    ("LinearLR", dict(start_factor=0.25, end_factor=1.0, total_iters=4), 8),
    ("LinearLR", dict(start_factor=1.0, end_factor=0.1, total_iters=5), 8),
    ("OneCycleLR", dict(max_lr=[1.0, 0.5], total_steps=20), 19),
    ("OneCycleLR", dict(max_lr=0.3, epochs=3, steps_per_epoch=4, anneal_strategy="linear",
                        pct_start=0.25), 11),
    ("OneCycleLR", dict(max_lr=0.3, total_steps=15, three_phase=True, base_momentum=0.8,
                        max_momentum=0.9), 14),
]


def _sequences(lib, opt_name, name, kwargs, steps):
    if lib == "xad":
        mk = lambda: xad.zeros(2, requires_grad=True)  # noqa: E731
        opt_cls, sched_mod = getattr(xad.optim, opt_name), ls
    else:
        mk = lambda: torch.zeros(2, requires_grad=True)  # noqa: E731
        opt_cls, sched_mod = getattr(torch.optim, opt_name), torch.optim.lr_scheduler
    extra = {"momentum": 0.9} if opt_name == "SGD" else {}
    opt = opt_cls([{"params": [mk()]}, {"params": [mk()], "lr": 0.05}], lr=0.1, **extra)
    sched = getattr(sched_mod, name)(opt, **kwargs)
    lrs, moms = [sched.get_last_lr()], []
    key = "momentum" if opt_name == "SGD" else "betas"
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
        moms.append([np.ravel(g[key])[0] for g in opt.param_groups])
    return np.array(lrs, dtype=float), np.array(moms, dtype=float)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
@pytest.mark.parametrize("name,kwargs,steps", CASES,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(CASES)])
def test_lr_sequence_matches_torch(name, kwargs, steps, opt_name):
    ours, our_m = _sequences("xad", opt_name, name, kwargs, steps)
    ref, ref_m = _sequences("torch", opt_name, name, kwargs, steps)
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(our_m, ref_m, rtol=1e-10, atol=1e-12)


def test_chained_schedulers_match_torch():
    """Two chainable schedulers on one optimiser (warm-up, then decay) compose as in torch."""
    def run(lib):
        w = xad.zeros(1, requires_grad=True) if lib is xad else torch.zeros(1,
                                                                           requires_grad=True)
        opt = lib.optim.SGD([w], lr=1.0)
        a = lib.optim.lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=3)
        b = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
        out = []
        for _ in range(6):
            opt.step()
            a.step()
            b.step()
            out.append(opt.param_groups[0]["lr"])
        return out

    np.testing.assert_allclose(run(xad), run(torch), rtol=1e-12)


def test_state_dict_resume():
    w = xad.zeros(1, requires_grad=True)
    opt = xad.optim.SGD([w], lr=1.0, momentum=0.9)
    s = ls.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    for _ in range(4):
        opt.step()
        s.step()
    sd, osd = s.state_dict(), opt.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 4
    rest = []
    for _ in range(5):
        opt.step()
        s.step()
        rest.append(s.get_last_lr()[0])
    # resume: optimiser state first (it carries initial_lr/max_lr), then the scheduler's
    w2 = xad.zeros(1, requires_grad=True)
    opt2 = xad.optim.SGD([w2], lr=1.0, momentum=0.9)
    opt2.load_state_dict(osd)
    s2 = ls.OneCycleLR(opt2, max_lr=1.0, total_steps=10, last_epoch=3)
    s2.load_state_dict(sd)
    again = []
    for _ in range(5):
        opt2.step()
        s2.step()
        again.append(s2.get_last_lr()[0])
    assert again == rest


def test_errors():
    opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        ls.StepLR(object(), 2)
    with pytest.raises(ValueError, match="step_size"):
        ls.StepLR(opt, 0)
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        ls.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="total_steps OR"):
        ls.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="anneal_strategy"):
        ls.OneCycleLR(opt, max_lr=1.0, total_steps=5, anneal_strategy="exp")
    with pytest.raises(ValueError, match="momentum or beta1"):
        ls.OneCycleLR(xad.optim.Adagrad([xad.zeros(1, requires_grad=True)]), max_lr=1.0,
                      total_steps=5)
    with pytest.raises(ValueError, match="same length"):
        ls.OneCycleLR(opt, max_lr=[1.0, 2.0], total_steps=5)
    with pytest.raises(KeyError, match="initial_lr"):
        ls.StepLR(xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=0.1), 2,
                  last_epoch=3)
    s = ls.OneCycleLR(opt, max_lr=1.0, total_steps=2, cycle_momentum=False)
    s.step()
    s.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        s.step()
