"""``Module`` (the base of every layer), ``Parameter``, and the containers ``Sequential`` and
``ModuleList``.

A module keeps its parameters, buffers (non-trained state such as running statistics) and
sub-modules in three ordered dicts, filled by attribute assignment as in PyTorch. State keys
are dotted paths (``"0.weight"``), parameters before buffers before children.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from .. import autograd as _ag
from .. import dtypes as _dt
from ..context import context
from ..hooks import RemovableHandle
from ..tensor import Tensor, to_arguments
from . import module_hooks

__all__ = ["Module", "Parameter", "Buffer", "Sequential", "ModuleList", "IncompatibleKeys"]


class _BufferMeta(type):
    """``isinstance(t, Buffer)``: ``t`` was made by ``Buffer`` (as PyTorch's, it stays one
    once registered: assigned to another module, it is a buffer there too)."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, Tensor) and "_buffer_persistent" in vars(instance)


class Buffer(metaclass=_BufferMeta):
    """PyTorch's ``nn.Buffer``: a tensor that becomes a buffer of the module it is assigned
    to (``persistent``: saved in ``state_dict``). It is ``data`` detached (sharing its
    memory), an :class:`~xad.Tensor`.

    Example:
        >>> import xad
        >>> m = xad.nn.Module(); m.scale = xad.nn.Buffer(xad.ones(2), persistent=False)
        >>> [n for n, _ in m.named_buffers()], list(m.state_dict())
        (['scale'], [])
    """

    def __new__(cls, data: Any = None, *, persistent: bool = True) -> Any:
        from ..factories import tensor, zeros
        t = zeros(0) if data is None else data if isinstance(data, Tensor) else tensor(data)
        out = t.detach().requires_grad_(t.requires_grad)
        vars(out)["_buffer_persistent"] = persistent
        return out


class Parameter(Tensor):
    """A leaf tensor that a :class:`Module` registers as trainable (``requires_grad=True``).

    Wraps ``data`` (a tensor, whose array it shares, or anything ``xad.tensor`` accepts).

    Example:
        >>> import xad
        >>> p = xad.nn.Parameter(xad.zeros(2))
        >>> p.requires_grad, p.is_leaf, isinstance(p, xad.Tensor)
        (True, True, True)
    """

    __slots__ = ()

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            from ..factories import zeros
            data = zeros(0)
        if not isinstance(data, Tensor):
            from ..factories import tensor
            data = tensor(data)
        if requires_grad and not data.dtype.can_require_grad:
            raise TypeError(f"Parameter: requires_grad=True needs a floating or complex dtype, "
                            f"got "
                            f"{data.dtype}; pass requires_grad=False or cast with .astype()")
        Tensor.__init__(self, data._array, requires_grad=requires_grad, backend=data._backend)
        data._share_version(self)  # one memory, one counter (PyTorch's): a change of either
        # raises at the backward of a graph that saved the other

    def __deepcopy__(self, memo: dict) -> Parameter:
        """``copy.deepcopy``: a parameter of a copy of the values, with ``requires_grad`` and
        without ``.grad``, as PyTorch's (a copied model's optimiser must not step by the
        original's gradients)."""
        if id(self) not in memo:
            with _ag.no_grad():
                memo[id(self)] = type(self)(self.detach().clone(), self.requires_grad)
        return memo[id(self)]

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class IncompatibleKeys(NamedTuple):
    """What :meth:`Module.load_state_dict` found missing or unexpected."""

    missing_keys: list[str]
    unexpected_keys: list[str]


def _moved(t: Tensor, place: Any, device: Any, dtype: Any) -> Tensor:
    """``t``, detached, on ``place`` (and ``device``), cast to ``dtype`` if it is floating."""
    with _ag.no_grad():
        out = t.detach()
        if place is not None:
            out = out.to(place) if device is None else out.to(place, device)
        return out.astype(dtype) if dtype is not None and t.dtype.is_floating else out


