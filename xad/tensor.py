"""Tensor: a backend array, its gradient, and the node that made it."""

from __future__ import annotations

import builtins
import copy
import itertools
import math
import re
import sys
import weakref
from collections.abc import Callable
from typing import Any

from . import autograd as _ag
from . import dtypes as _dt
from . import memory_format as _memory_format
from .backend import Backend, get_backend
from .context import HOOKED, context
from .generator import Generator, drawing
from .graph import installed as _installed
from .hooks import RemovableHandle
from .torch_size import TorchSize

__all__ = ["Tensor"]

# NumPy's ufunc behind an operator -> (the operator, its reflected form): an ndarray on the
# left (``a * t`` calls ``np.multiply(a, t)``) gives what ``t.__rmul__(a)`` gives
_UFUNC_OPERATORS = {
    "add": ("__add__", "__radd__"), "subtract": ("__sub__", "__rsub__"),
    "multiply": ("__mul__", "__rmul__"), "divide": ("__truediv__", "__rtruediv__"),
    "floor_divide": ("__floordiv__", "__rfloordiv__"), "remainder": ("__mod__", "__rmod__"),
    "power": ("__pow__", "__rpow__"), "matmul": ("__matmul__", "__rmatmul__"),
    "bitwise_and": ("__and__", "__rand__"), "bitwise_or": ("__or__", "__ror__"),
    "bitwise_xor": ("__xor__", "__rxor__"), "left_shift": ("__lshift__", "__rlshift__"),
    "right_shift": ("__rshift__", "__rrshift__"), "less": ("__lt__", "__gt__"),
    "less_equal": ("__le__", "__ge__"), "greater": ("__gt__", "__lt__"),
    "greater_equal": ("__ge__", "__le__"), "equal": ("__eq__", "__eq__"),
    "not_equal": ("__ne__", "__ne__"),
}

_new = object.__new__


def _copy_array(b: Backend, a: Any) -> Any:
    return b.xp.asarray(a, copy=True)


def _add_into(b: None, a: Any, g: Any) -> Any:
    a += g
    return a


def _escape(what: str, t: Tensor) -> str:
    return (f"{what}: can't export a tensor that requires grad (shape {t.shape}, dtype "
            f"{t.dtype}): its array would leave the graph and no gradient would flow back "
            f"through it; use .detach() first")


class Size(int):
    """An element count that, called, gives the shape (``x.size()``) or one dimension
    (``x.size(dim)``) as PyTorch's ``size()`` does."""

    _shape: tuple[int, ...]

    def __new__(cls, n: int, shape: tuple[int, ...]) -> Size:
        s = super().__new__(cls, n)
        s._shape = shape
        return s

    def __call__(self, dim: int | None = None) -> Any:
        return TorchSize(self._shape) if dim is None else self._shape[dim]


_TENSOR_TYPES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                 "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
                 "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}


def _size_arg(size: tuple[Any, ...]) -> Any:
    """``f(2, 3)`` or ``f((2, 3))``: the shape either way."""
    return size[0] if len(size) == 1 and not isinstance(size[0], int) else size


