"""The matrix exponential, ``matrix_exp``: scaling and squaring with the [13/13] Padé
approximant (Higham 2005), composed of xad operations (``matmul``, ``solve``), so its
gradient, of any order, is that of its parts."""

from __future__ import annotations

import math

from ..factories import eye
from ..tensor import Tensor
from .elementwise import abs as _abs
from .inverses import _check, solve
from .linalg import matmul
from .reduce import max as _max
from .reduce import sum as _sum

__all__ = ["matrix_exp"]

# the [13/13] Padé coefficients and the 1-norm up to which it is exact to float64's
# rounding (Higham 2005, Table 2.3)
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
           1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
           33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _squarings(x: Tensor) -> int:
    """How many times to halve ``x`` for its largest 1-norm to be at most ``theta_13``:
    one explicit host read (PyTorch's matrix_exp reads the norms too)."""
    if not x.size:
        return 0
    n = float(_max(_sum(_abs(x.detach()), axis=-2)).item())
    return 0 if not math.isfinite(n) or n <= _THETA13 else math.ceil(math.log2(n / _THETA13))


def _pade13(a: Tensor) -> Tensor:
    """The [13/13] Padé approximant of ``exp(a)``: ``(V - U)^-1 (V + U)``."""
    b = _PADE13
    i = eye(a.shape[-1], dtype=a.dtype, backend=a._backend)
    a2 = matmul(a, a)
    a4 = matmul(a2, a2)
    a6 = matmul(a4, a2)
    u = matmul(a, matmul(a6, b[13] * a6 + b[11] * a4 + b[9] * a2)
               + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * i)
    v = matmul(a6, b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 \
        + b[2] * a2 + b[0] * i
    return solve(v - u, v + u)


def matrix_exp(x: Tensor, /) -> Tensor:
    """``exp(x)`` of a (batch of) square matrices, ``sum_k x^k / k!`` (PyTorch's
    ``torch.linalg.matrix_exp``): scaled by ``2^-s`` so every matrix's 1-norm is at most
    5.37, the [13/13] Padé approximant, squared ``s`` times; ``s`` is one host read.
    Differentiable (through its matrix products and solve; real matrices).

    Example:
        >>> import xad
        >>> x = xad.tensor([[0.0, 1.0], [0.0, 0.0]])
        >>> xad.linalg.matrix_exp(x).tolist()
        [[1.0, 1.0], [0.0, 1.0]]
    """
    _check("matrix_exp", x)
    if not (x.dtype.is_floating or x.dtype.name.startswith("complex")):
        raise TypeError(f"linalg.matrix_exp: needs a floating or complex tensor, got "
                        f"{x.dtype}; cast it first (x.astype(xad.float64))")
    s = _squarings(x)
    out = _pade13(x * 2.0 ** -s if s else x)
    for _ in range(s):
        out = matmul(out, out)
    return out
