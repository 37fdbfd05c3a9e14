"""The table of operations every backend is checked on (in the style of JAX's
``lax_autodiff_test``): forward against NumPy, gradients and second derivatives against
finite differences.

Each :class:`Case` names the primitives (``xad.ops.REGISTRY`` names) it exercises, the input
shapes (which broadcast where an operation broadcasts), the input domain (positive for
``log``, away from kinks for ``abs``/``relu``/``maximum``, no ties for ``max``), and the
derivative orders checked. Its function ``fn(m, *inputs)`` is written once for two
namespaces: :data:`X` (xad, on tensors) and :data:`N` (NumPy, on the host copies of the same
inputs), so the forward reference is the same expression evaluated by NumPy.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg
import scipy.special

import xad

__all__ = ["Case", "CASES", "X", "N", "make_inputs"]


# ----- the two namespaces -----------------------------------------------------------------
class _X:
    """xad, plus the few helpers the table needs (constants, a custom Function, ...)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(xad, name)

    @staticmethod
    def const(a: Any) -> xad.Tensor:
        """A host array as a constant tensor on the current backend."""
        return xad.tensor(a)

    @staticmethod
    def cube(x: xad.Tensor) -> xad.Tensor:
        return Cube.apply(x)

    attention = staticmethod(xad.ops.attention.attention)
    cross_entropy_mean = staticmethod(xad.ops.cross_entropy.cross_entropy_mean)
    layer_norm = staticmethod(xad.ops.normalization.layer_norm)
    add_layer_norm = staticmethod(xad.ops.normalization.add_layer_norm)
    mse_mean = staticmethod(xad.ops.mse.mse_mean)
    linear_act = staticmethod(xad.ops.linalg.linear_act)

    @staticmethod
    def nll_rows(x: Any, t: Any, ignore: int | None = None) -> Any:
        return xad.ops.nll.nll_rows(x, xad.tensor(t), ignore)

    @staticmethod
    def split_heads(y: Any, lead: Any, heads: int, to_heads: Any) -> Any:
        q, k, v = xad.ops.attention.split_heads(y, lead, heads, to_heads)
        return q * 1.0 + k * 2.0 - v * v
    max_indexed = staticmethod(xad.ops.reduce.max_indexed)

    @staticmethod
    def max_dim(x: Any, axis: int, keepdims: bool = False, largest: bool = True) -> Any:
        return xad.ops.torch_conventions.max_dim(x, axis, keepdims, largest=largest)[0]
    torch_cholesky = staticmethod(xad.ops.torch_conventions.cholesky)

    @staticmethod
    def lu_packed(x: Any) -> Any:
        return xad.ops.lu.lu_factor(x)[0]

    @staticmethod
    def recurrent(gx: Any, h0: Any, c0: Any, w: Any, mode: str, reverse: bool = False) -> Any:
        """Every step's states of one recurrent layer, ``hs`` (times ``cs`` for the LSTM)."""
        hs, cs = xad.ops.recurrent.recurrent(gx, h0, c0, w, mode=mode, reverse=reverse)
        return hs if cs is None else hs * cs
    im2col = staticmethod(xad.ops.convolution.im2col)
    col2im = staticmethod(xad.ops.convolution.col2im)

    @staticmethod
    def scale_shift(x: xad.Tensor, y: xad.Tensor) -> xad.Tensor:
        return ScaleShift.apply(x, y)

    @staticmethod
    def roundtrip(x: xad.Tensor) -> xad.Tensor:
        """Through another backend and back (``to_backend`` both ways)."""
        other = "array_api_strict" if x.backend.name == "numpy" else "numpy"
        return (x.to(other) * 2.0).to(x.backend)


def _np_im2col(x: Any, kernel: Any, stride: Any = (1, 1), dilation: Any = (1, 1),
               pads: Any = (0, 0, 0, 0)) -> Any:
    """The windows by explicit loops: ``(C, kh, kw, Ho, Wo, N)``."""
    xp = np.pad(x, ((0, 0), (0, 0), pads[:2], pads[2:]))
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    ho = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    wo = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((x.shape[1], kh, kw, ho, wo, x.shape[0]))
    for i in range(kh):
        for j in range(kw):
            for a in range(ho):
                for b in range(wo):
                    out[:, i, j, a, b, :] = xp[:, :, a * sh + i * dh, b * sw + j * dw].T
    return out


def _np_col2im(cols: Any, shape: Any, kernel: Any, stride: Any = (1, 1),
               dilation: Any = (1, 1), pads: Any = (0, 0, 0, 0)) -> Any:
    """The adjoint of :func:`_np_im2col`, by explicit loops."""
    n, c, h, w = shape
    z = np.zeros((n, c, h + pads[0] + pads[1], w + pads[2] + pads[3]))
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    for i in range(kh):
        for j in range(kw):
            for a in range(cols.shape[3]):
                for b in range(cols.shape[4]):
                    z[:, :, a * sh + i * dh, b * sw + j * dw] += cols[:, i, j, a, b, :].T
    return z[:, :, pads[0]:pads[0] + h, pads[2]:pads[2] + w]


def _erf(x: Any) -> Any:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


