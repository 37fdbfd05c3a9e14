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


def _data_dependent() -> dict:
    return {
        "unique(sorted, return_inverse, return_counts), x.unique(dim=...)": lambda m, g: [
            m.unique(g.i(lo=0, hi=4)), m.unique(g.i(lo=0, hi=4), return_inverse=True),
            m.unique(g.i(lo=0, hi=3), sorted=True, return_counts=True),
            g.i(lo=0, hi=2).unique(dim=0, return_inverse=True, return_counts=True),
            g.i(lo=0, hi=2).unique(dim=1), m.unique(g.f())],
        "unique(bool), cummax(bool), cummin(bool)": lambda m, g: [
            m.unique(g.b(), return_inverse=True, return_counts=True),
            g.b().unique(dim=1), tuple(m.cummax(g.b(), 1)), tuple(m.cummin(g.b(), 0))],
        "unique_consecutive, x.unique_consecutive(dim=0)": lambda m, g: [
            m.unique_consecutive(g.i(lo=0, hi=2), return_inverse=True, return_counts=True),
            g.i(lo=0, hi=2).unique_consecutive(dim=0, return_counts=True)],
        "bincount(weights, minlength), x.bincount()": lambda m, g: [
            m.bincount(g.i((6,), lo=0, hi=5)), g.i((6,), lo=0, hi=5).bincount(minlength=9),
            m.bincount(g.i((6,), lo=0, hi=5), weights=g.f((6,))),
            m.bincount(g.i((6,), lo=0, hi=5), g.f((6,), dtype="float64"))],
        "isin(elements, test_elements, invert), isin(x, 3)": lambda m, g: [
            m.isin(g.i(lo=0, hi=5), g.i((4,), lo=0, hi=5)),
            m.isin(g.i(lo=0, hi=5), g.i((3,), lo=0, hi=5), invert=True),
            m.isin(g.i(lo=0, hi=5), 3), m.isin(g.f(), g.f())],
        "tensor_split(sections, indices, dim), x.tensor_split(...)": lambda m, g: [
            m.tensor_split(g.f((4, 5)), 3), m.tensor_split(g.f((4, 5)), [1, 3], dim=1),
            g.f((4, 5)).tensor_split(2, 1), g.f((4, 5)).tensor_split((-1, 9))],
        "x.unfold(dimension, size, step)": lambda m, g: [
            g.f((4, 6)).unfold(1, 2, 2), g.f((4, 6)).unfold(1, 3, 1), g.f((4, 6)).unfold(0, 2, 3),
            g.f((4, 6)).unfold(-1, 1, 4)],
    }


def _scatter_and_scans() -> dict:
    def scatter(m, g, reduce, include_self):
        idx = g.idx((2, 4), 3)
        return g.f((3, 4)).scatter_reduce(0, idx, g.f((2, 4)), reduce,
                                          include_self=include_self)

    cases = {f"scatter_reduce({r}, include_self={s})": (
        lambda m, g, r=r, s=s: scatter(m, g, r, s)) for r in ("sum", "prod", "mean", "amax",
                                                             "amin") for s in (True, False)}
    cases["scatter_reduce(int64)"] = lambda m, g: m.scatter_reduce(
        g.i((3, 4)), 1, g.idx((3, 2), 4), g.i((3, 2)), "mean")
    cases["index_put(accumulate), x.index_put_(...)"] = lambda m, g: [
        g.f((3, 4)).index_put((g.idx((5,), 3), g.idx((5,), 4)), g.f((5,)), accumulate=True),
        m.index_put(g.f((3, 4)), (m.tensor([0, 2]),), g.f((4,))),
        (lambda x: [x.index_put_((m.tensor([1, 1]),), g.f((2, 4)), True), x])(g.f((3, 4)))]
    cases["cummax, cummin, x.cummax(dim)"] = lambda m, g: [
        tuple(m.cummax(g.f(), 1)), tuple(m.cummin(g.i(lo=0, hi=3), 0)),
        tuple(g.f((4, 5)).cummax(-1)), tuple(g.f((4, 5)).cummin(dim=0))]
    cases["logcumsumexp, x.logcumsumexp(dim)"] = lambda m, g: [
        m.logcumsumexp(g.f(), 1), g.f(dtype="float64").logcumsumexp(0)]
    return cases


def cases() -> dict:
    return {**_special(), **_data_dependent(), **_scatter_and_scans()}