class Tensor:
    """An array on some backend that can record the operations applied to it.

    ``array`` is the backend array; ``grad`` receives gradients from ``backward()``.
    Arithmetic with Python numbers follows the Array API's weak-scalar rule, so a float32
    tensor stays float32.

    Example:
        >>> import xad
        >>> x = xad.tensor([1.0, 2.0], requires_grad=True)
        >>> (x * x).sum().backward(); x.grad
        tensor([2., 4.], dtype=xad.float32, backend=numpy)
    """

    # Defaults live on the class; the fields every operation reads (``_node``, ``_vc``, and
    # a result's ``_idx``/``requires_grad``) are also set when a tensor is made: an
    # instance attribute is read faster than a class default (the per-operation path).
    requires_grad = False
    _data_of = False  # made by .data: in-place changes reach the base outside any graph
    _grad: Tensor | None = None
    _node: _ag.Node | None = None
    _idx = 0
    _vc: list[int] | None = None  # version counter, shared with views of the same memory
    _view = False  # made by a view operation (may share memory, may be read-only)
    _base: Tensor | None = None  # the tensor a view was taken from
    _view_fn: tuple | None = None  # (op, params) that remake a view from its base
    _views: list | None = None  # weak references to views that must follow this tensor
    _expanded = False  # a broadcast_to or as_strided view (elements may share memory), a
    # diagonal (its array may be read-only), or a view of one: changes go to the storage's
    # positions
    _hooks: list[Callable] | None = None
    _post_hooks: list[Callable] | None = None  # register_post_accumulate_grad_hook's
    _retains = False  # retain_grad() was called: .grad keeps the gradient after backward
    __array_priority__ = 1000

    def __init__(self, data: Any, requires_grad: bool = False,
                 backend: Backend | None = None) -> None:
        b = backend or get_backend()
        if not isinstance(data, b.array_type):
            data = b.asarray(data)
        self._array = data
        self._backend = b
        self._node = None
        self._vc = None
        if requires_grad:
            self.requires_grad_()
        if context.recorder is not None:
            context.recorder.created(self, "Tensor(...)")

    @classmethod
    def _make(cls, data: Any, backend: Backend, source: Tensor | None = None) -> Tensor:
        """A new tensor object for ``data`` (``source``: the tensor whose array it shares, for
        ``detach()``, ``.data``, ...: a compiled program reads that tensor)."""
        t = _new(cls)
        t._array = data
        t._backend = backend
        t._node = None  # (the per-operation path reads these: instance attributes are
        t._vc = None    # read faster than class defaults)
        if context.recorder is not None:
            context.recorder.created(t, source=source)
        return t

    @classmethod
    def _constant(cls, data: Any, backend: Backend) -> Tensor:
        """A new tensor for ``data`` made from static arguments only (shapes, dtypes, Python
        numbers): a constant of a program ``xad.compile`` records."""
        t = cls._make(data, backend)
        if context.recorder is not None:
            context.recorder.constant(t)
        return t

    @classmethod
    def _result(cls, array: Any, backend: Backend, node: _ag.Node | None = None, idx: int = 0,
                vc: list[int] | None = None) -> Tensor:
        """A new tensor for an operation's result, linked to ``node`` when recorded
        (``vc``: its own version counter, for a result the node saved)."""
        t = _new(cls)
        t._array = array
        t._backend = backend
        t._node = node
        t._idx = idx
        t.requires_grad = node is not None
        t._vc = vc
        return t

    def _accumulate(self, g: Tensor) -> None:
        """Add ``g`` into this tensor's array (an engine-made sum nobody else holds)."""
        out = self._array
        out += g._array  # in place where the array allows it (a JAX array gives a new one)
        if context.recorder is not None:
            context.recorder.call(_add_into, None, (self, g), out, "+=", target=self)
        self._array = out

    def _alias(self) -> Tensor:
        """Another tensor object for this one's current array and node (an in-place change
        records its node on the alias, which keeps the old value: an array never written
        again, so the alias counts its version alone)."""
        a = Tensor._result(self._array, self._backend, self._node, self._idx, [self._version])
        a.requires_grad = self.requires_grad
        if context.mode & HOOKED:
            if context.recorder is not None:
                context.recorder.created(a, "an in-place change")
            if context.transform is not None:  # a detach()'s own tangent (xad.jvp)
                context.transform.alias(self, a)
        return a

    def __copy__(self) -> Tensor:
        """``copy.copy``: a tensor of this one's class on its storage, outside any graph,
        with a version counter of its own (PyTorch's rebuilt tensor): a change of either is
        seen by the other on every backend (on JAX the copy had values of its own)."""
        t = self.data
        t.__class__ = type(self)
        if self.requires_grad:
            t.requires_grad_()
        return t

    def __deepcopy__(self, memo: dict) -> Tensor:
        """``copy.deepcopy``: a new storage, shared by the copies (made by the same call) of
        the tensors that share this one's, as PyTorch's: a copied view stays a view of its
        copied base (the default copy gave it an array of its own, and left the copy's list
        of views naming the original's)."""
        new = _new(type(self))
        memo[id(self)] = new
        base = self._base
        for k, v in self.__dict__.items():
            if k not in ("_array", "_base", "_views"):
                setattr(new, k, copy.deepcopy(v, memo))
        if base is None:
            new._array = copy.deepcopy(self._array, memo)
            return new
        new._base = b = copy.deepcopy(base, memo)
        if self._view_fn is None:  # detach(), .data
            new._array = b._array
        else:
            op, params = self._view_fn
            with b._backend.on_device():
                new._array = op.forward(b._backend, b._array, **params)
        if b._views is None:
            b._views = []
        b._views.append(weakref.ref(new))
        return new

    def _copy(self) -> Tensor:
        """A tensor with a fresh copy of the array (not recorded)."""
        t = Tensor._make(self._backend.xp.asarray(self._array, copy=True), self._backend)
        if context.recorder is not None:
            context.recorder.call(_copy_array, self._backend, (self,), t._array, "copy")
        return t

    # ----- attributes ------------------------------------------------------------------------
    @property
    def _version(self) -> int:
        """How many times this memory was changed in place (shared with its views)."""
        vc = self._vc
        return 0 if vc is None else vc[0]

    def _bump_version(self) -> None:
        """Count one in-place change of this tensor's memory (seen by its views too)."""
        vc = self._vc
        if vc is None:
            self._vc = [1]
        else:
            vc[0] += 1

    def _catch_up(self, version: int) -> None:
        """Count in-place changes until this memory's version is at least ``version`` (a
        compiled replay's kernels changed it without counting)."""
        while self._version < version:
            self._bump_version()

    def _set_data(self, array: Any, backend: Backend | None = None) -> None:
        """Change this tensor's values in place (its array, and its backend when moved):
        one more version, seen by every node that saved it."""
        if context.recorder is not None:
            context.recorder.bind(self, array, "_set_data")
        self._array = array
        if backend is not None:
            self._backend = backend
        self._bump_version()

    def _relocate(self, array: Any) -> None:
        """Hold the same values in other memory (``array``: a view of an optimiser's flat
        buffer, :mod:`xad.optim.multi_tensor`): no reader can see a change, so the version
        stays, and a compiled step, which does not relocate, counts the same."""
        if context.recorder is not None:
            context.recorder.bind(self, array, "_relocate")
        self._array = array

    def _rebind(self, array: Any, node: _ag.Node | None = None, idx: int = 0) -> None:
        """Replace this tensor's array (and node) by a new one, as an in-place change of its
        storage: arrays a recorded node saved stay as they were (an alias counts its own
        version), but the counter stays the storage's, so whoever counted versions with it
        sees one more, as after PyTorch's in-place changes (a saved result so changed raises
        at backward)."""
        if context.recorder is not None:
            context.recorder.bind(self, array, "_rebind")
        self._array = array
        self._bump_version()
        if node is not None:
            self._node, self._idx, self.requires_grad = node, idx, True
            if self._retains:
                self._keep_grad()
        if context.transform is not None:  # a detach_()'s own tangent (xad.jvp)
            context.transform.rebound(self)

    @property
    def grad(self) -> Tensor | None:
        """The gradient ``backward()`` accumulated here (``None`` until then).

        Example:
            >>> import xad
            >>> x = xad.ones(2, requires_grad=True); x.grad = xad.zeros(2); x.grad.tolist()
            [0.0, 0.0]
        """
        if context.recorder is not None:
            context.recorder.grad_read(self, self._grad)
        return self._grad

    @grad.setter
    def grad(self, g: Tensor | None) -> None:
        if g is not None:
            if not isinstance(g, Tensor):
                raise TypeError(f"assigned grad must be an xad tensor or None, got "
                                f"{type(g).__name__}; wrap an array with xad.tensor(...)")
            if g.shape != self.shape or g._backend is not self._backend:
                raise ValueError(f"assigned grad has shape {g.shape} on {g._backend.label}, "
                                 f"but the tensor has shape {self.shape} on "
                                 f"{self._backend.label}; they must match")
            if g._array.dtype != self._array.dtype:  # as PyTorch: a gradient has its dtype
                raise TypeError(f"assigned grad has dtype {g.dtype}, but the tensor (shape "
                                f"{self.shape}) has dtype {self.dtype}; cast it first: "
                                f"g.astype({self.dtype})")
        if context.recorder is not None:
            context.recorder.grad_set(self, g)
        self._grad = g

    def _set_grad_array(self, array: Any, keep: bool = False) -> None:
        """Set ``.grad`` to a new tensor holding ``array``, or to None (a compiled step's
        replay); ``keep``: the ``.grad`` there takes ``array`` (a sum added into it)."""
        if keep and self._grad is not None and array is not None:
            self._grad._set_data(array)
            return
        self._grad = None if array is None else Tensor._make(array, self._backend)

    @property
    def array(self) -> Any:
        """The backend array itself (no copy; the library reads ``_array``).

        Example:
            >>> import xad
            >>> type(xad.zeros(2).array).__name__
            'ndarray'
        """
        if context.recorder is not None:  # what is done with it is not recorded
            context.recorder.raw_read(self)
        return self._array

    @property
    def data(self) -> Tensor:
        """PyTorch's ``.data``: a tensor sharing this one's storage for its whole life,
        outside any graph, with a version counter of its own: an in-place change of either
        is seen by the other (``p.data += -lr * p.grad`` updates the parameter), also on
        backends with immutable arrays (JAX), and is not counted against the graph. The
        backend array itself is :attr:`array`.

        Example:
            >>> import xad
            >>> p = xad.ones(2, requires_grad=True); p.data -= 0.5; p.tolist()
            [0.5, 0.5]
        """
        d = Tensor._make(self._array, self._backend, self)
        self._adopt_view(d, None, None)
        d._vc = [0]
        d._data_of = True
        if context.transform is not None:  # xad.jvp: no tangent, as detach()
            context.transform.cut(d)
        return d

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor) or value._backend is not self._backend:
            raise TypeError(f"assigning .data needs an xad tensor on {self._backend.label}, "
                            f"got {type(value).__name__}")
        self._leave_views()
        self._set_data(value._array)
        if context.recorder is not None:  # a compiled replay leaves the views there too
            context.recorder.refreshed(self, "leave")

    def _leave_views(self) -> None:
        """Leave this tensor's views (and ``detach()``/``.data`` tensors) with its current
        storage, held by a new tensor outside any graph: ``p.data = t`` gives ``p`` another
        storage, and PyTorch's earlier views keep the old one (a change through them must not
        reach ``p``)."""
        views = self._live_views()
        if not views:
            return
        old = Tensor._make(self._array, self._backend)
        old._vc, old._views, self._views = self._vc, self._views, None
        for v in views:
            v._base = old

    def _adopt_view(self, view: Tensor, op: Any, params: dict | None) -> None:
        """Make ``view`` (just computed from this tensor by ``op``; ``None``: the same
        values, for ``detach()`` and ``.data``) a view of it: they count versions together,
        and when this tensor's array is replaced rather than written (a non-leaf, an
        immutable backend, a leaf that joins a graph) the view is remade from it."""
        self._share_version(view)
        view._view = True
        view._base = self
        view._view_fn = None if op is None else (op, params)
        if self._expanded or (op is not None and op.name in ("broadcast_to", "diagonal",
                                                            "as_strided")):
            view._expanded = True
        if self._views is None:
            self._views = []
        self._views.append(weakref.ref(view))

    def _live_views(self) -> list[Tensor]:
        """The views that follow this tensor and are still alive (the list is pruned)."""
        if not self._views:
            return []
        live = [v for v in (r() for r in self._views) if v is not None]
        self._views = [weakref.ref(v) for v in live]
        return live

    def _follow(self, fresh: Tensor) -> None:
        """Become ``fresh``, this view remade from its changed base."""
        self._array, self._vc = fresh._array, fresh._vc
        self._node, self._idx, self.requires_grad = fresh._node, fresh._idx, fresh.requires_grad
        if self._retains and self._node is not None:
            self._keep_grad()
        if context.transform is not None:  # xad.jvp: fresh's tangent, where held by identity
            context.transform.follow(self, fresh)

    def _become_view(self, fresh: Tensor) -> None:
        """Become ``fresh``, another view of this tensor's storage (``as_strided_``: PyTorch
        changes a tensor's sizes and strides in place); the tensor it viewed before no
        longer remakes it."""
        if self._base is not None and self._base._views:
            self._base._views = [r for r in self._base._views if r() is not self]
        self._follow(fresh)
        base = fresh._base
        assert base is not None and base._views is not None  # fresh is a view
        self._view, self._base, self._view_fn = True, base, fresh._view_fn
        self._expanded = fresh._expanded
        base._views.append(weakref.ref(self))

    def _follow_values(self, base: Tensor) -> None:
        """Take ``base``'s new array, as ``detach()`` and ``.data`` do: never its node (a
        detached tensor stays out of the graph); ``detach()`` keeps sharing its counter."""
        self._array = base._array
        if not self._data_of:
            self._vc = base._vc

    def _untracked(self, old: list[int] | None, version: int) -> None:
        """Undo the counting of a change made through ``.data`` (this tensor was at
        ``version`` on the counter ``old``): PyTorch does not count those."""
        for vc in (old, self._vc):
            if vc is not None:
                vc[0] = version

    def _replayed(self, how: str, array: Any) -> None:
        """``self.how(array)`` (``_set_data``, ``_rebind``) as a compiled replay writes it:
        uncounted, since the replay then adds the changes eager mode counted."""
        version = self._version
        getattr(self, how)(array)
        self._untracked(None, version)

    def _join(self, node: _ag.Node, idx: int) -> None:
        """Point at ``node`` (a recorded change of a ``detach()`` or ``.data`` tensor)."""
        self._node, self._idx, self.requires_grad = node, idx, True

    def _share_version(self, view: Tensor) -> None:
        """Make ``view`` (which shares this tensor's memory) count versions with it."""
        vc = self._vc
        if vc is None:
            vc = self._vc = [0]
        view._vc = vc

    @property
    def shape(self) -> tuple[int, ...]:
        s = self._array.shape
        return s if type(s) is tuple else tuple(s)  # torch.Size is a tuple subclass

    @property
    def ndim(self) -> int:
        return self._array.ndim

    @property
    def size(self) -> Size:
        """The number of elements (the Array API's attribute, an int) that can also be called
        as PyTorch's method: ``x.size()`` is the shape, ``x.size(0)`` one dimension.

        Example:
            >>> import xad
            >>> x = xad.zeros(2, 3); (x.size, x.size(), x.size(-1))
            (6, torch.Size([2, 3]), 3)
        """
        return Size(math.prod(self._array.shape), self.shape)

    @property
    def dtype(self) -> _dt.DType:
        native = self._array.dtype  # xad_dtype's cache read inline (a per-operation path)
        d = self._backend._from_native.get(native)
        return self._backend.xad_dtype(native) if d is None else d

    @property
    def device(self) -> Any:
        return self._backend.device

    @property
    def backend(self) -> Backend:
        return self._backend

    @property
    def is_leaf(self) -> bool:
        return self._node is None

    @property
    def grad_fn(self) -> _ag.Node | None:
        return self._node

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._array.shape[0]

    _print_options: dict = {}  # PyTorch's set_printoptions (xad.torch_functions sets them)

    def __repr__(self) -> str:
        try:
            body = _array_repr(self._backend.to_numpy(self._array), Tensor._print_options)
            if body.startswith("array("):
                body = re.sub(r",\s*dtype=[^)]*\)$", ")", body)[6:-1]
        except IndexError:  # a device-side index check failed: report it, never swallow it
            raise
        except Exception:  # an unreadable device: show the metadata only
            body = f"<shape {self.shape}>"
        extra = ""
        if self._node is not None:
            extra = f", grad_fn={self._node!r}"
        elif self.requires_grad:
            extra = ", requires_grad=True"
        return f"tensor({body}, dtype={self.dtype}, backend={self._backend.label}{extra})"

    # ----- host reads (explicit) ------------------------------------------------------------
    def numpy(self) -> Any:
        """A NumPy array of the values (a copy unless the backend is NumPy itself).

        Example:
            >>> import xad
            >>> xad.tensor([1.0]).numpy().tolist()
            [1.0]
        """
        if context.recorder is not None:
            context.recorder.host_read(self, "numpy()")
        return self._backend.to_numpy(self._array)

    def item(self) -> float | int | bool:
        """The Python number in a one-element tensor.

        Example:
            >>> import xad
            >>> xad.tensor([2.5]).item()
            2.5
        """
        if context.recorder is not None:
            context.recorder.host_read(self, "item()")
        return self._backend.item(self._array)

    def tolist(self) -> Any:
        """Nested Python lists of the values.

        Example:
            >>> import xad
            >>> xad.tensor([[1, 2]]).tolist()
            [[1, 2]]
        """
        return self.numpy().tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(f"the truth value of a tensor of shape {self.shape} is ambiguous; "
                             f"use .any() or .all()")
        return bool(self.item())

    def __index__(self) -> int:
        if self.dtype.is_floating or self.size != 1:
            raise TypeError("only one-element integer tensors can be used as an index")
        return int(self.item())

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        """The Array API namespace of xad tensors: the module ``xad`` (see docs/ARRAY_API.md).

        Example:
            >>> import xad
            >>> xad.ones(2).__array_namespace__() is xad
            True
        """
        if api_version not in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
            raise ValueError(f"__array_namespace__: xad implements the Array API 2024.12 "
                             f"(and the versions before it), not {api_version!r}")
        return sys.modules[__name__.rpartition(".")[0]]  # xad itself, without importing it

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        if not self._backend.is_host:
            raise TypeError(
                f"implicit conversion of a tensor on {self._backend.label} to a NumPy array "
                f"is not allowed (it would copy device memory to the host silently); call "
                f".numpy() for an explicit copy")
        if self.requires_grad:
            raise RuntimeError(_escape("a NumPy conversion (__array__, np.asarray)", self))
        if context.recorder is not None:
            context.recorder.host_read(self, "__array__ (a NumPy conversion)")
        a = self._array
        return a if dtype is None else a.astype(dtype)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NumPy ufuncs on tensors, as on PyTorch's CPU tensors. An operator's ufunc (an
        ndarray or NumPy scalar on the left of ``+``, ``<``, ...) is the tensor's operator,
        so the result is a tensor in the graph; any other ufunc (``np.exp(t)``,
        ``np.isfinite(t)``, ``out=``) runs in NumPy on the tensors' arrays, converted as by
        ``np.asarray`` (a host backend, no grad: else the same errors), and gives tensors.

        Example:
            >>> import numpy as np, xad
            >>> (np.ones(2) * xad.tensor([2.0, 3.0])).tolist(), bool(np.isfinite(xad.tensor(1.0)))
            ([2.0, 3.0], True)
        """
        names = _UFUNC_OPERATORS.get(ufunc.__name__)
        if names is not None and method == "__call__" and not kwargs and len(inputs) == 2:
            a, o = inputs
            if isinstance(a, Tensor):
                return getattr(a, names[0])(o)
            return getattr(o, names[1])(a)
        args = [x.__array__() if isinstance(x, Tensor) else x for x in inputs]
        if any(isinstance(x, Tensor) for x in kwargs.get("out", ())):
            raise TypeError(f"numpy.{ufunc.__name__}: out= cannot be a tensor (NumPy would "
                            f"write behind the graph's back); assign the result instead")
        out = getattr(ufunc, method)(*args, **kwargs)
        if "out" in kwargs:
            return out

        def wrap(r: Any) -> Any:
            return Tensor(self._backend.asarray(r), backend=self._backend) \
                if hasattr(r, "shape") else r
        return tuple(wrap(r) for r in out) if type(out) is tuple else wrap(out)

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """The backend array's DLPack capsule (the standard's zero-copy exchange); refused
        for a tensor that requires grad, whose array would leave the graph silently.

        Example:
            >>> import xad
            >>> xad.from_dlpack(xad.arange(3)).tolist()
            [0, 1, 2]
        """
        if self.requires_grad:
            raise RuntimeError(_escape("a DLPack export (__dlpack__, from_dlpack)", self))
        if context.recorder is not None:
            context.recorder.unsupported(f"a DLPack export of a tensor of shape {self.shape}; "
                                         f"return the tensor and export it outside")
        kw = {"stream": stream, "max_version": max_version, "dl_device": dl_device,
              "copy": copy}
        return self._array.__dlpack__(**{k: v for k, v in kw.items() if v is not None})

    def __dlpack_device__(self) -> tuple[int, int]:
        """The DLPack ``(device type, device id)`` of the array (``(1, 0)``: the CPU)."""
        return self._array.__dlpack_device__()

    # ----- graph --------------------------------------------------------------------------
    def backward(self, grad: Any = None, retain_graph: bool | None = False,
                 create_graph: bool = False, inputs: Any = None, *,
                 gradient: Any = None) -> None:
        """Accumulate the gradient of this tensor into ``.grad`` of the leaves behind it.

        A non-scalar tensor needs ``grad`` (same shape; PyTorch's keyword ``gradient=``
        too). The graph's saved values are freed afterwards unless ``retain_graph=True``.
        ``inputs`` limits it to those tensors.

        Example:
            >>> import xad
            >>> w = xad.tensor([3.0], requires_grad=True)
            >>> (w * w).sum().backward(); w.grad.tolist()
            [6.0]
        """
        if gradient is not None:
            if grad is not None:
                raise TypeError("backward: got both grad and gradient (the same argument, "
                                "PyTorch's name); pass one")
            grad = gradient
        _ag.backward(self, grad, retain_graph=bool(retain_graph or create_graph),
                     create_graph=create_graph, inputs=inputs)

    def detach(self) -> Tensor:
        """The same storage, cut from the graph: an in-place change of either is seen by the
        other for their whole life (on every backend) and counts against both versions, as
        PyTorch's.

        Example:
            >>> import xad
            >>> x = xad.zeros(2, requires_grad=True); d = x.detach(); d += 1
            >>> x.tolist(), d.requires_grad
            ([1.0, 1.0], False)
        """
        t = Tensor._make(self._array, self._backend, self)
        self._adopt_view(t, None, None)
        if context.transform is not None:  # xad.jvp: the detached tensor has no tangent
            context.transform.cut(t)
        return t

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph in place: it becomes a leaf that needs no grad
        (PyTorch's; a view of a tensor in a graph raises: use ``detach()``).

        Example:
            >>> import xad
            >>> y = xad.ones(2, requires_grad=True) * 2; _ = y.detach_()
            >>> y.requires_grad, y.is_leaf
            (False, True)
        """
        if self._base is not None and self._node is not None:
            raise RuntimeError(f"detach_: this tensor (shape {self.shape}) is a view of another "
                               f"in a graph and can't be detached in place; use .detach()")
        self._node, self._idx, self.requires_grad, self._retains = None, 0, False, False
        if context.transform is not None:
            context.transform.cut(self)
        return self

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` on a leaf, in place.

        Example:
            >>> import xad
            >>> xad.zeros(2).requires_grad_().requires_grad
            True
        """
        if self._node is not None and not requires_grad:
            raise RuntimeError("requires_grad_(False) on a non-leaf tensor: use .detach()")
        if requires_grad and not self.dtype.can_require_grad:
            raise TypeError(f"requires_grad_: only floating tensors (and complex ones) can "
                            f"require gradients, this one (shape {self.shape}) has dtype "
                            f"{self.dtype}; cast it "
                            f"first: x.astype(xad.float32).requires_grad_()")
        self.requires_grad = bool(requires_grad)
        return self

    def register_hook(self, fn: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Call ``fn(grad)`` when this tensor's gradient is computed; a returned tensor (of
        the gradient's shape, dtype and backend) replaces it. Returns a handle whose
        ``remove()`` takes the hook out.

        Example:
            >>> import xad
            >>> x = xad.ones(2, requires_grad=True)
            >>> h = x.register_hook(lambda g: g * 2)
            >>> x.sum().backward(); x.grad.tolist()
            [2.0, 2.0]
            >>> h.remove()
        """
        if not self.requires_grad:
            raise RuntimeError("register_hook: the tensor does not require grad")
        if self._node is not None:
            return self._node.register_hook(self._idx, fn)
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(fn)
        return RemovableHandle(self._hooks, fn)

    def register_post_accumulate_grad_hook(self, fn: Callable[[Tensor], None]
                                           ) -> RemovableHandle:
        """Call ``fn(self)`` after ``backward()`` has accumulated into this leaf's ``.grad``
        (PyTorch's; an optimiser step per parameter, say). Returns a removable handle.

        Example:
            >>> import xad
            >>> x = xad.ones(2, requires_grad=True); seen = []
            >>> h = x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
            >>> (x * 3).sum().backward(); seen
            [[3.0, 3.0]]
        """
        if self._node is not None or not self.requires_grad:
            raise RuntimeError("register_post_accumulate_grad_hook: only a leaf tensor that "
                               "requires grad accumulates a .grad; register it on one")
        if self._post_hooks is None:
            self._post_hooks = []
        self._post_hooks.append(fn)
        return RemovableHandle(self._post_hooks, fn)

    def retain_grad(self) -> None:
        """Keep the gradient of a non-leaf tensor in its ``.grad`` after backward.

        Example:
            >>> import xad
            >>> x = xad.ones(2, requires_grad=True); y = x * 3; y.retain_grad()
            >>> y.sum().backward(); y.grad.tolist()
            [1.0, 1.0]
        """
        if self._node is None or self._retains:
            return
        self._retains = True
        self._keep_grad()

    def _keep_grad(self) -> None:
        """Store the gradient of this tensor's current value in ``.grad`` (a hook on its
        node, made again when an in-place change gives it another: as PyTorch's, the
        gradient is the changed value's)."""
        ref, node = weakref.ref(self), self._node
        assert node is not None  # retain_grad() is a no-op on a leaf

        def keep(g: Tensor) -> None:
            t = ref()
            if t is not None and t._node is node:
                g = g.detach()
                t.grad = g if t.grad is None else t.grad + g
        keep.retains_grad = True  # type: ignore[attr-defined]  # runs after later hooks
        node.register_hook(self._idx, keep)

    # ----- conversion --------------------------------------------------------------------
    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """PyTorch's ``to``: move (a backend name such as ``"cupy"``, a Backend, ``"cpu"``,
        a device of this backend) and/or cast (an xad dtype): ``to(dtype)``,
        ``to(place, dtype)``, ``to(other_tensor)``, ``to(device=..., dtype=...,
        copy=False, non_blocking=False)``; ``to(backend_name, device)`` picks a device of
        that backend.

        Example:
            >>> import xad
            >>> xad.ones(2).to("array_api_strict").backend.name
            'array_api_strict'
            >>> xad.ones(2).to("cpu", xad.float64).dtype
            xad.float64
        """
        place, device, dtype, copy = to_arguments(args, kwargs)
        t = self if place is None else _to_place(self, place, device)
        if dtype is not None:
            t = _ops.astype(t, dtype, copy=False)
        return _ops.clone(t) if copy and t is self else t

    def astype(self, dtype: _dt.DType | str) -> Tensor:
        """Cast to ``dtype`` (differentiable between floating dtypes); ``self`` when it
        already has it, as PyTorch's ``.to(dtype)`` (the function ``xad.astype`` copies).

        Example:
            >>> import xad
            >>> xad.ones(1).astype(xad.float64).dtype
            xad.float64
        """
        return _ops.astype(self, dtype, copy=False)

    def clone(self, *, memory_format: Any = None) -> Tensor:
        """A copy with its own array (differentiable); ``memory_format`` is PyTorch's and
        keeps the layout the backend gives (:mod:`xad.memory_format`).

        Example:
            >>> import xad
            >>> xad.ones(2).clone().tolist()
            [1.0, 1.0]
        """
        _memory_format.checked(memory_format, "clone")
        return _ops.clone(self)

    # ----- operators ---------------------------------------------------------------------
    def __add__(self, o: Any) -> Tensor:
        return _binary(_ew.Add, self, o)

    def __radd__(self, o: Any) -> Tensor:
        return _binary(_ew.Add, o, self)

    def __sub__(self, o: Any) -> Tensor:
        return _binary(_ew.Subtract, self, o)

    def __rsub__(self, o: Any) -> Tensor:
        return _binary(_ew.Subtract, o, self)

    def __mul__(self, o: Any) -> Tensor:
        return _binary(_ew.Multiply, self, o)

    def __rmul__(self, o: Any) -> Tensor:
        return _binary(_ew.Multiply, o, self)

    def __truediv__(self, o: Any) -> Tensor:
        return _binary(_ew.Divide, self, o)

    def __rtruediv__(self, o: Any) -> Tensor:
        return _binary(_ew.Divide, o, self)

    def __pow__(self, o: Any) -> Tensor:
        return _ops.pow(self, o)  # a number exponent takes pow_scalar (saves less)

    def __rpow__(self, o: Any) -> Tensor:
        return _ops.pow(o, self)

    def __matmul__(self, o: Any) -> Tensor:
        return _ops.matmul(self, o)

    def __rmatmul__(self, o: Any) -> Tensor:
        return _ops.matmul(o, self)

    def __neg__(self) -> Tensor:
        return _ops.negative(self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return _ops.abs(self)

    def __eq__(self, o: Any) -> Tensor:  # type: ignore[override]
        return _ops.equal(self, o)

    def __ne__(self, o: Any) -> Tensor:  # type: ignore[override]
        return _ops.not_equal(self, o)

    def __lt__(self, o: Any) -> Tensor:
        return _ops.less(self, o)

    def __le__(self, o: Any) -> Tensor:
        return _ops.less_equal(self, o)

    def __gt__(self, o: Any) -> Tensor:
        return _ops.greater(self, o)

    def __ge__(self, o: Any) -> Tensor:
        return _ops.greater_equal(self, o)

    # bitwise on integers, logical on booleans (the same thing there), as NumPy and PyTorch
    def __invert__(self) -> Tensor:
        return _ops.bitwise_invert(self)

    def __and__(self, o: Any) -> Tensor:
        return _ops.bitwise_and(self, o)

    def __rand__(self, o: Any) -> Tensor:
        return _ops.bitwise_and(o, self)

    def __or__(self, o: Any) -> Tensor:
        return _ops.bitwise_or(self, o)

    def __ror__(self, o: Any) -> Tensor:
        return _ops.bitwise_or(o, self)

    def __xor__(self, o: Any) -> Tensor:
        return _ops.bitwise_xor(self, o)

    def __rxor__(self, o: Any) -> Tensor:
        return _ops.bitwise_xor(o, self)

    # the Array API's other operators (xad/ops/elementwise_math.py)
    def __floordiv__(self, o: Any) -> Tensor:
        return _ops.floor_divide(self, o)

    def __rfloordiv__(self, o: Any) -> Tensor:
        return _ops.floor_divide(o, self)

    def __mod__(self, o: Any) -> Tensor:
        return _ops.remainder(self, o)

    def __rmod__(self, o: Any) -> Tensor:
        return _ops.remainder(o, self)

    def __lshift__(self, o: Any) -> Tensor:
        return _ops.bitwise_left_shift(self, o)

    def __rlshift__(self, o: Any) -> Tensor:
        return _ops.bitwise_left_shift(o, self)

    def __rshift__(self, o: Any) -> Tensor:
        return _ops.bitwise_right_shift(self, o)

    def __rrshift__(self, o: Any) -> Tensor:
        return _ops.bitwise_right_shift(o, self)

    def to_device(self, device: Any, /, *, stream: Any = None) -> Tensor:
        """The standard's ``to_device``: only the backend's own device (see ``.to``)."""
        if device != self._backend.device:
            raise ValueError(f"to_device: {device!r} is not this tensor's device "
                             f"({self._backend.label}); move it with .to(backend_or_device)")
        return self

    __hash__ = object.__hash__  # identity, as PyTorch's: tensors are dict keys by object

    def __format__(self, spec: str) -> str:
        """PyTorch's: a 0-d tensor formats as its Python number (``f"{loss:.4f}"``); others
        take only the empty spec (their ``str``).

        Example:
            >>> import xad
            >>> f"{xad.tensor(2.0) / 3:.3f}"
            '0.667'
        """
        if self.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __getitem__(self, key: Any) -> Tensor:
        return _ops.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _ops.setitem_(self, key, value)

    def __iter__(self):
        n = len(self)  # a 0-d tensor refuses iter() itself, as NumPy and PyTorch do
        return (self[i] for i in range(n))

    # in-place: x op= y
    def __iadd__(self, o: Any) -> Tensor:
        return _ops.inplace(self, o, "add")

    def __isub__(self, o: Any) -> Tensor:
        return _ops.inplace(self, o, "subtract")

    def __imul__(self, o: Any) -> Tensor:
        return _ops.inplace(self, o, "multiply")

    def __itruediv__(self, o: Any) -> Tensor:
        return _ops.inplace(self, o, "divide")

    def __ifloordiv__(self, o: Any) -> Tensor:
        return _ops.inplace(self, o, "floor_divide")

    def __imod__(self, o: Any) -> Tensor:
        return _ops.inplace(self, o, "remainder")

    def __ipow__(self, o: Any) -> Tensor:
        return _ops.inplace(self, o, "pow")

    def __iand__(self, o: Any) -> Tensor:
        return _ops.inplace(self, o, "bitwise_and")

    def __ior__(self, o: Any) -> Tensor:
        return _ops.inplace(self, o, "bitwise_or")

    def __ixor__(self, o: Any) -> Tensor:
        return _ops.inplace(self, o, "bitwise_xor")

    def __ilshift__(self, o: Any) -> Tensor:
        return _ops.inplace(self, o, "bitwise_left_shift")

    def __irshift__(self, o: Any) -> Tensor:
        return _ops.inplace(self, o, "bitwise_right_shift")

    def add_(self, o: Any, *, alpha: float = 1) -> Tensor:
        """PyTorch's ``x.add_(o, alpha=a)``: ``x += a * o``.

        Example:
            >>> import xad
            >>> xad.ones(2).add_(xad.ones(2), alpha=-0.5).tolist()
            [0.5, 0.5]
        """
        return _ops.inplace(self, _ops.torch_compositions.alpha_scaled(self, o, alpha, "add_"),
                            "add")

    def sub_(self, o: Any, *, alpha: float = 1) -> Tensor:
        """PyTorch's ``x.sub_(o, alpha=a)``: ``x -= a * o``."""
        return _ops.inplace(self, _ops.torch_compositions.alpha_scaled(self, o, alpha, "sub_"),
                            "subtract")

    def mul_(self, o: Any) -> Tensor:
        """``x *= o``."""
        return _ops.inplace(self, o, "multiply")

    def div_(self, o: Any, *, rounding_mode: str | None = None) -> Tensor:
        """``x /= o``; with ``rounding_mode`` (``"trunc"``, ``"floor"``) :func:`xad.div`'s
        rounded quotient, in place."""
        if rounding_mode is None:
            return _ops.inplace(self, o, "divide")
        return _ops.assign_result(self, _ops.div(self._alias(), o, rounding_mode=rounding_mode),
                                  "div_")

    def zero_(self) -> Tensor:
        """Set every element to zero, in place.

        Example:
            >>> import xad
            >>> xad.ones(2).zero_().tolist()
            [0.0, 0.0]
        """
        return _ops.inplace(self, 0, "fill")

    def fill_(self, value: Any) -> Tensor:
        """Set every element to ``value``, in place.

        Example:
            >>> import xad
            >>> xad.zeros(2).fill_(3.0).tolist()
            [3.0, 3.0]
        """
        return _ops.inplace(self, value, "fill")

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:
        """Clamp every element to ``[min, max]``, in place (PyTorch's ``clamp_``).

        Example:
            >>> import xad
            >>> xad.tensor([-1.0, 0.5, 2.0]).clamp_(0.0, 1.0).tolist()
            [0.0, 0.5, 1.0]
        """
        _ops.assign_result(self, _ops.clamp(self._alias(), min, max), "clamp_")  # clamp()'s
        # gradient at a bound (PyTorch's); a dtype the tensor cannot hold raises
        return self

    clip_ = clamp_

    def uniform_(self, a: float = 0.0, b: float = 1.0, *,
                 generator: Generator | None = None) -> Tensor:
        """Fill with samples from ``U(a, b)``, in place (from ``generator`` when given).

        Example:
            >>> import xad
            >>> bool((xad.zeros(4).uniform_(2.0, 3.0) >= 2).all())
            True
        """
        be = self._backend
        with drawing(generator, be):
            u = be.rand(self.shape, self._array.dtype)
        with be.on_device():
            u = u * (b - a) + a
        _ops.setitem_(self, (...,), Tensor._make(u, be))
        return self

    def normal_(self, mean: float = 0.0, std: float = 1.0, *,
                generator: Generator | None = None) -> Tensor:
        """Fill with samples from ``N(mean, std**2)``, in place (from ``generator`` when given).

        Example:
            >>> import xad
            >>> xad.zeros(3).normal_(std=0.0).tolist()
            [0.0, 0.0, 0.0]
        """
        be = self._backend
        with drawing(generator, be):
            z = be.randn(self.shape, self._array.dtype)
        with be.on_device():
            z = z * std + mean
        _ops.setitem_(self, (...,), Tensor._make(z, be))
        return self

    def exponential_(self, lambd: float = 1.0, *, generator: Generator | None = None) -> Tensor:
        """Fill with samples from the exponential distribution of rate ``lambd``, in place.

        Example:
            >>> import xad
            >>> bool((xad.zeros(4).exponential_(2.0) >= 0).all())
            True
        """
        return self._drawn("exponential_", generator, lambda xp, u: -xp.log1p(-u) / lambd)

    def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *,
                generator: Generator | None = None) -> Tensor:
        """Fill with samples from the Cauchy distribution, in place.

        Example:
            >>> import xad
            >>> xad.zeros(2).cauchy_(sigma=0.0).tolist()
            [0.0, 0.0]
        """
        return self._drawn("cauchy_", generator,
                           lambda xp, u: median + sigma * xp.tan(math.pi * (u - 0.5)))

    def log_normal_(self, mean: float = 1.0, std: float = 2.0, *,
                    generator: Generator | None = None) -> Tensor:
        """Fill with ``exp`` of samples from ``N(mean, std**2)``, in place.

        Example:
            >>> import xad
            >>> xad.zeros(2).log_normal_(0.0, 0.0).tolist()
            [1.0, 1.0]
        """
        return self._drawn("log_normal_", generator, lambda xp, z: xp.exp(mean + std * z),
                           normal=True)

    def geometric_(self, p: float, *, generator: Generator | None = None) -> Tensor:
        """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2,
        ...), in place.

        Example:
            >>> import xad
            >>> xad.zeros(3).geometric_(1.0).tolist()
            [1.0, 1.0, 1.0]
        """
        if not 0 < p <= 1:
            raise ValueError(f"geometric_: p must be in (0, 1], got {p}")
        step = math.log1p(-p) if p < 1 else -math.inf
        return self._drawn("geometric_", generator,
                           lambda xp, u: xp.floor(xp.log1p(-u) / step) + 1, floating=False)

    def random_(self, *args: int, generator: Generator | None = None,
                **kwargs: int | None) -> Tensor:
        """Fill with integers drawn uniformly from ``[from, to)``, in place: PyTorch's
        ``random_(from, to)`` and ``random_(to)`` (``from`` 0); without ``to``, up to the
        dtype's largest integer (a floating dtype's: ``2**mantissa``, each exactly
        representable).

        Example:
            >>> import xad
            >>> bool((xad.zeros(5).random_(3, 5) >= 3).all())
            True
        """
        lo, to = (0, args[0]) if len(args) == 1 else (*args, None)[:2] if args else (
            kwargs.pop("from", 0), kwargs.pop("to", None))
        frm = 0 if lo is None else lo
        if kwargs or len(args) > 2:
            raise TypeError(f"random_: takes (from, to), (to) or from=/to= keywords, got "
                            f"{len(args)} numbers and keywords {sorted(kwargs)}")
        top = _largest_integer(self.dtype) + 1 if to is None else to
        if not frm < top:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                               f"from={frm} >= to={top}")
        return self._drawn("random_", generator,
                           lambda xp, u: xp.floor(u * float(top - frm)) + frm, floating=False)

    def _drawn(self, name: str, generator: Generator | None, make: Callable[[Any, Any], Any],
               normal: bool = False, floating: bool = True) -> Tensor:
        """The tensor filled with ``make(xp, draws)`` (float64 uniform, or standard normal
        draws), cast to its dtype; in place."""
        if floating and not self.dtype.is_floating:
            raise TypeError(f"{name}: fills a floating tensor, got one of dtype "
                            f"{self.dtype.name} and shape {self.shape}; cast it first")
        be = self._backend
        with drawing(generator, be):
            u = (be.randn if normal else be.rand)(self.shape, be.dtype(_dt.float64))
        with be.on_device():
            v = be.xp.astype(make(be.xp, u), self._array.dtype)
        _ops.setitem_(self, (...,), Tensor._make(v, be))
        return self

    def copy_(self, src: Tensor, non_blocking: builtins.bool = False) -> Tensor:
        """Copy ``src``'s values into this tensor, in place (not recorded); ``non_blocking``
        is PyTorch's and changes nothing (a backend's copies keep their stream's order).

        Example:
            >>> import xad
            >>> xad.zeros(2).copy_(xad.ones(2)).tolist()
            [1.0, 1.0]
        """
        return _ops.inplace(self, src, "copy")

    # ----- methods: PyTorch's names and keywords (``dim``/``keepdim``); ``axis``/``keepdims``
    # (the standard's spelling) are accepted too. Functions (``xad.sum``...) follow the standard.
    def sum(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=False) -> Tensor:
        """PyTorch's ``sum``: integer and bool tensors sum in int64 (:func:`xad.sum`, the
        standard's, keeps unsigned ones unsigned).

        Example:
            >>> import xad
            >>> xad.tensor([200, 100], dtype=xad.uint8).sum().tolist()
            300
        """
        return _ops.sum(self, axis=_over(dim, axis), keepdims=keepdim or keepdims,
                        dtype=_int64_for(self, dtype))

    def mean(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=False) -> Tensor:
        """See :func:`xad.mean` (``dtype``: PyTorch's, the tensor cast to it first)."""
        x = self if dtype is None else _ops.astype(self, dtype, copy=False)
        return _ops.mean(x, axis=_over(dim, axis), keepdims=keepdim or keepdims)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None,
            keepdims=False) -> Tensor:
        """PyTorch's ``var``: unbiased (``correction=1``) unless told; :func:`xad.var` (the
        standard's) defaults to ``correction=0``."""
        c = correction if correction is not None else 0 if unbiased is False else 1
        return _ops.torch_conventions.var(self, axis=_over(dim, axis), correction=c,
                                          keepdims=keepdim or keepdims)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None,
            keepdims=False) -> Tensor:
        """PyTorch's ``std``: unbiased (``correction=1``) unless told, and a gradient of 0,
        not NaN, for a constant; :func:`xad.std` (the standard's) defaults to
        ``correction=0`` and gives NaN there, as JAX."""
        c = correction if correction is not None else 0 if unbiased is False else 1
        return _ops.torch_conventions.std(self, axis=_over(dim, axis), correction=c,
                                          keepdims=keepdim or keepdims)

    def norm(self, p="fro", dim=None, keepdim=False) -> Tensor:
        """PyTorch's ``norm`` (gradient 0 at a zero vector; ``xad.linalg.vector_norm``, the
        standard's, gives NaN there, as JAX).

        Example:
            >>> import xad
            >>> xad.tensor([3.0, 4.0]).norm().item()
            5.0
        """
        return _ops.torch_conventions.norm(self, p, dim, keepdim)

    def atan2(self, other) -> Tensor:
        """PyTorch's ``atan2`` (gradient 0 at ``(0, 0)``; :func:`xad.atan2` gives NaN, as
        JAX)."""
        return _ops.torch_conventions.atan2(self, other)

    def copysign(self, other) -> Tensor:
        """PyTorch's ``copysign`` (gradient 0 where ``self`` is 0; :func:`xad.copysign`
        gives +-1 there, as JAX)."""
        return _ops.torch_conventions.copysign(self, other)

    def max(self, dim=None, keepdim=False, *, axis=None, keepdims=False) -> Any:
        """The largest element; with ``dim`` (PyTorch's) ``(values, indices)``; with
        ``axis=`` (the standard's) the values only; with a tensor, :func:`xad.maximum`.

        Example:
            >>> import xad
            >>> v, i = xad.tensor([[1.0, 5.0], [7.0, 2.0]]).max(dim=1); i.tolist()
            [1, 0]
        """
        return _extreme(self, dim, keepdim, axis, keepdims, "max")

    def min(self, dim=None, keepdim=False, *, axis=None, keepdims=False) -> Any:
        """The smallest element; see :meth:`max` for ``dim`` and ``axis``."""
        return _extreme(self, dim, keepdim, axis, keepdims, "min")

    def prod(self, dim=None, keepdim=False, *, dtype=None, axis=None,
             keepdims=False) -> Tensor:
        """PyTorch's ``prod``: integer and bool tensors multiply in int64."""
        return _ops.prod(self, axis=_ax(dim, axis), keepdims=keepdim or keepdims,
                         dtype=_int64_for(self, dtype))

    def logsumexp(self, dim=None, keepdim=False, *, axis=None, keepdims=False) -> Tensor:
        """See :func:`xad.logsumexp`."""
        return _ops.logsumexp(self, axis=_ax(dim, axis), keepdims=keepdim or keepdims)

    def argmax(self, dim=None, keepdim=False, *, axis=None, keepdims=False) -> Tensor:
        """See :func:`xad.argmax`."""
        return _ops.argmax(self, axis=_ax(dim, axis), keepdims=keepdim or keepdims)

    def argmin(self, dim=None, keepdim=False, *, axis=None, keepdims=False) -> Tensor:
        """See :func:`xad.argmin`."""
        return _ops.argmin(self, axis=_ax(dim, axis), keepdims=keepdim or keepdims)

    def any(self, dim=None, keepdim=False, *, axis=None, keepdims=False) -> Tensor:
        """See :func:`xad.any`."""
        return _ops.any(self, axis=_ax(dim, axis), keepdims=keepdim or keepdims)

    def all(self, dim=None, keepdim=False, *, axis=None, keepdims=False) -> Tensor:
        """See :func:`xad.all`."""
        return _ops.all(self, axis=_ax(dim, axis), keepdims=keepdim or keepdims)

    def cumsum(self, dim=None, *, dtype=None, axis=None) -> Tensor:
        """PyTorch's ``cumsum``: integer and bool tensors accumulate in int64."""
        d = _int64_for(self, dtype)
        return _ops.cumsum(self if d is None else _ops.astype(self, d, copy=False),
                           axis=_ax(dim, axis))

    def softmax(self, dim=-1, dtype=None, *, axis=None) -> Tensor:
        """See :func:`xad.softmax`; ``dtype`` casts first (PyTorch's)."""
        x = self if dtype is None else self.astype(dtype)
        return _ops.softmax(x, axis=_ax(dim, axis))

    def log_softmax(self, dim=-1, dtype=None, *, axis=None) -> Tensor:
        """See :func:`xad.log_softmax`; ``dtype`` casts first (PyTorch's)."""
        x = self if dtype is None else self.astype(dtype)
        return _ops.log_softmax(x, axis=_ax(dim, axis))

    def exp(self) -> Tensor:
        """See :func:`xad.exp`."""
        return _ops.exp(self)

    def log(self) -> Tensor:
        """See :func:`xad.log`."""
        return _ops.log(self)

    def log1p(self) -> Tensor:
        """See :func:`xad.log1p`."""
        return _ops.log1p(self)

    def expm1(self) -> Tensor:
        """See :func:`xad.expm1`."""
        return _ops.expm1(self)

    def sqrt(self) -> Tensor:
        """See :func:`xad.sqrt`."""
        return _ops.sqrt(self)

    def abs(self) -> Tensor:
        """See :func:`xad.abs`."""
        return _ops.abs(self)

    def round(self, decimals: int = 0) -> Tensor:
        """PyTorch's ``round``: half to even, at ``decimals`` places (:func:`xad.round`).

        Example:
            >>> import xad
            >>> xad.tensor([0.5, 1.5, 1.26], dtype=xad.float64).round(decimals=1).tolist()
            [0.5, 1.5, 1.3]
        """
        if decimals == 0:
            return _ops.round(self)
        s = 10.0 ** decimals
        return _ops.round(self * s) / s

    def pow(self, exponent: Any) -> Tensor:
        """``self ** exponent`` (PyTorch's method; :func:`xad.pow`)."""
        return self ** exponent

    def floor(self) -> Tensor:
        """See :func:`xad.floor`."""
        return _ops.floor(self)

    def ceil(self) -> Tensor:
        """See :func:`xad.ceil`."""
        return _ops.ceil(self)

    def trunc(self) -> Tensor:
        """See :func:`xad.trunc`."""
        return _ops.trunc(self)

    def sign(self) -> Tensor:
        """PyTorch's sign: :func:`xad.sign`, refusing complex tensors (use ``sgn``)."""
        return _ops.torch_conventions.sign(self)

    def floor_divide(self, other: Any) -> Tensor:
        """``self // other`` (:func:`xad.floor_divide`)."""
        return _ops.floor_divide(self, other)

    def remainder(self, other: Any) -> Tensor:
        """PyTorch's remainder: ``self % other``, the sign of ``other``, but a zero takes
        ``self``'s (``xad.ops.torch_conventions.remainder``)."""
        return _ops.torch_conventions.remainder(self, other)

    def sin(self) -> Tensor:
        """See :func:`xad.sin`."""
        return _ops.sin(self)

    def cos(self) -> Tensor:
        """See :func:`xad.cos`."""
        return _ops.cos(self)

    def tan(self) -> Tensor:
        """See :func:`xad.tan`."""
        return _ops.tan(self)

    def tanh(self) -> Tensor:
        """See :func:`xad.tanh`."""
        return _ops.tanh(self)

    def sigmoid(self) -> Tensor:
        """See :func:`xad.sigmoid`."""
        return _ops.sigmoid(self)

    def relu(self) -> Tensor:
        """See :func:`xad.relu`."""
        return _ops.relu(self)

    def gelu(self, approximate="none") -> Tensor:
        """See :func:`xad.gelu`."""
        return _ops.gelu(self, approximate=approximate)

    def softplus(self) -> Tensor:
        """See :func:`xad.softplus`."""
        return _ops.softplus(self)

    def clip(self, min=None, max=None) -> Tensor:
        """PyTorch's ``clamp`` (:func:`xad.clamp`: at a bound ``x`` gets all the gradient;
        :func:`xad.clip`, the standard's, shares it as JAX does)."""
        return _ops.clamp(self, min, max)

    clamp = clip

    def reshape(self, *shape) -> Tensor:
        """See :func:`xad.reshape` (a new view, never ``self``, as PyTorch's)."""
        return _fresh_view(self, _ops.reshape(self, _shape_arg(shape)))

    def view(self, *shape, dtype: _dt.DType | None = None) -> Tensor:
        """PyTorch's ``view``: :meth:`reshape` that never copies (it raises, as PyTorch's,
        where the elements' strides allow no view: ``x.t().view(-1)``); ``view(dtype)``
        reads the same memory as another dtype (PyTorch's bit reinterpretation: the last
        axis scales by the ratio of the element sizes; no gradient flows through it).

        Example:
            >>> import xad
            >>> xad.zeros(2, 3, 4).view(-1, 12).shape
            (2, 12)
            >>> xad.tensor([1.0, 2.0], dtype=xad.float64).view(xad.int32).shape
            (4,)
        """
        if dtype is None and len(shape) == 1 and isinstance(shape[0], _dt.DType):
            return _ops.view_dtype(self, shape[0])
        if dtype is not None:
            if shape:
                raise TypeError(f"view: got a shape {shape} and dtype={dtype}; give one")
            return _ops.view_dtype(self, dtype)
        return _fresh_view(self, _ops.reshape(self, _shape_arg(shape), copy=False))

    def view_as(self, other: Tensor) -> Tensor:
        """:meth:`view` to ``other``'s shape (never a copy: it raises where no view exists)."""
        return _fresh_view(self, _ops.reshape(self, other.shape, copy=False))

    def transpose(self, *axes) -> Tensor:
        """PyTorch's ``transpose(dim0, dim1)`` swaps two axes; more axes (or none) permute
        them as NumPy's does.

        Example:
            >>> import xad
            >>> xad.zeros(2, 3, 4).transpose(0, 2).shape
            (4, 3, 2)
        """
        axes = _shape_arg(axes)
        if len(axes) == 2 and self.ndim >= 2:
            order = list(range(self.ndim))
            i, j = (a % self.ndim for a in axes)
            order[i], order[j] = order[j], order[i]
            axes = tuple(order)
        return _ops.transpose(self, axes or None)

    def t(self) -> Tensor:
        """Transpose a tensor of at most two dimensions."""
        if self.ndim > 2:
            raise ValueError(f"t() expects a tensor with at most 2 dimensions, got shape "
                             f"{self.shape}; use .transpose(dim0, dim1) or .mT")
        return _ops.transpose(self)

    def permute_dims(self, *axes) -> Tensor:
        """See :func:`xad.permute_dims`."""
        return _ops.permute_dims(self, _shape_arg(axes))

    permute = permute_dims

    def squeeze(self, dim=None, *, axis=None) -> Tensor:
        """Remove axes of length one: all, or those in ``dim`` (PyTorch's: an axis of another
        length is left alone) or ``axis`` (the standard's: it must have length one).

        Example:
            >>> import xad
            >>> xad.zeros(2, 1).squeeze(0).shape, xad.zeros(2, 1).squeeze(-1).shape
            ((2, 1), (2,))
        """
        if dim is not None:
            dims = dim if isinstance(dim, (tuple, list)) else (dim,)
            dim = tuple(d for d in dims if self.shape[d] == 1)
            if not dim:
                return _ops.shape.view_of(self)
        return _fresh_view(self, _ops.squeeze(self, _ax(dim, axis)))

    def expand_dims(self, axis=0) -> Tensor:
        """See :func:`xad.expand_dims`."""
        return _ops.expand_dims(self, axis=axis)

    def unsqueeze(self, dim: int) -> Tensor:
        """PyTorch's name for :meth:`expand_dims`."""
        return _ops.expand_dims(self, axis=dim)

    def broadcast_to(self, shape) -> Tensor:
        """See :func:`xad.broadcast_to` (a new view, never ``self``); ``-1`` keeps a size,
        as PyTorch's (:meth:`expand`)."""
        return self.expand(shape)

    def expand(self, *sizes) -> Tensor:
        """PyTorch's ``expand``: :meth:`broadcast_to`, ``-1`` keeping a size."""
        sizes = _shape_arg(sizes)
        lead = len(sizes) - self.ndim
        if any(n == -1 for n in sizes[:lead]):
            raise ValueError(f"expand: -1 keeps a size, so it cannot stand for a new leading "
                             f"axis: sizes {sizes} for a tensor of shape {self.shape}")
        return _fresh_view(self, _ops.broadcast_to(self, tuple(
            self.shape[i - lead] if n == -1 and i >= lead else n for i, n in enumerate(sizes))))

    def expand_as(self, other: Tensor) -> Tensor:
        """:meth:`expand` to ``other``'s shape."""
        return _fresh_view(self, _ops.broadcast_to(self, other.shape))

    def repeat(self, *repeats) -> Tensor:
        """PyTorch's ``repeat``: :func:`xad.tile` (``xad.repeat`` is the standard's)."""
        return _ops.tile(self, _shape_arg(repeats))

    def flip(self, *args, dims=None, axis=None) -> Tensor:
        """PyTorch's ``flip(*dims)`` / ``flip(dims)`` (all axes when none); see
        :func:`xad.flip`."""
        if args:
            dims = _shape_arg(args) if dims is None else dims
        return _ops.flip(self, axis=_ax(dims, axis))

    def split(self, split_size_or_sections, dim: int = 0) -> tuple[Tensor, ...]:
        """PyTorch's ``split``: pieces of ``split_size_or_sections`` elements along ``dim``
        (the last may be shorter), or of each size in a list; :func:`xad.split` is NumPy's
        (a number of equal parts, or cut indices).

        Example:
            >>> import xad
            >>> [t.tolist() for t in xad.arange(5).split(2)]
            [[0, 1], [2, 3], [4]]
        """
        if not -self.ndim <= dim < self.ndim:
            raise IndexError(f"split: dim {dim} is out of range for a tensor of shape "
                             f"{self.shape}")
        n = self.shape[dim]
        if isinstance(split_size_or_sections, int):
            step = split_size_or_sections
            if step < 0 or step == 0 and n:
                raise ValueError(f"split: the piece size must be positive, got {step} for "
                                 f"dim {dim} of length {n}")
            sizes = [min(step, n - i) for i in range(0, n, step)] if n else [0]
        else:
            sizes = [int(k) for k in split_size_or_sections]
            if builtins.sum(sizes) != n or builtins.min(sizes, default=0) < 0:
                raise ValueError(f"split: sizes {sizes} do not add up to the length {n} of "
                                 f"dim {dim} of a tensor of shape {self.shape}")
        cuts = list(itertools.accumulate(sizes))[:-1]
        return tuple(_ops.split(self, cuts, axis=dim))

    def sort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> MaxMin:
        """PyTorch's ``sort``: ``(values, indices)`` (also ``.values``, ``.indices``);
        :func:`xad.sort` (the standard's) gives the values only. Ties keep their order.

        Example:
            >>> import xad
            >>> v, i = xad.tensor([3.0, 1.0, 2.0]).sort(); v.tolist(), i.tolist()
            ([1.0, 2.0, 3.0], [1, 2, 0])
        """
        x = self if self.ndim else _ops.reshape(self, (1,))
        i = _ops.argsort(x, axis=dim, descending=descending, stable=True)
        v = _ops.take_along_axis(x, i, axis=dim)
        return MaxMin((v, i) if self.ndim else (v[0], i[0]))

    def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
        """PyTorch's ``argsort`` (``dim`` may be positional); ties keep their order."""
        x = self if self.ndim else _ops.reshape(self, (1,))
        i = _ops.argsort(x, axis=dim, descending=descending, stable=True)
        return i if self.ndim else i[0]

    def nonzero(self, *, as_tuple: bool = False) -> Any:
        """PyTorch's ``nonzero``: an ``(n, ndim)`` int64 tensor of the non-zero elements'
        indices; ``as_tuple=True`` gives one index tensor per axis (the standard's
        :func:`xad.nonzero`).

        Example:
            >>> import xad
            >>> xad.tensor([[0, 1], [2, 0]]).nonzero().tolist()
            [[0, 1], [1, 0]]
        """
        x = self if self.ndim else _ops.reshape(self, (1,))
        parts = _ops.nonzero(x)
        if as_tuple:
            return parts
        out = _ops.stack([_ops.astype(p, _dt.int64, copy=False) for p in parts], axis=1)
        return out if self.ndim else out[:, :0]

    def equal(self, other: Tensor) -> builtins.bool:
        """PyTorch's ``equal``: ``True`` when ``other`` has this shape and the same values
        (one Python bool, read from the device); :func:`xad.equal` is elementwise.

        Example:
            >>> import xad
            >>> xad.tensor([1, 2]).equal(xad.tensor([1.0, 2.0]))
            True
        """
        if not isinstance(other, Tensor):
            raise TypeError(f"equal: expected a tensor, got {type(other).__name__}")
        if self.shape != other.shape:
            return False
        a, b = self, other
        if a.dtype is not b.dtype:  # PyTorch promotes (an int equals its float)
            d = a.dtype if a.dtype.is_floating else b.dtype if b.dtype.is_floating else _dt.int64
            a, b = _ops.astype(a, d, copy=False), _ops.astype(b, d, copy=False)
        return builtins.bool(_ops.all(_ops.equal(a, b)).item())  # explicit host read

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """See :func:`xad.flatten`."""
        return _ops.flatten(self, start_dim, end_dim)

    def cpu(self) -> Tensor:
        """The tensor in host memory: itself on a host backend, else a copy on NumPy."""
        return self if self._backend.is_host else self.to("numpy")

    def cuda(self, device: Any = None, non_blocking: builtins.bool = False,
             memory_format: Any = None) -> Tensor:
        """PyTorch's ``x.cuda()``: ``x.to("cuda")``, the tensor itself where its backend is
        on a CUDA device (CuPy); on a host backend it raises, naming xad's way (a tensor's
        place is its backend: ``xad.set_backend("cupy")``, ``--backend cupy``)."""
        _memory_format.checked(memory_format, "cuda")
        if not on_cuda(self._backend):
            raise NotImplementedError(
                f"Tensor.cuda(): this tensor is on {self._backend.label} (host memory); xad "
                f"places tensors by backend, not device: make them on CuPy "
                f"(xad.set_backend('cupy'), or python -m xad.as_torch --backend cupy) or move "
                f"this one with .to('cupy')")
        return self.to("cuda" if device is None else f"cuda:{device}")

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Whether the elements lie in row-major order in their storage, PyTorch's rule
        (axes of length one do not count; a transpose, a strided slice, an expanded axis or
        a complex tensor's ``real`` are not contiguous).

        Example:
            >>> import xad
            >>> x = xad.zeros(2, 3); x.is_contiguous(), x.t().is_contiguous()
            (True, False)
        """
        fmt = _memory_format.checked(memory_format, "is_contiguous")
        if fmt not in (None, _memory_format.contiguous_format):
            raise NotImplementedError(
                f"is_contiguous(memory_format={fmt!r}): xad keeps no channels-last layouts "
                f"(a memory_format request changes no layout); ask is_contiguous()")
        return _ops.layout.is_contiguous(self)

    def contiguous(self, memory_format: Any = None) -> Tensor:
        """The tensor itself where its elements lie in order in its storage, else a copy
        whose elements do, as PyTorch's (``x.t().contiguous().view(-1)``).

        Example:
            >>> import xad
            >>> x = xad.zeros(2, 3); x.contiguous() is x, x.t().contiguous().view(-1).shape
            (True, (6,))
        """
        _memory_format.checked(memory_format, "contiguous")
        if self.is_contiguous():
            return self
        return _ops.reshape(self, self.shape, copy=True)

    def matmul(self, o) -> Tensor:
        """See :func:`xad.matmul`."""
        return _ops.matmul(self, o)

    def mm(self, o: Tensor) -> Tensor:
        """``x.mm(y)``: the product of two 2-D matrices, PyTorch's (no broadcasting).

        Example:
            >>> import xad
            >>> xad.ones(2, 3).mm(xad.ones(3, 1)).tolist()
            [[3.0], [3.0]]
        """
        if self.ndim != 2 or getattr(o, "ndim", None) != 2:
            raise ValueError(f"mm: both operands must be 2-D matrices, got shapes "
                             f"{tuple(self.shape)} and {tuple(getattr(o, 'shape', ()))}; "
                             f"use matmul (@) for batches or vectors")
        return _ops.matmul(self, o)

    def gather(self, dim: int, index: Tensor) -> Tensor:
        """See :func:`xad.gather`."""
        return _ops.gather(self, dim, index)

    def scatter_add(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        """See :func:`xad.scatter_add`."""
        return _ops.scatter_add(self, dim, index, src)

    def index_select(self, dim: int, index: Tensor) -> Tensor:
        """See :func:`xad.index_select`."""
        return _ops.index_select(self, dim, index)

    def masked_fill(self, mask: Any, value: Any) -> Tensor:
        """See :func:`xad.masked_fill`."""
        return _ops.masked_fill(self, mask, value)

    def masked_fill_(self, mask: Any, value: Any) -> Tensor:
        """:meth:`masked_fill`, in place."""
        return _ops.assign_result(self, _ops.masked_fill(self._alias(), mask, value),
                                  "masked_fill_")

    # PyTorch's methods over :mod:`xad.ops.torch_compositions` (their docstrings there)
    def addcmul(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
        """See :func:`xad.addcmul`."""
        return _ops.addcmul(self, tensor1, tensor2, value=value)

    def addcdiv(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
        """See :func:`xad.addcdiv`."""
        return _ops.addcdiv(self, tensor1, tensor2, value=value)

    def lerp(self, end: Tensor, weight: Any) -> Tensor:
        """See :func:`xad.lerp`."""
        return _ops.lerp(self, end, weight)

    def addcmul_(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
        """:meth:`addcmul`, in place (``exp_avg_sq.addcmul_(g, g, value=1 - beta2)``).

        Example:
            >>> import xad
            >>> xad.ones(2).addcmul_(xad.ones(2), xad.tensor([2.0, 3.0]), value=2).tolist()
            [5.0, 7.0]
        """
        return _ops.assign_result(self, _ops.addcmul(self._alias(), tensor1, tensor2,
                                                     value=value), "addcmul_")

    def addcdiv_(self, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Tensor:
        """:meth:`addcdiv`, in place (``p.addcdiv_(exp_avg, denom, value=-step_size)``)."""
        return _ops.assign_result(self, _ops.addcdiv(self._alias(), tensor1, tensor2,
                                                     value=value), "addcdiv_")

    def lerp_(self, end: Tensor, weight: Any) -> Tensor:
        """:meth:`lerp`, in place (``exp_avg.lerp_(grad, 1 - beta1)``)."""
        return _ops.assign_result(self, _ops.lerp(self._alias(), end, weight), "lerp_")

    def hypot(self, other: Any) -> Tensor:
        """See :func:`xad.hypot`."""
        return _ops.hypot(self, other)

    def logaddexp(self, other: Any) -> Tensor:
        """See :func:`xad.logaddexp`."""
        return _ops.logaddexp(self, other)

    def logaddexp2(self, other: Any) -> Tensor:
        """See :func:`xad.logaddexp2`."""
        return _ops.logaddexp2(self, other)

    def xlogy(self, other: Any) -> Tensor:
        """See :func:`xad.xlogy`."""
        return _ops.xlogy(self, other)

    def polygamma(self, n: int) -> Tensor:
        """PyTorch's ``x.polygamma(n)``: :func:`xad.polygamma` ``(n, x)``."""
        return _ops.polygamma(n, self)

    def diff(self, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None,
             ) -> Tensor:
        """PyTorch's ``x.diff(n=1, dim=-1, prepend=None, append=None)`` (of bools: ``!=``)."""
        if self.dtype is _dt.bool_:
            return _ops.torch_compositions.diff_bool(self, n, dim, prepend, append)
        return _ops.diff(self, axis=dim, n=n, prepend=prepend, append=append)

    def cross(self, other: Tensor, dim: int | None = None) -> Tensor:
        """See :func:`xad.cross`."""
        return _ops.cross(self, other, dim)

    def masked_select(self, mask: Tensor) -> Tensor:
        """See :func:`xad.masked_select`."""
        return _ops.masked_select(self, mask)

    def masked_scatter(self, mask: Tensor, source: Tensor) -> Tensor:
        """See :func:`xad.masked_scatter`."""
        return _ops.masked_scatter(self, mask, source)

    def masked_scatter_(self, mask: Tensor, source: Tensor) -> Tensor:
        """:meth:`masked_scatter`, in place."""
        return _ops.assign_result(self, _ops.masked_scatter(self._alias(), mask, source),
                                  "masked_scatter_")

    def take_along_dim(self, indices: Tensor, dim: int | None = None) -> Tensor:
        """See :func:`xad.take_along_dim`."""
        return _ops.take_along_dim(self, indices, dim)

    def nan_to_num(self, nan: float = 0.0, posinf: float | None = None,
                   neginf: float | None = None) -> Tensor:
        """See :func:`xad.nan_to_num`."""
        return _ops.nan_to_num(self, nan, posinf, neginf)

    def nan_to_num_(self, nan: float = 0.0, posinf: float | None = None,
                    neginf: float | None = None) -> Tensor:
        """:meth:`nan_to_num`, in place."""
        return _ops.assign_result(self, _ops.nan_to_num(self._alias(), nan, posinf, neginf),
                                  "nan_to_num_")

    def rot90(self, k: int = 1, dims: Any = (0, 1)) -> Tensor:
        """See :func:`xad.rot90`."""
        return _ops.rot90(self, k, dims)

    def histc(self, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
        """See :func:`xad.histc`."""
        return _ops.histc(self, bins, min, max)

    def scatter(self, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
                reduce: str | None = None) -> Tensor:
        """PyTorch's ``scatter``: ``src`` (a tensor or number, or ``value=``) written at
        ``index`` along ``dim``; ``reduce="add"`` adds instead (see :meth:`scatter_add`).

        Example:
            >>> import xad
            >>> xad.zeros(3).scatter(0, xad.tensor([1]), 7.0).tolist()
            [0.0, 7.0, 0.0]
        """
        src = value if src is None else src
        if reduce == "add":
            if not isinstance(src, Tensor):  # the number in the tensor's dtype (PyTorch's)
                src = _ops.astype(_ops.astype(index, self.dtype) * 0 + src, self.dtype)
            return _ops.scatter_add(self, dim, index, src)
        if reduce is not None:
            raise NotImplementedError(f"scatter: reduce={reduce!r} is not supported (None or "
                                      f"'add')")
        return _ops.scatter_reductions.scatter(self, dim, index, src)

    def scatter_(self, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
                 reduce: str | None = None) -> Tensor:
        """:meth:`scatter`, in place."""
        out = self._alias().scatter(dim, index, src, value=value, reduce=reduce)
        _ops.setitem_(self, (...,), out)
        return self

    def scatter_add_(self, dim: int, index: Tensor, src: Tensor) -> Tensor:
        """:meth:`scatter_add`, in place."""
        _ops.setitem_(self, (...,), _ops.scatter_add(self._alias(), dim, index, src))
        return self

    def index_add(self, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
        """PyTorch's ``index_add``: ``alpha * source`` added at the slices ``index`` names."""
        return _ops.select.index_add(self, dim, index, source, alpha)

    def index_add_(self, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
        """:meth:`index_add`, in place.

        Example:
            >>> import xad
            >>> xad.zeros(2, 2).index_add_(0, xad.tensor([1]), xad.ones(1, 2)).tolist()
            [[0.0, 0.0], [1.0, 1.0]]
        """
        out = _ops.select.index_add(self._alias(), dim, index, source, alpha)
        _ops.setitem_(self, (...,), out)
        return self

    def index_fill(self, dim: int, index: Tensor, value: Any) -> Tensor:
        """PyTorch's ``index_fill``: ``value`` in the slices ``index`` names along ``dim``."""
        return _ops.select.index_fill(self, dim, index, value)

    def index_fill_(self, dim: int, index: Tensor, value: Any) -> Tensor:
        """:meth:`index_fill`, in place."""
        _ops.setitem_(self, (...,), _ops.select.index_fill(self._alias(), dim, index, value))
        return self

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True
             ) -> MaxMin:
        """PyTorch's ``topk``: the ``k`` largest (or smallest) along ``dim`` as ``(values,
        indices)``, in order (ties keep their order).

        Example:
            >>> import xad
            >>> v, i = xad.tensor([1.0, 5.0, 3.0]).topk(2); v.tolist(), i.tolist()
            ([5.0, 3.0], [1, 2])
        """
        x = self if self.ndim else _ops.reshape(self, (1,))
        n = x.shape[dim]
        if not 0 <= k <= n:
            raise ValueError(f"topk: k={k} is out of range for dim {dim} of size {n} "
                             f"(shape {self.shape})")
        i = _ops.argsort(x, axis=dim, descending=largest, stable=True)
        i = _ops.moveaxis(_ops.moveaxis(i, dim, -1)[..., :k], -1, dim)
        v = _ops.take_along_axis(x, i, axis=dim)
        return MaxMin((v, i) if self.ndim else (v[0], i[0]))

    def kthvalue(self, k: int, dim: int = -1, keepdim: bool = False) -> MaxMin:
        """PyTorch's ``kthvalue``: the ``k``-th smallest (from 1) along ``dim`` as
        ``(values, indices)``.

        Example:
            >>> import xad
            >>> v, i = xad.tensor([4.0, 1.0, 3.0]).kthvalue(2); v.item(), i.item()
            (3.0, 2)
        """
        x = self if self.ndim else _ops.reshape(self, (1,))
        n = x.shape[dim]
        if not 1 <= k <= n:
            raise ValueError(f"kthvalue: k={k} is out of range for dim {dim} of size {n} "
                             f"(shape {self.shape})")
        i = _ops.argsort(x, axis=dim, stable=True)
        i = _ops.moveaxis(_ops.moveaxis(i, dim, -1)[..., k - 1:k], -1, dim)
        v = _ops.take_along_axis(x, i, axis=dim)
        if not keepdim:
            v, i = _ops.squeeze(v, axis=dim), _ops.squeeze(i, axis=dim)
        return MaxMin((v, i) if self.ndim else (v.reshape(()), i.reshape(())))

    # ----- PyTorch's reductions the standard lacks (xad/ops/torch_reductions.py,
    # xad/ops/order_statistics.py) ---------------------------------------------------------
    def cumprod(self, dim: int, *, dtype: Any = None) -> Tensor:
        """PyTorch's ``cumprod`` (integer and bool tensors in int64); see :func:`xad.cumprod`."""
        return _ops.cumprod(self, axis=dim, dtype=_int64_for(self, dtype))

    def amax(self, dim: Any = (), keepdim: bool = False) -> Tensor:
        """See :func:`xad.amax` (ties share the gradient)."""
        return _ops.amax(self, axis=_ax(dim, None), keepdims=keepdim)

    def amin(self, dim: Any = (), keepdim: bool = False) -> Tensor:
        """See :func:`xad.amin` (ties share the gradient)."""
        return _ops.amin(self, axis=_ax(dim, None), keepdims=keepdim)

    def nansum(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        """See :func:`xad.nansum` (integer and bool tensors in int64)."""
        return _ops.nansum(self, axis=_over(dim, None), keepdims=keepdim,
                           dtype=_int64_for(self, dtype))

    def nanmean(self, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
        """See :func:`xad.nanmean`."""
        return _ops.nanmean(self, axis=_over(dim, None), keepdims=keepdim, dtype=dtype)

    def median(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """PyTorch's lower ``median``; see :func:`xad.ops.order_statistics.median`."""
        return _ops.median(self, dim, keepdim)

    def nanmedian(self, dim: int | None = None, keepdim: bool = False) -> Any:
        """See :func:`xad.ops.order_statistics.nanmedian`."""
        return _ops.nanmedian(self, dim, keepdim)

    def quantile(self, q: Any, dim: int | None = None, keepdim: bool = False, *,
                 interpolation: str = "linear") -> Tensor:
        """See :func:`xad.ops.order_statistics.quantile`."""
        return _ops.quantile(self, q, dim, keepdim, interpolation=interpolation)

    def nanquantile(self, q: Any, dim: int | None = None, keepdim: bool = False, *,
                    interpolation: str = "linear") -> Tensor:
        """See :func:`xad.ops.order_statistics.nanquantile`."""
        return _ops.nanquantile(self, q, dim, keepdim, interpolation=interpolation)

    def mode(self, dim: int = -1, keepdim: bool = False) -> MaxMin:
        """See :func:`xad.ops.order_statistics.mode`."""
        return _ops.mode(self, dim, keepdim)

    # ----- PyTorch's comparison names, casts and sizes ----------------------------------------
    def eq(self, o: Any) -> Tensor:
        return _ops.equal(self, o)

    def ne(self, o: Any) -> Tensor:
        return _ops.not_equal(self, o)

    def lt(self, o: Any) -> Tensor:
        return _ops.less(self, o)

    def le(self, o: Any) -> Tensor:
        return _ops.less_equal(self, o)

    def gt(self, o: Any) -> Tensor:
        return _ops.greater(self, o)

    def ge(self, o: Any) -> Tensor:
        return _ops.greater_equal(self, o)

    def float(self) -> Tensor:
        """Cast to float32 (``self`` when it is float32 already, as PyTorch's)."""
        return _ops.astype(self, _dt.float32, copy=False)

    def double(self) -> Tensor:
        """Cast to float64 (``self`` when it is float64 already, as PyTorch's)."""
        return _ops.astype(self, _dt.float64, copy=False)

    def half(self) -> Tensor:
        """Cast to float16 (``self`` when it is float16 already)."""
        return _ops.astype(self, _dt.float16, copy=False)

    def long(self) -> Tensor:
        """Cast to int64 (``self`` when it is int64 already)."""
        return _ops.astype(self, _dt.int64, copy=False)

    def int(self) -> Tensor:
        """Cast to int32 (``self`` when it is int32 already)."""
        return _ops.astype(self, _dt.int32, copy=False)

    def bool(self) -> Tensor:
        """Cast to bool (``self`` when it is bool already)."""
        return _ops.astype(self, _dt.bool_, copy=False)

    def type_as(self, other: Tensor) -> Tensor:
        """Cast to ``other``'s dtype (``self`` when it has it already)."""
        return _ops.astype(self, other.dtype, copy=False)

    def new_full(self, size: Any, fill_value: Any, *, dtype: Any = None,
                 requires_grad: builtins.bool = False, **unused: Any) -> Tensor:
        """PyTorch's ``x.new_full(size, value)``: a new tensor with ``x``'s dtype and backend
        unless ``dtype`` is given (``device``, ``layout`` and ``pin_memory`` are ignored).

        Example:
            >>> import xad
            >>> w = xad.ones(2, dtype=xad.float64)
            >>> z = w.new_zeros(1, 3); z.shape, z.dtype, w.new_full((2,), 7).tolist()
            ((1, 3), xad.float64, [7.0, 7.0])
        """
        xad = self.__array_namespace__()
        shape = (size,) if isinstance(size, int) else tuple(size)
        return xad.full(shape, fill_value, dtype=dtype or self.dtype,
                        requires_grad=requires_grad, backend=self._backend)

    def new_zeros(self, *size: Any, **kwargs: Any) -> Tensor:
        """PyTorch's ``x.new_zeros(*size)``: see :meth:`new_full`."""
        return self.new_full(_size_arg(size), 0, **kwargs)

    def new_ones(self, *size: Any, **kwargs: Any) -> Tensor:
        """PyTorch's ``x.new_ones(*size)``: see :meth:`new_full`."""
        return self.new_full(_size_arg(size), 1, **kwargs)

    new_empty = new_zeros

    def new_tensor(self, data: Any, *, dtype: Any = None, requires_grad: builtins.bool = False,
                   **unused: Any) -> Tensor:
        """PyTorch's ``x.new_tensor(data)``: a copy of ``data`` with ``x``'s dtype and backend
        unless ``dtype`` is given."""
        xad = self.__array_namespace__()
        return xad.tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad,
                          backend=self._backend)

    def narrow(self, dim: builtins.int, start: builtins.int, length: builtins.int) -> Tensor:
        """PyTorch's ``x.narrow(dim, start, length)``: elements ``start:start+length`` along
        ``dim``, a view (it shares storage, as a basic slice does).

        Example:
            >>> import xad
            >>> xad.arange(6).narrow(0, 1, 3).tolist()
            [1, 2, 3]
        """
        d = dim + self.ndim if dim < 0 else dim
        n = self.shape[d] if 0 <= d < self.ndim else -1
        start = start + n if start < 0 else start
        if n < 0 or not (0 <= start and length >= 0 and start + length <= n):
            raise IndexError(f"narrow(dim={dim}, start={start}, length={length}): out of range "
                             f"for a tensor of shape {tuple(self.shape)}")
        return self[(slice(None),) * d + (slice(start, start + length),)]

    def type(self, dtype: Any = None) -> Any:
        """PyTorch's ``x.type(dtype)``: a cast (no copy when the dtype is already that);
        ``x.type()`` names the tensor type as PyTorch does (``'torch.FloatTensor'``).

        Example:
            >>> import xad
            >>> x = xad.tensor([1, 2]); x.type(), x.type(xad.float64).dtype
            ('torch.LongTensor', xad.float64)
        """
        if dtype is None:
            return f"torch.{_TENSOR_TYPES.get(self.dtype.name, self.dtype.name)}"
        return self if dtype == self.dtype else _ops.astype(self, dtype)

    def numel(self) -> builtins.int:
        """The number of elements (the standard's ``size`` attribute)."""
        return math.prod(self._array.shape)

    nelement = numel

    def resize_(self, *sizes: Any) -> Tensor:
        """PyTorch's ``x.resize_(*sizes)``: this tensor takes the new shape in place, its
        elements in order as far as they go and zeros after them (PyTorch leaves those
        uninitialised). Refused for a tensor that requires grad (as PyTorch), and for a view
        or a tensor with live views where the shape changes: xad gives the resized tensor a
        new storage, where PyTorch's may stay shared with them.

        Example:
            >>> import xad
            >>> xad.tensor([1.0, 2.0, 3.0]).resize_(2, 2).tolist()
            [[1.0, 2.0], [3.0, 0.0]]
        """
        shape = tuple(builtins.int(d) for d in _size_arg(sizes))
        if shape == tuple(self._array.shape):
            return self
        what = f"resize_ of a tensor of shape {tuple(self._array.shape)} to {shape}"
        if self.requires_grad:
            raise RuntimeError(f"{what}: cannot resize a tensor that requires grad; "
                               "resize x.detach() or make a new tensor")
        if self._base is not None or self._live_views():
            raise RuntimeError(f"{what}: the tensor is a view or has views, which would no "
                               "longer share its storage in xad; make a new tensor instead")
        n, size = math.prod(shape), self.numel()
        flat = _ops.reshape(Tensor._make(self._array, self._backend), (-1,))[:n]
        if n > size:
            flat = _ops.concat([flat, self.new_zeros(n - size)])
        self._set_data(_ops.reshape(flat, shape)._array)
        return self

    def dim(self) -> builtins.int:
        """The number of dimensions (``ndim``)."""
        return self._array.ndim

    @property
    def T(self) -> Tensor:
        return _ops.transpose(self)

    @property
    def mT(self) -> Tensor:
        return _ops.matrix_transpose(self)

    @property
    def real(self) -> Tensor:
        """PyTorch's ``z.real``: the real part, a view of a complex tensor (a write into it
        changes ``z``); a real tensor itself.

        Example:
            >>> import xad
            >>> z = xad.complex_from_parts(xad.tensor([1.0]), xad.tensor([2.0]))
            >>> _ = z.real.mul_(3.0); z.tolist()
            [(3+2j)]
        """
        return _ops.real(self)

    @property
    def imag(self) -> Tensor:
        """PyTorch's ``z.imag``: the imaginary part, a view of a complex tensor; a real
        tensor has none (PyTorch raises too: ``xad.imag`` gives its zeros, a new tensor)."""
        if not self.dtype.name.startswith("complex"):
            raise RuntimeError(f"imag: the tensor (shape {self.shape}) has the real dtype "
                               f"{self.dtype.name}, whose imaginary part is no view of it "
                               f"(PyTorch refuses too); use xad.imag(x) for its zeros")
        return _ops.imag(self)


def _fresh_view(x: Tensor, out: Tensor) -> Tensor:
    """``out``, a view method's result, or a new view of ``x`` where it is ``x`` itself."""
    return _ops.shape.view_of(x) if out is x else out


def _array_repr(a: Any, opts: dict) -> str:
    """``repr`` of the NumPy array ``a`` under PyTorch-style print options (NumPy's own
    module, reached through the array: the engine imports no array library)."""
    if not opts:
        return repr(a)
    np = sys.modules[type(a).__module__.partition(".")[0]]
    kw = {k: opts[k] for k in ("precision", "edgeitems", "linewidth") if k in opts}
    if "threshold" in opts:
        kw["threshold"] = min(opts["threshold"], sys.maxsize)
    if opts.get("sci_mode") is False:
        kw["suppress"] = True
    elif opts.get("sci_mode"):
        p = opts.get("precision", 4)
        kw["formatter"] = {"float_kind": lambda v: f"{v:.{p}e}"}
    with np.printoptions(**kw):
        return repr(a)


def on_cuda(b: Backend) -> builtins.bool:
    """Whether ``b`` keeps its arrays on a CUDA device (what PyTorch calls ``"cuda"``)."""
    return b.name.startswith("cupy") or "cuda" in repr(b.device).lower()


def to_arguments(args: tuple, kwargs: dict) -> tuple:
    """``Tensor.to``'s arguments as ``(place, device, dtype, copy)``."""
    unknown = set(kwargs) - {"device", "dtype", "copy", "non_blocking", "memory_format"}
    if unknown or len(args) > 2:
        raise TypeError(f"to(): unexpected arguments {sorted(unknown) or args[2:]}; use "
                        f"to(dtype), to(device_or_backend, dtype), to(other_tensor) or "
                        f"to(device=..., dtype=..., copy=...)")
    _memory_format.checked(kwargs.get("memory_format"), "to")
    place, device, dtype = None, kwargs.get("device"), kwargs.get("dtype")
    for a in args:
        if isinstance(a, Tensor):
            place, dtype = a._backend, a.dtype
        elif isinstance(a, _dt.DType):
            dtype = a
        elif place is None:
            place = a
        else:
            device = a
    if place is None:
        place, device = device, None
    return place, device, _dt.as_dtype(dtype), kwargs.get("copy", False)


def _to_place(t: Tensor, place: Any, device: Any) -> Tensor:
    """``t`` on ``place``: ``"cpu"`` (host memory), ``"cuda..."`` (this backend when it is a
    device's), a backend name or Backend (with ``device``), or a device of ``t``'s backend."""
    name = str(place) if device is None else ""
    if name == "cpu":
        return t.cpu() if on_cuda(t._backend) else t
    if name.startswith("cuda"):
        if not on_cuda(t._backend):
            raise NotImplementedError(
                f"to({name!r}): this tensor is on {t._backend.label} (host memory); xad "
                f"places tensors by backend: run with `python -m xad.as_torch --backend "
                f"cupy` (or xad.set_backend('cupy')), or move it with .to('cupy')")
        return t
    return _ops.to_backend(t, place, device)