class _N:
    """NumPy under xad's names, for the forward references."""

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    const = staticmethod(np.asarray)
    erf = staticmethod(_erf)
    erfc = staticmethod(scipy.special.erfc)
    erfinv = staticmethod(scipy.special.erfinv)
    xlogy = staticmethod(scipy.special.xlogy)
    ndtri = staticmethod(scipy.special.ndtri)
    gammainc = staticmethod(scipy.special.gammainc)
    gammaincc = staticmethod(scipy.special.gammaincc)
    bessel_j0 = staticmethod(scipy.special.j0)
    bessel_j1 = staticmethod(scipy.special.j1)
    lgamma = staticmethod(scipy.special.gammaln)
    digamma = staticmethod(scipy.special.psi)

    @staticmethod
    def mse_mean(x: Any, t: Any) -> Any:
        return np.mean((x - t) ** 2)

    @staticmethod
    def nll_rows(x: Any, t: Any, ignore: int | None = None) -> Any:
        t = np.asarray(t)
        picked = np.take_along_axis(x, t[..., None], axis=-1)[..., 0]
        return -picked * (t != ignore)
    im2col = staticmethod(_np_im2col)
    col2im = staticmethod(_np_col2im)

    @staticmethod
    def cube(x: Any) -> Any:
        return x * x * x

    @staticmethod
    def lu_packed(x: Any) -> Any:
        """SciPy's (LAPACK's) packed LU factor of each matrix."""
        flat = x.reshape((-1,) + x.shape[-2:])
        return np.stack([scipy.linalg.lu_factor(m)[0] for m in flat]).reshape(x.shape)

    @staticmethod
    def max_indexed(x: Any, axis: int, keepdims: bool = False, largest: bool = True) -> Any:
        return (np.max if largest else np.min)(x, axis=axis, keepdims=keepdims)

    max_dim = max_indexed

    @staticmethod
    def scale_shift(x: Any, y: Any) -> Any:
        return x * y + y

    @staticmethod
    def torch_cholesky(x: Any, upper: bool = False) -> Any:
        if not upper:
            return np.linalg.cholesky(x)
        return np.linalg.cholesky(x.conj().swapaxes(-1, -2)).conj().swapaxes(-1, -2)

    @staticmethod
    def roundtrip(x: Any) -> Any:
        return x * 2.0

    @staticmethod
    def linear(x: Any, w: Any, b: Any = None) -> Any:
        return x @ w.T + (0 if b is None else b)

    @staticmethod
    def split_heads(y: Any, lead: Any, heads: int, to_heads: Any) -> Any:
        t = y.reshape(tuple(lead) + (3, heads, -1))
        q, k, v = (np.transpose(t[:, :, i], to_heads) for i in range(3))
        return q * 1.0 + k * 2.0 - v * v

    @classmethod
    def linear_act(cls, x: Any, w: Any, b: Any, act: str) -> Any:
        return getattr(cls, act)(cls.linear(x, w, b))

    @staticmethod
    def relu(x: Any) -> Any:
        return np.maximum(x, 0.0)

    @staticmethod
    def split_copy(x: Any, sizes: Any, axis: int = 0) -> Any:
        return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=axis))

    @staticmethod
    def standardize(x: Any, axes: Any, eps: float = 1e-5) -> Any:
        axes = axes if isinstance(axes, tuple) else (axes,)
        d = x - x.mean(axis=axes, keepdims=True)
        return d / np.sqrt((d * d).mean(axis=axes, keepdims=True) + eps)

    @staticmethod
    def sigmoid(x: Any) -> Any:
        return 1 / (1 + np.exp(-x))

    @staticmethod
    def softplus(x: Any) -> Any:
        return np.log1p(np.exp(x))

    @staticmethod
    def gelu(x: Any, approximate: str = "none") -> Any:
        if approximate == "tanh":
            return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        return 0.5 * x * (1 + _erf(x / math.sqrt(2)))

    @staticmethod
    def var(x: Any, axis: Any = None, correction: float = 0, keepdims: bool = False) -> Any:
        return np.var(x, axis=axis, ddof=correction, keepdims=keepdims)

    @staticmethod
    def std(x: Any, axis: Any = None, correction: float = 0, keepdims: bool = False) -> Any:
        return np.std(x, axis=axis, ddof=correction, keepdims=keepdims)

    @staticmethod
    def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))

    @staticmethod
    def softmax(x: Any, axis: int = -1, empty_zero: bool = False) -> Any:
        e = np.exp(x)
        s = e.sum(axis=axis, keepdims=True)
        return e / np.where(s > 0, s, 1.0) if empty_zero else e / s

    @staticmethod
    def attention(q: Any, k: Any, v: Any, scale: float) -> Any:
        s = q @ np.swapaxes(k, -1, -2) * scale
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True) @ v

    @staticmethod
    def log_softmax(x: Any, axis: int = -1) -> Any:
        return x - np.log(np.sum(np.exp(x), axis=axis, keepdims=True))

    @staticmethod
    def class_pick(x: Any, t: Any, ignore: Any = None) -> Any:
        """Each row's entry at its class by NumPy's ``take_along_axis``; 0 where ignored."""
        ok = (t >= 0) & (t < x.shape[-1]) & (t != ignore)
        picked = np.take_along_axis(x, np.where(ok, t, 0)[..., None], axis=-1)[..., 0]
        rows = (t[..., None] == np.arange(x.shape[-1])) & ok[..., None]
        return np.where(ok, picked, 0.0), rows.astype(x.dtype)

    @classmethod
    def cross_entropy_mean(cls, x: Any, t: Any, ignore: Any = None) -> Any:
        picked, rows = cls.class_pick(cls.log_softmax(x, axis=-1), t, ignore)
        return -picked.sum() / rows.sum()

    @classmethod
    def layer_norm(cls, x: Any, axes: Any, w: Any, b: Any, eps: float = 1e-5) -> Any:
        return cls.standardize(x, tuple(axes), eps) * w + b

    @classmethod
    def add_layer_norm(cls, x: Any, t: Any, axes: Any, w: Any, b: Any, t_bias: Any = None
                       ) -> Any:
        return cls.layer_norm(x + (t if t_bias is None else t + t_bias), axes, w, b)

    @staticmethod
    def recurrent(gx: Any, h: Any, c: Any, w: Any, mode: str, reverse: bool = False) -> Any:
        """The loop written out, PyTorch's LSTM (``i f g o``) and GRU (``r z n``) formulas."""
        sig = lambda a: 1 / (1 + np.exp(-a))  # noqa: E731
        n, out = h.shape[-1], [None] * gx.shape[0]
        for t in (reversed(range(gx.shape[0])) if reverse else range(gx.shape[0])):
            gh = h @ w.T
            if mode == "gru":
                r, z = sig(gx[t, :, :n] + gh[:, :n]), sig(gx[t, :, n:2 * n] + gh[:, n:2 * n])
                nn_ = np.tanh(gx[t, :, 2 * n:] + r * gh[:, 2 * n:])
                h = (1 - z) * nn_ + z * h
            elif mode == "lstm":
                a = gx[t] + gh
                c = sig(a[:, n:2 * n]) * c + sig(a[:, :n]) * np.tanh(a[:, 2 * n:3 * n])
                h = sig(a[:, 3 * n:]) * np.tanh(c)
            else:
                h = np.tanh(gx[t] + gh) if mode == "rnn_tanh" else np.maximum(gx[t] + gh, 0)
            out[t] = h * c if mode == "lstm" else h
        return np.stack(out)

    @staticmethod
    def complex_from_parts(re: Any, im: Any) -> Any:
        return re + 1j * im

    @staticmethod
    def as_strided(x: Any, size: Any, stride: Any, storage_offset: Any = 0) -> Any:
        flat = np.ascontiguousarray(x).reshape(-1)[storage_offset:]
        return np.lib.stride_tricks.as_strided(flat, size, [s * flat.itemsize for s in stride])

    @staticmethod
    def view_as_real(z: Any) -> Any:
        return np.stack([z.real, z.imag], -1)

    @staticmethod
    def view_as_complex(x: Any) -> Any:
        return x[..., 0] + 1j * x[..., 1]

    @staticmethod
    def astype(x: Any, dtype: Any) -> Any:
        return np.asarray(x).astype(dtype)


