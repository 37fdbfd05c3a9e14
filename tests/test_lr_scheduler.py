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


# ----- the rest of torch.optim.lr_scheduler: 50 steps each, as built by `make(ls, opt)` -----
def _seq(ls, opt):
    return ls.SequentialLR(opt, [ls.LinearLR(opt, start_factor=0.1, total_iters=5),
                                 ls.CosineAnnealingLR(opt, T_max=10),
                                 ls.MultiStepLR(opt, milestones=[3, 8], gamma=0.5)],
                           milestones=[5, 30])


def _chain(ls, opt):
    return ls.ChainedScheduler([ls.ConstantLR(opt, factor=0.5, total_iters=7),
                                ls.ExponentialLR(opt, gamma=0.95),
                                ls.MultiplicativeLR(opt, lambda e: 0.99)])


class _Warm:
    """A callable object: its __dict__ travels in LambdaLR's state dict."""

    def __init__(self, n):
        self.n = n

    def __call__(self, e):
        return min(1.0, (e + 1) / self.n)


MORE = {
    "LambdaLR": lambda ls, opt: ls.LambdaLR(opt, [lambda e: 0.9 ** e, _Warm(7)]),
    "MultiplicativeLR": lambda ls, opt: ls.MultiplicativeLR(opt, lambda e: 0.97),
    "MultiStepLR": lambda ls, opt: ls.MultiStepLR(opt, milestones=[4, 10, 10, 31], gamma=0.3),
    "ConstantLR": lambda ls, opt: ls.ConstantLR(opt),
    "ConstantLR-f": lambda ls, opt: ls.ConstantLR(opt, factor=0.25, total_iters=12),
    "PolynomialLR": lambda ls, opt: ls.PolynomialLR(opt),
    "PolynomialLR-p": lambda ls, opt: ls.PolynomialLR(opt, total_iters=40, power=2.5),
    "CAWR": lambda ls, opt: ls.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2,
                                                           eta_min=0.001),
    "CAWR-1": lambda ls, opt: ls.CosineAnnealingWarmRestarts(opt, T_0=7),
    "CyclicLR": lambda ls, opt: ls.CyclicLR(opt, base_lr=0.01, max_lr=[0.1, 0.2],
                                            step_size_up=4, step_size_down=7),
    "CyclicLR-2": lambda ls, opt: ls.CyclicLR(opt, 0.01, 0.1, step_size_up=3,
                                              mode="triangular2", base_momentum=0.7),
    "CyclicLR-exp": lambda ls, opt: ls.CyclicLR(opt, 0.01, 0.1, step_size_up=5,
                                                mode="exp_range", gamma=0.97),
    "CyclicLR-fn": lambda ls, opt: ls.CyclicLR(opt, 0.01, 0.1, step_size_up=5,
                                               scale_fn=lambda x: 0.5 ** x,
                                               scale_mode="iterations",
                                               cycle_momentum=False),
    "SequentialLR": _seq,
    "ChainedScheduler": _chain,
}


def _run_more(lib, opt_name, make, steps=50, resume_at=None):
    """The lr (and momentum) sequence over ``steps`` steps; with ``resume_at``, the
    scheduler is rebuilt from state dicts at that step (xad only)."""
    mk = (lambda: xad.zeros(2, requires_grad=True)) if lib is xad else \
        (lambda: torch.zeros(2, requires_grad=True))
    extra = {"momentum": 0.9} if opt_name == "SGD" else {}

    def build():
        opt = getattr(lib.optim, opt_name)([{"params": [mk()]},
                                            {"params": [mk()], "lr": 0.05}], lr=0.1, **extra)
        return opt, make(lib.optim.lr_scheduler, opt)

    opt, sched = build()
    key = "momentum" if opt_name == "SGD" else "betas"
    out = [sched.get_last_lr() + [np.ravel(g[key])[0] for g in opt.param_groups]]
    for i in range(steps):
        if i == resume_at:
            osd, ssd = opt.state_dict(), sched.state_dict()
            opt, sched = build()
            opt.load_state_dict(osd)
            sched.load_state_dict(ssd)
        opt.step()
        sched.step()
        out.append(sched.get_last_lr() + [np.ravel(g[key])[0] for g in opt.param_groups])
    return np.array(out, dtype=float)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
