"""What the differential fuzzers against PyTorch share (tests/test_torch_subset_fuzz.py,
tests/test_torch_semantics_fuzz.py): a case's result made comparable (``norm``), the
comparison (``same``, with each fuzzer's tolerances), and one case run on a module
(``run``: a refusal is a result too)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from xad import as_torch

torch = pytest.importorskip("torch")
T = as_torch.namespace()["torch"]


def norm(r):
    """``r`` (tensors, dtypes, sequences, numbers) as tuples and NumPy arrays."""
    if isinstance(r, (T.Tensor, torch.Tensor)):
        d = str(r.dtype).rsplit(".", 1)[-1]
        a = r.detach().cpu().numpy() if isinstance(r, torch.Tensor) else r.detach().numpy()
        return ("tensor", tuple(r.shape), d, np.asarray(a))
    if isinstance(r, (tuple, list)):
        return [type(r).__name__ if isinstance(r, list) else "tuple", *[norm(v) for v in r]]
    if isinstance(r, (T.DType, torch.dtype)):
        return ("dtype", str(r).rsplit(".", 1)[-1])
    if isinstance(r, (bool, int, float, str)) or r is None:
        return r
    return ("other", type(r).__name__)


def same(a, b, tols: dict, signed_zeros: bool = False) -> bool:
    """Whether the normalised ``a`` and ``b`` agree: shapes and dtypes exactly, a dtype in
    ``tols`` within its tolerance (NaN equal to NaN; with ``signed_zeros`` the signs of
    zeros too), any other dtype exactly."""
    if isinstance(a, tuple) and a and a[0] == "tensor" and isinstance(b, tuple):
        if a[:3] != b[:3]:
            return False
        x, y = a[3], b[3]
        tol = tols.get(a[2])
        if tol is None:
            return bool(np.array_equal(x, y))
        if not np.allclose(x, y, rtol=tol, atol=tol, equal_nan=True):
            return False
        zero = (x == 0) & (y == 0)
        return not signed_zeros or bool(np.array_equal(np.signbit(x[zero]),
                                                       np.signbit(y[zero])))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, tols, signed_zeros) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-6) or (math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and a == b


def run(case, draw, m, seed: int) -> tuple[str, object]:
    """``("ok", norm(case(m, draw(m, seed))))``, or ``("raised", the error)``."""
    try:
        return "ok", norm(case(m, draw(m, seed)))
    except Exception as e:  # a refusal is a result: both must refuse
        return "raised", type(e).__name__ + ": " + str(e)[:200]
