"""Fuzz cases for tests/test_torch_subset_fuzz.py: the PyTorch names added for users porting
code (special functions, data-dependent and scatter operations, cumulative extrema, views
by windows), each case ``(m, g) -> result`` run on xad's ``torch`` and on PyTorch's."""

from __future__ import annotations


def _special() -> dict:
    cases = {}
    for n, lo, hi in (("erfc", -3.0, 3.0), ("erfinv", -0.95, 0.95), ("lgamma", -3.0, 3.0),
                      ("digamma", -3.0, 3.0)):
        for d in ("float32", "float64"):
            cases[f"{n}({d})"] = lambda m, g, n=n, lo=lo, hi=hi, d=d: getattr(m, n)(
                g.f(dtype=d, lo=lo, hi=hi))
        cases[f"x.{n}(), x.{n}_()"] = lambda m, g, n=n, lo=lo, hi=hi: (
            lambda x: [getattr(x, n)(), getattr(x, n + "_")(), x])(g.f(lo=lo, hi=hi))
    cases["erfc, lgamma, digamma (int64)"] = lambda m, g: [
        m.erfc(g.i(lo=1, hi=3)), m.lgamma(g.i(lo=1, hi=3)), m.digamma(g.i(lo=1, hi=3))]
    cases["fmod(f32,f32), fmod(f32,float), x.fmod(i64), x.fmod_(y)"] = lambda m, g: [
        m.fmod(g.f(), g.f(lo=0.5)), m.fmod(g.f(lo=-9, hi=9), -1.5), g.i().fmod(g.i(lo=1)),
        g.i().fmod(3), g.f(dtype="float64").fmod(g.f(dtype="float64", lo=0.3)),
        (lambda x: [x.fmod_(0.7), x])(g.f())]
    return cases


def cases() -> dict:
    return {**_special()}
