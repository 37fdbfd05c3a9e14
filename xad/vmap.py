"""``xad.vmap``: a function of one example run on a batch, with the batch axis carried through
every primitive by its batching rule (JAX's ``vmap``, ``torch.func.vmap``).

A :class:`BatchLevel` on ``context.transform`` marks the tensors that carry its batch axis
(always first, one level down); each primitive reaching it with a batched input runs its
Op class's ``batch`` rule one level down. A batched tensor is a :class:`BatchedTensor`:
its ``shape``/``ndim``/``size`` are the logical ones (without the batch axes of the levels
active now), so ``f`` is written for one example. Reverse mode inside (``vmap(grad(f))``)
differentiates with respect to per-example copies of the arguments, so its gradients are
per example.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import Any

from .backend import get_backend
from .context import context
from .factories import batched_draw
from .forward_mode import MissingRuleError, _pop_when_freed
from .ops import broadcast_to, clone, concat, expand_dims, moveaxis, reshape
from .tensor import Size, Tensor
from .transforms import _flatten, _unflatten

__all__ = ["vmap", "BatchLevel", "BatchedTensor"]

_RANDOMNESS = ("error", "different", "same")


def _depth(t: Tensor) -> int:
    """How many active batch levels ``t`` is batched at."""
    n, lvl = 0, context.transform
    while lvl is not None:
        if isinstance(lvl, BatchLevel) and lvl.has(t):
            n += 1
        lvl = lvl.parent
    return n


class BatchedTensor(Tensor):
    """A tensor batched at some ``vmap`` level: its shape is the logical one."""

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._array.shape)[_depth(self):]

    @property
    def ndim(self) -> int:
        return self._array.ndim - _depth(self)

    @property
    def size(self) -> Size:
        s = self.shape
        return Size(math.prod(s), s)

    def _alias(self) -> Tensor:
        """An in-place change's alias of the old value: batched as this tensor is, so the
        batching rules it reaches see its logical shape."""
        a = super()._alias()
        a.__class__ = BatchedTensor
        return a

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]


class BatchLevel:
    """One ``vmap`` in progress: the arrays that carry its batch axis (first)."""

    def __init__(self, size: int, randomness: str) -> None:
        self.size = size
        self.randomness = randomness
        self.parent = context.transform
        self.arrays: dict[int, Any] = {}

    def has(self, t: Any) -> bool:
        if not isinstance(t, Tensor):
            return False
        return self.has_array(t._array)

    def carries(self, t: Tensor) -> bool:
        """Whether ``t`` carries this level's batch axis."""
        return self.has(t)

    def has_array(self, a: Any) -> bool:
        ref = self.arrays.get(id(a))
        if ref is None:
            return False
        return (ref() if type(ref) is weakref.ref else ref) is a

    def mark(self, t: Tensor) -> Tensor:
        """Make ``t`` (batch axis first, one level down) batched at this level."""
        self.hold(t._array)
        if type(t) is Tensor:
            t.__class__ = BatchedTensor
        return t

    def hold(self, arr: Any) -> None:
        """Make the array ``arr`` (batch axis first) batched at this level."""
        key = id(arr)
        try:
            ref: Any = weakref.ref(arr, _pop_when_freed(self.arrays, key))
        except TypeError:
            ref = arr
        self.arrays[key] = ref

    def process(self, entry: Callable, op: Any, args: tuple, params: dict) -> Any:
        """Run ``op`` one level down, through its batching rule when an input is batched."""
        held = self.has_array
        flags = tuple([isinstance(a, Tensor) and held(a._array) for a in args])
        bp = self._batched_params(params) if params else None
        if params and isinstance(self.parent, BatchLevel) and _outer_params(self, params) \
                and not (op.view and op.is_view(params)):
            return _joined_levels(self, entry, op, args, params)
        context.transform = self.parent
        try:
            if not any(flags) and not bp:
                return entry(op, *args, **params)
            rule = getattr(op, "batch", None)
            if rule is None:
                raise MissingRuleError(
                    f"vmap: the primitive '{op.name}' has no batching rule; run that part "
                    f"with a Python loop or add a 'batch' method to its Op class")
            out, ob = rule(args, flags, batched_params=bp, **params) if bp else \
                rule(args, flags, **params)
        finally:
            context.transform = self
        if type(out) is tuple:
            for o, f in zip(out, ob if type(ob) is tuple else (ob,) * len(out)):
                if f:
                    self.mark(o)
        elif ob:
            self.mark(out)
        if op.view and op.is_view(params) and flags[0]:  # remade and written through by
            args[0]._adopt_view(out, op, params)        # its per-example parameters
        return out

    def _batched_params(self, params: dict) -> dict:
        """The parameters holding arrays batched here: ``True``, or for a tuple (an index
        key) a flag per entry."""
        bp: dict = {}
        for k, v in params.items():
            if type(v) is tuple:
                fl = tuple(self.has_array(e) for e in v)
                if any(fl):
                    bp[k] = fl
            elif self.has_array(v):
                bp[k] = True
        return bp

    def random(self, fname: str, shape: tuple, make: Callable) -> Tensor:
        """A random draw of logical ``shape``: by ``randomness``, an error, one draw per
        example (batched), or one draw shared by the batch."""
        if self.randomness == "error":
            raise RuntimeError(_random_error(fname))
        context.transform = self.parent
        try:
            if self.randomness == "same":
                return batched_draw(fname, shape, make)
            t = batched_draw(fname, (self.size,) + tuple(shape), make)
        finally:
            context.transform = self
        return self.mark(t)

    def unbatched_draw(self) -> None:
        """A draw that cannot be made per example (``randperm``, ``multinomial``, an
        in-place ``uniform_``/``normal_``): allowed with ``randomness="same"`` only."""
        if self.randomness == "error":
            raise RuntimeError(_random_error("a random function"))
        if self.randomness == "different":
            raise NotImplementedError(
                "vmap(randomness='different'): randperm, multinomial and the in-place "
                "uniform_/normal_ have no per-example draw; use rand/randn/randint (or "
                "dropout), randomness='same', or draw outside vmap")
        if self.parent is not None:
            self.parent.unbatched_draw()

    def untracked(self, t: Tensor, write: Callable[[], None]) -> None:
        """A change of ``t``'s values through ``detach()`` or ``.data``: per example, as
        any change (the levels outside keep their tangents)."""
        if self.parent is None:
            write()
        else:
            self.parent.untracked(t, lambda: self._within(write))

    def _within(self, write: Callable[[], None]) -> None:
        """Run ``write`` at this level (from a level outside that handed it down)."""
        outer, context.transform = context.transform, self
        try:
            write()
        finally:
            context.transform = outer

    def cut(self, t: Tensor) -> None:
        """A ``detach``-ed tensor stays batched (with its logical shape); the levels outside
        may cut its tangent."""
        if type(t) is Tensor and self.has(t):
            t.__class__ = BatchedTensor
        if self.parent is not None:
            self.parent.cut(t)

    def rooted(self, t: Tensor, value: Tensor) -> None:
        """A ``detach()`` tensor set in place: batched as its storage; levels outside may
        give it a tangent of its own."""
        if self.parent is not None:
            self.parent.rooted(t, value)

    def alias(self, t: Tensor, a: Tensor) -> None:
        """``a`` shares ``t``'s array (and so its batch axis); levels outside may care."""
        if self.parent is not None:
            self.parent.alias(t, a)

    def follow(self, t: Tensor, fresh: Tensor) -> None:
        """A view remade from its base (batched as the base's result); levels outside may
        care."""
        if self.parent is not None:
            self.parent.follow(t, fresh)

    def rebound(self, t: Tensor) -> None:
        """``t`` took a new array in place (marked by the operation that made it)."""
        if self.parent is not None:
            self.parent.rebound(t)

    def writing(self, t: Tensor) -> None:
        """The view ``t`` is being set in place; levels outside may care."""
        if self.parent is not None:
            self.parent.writing(t)

    def written(self, t: Tensor, value: Tensor) -> None:
        """The view ``t`` was set to ``value``; levels outside may care."""
        if self.parent is not None:
            self.parent.written(t, value)

    def per_example(self, t: Tensor) -> Tensor:
        """``t`` with this level's batch axis (the argument of a ``grad`` inside this
        level): itself, or repeated over the batch when ``t`` is not batched (a view,
        recorded when ``t`` requires grad). Called one level down."""
        if self.has(t):
            return t
        return broadcast_to(t, (self.size,) + tuple(t.shape))  # a view: nothing copied


