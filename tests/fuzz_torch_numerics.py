"""Fuzz cases for tests/test_torch_subset_fuzz.py: PyTorch's numerical functions of
xad/torch_calculus.py, torch_sequences.py, torch_histograms.py and torch_legacy_linalg.py,
each case ``(m, g) -> result`` run on xad's ``torch`` and on PyTorch's."""

from __future__ import annotations


def cases() -> dict:
    return {
        "combinations(r, with_replacement), vander(N, increasing)": lambda m, g: [
            m.combinations(g.f((4,)), int(g.rng.integers(0, 4))),
            m.combinations(g.i((3,)), 2, with_replacement=True),
            m.vander(g.f((3,), dtype="float64"), N=int(g.rng.integers(0, 5))),
            m.vander(g.i((4,)), increasing=True)],
        "unravel_index, nonzero_static": lambda m, g: [
            m.unravel_index(g.i(lo=-30, hi=30), (3, 2, 4)),
            m.nonzero_static(g.i(lo=-1, hi=2), size=int(g.rng.integers(0, 8))),
            g.b().nonzero_static(size=3, fill_value=-7)],
        "trapz, cumulative_trapezoid, gradient": lambda m, g: [
            m.trapz(g.f()), m.trapz(g.f(), dx=0.5, dim=0), m.cumulative_trapezoid(g.f()),
            m.cumulative_trapezoid(g.f(dtype="float64"), dx=2.0, dim=0),
            m.gradient(g.f((3, 4), dtype="float64")),
            m.gradient(g.f((4, 3)), spacing=[2.0, 0.5], edge_order=2),
            m.gradient(g.f((5,), dtype="float64"), spacing=(m.tensor([0.0, 1, 3, 4, 7]),))],
        "histogram, histogramdd": lambda m, g: [
            list(m.histogram(g.f((9,), dtype="float64"), int(g.rng.integers(1, 6)))),
            list(m.histogram(g.f((9,)), 4, range=(-1.0, 1.0), density=True)),
            list(m.histogram(g.f((3, 3), dtype="float64"),
                             m.tensor([-2.0, -0.5, 0.0, 2.0], dtype=m.float64),
                             weight=g.f((3, 3), dtype="float64"))),
            list(m.histogramdd(g.f((6, 2), dtype="float64"), bins=[2, 3])[1])],
        "lu, lu_solve, triangular_solve, chain_matmul, nuclear_norm, frobenius_norm":
            lambda m, g: [
                list(m.lu(g.f((3, 3), dtype="float64"))),
                m.lu_solve(g.f((3, 2), dtype="float64"), *m.lu(g.f((3, 3), dtype="float64"))),
                list(m.triangular_solve(g.f((3, 2), dtype="float64"),
                                        g.f((3, 3), dtype="float64", lo=1.0), upper=False)),
                m.chain_matmul(g.f((2, 3)), g.f((3, 4)), g.f((4, 1))),
                m.nuclear_norm(g.f((3, 4), dtype="float64")),
                m.frobenius_norm(g.f((3, 4)), dim=(0, 1))],
    }
