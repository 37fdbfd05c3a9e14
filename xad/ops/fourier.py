"""Discrete Fourier transforms (``xad.fft``'s primitives): the complex transform ``fftn``
(forward or inverse), ``rfftn`` (real input) and ``irfftn`` (real output), each over given
axes at the input's own sizes (``xad.fft`` pads or crops first), forward through the
backend's ``xp.fft``. Each gradient is the adjoint transform: the inverse transform with the
opposite normalisation (``"backward"`` and ``"forward"`` swap, ``"ortho"`` stays).
"""

from __future__ import annotations

from typing import Any

from ..factories import zeros
from ..tensor import Tensor
from ._apply import Op, apply
from .batching import axes_batch
from .complex_parts import real
from .shape import concat, reshape
from .tangent import linear_jvp

__all__ = ["fftn_", "rfftn_", "irfftn_"]

DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _xfft(b: Any) -> Any:
    return b.xp.fft


class Fftn(Op):
    name = "fftn"

    @staticmethod
    def forward(b, x, axes, norm, inverse):
        return (_xfft(b).ifftn if inverse else _xfft(b).fftn)(x, axes=axes, norm=norm)

    @staticmethod
    def backward(node, g):
        p = node.params
        return fftn_(g, p["axes"], DUAL[p["norm"]], not p["inverse"])

    batch = classmethod(axes_batch)

    jvp = classmethod(linear_jvp)


class Rfftn(Op):
    name = "rfftn"

    @staticmethod
    def forward(b, x, axes, norm, n_last):
        return _xfft(b).rfftn(x, axes=axes, norm=norm)

    @staticmethod
    def backward(node, g):
        p = node.params
        last = p["axes"][-1]
        missing = p["n_last"] - g.shape[last]  # the bins rfftn dropped: zeros
        if missing:
            shape = tuple(missing if i == last else s for i, s in enumerate(g.shape))
            g = concat([g, zeros(shape, dtype=g.dtype, backend=g._backend)], axis=last)
        return real(fftn_(g, p["axes"], DUAL[p["norm"]], inverse=True))

    batch = classmethod(axes_batch)

    jvp = classmethod(linear_jvp)


class Irfftn(Op):
    name = "irfftn"

    @staticmethod
    def forward(b, x, axes, norm, n_last):
        s = tuple(x.shape[a] for a in axes[:-1]) + (n_last,)
        return _xfft(b).irfftn(x, s=s, axes=axes, norm=norm)

    @staticmethod
    def backward(node, g):
        p = node.params
        last, n = p["axes"][-1], p["n_last"]
        m = n // 2 + 1
        # the bins irfftn mirrors count twice; the zero and (even n) Nyquist bins once
        w = [1.0] + [2.0] * (m - 1)
        if n % 2 == 0:
            w[-1] = 1.0
        shape = tuple(m if i == last else 1 for i in range(g.ndim))
        wt = reshape(Tensor._constant(g._backend.asarray(w, dtype=g._array.dtype), g._backend),
                     shape)
        return rfftn_(g, p["axes"], DUAL[p["norm"]]) * wt

    batch = classmethod(axes_batch)

    jvp = classmethod(linear_jvp)


def fftn_(x: Tensor, axes: tuple[int, ...], norm: str, inverse: bool = False) -> Tensor:
    """The complex transform of complex ``x`` over ``axes`` (non-negative), at its sizes."""
    return apply(Fftn, x, axes=axes, norm=norm, inverse=inverse)


def rfftn_(x: Tensor, axes: tuple[int, ...], norm: str) -> Tensor:
    """The transform of real ``x`` over ``axes``, half the last axis's bins kept."""
    return apply(Rfftn, x, axes=axes, norm=norm, n_last=x.shape[axes[-1]])


def irfftn_(x: Tensor, axes: tuple[int, ...], norm: str, n_last: int) -> Tensor:
    """The real inverse of ``rfftn_``: ``x`` holds ``n_last // 2 + 1`` bins on the last axis."""
    return apply(Irfftn, x, axes=axes, norm=norm, n_last=n_last)
