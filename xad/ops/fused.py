"""Primitives whose forward is one elementwise kernel where the backend fuses
(:meth:`xad.Backend.elementwise`: CuPy's ``cupy.fuse``), and plain array operations
elsewhere: the activations' gradients (``relu_grad``, ``tanh_grad``, ``sigmoid_grad``, each
a primitive with its own gradient rule, so ``create_graph`` differentiates them again; real
dtypes: complex ones keep the composed, holomorphic rule), dropout's scaled mask
(``dropout_mask``, no gradient), and array-level kernels inside other primitives' forwards
(``standardize``: ``centre``, ``inverse_sqrt``; ``softmax``: ``exp_shifted``).

Each is written once, as an expression of operators and ufuncs (:class:`_Fused`); its
number literals are weak scalars (the array's dtype) in a kernel as in the operators.
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from ._apply import Op, apply, binary
from .batching import elementwise_batch
from .tangent import total

__all__ = ["relu_grad", "tanh_grad", "sigmoid_grad", "dropout_mask", "centre", "inverse_sqrt",
           "exp_shifted"]


class _Fused(Op):
    """A primitive whose result is its ``expression(b, *arrays)``: one ``return`` of
    operators and ``b.xp`` ufuncs over its arguments and number literals, run as one kernel
    where the backend fuses (:meth:`xad.Backend.elementwise`) and read by
    ``xad.compile(fuse=True)`` as one line of a fused region, as a plain op's forward."""

    @classmethod
    def forward(cls, b, *arrays):
        name, expression = f"xad_{cls.name}", cls.expression
        return b.elementwise(lambda ns: lambda *a: expression(_Kernel(ns), *a), name)(*arrays)


class _Kernel:
    """The ``b`` an expression sees inside a fused kernel: ``b.xp`` is the kernel's
    namespace."""

    def __init__(self, xp: Any) -> None:
        self.xp = xp


class ReluGrad(_Fused):
    """``g`` where ``y > 0``, else 0: relu's gradient for its output ``y``."""

    name = "relu_grad"
    save_inputs = True

    @staticmethod
    def expression(b, y, g):
        # where(), not a multiply by a 0/1 mask: inf * 0 would be NaN (sqrt(relu(x)) at x < 0)
        return b.xp.where(y > 0, g, 0)

    @staticmethod
    def backward(node, gg):
        y, _ = node.inputs
        return None, relu_grad(y, gg)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        y, tg = primals[0], tangents[1]
        return None if tg is None else relu_grad(y, tg)  # flat in y (almost everywhere)


class TanhGrad(_Fused):
    """``g * (1 - y * y)``: tanh's gradient for its output ``y``."""

    name = "tanh_grad"
    save_inputs = True

    @staticmethod
    def expression(b, y, g):
        return g * (1 - y * y)

    @staticmethod
    def backward(node, gg):
        y, g = node.inputs
        gy = gg * g * y * -2.0 if node.needs_grad(0) else None
        return gy, (tanh_grad(y, gg) if node.needs_grad(1) else None)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (y, g), (ty, tg) = primals, tangents
        return total(out, None if tg is None else tanh_grad(y, tg),
                     None if ty is None else g * y * ty * -2)


class SigmoidGrad(_Fused):
    """``g * y * (1 - y)``: the sigmoid's gradient for its output ``y``."""

    name = "sigmoid_grad"
    save_inputs = True

    @staticmethod
    def expression(b, y, g):
        return g * y * (1 - y)

    @staticmethod
    def backward(node, gg):
        y, g = node.inputs
        gy = gg * g * (1.0 - 2.0 * y) if node.needs_grad(0) else None
        return gy, (sigmoid_grad(y, gg) if node.needs_grad(1) else None)

    batch = classmethod(elementwise_batch)

    @staticmethod
    def jvp(primals, tangents, out):
        (y, g), (ty, tg) = primals, tangents
        return total(out, None if tg is None else sigmoid_grad(y, tg),
                     None if ty is None else g * (1 - y * 2) * ty)


class DropoutMask(_Fused):
    """``scale`` where ``u >= p``, else 0, in ``u``'s dtype (no gradient): ``p`` and
    ``scale`` are kernel arguments (:meth:`xad.Backend.scalar`), so one kernel serves
    every rate."""

    name = "dropout_mask"
    differentiable = False

    @staticmethod
    def expression(b, u, p, scale):
        return b.xp.where(u >= p, scale, 0)

    @classmethod
    def forward(cls, b, u, p):
        d = u.dtype
        return super().forward(b, u, b.scalar(p, d), b.scalar(1.0 / (1.0 - p), d))

    batch = classmethod(elementwise_batch)


# ----- array-level kernels inside other primitives' forwards ------------------------------
def _centre(ns: Any) -> Any:
    def centre(x: Any, total: Any, r: Any) -> tuple[Any, Any]:
        d = x - total * r
        return d, d * d
    return centre


def _inverse_sqrt(ns: Any) -> Any:
    return lambda total, r, eps: 1.0 / ns.sqrt(total * r + eps)


def _exp_shifted(ns: Any) -> Any:
    return lambda x, m: ns.exp(x - m)


def centre(b: Any, x: Any, total: Any, r: float) -> tuple[Any, Any]:
    """``(d, d * d)`` for ``d = x - total * r`` (``total`` a kept-dims sum): one kernel
    where ``b`` fuses (standardize's forward)."""
    return b.elementwise(_centre, "xad_centre")(x, total, b.scalar(r, x.dtype))


def inverse_sqrt(b: Any, total: Any, r: float, eps: float) -> Any:
    """``1 / sqrt(total * r + eps)``: one kernel where ``b`` fuses."""
    d = total.dtype
    return b.elementwise(_inverse_sqrt, "xad_inverse_sqrt")(total, b.scalar(r, d),
                                                           b.scalar(eps, d))


def exp_shifted(b: Any, x: Any, m: Any) -> Any:
    """``exp(x - m)`` (``m`` a kept-dims maximum): one kernel where ``b`` fuses."""
    return b.elementwise(_exp_shifted, "xad_exp_shifted")(x, m)


def relu_grad(y: Tensor, g: Tensor) -> Tensor:
    """``where(y > 0, g, 0)`` in one kernel where the backend fuses."""
    return binary(ReluGrad, y, g)


def tanh_grad(y: Tensor, g: Tensor) -> Tensor:
    """``g * (1 - y * y)`` in one kernel where the backend fuses."""
    return binary(TanhGrad, y, g)


def sigmoid_grad(y: Tensor, g: Tensor) -> Tensor:
    """``g * y * (1 - y)`` in one kernel where the backend fuses."""
    return binary(SigmoidGrad, y, g)


def dropout_mask(u: Tensor, p: float) -> Tensor:
    """Dropout's kept-and-scaled mask from uniforms ``u``: ``(u >= p) / (1 - p)``, one
    kernel where the backend fuses (``0 <= p < 1``)."""
    return apply(DropoutMask, u, p=float(p))