def _int64_for(x: Tensor, dtype: Any) -> Any:
    """PyTorch's accumulation dtype for ``sum``/``prod``/``cumsum``: ``dtype`` when given,
    int64 for integer and bool tensors, else ``None`` (the tensor's own)."""
    exact = x.dtype.name.startswith(("int", "uint", "bool"))
    return _dt.int64 if dtype is None and exact else dtype


def _over(dim: Any, axis: Any) -> Any:
    """:func:`_ax` for PyTorch's ``sum``/``mean``/``var``/``std``/``nansum``/``nanmean``,
    where an empty ``dim`` (``dim=()``, ``dim=[]``) reduces every axis; the standard's
    ``axis=()`` reduces none."""
    a = _ax(dim, axis)
    return None if dim is not None and a == () else a


def _ax(dim: Any, axis: Any) -> Any:
    """The axis a method was given as PyTorch's ``dim`` or the standard's ``axis``."""
    if dim is not None and axis is not None:
        raise TypeError("give the axis as dim= or axis=, not both")
    a = dim if axis is None else axis
    return tuple(a) if isinstance(a, list) else a


class MaxMin(tuple):
    """PyTorch's ``(values, indices)`` result of ``max(dim)`` and ``min(dim)``."""

    __slots__ = ()

    @property
    def values(self) -> Tensor:
        return self[0]

    @property
    def indices(self) -> Tensor:
        return self[1]


