"""PyTorch's window functions (``torch.hann_window`` ...) and ``Tensor.norm(p="nuc")``
under ``xad.as_torch`` against torch 2.13 on every backend: each was "not part of the
PyTorch subset" or a ValueError before."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import xad  # noqa: E402
from xad import as_torch  # noqa: E402

T = as_torch.namespace()["torch"]
WINDOWS = [("hann_window", ()), ("hamming_window", ()), ("hamming_window", (0.5, 0.3)),
           ("blackman_window", ()), ("bartlett_window", ()), ("kaiser_window", ()),
           ("kaiser_window", (3.5,))]


@pytest.mark.parametrize("name,extra", WINDOWS)
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_are_torchs(xb, name, extra, periodic):
    for n in (0, 1, 2, 5, 16):
        for xd, td, tol in ((T.float32, torch.float32, 1e-6), (T.float64, torch.float64, 1e-13)):
            got = getattr(T, name)(n, periodic, *extra, dtype=xd)
            want = getattr(torch, name)(n, periodic, *extra, dtype=td).numpy()
            assert got.dtype is xd and tuple(got.shape) == want.shape
            np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=tol)
    assert T.hann_window(4, device="cpu").dtype is xad.float32
    assert T.hann_window(4, requires_grad=True).requires_grad


def test_windows_refuse_bad_input(xb):
    with pytest.raises(ValueError, match="hann_window: window_length must be non-negative"):
        T.hann_window(-1)
    with pytest.raises(TypeError, match="floating dtype"):
        T.bartlett_window(4, dtype=T.int64)


@pytest.mark.parametrize("dim,keepdim", [(None, False), ((0, 2), False), ((2, 0), True),
                                         ([-1, 1], False)])
def test_nuclear_norm_is_torchs(xb, dim, keepdim):
    a = np.random.default_rng(3).standard_normal((2, 3, 4))
    src = a[0] if dim is None else a
    x, t = xad.tensor(src, requires_grad=True), torch.tensor(src, requires_grad=True)
    y, ty = x.norm(p="nuc", dim=dim, keepdim=keepdim), t.norm(p="nuc", dim=dim, keepdim=keepdim)
    assert tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-12)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="p='nuc' needs a 2-D input or two dims"):
        xad.tensor(a).norm(p="nuc")