class Module:
    """Base class of layers and models: subclass it, assign parameters, sub-modules and
    buffers as attributes in ``__init__``, and write ``forward``.

    Example:
        >>> import xad
        >>> class Net(xad.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = xad.nn.Linear(3, 1)
        ...     def forward(self, x):
        ...         return xad.tanh(self.fc(x))
        >>> net = Net(); net(xad.ones(2, 3)).shape, list(net.state_dict())
        ((2, 1), ['fc.weight', 'fc.bias'])
    """

    training: bool
    _changes = 0  # assignments of attributes (xad.compile guards it: a new Parameter, p=)

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())

    # ----- calling ---------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no forward(); define it in "
                                  f"the subclass")

    # hooks (not state: never in state_dict); class defaults, so a module without any pays
    # one attribute test per call
    _forward_pre_hooks: list | None = None
    _forward_hooks: list | None = None
    _backward_hooks: list | None = None
    _backward_pre_hooks: list | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if context.recorder is not None:
            context.recorder.module(self)
        if self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or \
                self._backward_pre_hooks:
            return module_hooks.call_with_hooks(self, args, kwargs)
        return self.forward(*args, **kwargs)

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Call ``hook(module, args)`` before ``forward``; a returned value replaces the
        positional arguments (a non-tuple is wrapped in one). With ``with_kwargs``,
        ``hook(module, args, kwargs)`` returns ``None`` or ``(new_args, new_kwargs)``;
        ``prepend`` puts it before the hooks already registered (PyTorch's keywords).

        Example:
            >>> import xad
            >>> m = xad.nn.Identity()
            >>> h = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
            >>> m(xad.ones(1)).tolist()
            [2.0]
            >>> h.remove(); m(xad.ones(1)).tolist()
            [1.0]
        """
        return module_hooks.register(self, "_forward_pre_hooks", hook, prepend, with_kwargs)

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after ``forward`` (``hook(module, args,
        kwargs, output)`` with ``with_kwargs``); a returned value replaces the output.

        Example:
            >>> import xad
            >>> m = xad.nn.Identity()
            >>> seen = []
            >>> h = m.register_forward_hook(lambda mod, args, out: seen.append(out.shape))
            >>> _ = m(xad.ones(3)); seen
            [(3,)]
        """
        return module_hooks.register(self, "_forward_hooks", hook, prepend, with_kwargs)

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False
                                        ) -> RemovableHandle:
        """Call ``hook(module, grad_output)`` when the gradients with respect to the
        module's outputs are computed, before its own backward; a returned tuple replaces
        ``grad_output`` (what flows on, and what the full backward hooks see).

        Example:
            >>> import xad
            >>> m = xad.nn.Linear(2, 1)
            >>> h = m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))
            >>> m(xad.ones((1, 2))).sum().backward(); m.bias.grad.tolist()
            [2.0]
        """
        return module_hooks.register(self, "_backward_pre_hooks", hook, prepend)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False
                                    ) -> RemovableHandle:
        """Call ``hook(module, grad_input, grad_output)`` when the gradients with respect to
        the module's tensor inputs are computed (tuples; ``grad_input`` has one entry per
        positional argument, ``None`` where it needs no gradient, as PyTorch's); a returned
        tuple replaces ``grad_input``.

        Example:
            >>> import xad
            >>> m = xad.nn.Linear(2, 1)
            >>> seen = []
            >>> h = m.register_full_backward_hook(
            ...     lambda mod, gi, go: seen.append((gi[0].shape, go[0].shape)))
            >>> m(xad.ones((4, 2), requires_grad=True)).sum().backward(); seen
            [((4, 2), (4, 1))]
        """
        return module_hooks.register(self, "_backward_hooks", hook, prepend)

    # ----- attribute registration -------------------------------------------------------
    def _check_init(self) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before "
                                 f"assigning parameters, buffers or sub-modules")

    def _changed(self) -> None:
        object.__setattr__(self, "_changes", self._changes + 1)

    def __setattr__(self, name: str, value: Any) -> None:
        self._changed()
        d = self.__dict__
        if isinstance(value, Parameter):
            self._check_init()
            self._forget(name, "_parameters")
            d["_parameters"][name] = value
        elif isinstance(value, Module):
            self._check_init()
            self._forget(name, "_modules")
            d["_modules"][name] = value
        elif isinstance(value, Tensor) and "_buffer_persistent" in vars(value):  # a Buffer
            self.register_buffer(name, value, vars(value)["_buffer_persistent"])
        elif "_parameters" in d and name in d["_parameters"]:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} to parameter {name!r} "
                                f"of {type(self).__name__}: wrap it in xad.nn.Parameter or "
                                f"assign None")
            d["_parameters"][name] = None
        elif "_buffers" in d and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} to buffer {name!r} "
                                f"of {type(self).__name__}: assign a tensor or None")
            d["_buffers"][name] = value
        elif "_modules" in d and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} to sub-module "
                                f"{name!r}: assign a Module or None")
            d["_modules"][name] = None
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str, keep: str = "") -> None:
        """Drop ``name`` from every store but ``keep`` (re-assigning there keeps its place
        in the order, as PyTorch's dict update does: state_dict and parameters() order)."""
        self._changed()  # register_parameter/_buffer, add_module
        self.__dict__.pop(name, None)
        for key in ("_parameters", "_buffers", "_modules"):
            if key != keep:
                self.__dict__[key].pop(name, None)
        self.__dict__["_non_persistent"].discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            if key in d and name in d[key]:
                return d[key][name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        self._changed()
        for key in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(key, ()):
                del self.__dict__[key][name]
                self.__dict__["_non_persistent"].discard(name)
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or ``None``, a declared-absent one such as ``bias=False``)."""
        self._check_init()
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter({name!r}): expected a Parameter or None, "
                            f"got {type(param).__name__}")
        self._forget(name, "_parameters")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True
                        ) -> None:
        """Add a buffer: state saved in ``state_dict`` (if persistent) but not trained.

        Example:
            >>> import xad
            >>> m = xad.nn.Module(); m.register_buffer("count", xad.zeros(()))
            >>> list(m.state_dict())
            ['count']
        """
        self._check_init()
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer({name!r}): expected a tensor or None, got "
                            f"{type(tensor).__name__}")
        self._forget(name, "_buffers")
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a sub-module under ``name``."""
        self._check_init()
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module({name!r}): expected a Module, got "
                            f"{type(module).__name__}")
        self._forget(name, "_modules")
        self._modules[name] = module

    # ----- traversal --------------------------------------------------------------------
    def named_modules(self, prefix: str = "", remove_duplicate: bool = True
                      ) -> Iterator[tuple[str, Module]]:
        """This module and every module below it with dotted names: each once, or with
        ``remove_duplicate=False`` a shared module under each of its names (PyTorch's).

        Example:
            >>> import xad
            >>> lin = xad.nn.Linear(1, 1); net = xad.nn.Sequential(lin, lin)
            >>> [n for n, _ in net.named_modules(remove_duplicate=False)]
            ['', '0', '1']
        """
        seen: set[int] = set()
        stack = [(prefix, self)]
        while stack:
            name, m = stack.pop()
            if remove_duplicate and id(m) in seen:
                continue
            seen.add(id(m))
            yield name, m
            kids = [(f"{name}.{k}" if name else k, c) for k, c in m._modules.items()
                    if c is not None]
            stack.extend(reversed(kids))

    def modules(self) -> Iterator[Module]:
        """This module and every module below it."""
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The direct sub-modules with their names (a module held twice: once)."""
        seen: set[int] = set()
        for k, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield k, m

    def children(self) -> Iterator[Module]:
        """The direct sub-modules."""
        for _, m in self.named_children():
            yield m

    def _named(self, kind: str, prefix: str, recurse: bool, remove_duplicate: bool = True
               ) -> Iterator[tuple[str, Tensor]]:
        seen: set[int] = set()
        mods = self.named_modules(prefix, remove_duplicate) if recurse else \
            iter([(prefix, self)])
        for mname, m in mods:
            for k, t in m.__dict__[kind].items():
                if t is None or (remove_duplicate and id(t) in seen):
                    continue
                seen.add(id(t))
                yield (f"{mname}.{k}" if mname else k), t

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """Every parameter with its dotted name: each once (shared ones too), or with
        ``remove_duplicate=False`` under each name it has.

        Example:
            >>> import xad
            >>> [n for n, _ in xad.nn.Sequential(xad.nn.Linear(2, 2)).named_parameters()]
            ['0.weight', '0.bias']
        """
        yield from self._named("_parameters", prefix, recurse,  # type: ignore[misc]
                               remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter, for an optimiser.

        Example:
            >>> import xad
            >>> sum(p.size for p in xad.nn.Linear(3, 2).parameters())
            8
        """
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        """Every buffer with its dotted name (each once unless ``remove_duplicate=False``)."""
        yield from self._named("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every sub-module (children first) and on this module."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ----- modes, gradients, moving -----------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode (Dropout active, BatchNorm uses batch statistics) here, and
        through each child's own ``train`` (an override in a sub-module runs, as PyTorch's)."""
        if not isinstance(mode, bool):
            raise ValueError(f"train: training mode is expected to be boolean, got {mode!r}")
        object.__setattr__(self, "training", mode)
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode (``train(False)``).

        Example:
            >>> import xad
            >>> xad.nn.Dropout(0.5).eval().training
            False
        """
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Turn gradient recording on or off for every parameter (freezing)."""
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient: ``None``, or with ``set_to_none=False`` new
        zero tensors (a NaN or inf in the old gradient gives 0 too). As the optimisers'
        ``zero_grad``, never writes into a gradient's array (gradients may alias others)."""
        for p in self.parameters():
            g = p.grad
            if g is None:
                continue
            b = g._backend
            p.grad = None if set_to_none else Tensor._make(b.xp.zeros_like(g._array), b)

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move every parameter and buffer and/or cast the floating ones, in place, with
        :meth:`Tensor.to`'s arguments: a backend or device (``"cupy"``, a Backend,
        ``"cpu"``, ``"cuda"``, ``"device1"``), a dtype, both, a tensor (its place and
        dtype), or ``device=``/``dtype=``/``non_blocking=``/``memory_format=``. The
        Parameter objects an optimiser holds stay the same, leaves that require grad.

        Example:
            >>> import xad
            >>> m = xad.nn.Linear(2, 1).to("array_api_strict")
            >>> m.weight.backend.name, m.weight.is_leaf, m.weight.requires_grad
            ('array_api_strict', True, True)
            >>> m.to(device="numpy", dtype=xad.float64).weight.dtype
            xad.float64
        """
        place, device, dtype, _ = to_arguments(args, kwargs)
        if dtype is not None and not (dtype.is_floating or dtype.is_complex):
            raise TypeError(f"Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}; integer and bool buffers keep "
                            f"their dtype under a floating cast")
        for m in self.modules():
            for store in (m._parameters, m._buffers):
                for t in store.values():
                    if t is not None:
                        moved = _moved(t, place, device, dtype)
                        t._set_data(moved._array, moved._backend)
                        if t.grad is not None:
                            t.grad = _moved(t.grad, place, device, dtype)
        return self

    def cuda(self, device: Any = None) -> Module:
        """PyTorch's ``module.cuda()``: ``module.to("cuda")`` (see :meth:`Tensor.cuda`)."""
        return self.to("cuda" if device is None else f"cuda:{device}")

    def cpu(self) -> Module:
        """PyTorch's ``module.cpu()``: parameters and buffers in host memory."""
        return self.to("cpu")

    def type(self, dst_type: Any) -> Module:
        """PyTorch's ``module.type(dtype)``: every parameter and buffer cast to
        ``dst_type`` (integer buffers too, as PyTorch's)."""
        dtype = _dt.as_dtype(dst_type)
        with _ag.no_grad():
            for t in [*self.parameters(), *self.buffers()]:
                t._set_data(t.detach().astype(dtype)._array)
                if t.grad is not None:
                    t.grad = t.grad.detach().astype(dtype)
        return self

    def double(self) -> Module:
        """Cast floating parameters and buffers to float64."""
        return self.to(_dt.float64)

    def float(self) -> Module:
        """Cast floating parameters and buffers to float32."""
        return self.to(_dt.float32)

    def half(self) -> Module:
        """Cast floating parameters and buffers to float16 (integer buffers stay)."""
        return self.to(_dt.float16)

    def bfloat16(self) -> Module:
        """Cast floating parameters and buffers to bfloat16 (where the backend has it)."""
        return self.to(_dt.bfloat16)

    # ----- state ------------------------------------------------------------------------
    def state_dict(self, prefix: str = "", keep_vars: bool = False
                   ) -> OrderedDict[str, Tensor]:
        """Parameters and persistent buffers by dotted name, detached (sharing arrays; the
        tensors themselves with ``keep_vars``); ``prefix`` is put before every key as given
        (``"enc."``); a module held under two names gives its keys under both (PyTorch's).

        Example:
            >>> import xad
            >>> list(xad.nn.Sequential(xad.nn.Linear(2, 3), xad.nn.ReLU()).state_dict())
            ['0.weight', '0.bias']
            >>> list(xad.nn.Linear(2, 3).state_dict(prefix="enc."))
            ['enc.weight', 'enc.bias']
        """
        out = self._state_targets(prefix)
        if not keep_vars:
            for k, t in out.items():
                out[k] = t.detach()
        return out

    def _state_targets(self, prefix: str = "") -> OrderedDict[str, Tensor]:
        out: OrderedDict[str, Tensor] = OrderedDict()
        for mname, m in self.named_modules(remove_duplicate=False):
            pre = prefix + (f"{mname}." if mname else "")
            for k, p in m._parameters.items():
                if p is not None:
                    out[pre + k] = p
            for k, b in m._buffers.items():
                if b is not None and k not in m._non_persistent:
                    out[pre + k] = b
        return out

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True
                        ) -> IncompatibleKeys:
        """Copy values into this module's parameters and buffers (they keep their storage,
        backend and dtype: their views see the values, as PyTorch's). With ``strict``,
        missing or unexpected keys are an error; a shape mismatch always is, naming the key
        and both shapes.

        Example:
            >>> import xad
            >>> a, b = xad.nn.Linear(2, 2), xad.nn.Linear(2, 2)
            >>> b.load_state_dict(a.state_dict())
            IncompatibleKeys(missing_keys=[], unexpected_keys=[])
            >>> bool((a.weight == b.weight).all())
            True
        """
        for mname, m in self.named_modules():  # a lazy module's placeholders take shape
            lazy_load = getattr(type(m), "_lazy_load", None)
            if lazy_load is not None:
                lazy_load(m, state_dict, f"{mname}." if mname else "")
        targets = self._state_targets()
        missing = [k for k in targets if k not in state_dict]
        unexpected = [k for k in state_dict if k not in targets]
        errors = []
        if strict and missing:
            errors.append("missing keys: " + ", ".join(repr(k) for k in missing))
        if strict and unexpected:
            errors.append("unexpected keys: " + ", ".join(repr(k) for k in unexpected))
        values = {}
        for k, t in targets.items():
            if k not in state_dict:
                continue
            v = state_dict[k]
            if not isinstance(v, Tensor):
                from ..factories import tensor
                shape = getattr(v, "shape", None)
                v = tensor(v, dtype=t.dtype, backend=t._backend)
                if shape is not None and tuple(v.shape) != tuple(shape):
                    v = v.reshape(tuple(shape))  # some backends turn 0-d host arrays 1-d
            if tuple(v.shape) != tuple(t.shape):
                errors.append(f"size mismatch for {k!r}: the state_dict has shape "
                              f"{tuple(v.shape)}, the module's is {tuple(t.shape)}")
                continue
            values[k] = v
        if errors:
            raise RuntimeError(f"load_state_dict into {type(self).__name__} failed:\n  "
                               + "\n  ".join(errors)
                               + ("\n(pass strict=False to ignore missing and unexpected "
                                  "keys)" if strict and (missing or unexpected) else ""))
        with _ag.no_grad():  # into the storage, as PyTorch's copy_: views see the values
            for k, v in values.items():
                t = targets[k]
                if v._backend is not t._backend:
                    v = v.to(t._backend)
                t.copy_(v.detach() if v.dtype == t.dtype else v.detach().astype(t.dtype))
        return IncompatibleKeys(missing, unexpected)

    # ----- printing ---------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside this module's parentheses in ``repr`` (override in layers)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        kids = [(k, m) for k, m in self._modules.items()]
        if not kids:
            return f"{type(self).__name__}({extra})"
        lines = [extra] if extra else []
        for k, m in kids:
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"({k}): {body}")
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"


