"""PyTorch's meanings for names that xad's functions give the Array API standard's (or
NumPy's) meaning, as ``python -m xad.as_torch`` serves them: ``torch.Tensor(5)``,
``torch.meshgrid`` (``'ij'``), ``torch.amp.autocast(device_type, ...)``,
``torch.amp.GradScaler(device)``, ``torch.set_printoptions``. ``xad.f`` keeps its own
meaning; docs/PORTING.md tables every name that differs."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from . import amp, dtypes
from . import ops as _ops
from .backend import get_backend
from .factories import arange as _arange
from .factories import default_complex_dtype, empty, full_like, rand, randint, randn, tensor
from .factories import linspace as _linspace
from .nn import functional as _F
from .ops.torch_conventions import remainder, sign
from .ops.torch_elementwise import sgn
from .tensor import Tensor, on_cuda
from .torch_calculus import cumulative_trapezoid, gradient, trapz
from .torch_draws import binomial, poisson
from .torch_histograms import histogram, histogramdd
from .torch_householder import geqrf, ormqr
from .torch_legacy_linalg import (
    chain_matmul,
    eig,
    frobenius_norm,
    lstsq,
    lu,
    lu_solve,
    matrix_rank,
    nuclear_norm,
    solve,
    symeig,
    triangular_solve,
)
from .torch_linalg import householder_product as orgqr
from .torch_linalg import lu_unpack
from .torch_lowrank import pca_lowrank, svd_lowrank
from .torch_matrix_functions import (
    cholesky,
    cholesky_inverse,
    cholesky_solve,
    det,
    inverse,
    logdet,
    matrix_power,
    pinverse,
    qr,
    slogdet,
    svd,
)
from .torch_segments import segment_reduce
from .torch_sequences import combinations, nonzero_static, unravel_index, vander
from .torch_stft import istft, stft
from .torch_windows import (
    bartlett_window,
    blackman_window,
    hamming_window,
    hann_window,
    kaiser_window,
)

_Fn = TypeVar("_Fn", bound=Callable[..., Any])

# PyTorch's other names for xad's elementwise functions (the same meaning), made below
_ALIASES = {"mul": "multiply", "neg": "negative", "eq": "equal", "ne": "not_equal",
            "gt": "greater", "ge": "greater_equal", "lt": "less", "le": "less_equal",
            "true_divide": "divide", "absolute": "abs", "arccos": "acos", "arcsin": "asin",
            "arctan": "atan", "arctan2": "atan2", "arccosh": "acosh", "arcsinh": "asinh",
            "arctanh": "atanh", "ger": "outer"}


# torch.f that is torch.nn.functional.f (the same arguments in the same order), below
_NN_FUNCTIONS = ("dropout conv1d conv2d conv_transpose2d max_pool1d max_pool2d avg_pool1d "
                 "adaptive_avg_pool1d adaptive_max_pool1d layer_norm group_norm "
                 "pairwise_distance cosine_similarity pixel_shuffle pixel_unshuffle prelu "
                 "selu celu bilinear").split()
__all__ = ["TorchTensor", "meshgrid", "autocast", "GradScaler", "set_printoptions",
           "cuda_usable", "count_nonzero", "roll", "tril", "triu", "diff", "take", "where",
           "searchsorted", "tensordot", "arange", "linspace", "can_cast", "promote_types",
           "broadcast_shapes", "round", *_ALIASES,
           "add", "sub", "movedim", "swapaxes", "swapdims", "topk", "kthvalue",
           "clamp_min", "clamp_max", "rand_like", "randn_like",
           *_NN_FUNCTIONS, "as_tensor", "scalar_tensor", "is_floating_point", "is_complex",
           "complex", "polar", "angle", "sgn", "sign", "remainder", "imag",
           "is_nonzero", "logspace", "det", "inverse", "slogdet", "logdet",
           "svd", "qr", "cholesky", "matrix_power", "pinverse", "cholesky_solve",
           "cholesky_inverse", "lu_unpack", "orgqr",
           "randint_like", "normal", "hann_window", "hamming_window", "blackman_window",
           "bartlett_window", "kaiser_window", "stft", "istft",
           "set_float32_matmul_precision", "get_float32_matmul_precision",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "rsub", "fill", "empty_strided", "empty_permuted", "typename"]
# numerical functions (xad/torch_calculus.py, torch_sequences.py, torch_legacy_linalg.py)
__all__ += ["trapz", "cumulative_trapezoid", "gradient", "combinations", "vander",
            "unravel_index", "nonzero_static", "lu", "lu_solve", "triangular_solve",
            "chain_matmul", "nuclear_norm", "frobenius_norm", "solve", "lstsq", "eig", "symeig",
            "matrix_rank"]
__all__ += ["histogram", "histogramdd"]  # (xad/torch_histograms.py)
__all__ += ["binomial", "poisson"]  # (xad/torch_draws.py)
__all__ += ["geqrf", "ormqr"]  # (xad/torch_householder.py)
__all__ += ["svd_lowrank", "pca_lowrank"]  # (xad/torch_lowrank.py)
__all__ += ["segment_reduce"]  # (xad/torch_segments.py)


class _TensorType(type):
    """``torch.Tensor``: ``isinstance(x, torch.Tensor)`` holds for xad tensors, its
    attributes are :class:`xad.Tensor`'s, and calling it is PyTorch's legacy constructor."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, Tensor)

    def __getattr__(cls, name: str) -> Any:
        return getattr(Tensor, name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Tensor:
        if kwargs:
            raise TypeError(f"torch.Tensor(...) takes no keywords, got {sorted(kwargs)}; use "
                            f"torch.tensor(data, dtype=..., requires_grad=...)")
        if len(args) == 1 and isinstance(args[0], Tensor):
            return args[0]
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return empty(*(args or (0,)), dtype=dtypes.float32)
        if len(args) == 1 and isinstance(args[0], Sequence) and not isinstance(args[0], str):
            return tensor(args[0], dtype=dtypes.float32)
        raise TypeError(f"torch.Tensor({', '.join(type(a).__name__ for a in args)}): give "
                        f"sizes (ints) or one sequence of numbers (data must be a sequence)")


class TorchTensor(metaclass=_TensorType):
    """PyTorch's ``torch.Tensor``: the type of xad tensors for ``isinstance``, and its
    legacy constructor: ``torch.Tensor(2, 3)`` an uninitialised float32 tensor of that shape,
    ``torch.Tensor([1, 2])`` float32 data (``xad.Tensor(data)`` keeps ``data``'s dtype).

    Example:
        >>> from xad.torch_functions import TorchTensor
        >>> TorchTensor(5).shape, TorchTensor([1, 2]).dtype
        ((5,), xad.float32)
    """


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Tensor, ...]:
    """PyTorch's ``meshgrid``: matrix indexing (``'ij'``) unless told; the tensors may come
    as one list. :func:`xad.meshgrid` (the standard's) defaults to ``'xy'``.

    Example:
        >>> import xad
        >>> from xad.torch_functions import meshgrid
        >>> [t.shape for t in meshgrid(xad.zeros(2), xad.zeros(3))]
        [(2, 3), (2, 3)]
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    return tuple(_ops.meshgrid(*tensors, indexing=indexing))


def cuda_usable() -> bool:
    """Whether PyTorch's ``"cuda"`` can mean the current backend (one on a CUDA device).

    Example:
        >>> from xad.torch_functions import cuda_usable
        >>> cuda_usable()  # NumPy, the default backend, is on the host
        False
    """
    return on_cuda(get_backend())


def _device_type(where: str, device_type: Any) -> str:
    kind = str(device_type).split(":")[0]
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"{where}: device_type must be 'cpu' or 'cuda', got "
                         f"{device_type!r}")
    return kind


def autocast(device_type: str, dtype: Any = None, enabled: bool = True,
             cache_enabled: Any = None) -> amp.autocast:
    """PyTorch's ``torch.amp.autocast(device_type, dtype=None, enabled=True)``: ``'cpu'``
    defaults to bfloat16, ``'cuda'`` to float16; ``'cuda'`` on a host backend warns and
    disables itself, as PyTorch does without a GPU. Entering it on a backend without the
    dtype raises (NumPy has no bfloat16: pass ``dtype=torch.float16``).

    Example:
        >>> import xad
        >>> from xad.torch_functions import autocast
        >>> with autocast("cpu", dtype=xad.float16):
        ...     (xad.ones(2, 3) @ xad.ones(3, 1)).dtype
        xad.float16
    """
    kind = _device_type("autocast", device_type)
    if kind == "cuda" and enabled and not cuda_usable():
        warnings.warn("autocast('cuda'): the backend is on the host (no CUDA device); "
                      "autocast is disabled. Run with --backend cupy for a GPU", stacklevel=2)
        enabled = False
    low = dtype if dtype is not None else dtypes.bfloat16 if kind == "cpu" else dtypes.float16
    return amp.autocast(low, enabled=enabled)


def GradScaler(device: str = "cuda", init_scale: float = 2.0 ** 16,  # noqa: N802 (PyTorch's)
               growth_factor: float = 2.0, backoff_factor: float = 0.5,
               growth_interval: int = 2000, enabled: bool = True) -> amp.GradScaler:
    """PyTorch's ``torch.amp.GradScaler(device='cuda', ...)``: ``'cuda'`` on a host backend
    warns and gives a disabled scaler, as PyTorch does without a GPU.

    Example:
        >>> from xad.torch_functions import GradScaler
        >>> GradScaler("cpu").is_enabled()
        True
    """
    kind = _device_type("GradScaler", device)
    if kind == "cuda" and enabled and not cuda_usable():
        warnings.warn("GradScaler('cuda'): the backend is on the host (no CUDA device); "
                      "the scaler is disabled. Run with --backend cupy for a GPU", stacklevel=2)
        enabled = False
    return amp.GradScaler(init_scale, growth_factor, backoff_factor, growth_interval,
                          enabled=enabled)


_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
             "full": (4, float("inf"), 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """PyTorch's ``set_printoptions``: digits, summarising threshold, edge items, line width
    and scientific notation of tensor reprs (process-wide; ``profile`` sets the first four).

    Example:
        >>> import xad
        >>> from xad.torch_functions import set_printoptions
        >>> set_printoptions(precision=2); xad.tensor([1.23456])
        tensor([1.23], dtype=xad.float32, backend=numpy)
        >>> set_printoptions(profile="default")
    """
    opts = Tensor._print_options
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(_PROFILES)}")
        opts.update(zip(("precision", "threshold", "edgeitems", "linewidth"),
                        _PROFILES[profile]))
        opts.pop("sci_mode", None)
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems,
             "linewidth": linewidth, "sci_mode": sci_mode}
    opts.update({k: v for k, v in given.items() if v is not None})


# ----- PyTorch's signatures over the standard's functions (positional dims, PyTorch's
# keyword names); the meaning is the same unless the docstring says otherwise ----------------
def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:  # noqa: A002 (PyTorch's name)
    """``torch.count_nonzero(input, dim=None)``.

    Example:
        >>> import xad
        >>> from xad.torch_functions import count_nonzero
        >>> count_nonzero(xad.tensor([[0, 1], [2, 3]]), 0).tolist()
        [1, 2]
    """
    empty = isinstance(dim, (tuple, list)) and not dim  # PyTorch's: every dimension
    return _ops.count_nonzero(input, axis=None if empty else _dims(dim))


def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:  # noqa: A002
    """``torch.roll(input, shifts, dims=None)``.

    Example:
        >>> import xad
        >>> from xad.torch_functions import roll
        >>> roll(xad.tensor([[1, 2], [3, 4]]), 1, 0).tolist()
        [[3, 4], [1, 2]]
    """
    return _ops.roll(input, _dims(shifts), axis=_dims(dims))


def tril(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    """``torch.tril(input, diagonal=0)``.

    Example:
        >>> import xad
        >>> from xad.torch_functions import tril
        >>> tril(xad.ones(2, 2), -1).tolist()
        [[0.0, 0.0], [1.0, 0.0]]
    """
    return _ops.tril(input, k=diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    """``torch.triu(input, diagonal=0)``.

    Example:
        >>> import xad
        >>> from xad.torch_functions import triu
        >>> triu(xad.ones(2, 2), 1).tolist()
        [[0.0, 1.0], [0.0, 0.0]]
    """
    return _ops.triu(input, k=diagonal)


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Any = None,  # noqa: A002
         append: Any = None) -> Tensor:
    """``torch.diff(input, n=1, dim=-1, prepend=None, append=None)`` (``n`` comes first;
    of bools, PyTorch's ``!=`` of neighbours).

    Example:
        >>> import xad
        >>> from xad.torch_functions import diff
        >>> diff(xad.tensor([1, 4, 9, 16]), 2).tolist()
        [2, 2]
        >>> diff(xad.tensor([True, False, False])).tolist()
        [True, False]
    """
    return input.diff(n, dim, prepend, append)


def take(input: Tensor, index: Tensor) -> Tensor:  # noqa: A002
    """PyTorch's ``take``: ``index`` into the flattened tensor, any shape of ``index``
    (:func:`xad.take`, the standard's, indexes along an axis).

    Example:
        >>> import xad
        >>> from xad.torch_functions import take
        >>> take(xad.tensor([[1, 2], [3, 4]]), xad.tensor([3, 0])).tolist()
        [4, 1]
    """
    return _ops.reshape(input, (-1,))[index]


def where(condition: Tensor, input: Any = None, other: Any = None) -> Any:  # noqa: A002
    """``torch.where(condition, input, other)``; ``torch.where(condition)`` is
    ``condition.nonzero(as_tuple=True)``.

    Example:
        >>> import xad
        >>> from xad.torch_functions import where
        >>> [t.tolist() for t in where(xad.tensor([0, 3, 5]) > 1)]
        [[1, 2]]
    """
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    return _ops.where(condition, input, other)


def searchsorted(sorted_sequence: Tensor, values: Any, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None, sorter: Any = None) -> Tensor:
    """``torch.searchsorted(sorted_sequence, values, *, out_int32=False, right=False,
    side=None, sorter=None)``; an N-d ``sorted_sequence`` searches each of its last-axis
    rows for the matching row of ``values`` (PyTorch's batched form).

    Example:
        >>> import xad
        >>> from xad.torch_functions import searchsorted
        >>> searchsorted(xad.tensor([1.0, 2.0, 3.0]), xad.tensor([2.0]), right=True).tolist()
        [2]
        >>> searchsorted(xad.tensor([[1, 3], [0, 5]]), xad.tensor([[3], [3]])).tolist()
        [[1], [1]]
    """
    if side is not None and side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if right and side == "left":
        raise RuntimeError("searchsorted: side='left' and right=True ask for opposites; "
                           "give one of them")
    side = side or ("right" if right else "left")
    if sorted_sequence.ndim > 1:
        out = _batched_search(sorted_sequence, values, side, sorter)
    else:
        out = _ops.searchsorted(sorted_sequence, values, side=side, sorter=sorter)
    return _ops.astype(out, dtypes.int32 if out_int32 else dtypes.int64, copy=False)


def _batched_search(seq: Tensor, values: Any, side: str, sorter: Any) -> Tensor:
    """Per row of ``seq``: how many of its elements lie below each value (``<``, or ``<=``
    for ``side='right'``): the insertion index, with no loop over rows."""
    if not isinstance(values, Tensor) or values.shape[:-1] != seq.shape[:-1]:
        raise ValueError(f"searchsorted: an N-d sorted_sequence {seq.shape} needs values with "
                         f"the same leading dimensions, got "
                         f"{getattr(values, 'shape', type(values).__name__)}")
    if sorter is not None:
        seq = _ops.take_along_axis(seq, sorter, axis=-1)
    below = seq[..., None, :] < values[..., :, None] if side == "left" else \
        seq[..., None, :] <= values[..., :, None]
    return _ops.sum(_ops.astype(below, dtypes.int64), axis=-1)


def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """``torch.tensordot(a, b, dims=2)`` (the standard's keyword is ``axes``).

    Example:
        >>> import xad
        >>> from xad.torch_functions import tensordot
        >>> tensordot(xad.ones(2, 3), xad.ones(3, 4), dims=1).shape
        (2, 4)
    """
    return _ops.tensordot(a, b, axes=dims)


def linspace(start: Any, end: Any, steps: int, *, dtype: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``torch.linspace(start, end, steps, *, dtype=None, requires_grad=False)``: complex
    ends give the default complex dtype; an integer ``dtype`` truncates the ends first and
    counts in float64 as PyTorch's CPU kernel (the first half from ``start``, the rest back
    from ``end``), each value rounded towards 0.

    Example:
        >>> import xad
        >>> from xad.torch_functions import linspace
        >>> linspace(0, 1, steps=3).tolist(), linspace(-1, 1, 5, dtype=xad.int64).tolist()
        ([0.0, 0.5, 1.0], [-1, 0, 0, 0, 1])
    """
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    cplx = any(isinstance(v, numbers.Complex) and not isinstance(v, numbers.Real)
               for v in (start, end))
    d = dtypes.as_dtype(dtype) or (default_complex_dtype() if cplx else
                                   dtypes.get_default_dtype())
    if d.is_floating or d.is_complex or cplx:  # (complex ends refuse a real dtype there)
        return _linspace(start, end, steps, dtype=d, requires_grad=requires_grad)
    s, e = int(start), int(end)
    step = (e - s) / max(steps - 1, 1)
    i = _arange(steps, dtype=dtypes.float64)
    out = _ops.where(i < max(steps // 2, 1), s + step * i, e - step * (steps - 1 - i))
    return out.astype(d)


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None,
           requires_grad: bool = False) -> Tensor:
    """``torch.arange(start, end, step, *, dtype=None, requires_grad=False)``, with PyTorch's
    two integer rules: with ``dtype=int64``, ``start``, ``end`` and ``step`` are truncated to
    integers first (``arange(0, 5, 1.5, dtype=torch.long)`` is 0..4, and a step that
    truncates to 0 raises); with a smaller integer dtype the length is counted in floats and
    the values step by the truncated step (``arange(0, 5, 1.5, dtype=torch.int32)`` is 0..3);
    where the standard's :func:`xad.arange` counts in floats. 0-d tensors count as their
    numbers; a step leading away from ``end`` raises, as PyTorch's.

    Example:
        >>> import xad
        >>> from xad.torch_functions import arange
        >>> arange(0, 5, 1.5, dtype=xad.int64).tolist(), arange(0, 1, 0.25).tolist()
        ([0, 1, 2, 3, 4], [0.0, 0.25, 0.5, 0.75])
    """
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if end is None:
        start, end = 0, start
    if step == 0 or (step > 0 and end < start) or (step < 0 and end > start):
        raise ValueError(f"arange: step {step!r} must be nonzero and lead from {start!r} to "
                         f"{end!r} (PyTorch: upper bound and lower bound inconsistent with "
                         f"step sign)")
    d = dtypes.as_dtype(dtype) or (dtypes.int64 if all(isinstance(v, int) for v in (
        start, end, step)) else dtypes.get_default_dtype())
    if d.is_floating:
        return _float_arange(start, end, step, d, requires_grad)
    if d is dtypes.int64:
        start, end, step = int(start), int(end), int(step)
        if step == 0:
            raise ValueError(f"arange: step must be nonzero (got {step!r}; with dtype {d} "
                             f"PyTorch truncates it to an integer first)")
        return _arange(start, end, step, dtype=d, requires_grad=requires_grad)
    # PyTorch's other integer dtypes: the length counted in floats, the values stepped by
    # the truncated step from the truncated start (wrapped into the dtype)
    n = max(math.ceil((end - start) / step), 0)
    out = _arange(n, dtype=dtypes.int64) * int(step) + int(start)
    return out.astype(d)


def _float_arange(start: float, end: float, step: float, d: Any,
                  requires_grad: bool) -> Tensor:
    """A floating ``arange`` as PyTorch's: ``ceil((end - start) / step)`` values ``start + i
    * step`` in a wider dtype (float64; float32 for the half dtypes), rounded once. Counted
    by adding the step (NumPy's), float32 values drifted by ulps towards the end
    (``arange(-3.7, 4.2, 0.9)``); PyTorch's own float64 values differ from these by an ulp
    in places (its vector lanes count from each vector's first value)."""
    acc = dtypes.float32 if d in (dtypes.float16, dtypes.bfloat16) else dtypes.float64
    n = max(math.ceil((end - start) / step), 0)
    out = (_arange(n, dtype=acc) * step + start).astype(d)
    return out.requires_grad_() if requires_grad else out


def can_cast(from_: Any, to: Any) -> bool:
    """PyTorch's ``can_cast``: its casting rule ("same kind": an integer may become a
    float, not the other way; bool becomes anything) where the standard's
    :func:`xad.can_cast` allows only value-preserving casts.

    Example:
        >>> import xad
        >>> from xad.torch_functions import can_cast
        >>> can_cast(xad.int64, xad.float32), xad.can_cast(xad.int64, xad.float32)
        (True, False)
    """
    rank = {"bool": 0, "uint": 1, "int": 1, "float": 2, "bfloat": 2, "complex": 3}
    f, t = (rank[dtypes.as_dtype(d).name.rstrip("0123456789")] for d in (from_, to))
    return f <= t


def promote_types(type1: Any, type2: Any) -> Any:
    """PyTorch's ``promote_types``: the dtype of an operation on tensors of the two dtypes.

    Example:
        >>> import xad
        >>> from xad.torch_functions import promote_types
        >>> promote_types(xad.uint8, xad.int8), promote_types(xad.int64, xad.float16)
        (xad.int16, xad.float16)
    """
    return dtypes.promote_types(dtypes.as_dtype(type1), dtypes.as_dtype(type2))


def broadcast_shapes(*shapes: Any) -> tuple[int, ...]:
    """PyTorch's ``broadcast_shapes``: the shape the given shapes (tuples or ints) broadcast
    to, from the shapes alone (no tensor is made).

    Example:
        >>> from xad.torch_functions import broadcast_shapes
        >>> broadcast_shapes((2, 1), (3,), 1)
        (2, 3)
    """
    dims = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    out: list[int] = []
    for i in range(1, max(map(len, dims), default=0) + 1):
        sizes = {d[-i] for d in dims if len(d) >= i} - {1}
        if len(sizes) > 1 or any(n < 0 for n in sizes):
            raise RuntimeError(f"broadcast_shapes: shapes {[list(d) for d in dims]} do not "
                               f"broadcast (sizes {sorted(sizes)} at dimension -{i})")
        out.append(sizes.pop() if sizes else 1)
    return tuple(reversed(out))


def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001, A002
    """``torch.round(input, *, decimals=0)`` (half to even, as PyTorch's).

    Example:
        >>> import xad
        >>> from xad.torch_functions import round
        >>> round(xad.tensor([0.5, 1.5, 1.26], dtype=xad.float64), decimals=1).tolist()
        [0.5, 1.5, 1.3]
    """
    return input.round(decimals=decimals)


def _dims(d: Any) -> Any:
    return tuple(d) if isinstance(d, list) else d


def _alias(name: str, f: _Fn) -> _Fn:
    """``f`` under PyTorch's other name ``name`` (the same meaning, its signature kept)."""
    def alias(*args: Any, **kwargs: Any) -> Any:
        return f(*args, **kwargs)
    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = f"``torch.{name}``: :func:`xad.{f.__name__}`."
    return cast(_Fn, alias)


mul = _alias("mul", _ops.multiply)
neg = _alias("neg", _ops.negative)
eq = _alias("eq", _ops.equal)
ne = _alias("ne", _ops.not_equal)
gt = _alias("gt", _ops.greater)
ge = _alias("ge", _ops.greater_equal)
lt = _alias("lt", _ops.less)
le = _alias("le", _ops.less_equal)
true_divide = _alias("true_divide", _ops.divide)
absolute = _alias("absolute", _ops.abs)
arccos = _alias("arccos", _ops.acos)
arcsin = _alias("arcsin", _ops.asin)
arctan = _alias("arctan", _ops.atan)
arctan2 = _alias("arctan2", _ops.atan2)
arccosh = _alias("arccosh", _ops.acosh)
arcsinh = _alias("arcsinh", _ops.asinh)
arctanh = _alias("arctanh", _ops.atanh)
ger = _alias("ger", _ops.outer)
dropout = _F.dropout
conv1d = _F.conv1d
conv2d = _F.conv2d
conv_transpose2d = _F.conv_transpose2d
max_pool1d = _F.max_pool1d
max_pool2d = _F.max_pool2d
avg_pool1d = _F.avg_pool1d
adaptive_avg_pool1d = _F.adaptive_avg_pool1d
adaptive_max_pool1d = _F.adaptive_max_pool1d
layer_norm = _F.layer_norm
group_norm = _F.group_norm
pairwise_distance = _F.pairwise_distance
cosine_similarity = _F.cosine_similarity
pixel_shuffle = _F.pixel_shuffle
pixel_unshuffle = _F.pixel_unshuffle
prelu = _F.prelu
selu = _F.selu
celu = _F.celu
bilinear = _F.bilinear


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``torch.add(input, other, *, alpha=1)``: ``input + alpha * other``.

    Example:
        >>> import xad
        >>> from xad.torch_functions import add
        >>> add(xad.ones(2), xad.ones(2), alpha=3).tolist()
        [4.0, 4.0]
    """
    return input + _ops.torch_compositions.alpha_scaled(input, other, alpha, "add")


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``torch.sub(input, other, *, alpha=1)``: ``input - alpha * other``."""
    return input - _ops.torch_compositions.alpha_scaled(input, other, alpha, "sub")


def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:  # noqa: A002
    """``torch.movedim`` (``moveaxis``): :func:`xad.moveaxis` with lists accepted."""
    return _ops.moveaxis(input, _dims(source), _dims(destination))


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:  # noqa: A002
    """``torch.swapaxes`` (``swapdims``): swap two dimensions.

    Example:
        >>> import xad
        >>> from xad.torch_functions import swapaxes
        >>> swapaxes(xad.zeros(2, 3, 4), 0, 2).shape
        (4, 3, 2)
    """
    return input.transpose(axis0, axis1)


swapdims = swapaxes


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True,  # noqa: A002
         sorted: bool = True) -> Any:  # noqa: A002
    """``torch.topk``: :meth:`xad.Tensor.topk` (``values``, ``indices``)."""
    return input.topk(k, dim, largest, sorted)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> Any:  # noqa: A002
    """``torch.kthvalue``: :meth:`xad.Tensor.kthvalue` (``values``, ``indices``)."""
    return input.kthvalue(k, dim, keepdim)


def clamp_min(input: Tensor, min: Any) -> Tensor:  # noqa: A002
    """``torch.clamp_min``: ``clamp(input, min=min)``."""
    return input.clamp(min=min)


def clamp_max(input: Tensor, max: Any) -> Tensor:  # noqa: A002
    """``torch.clamp_max``: ``clamp(input, max=max)``."""
    return input.clamp(max=max)


def rand_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:  # noqa: A002
    """``torch.rand_like``: uniform samples of ``input``'s shape (and dtype, unless given).

    Example:
        >>> import xad
        >>> from xad.torch_functions import rand_like
        >>> rand_like(xad.zeros(2, 3, dtype=xad.float64)).dtype
        xad.float64
    """
    return rand(*input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad,
                backend=input._backend)


def randn_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:  # noqa: A002
    """``torch.randn_like``: standard normal samples of ``input``'s shape and dtype."""
    return randn(*input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad,
                 backend=input._backend)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """``torch.as_tensor``: ``data`` itself where it is a tensor of that dtype, else a new
    tensor (xad never shares a NumPy array's memory: a backend need not be NumPy).

    Example:
        >>> import xad
        >>> from xad.torch_functions import as_tensor
        >>> t = xad.ones(2); as_tensor(t) is t, as_tensor([1, 2]).dtype
        (True, xad.int64)
    """
    if isinstance(data, Tensor):
        return data if dtype is None or data.dtype is dtype else data.to(dtype)
    return tensor(data, dtype=dtype)


def scalar_tensor(s: Any, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """``torch.scalar_tensor``: a 0-d tensor, float32 unless told."""
    return tensor(s, dtype=dtype or dtypes.get_default_dtype(), requires_grad=requires_grad)


def is_floating_point(input: Tensor) -> bool:  # noqa: A002
    """``torch.is_floating_point``."""
    return input.dtype.is_floating


def is_complex(input: Tensor) -> bool:  # noqa: A002
    """``torch.is_complex``."""
    return input.dtype.name.startswith("complex")


def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001
    """``torch.complex``: ``real + i imag`` from two float32 or two float64 tensors
    (:func:`xad.complex_from_parts`); differentiable in both.

    Example:
        >>> from xad import as_torch
        >>> t = as_torch.namespace()["torch"]
        >>> t.complex(t.tensor([1.0]), t.tensor([2.0])).dtype
        xad.complex64
    """
    return _ops.complex_from_parts(real, imag)


def polar(abs: Tensor, angle: Tensor) -> Tensor:  # noqa: A002
    """``torch.polar``: ``abs * (cos(angle) + i sin(angle))``; differentiable in both.

    Example:
        >>> from xad import as_torch
        >>> t = as_torch.namespace()["torch"]
        >>> t.real(t.polar(t.tensor([2.0]), t.tensor([0.0]))).tolist()
        [2.0]
    """
    return _ops.complex_from_parts(abs * _ops.cos(angle), abs * _ops.sin(angle))


def angle(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.angle``: the argument of a complex tensor (gradient 0 at 0, PyTorch's); of a
    real one ``pi`` below 0, else 0 (NaN kept; gradient 0).

    Example:
        >>> from xad import as_torch
        >>> t = as_torch.namespace()["torch"]
        >>> t.angle(t.tensor([-1.0, 2.0], dtype=t.float64)).tolist()
        [3.141592653589793, 0.0]
    """
    return cast(Any, input).angle()  # (the tensor method, xad/tensor.py)


def imag(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.imag``: the imaginary part of a complex tensor, a view (``input.imag``); a real
    tensor refuses, as PyTorch's (:func:`xad.imag` gives its zeros, a new tensor that a
    write would not reach).

    Example:
        >>> from xad import as_torch
        >>> t = as_torch.namespace()["torch"]
        >>> t.imag(t.complex(t.tensor([1.0]), t.tensor([2.0]))).tolist()
        [2.0]
    """
    return input.imag


def is_nonzero(input: Tensor) -> bool:  # noqa: A002
    """``torch.is_nonzero``: :meth:`xad.Tensor.is_nonzero`."""
    return cast(Any, input).is_nonzero()


def logspace(start: float, end: float, steps: int, base: float = 10.0, *, dtype: Any = None,
             requires_grad: bool = False) -> Tensor:
    """``torch.logspace``: ``base ** linspace(start, end, steps)`` (an integer ``dtype``
    truncates ``start`` and ``end`` first, as PyTorch's, then each power towards 0).

    Example:
        >>> import xad
        >>> from xad.torch_functions import logspace
        >>> logspace(0, 2, 3).tolist(), logspace(0.5, 2.5, 3, dtype=xad.int64).tolist()
        ([1.0, 10.0, 100.0], [1, 10, 100])
    """
    dtype = dtypes.as_dtype(dtype) or dtypes.get_default_dtype()
    if not (dtype.is_floating or dtype.is_complex):
        start, end = int(start), int(end)
    exps = _linspace(start, end, steps, dtype=dtypes.float64)
    out = (base ** exps).astype(dtype)
    return out.requires_grad_() if requires_grad else out


def randint_like(input: Tensor, low: int, high: int | None = None, *,  # noqa: A002
                 dtype: Any = None) -> Tensor:
    """``torch.randint_like``: integers in ``[low, high)`` (``[0, low)`` with one bound) of
    ``input``'s shape, in ``input``'s dtype unless ``dtype`` is given.

    Example:
        >>> import xad
        >>> from xad.torch_functions import randint_like
        >>> randint_like(xad.zeros(2, dtype=xad.float64), 3).dtype
        xad.float64
    """
    low, high = (0, low) if high is None else (low, high)
    out = randint(low, high, tuple(input.shape), backend=input._backend)
    return out.astype(dtype or input.dtype)


def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Any = None,
           dtype: Any = None) -> Tensor:
    """``torch.normal``: samples of mean ``mean`` and standard deviation ``std`` (tensors
    broadcast, or numbers with ``size``). As PyTorch's, the gradient to ``mean`` and
    ``std`` is 0: write ``mean + std * randn_like(mean)`` for a reparameterised sample.

    Example:
        >>> import xad
        >>> from xad.torch_functions import normal
        >>> normal(xad.zeros(2, 3), 1.0).shape, normal(0.0, 1.0, (4,)).shape
        ((2, 3), (4,))
    """
    ts = [t for t in (mean, std) if isinstance(t, Tensor)]
    if not ts:
        if size is None:
            raise TypeError("normal: give a tensor mean or std, or numbers and a size")
        return randn(*size, dtype=dtype, generator=generator) * std + mean
    if size is not None:
        raise TypeError("normal: size goes with a number mean and std only (tensors give "
                        "the shape)")
    shape = tuple(_ops.broadcast_arrays(*ts)[0].shape)
    z = randn(*shape, dtype=_ops.result_type(*ts), backend=ts[0]._backend,
              generator=generator)
    m, s = (v.detach() if isinstance(v, Tensor) else v for v in (mean, std))
    sample = z * s + m
    for t in ts:  # in the graph with gradient 0, as PyTorch's
        sample = _ops.where(True, sample, t)
    return sample


_SETTINGS = {"float32_matmul_precision": "highest", "deterministic": False}


def set_float32_matmul_precision(precision: str) -> None:
    """``torch.set_float32_matmul_precision``: recorded (xad's float32 products are the
    backend's, ``"highest"`` on NumPy); ``get_float32_matmul_precision`` returns it.

    Example:
        >>> from xad.torch_functions import (set_float32_matmul_precision,
        ...                                  get_float32_matmul_precision)
        >>> set_float32_matmul_precision("high"); get_float32_matmul_precision()
        'high'
        >>> set_float32_matmul_precision("highest")
    """
    if precision not in ("highest", "high", "medium"):
        raise ValueError(f"set_float32_matmul_precision: 'highest', 'high' or 'medium', got "
                         f"{precision!r}")
    _SETTINGS["float32_matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    """``torch.get_float32_matmul_precision``."""
    return str(_SETTINGS["float32_matmul_precision"])


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """``torch.use_deterministic_algorithms``: recorded; xad's operations are deterministic
    on the host backends already (a GPU backend's scatter-adds follow its library)."""
    _SETTINGS["deterministic"] = bool(mode)


def are_deterministic_algorithms_enabled() -> bool:
    """``torch.are_deterministic_algorithms_enabled``: what
    :func:`use_deterministic_algorithms` last set."""
    return bool(_SETTINGS["deterministic"])


def rsub(input: Any, other: Any, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``torch.rsub(input, other, alpha=1)``: ``other - alpha * input``.

    Example:
        >>> import xad
        >>> from xad.torch_functions import rsub
        >>> rsub(xad.ones(2), 5.0, alpha=2).tolist()
        [3.0, 3.0]
    """
    return other - _ops.torch_compositions.alpha_scaled(other, input, alpha, "rsub")


def fill(input: Tensor, value: Any) -> Tensor:  # noqa: A002
    """``torch.fill(input, value)``: a new tensor of ``input``'s shape and dtype, every
    element ``value`` (a number or a 0-d tensor; differentiable in that tensor)."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"fill: value must be a 0-d tensor, got shape {value.shape}")
        return _ops.broadcast_to(value.astype(input.dtype), tuple(input.shape))
    return full_like(input, value)


def empty_strided(size: Any, stride: Any, *, dtype: Any = None,
                  requires_grad: bool = False, **unused: Any) -> Tensor:
    """``torch.empty_strided(size, stride)``: a new tensor of that shape (zeros; xad's new
    tensors are row-major whatever ``stride`` says)."""
    if len(tuple(stride)) != len(tuple(size)):
        raise RuntimeError(f"empty_strided: size {list(size)} and stride {list(stride)} "
                           f"differ in length")
    out = empty(*size, dtype=dtype)
    return out.requires_grad_() if requires_grad else out


def empty_permuted(size: Any, physical_layout: Any, *, dtype: Any = None,
                   requires_grad: bool = False, **unused: Any) -> Tensor:
    """``torch.empty_permuted(size, physical_layout)``: a new tensor of shape ``size`` (the
    memory order ``physical_layout`` is PyTorch's, not xad's: xad's are row-major)."""
    if sorted(physical_layout) != list(range(len(tuple(size)))):
        raise RuntimeError(f"empty_permuted: physical_layout {list(physical_layout)} is not a "
                           f"permutation of the {len(tuple(size))} dimensions")
    out = empty(*size, dtype=dtype)
    return out.requires_grad_() if requires_grad else out


def typename(obj: Any) -> str:
    """``torch.typename``: a tensor's PyTorch type name (``'torch.FloatTensor'``), else the
    object's qualified class name.

    Example:
        >>> import xad
        >>> from xad.torch_functions import typename
        >>> typename(xad.ones(1)), typename(3)
        ('torch.FloatTensor', 'int')
    """
    if isinstance(obj, Tensor):
        return cast(str, obj.type())
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", None) else f"{module}.{name}"
