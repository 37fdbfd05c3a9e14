"""``torch.utils.checkpoint`` under ``xad.as_torch``: PyTorch's ``checkpoint`` and
``checkpoint_sequential`` signatures on xad's one checkpoint (:func:`xad.checkpoint`, the
approach of PyTorch's non-reentrant variant: gradients reach closed-over parameters, and
``autograd.grad`` works).

``use_reentrant`` keeps PyTorch's visible differences: left out, it warns and means ``True``;
``True`` refuses keyword arguments and, where no tensor argument requires grad, warns and
returns results that do not require grad (PyTorch's reentrant variant cuts the graph there).
The random state is always restored for the re-run (``preserve_rng_state=False`` in
PyTorch re-draws dropout masks, which makes the gradient that of other masks).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from . import autograd as _ag
from .tensor import Tensor
from .utils.checkpoint import checkpoint as _checkpoint

__all__ = ["checkpoint", "checkpoint_sequential"]

_NO_USE_REENTRANT = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
    "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
    "exception. use_reentrant=False is recommended, but if you need to preserve the current "
    "default behavior, you can pass use_reentrant=True. Refer to docs for more details on "
    "the differences between the two variants.")


def _noop_context_fn() -> Any:
    return None


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], Any] = _noop_context_fn,
               determinism_check: str = "default", debug: bool = False,
               early_stop: bool = True, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` whose intermediate values are recomputed in backward
    (PyTorch's ``torch.utils.checkpoint.checkpoint``).

    Example:
        >>> import xad
        >>> from xad.torch_activation_checkpoint import checkpoint
        >>> w = xad.tensor([[0.5, -1.0], [2.0, 0.1]], requires_grad=True)
        >>> y = checkpoint(lambda h: xad.tanh(h @ w), xad.ones(1, 2), use_reentrant=False)
        >>> y.sum().backward(); w.grad.shape
        (2, 2)
    """
    if use_reentrant is None:
        warnings.warn(_NO_USE_REENTRANT, stacklevel=2)
        use_reentrant = True
    kwargs.pop("preserve_rng_state", True)  # (always preserved: see the module's note)
    if determinism_check not in ("default", "none"):
        raise ValueError(f"torch.utils.checkpoint: determinism_check should be one of "
                         f"['default', 'none'], but got {determinism_check}")
    if context_fn is not _noop_context_fn:
        raise NotImplementedError(
            "torch.utils.checkpoint: context_fn (selective checkpointing) has no xad "
            "counterpart; checkpoint the parts to recompute as separate functions instead")
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if _ag.is_grad_enabled() and not any(isinstance(a, Tensor) and a.requires_grad
                                             for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be "
                          "None", stacklevel=2)
            with _ag.no_grad():
                return function(*args)
    return _checkpoint(function, *args, **kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Any,  # noqa: A002
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Run ``functions`` (a ``Sequential`` or a list of modules) in order, in ``segments``
    pieces, each but the last checkpointed (PyTorch's ``checkpoint_sequential``).

    Example:
        >>> import xad
        >>> from xad.torch_activation_checkpoint import checkpoint_sequential
        >>> net = xad.nn.Sequential(xad.nn.Linear(2, 3), xad.nn.Tanh(), xad.nn.Linear(3, 1))
        >>> x = xad.ones(4, 2, requires_grad=True)
        >>> checkpoint_sequential(net, 2, x, use_reentrant=False).shape
        (4, 1)
    """
    if use_reentrant is None:
        warnings.warn(_NO_USE_REENTRANT, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    fns: Sequence[Any] = list(functions.children()) if hasattr(functions, "children") \
        else list(functions)
    size = len(fns) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(_run(fns[start:end + 1]), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return _run(fns[end + 1:])(input)


def _run(fns: Sequence[Callable]) -> Callable[[Any], Any]:
    def forward(x: Any) -> Any:
        for f in fns:
            x = f(x)
        return x
    return forward