def _outer_params(level: BatchLevel, params: dict) -> bool:
    """Whether an array parameter (an index, a condition) is batched at a ``vmap`` level
    outside ``level``: its raw array then carries their batch axes too."""
    arrays = [e for v in params.values() for e in (v if type(v) is tuple else (v,))]
    lvl = level.parent
    while isinstance(lvl, BatchLevel):
        if any(lvl.has_array(a) for a in arrays):
            return True
        lvl = lvl.parent
    return False


def _joined_levels(level: BatchLevel, entry: Callable, op: Any, args: tuple,
                   params: dict) -> Any:
    """``op`` at ``level`` with array parameters batched at the ``vmap`` levels outside it:
    a batching rule sees a parameter's raw array, with every level's batch axis, so for
    this call those levels are joined into one over their product (every batched input and
    parameter made per example at each of them, their batch axes merged), and the results
    split back. Runs below the levels."""
    chain: list[BatchLevel] = []
    below = level
    while isinstance(below, BatchLevel):
        chain.insert(0, below)  # outermost first: the order of the batch axes
        below = below.parent
    sizes = tuple(lvl.size for lvl in chain)
    b = next((a._backend for a in args if isinstance(a, Tensor)), None) or get_backend()
    context.transform = below
    try:
        joined = BatchLevel(math.prod(sizes), level.randomness)
        new = tuple(_join(chain, joined, a, b) for a in args)
        kw = {k: tuple(_join(chain, joined, e, b) for e in v) if type(v) is tuple else
              _join(chain, joined, v, b) for k, v in params.items()}
        context.transform = joined
        out = entry(op, *new, **kw)
        context.transform = below
        res = tuple(_split_joined(chain, joined, o) for o in
                    (out if type(out) is tuple else (out,)))
    finally:
        context.transform = level
    return res if type(out) is tuple else res[0]


