"""The general (non-symmetric) eigendecomposition, ``xad.linalg.eig`` and ``eigvals`` (the
Array API standard's from version 2025.12, and PyTorch's): a primitive forward through the
backend's own ``xp.linalg.eig`` (LAPACK's ``geev`` on the host, cuSOLVER's on CuPy), with
PyTorch's gradient (``linalg_eig_backward``) and tangent (``linalg_eig_jvp``) written in
xad operations, for real and complex matrices.

The results are complex whatever the input (complex64 from float32, complex128 from
float64); each eigenvector has norm 1, as LAPACK returns it, but its phase is arbitrary: a
loss that depends on it is ill-defined, and its gradient raises (PyTorch's check of
``Im diag(V^H gV)``). At repeated eigenvalues the eigenvector gradients are inf/NaN, as
PyTorch's.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..context import HOOKED, context
from ..factories import zeros_like
from ..tensor import Tensor
from ._apply import Op, apply, unary
from .batching import elementwise_batch
from .complex_parts import _is_complex, complex_from_parts, conj, imag, real
from .decompositions import _diag, _diagonal, _gap_inverse
from .device_checks import report_flag
from .elementwise import abs
from .inverses import _check, _mH, solve
from .linalg import matmul
from .shape import expand_dims

__all__ = ["eig", "eigvals", "EigResult"]

_GAUGE_TOL = 1e-2  # PyTorch's allclose(Im diag(V^H gV), 0, rtol=1e-2, atol=1e-2)


class EigResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


def _geev(name: str, b: Any, x: Any) -> Any:
    """``b.xp.linalg.<name>(x)``: a clear error where the backend lacks it or fails."""
    fn = getattr(b.xp.linalg, name, None)
    if fn is None:
        raise NotImplementedError(f"linalg.{name}: the {b.name} backend's linalg has no {name} "
                                  f"(the Array API standard has it from version 2025.12); "
                                  f"move the tensor to a backend that has it: x.to('numpy'), "
                                  f"an explicit copy")
    try:
        return fn(x)
    except (ValueError, RuntimeError) as e:  # numpy's LinAlgError, torch's _LinAlgError
        raise ValueError(f"linalg.{name}: the {b.name} backend failed on shape "
                         f"{tuple(x.shape)}, dtype {x.dtype} ({type(e).__name__}: {e}). Where "
                         f"the backend lacks {name} (the standard has it from version "
                         f"2025.12), move the tensor to one that has it: x.to('numpy')") from e


def _complex(b: Any, a: Any) -> Any:
    """``a`` as complex: NumPy's own ``eig`` gives real arrays where every eigenvalue is."""
    xp = b.xp
    if xp.isdtype(a.dtype, "complex floating"):
        return a
    return xp.astype(a, xp.complex64 if a.dtype == xp.float32 else xp.complex128)


def _check_gauge(d: Tensor) -> None:
    """Raise (at once on the host, at the next host read on CuPy) where ``Im d`` is not
    within PyTorch's tolerance of 0 (NaN fails too, as in PyTorch's ``allclose``)."""
    report_flag(~(abs(imag(d)) <= _GAUGE_TOL),
                f"linalg.eig backward: the eigenvectors are specified up to multiplication "
                f"by e^(i phi) each, and the loss depends on that phase (|Im diag(V^H gV)| > "
                f"{_GAUGE_TOL}), so its gradient is ill-defined (PyTorch raises too). Use a "
                f"loss invariant under V -> V e^(i phi): of |V|, of V diag(f(L)) V^-1, or of "
                f"the eigenvalues alone")


def _eig_grad(w: Tensor, v: Tensor, gw: Tensor | None, gv: Tensor | None) -> Tensor:
    """PyTorch's ``linalg_eig_backward``: ``V^-H (diag(gL) + conj(F) o (V^H gV - V^H V
    diag(Re diag(V^H gV)))) V^H``, ``F_ij = 1 / (L_j - L_i)`` (the second term projects onto
    unit-norm columns); with ``gV`` unused, ``V^-H diag(gL) V^H``."""
    vh = _mH(v)
    if gv is None:
        assert gw is not None  # the engine calls the rule with at least one gradient
        return solve(vh, expand_dims(gw, axis=-1) * vh)
    vhgv = matmul(vh, gv)
    d = _diagonal(vhgv)
    _check_gauge(d)
    proj = vhgv - matmul(vh, v * expand_dims(real(d), axis=-2))
    inner = proj * conj(_gap_inverse(w)) + _diag(_diagonal(proj) if gw is None else gw)
    return solve(vh, matmul(inner, vh))


class Eig(Op):
    """``real_input``: the input is real, so the gradient is the real part of the complex
    rule's (PyTorch's ``handle_r_to_c``) and the tangent is made complex first."""

    name = "eig"
    library = True
    save_output = True
    materialize_grads = False

    @staticmethod
    def forward(b, x, real_input):
        w, v = _geev("eig", b, x)
        return _complex(b, w), _complex(b, v)

    @staticmethod
    def backward(node, gw, gv):
        ga = _eig_grad(node.output(0), node.output(1), gw, gv)
        return real(ga) if node.params["real_input"] else ga

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out, real_input):
        """PyTorch's ``linalg_eig_jvp``: with ``dP = V^-1 dA V``, ``dL = diag(dP)`` and
        ``dV = dX - V Re diag(V^H dX)``, ``dX = V (F o dP)``."""
        w, v = out
        da = tangents[0]
        if real_input:
            da = complex_from_parts(da, zeros_like(da))
        dp = solve(v, matmul(da, v))
        dx = matmul(v, _gap_inverse(w) * dp)
        return _diagonal(dp), dx - v * expand_dims(real(_diagonal(matmul(_mH(v), dx))), axis=-2)


class Eigvals(Op):
    """The eigenvalues alone, where no derivative is asked for (:func:`eigvals` goes through
    :class:`Eig` otherwise, so that the eigenvectors its rule needs are in the same order)."""

    name = "eigvals"
    library = True
    differentiable = False

    @staticmethod
    def forward(b, x):
        return _complex(b, _geev("eigvals", b, x))


def _check_eig(name: str, x: Tensor) -> None:
    _check(name, x)
    if not (x.dtype.is_floating or _is_complex(x)):
        raise TypeError(f"linalg.{name}: needs a floating or complex matrix, got dtype "
                        f"{x.dtype}; cast it first (x.astype(xad.float64))")


def eig(x: Tensor, /) -> EigResult:
    """Eigenvalues and eigenvectors (columns, each of norm 1) of a (batch of) square real or
    complex matrices, both complex. Their order is the backend's; gradients need a loss
    invariant under each eigenvector's phase.

    Example:
        >>> import xad
        >>> w, v = xad.linalg.eig(xad.tensor([[2.0, 0.0], [0.0, 3.0]]))
        >>> w.tolist(), w.dtype
        ([(2+0j), (3+0j)], xad.complex64)
    """
    _check_eig("eig", x)
    return EigResult(*apply(Eig, x, real_input=not _is_complex(x)))


def eigvals(x: Tensor, /) -> Tensor:
    """The eigenvalues (complex) of a (batch of) square matrices; gradient ``V^-H diag(g)
    V^H``, through :func:`eig` (PyTorch's way).

    Example:
        >>> import xad
        >>> xad.linalg.eigvals(xad.tensor([[0.0, -1.0], [1.0, 0.0]])).tolist()
        [1j, -1j]
    """
    _check_eig("eigvals", x)
    if x.requires_grad or context.mode & HOOKED:  # a derivative may be asked for
        return eig(x).eigenvalues
    return unary(Eigvals, x)