@pytest.mark.parametrize("name", list(MORE))
def test_more_schedulers_match_torch(name, opt_name):
    ref = _run_more(torch, opt_name, MORE[name])
    np.testing.assert_allclose(_run_more(xad, opt_name, MORE[name]), ref, rtol=1e-12,
                               atol=1e-15)
    # a state-dict round trip mid-way changes nothing
    np.testing.assert_allclose(_run_more(xad, opt_name, MORE[name], resume_at=17), ref,
                               rtol=1e-12, atol=1e-15)


def _plateau(lib, resume_at=None, **kw):
    def build():
        o = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=1.0)
        return o, lib.optim.lr_scheduler.ReduceLROnPlateau(o, **kw)

    opt, s = build()
    rng = np.random.default_rng(0)
    metrics = np.cumsum(rng.normal(0.0, 1.0, 50))
    out = []
    for i, m in enumerate(metrics):
        if i == resume_at:
            ssd = s.state_dict()
            opt, s = build()
            s.load_state_dict(ssd)
            opt.param_groups[0]["lr"] = ssd["_last_lr"][0]
        s.step(lib.tensor(float(m)) if i % 2 else float(m))
        out.append([s.get_last_lr()[0], s.num_bad_epochs, s.cooldown_counter, s.best])
    return np.array(out, dtype=float)


@pytest.mark.parametrize("kw", [dict(), dict(patience=2, factor=0.5, cooldown=3),
                                dict(mode="max", patience=1, threshold=0.1,
                                     threshold_mode="abs", min_lr=0.05),
                                dict(mode="max", patience=0, threshold=0.01, eps=0.2)])
def test_reduce_on_plateau_matches_torch(kw):
    ref = _plateau(torch, **kw)
    np.testing.assert_allclose(_plateau(xad, **kw), ref, rtol=1e-12)
    np.testing.assert_allclose(_plateau(xad, resume_at=20, **kw), ref, rtol=1e-12)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_cawr_fractional_epochs_match_torch():
    def run(lib):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=1.0)
        s = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2)
        out = []
        for e in np.arange(0, 20, 0.35):
            s.step(float(e))
            out.append(s.get_last_lr()[0])
        return out

    np.testing.assert_allclose(run(xad), run(torch), rtol=1e-12)


def test_more_errors():
    opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas"):
        ls.LambdaLR(opt, [lambda e: 1.0] * 2)
    with pytest.raises(TypeError, match="lr_lambda should be a function"):
        ls.MultiplicativeLR(opt, 0.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        ls.ConstantLR(opt, factor=2.0)
    with pytest.raises(ValueError, match="T_0"):
        ls.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="scale_fn is None"):
        ls.CyclicLR(opt, 0.1, 1.0, mode="sawtooth")
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        ls.ReduceLROnPlateau(opt, factor=1.5)
    with pytest.raises(ValueError, match="mode 'up' is unknown"):
        ls.ReduceLROnPlateau(opt, mode="up")
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        ls.SequentialLR(opt, [ls.StepLR(opt, 2), ls.ReduceLROnPlateau(opt)], milestones=[3])
    with pytest.raises(ValueError, match="one more than the number of milestone"):
        ls.SequentialLR(opt, [ls.StepLR(opt, 2)], milestones=[3])
    other = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="same optimizer"):
        ls.ChainedScheduler([ls.StepLR(opt, 2), ls.StepLR(other, 2)])


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
                                  "ExponentialLR", "PolynomialLR", "CosineAnnealingLR",
                                  "LambdaLR"])
def test_step_with_epoch_uses_closed_form_as_torch(name):
    kw = {"StepLR": dict(step_size=3), "MultiStepLR": dict(milestones=[2, 5, 5]),
          "ConstantLR": dict(factor=0.5, total_iters=4), "LinearLR": dict(total_iters=6),
          "ExponentialLR": dict(gamma=0.8), "PolynomialLR": dict(total_iters=8, power=2.0),
          "CosineAnnealingLR": dict(T_max=6), "LambdaLR": dict(lr_lambda=lambda e: 0.9 ** e)}

    def run(lib):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)
        s = getattr(lib.optim.lr_scheduler, name)(opt, **kw[name])
        out = []
        for e in [1, 2, 7, 3, 3, 10, 0, 5]:
            opt.step()
            s.step(e)
            out.append(s.get_last_lr()[0])
        return out

    np.testing.assert_allclose(run(xad), run(torch), rtol=1e-12)