def _join(chain: list, joined: BatchLevel, v: Any, b: Any) -> Any:
    """``v`` (a tensor, or an array parameter) batched at ``joined`` when a level of
    ``chain`` batches it: broadcast over the levels that do not, their axes merged."""
    t = v if isinstance(v, Tensor) else Tensor._make(v, b) if \
        any(lvl.has_array(v) for lvl in chain) else None
    if t is None or not any(lvl.has(t) for lvl in chain):
        return v
    y = t
    for i, lvl in enumerate(chain):
        if not lvl.has(t):
            y = expand_dims(y, axis=i)
    shape = tuple(y.shape)
    n = len(chain)
    y = reshape(broadcast_to(y, tuple(c.size for c in chain) + shape[n:]),
                (joined.size,) + shape[n:])
    joined.mark(y)
    return y if isinstance(v, Tensor) else y._array


def _split_joined(chain: list, joined: BatchLevel, o: Any) -> Any:
    """A result batched at ``joined`` with the batch axes of ``chain`` again."""
    if not isinstance(o, Tensor) or not joined.has(o):
        return o
    y = reshape(o, tuple(c.size for c in chain) + tuple(o.shape)[1:], copy=True)
    for lvl in chain:  # (a copy: a view of ``o``, batched at ``joined`` only, is no view here)
        lvl.mark(y)
    return y


