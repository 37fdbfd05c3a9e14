"""``torch.autograd.gradcheck``/``gradgradcheck`` under ``xad.as_torch``: xad's checks
(:mod:`xad.utils.gradcheck`) with PyTorch's keywords. ``raise_exception=False`` returns
``False`` instead of raising; PyTorch's other switches (``fast_mode``, ``check_*``,
``nondet_tol``, ``masked``) are accepted: xad checks the backward derivatives along random
directions, then entry by entry where those disagree."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .utils import gradcheck as _gc

__all__ = ["gradcheck", "gradgradcheck"]

_ACCEPTED = {"nondet_tol", "check_undefined_grad", "check_grad_dtypes", "check_batched_grad",
             "check_batched_forward_grad", "check_forward_ad", "check_backward_ad",
             "fast_mode", "masked", "gen_non_contig_grad_outputs", "grad_outputs"}


def _run(name: str, check: Callable, func: Callable, inputs: Any, eps: float, atol: float,
         rtol: float, raise_exception: bool, rest: dict) -> bool:
    unknown = set(rest) - _ACCEPTED
    if unknown:
        raise TypeError(f"torch.autograd.{name}() got unexpected keyword argument(s) "
                        f"{sorted(unknown)}")
    try:
        return check(func, inputs, eps=eps, atol=atol, rtol=rtol)
    except _gc.GradcheckError:
        if raise_exception:
            raise
        return False


def gradcheck(func: Callable, inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, **rest: Any) -> bool:
    """``func``'s first derivatives against finite differences, as
    ``torch.autograd.gradcheck``.

    Example:
        >>> import xad
        >>> from xad.torch_gradcheck import gradcheck
        >>> x = xad.tensor([0.3, -1.2], dtype=xad.float64, requires_grad=True)
        >>> gradcheck(lambda t: t.tanh() * t, (x,), fast_mode=True)
        True
    """
    return _run("gradcheck", _gc.gradcheck, func, inputs, eps, atol, rtol, raise_exception,
                rest)


def gradgradcheck(func: Callable, inputs: Any, grad_outputs: Any = None, *,
                  eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  raise_exception: bool = True, **rest: Any) -> bool:
    """``func``'s second derivatives against finite differences of its first, as
    ``torch.autograd.gradgradcheck`` (``grad_outputs``: accepted; xad picks a fixed random
    one).

    Example:
        >>> import xad
        >>> from xad.torch_gradcheck import gradgradcheck
        >>> x = xad.tensor([0.3, -1.2], dtype=xad.float64, requires_grad=True)
        >>> gradgradcheck(lambda t: t.sin() * t, (x,))
        True
    """
    return _run("gradgradcheck", _gc.gradgradcheck, func, inputs, eps, atol, rtol,
                raise_exception, rest)