def test_repr_of_every_scheduler():
    opt = xad.optim.SGD([xad.zeros(1, requires_grad=True)], lr=0.1)
    chained = ls.ChainedScheduler([ls.StepLR(opt, 2), ls.ExponentialLR(opt, 0.9)])
    assert repr(chained).startswith("ChainedScheduler(")
    assert "last_epoch=0" in repr(ls.StepLR(opt, 2))


_ADDED = {
    "StepLR": lambda ls, o: ls.StepLR(o, 2, 0.5), "ExponentialLR": lambda ls, o:
    ls.ExponentialLR(o, 0.9), "MultiStepLR": lambda ls, o: ls.MultiStepLR(o, [3, 5]),
    "ConstantLR": lambda ls, o: ls.ConstantLR(o, 0.5, 4),
    "LinearLR": lambda ls, o: ls.LinearLR(o, 0.2, total_iters=5),
    "PolynomialLR": lambda ls, o: ls.PolynomialLR(o, 6, 2.0),
    "ChainedScheduler": lambda ls, o: ls.ChainedScheduler([ls.ConstantLR(o, 0.5, 4),
                                                           ls.ExponentialLR(o, 0.9)]),
    # these need one rate per group made with them: PyTorch's strict zips raise
    "CosineAnnealingLR": lambda ls, o: ls.CosineAnnealingLR(o, 5),
    "CyclicLR": lambda ls, o: ls.CyclicLR(o, 0.01, 0.1, 3),
    "LambdaLR": lambda ls, o: ls.LambdaLR(o, lambda e: 0.9 ** e),
    "MultiplicativeLR": lambda ls, o: ls.MultiplicativeLR(o, lambda e: 0.9),
    "CosineAnnealingWarmRestarts": lambda ls, o: ls.CosineAnnealingWarmRestarts(o, 3),
    "SequentialLR": lambda ls, o: ls.SequentialLR(o, [ls.ConstantLR(o, 0.5, 2),
                                                      ls.ExponentialLR(o, 0.9)], [3]),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", list(_ADDED))
def test_a_group_added_after_the_scheduler_as_torch(name):
    # the last six set no rate, or another group's, on a group added later (silently); PyTorch
    # raises from a strict zip at the first step that needs the new group's base rate
    def run(lib):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1, momentum=0.9)
        sched = _ADDED[name](lib.optim.lr_scheduler, opt)
        out = []
        for i in range(8):
            if i == 2:
                opt.add_param_group({"params": [lib.zeros(1, requires_grad=True)], "lr": 0.3})
            opt.step()
            sched.step()
            out.append([g["lr"] for g in opt.param_groups])
        return out

    try:
        ref = run(torch)
    except ValueError:
        with pytest.raises(ValueError, match=r"parameter groups: a group was added "
                                             r"\(add_param_group\) after this scheduler"):
            run(xad)
        return
    assert sum(map(len, ref)) > 8  # the new group took part
    np.testing.assert_allclose(np.concatenate(run(xad)), np.concatenate(ref), rtol=1e-12)


def test_one_cycle_state_dict_from_torch_keeps_its_anneal_strategy():
    """PyTorch's state dict names the strategy `_anneal_func_type`; loading one saved with
    "linear" into a scheduler made with "cos" continues linearly, as in PyTorch (xad kept
    its own "cos": other numbers, no error)."""
    def run(lib, sd=None):
        w = lib.zeros(1, requires_grad=True)
        opt = lib.optim.SGD([w], lr=1.0, momentum=0.9)
        s = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=12,
                                              anneal_strategy="cos" if sd else "linear")
        for _ in range(4):
            opt.step()
            s.step()
        if sd is not None:
            s.load_state_dict(sd)
        saved = s.state_dict()
        out = []
        for _ in range(6):
            opt.step()
            s.step()
            out.append(s.get_last_lr()[0])
        return saved, out

    torch_sd, ref = run(torch)
    _, ours = run(xad, torch_sd)
    np.testing.assert_allclose(ours, ref, rtol=1e-12)
