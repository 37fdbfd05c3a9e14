"""Native forward mode: one forward pass carrying tangents (dual numbers at the Tensor level).

A :class:`JVPLevel` is pushed on ``context.transform`` while :func:`xad.jvp` runs ``f``. Every
primitive then reaches :meth:`JVPLevel.process` (the one check in ``xad.ops._apply``): the
primal is computed below this level, and when an input carries a tangent of this level the
primitive's ``jvp(primals, tangents, out, **params)`` rule gives the output's tangent.
Rules are written in xad operations and run below this level, so an outer level (a
``jvp`` of a ``jvp``) or the reverse recorder sees them: tangents of tangents, and
reverse over forward, work without a special case. No reverse graph is kept for the
tangents unless an outer ``grad`` asks for one.

Tangents are looked up by the identity of the tensor's array (a saved output re-wrapped by
a backward rule shares it), held weakly where the array type allows. ``None`` stands for a
zero tangent and rules skip it. A ``detach()`` or ``.data`` tensor shares its base's array
but has a tangent of its own, as PyTorch's forward AD (a non-differentiable view starts a
tangent of its own): none at first, the value's tangent after an in-place write into it
(``d = y.detach(); d.copy_(x)`` gives ``d`` the tangent of ``x``, ``y`` keeps its own).
Those are held by tensor identity; the tensor's aliases (the old value an in-place change
saves) share it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from .context import context
from .factories import batched_draw
from .ops import clone, reshape
from .tensor import Tensor

__all__ = ["JVPLevel", "MissingRuleError", "forward_pass", "unviewed"]


class MissingRuleError(NotImplementedError):
    """A primitive reached a transform that has no rule for it."""


def _pop_when_freed(d: dict, key: int) -> Callable[[Any], Any]:
    """A weak reference's callback that removes ``key`` from ``d`` (holding only ``d``)."""
    return lambda _: d.pop(key, None)