def _extreme(x: Tensor, dim: Any, keepdim: bool, axis: Any, keepdims: bool, name: str) -> Any:
    """``max``/``min`` with PyTorch's ``dim`` (values and indices), the standard's ``axis``
    (values), or another tensor (elementwise)."""
    if isinstance(dim, Tensor):
        return (_ops.maximum if name == "max" else _ops.minimum)(x, dim)
    if x.dtype is _dt.bool_:  # PyTorch's max/min of bools; libraries refuse them
        r = _extreme(_ops.astype(x, _dt.uint8), dim, keepdim, axis, keepdims, name)
        if isinstance(r, MaxMin):
            return MaxMin((_ops.astype(r[0], _dt.bool_), r[1]))
        return _ops.astype(r, _dt.bool_)
    if dim is None:
        return getattr(_ops, name)(x, axis=_ax(None, axis), keepdims=keepdims)
    # PyTorch's: the gradient goes all to the returned index (xad.max shares it among ties)
    return MaxMin(_ops.torch_conventions.max_dim(x, dim, keepdim, largest=name == "max"))


def _shape_arg(shape: tuple) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


class _Operations:
    """The operations Tensor's methods call, filled in by :mod:`xad.ops` when it is
    imported (the operations sit above Tensor, so Tensor never imports them)."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"Tensor.{name}: the operations are not installed; import xad")


_ops: Any = _Operations()


def install_operations(ops: Any, binary: Callable, elementwise: Any) -> None:
    """Give Tensor's methods their operations (called once by :mod:`xad.ops`)."""
    global _ops, _binary, _ew
    _ops, _binary, _ew = ops, binary, elementwise