class Sequential(Module):
    """Modules applied one after another; state keys are ``"0.weight"``, ``"1.bias"``, ...

    Example:
        >>> import xad
        >>> net = xad.nn.Sequential(xad.nn.Linear(4, 8), xad.nn.ReLU(), xad.nn.Linear(8, 1))
        >>> net(xad.ones(5, 4)).shape, len(net)
        ((5, 1), 3)
    """

    def __init__(self, *modules: Module | Mapping[str, Module]) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], Mapping):
            for k, named in modules[0].items():
                self.add_module(k, named)
        else:
            for i, m in enumerate(modules):
                if not isinstance(m, Module):
                    raise TypeError(f"Sequential: argument {i} is a {type(m).__name__}, not "
                                    f"a Module")
                self.add_module(str(i), m)

    def forward(self, x: Any) -> Any:
        mods = [m for m in self._modules.values() if m is not None]
        i, n = 0, len(mods)
        while i < n:  # a layer may take its successor along (Linear then ReLU: one kernel)
            then = getattr(mods[i], "_then", None)
            pair = then(mods[i + 1]) if then is not None and i + 1 < n else None
            x = mods[i](x) if pair is None else pair(x)
            i += 1 if pair is None else 2
        return x

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, i: int | slice) -> Any:
        mods = list(self._modules.items())
        if isinstance(i, slice):
            return Sequential(OrderedDict(mods[i]))
        return mods[i][1]

    def append(self, module: Module) -> Sequential:
        """Add ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    """A list of modules whose parameters are registered (keys ``"0.weight"``, ...).

    Example:
        >>> import xad
        >>> layers = xad.nn.ModuleList([xad.nn.Linear(2, 2) for _ in range(3)])
        >>> len(list(layers.parameters()))
        6
        >>> del layers[0]; layers.insert(1, xad.nn.ReLU()); [k for k, _ in layers.named_children()]
        ['0', '1', '2']
    """

    def __init__(self, modules: Iterable[Module] = ()) -> None:
        super().__init__()
        self.extend(modules)

    def append(self, module: Module) -> ModuleList:
        """Add ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Add ``modules`` at the end, in order."""
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        """Put ``module`` before position ``index`` (keys renumbered ``"0"``, ``"1"``, ...)."""
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._renumber(mods)

    def _renumber(self, mods: list[Module]) -> None:
        for k in list(self._modules):
            self._forget(k)
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __getitem__(self, i: int | slice) -> Any:
        mods = list(self._modules.values())
        return ModuleList(mods[i]) if isinstance(i, slice) else mods[i]

    def __setitem__(self, i: int, module: Module) -> None:
        keys = list(self._modules)
        self.add_module(keys[i], module)  # the key keeps its place

    def __delitem__(self, i: int | slice) -> None:
        mods = list(self._modules.values())
        del mods[i]
        self._renumber(mods)  # PyTorch renumbers the keys too