X = _X()
N = _N()


# ----- custom Functions -----------------------------------------------------------------
class Cube(xad.Function):
    """x**3 with a hand-written (differentiable) backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3.0 * x * x


class ScaleShift(xad.Function):
    """x * y + y with broadcasting: backward returns full-shape gradients the engine reduces."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y + y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y, g * (x + 1.0)


# ----- the table --------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One table entry: ``fn(m, *inputs)`` on inputs of ``shapes`` drawn from ``domain``.

    ``prims`` are the REGISTRY names it exercises (default: ``name`` up to its first ``:``);
    ``order`` is 1 (gradcheck) or 2 (also gradgradcheck); ``tol`` overrides gradcheck's
    ``eps``/``atol``/``rtol``; ``zeros`` are flat positions of the first input set to exactly
    0 (the points where a rule has a special case, e.g. ``prod``).
    """

    name: str
    fn: Callable[..., Any]
    shapes: tuple[tuple[int, ...], ...]
    domain: str | tuple[str, ...] = "real"
    prims: tuple[str, ...] = ()
    order: int = 2
    tol: dict = field(default_factory=dict)
    zeros: tuple[int, ...] = ()

    @property
    def arity(self) -> int:
        return len(self.shapes)

    @property
    def primitives(self) -> tuple[str, ...]:
        return self.prims or (self.name.split(":")[0],)


def _draw(rng: np.random.Generator, shape: tuple[int, ...], domain: str) -> np.ndarray:
    n = math.prod(shape)
    if domain == "real":
        a = rng.standard_normal(n)
    elif domain == "pos":
        a = rng.uniform(0.5, 2.0, n)
    elif domain == "nonzero":  # away from the kink at 0
        a = rng.choice([-1.0, 1.0], n) * rng.uniform(0.3, 1.5, n)
    elif domain == "unit":
        a = rng.uniform(-0.8, 0.8, n)
    elif domain == "grid":  # near integers ...
        a = rng.integers(-3, 4, n) + rng.uniform(-0.1, 0.1, n)
    elif domain == "halfgrid":  # ... near half-integers: never within 0.3 of a "grid" value
        a = rng.integers(-3, 3, n) + 0.5 + rng.uniform(-0.1, 0.1, n)
    elif domain == "distinct":  # no ties (for max/min)
        a = (rng.permutation(n) - n / 2) * 0.3 + rng.uniform(-0.05, 0.05, n)
    elif domain == "small":
        a = rng.uniform(-0.5, 0.5, n)
    else:
        raise ValueError(f"unknown domain {domain!r}")
    return a.reshape(shape).astype(np.float64)


def make_inputs(case: Case) -> list[np.ndarray]:
    """The case's inputs as float64 host arrays (the same on every run and backend)."""
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    doms = (case.domain,) * case.arity if isinstance(case.domain, str) else case.domain
    xs = [_draw(rng, s, d) for s, d in zip(case.shapes, doms)]
    if case.zeros:
        xs[0].reshape(-1)[list(case.zeros)] = 0.0
    return xs


_MASK = np.array([[True, False, True, True], [False, False, True, False],
                  [True, True, False, False]])
_SOFTMAX_MASK = np.array([[True, False, True, True], [False] * 4, [True, True, False, True]])
_COND = np.array([[True, False, True, False]])


def _setitem_slice(m, x, v):
    y = x * 1.0
    y[1:3] = v
    return y * 2.0


def _setitem_int_array(m, x, v):
    y = x + 0.0
    y[:, [0, 2]] = v * v
    return y * y


def _split_sections(m, x):
    a, b = m.split(x, 2, axis=1)
    return a * 2.0, b * b


def _split_indices(m, x):
    return tuple(m.split(x, [1, 3], axis=0))


def _spd(m, x):
    """A symmetric positive-definite matrix made from ``x``."""
    return m.matmul(x, x.mT) + m.eye(x.shape[-1], dtype=m.float64)


def _eig_invariants(m, r):
    """What of ``eig``'s result is free of the eigenvalues' order and the eigenvectors'
    phases: sums over the eigenvalues, ``|V|^2`` weighted by them, ``V diag(e^(w/2)) V^-1``."""
    w, v = r
    f = v @ (m.exp(w * 0.5)[..., None] * m.linalg.inv(v))
    return ((m.real(w) ** 2).sum(axis=-1), (m.imag(w) ** 2).sum(axis=-1),
            (m.abs(v) ** 2 * m.real(w)[..., None, :]).sum(axis=-1), m.real(f), m.imag(f))