def install_methods(methods: dict[str, Callable]) -> None:
    """Give Tensor PyTorch's methods that a higher layer defines
    (:mod:`xad.torch_matrix_functions`'s ``x.svd()``, ``x.det()``, ...), each the function of
    that name."""
    for name, f in methods.items():
        setattr(Tensor, name, f)


_binary: Any = None
_ew: Any = None
_installed.tensor = Tensor
_installed.result = Tensor._result


# PyTorch's tensor methods that are xad's functions of the tensor (the same meaning; the
# function's docstring tells): method name -> function in xad.ops
_FUNCTION_METHODS = {n: n for n in (
    "isnan isinf isfinite log2 log10 erf sinh cosh asin acos atan asinh acosh atanh square "
    "reciprocal positive negative signbit "
    "bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift maximum "
    "minimum nextafter greater greater_equal less less_equal not_equal multiply "
    "rsqrt exp2 logit deg2rad rad2deg outer dot trace diagonal chunk unbind isclose "
    "allclose div bmm mv addmm frac float_power fmax fmin heaviside unflatten "
    "repeat_interleave fliplr flipud ravel diag erfc erfinv lgamma digamma fmod unique "
    "unique_consecutive bincount tensor_split unfold cummax cummin logcumsumexp "
    "scatter_reduce index_put index_put_ as_strided as_strided_ index_copy index_reduce put "
    "kron inner vdot diag_embed diagflat cov corrcoef argwhere baddbmm addmv addr addbmm gcd "
    "lcm frexp ldexp sinc fix sgn adjoint dist renorm matrix_exp i0 mvlgamma igamma igammac "
    "bernoulli diagonal_scatter select_scatter slice_scatter dsplit hsplit vsplit "
    "split_with_sizes").split()} | {
    "mul": "multiply", "neg": "negative", "true_divide": "divide", "divide": "div",
    "arccos": "acos", "arcsin": "asin", "arctan": "atan", "arctan2": "atan2",
    "arccosh": "acosh", "arcsinh": "asinh", "arctanh": "atanh", "bitwise_not": "bitwise_invert",
    "ger": "outer", "absolute": "abs"}