class JVPLevel:
    """One forward-mode pass in progress: the tangents of this level, by array identity."""

    def __init__(self, fname: str) -> None:
        self.fname = fname
        self.parent = context.transform
        self.tangents: dict[int, tuple] = {}
        self.own: dict[int, tuple] = {}  # detach()/.data tensors: (weak ref, own tangent)
        self.roots: dict[int, weakref.ref] = {}  # forward_ad's duals and primals (see root)
        self.chain: list[Tensor] = []  # the views being set in place, outermost first
        self.kept: list[list | None] = []  # for each: its storage's tangents (see writing)

    def get(self, t: Any) -> Tensor | None:
        """The tangent of ``t`` at this level (``None``: zero, or not a tensor)."""
        if type(t) is not Tensor and not isinstance(t, Tensor):
            return None
        if self.own:
            o = self.own.get(id(t))
            if o is not None and o[0]() is t:
                return o[1]
        return self._by_array(t)

    def _by_array(self, t: Tensor) -> Tensor | None:
        e = self.tangents.get(id(t._array))
        if e is None:
            return None
        ref, tan = e
        return tan if (ref() if type(ref) is weakref.ref else ref) is t._array else None

    def _owns(self, t: Tensor) -> bool:
        o = self.own.get(id(t))
        return o is not None and o[0]() is t

    def _own(self, t: Tensor, tan: Tensor | None) -> None:
        key = id(t)
        self.own[key] = (weakref.ref(t, _pop_when_freed(self.own, key)), tan)

    def carries(self, t: Tensor) -> bool:
        """Whether ``t`` has a tangent here (an integer result never needs one)."""
        return not t.dtype.is_floating or self.get(t) is not None

    def set(self, t: Tensor, tan: Tensor | None) -> None:
        """Give ``t`` the tangent ``tan`` at this level."""
        if self.own and self._owns(t):
            self._own(t, tan)
            return
        if tan is None:
            return
        arr, key = t._array, id(t._array)
        try:
            ref: Any = weakref.ref(arr, _pop_when_freed(self.tangents, key))
        except TypeError:  # an array type without weak references: hold it for the pass
            ref = arr
        self.tangents[key] = (ref, tan)

    def hold(self, t: Tensor, tan: Tensor | None, base: Tensor) -> None:
        """Give ``t``, a new tensor for ``base``'s values (a ``Function``'s output that is its
        input), the tangent ``tan`` here (none: ``None``), held by identity where ``t``
        shares ``base``'s array object, so ``base`` keeps its own."""
        if t._array is base._array:
            self._own(t, tan)
        elif tan is not None:  # (a new array object has no tangent yet)
            self.set(t, tan)

    def root(self, t: Tensor, tan: Tensor | None) -> None:
        """``t``, a view made by ``torch.autograd.forward_ad`` (``make_dual``, a primal of
        ``unpack_dual``), has the tangent ``tan`` (none: ``None``) apart from its storage's,
        as PyTorch's dual tensors: a change of its base leaves it; a change made through
        ``t`` (or a plain view of it) gives it the new value's."""
        self._own(t, tan)
        key = id(t)
        self.roots[key] = weakref.ref(t, _pop_when_freed(self.roots, key))

    def _rooted(self, t: Tensor) -> bool:
        r = self.roots.get(id(t))
        return r is not None and r() is t

    def writing(self, t: Tensor) -> None:
        """The view ``t`` is being set in place through its base (until :meth:`written`).
        Where the change begins at a root, the tensors sharing its storage keep their
        tangents (PyTorch's dual and its base are apart): they are kept here."""
        first = self.roots and self._rooted(t) and not any(self._rooted(c) for c in self.chain)
        self.chain.append(t)
        self.kept.append([(m, self.get(m)) for m in _storage(t) if not any(
            m is c for c in self.chain)] if first else None)
        if self.parent is not None:
            self.parent.writing(t)

    def written(self, t: Tensor, value: Tensor) -> None:
        """The view ``t`` was set to ``value``: a root where the change began takes
        ``value``'s tangent, and the rest of its storage gets its own back."""
        self.chain.pop()
        kept = self.kept.pop()
        if kept is not None:
            for m, tan in kept:
                if tan is None and not self._owns(m):
                    self.tangents.pop(id(m._array), None)
                else:
                    self.set(m, tan)
            self._own(t, self.get(value))
        if self.parent is not None:
            self.parent.written(t, value)

    def cut(self, t: Tensor) -> None:
        """``t`` (a ``detach``-ed tensor sharing a traced array) has a tangent of its own,
        none yet, here and in every level outside."""
        self._own(t, None)
        if self.parent is not None:
            self.parent.cut(t)

    def rooted(self, t: Tensor, value: Tensor) -> None:
        """``t`` (a ``detach()``/``.data`` tensor) was just set in place to ``value``: it
        takes ``value``'s tangent, here and in every level outside; its base keeps its own."""
        self._own(t, self.get(value))
        if self.parent is not None:
            self.parent.rooted(t, value)

    def alias(self, t: Tensor, a: Tensor) -> None:
        """``a`` is another tensor object for ``t``'s array (the old value an in-place change
        saves): it shares ``t``'s tangent where ``t`` has one of its own."""
        if self.own and self._owns(t):
            self._own(a, self.own[id(t)][1])
        if self.parent is not None:
            self.parent.alias(t, a)

    def follow(self, t: Tensor, fresh: Tensor) -> None:
        """``t`` (a view) became ``fresh``, remade from its changed base: it takes fresh's
        tangent where either holds one by identity (a root keeps its own: see written)."""
        if self.own and not (self.roots and self._rooted(t)) and (
                self._owns(t) or self._owns(fresh)):
            self._own(t, self.get(fresh))
        if self.parent is not None:
            self.parent.follow(t, fresh)

    def rebound(self, t: Tensor) -> None:
        """``t`` took a new array by an in-place change of its own: where its tangent was its
        own (``detach_()``), it is now the new array's."""
        if self.own and self._owns(t):
            self._own(t, self._by_array(t))
        if self.parent is not None:
            self.parent.rebound(t)

    def untracked(self, t: Tensor, write: Callable[[], None]) -> None:
        """Run ``write``, a change of ``t``'s values through ``detach()`` or ``.data``,
        below this level: ``t`` and every tensor sharing its storage keep their tangents (a
        new array of each takes it: JAX replaces the arrays of a view's base and views)."""
        kept = [(m, self.get(m)) for m in _storage(t)]
        context.transform = self.parent
        try:
            if self.parent is None:
                write()
            else:
                self.parent.untracked(t, write)
        finally:
            context.transform = self
        for m, tan in kept:
            self.set(m, tan)

    def random(self, fname: str, shape: tuple, make: Callable) -> Tensor:
        """A random draw: a constant here (no tangent), drawn as the levels below say."""
        context.transform = self.parent
        try:
            return batched_draw(fname, shape, make)
        finally:
            context.transform = self

    def unbatched_draw(self) -> None:
        """A random draw outside ``batched_draw``: the levels below decide."""
        if self.parent is not None:
            self.parent.unbatched_draw()

    def process(self, entry: Callable, op: Any, args: tuple, params: dict) -> Any:
        """Run ``op`` below this level and give its result the tangent from ``op.jvp``."""
        tans = [self.get(a) for a in args]
        context.transform = self.parent
        try:
            out = entry(op, *args, **params)
            if not op.differentiable or all(t is None for t in tans):
                if self.own:  # (an output sharing an input's array has no tangent either)
                    for o in out if type(out) is tuple else (out,):
                        self._give(o, None, args)
                return out
            rule = getattr(op, "jvp", None)
            if rule is None:
                raise MissingRuleError(
                    f"{self.fname}: the primitive '{op.name}' has no forward-mode (JVP) rule; "
                    f"use reverse mode for this function (xad.vjp, xad.jacobian(mode='rev')) "
                    f"or add a 'jvp' method to its Op class")
            tout = rule(args, tans, out, **params)
        finally:
            context.transform = self
        if type(out) is tuple:
            for o, t in zip(out, tout):
                self._give(o, t, args)
        else:
            self._give(out, tout, args)
        return out

    def _give(self, o: Tensor, tan: Tensor | None, args: tuple) -> None:
        """``set``, except for an output that is an input's array object (a whole view on
        JAX) while tensors hold tangents of their own: it holds its tangent by identity, so
        the array's (its base's) is left alone."""
        if self.own and any(isinstance(a, Tensor) and a._array is o._array for a in args):
            self._own(o, tan)
        else:
            self.set(o, tan)