def _random_error(fname: str) -> str:
    return (f"vmap: {fname} draws random numbers inside vmap with randomness='error' (the "
            f"default); pass randomness='different' (an independent draw per example) or "
            f"'same' (one draw shared by the batch), or draw outside vmap and pass it in")


def _axes(fname: str, axes: Any, n: int) -> tuple:
    if isinstance(axes, (tuple, list)):
        if len(axes) != n:
            raise ValueError(f"{fname}: in_axes has {len(axes)} entries but the function got "
                             f"{n} positional arguments")
        return tuple(axes)
    return (axes,) * n


def _leaf_axes(fname: str, tree: Any, axes: Any, where: str) -> list:
    """One axis per tensor of ``tree`` (in ``_flatten``'s order): ``axes`` is an int or
    ``None`` for the whole subtree, or a tuple/list/dict matching its structure (a prefix
    of the tree, as ``torch.func.vmap``'s ``in_dims`` and JAX's ``in_axes``)."""
    if axes is None or (isinstance(axes, int) and not isinstance(axes, bool)):
        return [axes] * len(_flatten(tree, where)[0])
    if isinstance(axes, dict) and isinstance(tree, dict):
        if set(axes) != set(tree):
            raise ValueError(f"{fname}: the axes {axes!r} for {where} have keys "
                             f"{sorted(map(str, axes))} but the argument has keys "
                             f"{sorted(map(str, tree))}; give one axis per key")
        return [a for k in tree for a in _leaf_axes(fname, tree[k], axes[k], f"{where}[{k!r}]")]
    if isinstance(axes, (tuple, list)) and isinstance(tree, (tuple, list)) and \
            len(axes) == len(tree):
        return [a for i, (t, x) in enumerate(zip(tree, axes))
                for a in _leaf_axes(fname, t, x, f"{where}[{i}]")]
    raise ValueError(f"{fname}: the axes {axes!r} for {where} do not match its structure "
                     f"({type(tree).__name__}{f' of {len(tree)}' if hasattr(tree, '__len__') and not isinstance(tree, Tensor) else ''}); give an int, None, or a "  # noqa: E501
                     f"tuple/list/dict with one entry per element")


def _enter(level: BatchLevel, x: Tensor, axis: int | None) -> Tensor:
    if axis is None:
        return x
    moved = moveaxis(x, axis, 0) if axis % max(x.ndim, 1) else x
    y = reshape(moved, tuple(moved.shape))  # a distinct array: batching goes by array
    if y._array is x._array:
        y = clone(moved)
    return level.mark(y)


def _batch_size(fname: str, flat: list, axes: list) -> int:
    sizes = {t.shape[a] for t, a in zip(flat, axes) if a is not None}
    if not sizes:
        raise ValueError(f"{fname}: in_axes maps no argument (every entry is None); give the "
                         f"axis of at least one tensor argument")
    if len(sizes) > 1:
        raise ValueError(f"{fname}: the mapped axes have different sizes {sorted(sizes)}; "
                         f"every mapped argument needs the same batch size")
    return sizes.pop()