# in place (``x.exp_()``): the method of that name, its result written into the tensor
_INPLACE_METHODS = ("abs sqrt exp log log2 log10 log1p expm1 sigmoid tanh relu neg negative "
                    "floor ceil round trunc sign sin cos tan reciprocal square rsqrt pow "
                    "remainder floor_divide true_divide maximum minimum tril triu "
                    "hypot xlogy clamp_min clamp_max frac erfc erfinv lgamma digamma fmod atan2 "
                    "copysign bitwise_and bitwise_or bitwise_xor bitwise_not "
                    "bitwise_left_shift bitwise_right_shift index_copy index_reduce put "
                    "scatter_reduce acos asin atan cosh sinh acosh asinh atanh arccos arcsin "
                    "arctan arccosh arcsinh arctanh erf exp2 logit sinc sgn deg2rad rad2deg "
                    "heaviside ldexp nextafter gcd lcm fix eq ne lt le gt ge greater "
                    "greater_equal less less_equal not_equal logical_and logical_or "
                    "logical_xor logical_not cumsum cumprod addmm addmv addr baddbmm "
                    "addbmm mvlgamma igamma igammac absolute arctan2 i0 renorm "
                    "conj_physical polygamma").split()


def _function_method(name: str, target: str) -> Callable:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return getattr(_ops, target)(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"PyTorch's ``x.{name}(...)``: :func:`xad.{target}` of ``x``."
    return method


def _inplace_method(name: str) -> Callable:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        out = getattr(Tensor, name)(self._alias(), *args, **kwargs)
        return _ops.assign_result(self, out, name + "_")
    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"``x.{name}(...)`` written into ``x`` (PyTorch's ``x.{name}_``)."
    return method


def _largest_integer(d: _dt.DType) -> int:
    """The largest integer ``random_`` draws into ``d`` by default (PyTorch's)."""
    if d.is_floating:
        return 2 ** {"float16": 11, "bfloat16": 8, "float32": 24}.get(d.name, 53)
    if d is _dt.bool_:
        return 1
    bits = _itemsize(d) * 8
    return 2 ** (bits if d.name.startswith("uint") else bits - 1) - 1


def _itemsize(d: _dt.DType) -> int:
    """Bytes per element: the width in the dtype's name (bool: 1)."""
    return 1 if d is _dt.bool_ else int("".join(c for c in d.name if c.isdigit())) // 8


def _torch_methods() -> dict[str, Any]:
    """Those with PyTorch's arguments where xad's function has the standard's."""
    return {
        "add": lambda x, o, *, alpha=1: x + (o if alpha == 1 else o * alpha),
        "sub": lambda x, o, *, alpha=1: x - (o if alpha == 1 else o * alpha),
        "subtract": lambda x, o, *, alpha=1: x - (o if alpha == 1 else o * alpha),
        "where": lambda x, condition, y: _ops.where(condition, x, y),
        "roll": lambda x, shifts, dims=None: _ops.roll(
            x, tuple(shifts) if isinstance(shifts, list) else shifts,
            axis=tuple(dims) if isinstance(dims, list) else dims),
        "tril": lambda x, diagonal=0: _ops.tril(x, k=diagonal),
        "triu": lambda x, diagonal=0: _ops.triu(x, k=diagonal),
        "take": lambda x, index: _ops.reshape(x, (-1,))[index],
        "tile": lambda x, *dims: _ops.tile(x, _shape_arg(dims)),
        "count_nonzero": lambda x, dim=None: _ops.count_nonzero(  # () or []: all, as torch's
            x, axis=(tuple(dim) or None) if isinstance(dim, (list, tuple)) else dim),
        "moveaxis": lambda x, s, d: _ops.moveaxis(x, *(tuple(v) if isinstance(v, list) else v
                                                       for v in (s, d))),
        "swapaxes": lambda x, a, b: x.transpose(a, b),
        "reshape_as": lambda x, other: x.reshape(other.shape),
        "ndimension": lambda x: x.ndim,
        "is_floating_point": lambda x: x.dtype.is_floating,
        "is_complex": lambda x: x.dtype.name.startswith("complex"),
        "clamp_min": lambda x, min: x.clamp(min=min),
        "clamp_max": lambda x, max: x.clamp(max=max),
        "bernoulli_": lambda x, p=0.5, *, generator=None: _ops.assign_result(
            x, _ops.bernoulli(x.detach(), p, generator=generator), "bernoulli_"),
        "is_conj": lambda x: False,  # (xad's conj and negative are never lazy views)
        "is_neg": lambda x: False,
        "element_size": lambda x: _itemsize(x.dtype),
        "byte": lambda x: _ops.astype(x, _dt.uint8),
        "char": lambda x: _ops.astype(x, _dt.int8),
        "short": lambda x: _ops.astype(x, _dt.int16),
        "bfloat16": lambda x: _ops.astype(x, _dt.bfloat16),
    }


class Aminmax(tuple):
    """PyTorch's ``(min, max)`` result of ``aminmax``."""

    __slots__ = ()

    @property
    def min(self) -> Tensor:
        return self[0]

    @property
    def max(self) -> Tensor:
        return self[1]


def _select(x: Tensor, dim: int, index: int) -> Tensor:
    if not -x.ndim <= dim < x.ndim or not -x.shape[dim] <= index < x.shape[dim]:
        raise IndexError(f"select: dim {dim}, index {index} out of range for a tensor of "
                         f"shape {x.shape}")
    return x[(slice(None),) * (dim % x.ndim) + (index,)]


def _float_power_(x: Tensor, exponent: Any) -> Tensor:
    if x.dtype not in (_dt.float64, _dt.complex128):
        raise TypeError(f"float_power_: the result is float64 (or complex128) and the tensor "
                        f"is {x.dtype.name} (PyTorch refuses too); cast it with .double() "
                        f"first, or write x = x.float_power(e)")
    return _ops.assign_result(x, _ops.float_power(x._alias(), exponent), "float_power_")


def _fill_diagonal_(x: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """PyTorch's ``fill_diagonal_``: the main diagonal (``[i, i, ...]``) set to
    ``fill_value``; a tall matrix's restarts below a gap of one row when ``wrap``."""
    if x.ndim < 2 or (x.ndim > 2 and len(set(x.shape)) != 1):
        raise ValueError(f"fill_diagonal_: a matrix, or a tensor of equal axes, got shape "
                         f"{x.shape}")
    n = builtins.min(x.shape)
    if x.ndim == 2:
        rows, cols = x.shape
        step, end = cols + 1, (rows * cols if wrap else n * cols)
    else:
        step, end = builtins.sum(n ** k for k in range(x.ndim)), n ** x.ndim
    flat = range(0, end, step)
    if not flat:
        return x
    index, stride = [], math.prod(x.shape)
    for size in x.shape:  # the positions' indices, on the host (they depend on shapes only)
        stride //= size
        index.append([(f // stride) % size for f in flat])
    _ops.setitem_(x, tuple(index), fill_value)
    return x


def _sum_to_size(x: Tensor, *size: Any) -> Tensor:
    shape = _shape_arg(size)
    if len(shape) > x.ndim or any(s not in (1, t) for s, t in
                                  zip(reversed(shape), reversed(x.shape))):
        raise ValueError(f"sum_to_size: size {shape} does not expand to the tensor's shape "
                         f"{x.shape}")
    return _ops.reshape(_ops.sum_to(x, shape), shape)


def _resize_as_(x: Tensor, other: Tensor) -> Tensor:
    if tuple(other.shape) != tuple(x.shape):
        raise NotImplementedError(f"resize_as_: xad tensors do not change shape in place "
                                  f"({x.shape} to {other.shape}); write x = "
                                  f"other.new_empty(other.shape) or x = other.clone()")
    return x


def _get_device(x: Tensor) -> int:
    return int(getattr(x._backend.device, "id", 0)) if on_cuda(x._backend) else -1


def _truth(v: Any) -> Any:
    """PyTorch's truth of a logical operand: non-zero (the standard's take bools only)."""
    return v if not isinstance(v, Tensor) or v.dtype is _dt.bool_ else v != 0


def _logical(name: str) -> Callable:
    def method(x: Tensor, *other: Any) -> Tensor:
        return getattr(_ops, name)(_truth(x), *(_truth(o) for o in other))
    return method


def _is_nonzero(x: Tensor) -> bool:
    if x.numel() != 1:
        raise RuntimeError(f"is_nonzero: a tensor of one element, got shape {x.shape}")
    return builtins.bool(_ops.reshape(x, ()).item())


def _matrix_h(x: Tensor) -> Tensor:
    if x.ndim != 2:
        raise ValueError(f"H: a matrix (2-d), got shape {x.shape}; use .mH for batches")
    return _ops.adjoint(x)


def _torch_methods_more() -> dict[str, Any]:
    """More of PyTorch's methods (fourth round): selection, queries, dtypes."""
    unsigned = (_dt.bool_, _dt.uint8, _dt.uint16, _dt.uint32, _dt.uint64)
    return {
        "select": _select, "float_power_": _float_power_, "fill_diagonal_": _fill_diagonal_,
        "sum_to_size": _sum_to_size, "resize_as_": _resize_as_, "get_device": _get_device,
        "is_nonzero": _is_nonzero,
        "multiply_": Tensor.mul_, "subtract_": Tensor.sub_, "divide_": Tensor.div_,
        **{n: _logical(n) for n in ("logical_not", "logical_and", "logical_or",
                                    "logical_xor")},
        "isposinf": lambda x: _ops.logical_and(_ops.isinf(x), x > 0),
        "isneginf": lambda x: _ops.logical_and(_ops.isinf(x), x < 0),
        "isreal": lambda x: (_ops.imag(x) == 0) if x.dtype.name.startswith("complex")
        else _ops.logical_or(_ops.isnan(x), x == x),  # every real element, NaN too
        "aminmax": lambda x, *, dim=None, keepdim=False: Aminmax(
            (x.amin(dim, keepdim) if dim is not None else x.amin(),
             x.amax(dim, keepdim) if dim is not None else x.amax())),
        "msort": lambda x: x.sort(dim=0)[0],
        "is_signed": lambda x: x.dtype not in unsigned,
        "is_same_size": lambda x, other: tuple(x.shape) == tuple(other.shape),
        "is_inference": lambda x: False,
        "cdouble": lambda x: _ops.astype(x, _dt.complex128),
        "cfloat": lambda x: _ops.astype(x, _dt.complex64),
        "angle": _angle, "conj": lambda x: _ops.conj(x),
        "conj_physical": lambda x: _ops.conj(x),
        "resolve_conj": lambda x: x, "resolve_neg": lambda x: x,  # (no lazy bits in xad)
    }


def _angle(x: Tensor) -> Tensor:
    """PyTorch's ``angle``: the argument of a complex tensor (gradient 0 at 0, PyTorch's); of
    a real one ``pi`` below 0, else 0 (NaN kept; gradient 0)."""
    if x.dtype.is_complex:  # at 0: atan2 of the parts detached (the signed zeros' 0, +-0,
        zero = x == 0       # +-pi, as PyTorch's), where's mask stopping even an inf gradient
        d = x.detach()
        return _ops.atan2(_ops.where(zero, _ops.imag(d), _ops.imag(x)),
                          _ops.where(zero, _ops.real(d), _ops.real(x)))
    x = x if x.dtype.is_floating else _ops.astype(x, _dt.float32)
    return _ops.where(x < 0, math.pi, _ops.where(x == x, 0.0, x))  # (x: in the graph)


for _name, _target in _FUNCTION_METHODS.items():
    setattr(Tensor, _name, _function_method(_name, _target))
for _name, _f in (_torch_methods() | _torch_methods_more()).items():
    _f.__name__ = _f.__qualname__ = _name
    _f.__doc__ = f"PyTorch's ``x.{_name}(...)``."
    setattr(Tensor, _name, _f)
Tensor.movedim, Tensor.swapdims = Tensor.moveaxis, Tensor.swapaxes  # type: ignore[attr-defined]
Tensor.is_cuda = property(lambda x: on_cuda(x._backend))  # type: ignore[attr-defined]
Tensor.is_cpu = property(lambda x: not on_cuda(x._backend))  # type: ignore[attr-defined]
Tensor.itemsize = property(lambda x: _itemsize(x.dtype))  # type: ignore[attr-defined]
Tensor.nbytes = property(lambda x: _itemsize(x.dtype) * x.numel())  # type: ignore[attr-defined]
Tensor.H = property(_matrix_h)  # type: ignore[attr-defined]
Tensor.mH = property(lambda x: _ops.adjoint(x))  # type: ignore[attr-defined]
Tensor.retains_grad = property(  # type: ignore[attr-defined]
    lambda x: x._node is not None and x._retains)
for _name in _INPLACE_METHODS:
    setattr(Tensor, _name + "_", _inplace_method(_name))
