"""``torch.func`` under ``xad.as_torch``: xad's transforms with PyTorch's names and
signatures (``grad_and_value`` returns ``(grad, value)``, ``vmap`` takes ``in_dims``/
``out_dims``); the numbers are those of :mod:`xad.transforms` and :func:`xad.vmap`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import transforms as _t
from .nn.functional_call import functional_call
from .vmap import vmap as _xvmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
           "linearize", "functional_call"]

grad, vjp, jacrev, jacfwd, linearize = _t.grad, _t.vjp, _t.jacrev, _t.jacfwd, _t.linearize


def grad_and_value(func: Callable, argnums: int | Sequence[int] = 0,
                   has_aux: bool = False) -> Callable:
    """``(grad, value)`` (``(grad, (value, aux))`` with ``has_aux``), as ``torch.func``'s.

    Example:
        >>> import xad
        >>> from xad.torch_func import grad_and_value
        >>> g, v = grad_and_value(lambda x: (x * x).sum())(xad.tensor([3.0]))
        >>> g.tolist(), v.item()
        ([6.0], 9.0)
    """
    vg = _t.value_and_grad(func, argnums, has_aux)

    def wrapped(*args: Any, **kwargs: Any) -> tuple:
        value, g = vg(*args, **kwargs)
        return g, value
    return wrapped


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> tuple:
    """``(output, jvp_out)`` (and ``aux`` with ``has_aux``), as ``torch.func.jvp``.

    Example:
        >>> import xad
        >>> from xad.torch_func import jvp
        >>> jvp(xad.sin, (xad.tensor(0.0),), (xad.tensor(2.0),))[1].item()
        2.0
    """
    if not has_aux:
        return _t.jvp(func, primals, tangents)
    box: list = []

    def main(*a: Any) -> Any:
        out, aux = func(*a)
        box.append(aux)
        return out
    out, tan = _t.jvp(main, primals, tangents)
    return out, tan, box[0]


def hessian(func: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """``torch.func.hessian``: :func:`xad.hessian`.

    Example:
        >>> import xad
        >>> from xad.torch_func import hessian
        >>> hessian(lambda x: (x ** 3).sum())(xad.tensor([1.0])).tolist()
        [[6.0]]
    """
    return _t.hessian(func, argnums)


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """``torch.func.vmap``: :func:`xad.vmap` with ``in_dims``/``out_dims``.

    Example:
        >>> import xad
        >>> from xad.torch_func import vmap
        >>> vmap(lambda x: x.sum(), in_dims=1)(xad.ones((2, 3))).tolist()
        [2.0, 2.0, 2.0]
    """
    return _xvmap(func, in_axes=in_dims, out_axes=out_dims, randomness=randomness,
                   chunk_size=chunk_size)
