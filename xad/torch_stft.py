"""PyTorch's short-time Fourier transform pair, ``torch.stft`` and ``torch.istft``, composed
of xad's padding, sliding frames (``unfold``), FFTs and overlap-add (``F.fold``): gradients
flow through both, on every backend. ``istft``'s check that the windows overlap enough
(PyTorch's "NOLA" error) reads the device at the next host read on CuPy, at once on the
host, as the index range checks do."""

from __future__ import annotations

from . import dtypes as _dt
from . import fft as _fft
from . import ops as _ops
from .factories import ones
from .nn import functional as F
from .ops.device_checks import report_flag
from .tensor import Tensor, install_methods

__all__ = ["stft", "istft"]


def _window(name: str, window: Tensor | None, win_length: int, n_fft: int,
            like: Tensor) -> Tensor:
    """The window (ones by default), zero-padded on both sides to ``n_fft``, as PyTorch's."""
    if not 0 < win_length <= n_fft:
        raise ValueError(f"{name}: expected 0 < win_length <= n_fft, got win_length="
                         f"{win_length}, n_fft={n_fft}")
    if window is None:
        dt = like.dtype.real
        window = ones(win_length, dtype=dt if dt.is_floating else _dt.float32)
    if tuple(window.shape) != (win_length,):
        raise ValueError(f"{name}: expected a 1-D window of size win_length={win_length}, got "
                         f"shape {tuple(window.shape)}")
    left = (n_fft - win_length) // 2
    return F.pad(window, (left, n_fft - win_length - left)) if win_length < n_fft else window


def _frames_of(name: str, x: Tensor, n_fft: int, hop: int, center: bool,
               pad_mode: str) -> Tensor:
    """``(B, n_frames, n_fft)`` frames of a 1-D or 2-D signal, centred by padding."""
    if x.ndim not in (1, 2):
        raise ValueError(f"{name}: expected a 1-D or 2-D (batch, time) input, got shape "
                         f"{tuple(x.shape)}")
    if hop <= 0:
        raise ValueError(f"{name}: expected hop_length > 0, got {hop}")
    x = x.reshape(1, -1) if x.ndim == 1 else x
    if center:
        p = n_fft // 2
        x = F.pad(x.reshape(x.shape[0], 1, -1), (p, p), mode=pad_mode).reshape(x.shape[0], -1)
    if not 0 < n_fft <= x.shape[-1]:
        raise ValueError(f"{name}: expected 0 < n_fft <= the (padded) signal length "
                         f"{x.shape[-1]}, got n_fft={n_fft}")
    return _ops.splits_and_windows.unfold(x, -1, n_fft, hop)


def stft(input: Tensor, n_fft: int, hop_length: int | None = None,  # noqa: A002
         win_length: int | None = None, window: Tensor | None = None, center: bool = True,
         pad_mode: str = "reflect", normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None) -> Tensor:
    """``torch.stft``: the FFT of windowed frames ``hop_length`` apart (default
    ``n_fft // 4``), shape ``(batch?, freq, frames)``; ``onesided`` (the default for real
    input) keeps ``n_fft // 2 + 1`` frequencies; ``normalized`` scales by ``n_fft^-1/2``;
    ``return_complex=False`` gives real and imaginary parts in a last axis of 2.

    Example:
        >>> import xad
        >>> from xad.torch_stft import stft
        >>> stft(xad.ones(8), 4, return_complex=True).shape
        (3, 9)
    """
    cplx = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None and not cplx:
        raise RuntimeError("stft requires the return_complex parameter be given for real "
                           "inputs (PyTorch's rule); return_complex=True is the usual choice")
    onesided = not cplx if onesided is None else onesided
    if onesided and cplx:
        raise RuntimeError("stft: onesided=True needs a real input and window")
    n = win_length or n_fft
    w = _window("stft", window, n, n_fft, input)
    frames = _frames_of("stft", input, n_fft, hop_length or n_fft // 4, center, pad_mode) * w
    spec = _fft.rfft(frames) if onesided else _fft.fft(frames)
    spec = _ops.matrix_transpose(spec * n_fft ** -0.5 if normalized else spec)
    spec = spec[0] if input.ndim == 1 else spec
    if return_complex is False:
        return _ops.stack([_ops.real(spec), _ops.imag(spec)], axis=-1)
    return spec


def _overlap_add(frames: Tensor, hop: int) -> Tensor:
    """``y[t hop + k] += frames[b, t, k]``: ``(B, n_frames, n)`` to ``(B, n + hop (T-1))``."""
    b, t, n = frames.shape
    out = F.fold(_ops.matrix_transpose(frames), (1, n + hop * (t - 1)), (1, n),
                 stride=(1, hop))
    return out.reshape(b, -1)


def istft(input: Tensor, n_fft: int, hop_length: int | None = None,  # noqa: A002
          win_length: int | None = None, window: Tensor | None = None, center: bool = True,
          normalized: bool = False, onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """``torch.istft``: the signal whose :func:`stft` is ``input`` (complex, ``(batch?, freq,
    frames)``): inverse FFTs of the frames, windowed, overlap-added and divided by the
    summed squared window; ``length`` trims or zero-pads the result.

    Example:
        >>> import xad
        >>> from xad.torch_stft import istft, stft
        >>> x = xad.arange(8.0)
        >>> [round(v, 6) for v in istft(stft(x, 4, return_complex=True), 4).tolist()]
        [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    """
    if not input.dtype.is_complex or input.ndim not in (2, 3):
        raise ValueError(f"istft: expected a complex (freq, frames) or (batch, freq, frames) "
                         f"input, got shape {tuple(input.shape)} and dtype {input.dtype}")
    spec = input if input.ndim == 3 else input.reshape(1, *input.shape)
    onesided = spec.shape[-2] != n_fft if onesided is None else onesided
    want = n_fft // 2 + 1 if onesided else n_fft
    if spec.shape[-2] != want or (onesided and return_complex):
        raise ValueError(f"istft: {spec.shape[-2]} frequencies for n_fft={n_fft} with "
                         f"onesided={onesided} (expected {want}; return_complex=True needs "
                         f"onesided=False)")
    hop = hop_length or n_fft // 4
    w = _window("istft", window, win_length or n_fft, n_fft, input)
    frames = _ops.matrix_transpose(spec * n_fft ** 0.5 if normalized else spec)
    frames = _fft.irfft(frames, n=n_fft) if onesided else _fft.ifft(frames)
    if not onesided and not return_complex:
        frames = _ops.real(frames)
    frames = frames * w
    parts = (_ops.real(frames), _ops.imag(frames)) if return_complex else (frames,)
    ys = [_overlap_add(p, hop) for p in parts]
    env = _overlap_add(_ops.broadcast_to(w * w, (1, *frames.shape[1:])), hop)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else env.shape[-1] - (start if center else 0)
    env = env[:, start:end]
    report_flag(env < 1e-11, f"istft: window overlap add min below 1e-11: the windows, {hop} "
                f"samples apart, do not cover every sample (PyTorch's NOLA check); use a "
                f"smaller hop_length or another window")
    ys = [y[:, start:end] / env for y in ys]
    y = ys[0] if len(ys) == 1 else _ops.complex_from_parts(*ys)
    if length is not None and y.shape[-1] < length:
        y = F.pad(y, (0, length - y.shape[-1]))
    return y[0] if input.ndim == 2 else y


install_methods({"stft": stft, "istft": istft})  # x.stft(n_fft, ...), PyTorch's methods
