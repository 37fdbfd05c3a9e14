"""Values and gradients at infinities, NaNs, huge and tiny numbers against PyTorch 2.13, on
every backend: each case is one function written for ``torch`` and for ``xad`` (its
PyTorch-convention spelling: ``nn.functional``, tensor methods), evaluated on float64 rows
that hold ``+-inf``, ``nan``, ``+-1e30``, subnormals and signed zeros, then on seeded random
rows drawn from the same special values (``XAD_FUZZ_N`` rows; 6 by default).

The functions of the Array API standard (``xad.max``, ``xad.prod``, ``xad.var``) are
compared too where PyTorch and JAX agree; where xad deliberately follows JAX instead
(``xad.std`` and ``xad.linalg.vector_norm`` at 0, ``xad.atan2(0, 0)``), the case uses the
PyTorch-convention spelling (``Tensor.std``, ``Tensor.norm``, ``Tensor.atan2``).

PyTorch's CPU gradient at a NaN input depends on the tensor's size for ``elu``, ``selu``,
``celu``, ``hardswish`` (NaN from its vectorised loop, 1 from its scalar loop, which runs
tensors under a vector's width, loop tails and CUDA), ``hardtanh`` and ``relu6`` (0, or 1);
xad gives the vectorised loop's (JAX's for ``elu``), and the rows here go as one batch of a
multiple of 16 elements, so PyTorch runs that loop.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest

import xad
import xad.nn.functional as XF

torch = pytest.importorskip("torch")
TF = torch.nn.functional

inf, nan = math.inf, math.nan
ROWS = [
    [0.0, -inf, 1.0, 2.0],
    [-inf, -inf, -inf, -inf],
    [inf, 1.0, 0.0, -1.0],
    [1e30, -1e30, 3.0, 0.0],
    [nan, 0.0, 1.0, 2.0],
    [0.0, 0.0, 0.0, 0.0],
    [-1e-40, 1e-40, 0.0, -0.0],
    [88.0, 89.0, 90.0, -100.0],
    [-inf, -3.0, 3.0, inf],
    [nan, -inf, 0.0, inf],
    [1e30, inf, -inf, 1e30],
]
_SPECIAL = [inf, -inf, nan, 0.0, -0.0, 1e30, -1e30, 1e-40, -3.0, 3.0]


def _fuzz_rows(n: int, seed: int = 0) -> list[list[float]]:
    """``n`` rows of 4: each entry a special value (half the time) or a normal number."""
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(_SPECIAL), (n, 4))
    normal = rng.standard_normal((n, 4)) * 3
    special = np.array(_SPECIAL)[pick]
    return np.where(rng.random((n, 4)) < 0.5, special, normal).tolist()


FUZZ_N = int(os.environ.get("XAD_FUZZ_N", "6"))
ALL_ROWS = np.array(ROWS + _fuzz_rows(FUZZ_N))
def _targets(m, n):
    return m.tensor([i % 4 for i in range(n)])


def _flip(m, x):
    return x.flip(1) if m is torch else xad.flip(x, axis=1)


def _f(m):
    return TF if m is torch else XF


# name -> fn(m, x): ``m`` is ``torch`` or ``xad``; x is (rows, 4) float64
CASES = {
    # activations (nn.functional: PyTorch's conventions)
    "elu": lambda m, x: _f(m).elu(x),
    "selu": lambda m, x: _f(m).selu(x),
    "celu": lambda m, x: _f(m).celu(x, 0.5),
    "hardswish": lambda m, x: _f(m).hardswish(x),
    "hardsigmoid": lambda m, x: _f(m).hardsigmoid(x),
    "hardtanh": lambda m, x: _f(m).hardtanh(x),
    "relu6": lambda m, x: _f(m).relu6(x),
    "relu": lambda m, x: _f(m).relu(x),  # (gradient 1 at NaN, at every size: it was 0)
    "leaky_relu": lambda m, x: _f(m).leaky_relu(x, 0.1),
    "softplus": lambda m, x: _f(m).softplus(x),
    "logsigmoid": lambda m, x: _f(m).logsigmoid(x),
    "silu": lambda m, x: _f(m).silu(x),
    "gelu": lambda m, x: _f(m).gelu(x),
    # softmax family and the losses over it
    "softmax": lambda m, x: _f(m).softmax(x, dim=1),
    "softmin": lambda m, x: _f(m).softmin(x, dim=1),
    "normalize": lambda m, x: _f(m).normalize(x, dim=1),
    "cosine_similarity": lambda m, x: _f(m).cosine_similarity(x, x * 0 + 1, dim=1),
    "log_softmax": lambda m, x: _f(m).log_softmax(x, dim=1),
    "logsumexp": lambda m, x: x.logsumexp(1),
    "cross_entropy_none": lambda m, x: _f(m).cross_entropy(
        x, _targets(m, x.shape[0]), reduction="none"),
    "cross_entropy_smooth": lambda m, x: _f(m).cross_entropy(
        x, _targets(m, x.shape[0]), reduction="none", label_smoothing=0.1),
    "kl_div_log_softmax": lambda m, x: _f(m).kl_div(  # (a target that needs no gradient)
        _f(m).log_softmax(x, dim=1), _f(m).softmax(_flip(m, x), dim=1).detach(),
        reduction="none"),
    # reductions: the standard's functions where PyTorch and JAX agree
    "max": lambda m, x: x.amax(1) if m is torch else xad.max(x, axis=1),
    "min": lambda m, x: x.amin(1) if m is torch else xad.min(x, axis=1),
    "prod": lambda m, x: x.prod(1) if m is torch else xad.prod(x, axis=1),
    "var": lambda m, x: x.var(1) if m is torch else xad.var(x, axis=1, correction=1),
    "var_method": lambda m, x: x.var(1),
    # the same in both namespaces: half to each at a tie, all to both where one is NaN
    "maximum": lambda m, x: m.maximum(x, _flip(m, x) * 0.5),
    "minimum": lambda m, x: m.minimum(x * 0.5, _flip(m, x)),
    # PyTorch's conventions (0, not NaN, where the derivative is 0/0)
    "max_dim_method": lambda m, x: x.max(1)[0] * 1 + x.min(dim=1).values,
    "std_method": lambda m, x: x.std(1),
    "norm_method": lambda m, x: x.norm(dim=1),
    "atan2_method": lambda m, x: x.atan2(_flip(m, x)),
}


# PyTorch's own gradient where it is plainly worse: ``logsumexp``'s ``exp(x - lse)`` counts
# tied maxima twice once ``log(n)`` is below their ulp (``[0, 1, 1, 0]`` at ``[.., 1e30,
# 1e30, ..]``); on rows without +inf or NaN the reference is its softmax (``[0, .5, .5,
# 0]``). ``prod``'s
# ``prod / x_i`` where the tensor holds no zero is NaN at an infinity (``[inf, 2, 3]`` gives
# ``[nan, inf, inf]``); the reference is the product of the other elements, each computed
# by torch (JAX's gradient, and PyTorch's own where the tensor holds a zero).
GRAD_REFERENCE = {
    "prod": lambda x, g: torch.stack(
        [x[:, [j for j in range(x.shape[1]) if j != i]].prod(1) for i in range(x.shape[1])], 1),
    "logsumexp": lambda x, g: torch.where((x < inf).all(1, keepdim=True),
                                          TF.softmax(x, dim=1), g),
}


def _run(m, fn, a):
    x = (torch.tensor(a, requires_grad=True) if m is torch else
         xad.tensor(a, dtype=xad.float64, requires_grad=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = fn(m, x)
        y.sum().backward()
    if m is torch:
        return y.detach().numpy(), x.grad.numpy()
    return y.numpy(), x.grad.numpy()


def _bad_rows(u, v):
    """The rows (axis 0) where ``u`` and ``v`` differ (NaN equal to NaN, signs of 0
    ignored)."""
    u, v = np.asarray(u, np.float64), np.asarray(v, np.float64)
    assert u.shape == v.shape, (u.shape, v.shape)
    close = np.isclose(u, v, rtol=1e-6, atol=1e-12, equal_nan=True)
    return sorted(set(np.argwhere(~close)[:, 0].tolist()))


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch(name, xb):
    """Every row four times over, one batch (each row meets every class as a target)."""
    fn = CASES[name]
    a = np.repeat(ALL_ROWS, 4, axis=0)
    tv, tg = _run(torch, fn, a)
    if name in GRAD_REFERENCE:
        tg = GRAD_REFERENCE[name](torch.tensor(a), torch.tensor(tg)).numpy()
    xv, xg = _run(xad, fn, a)
    bad = [f"row {i // 4} {a[i]}: {what} xad {u[i]} torch {v[i]}"
           for what, u, v in (("value", xv, tv), ("gradient", xg, tg))
           for i in _bad_rows(u, v)]
    assert not bad, f"{name} differs from PyTorch:\n" + "\n".join(bad[:20])


@pytest.mark.parametrize("rows", [16, 2048])
def test_max_and_min_are_nan_where_a_slice_holds_nan_at_every_size(xb, rows):
    # JAX's CPU reductions (0.10.2) dropped a NaN from about a thousand rows on: xad.max of
    # a (2048, 8) array with one NaN was finite on the jax backend (NumPy, PyTorch: NaN)
    a = np.random.default_rng(3).standard_normal((rows, 8))
    a[rows // 2, 3] = nan
    x = xad.tensor(a)
    for f in (xad.max, xad.min):
        per_row = f(x, axis=1).numpy()
        assert np.isnan(per_row[rows // 2]) and np.isfinite(np.delete(per_row, rows // 2)).all()
        assert np.isnan(f(x, axis=0).numpy()[3]) and math.isnan(f(x).item())