def vmap(f: Callable, in_axes: Any = 0, out_axes: Any = 0, randomness: str = "error",
         chunk_size: int | None = None) -> Callable:
    """``f`` mapped over an axis of its arguments, without a Python loop.

    ``in_axes``: an int or ``None`` (not mapped) for every argument, or a tuple with one
    entry per positional argument, each an int, ``None`` or (for a nested argument) a
    tuple/list/dict of them matching its structure, as ``torch.func.vmap``'s ``in_dims``.
    Keyword arguments are not mapped. ``out_axes``: where the batch axis goes in every
    output (an int, or a structure matching the outputs). Compose with ``grad``
    (per-example gradients), ``jvp`` and ``vmap`` itself. ``randomness``, as
    ``torch.func.vmap``'s, says what a random function inside ``f`` (``rand``, ``randn``,
    ``randint``, ``dropout``) does: ``"error"`` raises, ``"different"`` draws independently
    for each example, ``"same"`` draws once for the whole batch. ``chunk_size``: map that
    many examples at a time (less memory, the same numbers).

    Example:
        >>> import xad
        >>> xs = xad.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> xad.vmap(lambda x: (x * x).sum())(xs).tolist()
        [5.0, 25.0]
    """
    if randomness not in _RANDOMNESS:
        raise ValueError(f"vmap: randomness must be one of {_RANDOMNESS}, got {randomness!r}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size must be a positive int or None, got {chunk_size!r}")

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        axes = _axes("vmap", in_axes, len(args))
        flat, specs, per = [], [], []
        for i, (a, ax) in enumerate(zip(args, axes)):
            leaves, spec = _flatten(a, f"vmap: argument {i}")
            flat.extend(leaves)
            specs.append((spec, len(leaves)))
            per.extend(_leaf_axes("vmap", a, ax, f"argument {i}"))
        size = _batch_size("vmap", flat, per)
        if chunk_size is None or size <= chunk_size:
            return _mapped(f, flat, specs, per, size, kwargs, out_axes, randomness)
        # randomness="same": every chunk draws what the first did (one draw for the batch)
        b = get_backend()
        state = b.get_rng_state() if randomness == "same" else None
        parts = []
        for k in range(0, size, chunk_size):
            if state is not None and k:
                b.set_rng_state(state)
            parts.append(_mapped(f, [_take(t, ax, k, chunk_size) for t, ax in zip(flat, per)],
                                 specs, per, min(chunk_size, size - k), kwargs, out_axes,
                                 randomness))
        return _joined(parts, out_axes)
    return wrapped


def _mapped(f: Callable, flat: list, specs: list, per: list, size: int, kwargs: dict,
            out_axes: Any, randomness: str) -> Any:
    """``f`` run once on the whole batch at a new level."""
    level = BatchLevel(size, randomness)
    ins = [_enter(level, t, ax) for t, ax in zip(flat, per)]
    new, k = [], 0
    for spec, n in specs:
        new.append(_unflatten(spec, ins[k:k + n]))
        k += n
    context.transform = level
    try:
        out = f(*new, **kwargs)
    finally:
        context.transform = level.parent
    outs, out_spec = _flatten(out, "vmap: the function's output")
    axes = _leaf_axes("vmap", out, out_axes, "the output (out_axes)")
    return _unflatten(out_spec, [_leave(level, o, ax) for o, ax in zip(outs, axes)])


def _take(t: Tensor, axis: int | None, start: int, n: int) -> Tensor:
    """Examples ``start:start + n`` of ``t`` along its mapped ``axis``."""
    if axis is None:
        return t
    return t[(slice(None),) * (axis % t.ndim) + (slice(start, start + n),)]


def _joined(parts: list, out_axes: Any) -> Any:
    """The chunks' outputs joined along their batch axes (an unmapped output: the first)."""
    outs, spec = _flatten(parts[0], "vmap: the function's output")
    axes = _leaf_axes("vmap", parts[0], out_axes, "the output (out_axes)")
    cols = zip(*[_flatten(p, "")[0] for p in parts])
    return _unflatten(spec, [c[0] if ax is None else concat(list(c), axis=ax)
                             for c, ax in zip(cols, axes)])


def _leave(level: BatchLevel, o: Tensor, axis: int | None) -> Tensor:
    if not level.has(o):
        if axis is None:
            return o
        o = broadcast_to(o, (level.size,) + tuple(o.shape))
    elif axis is None:
        raise ValueError("vmap: out_axes=None but an output depends on the mapped inputs")
    return moveaxis(o, 0, axis) if axis % max(o.ndim, 1) else o

