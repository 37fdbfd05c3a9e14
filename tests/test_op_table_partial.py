"""Every op-table row with only some of its inputs moving: ``jvp`` along one input (the
others constants, so the rule meets ``None`` tangents) against central differences, and
``vmap`` with one input batched (and, for three or more, all but one) against a loop.
tests/test_jvp.py and tests/test_vmap.py move every input at once; a rule that handles a
missing tangent or an unbatched operand wrongly passes those. Found so: ``add_layer_norm``'s
tangent along ``t_bias`` alone was the bias's own shape (an ``AxisError``). The rules are
backend-free code: checked on NumPy (``XAD_OP_TABLE_BACKENDS=numpy,jax,torch,array_api_strict``
for more; all four gave 0 differences, 2026-11-27)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from op_table import CASES, Case, X, make_inputs

import xad
from xad.forward_mode import MissingRuleError

_UNBATCHED = ("recurrent", "index_put")  # refused by name (tests/test_vmap.py)
_BACKENDS = os.environ.get("XAD_OP_TABLE_BACKENDS", "numpy").split(",")


def _floats(out) -> list:
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o for o in outs if isinstance(o, xad.Tensor) and o.dtype.is_floating]


def _as_list(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _tensor(a: np.ndarray) -> xad.Tensor:
    return xad.tensor(a, dtype=xad.float64) if np.issubdtype(a.dtype, np.floating) \
        else xad.tensor(a)


def _backend(name: str):
    try:
        return xad.use_backend(name)
    except Exception as e:  # noqa: BLE001 (jax not installed)
        pytest.skip(f"{name}: {e}")


_MANY = [c for c in CASES if len(make_inputs(c)) >= 2]


@pytest.mark.parametrize("backend", _BACKENDS)
@pytest.mark.parametrize("case", _MANY, ids=lambda c: c.name)
def test_jvp_along_one_input(case: Case, backend: str):
    host = make_inputs(case)
    rng = np.random.default_rng(3)
    eps = case.tol.get("eps", 1e-6)
    rtol, atol = case.tol.get("rtol", 1e-5), case.tol.get("atol", 1e-6)
    with _backend(backend):
        xs = [_tensor(a) for a in host]
        for j, a in enumerate(host):
            if not np.issubdtype(a.dtype, np.floating):
                continue
            v = rng.standard_normal(a.shape)

            def f(z, j=j):
                return _floats(case.fn(X, *xs[:j], z, *xs[j + 1:]))

            _, tan = xad.jvp(f, (xs[j],), (xad.tensor(v, dtype=xad.float64),))
            hi = f(xs[j] + xad.tensor(v * eps, dtype=xad.float64))
            lo = f(xs[j] - xad.tensor(v * eps, dtype=xad.float64))
            assert len(tan) == len(hi), f"{case.name}: {len(tan)} tangents, {len(hi)} outputs"
            for t, h, low in zip(tan, hi, lo):
                np.testing.assert_allclose(t.numpy(), (h.numpy() - low.numpy()) / (2 * eps),
                                           rtol=rtol, atol=atol, err_msg=f"{case.name} d/x{j}")


def _masks(n: int) -> list[tuple[bool, ...]]:
    one = [tuple(i == j for i in range(n)) for j in range(n)]
    return one + ([tuple(i != j for i in range(n)) for j in range(n)] if n > 2 else [])


@pytest.mark.parametrize("backend", _BACKENDS)
@pytest.mark.parametrize("case", _MANY, ids=lambda c: c.name)
def test_vmap_with_some_inputs_unbatched(case: Case, backend: str):
    host = make_inputs(case)
    with _backend(backend):
        for m in _masks(len(host)):
            args = [np.stack([a, a * 1.01 + 0.001]) if b else a for a, b in zip(host, m)]
            axes = tuple(0 if b else None for b in m)
            try:
                got = _as_list(xad.vmap(lambda *a: _as_list(case.fn(X, *a)), in_axes=axes)(
                    *[_tensor(a) for a in args]))
            except (MissingRuleError, NotImplementedError) as e:  # refused by name
                assert any(f"'{p}' has no batching rule" in str(e) for p in _UNBATCHED), e
                continue
            for i in range(2):
                want = _as_list(case.fn(X, *[_tensor(a[i] if b else a)
                                            for a, b in zip(args, m)]))
                assert len(got) == len(want), case.name
                for g, w in zip(got, want):
                    np.testing.assert_allclose(g.numpy()[i], w.numpy(), rtol=1e-10,
                                               atol=1e-12, err_msg=f"{case.name} {axes}")
