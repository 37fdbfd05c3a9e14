"""``torch.stft``/``torch.istft`` under ``xad.as_torch`` against torch 2.13 in float64 on
every backend: spectra, reconstructions, gradients through both, and PyTorch's errors (both
were "not part of the PyTorch subset" before)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import xad  # noqa: E402
from xad import as_torch  # noqa: E402

T = as_torch.namespace()["torch"]
CASES = [dict(n_fft=8), dict(n_fft=8, hop_length=3, win_length=6, window="hann"),
         dict(n_fft=8, center=False), dict(n_fft=7, hop_length=2, normalized=True),
         dict(n_fft=8, onesided=False, window="hamming")]


def _args(lib, kw: dict) -> dict:
    out = dict(kw)
    if "window" in kw:
        n = kw.get("win_length", kw["n_fft"])
        out["window"] = getattr(lib, f"{kw['window']}_window")(n, dtype=lib.float64)
    return out


@pytest.mark.parametrize("kw", CASES, ids=[str(i) for i in range(len(CASES))])
def test_stft_and_istft_are_torchs(xb, kw):
    a = np.random.default_rng(0).standard_normal((2, 37))
    x, t = T.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's advice to pass a window
        spec, tspec = (lib.stft(v, return_complex=True, **_args(lib, kw))
                       for lib, v in ((T, x), (torch, t)))
        np.testing.assert_allclose(spec.detach().numpy(), tspec.detach().numpy(), atol=1e-12)
        y = T.istft(spec, length=37, **_args(T, kw))
        ty = torch.istft(tspec, length=37, **_args(torch, kw))
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), atol=1e-12)
        if kw.get("center", True):  # (uncentred frames miss the signal's tail)
            np.testing.assert_allclose(y.detach().numpy(), a, atol=1e-12)
        loss, tloss = ((y * y).sum() + spec.abs().sum(), (ty * ty).sum() + tspec.abs().sum())
    loss.backward()
    tloss.backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_stft_of_complex_input_and_the_real_form(xb):
    z = np.random.default_rng(1).standard_normal((2, 20)) * (1 + 0.5j)
    got = T.stft(T.tensor(z), 8, return_complex=True)
    want = torch.stft(torch.tensor(z), 8, return_complex=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)
    back = T.istft(got, 8, return_complex=True, length=20)
    np.testing.assert_allclose(back.numpy(), z, atol=1e-12)
    a = z.real[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch deprecates return_complex=False
        want = torch.stft(torch.tensor(a), 8, return_complex=False).numpy()
    np.testing.assert_allclose(T.stft(T.tensor(a), 8, return_complex=False).numpy(), want,
                               atol=1e-12)


def test_stft_and_istft_errors_are_pytorchs(xb):
    x = T.tensor(np.arange(40.0))
    with pytest.raises(RuntimeError, match="requires the return_complex parameter"):
        T.stft(x, 8)
    with pytest.raises(ValueError, match="win_length <= n_fft"):
        T.stft(x, 8, win_length=9, return_complex=True)
    w = T.hann_window(8, dtype=T.float64)
    spec = T.stft(x, 8, window=w, return_complex=True)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        T.istft(spec, 8, hop_length=8, window=w)  # a periodic Hann window is 0 at each start
        xad.tensor([0.0]).tolist()  # (CuPy reports at the next host read)
    with pytest.raises(ValueError, match="istft: 5 frequencies for n_fft=16"):
        T.istft(spec, 16)


def test_stft_and_istft_are_tensor_methods(xb):
    x = xad.tensor(np.sin(np.arange(40.0)), dtype=xad.float64)
    w = T.hann_window(8, dtype=T.float64)
    spec = x.stft(8, hop_length=2, window=w, return_complex=True)
    np.testing.assert_array_equal(spec.numpy(), T.stft(x, 8, hop_length=2, window=w,
                                                       return_complex=True).numpy())
    np.testing.assert_allclose(spec.istft(8, hop_length=2, window=w, length=40).numpy(),
                               x.numpy(), atol=1e-12)
    want = torch.tensor(x.numpy()).stft(8, hop_length=2, window=torch.hann_window(
        8, dtype=torch.float64), return_complex=True).numpy()
    np.testing.assert_allclose(spec.numpy(), want, atol=1e-12)