def _linalg_cases() -> list[Case]:
    """xad.linalg's primitives (sign-invariant losses where a decomposition's vectors have a
    free sign); tests/test_linalg.py checks them against JAX."""
    la = lambda m: m.linalg  # noqa: E731
    well = lambda m, x: x + 3.0 * m.eye(x.shape[-1], dtype=m.float64)  # noqa: E731
    return [
        Case("inv", lambda m, x: la(m).inv(well(m, x)), ((2, 3, 3),)),
        Case("solve:matrix", lambda m, a, b: la(m).solve(well(m, a), b), ((3, 3), (2, 3, 2))),
        Case("solve:vector", lambda m, a, b: la(m).solve(well(m, a), b), ((3, 3), (3,))),
        Case("det", lambda m, x: la(m).det(x), ((2, 3, 3),), prims=("det", "cofactor")),
        Case("slogdet", lambda m, x: la(m).slogdet(well(m, x)).logabsdet, ((3, 3),)),
        Case("pinv:tall", lambda m, x: la(m).pinv(x), ((4, 3),)),
        Case("pinv:wide", lambda m, x: la(m).pinv(x), ((2, 4),)),
        Case("cholesky", lambda m, x: la(m).cholesky(_spd(m, x)), ((2, 3, 3),)),
        Case("cholesky:upper", lambda m, x: la(m).cholesky(_spd(m, x), upper=True), ((3, 3),)),
        Case("torch_cholesky:upper", lambda m, x: m.torch_cholesky(_spd(m, x), upper=True),
             ((2, 3, 3),)),
        Case("eigh", lambda m, x: (lambda r: (r.eigenvalues, r.eigenvectors ** 2))(
            la(m).eigh(x + x.mT)), ((3, 3),)),
        Case("eigvalsh", lambda m, x: la(m).eigvalsh(x + x.mT), ((2, 3, 3),)),
        Case("eig", lambda m, x: _eig_invariants(m, la(m).eig(x)), ((3, 3),)),
        Case("eig:batch", lambda m, x: _eig_invariants(m, la(m).eig(x)), ((2, 3, 3),)),
        Case("eig:complex", lambda m, x, y: _eig_invariants(
            m, la(m).eig(m.complex_from_parts(x, y))), ((3, 3), (3, 3))),
        Case("eig:eigvals", lambda m, x, y: (lambda w: (m.real(w * w).sum(axis=-1),
                                                        (m.imag(w) ** 3).sum(axis=-1)))(
            la(m).eigvals(m.complex_from_parts(x, y))), ((3, 3), (3, 3))),
        Case("svd:tall", lambda m, x: (lambda r: (r.U ** 2, r.S, r.Vh ** 2))(
            la(m).svd(x, full_matrices=False)), ((4, 3),)),
        Case("svd:wide", lambda m, x: (lambda r: (r.U ** 2, r.S, r.Vh ** 2))(
            la(m).svd(x, full_matrices=False)), ((2, 4),)),
        Case("svd:square_full", lambda m, x: (lambda r: (r.U @ r.Vh, r.S))(la(m).svd(x)),
             ((3, 3),)),
        Case("svdvals", lambda m, x: la(m).svdvals(x), ((2, 4, 3),)),
        Case("qr", lambda m, x: (lambda r: (r.Q ** 2, r.R ** 2))(la(m).qr(x)), ((4, 3),)),
        # rows swapped (the largest entry of each column comes last) and not
        Case("lu_factor", lambda m, x: m.lu_packed(x), ((2, 3, 3),)),
        Case("lu_factor:no_swap", lambda m, x: m.lu_packed(well(m, x)), ((3, 3),)),
        Case("lu_factor:tall", lambda m, x: m.lu_packed(x), ((2, 4, 3),)),
        Case("lu_factor:wide", lambda m, x: m.lu_packed(x), ((3, 5),)),
    ]


def _complex_cases() -> list[Case]:
    """Real results of complex tensors: the gradient of a complex tensor z is
    dL/dRe(z) + i dL/dIm(z)."""
    z = lambda m, x, y: m.complex_from_parts(x, y)  # noqa: E731
    return [
        Case("complex_from_parts", lambda m, x, y: m.abs(z(m, x, y)), ((2, 3), (2, 3)),
             prims=("complex_from_parts", "abs")),
        Case("real", lambda m, x, y: m.real(z(m, x, y)) * x, ((3,), (3,))),
        Case("imag", lambda m, x, y: m.imag(z(m, x, y)) ** 2 * x, ((3,), (3,))),
        Case("conj", lambda m, x, y: m.imag(m.conj(z(m, x, y))) * y, ((3,), (3,)),
             prims=("conj", "imag")),
        Case("view_as_real", lambda m, x, y: m.view_as_real(z(m, x, y).T) ** 2
             * x.T[..., None], ((2, 3), (2, 3)), prims=("view_as_real", "complex_from_parts")),
        Case("view_as_complex", lambda m, x, y: m.abs(m.view_as_complex(m.stack([x, y], -1))
                                                      ** 2 * y), ((3,), (3,)),
             prims=("view_as_complex", "abs")),
        # sliding windows (overlapping: their gradients add up) from an offset
        Case("as_strided", lambda m, x, y: m.as_strided(x * 1.0, (3, 3), (2, 1), 1) ** 2 * y,
             ((2, 4), (3, 3))),
        # products and quotients of complex tensors: the gradient takes the conjugate
        Case("multiply:complex", lambda m, x, y, u, v: m.real(z(m, x, y) * z(m, u, v))
             + m.imag(z(m, x, y) * z(m, u, v)) * u, ((3,), (3,), (3,), (3,)),
             prims=("multiply", "real", "imag")),
        Case("multiply:complex_real", lambda m, x, y, u: m.imag(z(m, x, y) * u) * u
             + m.abs(u * z(m, y, x)), ((3,), (3,), (3,)), prims=("multiply", "abs")),
        *[Case(f"{name}:complex", (lambda f: lambda m, x, y: m.real(f(m, z(m, x, y)))
                                   + m.imag(f(m, z(m, x, y))) * y)(fn), ((3,), (3,)),
               domain=("pos", "real"), prims=(prim, "real", "imag"))
          for name, prim, fn in [
              ("exp", "exp", lambda m, v: m.exp(v)), ("log", "log", lambda m, v: m.log(v)),
              ("sin", "sin", lambda m, v: m.sin(v)), ("tanh", "tanh", lambda m, v: m.tanh(v)),
              ("sqrt", "sqrt", lambda m, v: m.sqrt(v)), ("sinh", "sinh", lambda m, v: m.sinh(v)),
              ("pow_scalar", "pow_scalar", lambda m, v: v ** 3),
              ("pow", "pow", lambda m, v: v ** (v * 0.5))]],
        Case("divide:complex", lambda m, x, y, u, v: m.real(z(m, x, y) / z(m, u, v)) * x
             + m.imag(u / z(m, u, v)), ((3,), (3,), (3,), (3,)),
             domain=("real", "real", "pos", "pos"), prims=("divide", "real", "imag")),
        # xad.fft's primitives (tests/test_fft.py checks them against JAX)
        Case("fftn:fft", lambda m, x: m.abs(m.fft.fft(x, n=6)) ** 2, ((5,),)),
        Case("fftn:ifftn_ortho", lambda m, x, y: m.real(m.fft.ifftn(z(m, x, y), norm="ortho"))
             * y, ((2, 3), (2, 3))),
        Case("rfftn:rfft", lambda m, x: m.imag(m.fft.rfft(x, axis=0)) ** 2, ((4, 2),)),
        Case("rfftn:rfftn", lambda m, x: m.abs(m.fft.rfftn(x, s=(3, 5), axes=(0, 1))), ((2, 4),)),
        Case("irfftn:irfft", lambda m, x, y: m.fft.irfft(z(m, x, y), n=5) ** 2,
             ((3,), (3,))),
        Case("irfftn:irfftn", lambda m, x, y: m.fft.irfftn(z(m, x, y), norm="forward") ** 2,
             ((2, 3), (2, 3))),
    ]


