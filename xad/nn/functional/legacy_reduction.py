"""PyTorch's legacy ``size_average=`` and ``reduce=`` keywords, on every loss function that
PyTorch still accepts them on (and, through :func:`accepting_legacy_reduction`, on the loss
modules): either one given replaces ``reduction`` by ``legacy_get_string``'s answer, with
PyTorch's deprecation warning. They are keywords only (PyTorch's positional order, with
``size_average`` third, is not xad's; docs/PORTING.md).
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from .likelihood_losses import (
    binary_cross_entropy,
    kl_div,
    multilabel_soft_margin_loss,
    poisson_nll_loss,
    smooth_l1_loss,
)
from .losses import binary_cross_entropy_with_logits, cross_entropy, l1_loss, mse_loss, nll_loss
from .margin_losses import (
    cosine_embedding_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    soft_margin_loss,
    triplet_margin_loss,
)

__all__ = ["l1_loss", "mse_loss",
           "nll_loss", "cross_entropy", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "smooth_l1_loss", "poisson_nll_loss",
           "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
           "triplet_margin_loss", "multilabel_soft_margin_loss", "soft_margin_loss",
           "multi_margin_loss", "multilabel_margin_loss"]

F = TypeVar("F", bound=Callable[..., Any])


def legacy_get_string(size_average: bool | None, reduce: bool | None,
                      emit_warning: bool = True) -> str:
    """The ``reduction`` that PyTorch's ``size_average``/``reduce`` pair stands for (``None``
    counts as True): ``"mean"``, ``"sum"`` (``size_average=False``) or ``"none"``
    (``reduce=False``), warning as PyTorch's ``_Reduction.legacy_get_string``.

    Example:
        >>> from xad.nn.functional.legacy_reduction import legacy_get_string
        >>> legacy_get_string(False, None, emit_warning=False)
        'sum'
    """
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = ("mean" if size_average else "sum") if reduce else "none"
    if emit_warning:
        warnings.warn(f"size_average and reduce args will be deprecated, please use "
                      f"reduction='{ret}' instead.", UserWarning, stacklevel=3)
    return ret


def accepting_legacy_reduction(fn: F) -> F:
    """``fn`` (a loss function or a loss module's ``__init__`` with a ``reduction``
    parameter) also taking the keywords ``size_average`` and ``reduce``.

    Example:
        >>> import warnings, xad
        >>> import xad.nn.functional as F
        >>> with warnings.catch_warnings(record=True):
        ...     F.l1_loss(xad.tensor([1.0, 2.0]), xad.zeros(2), size_average=False).item()
        3.0
    """
    sig = inspect.signature(fn)
    if "reduction" not in sig.parameters:
        raise TypeError(f"accepting_legacy_reduction: {fn.__qualname__} has no 'reduction' "
                        f"parameter to set")

    @functools.wraps(fn)
    def with_legacy(*args: Any, size_average: bool | None = None, reduce: bool | None = None,
                    **kwargs: Any) -> Any:
        if size_average is None and reduce is None:
            return fn(*args, **kwargs)
        bound = sig.bind_partial(*args, **kwargs)
        bound.arguments["reduction"] = legacy_get_string(size_average, reduce)
        return fn(*bound.args, **bound.kwargs)

    legacy = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None)
              for n in ("size_average", "reduce")]
    params = list(sig.parameters.values())
    at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    with_legacy.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=params[:at] + legacy + params[at:])
    return with_legacy  # type: ignore[return-value]


l1_loss = accepting_legacy_reduction(l1_loss)
mse_loss = accepting_legacy_reduction(mse_loss)
nll_loss = accepting_legacy_reduction(nll_loss)
cross_entropy = accepting_legacy_reduction(cross_entropy)
binary_cross_entropy = accepting_legacy_reduction(binary_cross_entropy)
binary_cross_entropy_with_logits = accepting_legacy_reduction(binary_cross_entropy_with_logits)
kl_div = accepting_legacy_reduction(kl_div)
smooth_l1_loss = accepting_legacy_reduction(smooth_l1_loss)
poisson_nll_loss = accepting_legacy_reduction(poisson_nll_loss)
margin_ranking_loss = accepting_legacy_reduction(margin_ranking_loss)
hinge_embedding_loss = accepting_legacy_reduction(hinge_embedding_loss)
cosine_embedding_loss = accepting_legacy_reduction(cosine_embedding_loss)
triplet_margin_loss = accepting_legacy_reduction(triplet_margin_loss)
multilabel_soft_margin_loss = accepting_legacy_reduction(multilabel_soft_margin_loss)
soft_margin_loss = accepting_legacy_reduction(soft_margin_loss)
multi_margin_loss = accepting_legacy_reduction(multi_margin_loss)
multilabel_margin_loss = accepting_legacy_reduction(multilabel_margin_loss)