def _storage(t: Tensor) -> list[Tensor]:
    """``t``, the tensors it is a view of, and all their live views (and theirs)."""
    root = t
    while root._base is not None:
        root = root._base
    out, stack = [], [root]
    while stack:
        m = stack.pop()
        out.append(m)
        stack.extend(m._live_views())
    return out


def _enter(x: Tensor) -> Tensor:
    """A distinct tensor for ``x`` inside a new level, on a distinct array (tangents go by
    array), so a closed-over ``x`` stays a constant; tied to ``x`` for any outer level or
    recorded graph."""
    y = reshape(x, tuple(x.shape))  # a view: a new array object on most backends
    return clone(x) if y._array is x._array else y


def forward_pass(fname: str, f: Callable, primals: Sequence[Tensor],
                 tangents: Sequence[Tensor | None], rebuild: Callable
                 ) -> tuple[Any, Callable[[Tensor], Tensor | None]]:
    """Run ``f(*rebuild(inputs))`` with ``tangents`` on the flat ``primals``; return the
    output and a function giving each output tensor's tangent (``None``: zero).

    Inside ``vmap`` the new level goes below the ``vmap`` levels in progress (a ``vmap`` of
    a ``jvp`` is the ``jvp`` of the ``vmap``, tangents per example): its inputs and tangents
    are made per example, and the tangents it computes are physical arrays, batched as
    their primals. So a reverse pass inside (``vmap(jvp(grad(f)))``, ``vmap(hvp)``), which
    runs below the ``vmap`` levels on whole arrays, is seen by this level as well."""
    chain = _batch_chain()
    if chain:
        return _below(chain, fname, f, primals, tangents, rebuild)
    ins = [_enter(p) for p in primals]
    level = JVPLevel(fname)
    for x, t in zip(ins, tangents):
        level.set(x, t)
    context.transform = level
    try:
        out = f(*rebuild(ins))
    finally:
        context.transform = level.parent
    return out, level.get


def _batch_chain() -> list:
    """The ``vmap`` levels in progress above any other level, innermost first."""
    chain, lvl = [], context.transform
    while hasattr(lvl, "per_example"):
        chain.append(lvl)
        lvl = lvl.parent
    return chain


def _physical(chain: list, t: Tensor) -> Tensor:
    """``t`` per example at every level of ``chain`` (innermost first): the whole array,
    as the level below them sees it. Called at the innermost level; returns below all."""
    for lvl in chain:
        context.transform = lvl.parent
        t = lvl.per_example(t)
    return t


def _below(chain: list, fname: str, f: Callable, primals: Sequence[Tensor],
           tangents: Sequence[Tensor | None], rebuild: Callable
           ) -> tuple[Any, Callable[[Tensor], Tensor | None]]:
    """:func:`forward_pass` with its level put below the ``vmap`` levels of ``chain``."""
    top, bottom = chain[0], chain[-1]
    level = JVPLevel(fname)
    level.parent = bottom.parent
    ins = []
    try:
        for p, t in zip(primals, tangents):
            ins.append(_enter(_physical(chain, p)))  # (_enter runs below the chain)
            context.transform = top
            level.set(ins[-1], None if t is None else _physical(chain, t))
            context.transform = top
    finally:
        context.transform = top
    for x in ins:
        for lvl in chain:
            lvl.mark(x)
    bottom.parent = level
    try:
        out = f(*rebuild(ins))
    finally:
        bottom.parent = level.parent
        context.transform = top
    return out, lambda o: _logical(chain, o, level.get(o))


def unviewed(t: Tensor) -> Tensor:
    """``t``, made below the ``vmap`` levels, as a tensor that is no view, to be batched at
    them (a view's strides are read from its base's shape, which is not batched there): a
    new tensor on its array where nothing records it, else a recorded copy."""
    if t._base is None:
        return t
    return clone(t) if t.requires_grad else Tensor._make(t._array, t._backend, t)


def _logical(chain: list, o: Tensor, tan: Tensor | None) -> Tensor | None:
    """The tangent ``tan`` (a whole array) of ``o``, batched at the levels ``o`` is."""
    if tan is None:
        return None
    if tan._base is not None:
        outer, context.transform = context.transform, chain[-1].parent
        try:
            tan = unviewed(tan)
        finally:
            context.transform = outer
    for lvl in chain:
        if lvl.has(o):
            lvl.mark(tan)
    return tan