def _case_list() -> list[Case]:
    c: list[Case] = []
    add = c.append
    # ----- arithmetic, broadcasting, Python scalars ------------------------------------
    for name, f in [("add", lambda m, x, y: x + y), ("subtract", lambda m, x, y: x - y),
                    ("multiply", lambda m, x, y: x * y)]:
        add(Case(f"{name}:bcast", f, ((3, 1), (4,))))
        add(Case(f"{name}:bcast3d", f, ((2, 3, 4), (3, 1))))
        add(Case(f"{name}:0d", f, ((), (3,))))
    add(Case("add:scalar", lambda m, x: x + 2.0, ((3,),)))
    add(Case("add:rscalar", lambda m, x: 2.0 + x, ((3,),)))
    add(Case("subtract:rscalar", lambda m, x: 2.0 - x, ((2, 3),)))
    add(Case("multiply:scalar", lambda m, x: x * 3.0, ((2, 3),)))
    add(Case("multiply:int", lambda m, x: 3 * x, ((2, 3),)))
    add(Case("multiply:self", lambda m, x: x * x, ((2, 3),)))
    add(Case("divide:bcast", lambda m, x, y: x / y, ((3, 1), (4,)), ("real", "nonzero")))
    add(Case("divide:0d", lambda m, x, y: x / y, ((2, 3), ()), ("real", "nonzero")))
    add(Case("divide:rscalar", lambda m, x: 3.0 / x, ((3,),), "nonzero"))
    add(Case("divide:scalar", lambda m, x: x / 4.0, ((3,),)))
    add(Case("pow:bcast", lambda m, x, y: x ** y, ((3, 1), (4,)), ("pos", "real")))
    add(Case("pow_scalar:square", lambda m, x: m.pow(x, 2), ((2, 3),)))
    add(Case("pow_scalar:cube_neg", lambda m, x: m.pow(x, 3), ((4,),)))
    add(Case("pow_scalar:half", lambda m, x: m.pow(x, 0.5), ((4,),), "pos"))
    add(Case("pow_scalar:zero", lambda m, x: m.pow(x, 0) + x, ((4,),)))
    add(Case("pow_scalar:neg_exp", lambda m, x: m.pow(x, -1.5), ((4,),), "pos"))
    add(Case("pow:rscalar", lambda m, x: 2.0 ** x, ((2, 3),)))
    add(Case("pow:rscalar_fn", lambda m, x: m.pow(0.5, x), ((2, 3),)))
    # zero bases: d/dy is 0 there (not NaN); |x| ** (> 1) is smooth at 0 in x as well
    add(Case("pow:zero_base", lambda m, x, y: m.abs(x) ** (y + 1.0), ((2, 3), (3,)),
             ("nonzero", "pos"), prims=("pow", "abs"), zeros=(1, 5), order=1))
    add(Case("negative", lambda m, x: -x, ((2, 3),)))
    # ----- unary math and activations --------------------------------------------------
    for name, dom in [("exp", "real"), ("log", "pos"), ("log1p", "pos"), ("expm1", "real"),
                      ("sqrt", "pos"), ("abs", "nonzero"), ("sin", "real"), ("cos", "real"),
                      ("tan", "unit"), ("tanh", "real"), ("sigmoid", "real"),
                      ("relu", "nonzero"), ("softplus", "real"), ("erf", "real")]:
        grad = ("_grad",) if name in ("relu", "tanh", "sigmoid") else ()  # fused gradients
        add(Case(name, (lambda n: lambda m, x: getattr(m, n)(x))(name), ((2, 3),), dom,
                 prims=(name,) + tuple(name + s for s in grad)))
    add(Case("erf:wide", lambda m, x: m.erf(x * 2.0), ((3, 4),)))
    add(Case("gelu", lambda m, x: m.gelu(x), ((2, 3),), prims=("gelu", "gelu_grad")))
    add(Case("gelu:wide", lambda m, x: m.gelu(x * 3.0), ((3, 4),), prims=("gelu",)))
    add(Case("gelu:tanh", lambda m, x: m.gelu(x, approximate="tanh"), ((2, 3),),
             prims=("tanh", "multiply")))
    # ----- binary functions ------------------------------------------------------------
    add(Case("maximum:bcast", lambda m, x, y: m.maximum(x, y), ((3, 1), (4,)),
             ("grid", "halfgrid")))
    add(Case("minimum:bcast", lambda m, x, y: m.minimum(x, y), ((2, 3, 4), (3, 1)),
             ("grid", "halfgrid")))
    add(Case("maximum:scalar", lambda m, x: m.maximum(x, 0.0), ((2, 3),), "nonzero"))
    add(Case("where:bcast", lambda m, x, y: m.where(m.const(_COND), x, y), ((3, 1), (4,))))
    add(Case("where:scalar", lambda m, x: m.where(x > 0.0, x, 0.0), ((2, 3),), "nonzero"))
    add(Case("clip", lambda m, x: m.clip(x, -1.0, 1.0), ((3, 4),), "halfgrid"))
    add(Case("clip:lo_only", lambda m, x: m.clip(x, -1.0, None), ((3, 4),), "halfgrid"))
    add(Case("clip:tensor_bounds", lambda m, x, lo: m.clip(x, lo, 1.0), ((3, 4), (4,)),
             ("halfgrid", "grid"), prims=("maximum", "minimum")))
    # ----- reductions ------------------------------------------------------------------
    for axis, kd in [(None, False), (1, False), ((0, 2), True), (-1, True)]:
        tag = f"axis={axis},keepdims={kd}"
        for name, dom in [("sum", "real"), ("mean", "real"), ("max", "distinct"),
                          ("min", "distinct"), ("prod", "nonzero"), ("logsumexp", "real")]:
            prims = ("sum", "multiply") if name == "mean" else \
                ("exp", "log", "sum") if name == "logsumexp" else ()
            add(Case(f"{name}:{tag}", (lambda n, a, k: lambda m, x: getattr(m, n)(
                x, axis=a, keepdims=k))(name, axis, kd), ((2, 3, 4),), dom, prims=prims))
    for axis, kd, largest in [(1, False, True), (-1, True, False)]:
        for op in ("max_indexed", "max_dim"):
            add(Case(f"{op}:axis={axis},largest={largest}", (lambda o, a, k, lg: lambda m, x:
                     getattr(m, o)(x, a, k, lg))(op, axis, kd, largest), ((2, 3, 4),),
                     "distinct"))
    # prod at zeros: along axis 1 of (2, 3, 4), fibers with 0, 1, 2 and 3 zeros
    z3 = (0, 1, 9, 14, 15, 19, 23)  # [0,0,0] [0,0,1] [0,2,1] [1,0,2] [1,0,3] [1,1,3] [1,2,3]
    for axis, kd in [(1, False), ((0, 2), True), (-1, False)]:
        add(Case(f"prod:zeros,axis={axis},keepdims={kd}", (lambda a, k: lambda m, x: m.prod(
            x, axis=a, keepdims=k))(axis, kd), ((2, 3, 4),), "nonzero", zeros=z3))
    add(Case("prod:one_zero", lambda m, x: m.prod(x), ((2, 3),), "nonzero", zeros=(4,)))
    add(Case("prod:two_zeros", lambda m, x: m.prod(x), ((2, 3),), "nonzero", zeros=(1, 4)))
    for corr in (0, 1):
        for name in ("var", "std"):
            add(Case(f"{name}:correction={corr}", (lambda n, cr: lambda m, x: getattr(m, n)(
                x, axis=1, correction=cr))(name, corr), ((3, 4),),
                prims=("var",) + (("sqrt",) if name == "std" else ())))
    add(Case("var:all_keepdims", lambda m, x: m.var(x, keepdims=True), ((2, 3),)))
    add(Case("sum:0d", lambda m, x: m.sum(x), ((),)))
    add(Case("attention", lambda m, q, k, v: m.attention(q, k, v, 0.7),
             ((2, 3, 4), (2, 5, 4), (2, 5, 2))))
    add(Case("attention:2d", lambda m, q, k, v: m.attention(q, k, v, 0.5),
             ((3, 2), (4, 2), (4, 3))))
    add(Case("attention:negative_scale", lambda m, q, k, v: m.attention(q, k, v, -0.6),
             ((2, 3, 4), (2, 5, 4), (2, 5, 2))))  # scale outside the exponential
    add(Case("recurrent:lstm", lambda m, gx, h, c, w: m.recurrent(gx, h, c, w, "lstm"),
             ((3, 2, 8), (2, 2), (2, 2), (8, 2))))
    add(Case("recurrent:gru_reverse", lambda m, gx, h, w: m.recurrent(
        gx, h, None, w, "gru", reverse=True), ((3, 2, 6), (2, 2), (6, 2))))
    add(Case("recurrent:rnn_tanh", lambda m, gx, h, w: m.recurrent(gx, h, None, w, "rnn_tanh"),
             ((3, 2, 2), (2, 2), (2, 2))))
    add(Case("softmax", lambda m, x: m.softmax(x, axis=-1), ((3, 4),)))
    add(Case("softmax:axis0", lambda m, x: m.softmax(x, axis=0), ((3, 4),)))
    add(Case("softmax:empty_zero", lambda m, x: m.softmax(  # row 1 all masked: zeros
        m.where(m.const(_SOFTMAX_MASK), x, -math.inf), axis=-1, empty_zero=True), ((3, 4),),
        prims=("softmax", "where")))
    add(Case("split_copy", lambda m, x: m.split_copy(x, [1, 2, 1], axis=1)[0::2],
             ((3, 4),)))  # the middle piece unused: its gradient is zeros
    add(Case("standardize", lambda m, x: m.standardize(x, -1), ((3, 4),)))
    add(Case("standardize:axes", lambda m, x, w: m.standardize(x, (0, 2), eps=0.1) * w,
             ((2, 3, 4), (3, 1)), prims=("standardize", "multiply")))
    add(Case("log_softmax", lambda m, x: m.log_softmax(x, axis=1), ((3, 4),)))
    add(Case("cross_entropy_mean", lambda m, x: m.cross_entropy_mean(
        x, m.const(np.array([2, 0, 3]))), ((3, 4),)))
    add(Case("cross_entropy_mean:ignore", lambda m, x: m.cross_entropy_mean(
        x, m.const(np.array([1, -100, 3, 0])), -100) * m.cross_entropy_mean(
        x * x, m.const(np.array([1, 2, 3, 2])), 2), ((4, 4),),
        prims=("cross_entropy_mean", "multiply")))
    add(Case("layer_norm", lambda m, x, w, b: m.layer_norm(x, (1, 2), w, b),
             ((2, 3, 4), (3, 4), (3, 4))))
    add(Case("add_layer_norm", lambda m, x, t, w, b: m.add_layer_norm(x, t, (1, 2), w, b),
             ((2, 3, 4), (2, 3, 4), (3, 4), (3, 4))))
    add(Case("add_layer_norm:last", lambda m, x, t, w, b: m.add_layer_norm(x, t, (2,), w, b),
             ((2, 3, 4), (2, 3, 4), (4,), (4,))))
    add(Case("add_layer_norm:t_bias", lambda m, x, t, c, w, b: m.add_layer_norm(
        x, t, (2,), w, b, t_bias=c), ((2, 3, 4), (2, 3, 4), (4,), (4,), (4,))))
    add(Case("mse_mean", lambda m, x, t: m.mse_mean(x, t), ((3, 4), (3, 4))))
    add(Case("nll_rows", lambda m, x: m.nll_rows(x, [[2, 0, 3], [1, 1, 0]]), ((2, 3, 4),)))
    add(Case("nll_rows:ignore", lambda m, x: m.nll_rows(x, [2, 1, 3], 1), ((3, 4),)))
    add(Case("log_softmax:axis0", lambda m, x: m.log_softmax(x, axis=0), ((3, 2, 4),)))
    add(Case("cumsum:axis1", lambda m, x: m.cumsum(x, axis=1), ((3, 4),)))
    add(Case("cumsum:axis0", lambda m, x: m.cumsum(x, axis=0), ((3, 4),)))
    add(Case("cumsum:flat", lambda m, x: m.cumsum(x), ((2, 3),), prims=("cumsum", "reshape")))
    add(Case("cumprod:axis1", lambda m, x: m.cumprod(x, axis=1), ((3, 4),)))
    # the tangent's own tangent is not exact at zeros (its rule is PyTorch's, first order);
    # reverse mode's second order is, by tests/test_torch_reductions.py
    add(Case("cumprod:zeros", lambda m, x: m.cumprod(x, axis=1), ((3, 4),), zeros=(1, 5, 6, 11),
             order=1))
    add(Case("cumprod:flat", lambda m, x: m.cumprod(x), ((2, 3),), prims=("cumprod", "reshape")))
    # ----- matmul, einsum, tensordot ---------------------------------------------------
    mm = lambda m, x, y: x @ y  # noqa: E731
    for tag, shapes in [("2d", ((3, 4), (4, 2))), ("batched", ((2, 3, 4), (2, 4, 2))),
                        ("bcast_batch", ((2, 1, 3, 4), (3, 4, 2))),
                        ("vec_mat", ((4,), (4, 2))), ("mat_vec", ((3, 4), (4,))),
                        ("vec_vec", ((4,), (4,))), ("batch_vec", ((2, 3, 4), (4,))),
                        ("vec_batch", ((3,), (2, 3, 4))), ("outer_k1", ((3, 1), (1, 4))),
                        ("outer_k1_batched", ((2, 3, 1), (1, 4)))]:
        add(Case(f"matmul:{tag}", mm, shapes))
    add(Case("matmul:fn", lambda m, x, y: m.matmul(x, y), ((3, 4), (4, 2))))
    add(Case("linear", lambda m, x, w, b: m.linear(x, w, b), ((5, 3), (4, 3), (4,))))
    add(Case("linear:batched", lambda m, x, w, b: m.linear(x, w, b), ((2, 5, 3), (4, 3), (4,))))
    add(Case("linear:vector_nobias", lambda m, x, w: m.linear(x, w), ((3,), (4, 3))))
    for name, perm in (("split_heads", (0, 2, 1, 3)), ("split_heads:seq_first", (1, 2, 0, 3))):
        add(Case(name, (lambda p: lambda m, y: m.split_heads(y, (2, 3), 2, p))(perm),
                 ((6, 12),), prims=("split_heads",)))
    for act in ("relu", "gelu"):  # bias and activation in one kernel
        add(Case(f"linear_act:{act}", (lambda a: lambda m, x, w, b: m.linear_act(x, w, b, a))(
            act), ((2, 5, 3), (4, 3), (4,)), prims=("linear_act", f"{act}_grad")))
    for tag, spec, shapes in [
            ("ij,jk->ik", "ij,jk->ik", ((3, 4), (4, 2))),
            ("ii->i", "ii->i", ((3, 3),)),
            ("ij->", "ij->", ((3, 4),)),
            ("ellipsis_batch", "...ij,...jk->...ik", ((2, 3, 4), (2, 4, 2))),
            ("ellipsis_bcast", "...ij,...jk->...ik", ((2, 1, 3, 4), (3, 4, 2))),
            ("outer", "i,j->ij", ((3,), (4,))),
            ("summed_in_one", "ij,j->j", ((3, 4), (4,))),
            ("implicit", "ij,jk", ((3, 4), (4, 2))),
            ("trace", "ii", ((3, 3),)),
            ("three", "ij,jk,kl->il", ((2, 3), (3, 4), (4, 2)))]:
        add(Case(f"einsum:{tag}", (lambda s: lambda m, *xs: m.einsum(s, *xs))(spec), shapes))
    add(Case("tensordot:axes1", lambda m, x, y: m.tensordot(x, y, axes=1), ((2, 3), (3, 4)),
             prims=("einsum",)))
    add(Case("tensordot:axes2", lambda m, x, y: m.tensordot(x, y, axes=2),
             ((2, 3, 4), (3, 4, 2)), prims=("einsum",)))
    add(Case("tensordot:pairs", lambda m, x, y: m.tensordot(x, y, axes=([1, 0], [0, 2])),
             ((3, 2, 4), (2, 5, 3)), prims=("einsum",)))
    c.extend(_linalg_cases())
    c.extend(_complex_cases())
    c.extend(_torch_breadth_cases())
    # ----- sliding windows (convolution, pooling) -----------------------------------------
    win = ((2, 3), (2, 1), (1, 2), (1, 0, 2, 1))  # kernel, stride, dilation, pads
    add(Case("im2col", lambda m, x: m.im2col(x, (2, 2)) * 2.0, ((2, 3, 3, 4),)))
    add(Case("im2col:strided_dilated_padded", lambda m, x: m.im2col(x, *win) ** 2,
             ((1, 2, 5, 6),)))
    add(Case("col2im", lambda m, c: m.col2im(c, (2, 3, 3, 4), (2, 2)) * 2.0,
             ((3, 2, 2, 2, 3, 2),)))
    add(Case("col2im:tiles", lambda m, c: m.col2im(c, (1, 2, 4, 6), (2, 2), (2, 2)) * 2.0,
             ((2, 2, 2, 2, 3, 1),)))
    add(Case("col2im:strided_dilated_padded", lambda m, c: m.col2im(c, (1, 2, 5, 6), *win) ** 2,
             ((2, 2, 3, 3, 5, 1),)))
    # ----- shape operations ------------------------------------------------------------
    add(Case("reshape", lambda m, x: m.reshape(x, (4, 3)) * 2.0, ((2, 6),)))
    add(Case("reshape:infer", lambda m, x: m.reshape(x, (-1,)), ((2, 3),)))
    add(Case("permute_dims", lambda m, x: m.permute_dims(x, (2, 0, 1)), ((2, 3, 4),)))
    add(Case("permute_dims:transpose", lambda m, x: m.transpose(x), ((2, 3, 4),)))
    add(Case("permute_dims:transpose_axes", lambda m, x: m.transpose(x, (1, 0, 2)),
             ((2, 3, 4),)))
    add(Case("permute_dims:T", lambda m, x: x.T @ x, ((3, 2),), prims=("permute_dims",
                                                                        "matmul")))
    add(Case("reshape:squeeze", lambda m, x: m.squeeze(x, axis=1), ((3, 1, 2),)))
    add(Case("reshape:squeeze_all", lambda m, x: m.squeeze(x), ((1, 3, 1),)))
    add(Case("reshape:expand_dims", lambda m, x: m.expand_dims(x, axis=1) * x, ((3, 4),)))
    add(Case("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 3, 4)), ((3, 1),)))
    add(Case("concat:axis0", lambda m, x, y: m.concat([x, y], axis=0), ((2, 3), (1, 3))))
    add(Case("concat:axis-1", lambda m, x, y, z: m.concat([x, y, z], axis=-1),
             ((2, 1), (2, 3), (2, 2))))
    add(Case("concat:stack", lambda m, x, y: m.stack([x, y], axis=1), ((2, 3), (2, 3)),
             prims=("concat", "reshape")))
    add(Case("getitem:split_sections", _split_sections, ((2, 4),)))
    add(Case("getitem:split_indices", _split_indices, ((4, 2),)))
    add(Case("flip:axis", lambda m, x: m.flip(x, axis=1) * x, ((3, 4),)))
    add(Case("flip:all", lambda m, x: m.flip(x), ((2, 3),)))
    add(Case("diagonal", lambda m, x: m.diagonal(x, -1, -2, -1) * 2.0, ((2, 4, 3),)))
    add(Case("diagonal:planes", lambda m, x: m.diagonal(x, 1, 0, 2), ((3, 2, 4),),
             prims=("diagonal", "permute_dims")))
    # ----- indexing --------------------------------------------------------------------
    gi = ("getitem", "index_add")
    for tag, f in [("slice", lambda m, x: x[1:3, ::2]), ("int", lambda m, x: x[1]),
                   ("neg_int", lambda m, x: x[-1, 2]),
                   ("none_ellipsis", lambda m, x: x[None, ..., 1]),
                   ("bool_mask", lambda m, x: x[_MASK]),
                   ("bool_mask_tensor", lambda m, x: x[m.const(_MASK)]),
                   ("int_list_repeats", lambda m, x: x[[0, 0, 2]]),
                   ("int_array_repeats", lambda m, x: x[:, np.array([1, 1, 3, 0])]),
                   ("int_tensor_2d", lambda m, x: x[m.const(np.array([[0, 2], [2, 2]]))]),
                   ("two_arrays", lambda m, x: x[[0, 2, 0], [1, 3, 1]])]:
        add(Case(f"getitem:{tag}", f, ((3, 4),), prims=gi))
    add(Case("index_put:slice", _setitem_slice, ((4, 3), (3,)), prims=("index_put",)))
    add(Case("index_put:int_array", _setitem_int_array, ((3, 4), (3, 1)),
             prims=("index_put",)))
    # ----- casts, copies, custom functions, backends ------------------------------------
    add(Case("astype:f32_roundtrip", lambda m, x: m.astype(
        m.astype(x, m.float32) * 3.0, m.float64), ((2, 3),),
        tol={"eps": 1e-2, "atol": 1e-4, "rtol": 1e-3}))
    add(Case("astype:f32_to_f64", lambda m, x: m.astype(
        m.astype(x, m.float32), m.float64) * x, ((2, 3),), order=1,
        tol={"eps": 1e-2, "atol": 1e-4, "rtol": 1e-3}))
    add(Case("clone", lambda m, x: x.copy() * 2.0 if m is N else x.clone() * 2.0, ((3,),)))
    add(Case("function:cube", lambda m, x: m.cube(x), ((2, 3),), prims=("multiply",)))
    add(Case("function:bcast", lambda m, x, y: m.scale_shift(x, y), ((3, 1), (4,)),
             prims=("multiply", "add")))
    add(Case("to_backend", lambda m, x: m.roundtrip(x) * x, ((2, 3),)))
    # ----- the Array API's other elementwise functions (xad/ops/elementwise_math.py) ------
    for name, dom in [("asin", "unit"), ("acos", "unit"), ("atan", "real"), ("sinh", "real"),
                      ("cosh", "real"), ("asinh", "real"), ("atanh", "unit"),
                      ("log2", "pos"), ("log10", "pos")]:
        grad = ("_grad",) if name in ("relu", "tanh", "sigmoid") else ()  # fused gradients
        add(Case(name, (lambda n: lambda m, x: getattr(m, n)(x))(name), ((2, 3),), dom,
                 prims=(name,) + tuple(name + s for s in grad)))
    add(Case("acosh", lambda m, x: m.acosh(x + 1.0), ((2, 3),), "pos"))
    add(Case("atan2:bcast", lambda m, x, y: m.atan2(x, y), ((3, 1), (4,)), "nonzero"))
    add(Case("hypot:bcast", lambda m, x, y: m.hypot(x, y), ((3, 1), (4,)), "nonzero"))
    add(Case("logaddexp:bcast", lambda m, x, y: m.logaddexp(x, y), ((2, 3), (3,))))
    add(Case("logaddexp:scalar", lambda m, x: m.logaddexp(x, 0.5), ((3,),)))
    add(Case("copysign", lambda m, x, y: m.copysign(x, y) * y, ((2, 3), (2, 3)), "nonzero",
             prims=("copysign", "multiply")))
    add(Case("remainder", lambda m, x, y: m.remainder(x, y + 3.0), ((2, 3), (3,)),
             ("halfgrid", "pos")))
    add(Case("nextafter:bcast", lambda m, x, y: m.nextafter(x, y) * y, ((2, 3), (3,)),
             prims=("nextafter", "multiply")))
    # ----- compositions ----------------------------------------------------------------
    add(Case("mlp", lambda m, x, w, b: m.sum(m.tanh(x @ w + b) ** 2, axis=1),
             ((5, 3), (3, 4), (4,)), prims=("matmul", "add", "tanh", "sum")))
    return c


_IG_A = np.array([[0.3, 1.5, 25.0], [4.0, 0.8, 2.0]])


def _torch_breadth_cases() -> list[Case]:
    """PyTorch's special functions and data-dependent operations (tests/test_torch_missing.py
    checks them against torch)."""
    return [
        Case("erfc", lambda m, x: m.erfc(x * 2.0), ((2, 3),)),
        Case("erfinv", lambda m, x: m.erfinv(x), ((2, 3),), "unit"),
        Case("ndtri", lambda m, x: m.ndtri(x * 0.5 + 0.5), ((2, 3),), "unit"),
        # gradients to x only (PyTorch's): the shape a is a constant; 25 takes Temme's expansion
        Case("gammainc", lambda m, x: m.gammainc(m.const(_IG_A), x), ((2, 3),), "pos"),
        Case("gammaincc", lambda m, x: m.gammaincc(m.const(_IG_A), x * 3.0 + 24.0), ((2, 3),)),
        Case("bessel_j0", lambda m, x: m.bessel_j0(x * 4.0), ((2, 3),),
             prims=("bessel_j0", "bessel_j1")),
        Case("bessel_j1", lambda m, x: m.bessel_j1(x * 4.0), ((2, 3),),
             prims=("bessel_j1", "bessel_j0")),
        Case("lgamma", lambda m, x: m.lgamma(x), ((2, 3),), "pos", prims=("lgamma", "digamma")),
        Case("lgamma:negative", lambda m, x: m.lgamma(x), ((2, 3),), "halfgrid"),
        Case("digamma", lambda m, x: m.digamma(x), ((2, 3),), "pos"),
        Case("digamma:negative", lambda m, x: m.digamma(x), ((2, 3),), "halfgrid"),
        Case("fmod", lambda m, x, y: m.fmod(x, y + 3.0), ((2, 3), (3,)), ("halfgrid", "pos")),
        Case("fmod:negative", lambda m, x, y: m.fmod(x, -y - 3.0), ((2, 3), (3,)),
             ("halfgrid", "pos")),
        Case("xlogy", lambda m, x, y: m.xlogy(x, y), ((2, 3), (3,)), ("real", "pos")),
        Case("xlogy:zeros", lambda m, x, y: m.xlogy(x, y), ((2, 3), (3,)), ("real", "pos"),
             zeros=(0, 4)),
    ]


CASES: list[Case] = _case_list()
